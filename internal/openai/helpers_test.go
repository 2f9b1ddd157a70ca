package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// testKey is a realistic key, so that a test can tell whether it leaked anywhere.
const testKey = "sk-test-0123456789abcdefWXYZ"

// wait bounds every wait for something another goroutine must do; hitting it is a failure.
const wait = 5 * time.Second

// upstream is a fake OpenAI-compatible endpoint on loopback. Each request's headers and
// decoded body are queued on reqs before handle runs.
type upstream struct {
	*httptest.Server
	reqs chan received
	// release is closed at cleanup, before the server closes, to end handlers that block.
	release chan struct{}
}

type received struct {
	header http.Header
	body   map[string]any
}

func newUpstream(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *upstream {
	t.Helper()
	u := &upstream{reqs: make(chan received, 16), release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		u.reqs <- received{header: r.Header.Clone(), body: body}
		handle(w, r)
	}))
	t.Cleanup(u.Close)
	t.Cleanup(func() { close(u.release) })
	return u
}

// client returns a Client of cfg aimed at u.
func (u *upstream) client(cfg Config) *Client {
	cfg.BaseURL = u.URL + "/v1"
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	return New(cfg)
}

// request returns the next request u received.
func (u *upstream) request(t *testing.T) received {
	t.Helper()
	select {
	case r := <-u.reqs:
		return r
	case <-time.After(wait):
		t.Fatal("the upstream received no request")
		return received{}
	}
}

// events writes each payload as one server-sent event and flushes.
func events(w http.ResponseWriter, payloads ...string) {
	for _, p := range payloads {
		_, _ = io.WriteString(w, "data: "+p+"\n\n")
	}
	w.(http.Flusher).Flush()
}

// serve answers with the given events, hand-written as an OpenAI endpoint sends them.
func serve(payloads ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		events(w, payloads...)
	}
}

// Hand-written chunks.
const (
	chunkRole   = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	chunkHel    = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`
	chunkLo     = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`
	chunkStop   = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	chunkUsage  = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	chunkNoneOf = `{"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[{"prompt_index":0}]}`
	done        = `[DONE]`
)

// collect reads s until it fails or ends and returns the fragments and the final error.
func collect(t *testing.T, s coach.Stream) ([]coach.Fragment, error) {
	t.Helper()
	var got []coach.Fragment
	for range 10000 {
		f, err := s.Next()
		if err != nil {
			return got, err
		}
		got = append(got, f)
	}
	t.Fatal("the stream never ended")
	return nil, nil
}

// nextWithin calls s.Next on another goroutine and fails the test if it does not return in time.
func nextWithin(t *testing.T, s coach.Stream) (coach.Fragment, error) {
	t.Helper()
	type result struct {
		f   coach.Fragment
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := s.Next()
		ch <- result{f, err}
	}()
	select {
	case r := <-ch:
		return r.f, r.err
	case <-time.After(wait):
		t.Fatal("Next did not return")
		return coach.Fragment{}, nil
	}
}

// modelError returns err as a *coach.ModelError or fails the test.
func modelError(t *testing.T, err error) *coach.ModelError {
	t.Helper()
	var me *coach.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error = %v (%T), want a *coach.ModelError", err, err)
	}
	return me
}

// jsonValue decodes s for comparisons with decoded request bodies.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func assertJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	if w := jsonValue(t, want); !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s =\n%s\nwant\n%s", what, g, compact(t, want))
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return b.String()
}
