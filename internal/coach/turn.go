package coach

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coachgw/coachgw/internal/outbound"
	"github.com/coachgw/coachgw/internal/safety"
)

// TurnRun is a turn whose session is claimed and whose input was accepted: nothing has been sent
// yet. Exactly one of Run or Abort must be called.
type TurnRun struct {
	svc   *Service
	sess  *Session
	token string
	// id identifies the turn: to the tenant's token counters (its reservation and its charge),
	// in its transcript entries, and to clients (see ID); reserved says whether it reserved
	// tokens of a budget with its claim.
	id       string
	reserved bool
	turn     Turn
	contract string
	start    time.Time
	// usage is the last usage report of the current attempt; nil when the endpoint sent none.
	// finish is the attempt's finish reason, when the endpoint gave one.
	usage  *Usage
	finish string
	// contextCut says that the current attempt's reply was cut by the endpoint's context
	// window rather than by its token cap (see attempt).
	contextCut bool
	// size is the bytes of output the current attempt streamed (see Options.MaxOutputBytes),
	// and reply their first maxReplyEcho bytes: what the corrective retry shows the model of
	// its own failed reply.
	size     int
	reply    []byte
	replyCut bool
	// opened says whether the attempt's stream started (the endpoint took the request), and
	// badUsage whether it sent a usage report that was no whole numbers.
	opened   bool
	badUsage bool
	// span is the turn's trace span, ended when the turn is.
	span trace.Span
	// input is the turn's body as the transcript keeps it, and in the same as parsed.
	input json.RawMessage
	in    TurnInput
	// records are the turn's safety audit records, written when it ends.
	records []safety.Record
	// emitted counts the deltas the turn's attempts emitted: sent to the client, or held in
	// the input gate, which sends them later in order. Whether an attempt's text must be
	// retracted with a reset line depends on this count, not on what the client has seen yet.
	emitted int
	// modelClock keeps the turn's Timing.
	modelClock
}

// StartTurn claims session id of tenant and lets its contract check in. Errors returned here are
// found before any line is sent.
func (s *Service) StartTurn(ctx context.Context, tenant, id string, in TurnInput) (*TurnRun, error) {
	start := s.now()
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	ctx, span := s.tracer.Start(ctx, "coach.turn", trace.WithAttributes(
		attribute.String(attrTenant, tenant), attribute.String(attrSession, id)))
	r, err := s.startTurn(ctx, tenant, id, in, start)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	span.SetAttributes(attribute.String(attrContract, r.contract))
	r.span = span
	return r, nil
}

func (s *Service) startTurn(ctx context.Context, tenant, id string, in TurnInput, start time.Time) (*TurnRun, error) {
	cctx, claimSpan := s.tracer.Start(ctx, "coach.claim")
	turnID := NewID()
	sess, token, err := s.claim(cctx, tenant, id, turnID, s.reservation(in), start)
	endSpan(claimSpan, err)
	if err != nil {
		return nil, err
	}
	claimed := s.now()
	r := &TurnRun{svc: s, sess: sess, token: token, id: turnID, start: start}
	r.timing.Claim = claimed.Sub(start)
	r.reserved = s.budget != nil && s.budget(tenant) > 0 && s.usageStore() != nil
	c, ok := s.contracts[sess.Contract]
	if !ok {
		r.drop(nil)
		return nil, Errorf(KindInternal, CodeInternal, "session has unknown contract %q", sess.Contract)
	}
	turn, err := c.Begin(sess, in)
	if err != nil {
		r.drop(nil)
		return nil, err
	}
	input, err := json.Marshal(in)
	if err != nil {
		r.drop(nil)
		return nil, Wrap(err, KindInternal, CodeInternal, "cannot encode the turn's input")
	}
	r.turn, r.contract, r.input, r.in = turn, sess.Contract, input, in
	r.timing.Prompt = s.now().Sub(claimed)
	return r, nil
}

