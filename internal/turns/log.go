package turns

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
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
	// Append writes entries, each one batch of the log of its turn (see Write), in one round
	// trip (one per node of a cluster), those of one session in their order. It returns nil
	// when every entry was written, else the error of each entry (nil for those written). It
	// must not keep the entries' Lines once it returns: the writer reuses their buffers.
	Append(ctx context.Context, entries []Entry) []error
	// Current returns the session's current turn: its id, whether it still runs and the
	// instance that runs or ran it ("" when unknown); id is "" when the session has none (or it
	// expired).
	Current(ctx context.Context, session string) (id string, running bool, instance string, err error)
	// Read returns the batches of turn's log after cursor ("" from the start), waiting up to
	// block for one when there is none yet; none and a nil error when block passed.
	Read(ctx context.Context, session, turn, cursor string, block time.Duration) ([]Batch, error)
	// Stop asks every instance to stop turn of session.
	Stop(ctx context.Context, session, turn string) error
	// Follow tells every instance that a reader follows turn of session, so that the one that
	// runs it writes its lines as they come (see Turns.Followed).
	Follow(ctx context.Context, session, turn string) error
	// EndLost ends turn of session, whose instance died, for every reader: if the session's
	// pointer still names turn as running on instance, it appends line, one encoded NDJSON
	// line, as the log's last batch (numbered after the lines already logged) and marks the
	// pointer Ended, both to expire ttl later, all at once. It reports whether it did: of any
	// number of calls, on any instances, one does.
	EndLost(ctx context.Context, session, turn, instance string, line []byte, ttl time.Duration) (bool, error)
}

// Write is one batch written to a turn's log. A turn's first write carries State Running (and
// the learner's Input), its last State Ended, and those between only lines: the first sets the
// expiry of the log, the pointer and the input once for the turn's whole life, so that a write
// between them is a bare append. The last marks the pointer ended only while it still names
// the turn: a session's next turn may have written its first batch before the last batch of
// the turn before it.
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

