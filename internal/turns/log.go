package turns

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Log keeps the lines of running and recent turns where every instance can read them, and
// carries stops between instances (resumable turns). internal/redisstore implements it with
// Redis Streams and pub/sub.
type Log interface {
	// Append adds one batch of lines (NDJSON, each ending in '\n'; possibly none) to the log of
	// turn of session. first is the number of lines written before the batch. state, when not
	// empty, is written to the session's current-turn pointer with the batch: Running with the
	// first batch, Ended with the last. The log and the pointer expire ttl after the batch (the
	// caller passes the turn's whole remaining life while it runs).
	Append(ctx context.Context, session, turn string, first int64, lines []byte, state string, ttl time.Duration) error
	// Current returns the session's current turn: its id, whether it still runs and the
	// instance that runs or ran it ("" when unknown); id is "" when the session has none (or it
	// expired).
	Current(ctx context.Context, session string) (id string, running bool, instance string, err error)
	// Read returns the batches of turn's log after cursor ("" from the start), waiting up to
	// block for one when there is none yet; none and a nil error when block passed.
	Read(ctx context.Context, session, turn, cursor string, block time.Duration) ([]Batch, error)
	// Stop asks every instance to stop turn of session.
	Stop(ctx context.Context, session, turn string) error
	// EndLost ends turn of session, whose instance died, for every reader: if the session's
	// pointer still names turn as running on instance, it appends line, one encoded NDJSON
	// line, as the log's last batch (numbered after the lines already logged) and marks the
	// pointer Ended, both to expire ttl later, all at once. It reports whether it did: of any
	// number of calls, on any instances, one does.
	EndLost(ctx context.Context, session, turn, instance string, line []byte, ttl time.Duration) (bool, error)
}

// Batch is one batch of a turn's log.
type Batch struct {
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
	Running = "running"
	Ended   = "ended"
)

// logInterval is the least time between two appends of one turn's log: a batch takes every line
// written meanwhile, so a turn costs a round trip per interval, not one per delta, and its
// first and last lines still go out at once.
const logInterval = 100 * time.Millisecond

// lineLog is one turn's tee into its Log. The turn only appends to a buffer under a mutex;
// a goroutine of its own writes the buffer out, one Append in flight at a time, so the turn
// never waits for Redis.
type lineLog struct {
	store         Log
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
func newLineLog(store Log, session, turn string, live, ttl time.Duration, log *zerolog.Logger) *lineLog {
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
	state := Running
	failed := false
	for {
		l.mu.Lock()
		batch, n, ended := l.buf, l.lines, l.ended
		l.buf, l.lines = spare[:0], 0
		l.mu.Unlock()
		ttl := l.live
		if ended {
			state, ttl = Ended, l.ttl
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
