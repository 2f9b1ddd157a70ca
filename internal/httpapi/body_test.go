package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

// rawRequest sends head (request line and headers, without the blank line that ends them) and
// then part of a body on a raw connection, never the rest, and reads the answer, waiting at
// most wait.
func rawRequest(t *testing.T, url, head, part string, wait time.Duration) (*http.Response, string, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, head+"\r\n\r\n"+part); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(start.Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", wait, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), time.Since(start)
}

// TestBodyReadTimeout sends requests that declare a body of 10000 bytes (under the limit) and
// never send it whole: each is answered 408 with a JSON error once the body read timeout
// passes, on every kind of route, /healthz included and before authentication.
func TestBodyReadTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	ts := startServer(t, func(d *Deps) {
		d.BodyReadTimeout = timeout
		d.APIKeys = []APIKey{{Tenant: "acme", Hash: HashKey("k")}}
	})
	tests := []struct {
		name, head string
	}{
		{"healthz", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10000"},
		{"before authentication", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000"},
		{"authenticated turn", "POST /v1/sessions/" + strings.Repeat("a", 32) + "/turns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 10000"},
		{"chunked", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"},
		{"unknown route", "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			part := `{"contract":"toul`
			if strings.Contains(tt.head, "chunked") {
				part = "5\r\n{\"con"
			}
			resp, body, took := rawRequest(t, ts.URL, tt.head, part, 10*time.Second)
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d %s, want 408", resp.StatusCode, body)
			}
			var b errorBody
			if err := json.Unmarshal([]byte(body), &b); err != nil || b.Error != codeBodyTimeout {
				t.Errorf("body %q, want a JSON error %q", body, codeBodyTimeout)
			}
			if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			if took < timeout {
				t.Errorf("answered after %v, before the timeout of %v", took, timeout)
			}
		})
	}
}

// TestDeclaredBodyOverLimit sends requests whose Content-Length is over the body limit and no
// byte of the body: each is answered 413 at once, long before the body read timeout, on every
// kind of route and before authentication, as nothing of such a body would be read anyway.
func TestDeclaredBodyOverLimit(t *testing.T) {
	const timeout = 10 * time.Second
	ts := startServer(t, func(d *Deps) {
		d.BodyReadTimeout = timeout
		d.APIKeys = []APIKey{{Tenant: "acme", Hash: HashKey("k")}}
	})
	for _, head := range []string{
		"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000",
		"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000",
		"POST /v1/sessions/" + strings.Repeat("a", 32) + "/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 100000",
	} {
		t.Run(head[:strings.Index(head, " HTTP")], func(t *testing.T) {
			resp, body, took := rawRequest(t, ts.URL, head, "", timeout+5*time.Second)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, codeBodyTooLarge) {
				t.Fatalf("status %d %s, want 413 %s", resp.StatusCode, body, codeBodyTooLarge)
			}
			if took >= timeout {
				t.Errorf("answered after %v: it waited for a body it would refuse", took)
			}
			if !resp.Close {
				t.Errorf("the connection stays open with the declared body still to come")
			}
		})
	}
}

// pacedModel answers every call with answer in pieces of size bytes, pause apart: a stream
// that lasts as long as a test needs it to.
type pacedModel struct {
	answer string
	size   int
	pause  time.Duration
}

func (m pacedModel) Stream(ctx context.Context, _ coach.ModelRequest, _ coach.StreamHooks) (coach.Stream, error) {
	return &pacedStream{ctx: ctx, m: m, rest: m.answer}, nil
}

type pacedStream struct {
	ctx  context.Context
	m    pacedModel
	rest string
}

func (s *pacedStream) Next() (coach.Fragment, error) {
	if s.rest == "" {
		return coach.Fragment{}, io.EOF
	}
	select {
	case <-s.ctx.Done():
		return coach.Fragment{}, s.ctx.Err()
	case <-time.After(s.m.pause):
	}
	n := min(s.m.size, len(s.rest))
	f := coach.Fragment{Content: s.rest[:n]}
	s.rest = s.rest[n:]
	return f, nil
}

func (s *pacedStream) Close() error { return nil }

// TestBodyReadTimeoutSparesStreams runs turns whose streams last several times the body read
// timeout, on the NDJSON route and on the chat route's UI message stream: only the body's
// arrival is timed, so each stream ends with its result.
func TestBodyReadTimeoutSparesStreams(t *testing.T) {
	const timeout = 100 * time.Millisecond
	answer := `{"assistantText":"` + strings.Repeat("Tell me more. ", 10) + `","step":"claim"}`
	ts := startServer(t, func(d *Deps) {
		d.BodyReadTimeout = timeout
		d.Service = coach.NewService(coachtest.NewMemStore(), pacedModel{answer: answer, size: 16, pause: 50 * time.Millisecond}, contracts(t), coach.Options{}, nil)
	})
	tests := []struct{ name, route, body, end string }{
		{"ndjson", "turns", msgBody("Cities should ban cars."), `"type":"result"`},
		{"chat", "chat", `{"messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"Cities should ban cars."}]}]}`,
			`data-coach-result`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := ts.create("toulmin")
			start := time.Now()
			r := ts.do("POST", "/v1/sessions/"+id+"/"+tt.route, tt.body)
			if took := time.Since(start); took < 3*timeout {
				t.Fatalf("the turn took %v; it must outlast the body read timeout %v to prove anything", took, timeout)
			}
			if r.Status != http.StatusOK || !strings.Contains(r.Body, tt.end) {
				t.Errorf("status %d, stream %s, want %s", r.Status, clip(r.Body), tt.end)
			}
		})
	}
}

// TestNosniff checks that JSON answers, errors included, tell browsers not to guess their type.
func TestNosniff(t *testing.T) {
	ts := startServer(t, nil)
	for _, path := range []string{"/healthz", "/v1/modules", "/v1/sessions/" + strings.Repeat("a", 32), "/nowhere"} {
		r := ts.do("GET", path, "")
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s (%d): X-Content-Type-Options = %q, want nosniff", path, r.Status, got)
		}
	}
}

// TestEchoedInputIsClipped sends 60 KB ids where error messages name what was asked for: the
// message repeats at most about 100 characters of it.
func TestEchoedInputIsClipped(t *testing.T) {
	ts := startServer(t, func(d *Deps) { d.MaxBodyBytes = 1 << 20 })
	long := strings.Repeat("x", 60_000)
	tests := []struct{ name, method, path, body string }{
		{"module route", "GET", "/v1/modules/" + long, ""},
		{"module of a new session", "POST", "/v1/sessions", `{"contract":"module","module":"` + long + `"}`},
		{"contract of a new session", "POST", "/v1/sessions", `{"contract":"` + long + `"}`},
		{"step of a turn", "POST", "/v1/sessions/" + ts.create("toulmin") + "/turns", `{"message":"hi","step":"` + long + `"}`},
		{"role in a chat", "POST", "/v1/sessions/" + ts.create("toulmin") + "/chat", `{"messages":[{"id":"m","role":"` + long + `","parts":[]}]}`},
		{"part in a chat", "POST", "/v1/sessions/" + ts.create("toulmin") + "/chat", `{"messages":[{"id":"m","role":"user","parts":[{"type":"data-coach-` + long + `"}]}]}`},
		{"form of a turn", "POST", "/v1/sessions/" + ts.create("module") + "/turns", `{"form":{"id":"` + long[:7000] + `","values":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			if r.Status < 400 && !strings.Contains(r.Body, `"type":"error"`) {
				t.Fatalf("status %d %s, want an error", r.Status, clip(r.Body))
			}
			if len(r.Body) > 400 {
				t.Errorf("error of %d bytes echoes the input: %s", len(r.Body), clip(r.Body))
			}
			if !strings.Contains(r.Body, "…") {
				t.Errorf("body %s: want the cut marked with an ellipsis", clip(r.Body))
			}
		})
	}
	// The access log names the path, clipped as well.
	for _, line := range strings.Split(ts.log.String(), "\n") {
		if len(line) > 1000 {
			t.Errorf("a log line of %d bytes repeats the input: %s", len(line), clip(line))
		}
	}
}