// Entry is one Write to the log of turn Turn of session Session.
type Entry struct {
	Session, Turn string
	Write
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

// logBounds are when the log's writer appends, and how much of a turn it keeps.
type logBounds struct {
	// lines waiting in one turn make its batch due at once; otherwise the writer takes every
	// turn's waiting lines every age. The client never waits for the
	// log: only a resumer sees its lag, at most age (plus the round trip) behind the live
	// stream.
	lines int64
	age   time.Duration
	// bytes and entries bound what the log keeps of a turn (the first bytes of lines, in at
	// most entries batches); the rest is not kept, and the last batch then says so with an
	// error line (see truncatedLine).
	bytes   int
	entries int
	// roundTrip bounds the bytes of lines one Append carries, so that a turn's first write
	// never waits behind more than one such round trip, however many lines other turns have
	// waiting.
	roundTrip int
	// held bounds the bytes of lines a turn that nobody follows keeps waiting; they are
	// written once that many wait.
	held int
}

// defaultBounds write a followed turn's lines every 500 ms. Each round trip of the log costs
// the gateway about as much CPU as relaying a few dozen chunks (go-redis, the syscalls, a
// goroutine's wake-up; on an idle machine several times that), so the lines of every followed
// turn of the instance share one round trip per 500 ms, a turn nobody follows keeps its lines
// until its end (or 64 KiB of them), and a turn pays for two round trips of its own, its first
// and last writes, which it shares with the turns that start or end with it. A fast model
// fills a batch of 64 lines first. 1 MiB holds any answer within the default COACH_MAX_OUTPUT_BYTES
// (256 KiB) as delta lines, whose JSON adds some 30 bytes a line and at most six bytes for a
// byte of text (\u00XX escapes); an answer of many resets or retried attempts can exceed it.
// 4096 batches are more than a turn writes in its longest life at one batch per 500 ms.
var defaultBounds = logBounds{lines: 64, age: 500 * time.Millisecond, bytes: 1 << 20, entries: 4096, roundTrip: 1 << 20, held: 64 << 10}

// writer writes the logs of all the turns of one instance, from one goroutine that runs while
// any turn keeps a log (see run): a turn's first write (which points the session at it), its last and a
// full batch at once, and every bounds.age the lines that every followed turn has waiting, each
// time in one Append (one pipelined round trip per Redis node) with whatever else is due. While
// it runs, a turn's own goroutine only appends to its buffer, so that no line waits for Redis;
// once the turn's client has its last line, the turn's goroutine makes the last write itself
// when no round trip is under way (see end), and it then makes whatever else is due too.
//
// Lines between the first and the last write are for resumers alone, so a turn's are written
// as they come only once a reader follows it (Turns.Followed, which every instance's reader
// announces through Log.Follow when it starts, and again whenever its read waits in vain):
// then its waiting lines go out at once and every bounds.age after. Until then they wait in
// the turn's buffer, up to bounds.held bytes, and a turn costs the log its first and last
// writes alone.
//
// One writer for every tenant is one queue, so no turn's lines may hold up another's writes: a
// round trip carries every first write that is due, then other batches up to bounds.roundTrip
// bytes, and the next round trip, at once, carries what did not fit. Work that is due at once
// (first and last writes, full batches) is queued, so that it costs the writer nothing per
// other turn; only a tick looks at every turn.
type writer struct {
	store  Log
	bounds logBounds

	mu      sync.Mutex
	logs    []*lineLog // every turn's, in the order the turns started
	due     []*lineLog // turns with a write due at once
	running bool       // run is running
	// busy is set while a goroutine, run's or that of a turn making its last write (see end),
	// makes the writer's round trips; missed, while run was woken in vain meanwhile.
	busy, missed bool
	wake         chan struct{}
}

func newWriter(store Log, bounds logBounds) *writer {
	return &writer{store: store, bounds: bounds, wake: make(chan struct{}, 1)}
}

// start adds l, whose first write is due, and starts the writer's goroutine if it is not
// running.
func (w *writer) start(l *lineLog) {
	w.mu.Lock()
	w.logs = append(w.logs, l)
	w.due = append(w.due, l)
	if !w.running {
		w.running = true
		go w.run()
	}
	w.mu.Unlock()
	w.kick()
}

// owe queues l for the next round trip and wakes the writer.
func (w *writer) owe(l *lineLog) {
	w.mu.Lock()
	w.due = append(w.due, l)
	w.mu.Unlock()
	w.kick()
}

func (w *writer) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// end queues l's last write and makes it on the calling goroutine, the turn's, unless a round
// trip is under way (then the writer's goroutine makes it after that one). The turn's client has
// its last line by then, and the turn's goroutine is still running: a round trip made from it
// costs a fraction of waking the writer's goroutine and, on a quiet instance, the CPU it sleeps
// on, for a round trip that starts when the process is about to go idle.
func (w *writer) end(l *lineLog) {
	w.mu.Lock()
	w.due = append(w.due, l)
	if w.busy {
		w.mu.Unlock()
		w.kick()
		return
	}
	w.busy = true
	w.mu.Unlock()
	w.write(false)
	w.mu.Lock()
	w.busy = false
	again := w.missed || len(w.due) > 0
	w.missed = false
	w.mu.Unlock()
	if again {
		w.kick()
	}
}

// run writes until one of its writes leaves no turn that keeps a log. When a turn's End made
// the last of them, run stays parked until the next turn's first write wakes it, which spares
// that turn a goroutine's start. It ticks only while a turn is followed: a turn nobody follows
// has nothing to write between its first and its last write, and a tick wakes a CPU.
func (w *writer) run() {
	t := time.NewTimer(w.bounds.age)
	t.Stop()
	var tick <-chan time.Time
	// ticked holds a tick that found a turn's last write under way, for the wake-up end sends.
	ticked := false
	for {
		select {
		case <-w.wake:
		case <-tick:
			ticked, tick = true, nil
		}
		w.mu.Lock()
		if w.busy {
			w.missed = true
			w.mu.Unlock()
			continue
		}
		w.busy = true
		w.mu.Unlock()
		followed := w.write(ticked)
		ticked = false
		w.mu.Lock()
		w.busy = false
		if len(w.logs) == 0 {
			// Whatever is still queued belongs to logs that are over.
			w.due, w.running = nil, false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if followed && tick == nil {
			t.Reset(w.bounds.age)
			tick = t.C
		}
	}
}

// part is one turn's entries in a round trip.
type part struct {
	log      *lineLog
	from, to int    // its entries
	batch    []byte // the buffer its lines came in
	last     bool   // it ends the turn's log
}

// write writes what is due, in as many round trips as it takes: the queued turns' first and
// last writes and full batches and, when ticked, every followed turn's waiting lines. It
// reports whether any turn that keeps a log is followed. Its caller holds busy.
func (w *writer) write(ticked bool) (followed bool) {
	var queued, all []*lineLog
	if ticked {
		w.mu.Lock()
		all = slices.Clone(w.logs)
		w.mu.Unlock()
	}
	for {
		// Each round trip takes what was queued since the last, first writes above all.
		w.mu.Lock()
		queued = append(queued, w.due...)
		w.due = nil
		w.mu.Unlock()
		var (
			entries []Entry
			parts   []part
			size    int
			left    []*lineLog
		)
		add := func(l *lineLog, always bool) {
			if l.pass || l.over {
				return
			}
			room := len(parts) == 0 || size < w.bounds.roundTrip
			if !room && l.started {
				left = append(left, l)
				return
			}
			// A first write that finds no room goes out without its lines, which follow in
			// the next round trip.
			batch, n, ended, ok := l.take(always, ticked, room)
			if !ok {
				return
			}
			if !room {
				left = append(left, l)
			}
			l.pass = true
			size += len(batch)
			es := l.writes(batch, n, ended)
			parts = append(parts, part{log: l, from: len(entries), to: len(entries) + len(es), batch: batch, last: ended})
			entries = append(entries, es...)
		}
		// First writes go first, whatever else is due.
		for _, l := range queued {
			if !l.started {
				add(l, true)
			}
		}
		for _, l := range queued {
			add(l, l.owed)
		}
		for _, l := range all {
			add(l, false)
		}
		if len(entries) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs := w.store.Append(ctx, entries)
			cancel()
			for _, p := range parts {
				var err error
				for _, e := range errs[min(p.from, len(errs)):min(p.to, len(errs))] {
					err = cmp.Or(err, e)
				}
				p.log.wrote(entries[p.from:p.to], p.batch, p.last, err)
			}
		}
		for _, p := range parts {
			p.log.pass, p.log.owed, p.log.over = false, false, p.last
		}
		w.mu.Lock()
		if ended := slices.ContainsFunc(parts, func(p part) bool { return p.last }); ended {
			w.logs = slices.DeleteFunc(w.logs, func(l *lineLog) bool { return l.over })
		}
		w.mu.Unlock()
		for _, p := range parts {
			if p.last {
				close(p.log.done)
			}
		}
		if len(left) == 0 {
			break
		}
		// What did not fit is due at once, whatever made it due.
		for _, l := range left {
			l.owed = true
		}
		queued, all = left, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.logs, func(l *lineLog) bool { return l.followed.Load() })
}

// lineBufs recycles the buffers turns keep their waiting lines in, from one turn to the next.
// A turn's lines outgrow its first, small buffer as its answer goes on (to some 10 KiB for a
// 150-chunk answer); grown afresh for every turn, by doubling, they would be the largest
// allocation a turn makes, about twice that. A turn takes a recycled buffer only once its lines
// outgrow the small one, so that a stream held open with a few lines out holds a few KiB, not a
// buffer some longer answer grew.
var lineBufs sync.Pool

// Bounds of the buffers lineBufs keeps: firstLineBuf is a turn's first buffer, too small to be
// worth keeping; maxLineBuf is what a turn nobody follows keeps waiting (defaultBounds.held). A
// longer answer's buffer is left to the collector, so that one learner's long answers do not
// pin their memory in every instance's pool.
const (
	firstLineBuf = 1 << 10
	maxLineBuf   = 64 << 10
)

// grow returns buf with room for n more bytes: a small buffer of its own while they fit in
// one, else a recycled buffer when one has the room. The small one also serves a turn whose
// buffer the writer has just taken, before it gives the turn its spare.
func grow(buf []byte, n int) []byte {
	if len(buf)+n <= firstLineBuf {
		return append(make([]byte, 0, firstLineBuf), buf...)
	}
	if p, ok := lineBufs.Get().(*[]byte); ok {
		if b := *p; cap(b) >= len(buf)+n {
			b = append(b[:0], buf...)
			recycle(buf)
			return b
		}
		lineBufs.Put(p)
	}
	return slices.Grow(buf, n)
}

// recycle gives b to lineBufs; nothing may use it after.
func recycle(b []byte) {
	if cap(b) > firstLineBuf && cap(b) <= maxLineBuf {
		lineBufs.Put(&b)
	}
}

// lineLog is one turn's tee into the instance's writer. The turn only appends to a buffer
// under a mutex; the writer takes the buffer when a batch is due.
type lineLog struct {
	w             *writer
	session, turn string
	// live is how long the log is kept while the turn runs, ttl after its end.
	live, ttl time.Duration
	input     *coach.TurnInput
	log       *zerolog.Logger

	mu    sync.Mutex
	buf   []byte
	lines int64 // lines in buf
	ended bool
	spare []byte // an empty buffer for the next batch

	// What the writer has done: whether it took the first write, the lines it took, bytes of
	// lines kept, entries, whether it stopped keeping lines (see keep), whether an append
	// failed, whether the log is over (its last batch written), and, within one of its round
	// trips, whether it took this log's batch (pass) or owes it one (owed). Only the goroutine
	// that holds the writer's busy uses them.
	started, over, pass, owed bool
	sent                      int64
	kept, entries             int
	truncated, failed         bool

	// full is set when buf fills a batch (see due); kick sends it.
	full atomic.Bool
	// followed is set once a reader follows the turn (see Turns.Followed); it is the turn's.
	followed *atomic.Bool
	done     chan struct{}
}

// newLineLog starts turn's log on w; its first write, made at once, writes the session's
// current-turn pointer, so that a resume finds the turn before its first line, and keeps in, the
// learner's input, when not nil. It encodes in off the turn's path.
func newLineLog(w *writer, session, turn string, live, ttl time.Duration, in *coach.TurnInput, followed *atomic.Bool, log *zerolog.Logger) *lineLog {
	l := &lineLog{
		w: w, session: session, turn: turn, live: live, ttl: ttl, input: in, log: log,
		buf: make([]byte, 0, firstLineBuf), followed: followed, done: make(chan struct{}),
	}
	w.start(l)
	return l
}

// add appends line, one encoded NDJSON line. It does not wake the writer: the turn does that
// with kick once the line is on its way to the client.
func (l *lineLog) add(line []byte) {
	l.mu.Lock()
	if len(l.buf)+len(line) > cap(l.buf) {
		l.buf = grow(l.buf, len(line))
	}
	l.buf = append(l.buf, line...)
	l.lines++
	b := l.w.bounds
	if (l.lines == b.lines && l.followed.Load()) || (len(l.buf) >= b.held && len(l.buf)-len(line) < b.held) {
		l.full.Store(true)
	}
	l.mu.Unlock()
}

// follow makes the writer write the turn's lines as they come, starting with those waiting.
func (l *lineLog) follow() {
	l.mu.Lock()
	waiting := l.lines > 0
	l.mu.Unlock()
	if waiting {
		l.w.owe(l)
	}
}

// kick queues the turn's batch for the writer when a line added since the last kick filled it;
// other lines wake nobody.
func (l *lineLog) kick() {
	if l.full.Swap(false) {
		l.w.owe(l)
	}
}

// close marks the turn's end: what is left goes out as the last batch at once, from the
// calling goroutine when it can (see writer.end), so that the pointer says the turn ended as
// soon as its client has its last line; done is closed then.
func (l *lineLog) close() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.w.end(l)
}

