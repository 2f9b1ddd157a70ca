package coach

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

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
	committed := false
	rep := Report{Contract: r.contract, Tenant: r.sess.Tenant}
	// A turn that does not commit still pays for every attempt it made, the client's hang-up
	// included: the release settles them.
	defer func() {
		if !committed {
			r.drop(rep.Spent)
		}
	}()
	ctx = trace.ContextWithSpan(ctx, r.span)
	s.obs.TurnStarted(r.contract)
	var clientErr error
	held := false
	send := func(e Event) {
		if clientErr != nil {
			return
		}
		if e.Type == EventDelta {
			if rep.Deltas == 0 {
				rep.FirstDelta = s.now().Sub(r.start)
				rep.Timing.ModelToFirstLine = r.modelWaited()
			}
			rep.Deltas++
		}
		if err := out.Emit(e); err != nil {
			clientErr = err
			cancel()
		}
		held = true
	}
	flush := func() {
		if !held || clientErr != nil {
			return
		}
		held = false
		if err := out.Flush(); err != nil {
			clientErr = err
			cancel()
		}
	}
	finish := func(outcome string, err error) Report {
		flush()
		rep.Outcome, rep.Err, rep.Duration = outcome, err, s.now().Sub(r.start)
		t := r.Timing()
		t.ModelToFirstLine = rep.Timing.ModelToFirstLine
		rep.Timing = t
		s.obs.TurnEnded(rep)
		r.span.SetAttributes(attribute.String(attrOutcome, outcome), attribute.String(attrUpstream, rep.Upstream),
			attribute.Int(attrAttempts, rep.Attempts), attribute.Int(attrResets, rep.Resets))
		endSpan(r.span, err)
		return rep
	}
	fail := func(err error) Report {
		// A client that left cancels the request's context with context.Canceled; a server that
		// drains or a turn that ran out of time has another cause, and gets its error line.
		if clientErr != nil || errors.Is(context.Cause(ctx), context.Canceled) {
			return finish("cancelled", err)
		}
		e := streamError(err)
		send(Event{Type: EventError, Code: e.Code, Message: e.Message})
		return finish(e.Code, err)
	}

	// commit stores res as the session's next version, with the transcript entries of the
	// turn: the learner's input, the cards sent before the result, and the result, which
	// carries notice when the turn sent a safety line. hold, when set, starts a safety hold.
	commit := func(res *Outcome, cards []json.RawMessage, notice *SafetyNotice, hold *SafetyHold) (*Session, error) {
		next := *r.sess
		next.Version++
		next.State = res.State
		next.UpdatedAt = s.now().UTC()
		next.History = appendHistory(r.sess.History, res.History, s.opts.HistoryLimit, s.opts.HistoryBytes)
		if hold != nil {
			next.Safety = hold
		}
		// The learner's entry is dated when the turn was asked for, the coach's when it was stored.
		transcript := append([]TranscriptEntry{learnerEntry(r.start.UTC(), r.input)},
			coachEntries(next.UpdatedAt, cards, res.Result, res.Fallback)...)
		transcript[len(transcript)-1].Safety = notice
		for i := range transcript {
			transcript[i].Turn = r.id
		}
		cctx, commitSpan := s.tracer.Start(ctx, "coach.commit")
		err := s.store.Commit(cctx, &next, r.token, CommitExtra{Transcript: transcript, Usage: r.charge(rep.Spent)})
		endSpan(commitSpan, err)
		if errors.Is(err, ErrConflict) && s.erasedSince(ctx, r.sess) {
			// The session is gone with its learner, which is what the client is told.
			err = ErrSessionDeleted
		}
		if err != nil {
			return nil, err
		}
		committed = true
		return &next, nil
	}

	guard := s.safety
	defer func() { s.auditTurn(r) }()
	// safeAnswer ends the turn with the contract's answer written by the gateway instead of
	// the lesson: for a crisis in the learner's input (v), or for any turn of a held session.
	// Whom the crisis concerns decides what follows (see whom): the learner's own risk holds
	// the session and escalates at its severity; worry about someone the learner knows gets
	// the same resources and an escalation of severity concern, and the next turn is a lesson
	// again, because nobody in the session is at risk.
	safeAnswer := func(held bool, v safety.Verdict) Report {
		stopRenewing()
		loc, lr := guard.Resources.For(r.sess.Locale)
		notice := &SafetyNotice{Kind: "crisis", Locale: loc, Message: lr.Message, Resources: lr.Resources}
		// The resources go out first, whatever happens to the commit.
		send(Event{Type: EventSafety, Safety: notice})
		sr, ok := r.turn.(SafeReplier)
		if !ok {
			return fail(Errorf(KindInternal, CodeInternal, "contract %q has no supportive answer", r.contract))
		}
		res, err := sr.SafeReply(supportiveText(r.sess.Language(), v, lr))
		if err != nil {
			return fail(err)
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
					if err := lh.HoldLearner(ctx, r.sess.Tenant, r.sess.Learner, *hold); err != nil {
						return fail(err)
					}
				}
			}
		}
		next, err := commit(res, nil, notice, hold)
		if err != nil {
			return fail(err)
		}
		if episode != nil && s.escalator != nil {
			s.escalator.Escalate(*episode)
		}
		if res.Tail != "" {
			send(res.TailDelta())
		}
		send(Event{Type: EventResult, Result: res.Result, Session: next})
		if held {
			return finish(OutcomeHeld, nil)
		}
		return finish(OutcomeCrisis, nil)
	}
	if guard.Enforcing() && r.sess.Held() {
		r.records = append(r.records, r.safetyRecords(safety.StageInput,
			[]safety.Check{{Classifier: safety.BuiltinName, NotRun: "held"}}, safety.ActionHeld)...)
		return safeAnswer(true, safety.Verdict{})
	}
	// The learner's input is checked before any line of the turn leaves. The built-in screen
	// takes microseconds and runs first: without a judge, a crisis it finds never reaches the
	// model. The classifiers beside it, and the judge on what the screen caught or could not
	// read, run while the model is asked, so that a topic of study costs no more than the
	// slower of the two; every line waits in the gate for their verdict, and a crisis cancels
	// the call. Observe mode checks beside the turn and
	// holds nothing.
	mctx, gflush := ctx, flush
	emit := send
	var gate *inputGate
	if text := learnerText(r.in); guard.Enabled() && strings.TrimSpace(text) != "" {
		in := safety.Text{Stage: safety.StageInput, Locale: r.sess.Locale, Content: text, Tenant: r.sess.Tenant}
		var cancelModel context.CancelCauseFunc
		mctx, cancelModel = context.WithCancelCause(ctx)
		defer cancelModel(nil)
		switch {
		case !guard.Enforcing():
			gate = r.startInputCheck(ctx, guard.Check, in, nil, nil, nil, nil)
		default:
			v, c := guard.CheckScreen(in)
			if v.Crisis && guard.Judge.Classifier == nil {
				r.records = append(r.records, r.safetyRecords(safety.StageInput, []safety.Check{c}, safety.ActionCrisis)...)
				return safeAnswer(false, v)
			}
			if review := guard.Review(in, c); review != nil {
				gate = r.startInputCheck(ctx, review, in, nil, cancelModel, send, flush)
				emit, gflush = gate.pass, gate.flushing
				break
			}
			r.records = append(r.records, r.safetyRecords(safety.StageInput, []safety.Check{c}, safety.ActionNone)...)
		}
		if gate != nil {
			defer func() {
				<-gate.done // bounded: classifiers have their timeout
				r.records = append(r.records, r.inputRecords(gate)...)
			}()
		}
	}
	gsend := func(e Event) {
		if e.Type == EventDelta {
			r.emitted++
		}
		emit(e)
	}

	var cards []json.RawMessage
	for _, e := range r.turn.Prelude() {
		if e.Type == EventCard {
			cards = append(cards, e.Card)
		}
		gsend(e)
	}
	res, err := r.attempts(mctx, gsend, gflush, &rep)
	if gate != nil && guard.Enforcing() {
		crisis, werr := gate.wait(ctx)
		switch {
		case werr != nil:
			return fail(werr)
		case crisis:
			return safeAnswer(false, gate.verdict)
		}
	}
	if err != nil {
		return fail(err)
	}
	// From here on the lock is only checked, by Commit: a renewal racing the commit could
	// otherwise report the lock that Commit just released as lost.
	stopRenewing()
	if clientErr != nil || ctx.Err() != nil {
		return fail(context.Cause(ctx))
	}
	next, err := commit(res, cards, nil, nil)
	if err != nil {
		return fail(err)
	}
	rep.Rules, rep.Diagnostic, rep.Notice = res.Rules, res.Diagnostic, res.Notice
	if res.Tail != "" {
		send(res.TailDelta())
	}
	send(Event{Type: EventResult, Result: res.Result, Session: next, Fallback: res.Fallback, Upstream: rep.Upstream, Usage: rep.Usage})
	if res.Fallback {
		return finish("fallback", nil)
	}
	return finish("ok", nil)
}

