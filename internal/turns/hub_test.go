package turns

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// fakeLog is a Log of one turn in memory whose Read blocks as Redis's XREAD does, and which
// counts the reads in flight at once.
type fakeLog struct {
	mu      sync.Mutex
	batches []Batch
	lines   int64
	changed chan struct{}
	// running is what Current says of the turn.
	running bool
	// reads are the Reads made, inFlight those not returned yet, maxInFlight the most at once.
	reads, inFlight, maxInFlight int
}

func newFakeLog() *fakeLog { return &fakeLog{changed: make(chan struct{}), running: true} }

// write appends a batch of n lines, the turn's last when end.
func (l *fakeLog) write(n int, end bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"n\":%d}\n", l.lines+int64(i)+1)
	}
	l.batches = append(l.batches, Batch{Cursor: strconv.Itoa(len(l.batches) + 1), First: l.lines, Lines: []byte(b.String()), End: end})
	l.lines += int64(n)
	if end {
		l.running = false
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *fakeLog) Append(_ context.Context, es []Entry) []error {
	errs := make([]error, len(es))
	for i := range errs {
		errs[i] = errors.New("fakeLog: the hub never appends")
	}
	return errs
}

func (l *fakeLog) Current(context.Context, string) (string, bool, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return "t1", l.running, "i1", nil
}

func (l *fakeLog) EndLost(context.Context, string, string, string, []byte, time.Duration) (bool, error) {
	return false, errors.New("fakeLog: the hub ends a lost turn through its lost function")
}

func (l *fakeLog) Read(ctx context.Context, _, _, cursor string, block time.Duration) ([]Batch, error) {
	n, _ := strconv.Atoi(cursor)
	timer := time.NewTimer(block)
	defer timer.Stop()
	l.mu.Lock()
	l.reads++
	l.inFlight++
	l.maxInFlight = max(l.maxInFlight, l.inFlight)
	defer func() {
		l.mu.Lock()
		l.inFlight--
		l.mu.Unlock()
	}()
	for {
		if len(l.batches) > n {
			out := append([]Batch(nil), l.batches[n:]...)
			l.mu.Unlock()
			return out, nil
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		l.mu.Lock()
	}
}

func (l *fakeLog) Stop(context.Context, string, string) error   { return nil }
func (l *fakeLog) Follow(context.Context, string, string) error { return nil }

func (l *fakeLog) stats() (reads, inFlight, maxInFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads, l.inFlight, l.maxInFlight
}

// newTestHub returns a hub of log whose reads block for block.
func newTestHub(log Log, maxPerTurn int, block time.Duration) *hub {
	return newHub(log, maxPerTurn, block, nil, func(context.Context, string, string) {})
}

// drain takes f's batches until none is left, and returns their lines and whether the last
// was the turn's end.
func drain(t *testing.T, f *Follower) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lines strings.Builder
	end := false
	for {
		b, ok := f.Next(ctx)
		if !ok {
			if ctx.Err() != nil {
				t.Errorf("the follower's batches did not end within 30s")
			}
			return lines.String(), end
		}
		lines.Write(b.Lines)
		end = b.End
	}
}

// wantLines are the lines of a turn of n lines as fakeLog writes them.
func wantLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"n\":%d}\n", i)
	}
	return b.String()
}

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 30s", what)
		}
	}
}

// waitRead waits until the reader of turn t1 of s1 has read n batches, or is gone.
func waitRead(t *testing.T, h *hub, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the reader read %d batches", n), func() bool {
		h.mu.Lock()
		r := h.readers[turnKey{"s1", "t1"}]
		h.mu.Unlock()
		if r == nil {
			return true
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.base+len(r.batches) >= n
	})
}

