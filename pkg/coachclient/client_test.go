package coachclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// request is what a test server received.
type request struct {
	method, path, body, auth, accept, contentType string
}

// recorder answers with status and body (as application/json) and keeps the request it got.
func recorder(status int, body string) (http.HandlerFunc, *request) {
	got := &request{}
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = request{r.Method, r.URL.EscapedPath(), string(b), r.Header.Get("Authorization"),
			r.Header.Get("Accept"), r.Header.Get("Content-Type")}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}, got
}

func TestSessionCalls(t *testing.T) {
	const id = "3fa9c0de3fa9c0de3fa9c0de3fa9c0de"
	tests := []struct {
		name    string
		status  int
		answer  string
		call    func(c *Client) (*Session, error)
		want    request
		wantVer int64
	}{
		{
			"create", http.StatusCreated, sessionJSON,
			func(c *Client) (*Session, error) {
				return c.CreateSession(context.Background(), CreateSessionRequest{Contract: "module", Module: "anxiety-basics", Locale: "es"})
			},
			request{method: "POST", path: "/v1/sessions", body: `{"contract":"module","module":"anxiety-basics","locale":"es"}`},
			2,
		},
		{
			"create with defaults", http.StatusCreated, sessionJSON,
			func(c *Client) (*Session, error) {
				return c.CreateSession(context.Background(), CreateSessionRequest{Contract: "toulmin"})
			},
			request{method: "POST", path: "/v1/sessions", body: `{"contract":"toulmin"}`},
			2,
		},
		{
			"get", http.StatusOK, sessionJSON,
			func(c *Client) (*Session, error) { return c.GetSession(context.Background(), id) },
			request{method: "GET", path: "/v1/sessions/" + id},
			2,
		},
		{
			"an odd id stays one path segment", http.StatusOK, sessionJSON,
			func(c *Client) (*Session, error) { return c.GetSession(context.Background(), "../x y") },
			request{method: "GET", path: "/v1/sessions/..%2Fx%20y"},
			2,
		},
		{
			"delete", http.StatusNoContent, "",
			func(c *Client) (*Session, error) { return nil, c.DeleteSession(context.Background(), id) },
			request{method: "DELETE", path: "/v1/sessions/" + id},
			0,
		},
		{
			"set draft", http.StatusOK, sessionJSON,
			func(c *Client) (*Session, error) { return c.SetDraft(context.Background(), id, "claim", "Cars out.") },
			request{method: "PUT", path: "/v1/sessions/" + id + "/draft", body: `{"field":"claim","value":"Cars out."}`},
			2,
		},
		{
			"decide proposal", http.StatusOK, sessionJSON,
			func(c *Client) (*Session, error) { return c.DecideProposal(context.Background(), id, Accept) },
			request{method: "POST", path: "/v1/sessions/" + id + "/proposal", body: `{"action":"accept"}`},
			2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, got := recorder(tt.status, tt.answer)
			srv := httptest.NewServer(h)
			defer srv.Close()
			// A base URL with a path prefix and a trailing slash, as behind a reverse proxy.
			mux := http.NewServeMux()
			mux.Handle("/coach/", http.StripPrefix("/coach", h))
			prefixed := httptest.NewServer(mux)
			defer prefixed.Close()
			for _, c := range []*Client{New(srv.URL, WithAPIKey("k1")), New(prefixed.URL+"/coach/", WithAPIKey("k1"))} {
				sess, err := tt.call(c)
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				want := tt.want
				want.auth, want.accept = "Bearer k1", "application/json"
				if want.body != "" {
					want.contentType = "application/json"
				}
				if *got != want {
					t.Errorf("request = %+v, want %+v", *got, want)
				}
				if tt.wantVer == 0 {
					continue
				}
				if sess.ID != id || sess.Version != tt.wantVer || string(sess.State) != `{"step":"claim"}` ||
					!sess.CreatedAt.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) ||
					sess.Limits == nil || *sess.Limits != (Limits{MessageChars: 4000, DraftChars: 4000}) {
					t.Errorf("session = %+v", sess)
				}
			}
		})
	}
}

func TestAPIErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   APIError
	}{
		{"404", 404, nil, `{"error":"session_not_found","message":"no such session"}`,
			APIError{Status: 404, Code: "session_not_found", Message: "no such session"}},
		{"409", 409, nil, `{"error":"session_busy","message":"another turn of this session is in flight"}`,
			APIError{Status: 409, Code: "session_busy", Message: "another turn of this session is in flight"}},
		{"422 names the field", 422, nil, `{"error":"invalid_input","message":"option z was not offered","field":"selected"}`,
			APIError{Status: 422, Code: "invalid_input", Message: "option z was not offered", Field: "selected"}},
		{"429 with Retry-After", 429, http.Header{"Retry-After": {"7"}}, `{"error":"rate_limited","message":"slow down"}`,
			APIError{Status: 429, Code: "rate_limited", Message: "slow down", RetryAfter: 7 * time.Second}},
		{"503 with Retry-After", 503, http.Header{"Retry-After": {"2"}}, `{"error":"store_unavailable","message":"the session store is unavailable"}`,
			APIError{Status: 503, Code: "store_unavailable", Message: "the session store is unavailable", RetryAfter: 2 * time.Second}},
		{"a proxy's error page", 502, http.Header{"Content-Type": {"text/html"}}, `<html>bad gateway</html>`,
			APIError{Status: 502, Message: "Bad Gateway"}},
	}
	calls := []struct {
		name string
		call func(c *Client) error
	}{
		{"GetSession", func(c *Client) error { _, err := c.GetSession(context.Background(), "s"); return err }},
		{"Turn", func(c *Client) error { _, err := c.Turn(context.Background(), "s", Message("hi")); return err }},
		{"Coach", func(c *Client) error {
			_, err := c.Coach(context.Background(), CoachRequest{SessionID: "s", Message: "hi"})
			return err
		}},
	}
	for _, tt := range tests {
		for _, call := range calls {
			t.Run(tt.name+"/"+call.name, func(t *testing.T) {
				c := serve(t, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tt.header {
						w.Header()[k] = v
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
				})
				err := call.call(c)
				var got *APIError
				if !errors.As(err, &got) {
					t.Fatalf("error = %v (%T), want an *APIError", err, err)
				}
				if *got != tt.want {
					t.Errorf("error = %+v, want %+v", *got, tt.want)
				}
			})
		}
	}
}

