// Package turns runs the engine's turns as units of their own, beside the engine's other
// ports: a turn outlives the client that asked for it, its lines are teed into a Log that every
// instance reads (resume), and the turns running on this instance are registered so that a stop,
// asked here or delivered from another instance, finds the turn to cancel, and counted per
// tenant so that no tenant runs more of them at once than its cap (see Admit). A turn whose
// instance dies cannot end itself: the first reader, or stop, that finds its instance dead
// (Instances) ends its log for it (Lost).
//
// It sits next to package coach and imports it, rather than living inside it: coach runs one
// turn against its store and model and knows nothing of instances, logs or clients that come
// and go, while this package gives a coach.TurnRun its context and its Sink. Adapters
// (internal/httpapi) and stores (internal/redisstore) depend on it and on coach, never on each
// other.
package turns

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// Config is what Turns needs.
type Config struct {
	// Log keeps turns' lines for resume and carries stops between instances; ResumeTTL is how
	// long after its end a turn can be resumed (0 keeps no lines: no resume, and a stop
	// reaches only the turns of this instance).
	Log       Log
	ResumeTTL time.Duration
	// CancelOnDisconnect (COACH_TURN_ON_DISCONNECT=cancel) ends a turn when its client goes
	// away; otherwise the turn runs to its end.
	CancelOnDisconnect bool
	// MaxPerTenant (COACH_MAX_TURNS_PER_TENANT) bounds the turns each tenant runs at once on
	// this instance, detached ones included (see Admit); 0 sets no bound.
	MaxPerTenant int
	// MaxPerLearner (COACH_MAX_TURNS_PER_LEARNER) bounds the turns each learner reference of a
	// tenant runs at once on this instance, within the tenant's (see Admission.Learner); 0 sets
	// no bound.
	MaxPerLearner int
	// Refused, when set, hears of every turn Admit or Admission.Learner refuses, with its tenant.
	Refused func(tenant string)
	// Instances tells which instances are alive, so that a turn whose instance died is found
	// lost (see Lost) within LostAfter (COACH_TURN_LOST_AFTER) of the death; nil finds none.
	Instances Instances
	LostAfter time.Duration
	// Instance is this instance's id, which the pointer of every turn it runs names: a turn of
	// this instance that no longer runs here has ended, whatever its pointer still says while
	// its last batch is on its way.
	Instance string
	// MaxReadersPerTurn (COACH_MAX_READERS_PER_TURN) is how many resumers of one turn this
	// instance serves at once (0: DefaultMaxReadersPerTurn); one more gets ErrTooManyReaders.
	MaxReadersPerTurn int
}

// Turns are the turns of one instance.
type Turns struct {
	cfg       Config
	running   registry
	perTenant tenantCounts
	// perLearner counts by tenant and learner reference.
	perLearner tenantCounts
	readers    *hub
	// writer writes the logs of the turns that keep one.
	writer *writer
}

// New returns the Turns of cfg.
func New(cfg Config) *Turns {
	t := &Turns{cfg: cfg}
	if log := t.Log(); log != nil {
		t.readers = newHub(log, cfg.MaxReadersPerTurn, t.ReadBlock(), t.lost, t.announce)
		t.writer = newWriter(log, defaultBounds)
	}
	return t
}

// Log returns the log that keeps turns' lines, or nil when turns are not resumable.
func (t *Turns) Log() Log {
	if t.cfg.Log == nil || t.cfg.ResumeTTL <= 0 {
		return nil
	}
	return t.cfg.Log
}

// Follow adds a resumer of turn of session: every resumer of a turn on this instance takes its
// batches from one reader of the turn's log, so that resumers cost the log one blocking read
// per turn however many they are. It returns ErrTooManyReaders when the turn has
// MaxReadersPerTurn resumers here already. The caller must Close the Follower. Turns that are
// not resumable (Log returns nil) have none to follow.
func (t *Turns) Follow(session, turn string) (*Follower, error) {
	if t.readers == nil {
		return nil, errNotResumable
	}
	return t.readers.follow(session, turn)
}

var errNotResumable = errors.New("turns: turns are not resumable here")

// StopLocal stops turn of session if it runs on this instance: what a stop published by any
// instance (Log.Stop) is delivered to.
func (t *Turns) StopLocal(session, turn string) { t.running.stop(session, turn) }

