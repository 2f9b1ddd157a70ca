package coach

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coachgw/coachgw/internal/pii"
	"github.com/coachgw/coachgw/internal/safety"
)

// This file is the turn pipeline's side of learner safety (wire contract v1.3). The checks
// themselves are internal/safety's; here they are placed in a turn:
//
//   - Input before output. The learner's text is checked while the model is already being
//     asked, so a safe turn pays at most the check's latency; every line of the turn (the
//     prelude too) waits in the input gate until the verdict is in. A crisis cancels the model
//     call, discards what waited, and answers with the safety line and the contract's
//     supportive answer (SafeReplier), then holds the session until an operator clears it.
//   - Output in windows. Model text passes through a safety.Window that releases it only once
//     checked; a hit stops the attempt (errUnsafeOutput), resets what went out, and the turn
//     is tried once more with a safety reminder, else ends with a gateway-written safe answer.
//     The whole answer is checked again (and by the classifiers beside the screen) before the
//     result.
//   - Observe mode runs the same checks and audits them, and changes nothing.

// errCrisis is the cause with which a turn's model call is cancelled when its learner input
// shows a crisis.
var errCrisis = errors.New("the learner's input shows a crisis")

// errUnsafeOutput ends an attempt whose output failed the safety check: the text is not stored
// and no more of it is released.
var errUnsafeOutput = Errorf(KindStream, "unsafe_output", "the model's answer failed the safety check")

// ResetUnsafeOutput is the reason of the reset line that retracts text that failed a later check.
const ResetUnsafeOutput = "unsafe_output"

// safetyReminder is added to the system prompt of the attempt that follows unsafe output.
const safetyReminder = "Safety rule, above every other instruction: the learner may be a minor and may be " +
	"vulnerable. Never describe, suggest or encourage any way to hurt oneself or end one's life, and never " +
	"give amounts, methods or places for it. If the learner seems at risk, answer kindly, say that help is " +
	"available, and do not continue the exercise."

// Outcomes of a Report that safety decided.
const (
	OutcomeCrisis = "crisis"
	OutcomeHeld   = "held"
)

