package coach

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/coachgw/coachgw/internal/safety"
)

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
	st, err := model.Stream(actx, req, StreamHooks{Activity: alive, Wait: flush})
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
		f, err := st.Next()
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
