package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/turns"
)

// floodModel opens a toulmin result's assistantText and then streams text without end: far
// more than a client that does not read can buffer.
type floodModel struct{}

func (floodModel) Stream(ctx context.Context, _ coach.ModelRequest, _ coach.StreamHooks) (coach.Stream, error) {
	return &floodStream{ctx: ctx, piece: strings.Repeat("la ", 100_000)}, nil
}

type floodStream struct {
	ctx    context.Context
	piece  string
	opened bool
}

func (s *floodStream) Next() (coach.Fragment, error) {
	if err := s.ctx.Err(); err != nil {
		return coach.Fragment{}, err
	}
	if !s.opened {
		s.opened = true
		return coach.Fragment{Content: `{"step":"claim","assistantText":"`}, nil
	}
	return coach.Fragment{Content: s.piece}, nil
}

func (s *floodStream) Close() error { return nil }

// TestClientThatNeverReads starts a turn whose client sends the request and then reads
// nothing, on the NDJSON route and on the chat route's UI message stream. The stream's writes
// share the turn's deadline (plus writeGrace), so the blocked write fails and the session's lock
// is released, instead of the handler waiting on the client for ever with the session locked.
// By default (v1.2) the turn itself ends at its deadline (an endless answer), as it would
// without its client; with turns.Config.CancelOnDisconnect the failed write cancels it, as in v1.
func TestClientThatNeverReads(t *testing.T) {
	chat := `{"messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"Cities should ban cars."}]}]}`
	tests := []struct {
		name, route, body string
		cancel            bool
		outcome           string
	}{
		{"ndjson", "turns", msgBody("Cities should ban cars."), false, coach.CodeStreamFailed},
		{"chat", "chat", chat, false, coach.CodeStreamFailed},
		{"ndjson/cancel", "turns", msgBody("Cities should ban cars."), true, "cancelled"},
		{"chat/cancel", "chat", chat, true, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			neverRead(t, tt.route, tt.body, tt.cancel, tt.outcome)
		})
	}
}

// neverRead sends body to route of a new toulmin session and reads nothing (see
// TestClientThatNeverReads).
func neverRead(t *testing.T, route, body string, cancel bool, outcome string) {
	const turnTimeout = 2 * time.Second
	store := coachtest.NewMemStore()
	ts := startServer(t, func(d *Deps) {
		d.Service = coach.NewService(store, floodModel{}, contracts(t), coach.Options{
			TurnTimeout: turnTimeout, MaxOutputBytes: 1 << 30,
		}, nil)
		d.Turns = turns.New(turns.Config{CancelOnDisconnect: cancel})
	})
	id := ts.create("toulmin")
	conn := smallWindowConn(t, ts.URL)
	if _, err := fmt.Fprintf(conn, "POST /v1/sessions/%s/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", id, route, len(body), body); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	within := turnTimeout + writeGrace + 5*time.Second
	for !store.Locked(id) {
		if time.Since(start) > within {
			t.Fatal("the turn never took the lock")
		}
		time.Sleep(time.Millisecond)
	}
	for store.Locked(id) {
		if time.Since(start) > within {
			t.Fatalf("the session is still locked %v after the turn started, with a turn timeout of %v", within, turnTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("lock released %v after the turn started", took.Round(time.Millisecond))
	if took < turnTimeout {
		t.Errorf("lock released after %v, before the turn's deadline: the client did read", took)
	}
	// With CancelOnDisconnect the blocked write cancels the turn, unless the kernel's send
	// buffer (autotuned, megabytes on some machines) took everything the turn wrote before its
	// own deadline: then the deadline ends it first, as without a client. Either way the lock
	// is released and nothing is stored, which is what matters here.
	want := []string{outcome}
	if cancel {
		want = append(want, coach.CodeStreamFailed)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !slices.ContainsFunc(want, func(o string) bool { return strings.Contains(ts.log.String(), `"outcome":"`+o+`"`) }) {
		if time.Now().After(deadline) {
			t.Fatalf("no turn log line with outcome %s:\n%s", strings.Join(want, " or "), ts.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s, _ := store.Session(id); s.Version != 1 {
		t.Errorf("stored version %d, want 1: a failed or cancelled turn writes nothing", s.Version)
	}
}

// smallWindowConn connects to url with a small receive buffer, set before connecting, which
// keeps the client's window small; it closes at the end of the test.
func smallWindowConn(t *testing.T, url string) net.Conn {
	t.Helper()
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestAnswerToAClientThatNeverReads asks for a transcript page far larger than the socket
// buffers can hold and reads nothing: the answer's writes have a deadline (the body read timeout
// plus WriteTimeout from the request's start), so the handler gives up and returns, instead of
// holding its goroutine and the page for as long as the client keeps the connection open.
func TestAnswerToAClientThatNeverReads(t *testing.T) {
	const bodyTimeout, writeTimeout = 100 * time.Millisecond, 300 * time.Millisecond
	ts := startServer(t, func(d *Deps) { d.BodyReadTimeout, d.WriteTimeout = bodyTimeout, writeTimeout })
	id := ts.create("toulmin")
	ctx := context.Background()
	sess, token, err := ts.store.Claim(ctx, "", id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	input := json.RawMessage(`{"message":"` + strings.Repeat("a", 100_000) + `"}`)
	var extra coach.CommitExtra
	for range 160 { // 16 MB: more than any socket buffer holds
		extra.Transcript = append(extra.Transcript, coach.TranscriptEntry{At: time.Now(), Role: coach.TranscriptLearner, Input: input})
	}
	next := *sess
	next.Version++
	if err := ts.store.Commit(ctx, &next, token, extra); err != nil {
		t.Fatal(err)
	}
	conn := smallWindowConn(t, ts.URL)
	path := "/v1/sessions/" + id + "/messages"
	start := time.Now()
	if _, err := fmt.Fprintf(conn, "GET %s?limit=200 HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	// Reading and encoding a 16 MB page takes seconds under the race detector on a loaded
	// machine, before any write; a handler without the deadline never returns at all.
	within := bodyTimeout + writeTimeout + 30*time.Second
	for !strings.Contains(ts.log.String(), `"path":"`+path+`"`) {
		if time.Since(start) > within {
			t.Fatalf("the handler still writes to a client that reads nothing %v after the request", within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the handler returned %v after the request", time.Since(start).Round(time.Millisecond))
}