// Followed tells the instance that a reader follows turn of session: if the turn runs here,
// its lines waiting go to the log at once, and the rest as they come (see writer). It is what
// a Log.Follow published by any instance is delivered to.
func (t *Turns) Followed(session, turn string) { t.running.follow(session, turn) }

// announce tells the instance that runs turn of session that a reader follows it: this one
// directly, any other through the log. A failure is not retried here: a reader announces the
// turn again whenever its read waits in vain.
func (t *Turns) announce(ctx context.Context, session, turn string) {
	if t.running.follow(session, turn) {
		return
	}
	_ = t.cfg.Log.Follow(ctx, session, turn)
}

// Stop stops the session's running turn wherever it runs: here at once, elsewhere through the
// log's stop. It reports whether the session had a running turn: a lost one (see Lost) is
// ended as lost instead, and does not count, nor does one of this instance that has just ended
// (its pointer says running until its last batch is written, after the turn's client got its
// last line).
func (t *Turns) Stop(ctx context.Context, session string) (bool, error) {
	if turn := t.running.running(session); turn != "" {
		t.running.stop(session, turn)
		return true, nil
	}
	log := t.Log()
	if log == nil {
		return false, nil
	}
	turn, running, instance, err := log.Current(ctx, session)
	if err != nil || !running || (instance != "" && instance == t.cfg.Instance) {
		return false, err
	}
	if lost, err := t.lost(ctx, session, turn, instance); err != nil || lost {
		return false, err
	}
	if err := log.Stop(ctx, session, turn); err != nil {
		return false, err
	}
	return true, nil
}

// Turn is one turn running on this instance, from Start to End.
type Turn struct {
	turns         *Turns
	session, id   string
	ctx           context.Context
	cancel        context.CancelCauseFunc
	drained, left func() bool
	log           *lineLog
	// followed is set once a reader follows the turn (see Turns.Followed).
	followed atomic.Bool
	// admission, when the turn was admitted (Admission.Start), is given back by End.
	admission *Admission
}

// Start registers turn of session as running here. The turn is not the request's: a client
// that goes away leaves it running to its end, on a context of its own that only its deadline
// (see coach.TurnRun.Run), drain, a stop, or, with CancelOnDisconnect, req's end cancel. A
// drain ends it with coach.ErrShuttingDown, a stop with coach.ErrTurnCancelled and the client's
// leaving with context.Canceled. End must be called once the turn is over.
func (t *Turns) Start(req, drain context.Context, session, turn string) *Turn {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(req))
	r := &Turn{turns: t, session: session, id: turn, ctx: ctx, cancel: cancel}
	r.drained = context.AfterFunc(drain, func() { cancel(coach.ErrShuttingDown) })
	if t.cfg.CancelOnDisconnect {
		r.left = context.AfterFunc(req, func() { cancel(context.Canceled) })
	}
	t.running.add(session, turn, cancel, &r.followed)
	return r
}

// Context returns the context the turn runs on.
func (r *Turn) Context() context.Context { return r.ctx }

// Sink returns the Sink the turn runs with: it tees every line into the turn's log, when turns
// are resumable, and writes to client while the client is there. A client that is gone stops
// receiving lines, never the turn, unless turns are cancelled on disconnect (then its write
// error ends the turn). life is how long the turn may still run and write; its log is kept for
// that and ResumeTTL after its end. in, when not nil, is the turn's learner input, kept with the
// log's first batch for as long as the log (see Inputs); it must not change while the turn runs.
// log hears of a log that cannot be written.
func (r *Turn) Sink(client coach.Sink, life time.Duration, in *coach.TurnInput, log *zerolog.Logger) coach.Sink {
	s := &sink{client: client, cancelOnError: r.turns.cfg.CancelOnDisconnect}
	s.raw, _ = client.(LineWriter)
	if w := r.turns.writer; w != nil {
		ttl := r.turns.cfg.ResumeTTL
		r.log = newLineLog(w, r.session, r.id, life+ttl, ttl, in, &r.followed, log)
		s.log = r.log
		r.turns.running.logged(r.session, r.id, r.log)
	}
	return s
}