// charge returns what the turn settles in its tenant's counters: the tokens of spent, or
// nil when there is nothing to settle (no tokens, no reservation).
func (r *TurnRun) charge(spent []Spent) *TenantUsage {
	total := SpentTotal(spent)
	if total == nil && !r.reserved {
		return nil
	}
	u := &TenantUsage{Turn: r.id, Tenant: r.sess.Tenant, Day: r.start, Session: r.sess.ID}
	if total != nil {
		u.Usage = *total
	}
	for _, sp := range spent {
		u.Largest = max(u.Largest, sp.Usage.PromptTokens+sp.Usage.CompletionTokens)
	}
	return u
}

// drop releases the turn's session without storing anything, settling spent (and the turn's
// reservation) in the same round trip.
func (r *TurnRun) drop(spent []Spent) {
	r.svc.releaseCharging(r.sess.ID, r.token, r.charge(spent))
}

// ID returns the turn's id, which its transcript entries carry: the adapter names the turn with
// it (its stream, its log, its resume), so that one id finds the turn everywhere.
func (r *TurnRun) ID() string { return r.id }

// Session returns the session as it was claimed.
func (r *TurnRun) Session() *Session { return r.sess }

// Abort releases the session without calling the model.
func (r *TurnRun) Abort() {
	r.drop(nil)
	r.span.End()
}

// Run streams the turn to out and stores it when it succeeds. The stream always ends with
// exactly one result or error event (unless out fails, which means the client is gone and the
// turn is cancelled). A failed or cancelled turn writes nothing.
func (r *TurnRun) Run(ctx context.Context, out Sink) Report {
	s := r.svc
	ctx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	ctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	defer cancel()
	stopRenewing := r.renew(ctx, lose)
	defer stopRenewing()
	ctx = trace.ContextWithSpan(ctx, r.span)
	st := &stream{r: r, out: out, ctx: ctx, cancel: cancel, rep: Report{Contract: r.contract, Tenant: r.sess.Tenant}}
	// A turn that does not commit still pays for every attempt it made, the client's hang-up
	// included: the release settles them.
	defer func() {
		if !st.committed {
			r.drop(st.rep.Spent)
		}
	}()
	s.obs.TurnStarted(r.contract)

	guard := s.safety
	defer func() { s.auditTurn(r) }()
	if guard.Enforcing() && r.sess.Held() {
		r.records = append(r.records, r.safetyRecords(safety.StageInput,
			[]safety.Check{{Classifier: safety.BuiltinName, NotRun: "held"}}, safety.ActionHeld)...)
		return r.safeAnswer(st, stopRenewing, true, safety.Verdict{})
	}
	ic := r.checkInput(st)
	defer ic.done()
	if ic.crisis != nil {
		return r.safeAnswer(st, stopRenewing, false, *ic.crisis)
	}
	gsend := func(e Event) {
		if e.Type == EventDelta {
			r.emitted++
		}
		ic.send(e)
	}

	var cards []json.RawMessage
	for _, e := range r.turn.Prelude() {
		if e.Type == EventCard {
			cards = append(cards, e.Card)
		}
		gsend(e)
	}
	res, err := r.attempts(ic.ctx, gsend, ic.flush, &st.rep)
	if ic.gate != nil && guard.Enforcing() {
		crisis, werr := ic.gate.wait(ctx)
		switch {
		case werr != nil:
			return st.fail(werr)
		case crisis:
			return r.safeAnswer(st, stopRenewing, false, ic.gate.verdict)
		}
	}
	if err != nil {
		return st.fail(err)
	}
	// From here on the lock is only checked, by Commit: a renewal racing the commit could
	// otherwise report the lock that Commit just released as lost.
	stopRenewing()
	if st.clientErr != nil || ctx.Err() != nil {
		return st.fail(context.Cause(ctx))
	}
	next, err := st.commit(res, cards, nil, nil)
	if err != nil {
		return st.fail(err)
	}
	st.rep.Rules, st.rep.Diagnostic, st.rep.Notice = res.Rules, res.Diagnostic, res.Notice
	if res.Tail != "" {
		st.send(res.TailDelta())
	}
	st.send(Event{Type: EventResult, Result: res.Result, Session: next, Fallback: res.Fallback, Upstream: st.rep.Upstream, Usage: st.rep.Usage})
	if res.Fallback {
		return st.finish("fallback", nil)
	}
	return st.finish("ok", nil)
}

