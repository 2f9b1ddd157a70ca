package coach

import (
	"sync"
	"time"
)

// watchdog enforces an attempt's first-byte deadline and then, re-armed by every sign of life
// of the model, its idle deadline. It is paused while the engine writes to the client, so that
// a slow client is never taken for a stalled model; the deadline starts over when the write
// is done.
type watchdog struct {
	mu          sync.Mutex
	t           *time.Timer
	first, idle time.Duration
	started     bool // the model has sent something
	paused      bool // a write to the client is in progress, or the watchdog is stopped
	stopped     bool
}

// newWatchdog starts a watchdog that calls fire, with whether the model had started, when a
// deadline passes.
func newWatchdog(first, idle time.Duration, fire func(started bool)) *watchdog {
	w := &watchdog{first: first, idle: idle}
	w.t = time.AfterFunc(first, func() {
		w.mu.Lock()
		started, paused := w.started, w.paused
		w.mu.Unlock()
		if !paused { // a write that began as the timer fired has the benefit of the doubt
			fire(started)
		}
	})
	return w
}

// alive records a sign of life of the model and re-arms the idle deadline.
func (w *watchdog) alive() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	if !w.paused {
		w.t.Reset(w.idle)
	}
}

// pause stops the clock while the engine writes to the client.
func (w *watchdog) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused = true
	w.t.Stop()
}

// resume starts the current deadline over once the write is done, unless the watchdog stopped.
func (w *watchdog) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.paused = false
	if w.started {
		w.t.Reset(w.idle)
	} else {
		w.t.Reset(w.first)
	}
}

// stop stops the watchdog for good.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped, w.paused = true, true
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
