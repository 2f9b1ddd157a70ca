// Package breaker owns the circuit breakers of the model endpoints: one circuit per endpoint,
// closed while it works, open for a cooldown after a run of consecutive failed attempts, then
// half-open for one probe that closes it again or reopens it. It implements coach.Breaker.
//
// The open state is shared by every gateway instance through a Shared store (Redis, see
// redisstore.Store.OpenCircuit): an instance that opens a circuit writes it there with the
// cooldown as its expiry, and every instance reads the open circuits in the background (Run),
// so a fleet stops sending to a dead endpoint together. Nothing remote is ever on a turn's path:
// Allow and Report work on memory alone, the write happens in a goroutine of its own, and a
// store that does not answer only costs the sharing (a warning is logged), never a turn.
//
// Consecutive failures are counted per instance; only the open state is shared. The probe is
// per instance too: when the cooldown ends every instance lets one attempt through, and the
// first one that fails opens the circuit again for all.
package breaker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// State is a circuit's state.
type State string

// States.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half-open"
)

// Shared keeps the open circuits of every instance.
type Shared interface {
	// OpenCircuit records that the circuit of name is open for cooldown.
	OpenCircuit(ctx context.Context, name string, cooldown time.Duration) error
	// OpenCircuits returns, for each of names whose circuit is open, how long it stays open.
	OpenCircuits(ctx context.Context, names []string) (map[string]time.Duration, error)
}

// Options configure a Breaker. Failures and Cooldown are required.
type Options struct {
	// Failures is how many consecutive failed attempts open a circuit.
	Failures int
	// Cooldown is how long an open circuit lets nothing through before its probe.
	Cooldown time.Duration
	// Shared, when set, shares open circuits with other instances.
	Shared Shared
	// Warn is told when Shared fails; nil ignores it. It is called once per run of failures.
	Warn func(err error, msg string)
	// OnTransition, when set, is told every state change.
	OnTransition func(name string, to State)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Breaker is a set of circuits, one per endpoint name. It is safe for concurrent use.
type Breaker struct {
	opts  Options
	names []string

	mu       sync.Mutex
	circuits map[string]*circuit
	// sharedDown is set while Shared fails, so that a run of failures warns once.
	sharedDown bool
	// publishing counts writes to Shared in flight, for Wait.
	publishing sync.WaitGroup
}

type circuit struct {
	state    State
	failures int
	// until is when an open circuit turns half-open.
	until time.Time
	// probing is set while a half-open circuit's probe is out.
	probing bool
}

var _ coach.Breaker = (*Breaker)(nil)

// New returns a Breaker with a closed circuit for each of names.
func New(names []string, opts Options) *Breaker {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Breaker{opts: opts, names: slices.Clone(names), circuits: make(map[string]*circuit, len(names))}
	for _, n := range names {
		b.circuits[n] = &circuit{state: Closed}
	}
	return b
}

// Allow reports whether an attempt may go to name now: always while its circuit is closed,
// never while it is open, and once at a time while it is half-open (the probe). An open circuit
// whose cooldown has passed turns half-open here. Unknown names are always allowed.
func (b *Breaker) Allow(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.circuits[name]
	if !ok {
		return true
	}
	if c.state == Open && !b.opts.Now().Before(c.until) {
		b.set(name, c, HalfOpen)
	}
	switch c.state {
	case Closed:
		return true
	case HalfOpen:
		if c.probing {
			return false
		}
		c.probing = true
		return true
	default:
		return false
	}
}

// Report records how an attempt on name ended. A healthy attempt closes the circuit and resets
// its count; a failed one counts, and opens the circuit at Options.Failures in a row or when it
// was the probe. Attempts that were already out when the circuit opened change nothing.
func (b *Breaker) Report(name string, v coach.Verdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.circuits[name]
	if !ok || c.state == Open {
		return
	}
	if c.state == HalfOpen {
		c.probing = false
	}
	switch v {
	case coach.Healthy:
		c.failures = 0
		if c.state == HalfOpen {
			b.set(name, c, Closed)
		}
	case coach.Failed:
		c.failures++
		if c.state == HalfOpen || c.failures >= b.opts.Failures {
			b.open(name, c, b.opts.Cooldown)
			b.publish(name)
		}
	}
}

// open opens c for d; b.mu is held.
func (b *Breaker) open(name string, c *circuit, d time.Duration) {
	c.until = b.opts.Now().Add(d)
	c.failures, c.probing = 0, false
	b.set(name, c, Open)
}

// set moves c to state, telling OnTransition; b.mu is held.
func (b *Breaker) set(name string, c *circuit, s State) {
	if c.state == s {
		return
	}
	c.state = s
	if b.opts.OnTransition != nil {
		b.opts.OnTransition(name, s)
	}
}

// publish writes name's open circuit to Shared in the background; b.mu is held.
func (b *Breaker) publish(name string) {
	if b.opts.Shared == nil {
		return
	}
	b.publishing.Add(1)
	go func() {
		defer b.publishing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b.shared(b.opts.Shared.OpenCircuit(ctx, name, b.opts.Cooldown), "could not share an open circuit; other instances find out on their own")
	}()
}

// Wait waits for the writes to Shared in flight.
func (b *Breaker) Wait() { b.publishing.Wait() }

// shared notes the outcome of a call to Shared, warning on the first failure of a run.
func (b *Breaker) shared(err error, msg string) {
	b.mu.Lock()
	first := err != nil && !b.sharedDown
	b.sharedDown = err != nil
	b.mu.Unlock()
	if first && b.opts.Warn != nil {
		b.opts.Warn(err, msg)
	}
}

// Sync reads the circuits other instances opened and opens them here too, until the shared
// expiry. It returns Shared's error, having changed nothing, when the store does not answer.
func (b *Breaker) Sync(ctx context.Context) error {
	if b.opts.Shared == nil {
		return nil
	}
	open, err := b.opts.Shared.OpenCircuits(ctx, b.names)
	b.shared(err, "could not read the circuits other instances opened; going on with this instance's own")
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.opts.Now()
	for name, left := range open {
		c, ok := b.circuits[name]
		if !ok || left <= 0 {
			continue
		}
		if c.state != Open {
			b.open(name, c, left)
		} else if until := now.Add(left); until.After(c.until) {
			c.until = until
		}
	}
	return nil
}

// Run calls Sync every interval until ctx is done.
func (b *Breaker) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sctx, cancel := context.WithTimeout(ctx, interval)
			_ = b.Sync(sctx) // Sync has warned
			cancel()
		}
	}
}

// Circuit is one circuit's name and state, as /readyz shows it.
type Circuit struct {
	Name  string `json:"name"`
	State State  `json:"state"`
}

// States returns every circuit's state, in the order of the names given to New. An open circuit
// whose cooldown has passed shows as half-open: its next attempt is the probe.
func (b *Breaker) States() []Circuit {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.opts.Now()
	out := make([]Circuit, len(b.names))
	for i, n := range b.names {
		c := b.circuits[n]
		s := c.state
		if s == Open && !now.Before(c.until) {
			s = HalfOpen
		}
		out[i] = Circuit{Name: n, State: s}
	}
	return out
}