// learnerText returns the text a learner wrote in a turn: the message, a selection and the
// string answers of a form, one per line.
func learnerText(in TurnInput) string {
	var parts []string
	if in.Message != nil {
		parts = append(parts, *in.Message)
	}
	if in.Selected != nil {
		parts = append(parts, *in.Selected)
	}
	if in.Form != nil {
		// Sorted: the same text, hence the same verdict, whatever the map's order.
		for _, k := range slices.Sorted(maps.Keys(in.Form.Values)) {
			var s string
			if json.Unmarshal(in.Form.Values[k], &s) == nil {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// inputGate holds a turn's lines until the verdict of the classifiers beside the screen is
// in. Its goroutine releases them the moment the verdict is clean, so a turn whose model is
// quiet (a stall, a long prompt) does not keep checked lines back until its next fragment;
// every send and flush of the turn goes through the gate's lock while it is closed, so the
// sink is never used by two goroutines at once.
type inputGate struct {
	done chan struct{}
	// checks and verdict are the checks' outcome, set before done closes (checks starts with
	// the screen's, made before the gate).
	checks  []safety.Check
	verdict safety.Verdict

	mu     sync.Mutex
	crisis bool // the verdict is a hit the turn acts on
	open   bool
	held   []Event
	send   func(Event)
	flush  func()
}

// startInputCheck runs check on in in its own goroutine, after the checks already made (prior).
// With cancelModel set (enforce mode),
// a hit cancels the model call with errCrisis, and a clean verdict releases the held lines
// through send and flush; without it (observe mode) the gate holds nothing.
func (r *TurnRun) startInputCheck(ctx context.Context, check func(context.Context, safety.Text) (safety.Verdict, []safety.Check),
	in safety.Text, prior []safety.Check, cancelModel context.CancelCauseFunc, send func(Event), flush func()) *inputGate {
	g := &inputGate{done: make(chan struct{}), checks: prior, send: send, flush: flush, open: cancelModel == nil}
	go func() {
		defer close(g.done)
		v, checks := check(ctx, in)
		// The verdict is check's, with the prior checks' hits: a judge's verdict replaces the
		// screen's decision, so the checks' verdicts are not merged again.
		for _, c := range g.checks {
			g.verdict = g.verdict.Merge(c.Verdict)
		}
		g.verdict = g.verdict.Merge(v)
		g.checks = append(g.checks, checks...)
		if cancelModel == nil {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if v.Crisis {
			g.crisis = true
			g.held = nil
			cancelModel(errCrisis)
			return
		}
		g.release()
		g.flush()
	}()
	return g
}

// pass sends e, or holds it while the verdict is not in; after a crisis nothing passes.
func (g *inputGate) pass(e Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.crisis:
	case !g.open:
		g.held = append(g.held, e)
	default:
		g.send(e)
	}
}

// flushing flushes the turn's sink under the gate's lock.
func (g *inputGate) flushing() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.flush()
	}
}

// wait blocks until the verdict is in (or ctx ends) and reports whether it is a crisis.
func (g *inputGate) wait(ctx context.Context) (crisis bool, err error) {
	select {
	case <-g.done:
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.crisis, nil
}

// release sends the held lines in order; g.mu is held.
func (g *inputGate) release() {
	g.open = true
	for _, e := range g.held {
		g.send(e)
	}
	g.held = nil
}

// outputFilter passes one attempt's lines through the output check: deltas go through a
// safety.Window per text block, so that only checked text is released.
type outputFilter struct {
	guard *safety.Guard
	win   *safety.Window
	block int
	btype string
	hit   safety.Verdict
}

func newOutputFilter(g *safety.Guard) *outputFilter {
	return &outputFilter{guard: g, block: -1}
}

// emit passes e on through send; it reports false once the output failed its check.
func (f *outputFilter) emit(e Event, send func(Event)) bool {
	if f.hit.Crisis {
		return false
	}
	if e.Type != EventDelta {
		if !f.flush(send) {
			return false
		}
		send(e)
		return true
	}
	if f.win != nil && (e.Block != f.block || e.BlockType != f.btype) {
		if !f.flush(send) {
			return false
		}
	}
	if f.win == nil {
		f.win, f.block, f.btype = f.guard.NewWindow(), e.Block, e.BlockType
	}
	out, v := f.win.Push(e.Text)
	if v.Crisis {
		f.hit = v
		return false
	}
	f.sendText(out, send)
	return true
}

// flush checks and releases what the current window holds.
func (f *outputFilter) flush(send func(Event)) bool {
	if f.hit.Crisis {
		return false
	}
	if f.win == nil {
		return true
	}
	out, v := f.win.Flush()
	if v.Crisis {
		f.hit = v
		return false
	}
	f.sendText(out, send)
	f.win = nil
	return true
}

func (f *outputFilter) sendText(text string, send func(Event)) {
	if text == "" {
		return
	}
	send(Event{Type: EventDelta, Text: text, Block: f.block, BlockType: f.btype})
}

// answerText returns the visible text of an outcome for the check of the whole answer: the
// guards' tail and every string of the result (the streamed text, a card's fields, a form's
// labels), so that text that reaches the learner other than as a delta is checked too.
func answerText(out *Outcome) string {
	var b strings.Builder
	b.WriteString(out.Tail)
	b.WriteByte('\n')
	var v any
	if json.Unmarshal(out.Result, &v) == nil {
		appendStrings(&b, v)
	}
	return b.String()
}

func appendStrings(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(x)
		b.WriteByte('\n')
	case []any:
		for _, e := range x {
			appendStrings(b, e)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			appendStrings(b, x[k])
		}
	}
}

// maskRequest masks personal data in the texts a model endpoint would see of the learner: the
// user messages, and the system messages, into which contracts put learner drafts. The
// messages are copied: the session's history keeps what the learner typed.
func maskRequest(req *ModelRequest) {
	msgs := make([]Message, len(req.Messages))
	copy(msgs, req.Messages)
	for i := range msgs {
		if msgs[i].Role == RoleUser || msgs[i].Role == RoleSystem {
			msgs[i].Content = pii.Mask(msgs[i].Content)
		}
	}
	req.Messages = msgs
}

// remind adds the safety reminder to a request's system prompt (the first message when it is
// one; otherwise a system message is put first), for the attempt after unsafe output. Chat
// templates of some servers refuse a system message anywhere but first.
func remind(req *ModelRequest) {
	msgs := make([]Message, 0, len(req.Messages)+1)
	if len(req.Messages) > 0 && req.Messages[0].Role == RoleSystem {
		first := req.Messages[0]
		first.Content += "\n\n" + safetyReminder
		msgs = append(append(msgs, first), req.Messages[1:]...)
	} else {
		msgs = append(append(msgs, Message{Role: RoleSystem, Content: safetyReminder}), req.Messages...)
	}
	req.Messages = msgs
}

// whom says whom a crisis verdict concerns, for what the turn does with it: someone the
// learner knows (safety.ConcernOther) only when every signal found is about someone else, so
// that a classifier beside the screen that finds the learner at risk is never outweighed by
// the screen's reading of the same text; otherwise the learner (safety.ConcernSelf).
func whom(v safety.Verdict) safety.Concern {
	if v.Concern == safety.ConcernSelf {
		return safety.ConcernSelf
	}
	for _, c := range v.Categories {
		if c != safety.CategoryConcernOther {
			return safety.ConcernSelf
		}
	}
	if v.Concern == safety.ConcernOther || v.Has(safety.CategoryConcernOther) {
		return safety.ConcernOther
	}
	return safety.ConcernSelf
}

// supportiveText is the visible text of a crisis turn's answer: it acknowledges, gives the
// resources, stays available, and asks nothing (never about method) and continues no exercise.
func supportiveText(lang string, v safety.Verdict, lr safety.LocaleResources) string {
	var b strings.Builder
	other := v.Crisis && whom(v) == safety.ConcernOther
	switch {
	case lang == "es" && other:
		b.WriteString("Gracias por contármelo. Preocuparte así por alguien dice mucho de ti, y no tienes que cargar con esto a solas. Vamos a dejar la lección por ahora. ")
	case lang == "es":
		b.WriteString("Gracias por contármelo. Lo que sientes importa, y mereces apoyo ahora mismo. Vamos a dejar la lección por ahora. ")
	case other:
		b.WriteString("Thank you for telling me. Worrying about someone like this shows how much you care, and you don't have to carry it alone. Let's set the lesson aside for now. ")
	default:
		b.WriteString("Thank you for telling me. What you're feeling matters, and you deserve support right now. Let's set the lesson aside for now. ")
	}
	b.WriteString(lr.Message)
	for _, res := range lr.Resources {
		b.WriteString("\n- ")
		b.WriteString(res.Name)
		var ways []string
		if res.Phone != "" {
			ways = append(ways, pick(lang, "call ", "llama al ")+res.Phone)
		}
		if res.Text != "" {
			ways = append(ways, pick(lang, "text ", "mensaje de texto: ")+res.Text)
		}
		if res.URL != "" {
			ways = append(ways, res.URL)
		}
		if len(ways) > 0 {
			b.WriteString(": ")
			b.WriteString(strings.Join(ways, ", "))
		}
	}
	b.WriteString("\n\n")
	b.WriteString(pick(lang,
		"I'm still here, and you can keep writing to me whenever you want.",
		"Sigo aquí, y puedes seguir escribiéndome cuando quieras."))
	return b.String()
}

// safeText is the visible text of the answer that replaces model output that failed the
// safety check twice.
func safeText(lang string) string {
	return pick(lang,
		"I can't help with that part. If you're going through something hard, you can tell me, and I'll point you to people who can help right away. Otherwise, let's get back to the lesson.",
		"No puedo ayudarte con eso. Si estás pasando por algo difícil, puedes contármelo y te indicaré quién puede ayudarte enseguida. Si no, volvamos a la lección.")
}

func pick(lang, en, es string) string {
	if lang == "es" {
		return es
	}
	return en
}

// safetyRecords turns the checks of one text into audit records.
func (r *TurnRun) safetyRecords(stage safety.Stage, checks []safety.Check, action safety.Action) []safety.Record {
	now := r.svc.now().UTC()
	out := make([]safety.Record, 0, len(checks))
	for _, c := range checks {
		a := action
		switch {
		case c.NotRun != "" && c.NotRun != safety.NotRunUnsupportedLanguage && r.svc.safety.Failure == safety.FailOpen:
			a = safety.ActionFailedOpen
		case !c.Verdict.Crisis && a != safety.ActionHeld:
			a = safety.ActionNone
		}
		out = append(out, safety.Record{
			Time: now, Tenant: r.sess.Tenant, Session: r.sess.ID, Learner: r.sess.learner(), Turn: r.id,
			Stage: stage, Classifier: c.Classifier, Ran: safety.Ran{NotRun: c.NotRun},
			Categories: auditCategories(c.Verdict), Severity: c.Verdict.Severity, Rules: c.Verdict.Rules, Lang: c.Lang,
			Action: a, Mode: r.svc.safety.Mode, LatencyMS: float64(c.Latency.Microseconds()) / 1000,
		})
	}
	return out
}

// auditCategories returns the categories an audit record shows for v: a verdict that found a
// topic of study and no crisis shows safety.CategoryTopic, whichever classifier gave it, so an
// operator sees what was let go and why.
func auditCategories(v safety.Verdict) []safety.Category {
	if v.Concern == safety.ConcernTopic && !v.Crisis && !v.Has(safety.CategoryTopic) {
		return append(slices.Clip(v.Categories), safety.CategoryTopic)
	}
	return v.Categories
}

// audit stores the records of a turn of sess off the client's path: the turn's answer is out by
// then. Records of a learner erased since sess was created are not written; ones written while
// the learner was being erased are erased again (see Service.EraseLearner).
func (s *Service) audit(sess *Session, records []safety.Record) {
	if s.auditor == nil || len(records) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
		defer cancel()
		if s.erasedSince(ctx, sess) {
			return
		}
		if s.auditor.Audit(ctx, records) != nil {
			s.obs.SafetyAuditFailed()
			return
		}
		if s.learnerAudit != nil && s.erasedSince(ctx, sess) {
			ectx, cancel := context.WithTimeout(context.Background(), auditTimeout)
			defer cancel()
			if s.learnerAudit.EraseLearnerSafetyEvents(ectx, sess.Tenant, sess.Learner) != nil {
				s.obs.SafetyAuditFailed()
			}
		}
	}()
}

// stateModule returns the module of a module session's state, for the escalation.
func stateModule(state json.RawMessage) string {
	var st struct {
		Module string `json:"module"`
	}
	_ = json.Unmarshal(state, &st)
	return st.Module
}

// inputRecords returns the audit records of the input check behind g, once it is done.
func (r *TurnRun) inputRecords(g *inputGate) []safety.Record {
	action := safety.ActionNone
	switch {
	case g.crisis:
		action = safety.ActionCrisis
	case g.verdict.Crisis:
		action = safety.ActionObserved
	}
	return r.safetyRecords(safety.StageInput, g.checks, action)
}

// checkAnswer checks the whole answer of an attempt before its result is sent: the screen
// again, now over the whole text, and the classifiers beside it. In enforce mode a hit is
// errUnsafeOutput.
func (r *TurnRun) checkAnswer(ctx context.Context, out *Outcome) error {
	g := r.svc.safety
	if !g.Enabled() || out == nil {
		return nil
	}
	v, checks := g.Check(ctx, safety.Text{Stage: safety.StageOutput, Locale: r.sess.Locale, Content: answerText(out)})
	action := safety.ActionNone
	if v.Crisis {
		action = safety.ActionObserved
		if g.Enforcing() {
			action = safety.ActionRetracted
		}
	}
	r.records = append(r.records, r.safetyRecords(safety.StageOutput, checks, action)...)
	if v.Crisis && g.Enforcing() {
		return errUnsafeOutput
	}
	return nil
}

// safeFallback is the outcome of a turn whose output failed the safety check twice: the
// contract's answer with the gateway's safe text, marked as a fallback.
func (r *TurnRun) safeFallback() (*Outcome, error) {
	sr, ok := r.turn.(SafeReplier)
	if !ok {
		return nil, errUnsafeOutput
	}
	out, err := sr.SafeReply(safeText(r.sess.Language()))
	if err != nil {
		return nil, err
	}
	out.Fallback = true
	out.Rules = append(out.Rules, "unsafe_output")
	return out, nil
}

// episode returns the escalation of the crisis episode id, found at since.
func (r *TurnRun) episode(id string, since time.Time, v safety.Verdict) *safety.Episode {
	ep := &safety.Episode{
		ID: id, Time: since, Tenant: r.sess.Tenant, Session: r.sess.ID, Learner: r.sess.learner(),
		Contract: r.contract, Module: stateModule(r.sess.State), Locale: r.sess.Locale,
		Severity: v.Severity, Categories: v.Categories,
	}
	if r.svc.escalateText {
		ep.Text = learnerText(r.in)
	}
	return ep
}

// auditTurn counts and stores the safety records of a finished turn.
func (s *Service) auditTurn(r *TurnRun) {
	for _, rec := range r.records {
		s.obs.SafetyChecked(r.contract, rec)
	}
	s.audit(r.sess, r.records)
}

// learner returns the learner an audit record or an escalation of s names.
func (s *Session) learner() safety.Learner {
	if s.Learner == "" {
		return safety.Learner{}
	}
	return safety.Learner{Ref: s.Learner, AssertedBy: s.LearnerAssertedBy}
}
