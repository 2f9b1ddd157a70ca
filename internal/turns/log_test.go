package turns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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

// TestLogWritesALoneLine checks the age bound: a line that no other follows reaches the log
// while the turn still runs, without waiting for more lines or for the turn's end.
func TestLogWritesALoneLine(t *testing.T) {
	log := &memLog{}
	nop := zerolog.Nop()
	tr := New(Config{Log: log, ResumeTTL: time.Minute}).Start(t.Context(), t.Context(), "s1", "t1")
	sink := tr.Sink(discard{}, time.Minute, nil, &nop)
	defer tr.End()
	for len(log.taken()) == 0 { // the first write, which would take the line at once
		time.Sleep(time.Millisecond)
	}
	if err := sink.Emit(coach.Delta("alone")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ws := log.taken(); len(ws) > 0 && bytes.Contains(ws[len(ws)-1].Lines, []byte("alone")) {
			if ws[len(ws)-1].State != "" {
				t.Errorf("the line was written with state %q, want a batch of the running turn", ws[len(ws)-1].State)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lone line was not written within 10 s of its flush (writes %+v)", log.taken())
		}
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
		{"bytes, all in the last batch", logBounds{lines: 100, age: time.Hour, bytes: 3*size + size/2, entries: 4096}, false, truncated(1, 2, 3)},
		{"bytes, batches of 4", logBounds{lines: 4, age: time.Hour, bytes: 3*size + size/2, entries: 4096}, false, truncated(1, 2, 3)},
		{"bytes, a batch a line", logBounds{lines: 1, age: time.Hour, bytes: 3*size + size/2, entries: 4096}, true, truncated(1, 2, 3)},
		{"entries", logBounds{lines: 1, age: time.Hour, bytes: 1 << 20, entries: 4}, true, truncated(1, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &memLog{}
			nop := zerolog.Nop()
			l := newLineLog(log, "s1", "t1", time.Hour, time.Minute, nil, tt.bounds, &nop)
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