// inputCheck is the check of a turn's learner input as checkInput starts it.
type inputCheck struct {
	// ctx is the context the model is asked on: a crisis found meanwhile cancels it.
	ctx context.Context
	// send and flush are what the turn's lines go through: the gate's, which hold them until
	// the check's verdict, when there is one to wait for.
	send  func(Event)
	flush func()
	gate  *inputGate
	// crisis is the screen's verdict when it found a crisis that no judge is to review: the
	// turn then ends with safeAnswer before the model is asked.
	crisis *safety.Verdict
	// done, deferred by Run, waits for the check's classifiers (bounded by their timeout),
	// keeps their records and releases the model's context.
	done func()
}

// checkInput checks the learner's input before any line of the turn leaves. The built-in
// screen takes microseconds and runs first: without a judge, a crisis it finds never reaches
// the model. The classifiers beside it, and the judge on what the screen caught or could not
// read, run while the model is asked, so that a topic of study costs no more than the slower
// of the two; every line waits in the gate for their verdict, and a crisis cancels the call.
// Observe mode checks beside the turn and holds nothing.
func (r *TurnRun) checkInput(st *stream) inputCheck {
	guard := r.svc.safety
	ic := inputCheck{ctx: st.ctx, send: st.send, flush: st.flush, done: func() {}}
	text := learnerText(r.in)
	if !guard.Enabled() || strings.TrimSpace(text) == "" {
		return ic
	}
	in := safety.Text{Stage: safety.StageInput, Locale: r.sess.Locale, Content: text, Tenant: r.sess.Tenant}
	mctx, cancelModel := context.WithCancelCause(st.ctx)
	ic.ctx = mctx
	ic.done = func() { cancelModel(nil) }
	switch {
	case !guard.Enforcing():
		ic.gate = r.startInputCheck(st.ctx, guard.Check, in, nil, nil, nil, nil)
	default:
		v, c := guard.CheckScreen(in)
		if v.Crisis && guard.Judge.Classifier == nil {
			r.records = append(r.records, r.safetyRecords(safety.StageInput, []safety.Check{c}, safety.ActionCrisis)...)
			ic.crisis = &v
			return ic
		}
		if review := guard.Review(in, c); review != nil {
			ic.gate = r.startInputCheck(st.ctx, review, in, nil, cancelModel, st.send, st.flush)
			ic.send, ic.flush = ic.gate.pass, ic.gate.flushing
			break
		}
		r.records = append(r.records, r.safetyRecords(safety.StageInput, []safety.Check{c}, safety.ActionNone)...)
	}
	if gate := ic.gate; gate != nil {
		ic.done = func() {
			<-gate.done // bounded: classifiers have their timeout
			r.records = append(r.records, r.inputRecords(gate)...)
			cancelModel(nil)
		}
	}
	return ic
}

// stream is the turn's side of its Sink: it sends the turn's lines, stamping its id on the
// last, decides once that a client whose Sink failed is gone (which cancels the turn), and
// ends the turn with its report.
type stream struct {
	r   *TurnRun
	out Sink
	// ctx is the turn's context, which cancel ends.
	ctx    context.Context
	cancel context.CancelFunc
	rep    Report
	// clientErr is the Sink's first error: the client is gone, and gets nothing more. held
	// says whether lines were sent since the last Flush.
	clientErr error
	held      bool
	// committed says whether the turn was stored (see commit).
	committed bool
}

// send sends e to the client, counting its deltas and stamping the turn's id on a result or
// an error line.
func (st *stream) send(e Event) {
	if st.clientErr != nil {
		return
	}
	switch e.Type {
	case EventDelta:
		if st.rep.Deltas == 0 {
			st.rep.FirstDelta = st.r.svc.now().Sub(st.r.start)
			st.rep.Timing.ModelToFirstLine = st.r.modelWaited()
		}
		st.rep.Deltas++
	case EventResult, EventError:
		e.Turn = st.r.id
	}
	if err := st.out.Emit(e); err != nil {
		st.clientErr = err
		st.cancel()
	}
	st.held = true
}