func TestAPIErrorMessage(t *testing.T) {
	e := &APIError{Status: 422, Code: "invalid_input", Message: "too long", Field: "message"}
	if got, want := e.Error(), "coachgw: 422 invalid_input: too long (field message)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestTurnRequests(t *testing.T) {
	step := Message("Cars out.")
	step.Step = "claim"
	tests := []struct {
		name     string
		call     func(c *Client) (*Stream, error)
		wantPath string
		wantBody string
	}{
		{"message", func(c *Client) (*Stream, error) { return c.Turn(context.Background(), "s1", Message("hi")) },
			"/v1/sessions/s1/turns", `{"message":"hi"}`},
		{"message and step", func(c *Client) (*Stream, error) { return c.Turn(context.Background(), "s1", step) },
			"/v1/sessions/s1/turns", `{"message":"Cars out.","step":"claim"}`},
		{"an empty message is still sent", func(c *Client) (*Stream, error) { return c.Turn(context.Background(), "s1", Message("")) },
			"/v1/sessions/s1/turns", `{"message":""}`},
		{"selected", func(c *Client) (*Stream, error) { return c.Turn(context.Background(), "s1", Selected("b")) },
			"/v1/sessions/s1/turns", `{"selected":"b"}`},
		{"form", func(c *Client) (*Stream, error) {
			return c.Turn(context.Background(), "s1", FormAnswer("mood", map[string]any{"level": 3, "note": "ok"}))
		}, "/v1/sessions/s1/turns", `{"form":{"id":"mood","values":{"level":3,"note":"ok"}}}`},
		{"form without values", func(c *Client) (*Stream, error) { return c.Turn(context.Background(), "s1", FormAnswer("mood", nil)) },
			"/v1/sessions/s1/turns", `{"form":{"id":"mood","values":{}}}`},
		{"coach route", func(c *Client) (*Stream, error) {
			return c.Coach(context.Background(), CoachRequest{SessionID: "s1", Message: "hi", Step: "grounds"})
		}, "/api/coach", `{"sessionId":"s1","message":"hi","step":"grounds"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got request
			c := serve(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = request{method: r.Method, path: r.URL.Path, body: string(b), accept: r.Header.Get("Accept"),
					contentType: r.Header.Get("Content-Type")}
				streamOf(resultLine)(w, r)
			})
			s, err := tt.call(c)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := request{method: "POST", path: tt.wantPath, body: tt.wantBody, accept: "application/x-ndjson", contentType: "application/json"}
			if got != want {
				t.Errorf("request = %+v, want %+v", got, want)
			}
			if ev, err := s.Next(); err != nil || ev.Kind() != "result" {
				t.Errorf("Next = %s, %v; want the result", show(ev), err)
			}
		})
	}
}

func TestTurnRefusesOtherContent(t *testing.T) {
	tests := []struct {
		name, contentType string
		ok                bool
	}{
		{"NDJSON", "application/x-ndjson", true},
		{"NDJSON with a charset", "application/x-ndjson; charset=utf-8", true},
		{"the unregistered name", "application/ndjson", true},
		{"none", "", true},
		{"HTML", "text/html; charset=utf-8", false},
		{"JSON", "application/json", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tt.contentType}
				io.WriteString(w, resultLine)
			})
			s, err := c.Turn(context.Background(), "s", Message("hi"))
			if (err == nil) != tt.ok {
				t.Fatalf("Turn error = %v, want success %t", err, tt.ok)
			}
			if s != nil {
				s.Close()
			}
		})
	}
}

func TestOversizedAnswer(t *testing.T) {
	big := `{"id":"s","contract":"toulmin","version":1,"state":{"x":"` + strings.Repeat("a", 2000) + `"}}`
	h, _ := recorder(http.StatusOK, big)
	tests := []struct {
		limit int
		ok    bool
	}{{len(big), true}, {len(big) - 1, false}}
	for _, tt := range tests {
		c := serve(t, h, WithMaxLineBytes(tt.limit))
		_, err := c.GetSession(context.Background(), "s")
		if (err == nil) != tt.ok {
			t.Errorf("limit %d: error = %v, want success %t", tt.limit, err, tt.ok)
		}
	}
}

func TestTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		c    *Client
		ctx  context.Context
		want error
	}{
		{"nobody listens", New(url), context.Background(), nil},
		{"a cancelled context", New(url), ctx, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.Turn(tt.ctx, "s", Message("hi"))
			var apiErr *APIError
			if err == nil || errors.As(err, &apiErr) {
				t.Fatalf("error = %v, want a transport error", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestWithHTTPClient(t *testing.T) {
	var used bool
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		used = true
		return http.DefaultTransport.RoundTrip(r)
	})}
	h, _ := recorder(http.StatusOK, sessionJSON)
	c := serve(t, h, WithHTTPClient(hc))
	if _, err := c.GetSession(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	if !used {
		t.Error("the given http.Client was not used")
	}
	if New("http://x", WithHTTPClient(nil)).hc != http.DefaultClient {
		t.Error("WithHTTPClient(nil) did not keep the default client")
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSessionJSON checks that a session passed on (as a proxy does) reads as it was sent.
func TestSessionJSON(t *testing.T) {
	var s Session
	if err := json.Unmarshal([]byte(sessionJSON), &s); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != sessionJSON {
		t.Errorf("re-encoded session:\n got %s\nwant %s", got, sessionJSON)
	}
}