// take returns the turn's waiting lines, n of them, and whether it ended, if there is anything
// to write: always (for a first write or a batch the writer owes), at a tick (ticked) when
// the turn is followed, when the lines fill a batch, or when the turn ended. Without lines it
// takes nothing but the turn's first write.
func (l *lineLog) take(always, ticked, lines bool) (batch []byte, n int64, ended, ok bool) {
	if !lines {
		return nil, 0, false, !l.started
	}
	followed := l.followed.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.w.bounds
	due := always || l.ended || (followed && (ticked || l.lines >= b.lines)) || len(l.buf) >= b.held
	switch {
	case !due:
		return nil, 0, false, false
	case l.started && l.lines == 0 && !l.ended:
		return nil, 0, false, false
	}
	if l.lines == 0 {
		// Nothing waits (a first or last write without lines): the turn keeps its buffer.
		return nil, 0, l.ended, true
	}
	batch, n, ended = l.buf, l.lines, l.ended
	l.buf, l.lines, l.spare = l.spare, 0, nil
	return batch, n, ended, true
}

// writes returns the writes of batch, n lines: the turn's first write (pointer and input)
// before any other, its last after every other, and, when the log stopped keeping lines, the
// lines that fit and an error line that says so.
func (l *lineLog) writes(batch []byte, n int64, ended bool) []Entry {
	w := Write{First: l.sent, Lines: l.keep(batch, ended)}
	switch {
	case !l.started && ended:
		// A turn over before its first write keeps its log the resume TTL.
		w.State, w.TTL = Ended, l.ttl
	case ended:
		w.State = Ended
	case !l.started:
		w.State, w.TTL, w.Input = Running, l.live, l.encodeInput()
	}
	l.started = true
	out := make([]Entry, 0, 2)
	if ended && l.truncated {
		if len(w.Lines) > 0 {
			out = append(out, Entry{Session: l.session, Turn: l.turn, Write: Write{First: l.sent, Lines: w.Lines}})
		}
		w.First, w.Lines = l.sent+n, l.truncatedLine()
	}
	if len(w.Lines) > 0 || w.State != "" {
		out = append(out, Entry{Session: l.session, Turn: l.turn, Write: w})
	}
	l.sent += n
	return out
}