// flush sends the client what was sent since the last flush.
func (st *stream) flush() {
	if !st.held || st.clientErr != nil {
		return
	}
	st.held = false
	if err := st.out.Flush(); err != nil {
		st.clientErr = err
		st.cancel()
	}
}

// finish ends the turn with outcome and returns its report.
func (st *stream) finish(outcome string, err error) Report {
	r := st.r
	st.flush()
	st.rep.Outcome, st.rep.Err, st.rep.Duration = outcome, err, r.svc.now().Sub(r.start)
	t := r.Timing()
	t.ModelToFirstLine = st.rep.Timing.ModelToFirstLine
	st.rep.Timing = t
	r.svc.obs.TurnEnded(st.rep)
	r.span.SetAttributes(attribute.String(attrOutcome, outcome), attribute.String(attrUpstream, st.rep.Upstream),
		attribute.Int(attrAttempts, st.rep.Attempts), attribute.Int(attrResets, st.rep.Resets))
	endSpan(r.span, err)
	return st.rep
}

// fail ends the turn that err ended: with its error line (see ErrorEvent), or cancelled when
// its client is gone.
func (st *stream) fail(err error) Report {
	// A client that left cancels the request's context with context.Canceled; a server that
	// drains or a turn that ran out of time has another cause, and gets its error line.
	if st.clientErr != nil || errors.Is(context.Cause(st.ctx), context.Canceled) {
		return st.finish("cancelled", err)
	}
	e := ErrorEvent(err, st.r.id)
	st.send(e)
	return st.finish(e.Code, err)
}

// safeAnswer ends the turn with the contract's answer written by the gateway instead of the
// lesson: for a crisis in the learner's input (v), or for any turn of a held session. Whom the
// crisis concerns decides what follows (see whom): the learner's own risk holds the session
// and escalates at its severity; worry about someone the learner knows gets the same resources
// and an escalation of severity concern, and the next turn is a lesson again, because nobody in
// the session is at risk.
func (r *TurnRun) safeAnswer(st *stream, stopRenewing func(), held bool, v safety.Verdict) Report {
	s := r.svc
	stopRenewing()
	loc, lr := s.safety.Resources.For(r.sess.Locale)
	notice := &SafetyNotice{Kind: "crisis", Locale: loc, Message: lr.Message, Resources: lr.Resources}
	// The resources go out first, whatever happens to the commit.
	st.send(Event{Type: EventSafety, Safety: notice})
	sr, ok := r.turn.(SafeReplier)
	if !ok {
		return st.fail(Errorf(KindInternal, CodeInternal, "contract %q has no supportive answer", r.contract))
	}
	res, err := sr.SafeReply(supportiveText(r.sess.Language(), v, lr))
	if err != nil {
		return st.fail(err)
	}
	var hold *SafetyHold
	var episode *safety.Episode
	if !held && !r.sess.Held() && safety.Detected(v) {
		id, since := NewID(), s.now().UTC()
		episode = r.episode(id, since, v)
		if whom(v) == safety.ConcernOther {
			episode.Severity = safety.SeverityConcern
		} else {
			hold = &SafetyHold{Hold: true, Since: since, Episode: id}
			// The learner is held before the session: a commit that then fails leaves a
			// learner held by a crisis that was detected, never a held session whose
			// learner's next session is not.
			if lh := s.learnerHolds(r.sess.Learner); lh != nil {
				if err := lh.HoldLearner(st.ctx, r.sess.Tenant, r.sess.Learner, *hold); err != nil {
					return st.fail(err)
				}
			}
		}
	}
	next, err := st.commit(res, nil, notice, hold)
	if err != nil {
		return st.fail(err)
	}
	if episode != nil && s.escalator != nil {
		s.escalator.Escalate(*episode)
	}
	if res.Tail != "" {
		st.send(res.TailDelta())
	}
	st.send(Event{Type: EventResult, Result: res.Result, Session: next})
	if held {
		return st.finish(OutcomeHeld, nil)
	}
	return st.finish(OutcomeCrisis, nil)
}

