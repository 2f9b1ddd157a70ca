package security_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

const openWarning = "no API keys configured: the gateway is open to anyone who can reach it"

func TestOpenModeSaysSoAtStart(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*config.Config)
		wantWarn bool
	}{
		{"no keys", nil, true},
		{"keys", withKeys, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := apptest.Start(t, tt.change)
			var warned bool
			for line := range strings.SplitSeq(g.Log.String(), "\n") {
				if strings.Contains(line, openWarning) && strings.Contains(line, `"level":"warn"`) {
					warned = true
				}
			}
			if warned != tt.wantWarn {
				t.Errorf("start-up warning %q logged = %v, want %v; log:\n%s", openWarning, warned, tt.wantWarn, g.Log.String())
			}
		})
	}
}

func TestAuthenticationEndToEnd(t *testing.T) {
	g := apptest.Start(t, withKeys)
	tests := []struct {
		name, key    string
		method, path string
		body         any
		want         int
	}{
		{"no key", "", "POST", "/v1/sessions", map[string]string{"contract": "toulmin"}, http.StatusUnauthorized},
		{"wrong key", "sk-coach-nobody", "GET", "/v1/modules", nil, http.StatusUnauthorized},
		{"the hash instead of the key", hexHash(keyAcme), "GET", "/v1/modules", nil, http.StatusUnauthorized},
		{"valid key", keyAcme, "GET", "/v1/modules", nil, http.StatusOK},
		{"seed route without a key", "", "POST", "/api/coach", map[string]string{"sessionId": "x", "message": "hi"}, http.StatusUnauthorized},
		{"healthz stays open", "", "GET", "/healthz", nil, http.StatusOK},
		{"readyz stays open", "", "GET", "/readyz", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := send(t, g, tt.key, tt.method, tt.path, tt.body)
			if a.Status != tt.want {
				t.Fatalf("status %d %s, want %d", a.Status, a.Body, tt.want)
			}
			if tt.want == http.StatusUnauthorized && (a.code() != "unauthorized" || !strings.HasPrefix(a.Header.Get("WWW-Authenticate"), "Bearer")) {
				t.Errorf("401 body %s, WWW-Authenticate %q; want unauthorized with a Bearer challenge", a.Body, a.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestTenantIsolationEndToEnd: a key sees only its own tenant's sessions. Whatever beta does
// with acme's session id is session_not_found, the model is never called for it, and the
// session stays as acme left it.
func TestTenantIsolationEndToEnd(t *testing.T) {
	g := apptest.Start(t, withKeys)
	id := create(t, g, keyAcme, "toulmin")
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")})
	if a := send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Cities should ban cars.")); a.last().Type != "result" {
		t.Fatalf("acme's own turn: %d %s", a.Status, a.Body)
	}

	tests := []struct {
		name         string
		method, path string
		body         any
		want         int
	}{
		{"read", "GET", "/v1/sessions/" + id, nil, http.StatusNotFound},
		{"turn", "POST", "/v1/sessions/" + id + "/turns", apptest.Msg("hijack"), http.StatusNotFound},
		{"seed route", "POST", "/api/coach", map[string]string{"sessionId": id, "message": "hijack"}, http.StatusNotFound},
		{"draft", "PUT", "/v1/sessions/" + id + "/draft", map[string]string{"field": "claim", "value": "beta was here"}, http.StatusNotFound},
		{"proposal", "POST", "/v1/sessions/" + id + "/proposal", map[string]string{"action": "reject"}, http.StatusNotFound},
		{"delete", "DELETE", "/v1/sessions/" + id, nil, http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := send(t, g, keyBeta, tt.method, tt.path, tt.body)
			if a.Status != tt.want {
				t.Fatalf("beta %s %s: %d %s, want %d", tt.method, tt.path, a.Status, a.Body, tt.want)
			}
			if tt.want == http.StatusNotFound && a.code() != "session_not_found" {
				t.Errorf("body %s, want session_not_found", a.Body)
			}
		})
	}
	if n := len(g.LLM.Requests()); n != 1 {
		t.Errorf("model calls = %d, want 1 (acme's own turn only)", n)
	}
	a := send(t, g, keyAcme, "GET", "/v1/sessions/"+id, nil)
	if a.Status != http.StatusOK || !strings.Contains(a.Body, `"version":2`) || strings.Contains(a.Body, "beta was here") {
		t.Errorf("acme's session after beta's attempts: %d %s; want it unchanged at version 2", a.Status, a.Body)
	}
}
