package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// TurnLog keeps the lines of running and recent turns where every instance can read them, and
// carries stops between instances (v1.2, resumable turns). internal/redisstore implements it
// with Redis Streams and pub/sub.
type TurnLog interface {
	// Append adds one batch of lines (NDJSON, each ending in '\n'; possibly none) to the log of
	// turn of session. first is the number of lines written before the batch. state, when not
	// empty, is written to the session's current-turn pointer with the batch: TurnRunning with
	// the first batch, TurnEnded with the last. The log and the pointer expire ttl after the
	// batch (the caller passes the turn's whole remaining life while it runs).
	Append(ctx context.Context, session, turn string, first int64, lines []byte, state string, ttl time.Duration) error
	// Current returns the session's current turn: its id and whether it still runs; id is ""
	// when the session has none (or it expired).
	Current(ctx context.Context, session string) (id string, running bool, err error)
	// Read returns the batches of turn's log after cursor ("" from the start), waiting up to
	// block for one when there is none yet; none and a nil error when block passed.
	Read(ctx context.Context, session, turn, cursor string, block time.Duration) ([]LogBatch, error)
	// Stop asks every instance to stop turn of session.
	Stop(ctx context.Context, session, turn string) error
}

// LogBatch is one batch of a turn's log.
type LogBatch struct {
	// Cursor names the batch, for the next Read.
	Cursor string
	// First is the number of the turn's lines before this batch.
	First int64
	// Lines are the batch's NDJSON lines, each ending in '\n'.
	Lines []byte
	// End marks the turn's last batch.
	End bool
}

// States of a session's current-turn pointer.
const (
	TurnRunning = "running"
	TurnEnded   = "ended"
)

// logInterval is the least time between two appends of one turn's log: a batch takes every line
// written meanwhile, so a turn costs a round trip per interval, not one per delta, and its
// first and last lines still go out at once.
const logInterval = 100 * time.Millisecond

// lineLog is one turn's tee into its TurnLog. The turn only appends to a buffer under a mutex;
// a goroutine of its own writes the buffer out, one Append in flight at a time, so the turn
// never waits for Redis.
type lineLog struct {
	store         TurnLog
	session, turn string
	// live is how long the log is kept while the turn runs, ttl after its end.
	live, ttl time.Duration
	log       *zerolog.Logger

	mu    sync.Mutex
	buf   []byte
	lines int64 // lines in buf
	ended bool

	wake, end chan struct{}
	done      chan struct{}
}

// newLineLog starts the writer of turn's log; its first append, made at once, writes the
// session's current-turn pointer, so that a resume finds the turn before its first line.
func newLineLog(store TurnLog, session, turn string, live, ttl time.Duration, log *zerolog.Logger) *lineLog {
	l := &lineLog{
		store: store, session: session, turn: turn, live: live, ttl: ttl, log: log,
		buf: make([]byte, 0, 1024), wake: make(chan struct{}, 1), end: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// add appends line, one encoded NDJSON line. It does not wake the writer: the turn does that
// with kick once the line is on its way to the client.
func (l *lineLog) add(line []byte) {
	l.mu.Lock()
	l.buf = append(l.buf, line...)
	l.lines++
	l.mu.Unlock()
}

// kick tells the writer that lines are waiting. The writer then takes them, and whatever comes
// in the next logInterval, as one batch.
func (l *lineLog) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// close marks the turn's end: the writer appends what is left as the last batch and stops.
func (l *lineLog) close() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	close(l.end)
}

// run writes the log until the turn's end.
func (l *lineLog) run() {
	defer close(l.done)
	var sent int64
	spare := make([]byte, 0, 1024)
	state := TurnRunning
	failed := false
	for {
		l.mu.Lock()
		batch, n, ended := l.buf, l.lines, l.ended
		l.buf, l.lines = spare[:0], 0
		l.mu.Unlock()
		ttl := l.live
		if ended {
			state, ttl = TurnEnded, l.ttl
		}
		if len(batch) > 0 || state != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := l.store.Append(ctx, l.session, l.turn, sent, batch, state, ttl)
			cancel()
			if err != nil && !failed {
				// A resume will miss lines; the turn itself goes on.
				failed = true
				l.log.Warn().Err(err).Str("session", l.session).Str("turn", l.turn).Msg("a turn's lines could not be kept for resume")
			}
		}
		sent += n
		spare = batch
		state = ""
		if ended {
			return
		}
		select {
		case <-l.wake:
		case <-l.end:
			continue
		}
		t := time.NewTimer(logInterval)
		select {
		case <-t.C:
		case <-l.end:
		}
		t.Stop()
	}
}

