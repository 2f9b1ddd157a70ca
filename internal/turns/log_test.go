package turns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// discard is a client that takes every line.
type discard struct{}

func (discard) Emit(coach.Event) error { return nil }
func (discard) Flush() error           { return nil }

// TestLogWritesPerBatch runs a scripted turn of 150 delta lines through a turn's sink, as the
// engine does (a flush after each line), and counts the log's writes: at most 2 + lines/10 (the
// first, which points at the turn and keeps its input, then a batch per 64 lines or 500 ms, and
// the last), whatever the pace. The first write sets the expiry, once, for the turn's life plus
// the resume TTL and keeps the input, the last marks the turn ended, those between carry lines
// only, and together they hold every line once, in order.
func TestLogWritesPerBatch(t *testing.T) {
	const lines, life, resume = 150, time.Minute, time.Hour
	tests := []struct {
		name  string
		apart time.Duration
	}{
		{"10 ms apart", 10 * time.Millisecond},
		{"at once", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &memLog{}
			nop := zerolog.Nop()
			msg := "Cities should ban cars."
			in := coach.TurnInput{Message: &msg}
			tr := New(Config{Log: log, ResumeTTL: resume}).Start(t.Context(), t.Context(), "s1", "t1")
			sink := tr.Sink(discard{}, life, &in, &nop)
			var want []byte
			for i := range lines {
				e := coach.Delta(fmt.Sprintf("w%03d ", i))
				line, _ := ndjson.Append(nil, e)
				want = append(want, line...)
				if err := sink.Emit(e); err != nil {
					t.Fatalf("Emit: %v", err)
				}
				if err := sink.Flush(); err != nil {
					t.Fatalf("Flush: %v", err)
				}
				time.Sleep(tt.apart)
			}
			<-tr.End()

			writes := log.taken()
			if max := 2 + lines/10; len(writes) > max {
				t.Errorf("%d writes for %d lines, want at most %d", len(writes), lines, max)
			}
			wantInput, _ := json.Marshal(in)
			var got []byte
			for i, w := range writes {
				wantState, wantTTL, wantIn := "", time.Duration(0), []byte(nil)
				// A turn over before the writer's first write has that one write alone.
				switch {
				case len(writes) == 1:
					wantState, wantTTL = Ended, resume
				case i == len(writes)-1:
					wantState = Ended
				case i == 0:
					wantState, wantTTL, wantIn = Running, life+resume, wantInput
				}
				if w.State != wantState || w.TTL != wantTTL || !bytes.Equal(w.Input, wantIn) {
					t.Errorf("write %d: state %q, TTL %v, input %s; want %q, %v, %s", i, w.State, w.TTL, w.Input, wantState, wantTTL, wantIn)
				}
				if n := int64(bytes.Count(got, []byte("\n"))); w.First != n {
					t.Errorf("write %d: from line %d, want %d", i, w.First, n)
				}
				got = append(got, w.Lines...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the writes hold %d bytes, want the turn's %d lines once, in order:\n%s", len(got), lines, got)
			}
		})
	}
}

