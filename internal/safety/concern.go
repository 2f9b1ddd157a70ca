package safety

// Concern says whom a flagged text is about, which decides what the turn does with it: the
// learner's own risk is crisis care and a hold, a real person the learner knows is a supportive
// answer and a concern-level escalation, and a topic of study (a character, a historical
// person, a debate motion, biology, a game, an idiom) is audited while the lesson goes on.
// The values are stable: they appear in the audit record, the webhook and the judge's rubric.
type Concern string

const (
	// ConcernNone is no signal at all; it is the zero value, so an empty Verdict is clean.
	ConcernNone Concern = ""
	// ConcernTopic is a subject of study or talk, not a person at risk.
	ConcernTopic Concern = "topic"
	// ConcernOther is a real person the learner knows (a friend, a sibling) at risk.
	ConcernOther Concern = "other"
	// ConcernSelf is the learner's own risk.
	ConcernSelf Concern = "self"
)

// rank orders concerns by how much care they call for, so that merging two verdicts keeps
// the weightier one.
func (c Concern) rank() int {
	switch c {
	case ConcernTopic:
		return 1
	case ConcernOther:
		return 2
	case ConcernSelf:
		return 3
	default:
		return 0
	}
}

// Valid reports whether c is one of the named concerns (ConcernNone included).
func (c Concern) Valid() bool { return c == ConcernNone || c.rank() > 0 }

// maxConcern returns the weightier of two concerns.
func maxConcern(a, b Concern) Concern {
	if b.rank() > a.rank() {
		return b
	}
	return a
}
