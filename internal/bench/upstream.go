package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coachgw/coachgw/internal/fakellm"
)

// clock gives every timestamp of a run as nanoseconds since the run began, from the monotonic
// clock of the bench process, which owns both fakellm and the client.
type clock struct{ base time.Time }

func (c clock) now() int64 { return int64(time.Since(c.base)) }

// turnRec is one turn as both ends of the measured path saw it. The upstream side is written
// by fakellm's handler goroutine and read by the client only after done is closed.
type turnRec struct {
	seq  uint64
	mode Mode
	sc   *script
	// hold makes the upstream pause the stream after holdAfter events until gate is closed.
	hold      bool
	holdAfter int
	gate      <-chan struct{}

	// Upstream side, guarded by mu: when the request arrived, when each event was flushed, and
	// how many model requests the turn made (a retry would make two). done is closed when the
	// first request's handler returns.
	mu       sync.Mutex
	arrive   int64
	flushes  []int64
	requests int
	done     chan struct{}

	// Client side: when the request was sent, when the first text and the last line arrived,
	// and per text-carrying line its arrival and the piece that completed it.
	send, first, last int64
	recv              []int64
	recvChunk         []int32
}

// overheads returns what the path between client and model added to the time to the first
// text and to the last line. The model's own share, from the moment fakellm had the request
// to its flush of the piece holding the first text (and of the last event), is subtracted, so
// the random pauses of the script cancel out and only the path remains: for direct, the
// loopback and client; for proxy, a reverse proxy on top; for coachgw, the whole gateway turn.
func (r *turnRec) overheads() (ttfd, ttll int64, ok bool) {
	if len(r.flushes) <= r.sc.first || r.first == 0 || r.last == 0 {
		return 0, 0, false
	}
	ttfd = (r.first - r.send) - (r.flushes[r.sc.first] - r.arrive)
	ttll = (r.last - r.send) - (r.flushes[len(r.flushes)-1] - r.arrive)
	return ttfd, ttll, true
}

// deltaLatencies appends, per text-carrying line, its arrival minus the flush of the piece
// that completed it.
func (r *turnRec) deltaLatencies(dst []int64) ([]int64, error) {
	for i, t := range r.recv {
		k := int(r.recvChunk[i])
		if k < 0 || k >= len(r.flushes) {
			return dst, fmt.Errorf("line %d maps to piece %d of %d flushed", i, k, len(r.flushes))
		}
		dst = append(dst, t-r.flushes[k])
	}
	return dst, nil
}

// turnHeader carries a turn's sequence number from the wrapper to the responder.
const turnHeader = "X-Bench-Turn"

// tagPrefix marks a turn's sequence number in the user message ("#bt123#"), the one thing of
// the client's request that reaches the model request whichever path it took.
const tagPrefix = "#bt"

func tag(seq uint64) string { return tagPrefix + strconv.FormatUint(seq, 10) + "#" }

// findTag returns the sequence number of the last tag in body. The last one is the latest user
// message: earlier turns of a session come before it in the history.
func findTag(body []byte) (uint64, bool) {
	i := bytes.LastIndex(body, []byte(tagPrefix))
	if i < 0 {
		return 0, false
	}
	rest := body[i+len(tagPrefix):]
	j := bytes.IndexByte(rest, '#')
	if j <= 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(rest[:j]), 10, 64)
	return n, err == nil
}

// upstream is fakellm answering every turn from its script, behind a handler that timestamps
// each event as it is flushed. (fakellm's OnChunk reports the same instant but not which of
// the concurrent requests it belongs to, so the bench wraps the ResponseWriter instead.)
type upstream struct {
	clk  clock
	llm  *fakellm.Server
	srv  *http.Server
	ln   net.Listener
	base string

	mu    sync.Mutex
	turns map[uint64]*turnRec

	// held counts streams paused at their hold point; conns the connections fakellm accepted.
	held  atomic.Int64
	conns atomic.Int64
}

func startUpstream(clk clock, shape Shape, seed uint64) (*upstream, error) {
	u := &upstream{clk: clk, turns: map[uint64]*turnRec{}}
	u.llm = fakellm.New(fakellm.Options{
		DelayMin: shape.DelayMin, DelayMax: shape.DelayMax, Seed: seed,
		Responder: fakellm.ResponderFunc(u.respond), RequestLog: -1, Model: "fakellm-bench",
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u.ln = ln
	u.base = "http://" + ln.Addr().String()
	u.srv = &http.Server{
		Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				u.conns.Add(1)
			}
		},
	}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

func (u *upstream) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u.srv.Shutdown(ctx); err != nil {
		_ = u.srv.Close()
	}
}

// closeIdle closes fakellm's idle keep-alive connections.
func (u *upstream) closeIdle() {
	u.srv.SetKeepAlivesEnabled(false)
	u.srv.SetKeepAlivesEnabled(true)
}

func (u *upstream) register(r *turnRec) {
	r.done = make(chan struct{})
	u.mu.Lock()
	u.turns[r.seq] = r
	u.mu.Unlock()
}

func (u *upstream) forget(seq uint64) {
	u.mu.Lock()
	delete(u.turns, seq)
	u.mu.Unlock()
}

func (u *upstream) lookup(seq uint64) *turnRec {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.turns[seq]
}

// serve times the request, finds its turn and lets fakellm answer through a timing writer.
func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	arrive := u.clk.now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	seq, ok := findTag(body)
	var rec *turnRec
	if ok {
		rec = u.lookup(seq)
	}
	if rec == nil {
		u.llm.ServeHTTP(w, r)
		return
	}
	rec.mu.Lock()
	rec.requests++
	if rec.requests == 1 {
		defer close(rec.done)
	}
	// On a retry only the latest attempt's stream counts; the turn is reported as retried.
	rec.flushes = rec.flushes[:0]
	rec.arrive = arrive
	rec.mu.Unlock()
	r.Header.Set(turnHeader, strconv.FormatUint(seq, 10))
	u.llm.ServeHTTP(&timedWriter{ResponseWriter: w, u: u, rec: rec, ctx: r.Context()}, r)
}

// respond answers a turn with its script.
func (u *upstream) respond(req *fakellm.Request) fakellm.Reply {
	seq, err := strconv.ParseUint(req.Header.Get(turnHeader), 10, 64)
	if rec := u.lookup(seq); err == nil && rec != nil {
		return fakellm.Reply{Content: rec.sc.raw, Chunks: rec.sc.pieces}
	}
	return fakellm.Reply{Fault: fakellm.Fault{Status: http.StatusInternalServerError}}
}

// timedWriter records the time each event was written to the network. A flush with nothing
// written since the last one (the header flush) is not an event.
type timedWriter struct {
	http.ResponseWriter
	u       *upstream
	rec     *turnRec
	ctx     context.Context
	pending bool
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.pending = true
	return w.ResponseWriter.Write(p)
}

func (w *timedWriter) Flush() { _ = w.FlushError() }

// FlushError stamps the event, flushes it, and pauses a held stream at its hold point. The
// stamp is taken as the event is handed to the network, before the write: after it, the client
// may already have read the event.
func (w *timedWriter) FlushError() error {
	at := w.u.clk.now()
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if !w.pending {
		return err
	}
	w.pending = false
	r := w.rec
	r.mu.Lock()
	r.flushes = append(r.flushes, at)
	n := len(r.flushes)
	r.mu.Unlock()
	if r.hold && n == r.holdAfter {
		w.u.held.Add(1)
		select {
		case <-r.gate:
		case <-w.ctx.Done():
			return errors.Join(err, w.ctx.Err())
		}
	}
	return err
}

func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