// runningTurns are the turns running on this instance, by session (a session runs one turn at
// a time), so that a stop from any instance finds the one to cancel.
type runningTurns struct {
	mu sync.Mutex
	m  map[string]runningTurn
}

type runningTurn struct {
	turn   string
	cancel context.CancelCauseFunc
}

func (r *runningTurns) add(session, turn string, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]runningTurn{}
	}
	r.m[session] = runningTurn{turn: turn, cancel: cancel}
}

func (r *runningTurns) remove(session, turn string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.m[session]; ok && t.turn == turn {
		delete(r.m, session)
	}
}

// stop cancels turn of session if it runs here (turn "": whichever runs), and reports whether
// it did.
func (r *runningTurns) stop(session, turn string) bool {
	r.mu.Lock()
	t, ok := r.m[session]
	r.mu.Unlock()
	if !ok || (turn != "" && t.turn != turn) {
		return false
	}
	t.cancel(coach.ErrTurnCancelled)
	return true
}

// running returns the id of the turn of session running here, or "".
func (r *runningTurns) running(session string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[session].turn
}

// StopLocal stops turn of session if it runs on this instance: what a stop published by any
// instance (TurnLog.Stop) is delivered to.
func (s *Server) StopLocal(session, turn string) { s.running.stop(session, turn) }

// turnSink is the Sink of one turn as the HTTP adapter runs it: it marks the turn's last line
// with the turn's id, tees every line into the turn's log, and writes to the client while the
// client is there. A client that is gone stops receiving lines, never the turn, unless the
// gateway cancels turns on disconnect (then its write error ends the turn, as in v1).
type turnSink struct {
	client coach.Sink
	log    *lineLog
	turn   string
	// line is the last line encoded for the log; an NDJSON client is written the same bytes,
	// so a line is encoded once however many places it goes.
	line []byte
	// cancelOnError passes the client's write errors on to the engine.
	cancelOnError bool
	gone          bool
}

// Emit tees e.
func (t *turnSink) Emit(e coach.Event) error {
	if e.Type == coach.EventResult || e.Type == coach.EventError {
		e.Turn = t.turn
	}
	if t.log == nil {
		if t.gone {
			return nil
		}
		return t.clientErr(t.client.Emit(e))
	}
	line, err := ndjson.Append(t.line[:0], e)
	if err != nil {
		return err
	}
	t.line = line
	// The line goes to the client first; the log takes a copy, for its writer to find when
	// Flush wakes it.
	if !t.gone {
		if raw, ok := t.client.(*lineWriter); ok {
			err = t.clientErr(raw.write(line))
		} else {
			err = t.clientErr(t.client.Emit(e))
		}
	}
	t.log.add(line)
	return err
}

// Flush sends the client what is held, and only then wakes the log's writer: waking a goroutine
// can wake an idle CPU, and the client's lines must not wait for that, let alone for Redis.
func (t *turnSink) Flush() error {
	var err error
	if !t.gone {
		err = t.clientErr(t.client.Flush())
	}
	if t.log != nil {
		t.log.kick()
	}
	return err
}

func (t *turnSink) clientErr(err error) error {
	if err == nil || t.cancelOnError {
		return err
	}
	t.gone = true
	return nil
}