// renew keeps the turn's lock alive while the turn runs: every third of the lock's TTL it asks
// the store to extend the lock, so that the lock can be short (a crashed gateway blocks its
// sessions for seconds) and still outlive any turn. A renewal may take as long as the lock has
// left since the last one that succeeded: on a busy machine a renewal that answers late but
// before the lock expires still keeps it, where one given up after a third of the TTL would
// leave the next tick less time. A store that says the lock is no longer this turn's (it
// expired, say, while the store was unreachable, and someone else may hold it now) ends the
// turn through lose with ErrConflict; it then writes nothing. A renewal that fails otherwise
// is tried again at the next tick. The returned function stops the renewals, cancelling one in
// flight, and waits for it; it may be called more than once.
//
// The renewals run from a timer, not a goroutine of their own: most turns end before the first
// one is due, and then the turn has started and stopped no goroutine. On a quiet instance each
// goroutine woken is a CPU woken, which costs more than the renewal's bookkeeping.
func (r *TurnRun) renew(ctx context.Context, lose context.CancelCauseFunc) (stop func()) {
	s := r.svc
	every := max(s.opts.LockTTL/3, time.Millisecond)
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu       sync.Mutex
		stopped  bool
		timer    *time.Timer
		inFlight sync.WaitGroup
	)
	// held is when the lock was last extended: the claim, just before, then each renewal. Only
	// the timer's function uses it, and it runs once at a time: it sets the timer again when it
	// is done.
	held := s.now()
	var tick func()
	tick = func() {
		mu.Lock()
		if stopped || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		inFlight.Add(1)
		mu.Unlock()
		defer inFlight.Done()
		began, asked := time.Now(), s.now()
		rctx, done := context.WithTimeout(ctx, max(held.Add(s.opts.LockTTL).Sub(asked), every))
		err := s.store.Renew(rctx, r.sess.ID, r.token, s.opts.LockTTL)
		done()
		switch {
		case err == nil:
			held = asked
		case errors.Is(err, ErrConflict):
			if s.erasedSince(ctx, r.sess) {
				lose(ErrSessionDeleted)
			} else {
				lose(ErrConflict)
			}
			return
		}
		// The next renewal is due a third of the TTL after this one was asked, at once when this
		// one took longer, as a ticker's would be.
		mu.Lock()
		if !stopped {
			timer.Reset(max(every-time.Since(began), 0))
		}
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(every, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		cancel()
		inFlight.Wait()
	}
}

