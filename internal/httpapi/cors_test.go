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
			wantHeader: map[string]string{"Access-Control-Expose-Headers": "X-Request-Id,Retry-After", "Vary": "Origin"}},
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
