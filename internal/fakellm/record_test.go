package fakellm

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		reply     Reply
		auth      string // the client's Authorization
		apiKey    string // the recorder's fallback key
		wantAuth  string // what the upstream sees
		wantType  string
		wantFinal string // the last event, or the end of a JSON body
	}{
		{name: "streamed content", body: chatBody(true), reply: Reply{Content: multibyte},
			auth: "Bearer sk-client", apiKey: "sk-env", wantAuth: "Bearer sk-client", wantType: "text/event-stream", wantFinal: "data: [DONE]\n\n"},
		{name: "streamed tool call", body: chatBody(true), reply: Reply{ToolCall: &ToolCall{Name: "display_card", Arguments: `{"card_type":"insight","content":"Notice that."}`}},
			apiKey: "sk-env", wantAuth: "Bearer sk-env", wantType: "text/event-stream", wantFinal: "data: [DONE]\n\n"},
		{name: "non-streamed", body: chatBody(false), reply: Reply{Content: "plain"},
			wantType: "application/json", wantFinal: "}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream, upURL := start(t, Options{Seed: 5})
			upstream.Enqueue(tt.reply)
			dir := t.TempDir()
			rec, recURL := start(t, Options{Record: &Recording{Upstream: upURL, Dir: dir, APIKey: tt.apiKey}})
			header := http.Header{FaultHeader: {"status=500"}} // recording ignores faults and does not forward them
			if tt.auth != "" {
				header.Set("Authorization", tt.auth)
			}
			x := do(t, nil, recURL, tt.body, header)
			if x.err != nil || x.readErr != nil || x.resp.StatusCode != http.StatusOK {
				t.Fatalf("request: %v, body: %v, status %v", x.err, x.readErr, x.resp.Status)
			}
			if got := x.resp.Header.Get("Content-Type"); got != tt.wantType || !strings.HasSuffix(string(x.body), tt.wantFinal) {
				t.Errorf("got %s ending %q, want %s ending %q", got, x.body[max(0, len(x.body)-20):], tt.wantType, tt.wantFinal)
			}
			ups := upstream.Requests()
			if len(ups) != 1 || string(ups[0].Raw) != tt.body || ups[0].Header.Get("Authorization") != tt.wantAuth || ups[0].Header.Get(FaultHeader) != "" {
				t.Fatalf("upstream saw %d requests, want one with the body, Authorization %q and no fault header", len(ups), tt.wantAuth)
			}
			if len(rec.Requests()) != 1 {
				t.Errorf("recorder Requests() = %d, want 1", len(rec.Requests()))
			}
			// The recording is saved after the last byte went out, just before the handler returns.
			waitFor(t, "the recorder to finish", func() bool { return rec.Served() == 1 })

			reqFiles, _ := filepath.Glob(filepath.Join(dir, "*.request.json"))
			sseFiles, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
			if len(reqFiles) != 1 || len(sseFiles) != 1 || strings.TrimSuffix(reqFiles[0], ".request.json") != strings.TrimSuffix(sseFiles[0], ".sse") {
				t.Fatalf("recorded %v and %v, want one <name>.request.json and <name>.sse", reqFiles, sseFiles)
			}
			if got, _ := os.ReadFile(reqFiles[0]); string(got) != tt.body {
				t.Errorf("recorded request %q, want %q", got, tt.body)
			}
			if got, _ := os.ReadFile(sseFiles[0]); string(got) != string(x.body) {
				t.Errorf("recorded response:\n%s\nwant what the client got:\n%s", got, x.body)
			}

			replayer, replayURL := start(t, Options{Fixtures: os.DirFS(dir)})
			replayer.Enqueue(Reply{Fixture: strings.TrimSuffix(filepath.Base(sseFiles[0]), ".sse")})
			y := do(t, nil, replayURL, tt.body, nil)
			if y.err != nil || y.readErr != nil {
				t.Fatalf("replay: %v, body: %v", y.err, y.readErr)
			}
			if string(y.body) != string(x.body) || y.resp.Header.Get("Content-Type") != tt.wantType {
				t.Errorf("replayed %s:\n%s\nwant the recorded %s:\n%s", y.resp.Header.Get("Content-Type"), y.body, tt.wantType, x.body)
			}
		})
	}
}

func TestRecordRelaysErrorsWithoutSaving(t *testing.T) {
	upstream, upURL := start(t, Options{})
	upstream.Enqueue(Reply{Fault: Fault{Status: 429, RetryAfter: "7"}})
	dir := t.TempDir()
	_, recURL := start(t, Options{Record: Record(upURL, dir)})
	x := do(t, nil, recURL, chatBody(true), nil)
	if x.err != nil || x.resp.StatusCode != http.StatusTooManyRequests || x.resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("got %v %v, want 429 with Retry-After 7", x.err, x.resp.Status)
	}
	if !strings.Contains(string(x.body), "rate_limit_exceeded") {
		t.Errorf("body %s, want the upstream's error", x.body)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("recorded %d files of a failed exchange, want none", len(files))
	}
}

func TestRecordPassesCancellationUpstream(t *testing.T) {
	upstream, upURL := start(t, Options{})
	upstream.Enqueue(Reply{Content: "never finished", Fault: Fault{StallAfter: 1, Stall: time.Hour}})
	dir := t.TempDir()
	rec, recURL := start(t, Options{Record: Record(upURL, dir)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := post(ctx, nil, recURL, chatBody(true), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first event arrives while the upstream stalls: the recorder streams, it does not buffer.
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v; want a data line", line, err)
	}
	if upstream.Open() != 1 || rec.Open() != 1 {
		t.Errorf("Open() upstream %d, recorder %d; want 1 each mid-stream", upstream.Open(), rec.Open())
	}
	cancel()
	waitFor(t, "the upstream stream to close", func() bool { return upstream.Open() == 0 && rec.Open() == 0 })
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("recorded %d files of an abandoned exchange, want none", len(files))
	}
}

// TestRecordUpstreamClosesIdleConnections puts the recording proxy in front of an upstream that,
// like llama-server, keeps a connection open after its answer but closes it when a second
// request comes on it: each call the proxy relays must reach the upstream and be answered, with
// no 502 for a call the upstream never saw.
func TestRecordUpstreamClosesIdleConnections(t *testing.T) {
	upstream, _ := start(t, Options{})
	type connKey struct{}
	var mu sync.Mutex
	seen := 0 // requests the upstream answered
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connKey{}).(*int)
		if *n++; *n > 1 {
			// A second request on a kept connection: the server had closed it.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		mu.Lock()
		seen++
		mu.Unlock()
		upstream.ServeHTTP(w, r)
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, new(int))
	}
	srv.Start()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	rec, recURL := start(t, Options{Record: Record(srv.URL+"/v1", dir)})
	const calls = 4
	for i := range calls {
		upstream.Enqueue(Reply{Content: "hello"})
		x := do(t, nil, recURL, chatBody(true), nil)
		if x.err != nil || x.resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %v, status %v, body %s; want 200", i, x.err, x.resp.Status, x.body)
		}
		waitFor(t, "the recorder to finish", func() bool { return rec.Served() == i+1 })
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != calls {
		t.Errorf("upstream answered %d requests, want %d", seen, calls)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.sse")); len(files) != calls {
		t.Errorf("recorded %d calls, want %d", len(files), calls)
	}
}
