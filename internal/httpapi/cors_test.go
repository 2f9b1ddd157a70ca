package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

func TestCORS(t *testing.T) {
	const app = "https://app.example.com"
	allowed := startServer(t, func(d *Deps) {
		withKeys(d)
		d.CORSOrigins = []string{app, "http://localhost:5173"}
	})
	off := startServer(t, withKeys)
	auth := []string{"Authorization", "Bearer " + keyAcme}
	preflight := func(origin string) []string {
		return []string{"Origin", origin, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization,content-type"}
	}
	tests := []struct {
		name         string
		srv          *testServer
		method, path string
		headers      []string
		wantStatus   int
		// wantOrigin is the expected Access-Control-Allow-Origin, "" for none.
		wantOrigin string
		wantHeader map[string]string
	}{
		{name: "allowed origin", srv: allowed, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", app}, auth...), wantStatus: http.StatusOK, wantOrigin: app,
			wantHeader: map[string]string{"Access-Control-Expose-Headers": "X-Request-Id,Retry-After,X-Coach-Turn", "Vary": "Origin"}},
		{name: "origin compared case-insensitively", srv: allowed, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", "https://APP.example.com"}, auth...), wantStatus: http.StatusOK, wantOrigin: "https://APP.example.com"},
		{name: "a 401 is readable by an allowed origin", srv: allowed, method: "GET", path: "/v1/modules",
			headers: []string{"Origin", app}, wantStatus: http.StatusUnauthorized, wantOrigin: app},
		{name: "preflight of an allowed origin needs no key", srv: allowed, method: "OPTIONS", path: "/v1/sessions/abc/turns",
			headers: preflight(app), wantStatus: http.StatusNoContent, wantOrigin: app,
			wantHeader: map[string]string{
				"Access-Control-Allow-Methods": "GET,POST,PUT,DELETE,OPTIONS",
				"Access-Control-Allow-Headers": "Content-Type,Authorization,X-Request-Id",
				"Access-Control-Max-Age":       "600",
			}},
		{name: "disallowed origin is served without CORS headers", srv: allowed, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", "https://evil.example.com"}, auth...), wantStatus: http.StatusOK},
		{name: "a subdomain is another origin", srv: allowed, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", "https://x.app.example.com"}, auth...), wantStatus: http.StatusOK},
		{name: "another port is another origin", srv: allowed, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", "http://localhost:5174"}, auth...), wantStatus: http.StatusOK},
		{name: "null origin", srv: allowed, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", "null"}, auth...), wantStatus: http.StatusOK},
		{name: "preflight of a disallowed origin", srv: allowed, method: "OPTIONS", path: "/v1/sessions",
			headers: preflight("https://evil.example.com"), wantStatus: http.StatusNoContent},
		{name: "no origins configured", srv: off, method: "GET", path: "/v1/modules",
			headers: append([]string{"Origin", app}, auth...), wantStatus: http.StatusOK},
		{name: "no origins configured, preflight", srv: off, method: "OPTIONS", path: "/v1/sessions",
			headers: preflight(app), wantStatus: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.srv.do(tt.method, tt.path, "", tt.headers...)
			if r.Status != tt.wantStatus {
				t.Errorf("status %d %s, want %d", r.Status, r.Body, tt.wantStatus)
			}
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != tt.wantOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.wantOrigin)
			}
			if tt.wantOrigin == "" {
				for name := range r.Header {
					if strings.HasPrefix(name, "Access-Control-") {
						t.Errorf("header %s = %q sent to an origin that is not allowed", name, r.Header.Get(name))
					}
				}
			}
			for name, want := range tt.wantHeader {
				if got := strings.Join(r.Header.Values(name), ", "); !strings.Contains(got, want) {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if r.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Error("Access-Control-Allow-Credentials sent: keys travel in a header, never as cookies")
			}
		})
	}
}

// TestCORSExposesTurn shows that a page on an allowed origin can read a turn's id from its
// answer: the turn routes send X-Coach-Turn and the CORS headers expose it.
func TestCORSExposesTurn(t *testing.T) {
	const app = "http://localhost:5173"
	ts := startServer(t, func(d *Deps) {
		withKeys(d)
		d.CORSOrigins = []string{app}
	})
	headers := []string{"Authorization", "Bearer " + keyAcme, "Origin", app}
	id := ts.create("toulmin", headers...)
	for _, path := range []string{"/v1/sessions/" + id + "/turns", "/v1/sessions/" + id + "/chat"} {
		body := `{"message":"Cities should ban cars."}`
		if strings.HasSuffix(path, "/chat") {
			body = `{"messages":[{"role":"user","parts":[{"type":"text","text":"Because of pollution."}]}]}`
		}
		r := ts.do("POST", path, body, headers...)
		if r.Status != http.StatusOK || r.Header.Get(HeaderTurn) == "" {
			t.Fatalf("POST %s: status %d, %s %q, want 200 with a turn id", path, r.Status, HeaderTurn, r.Header.Get(HeaderTurn))
		}
		exposed := map[string]bool{}
		for _, v := range r.Header.Values("Access-Control-Expose-Headers") {
			for _, name := range strings.Split(v, ",") {
				exposed[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
			}
		}
		if !exposed[HeaderTurn] {
			t.Errorf("POST %s: Access-Control-Expose-Headers %q, want it to include %s", path, r.Header.Values("Access-Control-Expose-Headers"), HeaderTurn)
		}
	}
}
