package security_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestResumeAndStopTenantIsolation attacks another tenant's running turn: with its session id,
// beta's key can neither resume it (NDJSON or UI message stream) nor stop it; every attempt is
// 404 session_not_found, and acme's turn runs on to its stored result.
func TestResumeAndStopTenantIsolation(t *testing.T) {
	g := apptest.StartWith(t, apptest.Options{Config: withKeys, LLM: fakellm.Options{DelayMin: 20 * time.Millisecond, DelayMax: 20 * time.Millisecond}})
	id := create(t, g, keyAcme, "toulmin")
	chunks := []string{`{"assistantText":"`}
	for range 60 {
		chunks = append(chunks, "slowly ")
	}
	g.LLM.Enqueue(fakellm.Reply{Chunks: append(chunks, `","step":"claim"}`)})
	done := make(chan answer, 1)
	go func() {
		done <- send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Cities should ban cars."))
	}()
	apptest.Eventually(t, "acme's turn reaches the model", func() bool { return g.LLM.Open() > 0 })

	base := "/v1/sessions/" + id
	tests := []struct{ name, method, path string }{
		{"resume", "GET", base + "/turns/current"},
		{"resume from a line", "GET", base + "/turns/current?after=1"},
		{"resume as a UI message stream", "GET", base + "/chat/stream"},
		{"stop", "DELETE", base + "/turns/current"},
		{"transcript as UI messages", "GET", base + "/chat/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := send(t, g, keyBeta, tt.method, tt.path, nil)
			if a.Status != http.StatusNotFound || a.code() != "session_not_found" {
				t.Errorf("beta %s %s: %d %s, want 404 session_not_found", tt.method, tt.path, a.Status, a.Body)
			}
			if strings.Contains(a.Body, "slowly") {
				t.Errorf("beta %s %s read acme's text: %s", tt.method, tt.path, a.Body)
			}
		})
	}
	select {
	case a := <-done:
		if l := a.last(); l.Type != "result" {
			t.Errorf("acme's turn ended with %s, want its result: beta's stop must not reach it", l.Raw)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("acme's turn never ended")
	}
	if a := send(t, g, keyAcme, "GET", base+"/turns/current", nil); a.Status != http.StatusOK || a.last().Type != "result" {
		t.Errorf("acme's own resume after the turn: %d, last %s; want 200 ending with the result", a.Status, a.last().Raw)
	}
}
