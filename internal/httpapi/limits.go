package httpapi

import "github.com/coachgw/coachgw/internal/coach"

// limits returns the limits a session of contract accepts: the gateway's MaxMessageChars,
// lowered by the contract's own (coach.Limited) where it has any. They are what cleanTurn,
// cleanText and the contract enforce, so a client that counts against them never meets the
// 422 at its own limit. They are computed from configuration on the way out, never stored.
func (s *Server) limits(contract string) *coach.Limits {
	l := coach.Limits{MessageChars: s.deps.MaxMessageChars}
	c, ok := s.deps.Service.Contract(contract)
	if !ok {
		return &l
	}
	if own, ok := c.(coach.Limited); ok {
		o := own.Limits()
		if o.MessageChars > 0 {
			l.MessageChars = min(l.MessageChars, o.MessageChars)
		}
		if o.DraftChars > 0 {
			// A draft value is learner text too: cleanText bounds it by MaxMessageChars.
			l.DraftChars = min(s.deps.MaxMessageChars, o.DraftChars)
		}
	}
	return &l
}

// withLimits sets sess's limits and returns it, for a response that carries the session.
func (s *Server) withLimits(sess *coach.Session) *coach.Session {
	sess.Limits = s.limits(sess.Contract)
	return sess
}

// limitsSink passes a turn's events on to its Sink, adding limits to the session of the result
// line. Deltas pass through untouched.
type limitsSink struct {
	coach.Sink
	limits *coach.Limits
}

// Emit sets the limits of e's session, if it carries one, and emits e.
func (l limitsSink) Emit(e coach.Event) error {
	if e.Session != nil {
		e.Session.Limits = l.limits
	}
	return l.Sink.Emit(e)
}
