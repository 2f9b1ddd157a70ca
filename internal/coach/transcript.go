package coach

import (
	"encoding/json"
	"time"
)

// Roles of a TranscriptEntry.
const (
	TranscriptLearner = "learner"
	TranscriptCoach   = "coach"
)

// TranscriptEntry is one entry of a session's transcript: the conversation as the learner saw
// it, which a client reads back to restore its view. It is kept apart from the session's
// History, which is what the model is shown (system prompts, tool calls, corrections) and is
// trimmed by other rules.
//
// A learner entry carries Input, the turn's body as the client sent it ({"message":…},
// {"selected":…}, {"form":…}, {"continue":true}) or a proposal decision ({"action":…}). A coach
// entry carries either Result, the result line's result, with Fallback set, or Card, a card sent
// before the result (an injected level_up card).
//
// A coach entry of a turn that sent a safety line also carries Safety, that line's notice (the
// crisis resources as the learner was shown them), so that a client restoring the conversation
// shows them again without asking anything else; it goes on the entry of the turn's result.
//
// Turn is the id of the turn that wrote the entry (the learner's input and the coach's answer
// of one turn share it; it is the turn's X-Coach-Turn), so that a client restoring the
// conversation can tell the answer it reads back from the same turn replayed by a resume. A
// proposal decision, and an entry stored before turns had ids, have none.
type TranscriptEntry struct {
	// Seq numbers the session's entries from 1 up, without gaps; the store assigns it when the
	// entry is committed, so a writer leaves it zero.
	Seq      int64           `json:"seq"`
	Turn     string          `json:"turn,omitempty"`
	At       time.Time       `json:"at"`
	Role     string          `json:"role"`
	Input    json.RawMessage `json:"input,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Fallback *bool           `json:"fallback,omitempty"`
	Card     json.RawMessage `json:"card,omitempty"`
	Safety   *SafetyNotice   `json:"safety,omitempty"`
}

// CommitExtra is what a Commit writes besides the session, in the same atomic step.
type CommitExtra struct {
	// Transcript is appended to the session's transcript, in order.
	Transcript []TranscriptEntry
	// Usage, when set, settles the turn's tokens in the tenant's counters of the day: its
	// reservation, if it made one, is dropped and Usage is charged, once per turn however
	// often the commit is sent. It is settled even when the commit itself conflicts: the
	// tokens were spent.
	Usage *TenantUsage
}

// TenantUsage is the tokens one turn used, for a tenant's daily counters.
type TenantUsage struct {
	// Turn identifies the turn: the store charges a turn once.
	Turn   string
	Tenant string
	// Day is when the turn started, as for its reservation; its UTC date picks the counters.
	Day time.Time
	Usage
	// Session is the turn's session; Largest the most tokens one attempt of the turn used,
	// which the store keeps as the session's largest for its later reservations.
	Session string
	Largest int
}

// TranscriptPage is one page of a transcript, oldest entry first.
type TranscriptPage struct {
	Entries []TranscriptEntry
	// Next is the Seq to ask for entries before, for the page of older entries; 0 when there are
	// none.
	Next int64
}

// Transcript limits of a page.
const (
	DefaultTranscriptPage = 50
	MaxTranscriptPage     = 200
)

// learnerEntry returns the learner's transcript entry for input at time at.
func learnerEntry(at time.Time, input json.RawMessage) TranscriptEntry {
	return TranscriptEntry{At: at, Role: TranscriptLearner, Input: input}
}

// coachEntries returns the transcript entries of the coach's side of a turn: the cards sent
// before the result, then the result.
func coachEntries(at time.Time, cards []json.RawMessage, result json.RawMessage, fallback bool) []TranscriptEntry {
	out := make([]TranscriptEntry, 0, len(cards)+1)
	for _, c := range cards {
		out = append(out, TranscriptEntry{At: at, Role: TranscriptCoach, Card: c})
	}
	return append(out, TranscriptEntry{At: at, Role: TranscriptCoach, Result: result, Fallback: &fallback})
}

// PageOf cuts the page that Store.Transcript returns out of a whole transcript held in memory,
// oldest entry first: up to limit entries whose Seq is below before (0: from the newest). It
// serves stores that keep the transcript in memory.
func PageOf(entries []TranscriptEntry, before int64, limit int) TranscriptPage {
	end := len(entries)
	if before > 0 {
		end = 0
		for end < len(entries) && entries[end].Seq < before {
			end++
		}
	}
	start := max(0, end-limit)
	page := TranscriptPage{Entries: append([]TranscriptEntry(nil), entries[start:end]...)}
	if start > 0 {
		page.Next = entries[start].Seq
	}
	return page
}
