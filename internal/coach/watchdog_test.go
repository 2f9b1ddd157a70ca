package coach

import (
	"testing"
	"time"
)

// firing is the record of a watchdog's fire: whether the model had started, and when.
type firing struct {
	started bool
	at      time.Time
}

// watched starts a watchdog whose fires land in the returned channel.
func watched(t *testing.T, first, idle time.Duration) (*watchdog, chan firing) {
	fires := make(chan firing, 1)
	w := newWatchdog(first, idle, func(started bool) {
		select {
		case fires <- firing{started, time.Now()}:
		default:
			t.Error("the watchdog fired twice")
		}
	})
	t.Cleanup(w.stop)
	return w, fires
}

// fireAfter waits for w's fire and checks that it came no sooner than d after since.
func fireAfter(t *testing.T, fires chan firing, since time.Time, d time.Duration, started bool) {
	t.Helper()
	select {
	case f := <-fires:
		if f.started != started {
			t.Errorf("fired with started %v, want %v", f.started, started)
		}
		if took := f.at.Sub(since); took < d {
			t.Errorf("fired %v after the deadline began, before the deadline of %v", took, d)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no fire 5 s after a deadline of %v began", d)
	}
}

// noFire checks that w does not fire within d.
func noFire(t *testing.T, fires chan firing, d time.Duration, while string) {
	t.Helper()
	select {
	case f := <-fires:
		t.Fatalf("fired (started %v) %s", f.started, while)
	case <-time.After(d):
	}
}

// TestWatchdogFirstByte checks that a model that sends nothing is given up on after the
// first-byte deadline, and a watchdog stopped during a write never fires.
func TestWatchdogFirstByte(t *testing.T) {
	const first = 30 * time.Millisecond
	start := time.Now()
	_, fires := watched(t, first, time.Minute)
	fireAfter(t, fires, start, first, false)

	w, fires := watched(t, first, first)
	w.pause()
	w.stop()
	w.resume()
	noFire(t, fires, 10*first, "after stop")
}

// TestWatchdogAliveRearms calls alive for many idle deadlines past the first-byte deadline:
// the timer, set for the first-byte deadline, must find each time that the deadline moved,
// and fire only an idle deadline after the last sign of life.
func TestWatchdogAliveRearms(t *testing.T) {
	const idle = 50 * time.Millisecond
	last := time.Now()
	w, fires := watched(t, idle, idle)
	var gap time.Duration // the longest time between signs of life, which a loaded machine may stretch
	for end := last.Add(10 * idle); ; {
		now := time.Now()
		if now.After(end) {
			break
		}
		gap, last = max(gap, now.Sub(last)), now
		w.alive()
		time.Sleep(time.Millisecond)
	}
	select {
	case f := <-fires:
		if gap < idle {
			t.Fatalf("fired (started %v) while alive was called at least every %v", f.started, gap)
		}
		t.Skipf("the test went %v without calling alive, longer than the idle deadline", gap)
	default:
	}
	fireAfter(t, fires, last, idle, true)
}

// TestWatchdogPausedLongerThanIdle pauses the watchdog for many idle deadlines, with writes
// that overlap: it must not fire until an idle deadline after the last write ends.
func TestWatchdogPausedLongerThanIdle(t *testing.T) {
	const idle = 30 * time.Millisecond
	w, fires := watched(t, time.Minute, idle)
	w.pause()
	w.alive() // the model started during the write: the deadline after it is the idle one
	noFire(t, fires, 10*idle, "during a write")
	w.pause()
	w.resume()
	noFire(t, fires, 10*idle, "while one of two overlapping writes is still in progress")
	start := time.Now()
	w.resume()
	fireAfter(t, fires, start, idle, true)
}

// BenchmarkWatchdogPerChunk measures what the watchdog costs per relayed model chunk: two signs
// of life (the fragment and the arrival of its bytes) and a send and a flush, each paused.
func BenchmarkWatchdogPerChunk(b *testing.B) {
	w := newWatchdog(time.Minute, time.Minute, func(bool) {})
	defer w.stop()
	send := w.pausing(func(Event) {})
	flush := w.pausingFlush(func() {})
	for b.Loop() {
		w.alive()
		w.alive()
		send(Event{})
		flush()
	}
}