// TestLogWritesALoneLine checks the age bound: a line of a followed turn that no other line
// follows reaches the log while the turn still runs, without waiting for more lines or for the
// turn's end.
func TestLogWritesALoneLine(t *testing.T) {
	log := &memLog{}
	nop := zerolog.Nop()
	ts := New(Config{Log: log, ResumeTTL: time.Minute})
	tr := ts.Start(t.Context(), t.Context(), "s1", "t1")
	sink := tr.Sink(discard{}, time.Minute, nil, &nop)
	defer tr.End()
	ts.Followed("s1", "t1")
	for len(log.taken()) == 0 { // the first write, which would take the line at once
		time.Sleep(time.Millisecond)
	}
	if err := sink.Emit(coach.Delta("alone")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(); err != nil {
		t.Fatal(err)
	}
	wantWritten(t, log, "alone")
}

// wantWritten waits up to 10 s for the log's last write to hold text, in a batch of the
// running turn.
func wantWritten(t *testing.T, log *memLog, text string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ws := log.taken(); len(ws) > 0 && bytes.Contains(ws[len(ws)-1].Lines, []byte(text)) {
			if ws[len(ws)-1].State != "" {
				t.Errorf("%q was written with state %q, want a batch of the running turn", text, ws[len(ws)-1].State)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q was not written within 10 s of its flush (writes %+v)", text, log.taken())
		}
	}
}

// TestLogWritesLinesOnceFollowed checks that a turn's lines between its first and last write,
// which only resumers read, cost nothing until a reader follows the turn: then those waiting
// are written at once, and the rest as they come. A reader of a turn that runs elsewhere
// announces it through the log.
func TestLogWritesLinesOnceFollowed(t *testing.T) {
	log := &memLog{}
	nop := zerolog.Nop()
	ts := New(Config{Log: log, ResumeTTL: time.Minute})
	tr := ts.Start(t.Context(), t.Context(), "s1", "t1")
	sink := tr.Sink(discard{}, time.Minute, nil, &nop)
	emit := func(text string) {
		if err := sink.Emit(coach.Delta(text)); err != nil {
			t.Fatal(err)
		}
		if err := sink.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for len(log.taken()) == 0 { // the first write, which would take the lines waiting
		time.Sleep(time.Millisecond)
	}
	for i := range 100 {
		emit(fmt.Sprintf("unread%02d ", i))
	}
	time.Sleep(2 * defaultBounds.age)
	if ws := log.taken(); len(ws) != 1 || len(ws[0].Lines) > 0 {
		t.Errorf("before a reader came: %d writes (%+v), want the first alone, without lines", len(ws), ws)
	}
	// A reader of another instance's turn announces it there; of this one's, here.
	f, err := ts.Follow("s2", "t9")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f2, err := ts.Follow("s1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	wantWritten(t, log, "unread99")
	emit("heard")
	wantWritten(t, log, "heard")
	<-tr.End()
	log.mu.Lock()
	follows := slices.Clone(log.follows)
	log.mu.Unlock()
	if !slices.Contains(follows, "t9") || slices.Contains(follows, "t1") {
		t.Errorf("turns announced through the log: %q, want t9 (elsewhere) and not t1 (here)", follows)
	}
}

// resumed returns the lines a resumer that asks for the lines after the first after gets from
// writes, numbering them by the writes' First as a reader of the log does.
func resumed(writes []Write, after int64) []string {
	var out []string
	for _, w := range writes {
		n := w.First
		for _, line := range strings.SplitAfter(string(w.Lines), "\n") {
			if line == "" {
				continue
			}
			n++
			if n > after {
				out = append(out, strings.TrimSuffix(line, "\n"))
			}
		}
	}
	return out
}

// TestLogBoundsWhatItKeeps writes turns longer than the log's bounds, in bytes and in entries,
// however the writer batches them, and checks what resumers get: the first lines that fit (whole
// lines), then a turn_log_truncated error line numbered after the turn's last line, so that a
// resumer gets it whatever lines it asks for, also one that asks for lines that were not kept,
// or for none at all.
func TestLogBoundsWhatItKeeps(t *testing.T) {
	const total = 10
	lineOf := func(i int) string { return fmt.Sprintf(`{"type":"delta","text":"line %02d"}`, i) }
	size := len(lineOf(1)) + 1
	truncated := func(lines ...int) func(int64) []string {
		return func(after int64) []string {
			var out []string
			for _, i := range lines {
				if int64(i) > after {
					out = append(out, lineOf(i))
				}
			}
			return out
		}
	}
	tests := []struct {
		name    string
		bounds  logBounds
		waitFor bool // let the writer take the first write and each line alone
		kept    func(after int64) []string
	}{
		{"bytes, batches by age", logBounds{lines: 100, age: 20 * time.Millisecond, bytes: 3*size + size/2, entries: 4096, roundTrip: 1 << 20}, false, truncated(1, 2, 3)},
		{"bytes, batches of 4", logBounds{lines: 4, age: 20 * time.Millisecond, bytes: 3*size + size/2, entries: 4096, roundTrip: 1 << 20}, false, truncated(1, 2, 3)},
		{"bytes, a batch a line", logBounds{lines: 1, age: 20 * time.Millisecond, bytes: 3*size + size/2, entries: 4096, roundTrip: 1 << 20}, true, truncated(1, 2, 3)},
		{"entries", logBounds{lines: 1, age: 20 * time.Millisecond, bytes: 1 << 20, entries: 4, roundTrip: 1 << 20}, true, truncated(1, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &memLog{}
			nop := zerolog.Nop()
			var followed atomic.Bool
			followed.Store(true)
			l := newLineLog(newWriter(log, tt.bounds), "s1", "t1", time.Hour, time.Minute, nil, &followed, &nop)
			taken := func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.lines == 0
			}
			for tt.waitFor && len(log.taken()) == 0 {
				time.Sleep(time.Millisecond)
			}
			for i := 1; i <= total; i++ {
				l.add([]byte(lineOf(i) + "\n"))
				l.kick()
				for tt.waitFor && !taken() {
					time.Sleep(time.Millisecond)
				}
			}
			l.close()
			<-l.done
			writes := log.taken()
			if len(writes) > tt.bounds.entries {
				t.Errorf("%d writes, want at most %d", len(writes), tt.bounds.entries)
			}
			var kept int
			for _, w := range writes[:len(writes)-1] {
				kept += len(w.Lines)
			}
			if kept > tt.bounds.bytes {
				t.Errorf("%d bytes of lines kept, want at most %d", kept, tt.bounds.bytes)
			}
			last := writes[len(writes)-1]
			if last.State != Ended || last.First != total {
				t.Errorf("the last write has state %q from line %d, want %q from line %d", last.State, last.First, Ended, total)
			}
			errLine := `{"type":"error","error":"turn_log_truncated","message":"the rest of this turn was too long to be kept for resume; the conversation shows it once stored","turn":"t1"}`
			for _, after := range []int64{0, 2, 5, total} {
				want := append(tt.kept(after), errLine)
				if got := resumed(writes, after); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("after %d: a resumer gets\n%s\nwant\n%s", after, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// TestWriterSharesRoundTrips runs 20 followed turns at once, each a line every 10 ms, through
// one instance's turns: their first writes go out at once, every line and end reach the log
// once, in order, and the lines of all the turns share round trips (an Append per 500 ms for
// all of them, plus the first and last writes), where a writer per turn made one per turn per
// batch.
func TestWriterSharesRoundTrips(t *testing.T) {
	const n, lines = 20, 60
	log := &memLog{}
	nop := zerolog.Nop()
	ts := New(Config{Log: log, ResumeTTL: time.Minute})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tr := ts.Start(t.Context(), t.Context(), fmt.Sprintf("s%02d", i), "t1")
			sink := tr.Sink(discard{}, time.Minute, nil, &nop)
			ts.Followed(fmt.Sprintf("s%02d", i), "t1")
			for j := range lines {
				_ = sink.Emit(coach.Delta(fmt.Sprintf("%02d-%02d ", i, j)))
				_ = sink.Flush()
				time.Sleep(10 * time.Millisecond)
			}
			<-tr.End()
		})
	}
	wg.Wait()
	got := map[string]string{}
	ended := map[string]int{}
	log.mu.Lock()
	appends := slices.Clone(log.appends)
	log.mu.Unlock()
	for _, es := range appends {
		for _, e := range es {
			if ended[e.Session] > 0 {
				t.Errorf("%s: a write after its last", e.Session)
			}
			got[e.Session] += string(e.Lines)
			if e.State == Ended {
				ended[e.Session]++
			}
		}
	}
	for i := range n {
		s := fmt.Sprintf("s%02d", i)
		var want string
		for j := range lines {
			line, _ := ndjson.Append(nil, coach.Delta(fmt.Sprintf("%02d-%02d ", i, j)))
			want += string(line)
		}
		if got[s] != want || ended[s] != 1 {
			t.Errorf("%s: the log holds %d bytes and %d ends, want its %d lines (%d bytes) once, in order, then one end", s, len(got[s]), ended[s], lines, len(want))
		}
	}
	// 20 turns of 600 ms or more: a writer per turn made 20 × (first + two or more batches +
	// last); shared, it is the first and last writes and an Append per tick, however many turns
	// there are.
	if max := 2*n + 8; len(appends) > max {
		t.Errorf("%d Appends for %d turns of %d lines, want at most %d", len(appends), n, lines, max)
	}
}

// slowLog is a Log whose Appends take a while, as a busy Redis's do, and which keeps the
// entries of each.
type slowLog struct {
	memLog
	delay time.Duration
}

func (l *slowLog) Append(ctx context.Context, es []Entry) []error {
	time.Sleep(l.delay)
	return l.memLog.Append(ctx, es)
}

// TestWriterFloodCannotHoldAFirstWrite attacks the shared writer from a learner's side: turns
// whose model pours out lines as fast as it can, through a slow Redis, must not hold up another
// learner's turn: its first write (which lets a resume find it) goes out in the round trip
// after the one in flight when it started, and no round trip carries more than its bound of
// other turns' lines.
func TestWriterFloodCannotHoldAFirstWrite(t *testing.T) {
	const line = `{"type":"delta","text":"` + "flood flood flood flood flood flood flood flood flood flood" + `"}` + "\n"
	bounds := logBounds{lines: 4, age: time.Hour, bytes: 1 << 30, entries: 1 << 20, roundTrip: 2 << 10}
	log := &slowLog{delay: 5 * time.Millisecond}
	w := newWriter(log, bounds)
	nop := zerolog.Nop()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var followed atomic.Bool // the flood is read, so that its batches are due as they fill
	followed.Store(true)
	for i := range 8 {
		l := newLineLog(w, fmt.Sprintf("flood%d", i), "t1", time.Hour, time.Minute, nil, &followed, &nop)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					l.close()
					return
				default:
				}
				l.add([]byte(line))
				l.kick()
				runtime.Gosched()
			}
		})
	}
	aliceNotHeld(t, w, log, bounds)
	close(stop)
	wg.Wait()
	roundTripsBounded(t, log, bounds)
}

// TestWriterFloodOfEndingTurnsCannotHoldAFirstWrite attacks the writer through the turns' ends,
// which make their last writes on their own goroutines: turns that end one after another, each
// with a full last batch, through a slow Redis, must not hold up another learner's first
// write beyond the round trip in flight either, nor carry more than the bound of lines.
func TestWriterFloodOfEndingTurnsCannotHoldAFirstWrite(t *testing.T) {
	const line = `{"type":"delta","text":"flood flood flood flood flood flood flood flood flood flood"}` + "\n"
	bounds := logBounds{lines: 4, age: time.Hour, bytes: 1 << 30, entries: 1 << 20, roundTrip: 2 << 10, held: 64 << 10}
	log := &slowLog{delay: 5 * time.Millisecond}
	w := newWriter(log, bounds)
	nop := zerolog.Nop()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				l := newLineLog(w, fmt.Sprintf("flood%d", i), fmt.Sprint("t", n), time.Hour, time.Minute, nil, new(atomic.Bool), &nop)
				for range 64 {
					l.add([]byte(line))
				}
				l.close()
				<-l.done
			}
		})
	}
	aliceNotHeld(t, w, log, bounds)
	close(stop)
	wg.Wait()
	roundTripsBounded(t, log, bounds)
}

