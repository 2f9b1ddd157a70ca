package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/web"
)

func serve(t *testing.T, h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler(t *testing.T) {
	h := web.Handler()
	tests := []struct {
		name, method, target string
		wantStatus           int
		wantType             string
		wantBody             string // a substring of the body
	}{
		{"page at root", http.MethodGet, "/", http.StatusOK, "text/html; charset=utf-8", `<script type="module" src="static/js/app.js">`},
		{"page by name", http.MethodGet, "/index.html", http.StatusOK, "text/html; charset=utf-8", "ChatPanel"},
		{"stylesheet", http.MethodGet, "/static/app.css", http.StatusOK, "text/css; charset=utf-8", ":root"},
		{"module script", http.MethodGet, "/static/js/app.js", http.StatusOK, "text/javascript; charset=utf-8", "import"},
		{"head", http.MethodHead, "/", http.StatusOK, "text/html; charset=utf-8", ""},
		{"missing file", http.MethodGet, "/static/js/nope.js", http.StatusNotFound, "application/json", `"error":"not_found"`},
		{"directory", http.MethodGet, "/static/js/", http.StatusNotFound, "application/json", `"error":"not_found"`},
		{"dot segments", http.MethodGet, "/static/../web.go", http.StatusNotFound, "application/json", `"error":"not_found"`},
		{"api path", http.MethodGet, "/v1/nope", http.StatusNotFound, "application/json", `"error":"not_found"`},
		{"post", http.MethodPost, "/", http.StatusMethodNotAllowed, "application/json", `"error":"method_not_allowed"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, h, tt.method, tt.target, nil)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("body does not contain %q:\n%.300s", tt.wantBody, rec.Body.String())
			}
			if tt.method == http.MethodHead && rec.Body.Len() != 0 {
				t.Errorf("HEAD body has %d bytes, want none", rec.Body.Len())
			}
			if tt.wantStatus == http.StatusOK {
				if got := rec.Header().Get("Cache-Control"); got != "no-cache" {
					t.Errorf("Cache-Control = %q, want no-cache", got)
				}
				if rec.Header().Get("ETag") == "" {
					t.Errorf("no ETag")
				}
			}
			if tt.wantStatus == http.StatusMethodNotAllowed {
				if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow = %q, want %q", got, "GET, HEAD")
				}
			}
		})
	}
}

func TestHandlerSecurityHeaders(t *testing.T) {
	rec := serve(t, web.Handler(), http.MethodGet, "/", nil)
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q allows inline code", csp)
	}
	if got := rec.Header().Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options = %q, want DENY", got)
	}
}

func TestHandlerRevalidation(t *testing.T) {
	h := web.Handler()
	for _, target := range []string{"/", "/static/js/app.js"} {
		t.Run(target, func(t *testing.T) {
			etag := serve(t, h, http.MethodGet, target, nil).Header().Get("ETag")
			rec := serve(t, h, http.MethodGet, target, http.Header{"If-None-Match": {etag}})
			if rec.Code != http.StatusNotModified {
				t.Errorf("status with If-None-Match %s = %d, want 304", etag, rec.Code)
			}
			rec = serve(t, h, http.MethodGet, target, http.Header{"If-None-Match": {`"stale"`}})
			if rec.Code != http.StatusOK {
				t.Errorf("status with a stale ETag = %d, want 200", rec.Code)
			}
		})
	}
}

var (
	pageRefs   = regexp.MustCompile(`(?:src|href)="(static/[^"]+)"`)
	moduleRefs = regexp.MustCompile(`(?:from\s+|import\()\s*'((?:\.{1,2})?/[^']+)'`)
	// blockComments are left out before moduleRefs looks: a JSDoc type such as
	// {import('./i18n.js').Translator} names a module for tsc, not for the browser.
	blockComments = regexp.MustCompile(`(?s)/\*.*?\*/`)
)

// TestModuleGraph follows the page's stylesheet and scripts and every ES module import from
// there: with no build step, a misspelt import would only show in a browser.
func TestModuleGraph(t *testing.T) {
	h := web.Handler()
	base, _ := url.Parse("http://panel.test/")
	var seeds []*url.URL
	for _, m := range pageRefs.FindAllStringSubmatch(serve(t, h, http.MethodGet, "/", nil).Body.String(), -1) {
		seeds = append(seeds, base.ResolveReference(&url.URL{Path: m[1]}))
	}
	if len(seeds) < 2 {
		t.Fatalf("the page references %d files, want the stylesheet and the entry module", len(seeds))
	}
	seen := walkModules(t, h, seeds)
	for _, want := range []string{"/static/js/coach.js", "/static/js/sync.js", "/static/js/markdown.js", "/static/js/toulmin.js", "/static/js/cards.js", "/static/js/module.js", "/static/js/limits.js", "/static/js/sessions.js", "/client/stream.js", "/client/ndjson.js", "/client/index.js", "/client/client.js"} {
		if !seen[want] {
			t.Errorf("%s is not reachable from the page", want)
		}
	}
}

// TestClientModules checks that the JavaScript client's modules are served at /client/ as
// JavaScript, with the panel's headers, and that every module they import is served too.
func TestClientModules(t *testing.T) {
	h := web.Handler()
	base, _ := url.Parse("http://panel.test/")
	seen := walkModules(t, h, []*url.URL{base.ResolveReference(&url.URL{Path: "/client/index.js"})})
	for _, want := range []string{"/client/stream.js", "/client/ndjson.js", "/client/errors.js", "/client/client.js"} {
		if !seen[want] {
			t.Errorf("%s is not reachable from /client/index.js", want)
		}
	}
	tests := []struct {
		target     string
		wantStatus int
	}{
		{"/client/stream.js", http.StatusOK},
		{"/client/nope.js", http.StatusNotFound},
		{"/client/", http.StatusNotFound},
		{"/client/../web.go", http.StatusNotFound},
		{"/client/jsclient.go", http.StatusNotFound},
		{"/client/package.json", http.StatusNotFound},
	}
	for _, tt := range tests {
		rec := serve(t, h, http.MethodGet, tt.target, nil)
		if rec.Code != tt.wantStatus {
			t.Errorf("GET %s = %d, want %d", tt.target, rec.Code, tt.wantStatus)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options = %q, want nosniff", tt.target, got)
		}
	}
}

// walkModules fetches seeds and, from every JavaScript file among them, each module it imports
// (relative or absolute paths), and returns the paths it fetched. A file that is not served, or
// a module not served as JavaScript, fails the test.
func walkModules(t *testing.T, h http.Handler, seeds []*url.URL) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	queue := seeds
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u.Path] {
			continue
		}
		seen[u.Path] = true
		rec := serve(t, h, http.MethodGet, u.Path, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", u.Path, rec.Code)
			continue
		}
		if !strings.HasSuffix(u.Path, ".js") {
			continue
		}
		if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/javascript") {
			t.Errorf("GET %s: Content-Type %q, want JavaScript", u.Path, got)
		}
		body, _ := io.ReadAll(rec.Body)
		for _, m := range moduleRefs.FindAllStringSubmatch(blockComments.ReplaceAllString(string(body), ""), -1) {
			queue = append(queue, u.ResolveReference(&url.URL{Path: m[1]}))
		}
	}
	return seen
}