// wrote records that the writer wrote es, the turn's entries from batch, with err, the first
// error among them; last says they were the turn's last. The batch's buffer, written, serves
// the turn's next batch, or, after its last, another turn's.
func (l *lineLog) wrote(es []Entry, batch []byte, last bool, err error) {
	for _, e := range es {
		l.kept += len(e.Lines)
		l.entries++
	}
	l.mu.Lock()
	switch {
	case last:
		recycle(l.buf)
		recycle(l.spare)
		recycle(batch)
		l.buf, l.spare = nil, nil
	case l.spare == nil && cap(batch) <= maxLineBuf:
		l.spare = batch[:0]
	default:
		recycle(batch)
	}
	l.mu.Unlock()
	if err != nil && !l.failed {
		// A resume will miss lines; the turn itself goes on.
		l.failed = true
		l.log.Warn().Err(err).Str("session", l.session).Str("turn", l.turn).Msg("a turn's lines could not be kept for resume")
	}
}

// keep returns what the log's bounds let it keep of batch, the turn's next lines: all of it, or
// the whole lines that fit, after which the log keeps no more lines (truncated). Every batch
// before the last leaves room for the last one's entry.
func (l *lineLog) keep(batch []byte, ended bool) []byte {
	if l.truncated {
		return nil
	}
	b := l.w.bounds
	room := b.bytes - l.kept
	if l.entries+2 > b.entries && (!ended || len(batch) > room) {
		room = 0
	}
	if len(batch) <= room {
		return batch
	}
	l.truncated = true
	return batch[:bytes.LastIndexByte(batch[:max(room, 0)], '\n')+1]
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