// renew keeps the turn's lock alive while the turn runs: every third of the lock's TTL it asks
// the store to extend the lock, so that the lock can be short (a crashed gateway blocks its
// sessions for seconds) and still outlive any turn. A store that says the lock is no longer
// this turn's (it expired, say, while the store was unreachable, and someone else may hold it
// now) ends the turn through lose with ErrConflict; it then writes nothing. A renewal that
// fails otherwise is tried again at the next tick. The returned function stops the renewals
// and waits for one in flight; it may be called more than once.
func (r *TurnRun) renew(ctx context.Context, lose context.CancelCauseFunc) (stop func()) {
	s := r.svc
	every := max(s.opts.LockTTL/3, time.Millisecond)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(ctx, every)
			err := s.store.Renew(rctx, r.sess.ID, r.token, s.opts.LockTTL)
			cancel()
			if errors.Is(err, ErrConflict) {
				if s.erasedSince(ctx, r.sess) {
					lose(ErrSessionDeleted)
				} else {
					lose(ErrConflict)
				}
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
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
	cur, panicked := r.firstUpstream()
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
		if v := r.verdict(me, invalid); v != Inconclusive {
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
		if r.leaves(me, exhausted, retries) {
			if next := r.nextUpstream(cur); next >= 0 {
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
			if !sleep(ctx, s.backoff(retries, me.RetryAfter)) {
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

// errNoUpstream ends a turn that finds every endpoint's circuit open.
var errNoUpstream = Errorf(KindStream, CodeStreamFailed, "no model endpoint is available: every circuit is open")

// firstUpstream returns the index of the first upstream whose breaker allows an attempt. When
// none does, it returns the one the breaker names for panic mode, with panicked set, so that a
// turn is never refused for circuits alone: -1 only when there is none.
func (r *TurnRun) firstUpstream() (i int, panicked bool) {
	if i := r.nextUpstream(-1); i >= 0 {
		return i, false
	}
	name := r.svc.breaker.Panic()
	for i, u := range r.svc.upstreams {
		if u.Name == name {
			return i, true
		}
	}
	return -1, false
}

// nextUpstream returns the index of the first upstream after i whose breaker allows an attempt,
// or -1.
func (r *TurnRun) nextUpstream(i int) int {
	for i++; i < len(r.svc.upstreams); i++ {
		if r.svc.breaker.Allow(r.svc.upstreams[i].Name) {
			return i
		}
	}
	return -1
}

// leaves reports whether a failed attempt (me, when the model call failed; exhausted, when the
// output was unusable even after the corrective retry) is worth moving to another endpoint:
// connect errors, 5xx, timeouts, cut or stalled streams, unusable output, the endpoint
// refusing us (401, 404, …), which another endpoint may not do, and a request shape it rejects
// (ClassInvalid). A 429 whose Retry-After is
// within the cap is worth waiting for, while retries are left. A request the endpoint refused
// for its content (context length, content policy) and a cancelled call are not.
func (r *TurnRun) leaves(me *ModelError, exhausted bool, retries int) bool {
	if me == nil {
		return exhausted
	}
	switch me.Class {
	case ClassCanceled, ClassRefused:
		return false
	case ClassRateLimited:
		wait := me.RetryAfter > 0 && me.RetryAfter <= r.svc.opts.RetryAfterCap
		return !wait || retries+1 >= r.svc.opts.MaxAttempts
	}
	return true
}

// verdict says what a failed attempt tells of its endpoint. Only the endpoint's own faults
// count against it: connect errors, 5xx, 429 beyond the Retry-After cap, timeouts, cut or
// stalled streams. Unusable output (prose, empty, over-long, schema-invalid) is an answer: it
// moves the turn on, but what a learner gets the model to say must never open a circuit that
// every tenant shares. A request the endpoint rejects for its shape, a cancelled call and a
// 429 worth waiting for say nothing either way.
func (r *TurnRun) verdict(me *ModelError, invalid bool) Verdict {
	switch {
	case invalid:
		return Healthy
	case me == nil || me.Class == ClassCanceled || me.Class == ClassInvalid:
		return Inconclusive
	case me.Class == ClassRefused:
		return Healthy
	case me.Class == ClassRateLimited && me.RetryAfter > 0 && me.RetryAfter <= r.svc.opts.RetryAfterCap:
		return Inconclusive
	default:
		return Failed
	}
}

var (
	errFirstByte = errors.New("no answer from the model before the first-byte deadline")
	errIdle      = errors.New("the model stalled longer than the idle deadline")
)

// attempt makes one model call and feeds its fragments to the turn. A watchdog timer enforces
// the first-byte deadline and then, reset by every fragment and every arrival of bytes the
// model reports (see StreamHooks.Activity), the idle deadline.
func (r *TurnRun) attempt(ctx context.Context, model Model, req ModelRequest, send func(Event), flush func()) (*Outcome, error) {
	s := r.svc
	flush() // the prelude, or a reset line: the client sees it before the model is asked
	actx, acancel := context.WithCancelCause(ctx)
	defer acancel(nil)
	firstByte, idle := s.deadlines(model)
	wd := newWatchdog(firstByte, idle, func(started bool) {
		if started {
			acancel(errIdle)
		} else {
			acancel(errFirstByte)
		}
	})
	defer wd.stop()
	// Time spent writing to the client is the client's, not the model's: a client that reads
	// slowly must not make a healthy model look stalled.
	send = wd.pausing(send)
	flush = wd.pausingFlush(flush)
	alive := wd.alive
	timeout := func(err error) error {
		if cause := context.Cause(actx); cause == errFirstByte || cause == errIdle {
			return &ModelError{Class: "timeout", Retryable: true, Err: cause}
		}
		return err
	}

	r.usage, r.finish, r.size, r.reply, r.replyCut, r.contextCut = nil, "", 0, r.reply[:0], false, false
	r.opened, r.badUsage = false, false
	asked := r.askModel()
	st, err := model.Stream(actx, req, StreamHooks{Activity: alive, Wait: flush})
	r.waitedModel(asked, false)
	if err != nil {
		return nil, timeout(err)
	}
	r.opened = true
	defer st.Close()
	wn, ok := st.(WaitNotifier)
	hold := ok && wn.NotifiesWait()
	var deltas deltaBuffer
	// In enforce mode the attempt's lines pass the output check on their way out.
	emit := send
	var filter *outputFilter
	if s.safety.Enforcing() {
		filter = newOutputFilter(s.safety)
		emit = func(e Event) { filter.emit(e, send) }
	}
	unsafe := func() bool {
		if filter == nil || !filter.hit.Crisis {
			return false
		}
		r.records = append(r.records, r.safetyRecords(safety.StageOutput,
			[]safety.Check{{Classifier: safety.BuiltinName, Verdict: filter.hit}}, safety.ActionRetracted)...)
		return true
	}
	collect := func(e Event) { deltas.add(e, emit) }
	limit := s.outputLimit(r.contract)
	for {
		waiting := s.now()
		f, err := st.Next()
		r.waitedModel(waiting, err == nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, timeout(err)
		}
		alive()
		if f.Usage != nil {
			// A report is the stream's total so far (OpenAI's one last chunk, or vLLM's running
			// totals on every chunk), so the last one is the attempt's usage.
			u := *f.Usage
			r.usage = &u
		}
		if f.FinishReason != "" {
			r.finish = f.FinishReason
		}
		r.badUsage = r.badUsage || f.BadUsage
		if f.Content == "" && f.ToolArgs == "" && f.ToolCallID == "" {
			continue
		}
		// The bound is checked before the fragment is fed, so no byte past it is kept or
		// relayed, and returning closes the stream: nothing more is read. A tool call's id and
		// name count too: a contract keeps them, and an endpoint could open calls without end.
		if r.size += len(f.Content) + len(f.ToolArgs) + len(f.ToolCallID) + len(f.ToolName); r.size > limit {
			return nil, outputTooLong(limit)
		}
		r.keepReply(f.Content)
		r.keepReply(f.ToolArgs)
		err = r.turn.Feed(f, collect)
		deltas.flush(emit)
		if unsafe() {
			return nil, errUnsafeOutput
		}
		if !hold {
			flush()
		}
		if err != nil {
			return nil, err
		}
	}
	wd.stop()
	if filter != nil && !filter.flush(send) && unsafe() {
		return nil, errUnsafeOutput
	}
	out, err := r.turn.Finish()
	if err != nil && r.finish == FinishLength && isInvalidOutput(err) {
		// Output cut at the endpoint's token cap is unusable because it is cut, whatever the
		// contract found wrong with its remains (typically an unexpected end of JSON): the
		// model is told to be shorter rather than to mend a syntax error it did not make.
		// A cut well short of the cap came from the context window, which the prompt filled.
		r.contextCut = req.MaxTokens > 0 && r.replyTokens() < req.MaxTokens/2
		return nil, Wrap(err, KindStream, CodeValidationFailed, cutOff)
	}
	return out, err
}

// replyTokens returns the tokens of the attempt's reply: the endpoint's count when it reported
// one, otherwise one per 4 bytes, the estimate the gateway uses wherever it has no count.
func (r *TurnRun) replyTokens() int {
	if r.usage != nil && r.usage.CompletionTokens > 0 {
		return r.usage.CompletionTokens
	}
	return (r.size + 3) / 4
}

// fit returns the messages of req for an attempt: the conversation squeezed to level (see
// squeeze), and the corrective messages of fix and the failed reply when there is a fix. When
// the endpoint's context window is known (window > 0) and the request would not fit it (its
// messages at one token per 4 bytes, the estimate the gateway uses wherever it has no count,
// and the completion cap), the failed reply is left out first, then the conversation is
// squeezed further, up to maxSqueezes; what still does not fit is sent, and the endpoint's
// refusal is retried as any other.
func fit(req ModelRequest, level int, failed, fix string, window int) []Message {
	base := req.Messages
	for {
		msgs := base
		if level > 0 {
			msgs = squeeze(base, level)
		}
		if fix != "" {
			msgs = append(slices.Clip(msgs), correctiveMessages(failed, fix)...)
		}
		if window <= 0 || promptTokens(msgs)+req.MaxTokens <= window {
			return msgs
		}
		switch {
		case failed != "":
			failed = ""
		case level < maxSqueezes:
			level++
		default:
			return msgs
		}
	}
}

// promptTokens estimates the tokens of msgs at one per 4 bytes of text.
func promptTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += messageBytes(m)
	}
	return (n + 3) / 4
}

// maxSqueezes bounds the attempts of a turn that sends less of its conversation because the
// endpoint's context window was full: the first sends the newer half of the history, the
// second none of it.
const maxSqueezes = 2

// squeeze returns msgs with less of the conversation before the turn's own message (the last
// user message): at level 1 the older half of it is dropped, at level 2 all of it. The
// leading system messages stay, and a cut falls only before a user message, so that a tool
// call is never separated from its result.
func squeeze(msgs []Message, level int) []Message {
	head := 0
	for head < len(msgs) && msgs[head].Role == RoleSystem {
		head++
	}
	last := -1
	for i := len(msgs) - 1; i >= head; i-- {
		if msgs[i].Role == RoleUser {
			last = i
			break
		}
	}
	if last <= head {
		return msgs
	}
	cut := last
	if level < 2 {
		// The user message nearest the middle of the conversation: the first after it, or,
		// when a long exchange of tool calls follows the middle, the last before it.
		mid := head + (last-head+1)/2
		for i := mid; i < last; i++ {
			if msgs[i].Role == RoleUser {
				cut = i
				break
			}
		}
		for i := mid - 1; cut == last && i > head; i-- {
			if msgs[i].Role == RoleUser {
				cut = i
			}
		}
	}
	return append(slices.Clip(msgs[:head]), msgs[cut:]...)
}

// FinishLength is the finish reason of a completion the endpoint cut at its token cap.
const FinishLength = "length"

// cutOff is the problem of a reply cut at the token cap, as the corrective retry tells it.
const cutOff = "your answer was cut off: be shorter"

// maxReplyEcho bounds how much of a failed reply the corrective retry shows the model: enough
// to recognise what it wrote (and where it went wrong, for a short reply), while a reply that
// ran to the token cap does not double the next request.
const maxReplyEcho = 4 << 10

// keepReply adds text to the attempt's reply, up to maxReplyEcho bytes.
func (r *TurnRun) keepReply(text string) {
	n := min(maxReplyEcho-len(r.reply), len(text))
	r.reply = append(r.reply, text[:n]...)
	r.replyCut = r.replyCut || n < len(text)
}

// failedReply returns the attempt's reply as the corrective retry shows it: valid UTF-8 (the
// cut may have split a character), marked when it was cut.
func (r *TurnRun) failedReply() string {
	s := strings.ToValidUTF8(string(r.reply), "")
	if r.replyCut {
		s += " [… cut]"
	}
	return s
}

// correctiveMessages are what the corrective retry appends to the request: the failed reply as
// the model's own (assistant) message, cut to maxReplyEcho bytes, and the correction as the
// user's answer to it, so that "your previous reply" names a message the model can see and the
// conversation alternates as chat templates expect. A tool call's arguments are shown as the
// message's text rather than as a call: a call in a request needs a tool message after it, and
// some servers (llama.cpp among them) parse its arguments, which a failed reply's may not be.
// An empty reply shows nothing (an empty assistant message is refused by some endpoints), and
// its correction says that it was empty.
func correctiveMessages(failed, fix string) []Message {
	if strings.TrimSpace(failed) == "" {
		return []Message{{Role: RoleUser, Content: fix}}
	}
	return []Message{{Role: RoleAssistant, Content: failed}, {Role: RoleUser, Content: fix}}
}

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

// backoff returns the wait before retry n (1-based): exponential with full jitter, but never
// shorter than the endpoint's Retry-After advice (itself capped).
func (s *Service) backoff(n int, retryAfter time.Duration) time.Duration {
	d := s.opts.BackoffBase << (n - 1)
	if d > s.opts.BackoffMax || d <= 0 {
		d = s.opts.BackoffMax
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > 0 {
		retryAfter = min(retryAfter, s.opts.RetryAfterCap)
		d = max(d, retryAfter)
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// outputLimit returns the bound on one attempt's raw output for contract.
func (s *Service) outputLimit(contract string) int {
	if n := s.opts.ContractOutputBytes[contract]; n > 0 {
		return n
	}
	return s.opts.MaxOutputBytes
}

// outputTooLong is the error of an attempt whose output passed limit bytes: unusable output,
// like output that does not parse, so it gets the corrective retry and then the fallback or the
// error line.
func outputTooLong(limit int) error {
	return Errorf(KindStream, CodeValidationFailed, "the reply is longer than the limit of %d bytes; keep it short", limit)
}

// isInvalidOutput reports whether err says the model's output was unusable (rather than that the
// call failed), which is worth one retry with the problem fed back.
func isInvalidOutput(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Code == CodeValidationFailed || e.Code == CodeEmptyResponse)
}

func resetReason(err error) string {
	var me *ModelError
	switch {
	case isInvalidOutput(err):
		return "invalid_output"
	case errors.As(err, &me) && me.Class == "timeout":
		return "stalled"
	default:
		return "stream_interrupted"
	}
}

// unusableAnswer is the message of the error line of a turn whose output stayed unusable after
// the corrective retry.
const unusableAnswer = "the model's answer could not be used, even after a retry"

func correction(err error) string {
	return "Your previous reply could not be used (" + AsError(err).Message + "). " +
		"Reply again, following the required output format exactly."
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

// appendHistory returns old+add trimmed to the last limit messages and to at most maxBytes of
// message text. The cut only falls before a user message, so an assistant tool call is never
// separated from its tool result.
func appendHistory(old, add []Message, limit, maxBytes int) []Message {
	all := make([]Message, 0, len(old)+len(add))
	all = append(append(all, old...), add...)
	cut := max(len(all)-limit, 0)
	size := 0
	for i := cut; i < len(all); i++ {
		size += messageBytes(all[i])
	}
	if cut == 0 && size <= maxBytes {
		return all
	}
	for cut < len(all) && (size > maxBytes || all[cut].Role != RoleUser) {
		size -= messageBytes(all[cut])
		cut++
	}
	return all[cut:]
}

// messageBytes is what a message adds to a session's size: its text and tool-call arguments.
func messageBytes(m Message) int {
	n := len(m.Content)
	for _, c := range m.ToolCalls {
		n += len(c.Arguments)
	}
	return n
}

// deltaBuffer joins the deltas that one fragment yields, so a fragment becomes at most one delta
// line per text block however many pieces (escape sequences, runs) the contract found in it. A
// lone delta, the common case, passes through as it is.
type deltaBuffer struct {
	first  Event
	n      int
	joined []byte
}

// add buffers a delta, first sending what is buffered when e belongs elsewhere.
func (d *deltaBuffer) add(e Event, send func(Event)) {
	if e.Type != EventDelta {
		d.flush(send)
		send(e)
		return
	}
	if d.n > 0 && (e.Block != d.first.Block || e.BlockType != d.first.BlockType) {
		d.flush(send)
	}
	switch d.n {
	case 0:
		d.first = e
	case 1:
		d.joined = append(append(d.joined[:0], d.first.Text...), e.Text...)
	default:
		d.joined = append(d.joined, e.Text...)
	}
	d.n++
}

// flush sends the buffered delta, if any.
func (d *deltaBuffer) flush(send func(Event)) {
	if d.n > 1 {
		d.first.Text = string(d.joined)
	}
	if d.n > 0 {
		send(d.first)
	}
	d.n = 0
}
