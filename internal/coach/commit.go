package coach

import (
	"encoding/json"
	"errors"
)

// commit stores res as the session's next version, with the transcript entries of the turn:
// the learner's input, the cards sent before the result, and the result, which carries notice
// when the turn sent a safety line. hold, when set, starts a safety hold. The tokens of the
// turn's attempts are charged in the same commit.
func (st *stream) commit(res *Outcome, cards []json.RawMessage, notice *SafetyNotice, hold *SafetyHold) (*Session, error) {
	r, s, ctx := st.r, st.r.svc, st.ctx
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
	err := s.store.Commit(cctx, &next, r.token, CommitExtra{Transcript: transcript, Usage: r.charge(st.rep.Spent)})
	endSpan(commitSpan, err)
	if errors.Is(err, ErrConflict) && s.erasedSince(ctx, r.sess) {
		// The session is gone with its learner, which is what the client is told.
		err = ErrSessionDeleted
	}
	if err != nil {
		return nil, err
	}
	st.committed = true
	return &next, nil
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