// attempts calls the model until the turn has a usable outcome or no retry is left. It starts at
// the first upstream whose circuit is not open, or, when every circuit is, at the one the
// breaker names for panic mode. On one endpoint, failures the endpoint may
// recover from are retried with backoff before any text of an attempt reached the client; after
// that, and for unusable output, the turn restarts once with a reset line. A failure another
// endpoint may not have (see leaves) moves the turn to the next upstream whose circuit is not
// open, at once and with a fresh budget of retries: silently before text was sent, after a
// reset line once it was. The last endpoint of the list keeps the single-endpoint rules.
func (r *TurnRun) attempts(ctx context.Context, send func(Event), flush func(), rep *Report) (*Outcome, error) {
	s := r.svc
	cur, panicked := firstUpstream(s.upstreams, s.breaker)
	if cur < 0 {
		return nil, errNoUpstream
	}
	retries, recoveries := 0, 0
	// visit is what the turn's attempts on the current endpoint say of it so far: the verdict
	// of the last attempt that said anything. The breaker hears it once, when the turn leaves
	// the endpoint, so that one turn is one sample however many attempts it made there.
	visit := Inconclusive
	leave := func() { s.breaker.Report(s.upstreams[cur].Name, visit, panicked) }
	// fix, after unusable output, tells the model what was wrong with it; failed is the
	// reply it was wrong about, shown to the model as its own message before fix.
	var fix, failed string
	// reminded says that the turn's output failed the safety check once: the next attempt's
	// prompt carries the safety reminder, and a second failure ends the turn with a safe answer.
	reminded := false
	// squeezed counts the attempts that found the endpoint's context window full (a refusal for
	// the prompt's size, or a reply cut short by it): each next attempt sends less of the
	// conversation (see squeeze), never the failed reply, and after maxSqueezes the turn ends.
	squeezed := 0
	for {
		up := s.upstreams[cur]
		rep.Attempts++
		rep.Upstream = up.Name
		s.obs.Attempted(r.contract, up.Name)
		before := r.emitted
		// The request is built for each attempt rather than kept across them, so that an open
		// stream does not hold its prompt.
		req := r.turn.Request()
		req.MaxTokens = s.completionCap(r.contract, req.MaxTokens)
		req.Caller = r.sess.Tenant + "\x00" + r.sess.ID
		// shrinkable says whether a refusal for the prompt's size can be met with a shorter
		// request: one that leaves out the failed reply this one carries, or more of the
		// conversation. A first turn's prompt has nothing to leave out, and asking again would
		// only be refused again.
		now := req.Messages
		if squeezed > 0 {
			now = squeeze(now, squeezed)
		}
		shrinkable := failed != "" || len(squeeze(req.Messages, squeezed+1)) < len(now)
		req.Messages = fit(req, squeezed, failed, fix, up.ContextWindow)
		if s.maskPII {
			maskRequest(&req)
		}
		if reminded {
			remind(&req)
		}
		span := s.startAttempt(ctx, up)
		out, err := r.attempt(ctx, up.Model, req, send, flush)
		endAttempt(span, r.usage, r.finish, err)
		rep.logAttempt(up.Name, r.finish, r.size, r.usage, err)
		sp, paid := r.spent(up, req)
		if paid {
			rep.Spent = append(rep.Spent, sp)
		}
		if err == nil {
			err = r.checkAnswer(ctx, out)
		}
		if errors.Is(err, errUnsafeOutput) {
			// The endpoint answered: its circuit hears a healthy visit whatever it said.
			visit = Healthy
			if r.emitted > before {
				r.sendReset(rep, send, ResetUnsafeOutput)
			}
			r.turn.Reset()
			if !reminded {
				reminded = true
				fix, failed = "", ""
				continue
			}
			leave()
			return r.safeFallback()
		}
		if err == nil {
			visit = Healthy
			leave()
			rep.Model = up.ModelName
			if paid && !sp.Estimated {
				rep.Usage = &sp.Usage // the result line carries a report the gateway believed
			}
			return out, nil
		}
		if ctx.Err() != nil {
			leave()
			return nil, context.Cause(ctx)
		}
		var me *ModelError
		isModel := errors.As(err, &me)
		if isModel {
			s.obs.ModelFailed(r.contract, up.Name, me.Class)
		}
		sent := r.emitted > before
		invalid := isInvalidOutput(err)
		if invalid {
			s.obs.Rejected(r.contract)
			s.obs.UnusableOutput(r.contract, up.Name)
		}
		exhausted := invalid && recoveries >= s.opts.Recoveries
		if v := verdict(s.opts, me, invalid); v != Inconclusive {
			visit = v
		}
		if (isModel && me.ContextFull && shrinkable || r.contextCut) && squeezed < maxSqueezes {
			// The prompt filled the endpoint's context window: the same request cannot
			// succeed, a shorter one may. Showing the model its failed reply would make the
			// request longer still, so the retry never carries it; a refused corrective retry
			// keeps its correction, and a cut is corrected as one.
			squeezed++
			s.obs.Retried(r.contract, "context_full")
			if sent {
				r.sendReset(rep, send, resetReason(err))
			}
			r.turn.Reset()
			failed = ""
			if r.contextCut {
				fix = correction(err)
			}
			continue
		}
		if leaves(s.opts, me, exhausted, retries) {
			if next := nextUpstream(s.upstreams, s.breaker, cur); next >= 0 {
				leave()
				reason := resetReason(err)
				s.obs.FellBack(r.contract, up.Name, s.upstreams[next].Name, sent)
				if sent {
					r.sendReset(rep, send, reason)
				}
				r.turn.Reset()
				cur, retries, recoveries, fix, failed, visit, panicked = next, 0, 0, "", "", Inconclusive, false
				continue
			}
		}
		// Further attempts on this endpoint belong to the visit the breaker allowed: they are
		// not asked for again (a half-open circuit's probe is the whole visit).
		if isModel && me.Retryable && !sent && retries+1 < s.opts.MaxAttempts {
			retries++
			s.obs.Retried(r.contract, me.Class)
			// The failed call may have fed output that showed no text yet (e.g. the keys
			// before assistantText); the next call starts its answer from scratch.
			r.turn.Reset()
			flush()
			if !outbound.Sleep(ctx, backoff(s.opts, retries, me.RetryAfter, rand.N[time.Duration])) {
				leave()
				return nil, context.Cause(ctx)
			}
			continue
		}
		if exhausted {
			if fb, ok := r.turn.(Fallback); ok {
				leave()
				out, ferr := fb.Fallback(err)
				if ferr == nil && sent {
					// The text this attempt streamed is not what the fallback says. A turn
					// with no fallback for this failure ends with its error line instead.
					r.sendReset(rep, send, resetReason(err))
				}
				return out, ferr
			}
		}
		// A failed call that sent nothing has had its retries above; recovery is for calls that
		// failed after text went out, and for output that was unusable.
		if recoveries >= s.opts.Recoveries || !(invalid || sent && isModel && me.Retryable) {
			leave()
			return nil, err
		}
		recoveries++
		reason := resetReason(err)
		if sent {
			r.sendReset(rep, send, reason)
		} else {
			// Nothing reached the client, so there is nothing to reset: the corrective call
			// is a retry before text, and counted as one.
			s.obs.Retried(r.contract, reason)
		}
		r.turn.Reset()
		fix, failed = "", ""
		if invalid {
			fix, failed = correction(err), r.failedReply()
		}
	}
}