// TestHubFeedsFollowersFromOneReader checks that followers of one turn, however many and
// whenever they come (before the first batch, in the middle, after the last), get every batch
// from the turn's first while the log is read by one Read at a time.
func TestHubFeedsFollowersFromOneReader(t *testing.T) {
	tests := []struct {
		name string
		// early follow before the first batch, late after the batches before lateAt.
		early, late, lateAt int
	}{
		{"many from the start", 8, 0, 0},
		{"one early, some late", 1, 4, 3},
		{"late after the last batch", 1, 2, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newFakeLog()
			h := newTestHub(log, 16, time.Second)
			const batches, perBatch = 6, 3
			type result struct {
				lines string
				end   bool
			}
			results := make(chan result, tt.early+tt.late)
			var wg sync.WaitGroup
			start := func() {
				f, err := h.follow("s1", "t1")
				if err != nil {
					t.Fatalf("follow: %v", err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer f.Close()
					lines, end := drain(t, f)
					results <- result{lines, end}
				}()
			}
			for range tt.early {
				start()
			}
			for i := range batches {
				if i == tt.lateAt {
					for range tt.late {
						start()
					}
				}
				log.write(perBatch, i == batches-1)
				// Late followers come after the reader took the batch.
				waitRead(t, h, i+1)
			}
			if tt.lateAt >= batches {
				for range tt.late {
					start()
				}
			}
			wg.Wait()
			close(results)
			want := wantLines(batches * perBatch)
			for r := range results {
				if r.lines != want || !r.end {
					t.Errorf("a follower got %q (end %v), want %q (end true)", r.lines, r.end, want)
				}
			}
			if _, _, most := log.stats(); most != 1 {
				t.Errorf("%d reads of the log at once, want 1 for %d followers", most, tt.early+tt.late)
			}
		})
	}
}

// TestHubReaderStops checks that the turn's reader stops reading once the turn's last batch
// was read, and once its last follower left, however many followers it had.
func TestHubReaderStops(t *testing.T) {
	tests := []struct {
		name      string
		followers int
		end       bool
	}{
		{"after the last batch", 3, true},
		{"after the last follower left", 3, false},
		{"one follower left", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newFakeLog()
			h := newTestHub(log, 8, 50*time.Millisecond)
			var fs []*Follower
			for range tt.followers {
				f, err := h.follow("s1", "t1")
				if err != nil {
					t.Fatal(err)
				}
				fs = append(fs, f)
			}
			log.write(2, tt.end)
			waitRead(t, h, 1)
			if tt.end {
				for _, f := range fs {
					if _, end := drain(t, f); !end {
						t.Errorf("a follower's batches ended without the turn's last")
					}
				}
			} else {
				for _, f := range fs {
					f.Close()
				}
			}
			waitFor(t, "no read in flight", func() bool { _, n, _ := log.stats(); return n == 0 })
			time.Sleep(100 * time.Millisecond)
			before, _, _ := log.stats()
			// Reads block 50 ms: a reader still going would read several times meanwhile.
			time.Sleep(300 * time.Millisecond)
			if after, _, _ := log.stats(); after != before {
				t.Errorf("the log was read %d more times after the reader should have stopped", after-before)
			}
			for _, f := range fs {
				f.Close()
			}
			h.mu.Lock()
			n := len(h.readers)
			h.mu.Unlock()
			if n != 0 {
				t.Errorf("the hub keeps %d readers once every follower left, want 0", n)
			}
		})
	}
}

// TestHubDropsFollowerThatDoesNotRead attacks the reader from a learner's side: a client that
// stops reading must neither hold back the other followers nor keep more than its queue; it is
// dropped with ErrFellBehind.
func TestHubDropsFollowerThatDoesNotRead(t *testing.T) {
	log := newFakeLog()
	h := newTestHub(log, 8, time.Second)
	h.queue = 4
	stuck, err := h.follow("s1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	reading, err := h.follow("s1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer reading.Close()
	// The reading follower takes each batch as it comes; the stuck one never does.
	const batches = 20
	var got strings.Builder
	for i := range batches {
		log.write(1, i == batches-1)
		b, ok := reading.Next(context.Background())
		if !ok {
			t.Fatalf("the reading follower was ended at batch %d: %v", i+1, reading.Err())
		}
		got.Write(b.Lines)
	}
	if got.String() != wantLines(batches) {
		t.Errorf("the reading follower got %q, want %q", got.String(), wantLines(batches))
	}
	b, ok := stuck.Next(context.Background())
	if ok {
		t.Errorf("the follower that did not read got %+v, want to be dropped", b)
	}
	if err := stuck.Err(); !errors.Is(err, ErrFellBehind) {
		t.Errorf("the follower that did not read ended with %v, want %v", err, ErrFellBehind)
	}
}

// TestHubCapsReadersPerTurn checks the cap of followers of one turn: one more is refused with
// a 429 kind of error, a follower that leaves frees its place, and another turn's followers
// never count against it.
func TestHubCapsReadersPerTurn(t *testing.T) {
	log := newFakeLog()
	h := newTestHub(log, 3, time.Second)
	var fs []*Follower
	for i := range 3 {
		f, err := h.follow("s1", "t1")
		if err != nil {
			t.Fatalf("follower %d: got %v, want none", i+1, err)
		}
		fs = append(fs, f)
	}
	defer func() {
		for _, f := range fs {
			f.Close()
		}
	}()
	tests := []struct {
		name          string
		session, turn string
		leave         bool
		wantErr       error
	}{
		{"one more of the turn", "s1", "t1", false, ErrTooManyReaders},
		{"another session's turn", "s2", "t1", false, nil},
		{"once one left", "s1", "t1", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.leave {
				fs[0].Close()
				fs = fs[1:]
			}
			f, err := h.follow(tt.session, tt.turn)
			if f != nil {
				fs = append(fs, f)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("follow(%q, %q): got %v, want %v", tt.session, tt.turn, err, tt.wantErr)
			}
			if err != nil && coach.AsError(err).Kind != coach.KindLimited {
				t.Errorf("the refusal's kind is %v, want KindLimited (429)", coach.AsError(err).Kind)
			}
		})
	}
}

