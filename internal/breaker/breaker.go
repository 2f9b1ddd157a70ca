// Package breaker owns the circuit breakers of the model endpoints: one circuit per endpoint,
// closed while it works, open for a cooldown once too many of the turns that went to it failed,
// then half-open for one probe that closes it again or reopens it. It implements coach.Breaker.
//
// A circuit opens on a failure rate over a sliding window of time, as resilience4j's time-based
// window does: the turns of the last Options.Window are counted in buckets, and a failed turn
// opens the circuit when at least Options.Failures turns of the window failed and they are at
// least Options.FailureRate of the turns the window counts. A sample is one turn's visit to the
// endpoint, however many attempts it made there (coach.Breaker), and only the endpoint's own
// faults count as failures: the engine says which (coach.Verdict).
//
// A breaker never makes service worse than having none. When every circuit refuses, Panic names
// the endpoint whose circuit opened first, and the turn tries it anyway, as Envoy's load balancer
// ignores health below its panic threshold rather than send nothing: with one endpoint, a
// learner's turn reaches it as soon as it answers again, and the first such answer closes the
// circuit.
//
// The open state is shared by every gateway instance through a Shared store (Redis, see
// redisstore.Store.OpenCircuit): an instance that opens a circuit writes it there with the
// cooldown as its expiry, and every instance reads the open circuits in the background (Run),
// so a fleet stops sending to a dead endpoint together. A circuit is keyed there by the
// endpoint's identity (Identity: its name, base URL and model), so that two deployments, or an
// edited configuration, on one Redis never inherit each other's circuits. Nothing remote is ever
// on a turn's path: Allow, Report and Panic work on memory alone, the write happens in a
// goroutine of its own, and a store that does not answer only costs the sharing (a warning is
// logged), never a turn.
//
// The windows are per instance; only the open state is shared. The probe is per instance too:
// when the cooldown ends every instance lets one turn through, and the first one that fails
// opens the circuit again for all.
package breaker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// Shared keeps the open circuits of every instance, by endpoint identity.
type Shared interface {
	// OpenCircuit records that the circuit of id is open for cooldown.
	OpenCircuit(ctx context.Context, id string, cooldown time.Duration) error
	// OpenCircuits returns, for each of ids whose circuit is open, how long it stays open.
	OpenCircuits(ctx context.Context, ids []string) (map[string]time.Duration, error)
}

// Endpoint is a circuit's endpoint: Name is what the engine, logs and metrics call it, ID what
// Shared keys its circuit by (see Identity).
type Endpoint struct {
	Name string
	ID   string
}

// Identity returns the key of the circuit of the endpoint name at baseURL asked for model: a
// short hash of the three, so that a circuit is never inherited by another endpoint that takes
// the same name (another deployment on the same Redis, or the same name pointed elsewhere).
// The API key is left out: it is a secret, and a new key does not make a new endpoint.
func Identity(name, baseURL, model string) string {
	h := sha256.Sum256([]byte(name + "\x00" + baseURL + "\x00" + model))
	return hex.EncodeToString(h[:8])
}

// Options configure a Breaker. Failures, FailureRate, Window and Cooldown are required.
type Options struct {
	// Failures is the least number of failed turns in the window before a circuit may open.
	Failures int
	// FailureRate is the share of the window's turns (0 < FailureRate ≤ 1) that must have failed
	// for a circuit to open.
	FailureRate float64
	// Window is how far back the turns counted go.
	Window time.Duration
	// Cooldown is how long an open circuit lets nothing through before its probe.
	Cooldown time.Duration
	// Shared, when set, shares open circuits with other instances.
	Shared Shared
	// Warn is told when Shared fails; nil ignores it. It is called once per run of failures.
	Warn func(err error, msg string)
	// OnTransition, when set, is told every state change.
	OnTransition func(name string, to State)
	// OnPanic, when set, is told every turn that Panic sends to an endpoint whose circuit
	// refuses.
	OnPanic func(name string)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Breaker is a set of circuits, one per endpoint. It is safe for concurrent use.
type Breaker struct {
	opts  Options
	names []string
	ids   []string
	// byID maps an identity to its endpoint's name.
	byID map[string]string

	mu       sync.Mutex
	circuits map[string]*circuit
	// sharedDown is set while Shared fails, so that a run of failures warns once.
	sharedDown bool
	// publishing counts writes to Shared in flight, for Wait.
	publishing sync.WaitGroup
}

type circuit struct {
	state State
	win   window
	// until is when an open circuit turns half-open.
	until time.Time
	// probing is set while a half-open circuit's probe is out.
	probing bool
	// closed is when the circuit last closed after being open: an opening another instance
	// shared before then is older news than the answer that closed it, and Sync skips it.
	closed time.Time
}

var _ coach.Breaker = (*Breaker)(nil)

// New returns a Breaker with a closed circuit for each of endpoints.
func New(endpoints []Endpoint, opts Options) *Breaker {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Breaker{opts: opts, byID: make(map[string]string, len(endpoints)), circuits: make(map[string]*circuit, len(endpoints))}
	for _, e := range endpoints {
		b.names = append(b.names, e.Name)
		b.ids = append(b.ids, e.ID)
		b.byID[e.ID] = e.Name
		b.circuits[e.Name] = &circuit{state: Closed, win: window{width: bucketWidth(opts.Window)}}
	}
	return b
}

// Allow reports whether a turn may go to name now: always while its circuit is closed, never
// while it is open, and one turn at a time while it is half-open (the probe). An open circuit
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

// Panic returns the endpoint a turn tries when Allow refused every one: the one whose circuit
// opened first (the soonest to turn half-open), or "" when no circuit refuses. Its visit is
// reported with panicked set.
func (b *Breaker) Panic() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	name := ""
	var first time.Time
	for _, n := range b.names {
		c := b.circuits[n]
		if c.state == Closed {
			continue
		}
		if name == "" || c.until.Before(first) {
			name, first = n, c.until
		}
	}
	if name != "" && b.opts.OnPanic != nil {
		b.opts.OnPanic(name)
	}
	return name
}

