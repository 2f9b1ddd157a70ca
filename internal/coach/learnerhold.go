package coach

import (
	"context"
)

// LearnerHolds is implemented by a Store that keeps a safety hold per learner reference of a
// tenant besides the holds of sessions. A hold is the learner's, not the session's: a learner
// who starts a new session, or asks to delete the held one, must not leave the supportive
// answer behind. The engine sets the learner's hold when a
// crisis starts one in a session, copies it into every new session of the learner, and ends it
// with the operator's clear of a session of the same episode. A Store without it keeps holds
// per session only.
type LearnerHolds interface {
	// HoldLearner records h as the hold of learner of tenant, replacing any earlier one.
	HoldLearner(ctx context.Context, tenant, learner string, h SafetyHold) error
	// LearnerHold returns the hold of learner of tenant, or nil when there is none.
	LearnerHold(ctx context.Context, tenant, learner string) (*SafetyHold, error)
	// ClearLearnerHold ends the hold of learner of tenant when it belongs to episode; a hold
	// of a later episode, or none, is left as it is.
	ClearLearnerHold(ctx context.Context, tenant, learner, episode string) error
}

// learnerHolds returns the store's LearnerHolds when the session names a learner and holds
// are enforced, else nil.
func (s *Service) learnerHolds(learner string) LearnerHolds {
	if learner == "" || !s.safety.Enforcing() {
		return nil
	}
	lh, _ := s.store.(LearnerHolds)
	return lh
}