// aliceNotHeld waits for a flood of w's round trips through log to be under way, starts
// alice's turn and checks that its first write goes out by the round trip after the one in
// flight when it started.
func aliceNotHeld(t *testing.T, w *writer, log *slowLog, bounds logBounds) {
	t.Helper()
	for len(appendsOf(&log.memLog)) < 10 { // the flood is under way
		time.Sleep(time.Millisecond)
	}
	nop := zerolog.Nop()
	before := len(appendsOf(&log.memLog))
	newLineLog(w, "alice", "t1", time.Hour, time.Minute, nil, new(atomic.Bool), &nop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		appends := appendsOf(&log.memLog)
		i := slices.IndexFunc(appends, func(es []Entry) bool {
			return slices.ContainsFunc(es, func(e Entry) bool { return e.Session == "alice" })
		})
		if i >= 0 {
			if i > before+1 {
				t.Errorf("alice's first write went out in round trip %d, want by %d (the one after the one in flight)", i, before+1)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's first write was not written within 10 s (%d round trips)", len(appends))
		}
		time.Sleep(time.Millisecond)
	}
}

// roundTripsBounded checks that no round trip through log carried more than bounds.roundTrip
// bytes of lines and one batch.
func roundTripsBounded(t *testing.T, log *slowLog, bounds logBounds) {
	t.Helper()
	for i, es := range appendsOf(&log.memLog) {
		var size, biggest int
		for _, e := range es {
			size += len(e.Lines)
			biggest = max(biggest, len(e.Lines))
		}
		if size > bounds.roundTrip+biggest {
			t.Errorf("round trip %d carries %d bytes of lines, want at most %d and one batch (%d)", i, size, bounds.roundTrip, biggest)
		}
	}
}

// appendsOf returns the entries of each Append to l so far.
func appendsOf(l *memLog) [][]Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.appends)
}

