package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestContextWindow reads llama-server's GET /props, beside the /v1 of the base URL, with the
// endpoint's key; anything else is an error, never a window.
func TestContextWindow(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   int
		ok     bool
	}{
		{name: "llama-server", status: 200, ok: true, want: 8192,
			body: `{"default_generation_settings":{"id":0,"n_ctx":8192,"params":{"n_predict":-1}},"total_slots":1,"chat_template":"…","build_info":"b10573"}`},
		{name: "not a llama-server", status: 404, body: `{"error":"not found"}`},
		{name: "no n_ctx", status: 200, body: `{"default_generation_settings":{}}`},
		{name: "not JSON", status: 200, body: `<html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/props" || r.Header.Get("Authorization") != "Bearer k" {
					t.Errorf("request %s %s auth %q, want GET /props with the key", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			got, err := ContextWindow(context.Background(), srv.Client(), srv.URL+"/v1", "k")
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ContextWindow = %d, %v; want %d (ok %v)", got, err, tt.want, tt.ok)
			}
		})
	}
}
