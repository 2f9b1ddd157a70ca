package coach

import (
	"sync"
	"sync/atomic"
	"time"
)

// watchdog enforces an attempt's first-byte deadline and then, re-armed by every sign of life
// of the model, its idle deadline. It is paused while the engine writes to the client, so that
// a slow client is never taken for a stalled model; the deadline starts over when the write
// is done.
//
// Signs of life and writes come several times per relayed chunk, so alive, pause and resume
// only record the deadline and the writes in progress, with atomics and at most one read of
// the clock: resetting a runtime timer on each of them would be a visible share of the
// gateway's CPU. The one timer is re-armed lazily instead: when it fires before the recorded
// deadline, or during a write, it sets itself for what is left. It is never set past the
// deadline, so it fires when the deadline passes.
type watchdog struct {
	first, idle time.Duration
	started     atomic.Bool  // the model has sent something
	deadline    atomic.Int64 // the monotonic time (see monotonic) at which the deadline passes
	writes      atomic.Int32 // the writes to the client in progress

	// mu orders the timer's check against start and stop: the timer is only set while mu is
	// held, and the watchdog never fires once stop has returned.
	mu      sync.Mutex
	t       *time.Timer
	fire    func(started bool)
	stopped bool
}

// epoch is the origin of monotonic.
var epoch = time.Now()

// monotonic returns the time on the monotonic clock, in nanoseconds since epoch. Deadlines are
// kept in this form so that an atomic holds them.
func monotonic() int64 { return int64(time.Since(epoch)) }

// newWatchdog starts a watchdog that calls fire, with whether the model had started, when a
// deadline passes. fire runs while the watchdog is locked: it must not call the watchdog.
func newWatchdog(first, idle time.Duration, fire func(started bool)) *watchdog {
	w := &watchdog{first: first, idle: idle, fire: fire}
	w.deadline.Store(monotonic() + int64(first))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = time.AfterFunc(first, w.check)
	return w
}

// check runs when the timer fires: it fires the watchdog if the recorded deadline has passed
// with no write in progress, and otherwise sets the timer again.
func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	// writes is read before deadline: resume records the new deadline before it ends the
	// write, so a check that sees no write in progress also sees the deadline the write left.
	if w.writes.Load() > 0 {
		// The deadline starts over when the write is done, so it passes no sooner than a full
		// period from now. A write that began as the timer fired has the benefit of the doubt.
		w.t.Reset(w.period())
		return
	}
	if left := w.deadline.Load() - monotonic(); left > 0 {
		w.t.Reset(time.Duration(left))
		return
	}
	w.fire(w.started.Load())
}

// period returns the length of the current deadline: the idle deadline once the model has
// started, the first-byte deadline before.
func (w *watchdog) period() time.Duration {
	if w.started.Load() {
		return w.idle
	}
	return w.first
}

// alive records a sign of life of the model and re-arms the idle deadline.
func (w *watchdog) alive() {
	if !w.started.Load() {
		w.start()
		return
	}
	w.deadline.Store(monotonic() + int64(w.idle))
}

// start records the model's first sign of life. The timer is set again here, once per
// attempt, because it must never be set past the deadline, and the idle deadline may end
// before the first-byte deadline it was set for; every later deadline ends no sooner than one
// the timer was set for.
func (w *watchdog) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started.Store(true)
	w.deadline.Store(monotonic() + int64(w.idle))
	if !w.stopped {
		w.t.Reset(w.idle)
	}
}

// pause stops the clock while the engine writes to the client. Writes are counted rather than
// flagged, so that the clock stays stopped until the last of overlapping writes is done.
func (w *watchdog) pause() {
	w.writes.Add(1)
}

// resume starts the current deadline over once the write is done. After stop it has no effect,
// since the timer no longer checks the deadline.
func (w *watchdog) resume() {
	w.deadline.Store(monotonic() + int64(w.period()))
	w.writes.Add(-1)
}

// stop stops the watchdog for good.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}

// pausing returns send with the watchdog paused while it runs.
func (w *watchdog) pausing(send func(Event)) func(Event) {
	return func(e Event) {
		w.pause()
		defer w.resume()
		send(e)
	}
}

// pausingFlush returns flush with the watchdog paused while it runs.
func (w *watchdog) pausingFlush(flush func()) func() {
	return func() {
		w.pause()
		defer w.resume()
		flush()
	}
}