// sendReset sends a reset line with reason and counts it: the resets metric and the report's
// Resets count exactly the reset lines the client was sent.
func (r *TurnRun) sendReset(rep *Report, send func(Event), reason string) {
	rep.Resets++
	r.svc.obs.Reset(r.contract, reason)
	send(Event{Type: EventReset, Reason: reason})
}

// ErrorEvent returns the error line that ends turn when err ended it: the one place that decides
// the code and message of a stream's failure, for a turn that ran and for one refused before it
// could (a coach.KindStream error of StartTurn).
func ErrorEvent(err error, turn string) Event {
	e := streamError(err)
	return Event{Type: EventError, Code: e.Code, Message: e.Message, Turn: turn}
}

// streamError turns whatever ended a turn into the error its last line reports. The message of
// unusable output is written for the model (the corrective retry tells it what to mend, such as
// "be shorter"), so the learner's line keeps its code and gets a message of its own; the cause
// stays in the error for the logs.
func streamError(err error) *Error {
	var e *Error
	if isInvalidOutput(err) {
		errors.As(err, &e)
		return Wrap(err, KindStream, e.Code, unusableAnswer)
	}
	if errors.As(err, &e) {
		return e
	}
	var me *ModelError
	switch {
	case errors.As(err, &me) && me.Class == "timeout":
		return Wrap(err, KindStream, CodeStreamFailed, "the model did not answer in time")
	case errors.As(err, &me):
		return Wrap(err, KindStream, CodeStreamFailed, "the model endpoint failed ("+me.Class+")")
	case errors.Is(err, context.DeadlineExceeded):
		return Wrap(err, KindStream, CodeStreamFailed, "the turn took longer than its deadline")
	default:
		return Wrap(err, KindStream, CodeStreamFailed, "the model stream failed")
	}
}
