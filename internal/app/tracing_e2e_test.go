package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestTracesReachTheCollector runs a gateway whose OTLP endpoint is a fake collector on loopback:
// after a turn and the gateway's shutdown (which flushes the batch), the collector has received
// the turn's spans over OTLP/HTTP.
func TestTracesReachTheCollector(t *testing.T) {
	var mu sync.Mutex
	var names []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			t.Errorf("collector got %s %s (%v), want an OTLP export to /v1/traces", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer collector.Close()

	g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
		c.OTLPEndpoint = collector.URL + "/v1/traces"
	}})
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Hello.", "step", "claim")})
	if tr := g.Turn(s.ID, apptest.Msg("hi")); tr.Last().Type != "result" {
		t.Fatalf("turn = %s, want a result", tr.Body)
	}
	g.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(names)
		mu.Unlock()
		slices.Sort(got)
		if slices.Equal(got, []string{"chat gpt-4o-mini", "coach.claim", "coach.commit", "coach.turn"}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans at the collector = %q, want the turn, claim, model attempt and commit", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
