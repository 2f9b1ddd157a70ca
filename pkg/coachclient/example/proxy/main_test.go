package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/pkg/coachclient"
)

// wait bounds how long a test waits for something that should happen at once; it only decides
// how long a broken test takes to fail.
const wait = 5 * time.Second

const (
	deltaLine  = `{"type":"delta","text":"Tell me \u003cmore\u003e"}`
	resultLine = `{"type":"result","result":{"assistantText":"Tell me more"},"session":{"id":"3fa9c0de3fa9c0de3fa9c0de3fa9c0de",` +
		`"contract":"toulmin","locale":"en","version":2,"state":{"step":"claim"},"createdAt":"2025-01-02T03:04:05Z","updatedAt":"2025-01-02T03:04:06Z"}}`
)

// proxyOf starts the proxy in front of an upstream that answers with h.
func proxyOf(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	p := httptest.NewServer(newHandler(coachclient.New(up.URL)))
	t.Cleanup(p.Close)
	return p
}

func post(ctx context.Context, t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/turn", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readLine reads one line of r, failing the test if none comes in time.
func readLine(t *testing.T, r *bufio.Reader, what string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		return line
	case <-time.After(wait):
		t.Fatalf("%s did not arrive", what)
		return ""
	}
}

// TestStreamsLineByLine has the upstream hold its last line back until the proxy's client got
// the first: a proxy that buffered would never deliver it.
func TestStreamsLineByLine(t *testing.T) {
	release := make(chan struct{})
	var gotPath, gotBody string
	p := proxyOf(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotPath, gotBody = r.URL.Path, string(b)
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, deltaLine+"\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, resultLine+"\n")
	})
	resp := post(context.Background(), t, p.URL, `{"sessionId":"3fa9c0de3fa9c0de3fa9c0de3fa9c0de","message":"hi","step":"claim"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	for k, want := range map[string]string{"Content-Type": "application/x-ndjson", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	r := bufio.NewReader(resp.Body)
	if got := readLine(t, r, "the first line"); got != deltaLine+"\n" {
		t.Errorf("first line = %q, want %q", got, deltaLine)
	}
	close(release)
	if got := readLine(t, r, "the last line"); got != resultLine+"\n" {
		t.Errorf("last line = %q, want %q", got, resultLine)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the last line: %q, %v", rest, err)
	}
	if gotPath != "/v1/sessions/3fa9c0de3fa9c0de3fa9c0de3fa9c0de/turns" || gotBody != `{"message":"hi","step":"claim"}` {
		t.Errorf("upstream got %s %s", gotPath, gotBody)
	}
}

func TestCancelsUpstreamWhenClientLeaves(t *testing.T) {
	upstreamDone := make(chan struct{})
	p := proxyOf(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, deltaLine+"\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
		close(upstreamDone)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(ctx, t, p.URL, `{"sessionId":"s","message":"hi"}`)
	readLine(t, bufio.NewReader(resp.Body), "the first line")
	cancel()
	select {
	case <-upstreamDone:
	case <-time.After(wait):
		t.Fatal("the upstream turn was not cancelled when the client left")
	}
}

func TestEndsABrokenStreamWithAnErrorLine(t *testing.T) {
	p := proxyOf(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, deltaLine+"\n")
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // cut the connection mid-stream
	})
	resp := post(context.Background(), t, p.URL, `{"sessionId":"s","message":"hi"}`)
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := deltaLine + "\n" + `{"type":"error","error":"coach_stream_failed","message":"the coaching gateway's stream broke off"}` + "\n"
	if string(body) != want {
		t.Errorf("body = %q, want %q", body, want)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name           string
		upstream       http.HandlerFunc
		body           string
		wantStatus     int
		wantBody       string
		wantRetryAfter string
	}{
		{
			"the gateway's own answer is passed on",
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":"rate_limited","message":"slow down"}`)
			},
			`{"sessionId":"s","message":"hi"}`, 429, `{"error":"rate_limited","message":"slow down"}`, "3",
		},
		{
			"with the offending field",
			func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnprocessableEntity)
				io.WriteString(w, `{"error":"invalid_input","message":"not offered","field":"selected"}`)
			},
			`{"sessionId":"s","selected":"z"}`, 422, `{"error":"invalid_input","message":"not offered","field":"selected"}`, "",
		},
		{
			"no session id",
			nil, `{"message":"hi"}`, 400, `{"error":"invalid_request","message":"the body must be a JSON object with a \"sessionId\""}`, "",
		},
		{
			"not JSON",
			nil, `hi`, 400, `{"error":"invalid_request","message":"the body must be a JSON object with a \"sessionId\""}`, "",
		},
		{
			"too large",
			nil, `{"sessionId":"s","message":"` + strings.Repeat("x", maxBody) + `"}`, 413,
			`{"error":"body_too_large","message":"the request body is too large"}`, "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := tt.upstream
			if up == nil {
				up = func(w http.ResponseWriter, r *http.Request) { t.Error("the upstream was called") }
			}
			resp := post(context.Background(), t, proxyOf(t, up).URL, tt.body)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus || strings.TrimSpace(string(body)) != tt.wantBody {
				t.Errorf("answer = %d %s, want %d %s", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetryAfter)
			}
		})
	}
}

func TestUpstreamDown(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	up.Close()
	p := httptest.NewServer(newHandler(coachclient.New(up.URL)))
	defer p.Close()
	resp := post(context.Background(), t, p.URL, `{"sessionId":"s","message":"hi"}`)
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status = %d, want 502", resp.StatusCode)
	}
}

func TestRun(t *testing.T) {
	getenv := func(string) string { return "" }
	t.Run("a bad flag", func(t *testing.T) {
		if err := run(context.Background(), []string{"-nope"}, getenv); err == nil {
			t.Error("run accepted an unknown flag")
		}
	})
	t.Run("stops with its context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenv) }()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run = %v, want nil", err)
			}
		case <-time.After(wait):
			t.Fatal("run did not return after its context ended")
		}
	})
}