// End unregisters the turn, releases its context, gives back its tenant's place (see Admit)
// and writes the rest of its log, itself unless another write of the log's is under way. The
// returned channel is closed once the log is written out: before End returns, unless that
// other write was under way, or at once when the turn keeps none.
func (r *Turn) End() <-chan struct{} {
	r.turns.running.remove(r.session, r.id)
	if r.left != nil {
		r.left()
	}
	r.drained()
	r.cancel(nil)
	if r.admission != nil {
		r.admission.Release()
	}
	if r.log == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	r.log.close()
	return r.log.done
}

// LineWriter is a client Sink that writes encoded NDJSON lines as they are: the turn's sink
// gives it the very bytes it keeps in the log, so a line is encoded once however many places it
// goes.
type LineWriter interface {
	coach.Sink
	// WriteLine writes line, one encoded NDJSON line ending in '\n'.
	WriteLine(line []byte) error
}

// sink is the Sink of one turn (see Turn.Sink).
type sink struct {
	client coach.Sink
	raw    LineWriter
	log    *lineLog
	// line is the last line encoded for the log.
	line []byte
	// cancelOnError passes the client's write errors on to the engine.
	cancelOnError bool
	gone          bool
}

// Emit tees e.
func (t *sink) Emit(e coach.Event) error {
	if t.log == nil {
		if t.gone {
			return nil
		}
		return t.clientErr(t.client.Emit(e))
	}
	line, err := ndjson.Append(t.line[:0], e)
	if err != nil {
		return err
	}
	t.line = line
	// The line goes to the client first; the log takes a copy, for its writer to find when
	// Flush wakes it.
	if !t.gone {
		if t.raw != nil {
			err = t.clientErr(t.raw.WriteLine(line))
		} else {
			err = t.clientErr(t.client.Emit(e))
		}
	}
	t.log.add(line)
	return err
}

// Flush sends the client what is held, and only then wakes the log's writer, when a batch is due
// (see lineLog.kick): waking a goroutine can wake an idle CPU, and the client's lines must not
// wait for that, let alone for Redis.
func (t *sink) Flush() error {
	var err error
	if !t.gone {
		err = t.clientErr(t.client.Flush())
	}
	if t.log != nil {
		t.log.kick()
	}
	return err
}

func (t *sink) clientErr(err error) error {
	if err == nil || t.cancelOnError {
		return err
	}
	t.gone = true
	return nil
}

// registry are the turns running on this instance, by session (a session runs one turn at a
// time), so that a stop from any instance finds the one to cancel.
type registry struct {
	mu sync.Mutex
	m  map[string]runningTurn
}

type runningTurn struct {
	turn   string
	cancel context.CancelCauseFunc
	// followed is the turn's: set once a reader follows it.
	followed *atomic.Bool
	// log is the turn's, once its sink made it, or nil.
	log *lineLog
}

func (r *registry) add(session, turn string, cancel context.CancelCauseFunc, followed *atomic.Bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]runningTurn{}
	}
	r.m[session] = runningTurn{turn: turn, cancel: cancel, followed: followed}
}

// logged records l, the log of turn of session.
func (r *registry) logged(session, turn string, l *lineLog) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.m[session]; ok && t.turn == turn {
		t.log = l
		r.m[session] = t
	}
}

// follow marks turn of session followed if it runs here, and reports whether it does.
func (r *registry) follow(session, turn string) bool {
	r.mu.Lock()
	t, ok := r.m[session]
	r.mu.Unlock()
	if !ok || t.turn != turn {
		return false
	}
	if !t.followed.Swap(true) && t.log != nil {
		t.log.follow()
	}
	return true
}

func (r *registry) remove(session, turn string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.m[session]; ok && t.turn == turn {
		delete(r.m, session)
	}
}

// stop cancels turn of session if it runs here (turn "": whichever runs), and reports whether
// it did.
func (r *registry) stop(session, turn string) bool {
	r.mu.Lock()
	t, ok := r.m[session]
	r.mu.Unlock()
	if !ok || (turn != "" && t.turn != turn) {
		return false
	}
	t.cancel(coach.ErrTurnCancelled)
	return true
}

// running returns the id of the turn of session running here, or "".
func (r *registry) running(session string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[session].turn
}