// TestHubEndsFollowersOfAGoneLog checks the reader's check when nothing comes: a turn that is
// no longer the session's running one, whose log has no last batch (its instance died, or the
// log expired), ends its followers rather than holding them to their deadline.
func TestHubEndsFollowersOfAGoneLog(t *testing.T) {
	log := newFakeLog()
	h := newTestHub(log, 8, 20*time.Millisecond)
	f, err := h.follow("s1", "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log.write(2, false)
	log.mu.Lock()
	log.running = false
	log.mu.Unlock()
	lines, end := drain(t, f)
	if lines != wantLines(2) || end {
		t.Errorf("the follower got %q (end %v), want %q and no end", lines, end, wantLines(2))
	}
	if err := f.Err(); err != nil {
		t.Errorf("the follower ended with %v, want nil", err)
	}
}

// TestHubEndsALostTurn checks the reader's check of a silent running turn: it asks whether the
// turn's instance died (hub.lost, with the instance the pointer names), and once the turn's log
// is ended as lost, every follower gets that last batch.
func TestHubEndsALostTurn(t *testing.T) {
	log := newFakeLog()
	var asked atomic.Int32
	h := newHub(log, 8, 20*time.Millisecond, func(_ context.Context, session, turn, instance string) (bool, error) {
		if session != "s1" || turn != "t1" || instance != "i1" {
			t.Errorf("lost(%q, %q, %q), want s1, t1, i1", session, turn, instance)
		}
		if asked.Add(1) == 3 {
			log.write(1, true)
			return true, nil
		}
		return false, nil
	}, func(context.Context, string, string) {})
	var fs []*Follower
	for range 2 {
		f, err := h.follow("s1", "t1")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fs = append(fs, f)
	}
	log.write(2, false)
	for i, f := range fs {
		lines, end := drain(t, f)
		if lines != wantLines(3) || !end {
			t.Errorf("follower %d got %q (end %v), want %q and the end", i, lines, end, wantLines(3))
		}
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("the reader asked %d times whether the turn was lost, want 3 (once per silent block until it was)", n)
	}
}

// TestHubReaderKeepsItsFirstFollower starts readers whose first read comes back at once (the
// log already holds a batch): a reader that found no follower when its first batch came would
// stop, and the follower that was about to join it would wait for a turn's end that no reader
// brings. Each reader starts with its first follower in place, so every follower gets the end.
func TestHubReaderKeepsItsFirstFollower(t *testing.T) {
	log := newFakeLog()
	log.write(1, false)
	h := newTestHub(log, 8, 20*time.Millisecond)
	var fs []*Follower
	for i := range 200 {
		f, err := h.follow("s1", "t"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fs = append(fs, f)
	}
	log.write(1, true)
	for i, f := range fs {
		if lines, end := drain(t, f); lines != wantLines(2) || !end {
			t.Fatalf("follower %d got %q (end %v), want %q and the end", i, lines, end, wantLines(2))
		}
	}
}