// dropLog is a Log that writes nowhere, for measuring what the writer itself costs.
type dropLog struct{ memLog }

func (*dropLog) Append(context.Context, []Entry) []error { return nil }

// BenchmarkLogTurn runs turns of 127 delta lines (a 150-chunk answer, as coachbench relays it)
// through a turn's sink and its log, one after another, and reports the bytes and allocations
// per turn that keeping the lines for resume adds: with the lines' buffers recycled from turn
// to turn, a turn's lines cost only their first, small buffer.
func BenchmarkLogTurn(b *testing.B) {
	turns := New(Config{Log: &dropLog{}, ResumeTTL: time.Minute})
	nop := zerolog.Nop()
	events := make([]coach.Event, 127)
	for i := range events {
		events[i] = coach.Delta(fmt.Sprintf("word %03d of the answer, ", i))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tr := turns.Start(b.Context(), b.Context(), "s1", fmt.Sprint("t", i))
		sink := tr.Sink(discard{}, time.Minute, nil, &nop)
		for _, e := range events {
			if err := sink.Emit(e); err != nil {
				b.Fatal(err)
			}
			if err := sink.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		<-tr.End()
	}
}

// TestLogBufferOfAFewLinesStaysSmall checks what recycling the lines' buffers must not cost: a
// stream held open with a few lines out keeps them in a small buffer of its own, not in one that
// a longer answer grew before it, whatever the pool holds.
func TestLogBufferOfAFewLinesStaysSmall(t *testing.T) {
	turns := New(Config{Log: &dropLog{}, ResumeTTL: time.Minute})
	nop := zerolog.Nop()
	run := func(id string, lines int) *Turn {
		tr := turns.Start(t.Context(), t.Context(), "s1", id)
		sink := tr.Sink(discard{}, time.Minute, nil, &nop)
		for i := range lines {
			if err := sink.Emit(coach.Delta(fmt.Sprintf("word %03d of the answer, ", i))); err != nil {
				t.Fatal(err)
			}
		}
		return tr
	}
	<-run("long", 500).End()
	held := run("held", 3)
	defer func() { <-held.End() }()
	held.log.mu.Lock()
	got := cap(held.log.buf)
	held.log.mu.Unlock()
	if got > firstLineBuf {
		t.Errorf("a turn of 3 lines holds a buffer of %d bytes, want at most %d", got, firstLineBuf)
	}
}

// gateLog is a Log whose Appends that carry an entry of session wait, while a gate is set
// (see gate), until the gate opens; every other Append goes through at once.
type gateLog struct {
	memLog
	session string

	gmu        sync.Mutex
	held, open chan struct{}
}

// gate holds the next Append of the log's session: held is closed once it is held, and closing
// open lets it go.
func (l *gateLog) gate() (held, open chan struct{}) {
	l.gmu.Lock()
	defer l.gmu.Unlock()
	l.held, l.open = make(chan struct{}), make(chan struct{})
	return l.held, l.open
}

func (l *gateLog) Append(ctx context.Context, es []Entry) []error {
	if slices.ContainsFunc(es, func(e Entry) bool { return e.Session == l.session }) {
		l.gmu.Lock()
		held, open := l.held, l.open
		l.held, l.open = nil, nil
		l.gmu.Unlock()
		if held != nil {
			close(held)
			<-open
		}
	}
	return l.memLog.Append(ctx, es)
}

// TestEndMakesTheLastWrite checks that a turn's last write is made by End on the turn's own
// goroutine, with every line and the end, when no other write is under way: the log is written
// out when End returns, and nothing had to wake the writer's goroutine for it.
func TestEndMakesTheLastWrite(t *testing.T) {
	log := &memLog{}
	nop := zerolog.Nop()
	ts := New(Config{Log: log, ResumeTTL: time.Minute})
	tr := ts.Start(t.Context(), t.Context(), "s1", "t1")
	sink := tr.Sink(discard{}, time.Minute, nil, &nop)
	for len(log.taken()) == 0 { // the first write, made by the writer's goroutine
		time.Sleep(time.Millisecond)
	}
	var want []byte
	for i := range 3 {
		e := coach.Delta(fmt.Sprintf("w%d ", i))
		line, _ := ndjson.Append(nil, e)
		want = append(want, line...)
		_ = sink.Emit(e)
		_ = sink.Flush()
	}
	select {
	case <-tr.End():
	default:
		t.Fatal("End returned before the turn's last write was made")
	}
	writes := log.taken()
	if len(writes) != 2 {
		t.Fatalf("%d writes, want 2 (the first and the last)", len(writes))
	}
	if last := writes[1]; last.State != Ended || last.First != 0 || !bytes.Equal(last.Lines, want) {
		t.Errorf("last write: state %q, from line %d, lines %q; want %q, 0, %q", last.State, last.First, last.Lines, Ended, want)
	}
}

// TestEndLeavesTheLastWriteToTheWriterWhileOneIsUnderWay checks End when the writer's goroutine
// is in a round trip (another turn's first write, held in a slow Redis): End does not wait for
// it, and the writer makes the turn's last write after it, in order. A followed turn's tick that
// comes while a turn's End makes a round trip is not lost either.
func TestEndLeavesTheLastWriteToTheWriterWhileOneIsUnderWay(t *testing.T) {
	t.Run("the writer's round trip", func(t *testing.T) {
		log := &gateLog{session: "slow"}
		held, open := log.gate()
		nop := zerolog.Nop()
		ts := New(Config{Log: log, ResumeTTL: time.Minute})
		tr := ts.Start(t.Context(), t.Context(), "s1", "t1")
		sink := tr.Sink(discard{}, time.Minute, nil, &nop)
		for len(log.taken()) == 0 {
			time.Sleep(time.Millisecond)
		}
		slow := ts.Start(t.Context(), t.Context(), "slow", "t1")
		slow.Sink(discard{}, time.Minute, nil, &nop)
		<-held // the writer's goroutine is in the slow turn's first write
		_ = sink.Emit(coach.Delta("last words"))
		_ = sink.Flush()
		done := tr.End() // must not wait for the slow round trip
		select {
		case <-done:
			t.Fatal("the last write was made while another round trip was under way")
		default:
		}
		close(open)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the writer did not make the last write after the round trip under way")
		}
		<-slow.End()
		writes := log.taken()
		if n := len(writes); n != 4 {
			t.Fatalf("%d writes, want 4 (two turns' first and last)", n)
		}
		if w := writes[2]; w.State != Ended || string(w.Lines) != `{"type":"delta","text":"last words"}`+"\n" {
			t.Errorf("third write: state %q, lines %q; want s1's last, after the slow turn's first", w.State, w.Lines)
		}
	})
	t.Run("a tick", func(t *testing.T) {
		log := &gateLog{session: "ending"}
		held, open := log.gate()
		nop := zerolog.Nop()
		ts := New(Config{Log: log, ResumeTTL: time.Minute})
		ts.writer.bounds.age = 20 * time.Millisecond
		read := ts.Start(t.Context(), t.Context(), "read", "t1")
		sink := read.Sink(discard{}, time.Minute, nil, &nop)
		defer read.End()
		ending := ts.Start(t.Context(), t.Context(), "ending", "t1")
		ending.Sink(discard{}, time.Minute, nil, &nop)
		<-held // the writer's goroutine is in the ending turn's first write
		ts.Followed("read", "t1")
		close(open)
		for len(log.taken()) < 2 {
			time.Sleep(time.Millisecond)
		}
		// The ending turn's last write holds the writer's round trips while ticks come.
		held, open = log.gate()
		ended := make(chan struct{})
		go func() { <-ending.End(); close(ended) }()
		<-held
		_ = sink.Emit(coach.Delta("read me"))
		_ = sink.Flush()
		time.Sleep(3 * ts.writer.bounds.age) // ticks that find the round trip under way
		close(open)
		<-ended
		wantWritten(t, &log.memLog, "read me")
	})
}