// Report records how a turn's visit to name ended. On a closed circuit a healthy or failed visit
// is counted in the window, and a failure opens the circuit when the window's failures reach
// both Options.Failures and Options.FailureRate. The half-open probe closes the circuit or opens
// it again. A visit Panic sent (panicked) that found the endpoint healthy closes its circuit;
// one that failed changes nothing, the circuit being open already. Visits that were already out
// when the circuit opened change nothing.
func (b *Breaker) Report(name string, v coach.Verdict, panicked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.circuits[name]
	if !ok {
		return
	}
	if panicked && c.state != Closed {
		if v == coach.Healthy {
			b.close(name, c)
		}
		return
	}
	switch c.state {
	case Open:
	case HalfOpen:
		c.probing = false
		switch v {
		case coach.Healthy:
			b.close(name, c)
		case coach.Failed:
			b.open(name, c, b.opts.Cooldown)
			b.publish(name)
		}
	case Closed:
		if v == coach.Inconclusive {
			return
		}
		calls, failures := c.win.add(b.opts.Now(), v == coach.Failed)
		if v == coach.Failed && failures >= b.opts.Failures && float64(failures) >= b.opts.FailureRate*float64(calls) {
			b.open(name, c, b.opts.Cooldown)
			b.publish(name)
		}
	}
}

// open opens c for d; b.mu is held.
func (b *Breaker) open(name string, c *circuit, d time.Duration) {
	c.until = b.opts.Now().Add(d)
	c.probing = false
	c.win.reset()
	b.set(name, c, Open)
}

// close closes c with an empty window; b.mu is held.
func (b *Breaker) close(name string, c *circuit) {
	c.probing = false
	c.closed = b.opts.Now()
	c.win.reset()
	b.set(name, c, Closed)
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
	id := b.ids[slices.Index(b.names, name)]
	b.publishing.Add(1)
	go func() {
		defer b.publishing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b.shared(b.opts.Shared.OpenCircuit(ctx, id, b.opts.Cooldown), "could not share an open circuit; other instances find out on their own")
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
// expiry, unless this instance has seen the endpoint answer since they were opened. It returns
// Shared's error, having changed nothing, when the store does not answer.
func (b *Breaker) Sync(ctx context.Context) error {
	if b.opts.Shared == nil {
		return nil
	}
	open, err := b.opts.Shared.OpenCircuits(ctx, b.ids)
	b.shared(err, "could not read the circuits other instances opened; going on with this instance's own")
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.opts.Now()
	for id, left := range open {
		name, ok := b.byID[id]
		if !ok || left <= 0 {
			continue
		}
		c := b.circuits[name]
		if opened := now.Add(left - b.opts.Cooldown); !opened.After(c.closed) {
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

// Circuit is one circuit's name and state, as /readyz and /metrics show it.
type Circuit struct {
	Name  string `json:"name"`
	State State  `json:"state"`
}

// States returns every circuit's state, in the order of the endpoints given to New. An open
// circuit whose cooldown has passed shows as half-open: its next turn is the probe.
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

// windowBuckets is how many buckets a window is counted in: the window slides by a tenth of
// its length, and a turn leaves it between 90 % and 100 % of Window after it was counted.
const windowBuckets = 10

func bucketWidth(window time.Duration) time.Duration {
	return max(window/windowBuckets, time.Millisecond)
}

// window counts a circuit's healthy and failed turns of the last windowBuckets buckets.
type window struct {
	width   time.Duration
	buckets [windowBuckets]bucket
}

type bucket struct {
	// epoch numbers the bucket's span of time (the Unix time divided by the width); a slot
	// holding an older epoch is stale and counts nothing.
	epoch           int64
	calls, failures int
}

// add counts a turn at now and returns the window's turns and failures with it.
func (w *window) add(now time.Time, failed bool) (calls, failures int) {
	epoch := now.UnixNano() / int64(w.width)
	slot := &w.buckets[epoch%windowBuckets]
	if slot.epoch != epoch {
		*slot = bucket{epoch: epoch}
	}
	slot.calls++
	if failed {
		slot.failures++
	}
	for _, bk := range w.buckets {
		if bk.epoch > epoch-windowBuckets && bk.epoch <= epoch {
			calls += bk.calls
			failures += bk.failures
		}
	}
	return calls, failures
}

// reset empties the window.
func (w *window) reset() { w.buckets = [windowBuckets]bucket{} }
