package turns

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// Log keeps the lines of running and recent turns where every instance can read them, and
// carries stops between instances (resumable turns). internal/redisstore implements it with
// Redis Streams and pub/sub.
type Log interface {
	// Append writes w, one batch of the log of turn of session (see Write).
	Append(ctx context.Context, session, turn string, w Write) error
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

// Write is one batch written to a turn's log. A turn's first write carries State Running (and
// the learner's Input), its last State Ended, and those between only lines: the first sets the
// expiry of the log, the pointer and the input once for the turn's whole life, the last
// shortens it to the resume TTL, so that a write between them is a bare append.
type Write struct {
	// First is the number of the turn's lines before Lines.
	First int64
	// Lines are NDJSON lines, each ending in '\n'; possibly none.
	Lines []byte
	// State, when not empty, is written to the session's current-turn pointer with the batch:
	// Running with the turn's first write, Ended with its last.
	State string
	// TTL, when not zero, sets the expiry of the log and of the pointer: the first write sets it
	// once, to the turn's whole remaining life plus the resume TTL, so that no later write
	// pays for an expiry. A turn's log thus lives at most its longest life plus the resume TTL
	// from its start, whenever the turn ends.
	TTL time.Duration
	// Input, with the first write, is the turn's learner input as JSON, kept as long as the
	// log for a conversation restored while the turn runs (see Inputs).
	Input []byte
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

// logBounds are when a turn's log writer appends, and how much of a turn it keeps.
type logBounds struct {
	// lines waiting make a batch at once; a line that waited age makes one with whatever
	// waits with it. The client never waits for the log: only a resumer sees its lag, at most
	// age (plus the round trip) behind the live stream.
	lines int64
	age   time.Duration
	// bytes and entries bound what the log keeps of a turn (the first bytes of lines, in at
	// most entries batches); the rest is not kept, and the last batch then says so with an
	// error line (see truncatedLine).
	bytes   int
	entries int
}

// defaultBounds make a turn of a 10 ms-per-line model cost a batch per 500 ms (50 lines), two
// round trips for 150 lines besides its first and last batch: each round trip of the log costs
// the gateway about as much CPU as relaying a few dozen chunks (go-redis, the syscalls, a
// goroutine's wake-up), so a batch is as large as a resumer's lag allows. A faster model fills
// a batch of 64 lines first. 1 MiB holds any answer within
// the default COACH_MAX_OUTPUT_BYTES (256 KiB) as delta lines, whose JSON adds some 30 bytes
// a line and at most six bytes for a byte of text (\u00XX escapes); an answer of many resets
// or retried attempts can exceed it. 4096 batches are more than a turn writes in its longest
// life at one batch per 500 ms.
var defaultBounds = logBounds{lines: 64, age: 500 * time.Millisecond, bytes: 1 << 20, entries: 4096}

// lineLog is one turn's tee into its Log. The turn only appends to a buffer under a mutex;
// a goroutine of its own writes the buffer out, one Append in flight at a time, so the turn
// never waits for Redis.
type lineLog struct {
	store         Log
	session, turn string
	// live is how long the log is kept while the turn runs, ttl after its end.
	live, ttl time.Duration
	input     *coach.TurnInput
	bounds    logBounds
	log       *zerolog.Logger

	mu     sync.Mutex
	buf    []byte
	lines  int64     // lines in buf
	oldest time.Time // when the first line in buf came
	ended  bool

	// What the writer has written: bytes of lines, entries, whether it stopped keeping lines
	// (see keep), and whether an append failed. Only the writer's goroutine uses them.
	kept, entries     int
	truncated, failed bool

	// due is set when a line makes the writer's next step due: the first line of a batch
	// (which starts its age) or its bounds.lines-th. kick sends it.
	due       atomic.Bool
	wake, end chan struct{}
	done      chan struct{}
}

// newLineLog starts the writer of turn's log; its first append, made at once, writes the
// session's current-turn pointer, so that a resume finds the turn before its first line, and
// keeps in, the learner's input, when not nil. It encodes in off the turn's path.
func newLineLog(store Log, session, turn string, live, ttl time.Duration, in *coach.TurnInput, bounds logBounds, log *zerolog.Logger) *lineLog {
	l := &lineLog{
		store: store, session: session, turn: turn, live: live, ttl: ttl, input: in, bounds: bounds, log: log,
		buf: make([]byte, 0, 1024), wake: make(chan struct{}, 1), end: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// add appends line, one encoded NDJSON line. It does not wake the writer: the turn does that
// with kick once the line is on its way to the client.
func (l *lineLog) add(line []byte) {
	l.mu.Lock()
	if l.lines == 0 {
		l.oldest = time.Now()
	}
	l.buf = append(l.buf, line...)
	l.lines++
	if l.lines == 1 || l.lines == l.bounds.lines {
		l.due.Store(true)
	}
	l.mu.Unlock()
}

// kick wakes the writer when a line added since the last kick made its next step due; other
// lines wake nobody.
func (l *lineLog) kick() {
	if !l.due.Swap(false) {
		return
	}
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
	var sent int64 // the turn's lines taken so far
	spare := make([]byte, 0, 1024)
	for first := true; ; first = false {
		l.mu.Lock()
		batch, n, ended := l.buf, l.lines, l.ended
		l.buf, l.lines = spare[:0], 0
		l.mu.Unlock()
		w := Write{First: sent, Lines: l.keep(batch, ended)}
		switch {
		case first && ended:
			// A turn over before its first write keeps its log the resume TTL.
			w.State, w.TTL = Ended, l.ttl
		case ended:
			w.State = Ended
		case first:
			w.State, w.TTL, w.Input = Running, l.live, l.encodeInput()
		}
		if ended && l.truncated {
			if len(w.Lines) > 0 {
				l.put(Write{First: sent, Lines: w.Lines})
			}
			w.First, w.Lines = sent+n, l.truncatedLine()
		}
		if len(w.Lines) > 0 || w.State != "" {
			l.put(w)
		}
		sent += n
		spare = batch
		if ended {
			return
		}
		l.wait()
	}
}

// keep returns what the log's bounds let it keep of batch, the turn's next lines: all of it, or
// the whole lines that fit, after which the log keeps no more lines (truncated). Every batch
// before the last leaves room for the last one's entry.
func (l *lineLog) keep(batch []byte, ended bool) []byte {
	if l.truncated {
		return nil
	}
	room := l.bounds.bytes - l.kept
	if l.entries+2 > l.bounds.entries && (!ended || len(batch) > room) {
		room = 0
	}
	if len(batch) <= room {
		return batch
	}
	l.truncated = true
	return batch[:bytes.LastIndexByte(batch[:max(room, 0)], '\n')+1]
}

// put appends w to the store.
func (l *lineLog) put(w Write) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := l.store.Append(ctx, l.session, l.turn, w)
	cancel()
	if err != nil && !l.failed {
		// A resume will miss lines; the turn itself goes on.
		l.failed = true
		l.log.Warn().Err(err).Str("session", l.session).Str("turn", l.turn).Msg("a turn's lines could not be kept for resume")
	}
	l.kept += len(w.Lines)
	l.entries++
}

// wait returns when the next batch is due: bounds.lines lines wait, the oldest of them has
// waited bounds.age, or the turn ended.
func (l *lineLog) wait() {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		l.mu.Lock()
		n, oldest := l.lines, l.oldest
		l.mu.Unlock()
		if n == 0 {
			// Nothing waits (a wake may be left from lines the last batch took).
			select {
			case <-l.wake:
				continue
			case <-l.end:
				return
			}
		}
		if n >= l.bounds.lines {
			return
		}
		left := l.bounds.age - time.Since(oldest)
		if left <= 0 {
			return
		}
		if t == nil {
			t = time.NewTimer(left)
		} else {
			t.Reset(left)
		}
		select {
		case <-t.C:
			return
		case <-l.wake:
		case <-l.end:
			return
		}
	}
}

// encodeInput returns the learner input as the engine encodes the learner's transcript entry,
// so the pending message and the stored one have the same parts; nil when there is none.
func (l *lineLog) encodeInput() []byte {
	if l.input == nil {
		return nil
	}
	b, err := json.Marshal(l.input)
	if err != nil {
		return nil
	}
	return b
}

// truncatedLine is the last line of a log that could not keep all of its turn's lines: a
// resumer gets the lines that were kept, then this error, numbered after the turn's last line
// so that every resumer gets it, whatever lines it asked for.
func (l *lineLog) truncatedLine() []byte {
	line, _ := ndjson.Append(nil, coach.Event{
		Type: coach.EventError, Code: coach.CodeTurnLogTruncated, Turn: l.turn,
		Message: "the rest of this turn was too long to be kept for resume; the conversation shows it once stored",
	})
	return line
}
