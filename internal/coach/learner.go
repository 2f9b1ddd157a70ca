package coach

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/coachgw/coachgw/internal/safety"
)

// LearnerStore is implemented by a Store that indexes sessions by their learner reference
// (Session.Learner), for the data rights of wire contract v1.3: an operator's export and
// erasure of everything the gateway keeps of one learner. A learner is always a learner of one
// tenant: the same reference in two tenants names two learners.
type LearnerStore interface {
	// LearnerSessions returns the ids of the sessions of learner of tenant. Some may have
	// expired since they were listed, or (in a damaged index) not be the learner's; the caller
	// skips what Get does not find as the learner's.
	LearnerSessions(ctx context.Context, tenant, learner string) ([]string, error)
	// EraseLearner deletes every session of learner of tenant with everything kept with it
	// (transcript, turn logs) and the index itself. Erasing a learner with nothing left is not
	// an error.
	EraseLearner(ctx context.Context, tenant, learner string) error
}

// LearnerTombstones is implemented by a Store that remembers erasures (Service.EraseLearner),
// so that what was running when a learner was erased writes nothing naming it afterwards: a
// turn's commit, its audit records. A tombstone need only outlive what was running at the
// erasure; a session created after it is a new one, and its writes are not refused.
type LearnerTombstones interface {
	// MarkErased records that learner of tenant was erased at at, for ttl.
	MarkErased(ctx context.Context, tenant, learner string, at time.Time, ttl time.Duration) error
	// ErasedAt returns when learner of tenant was last erased, and false when no tombstone of
	// it is kept.
	ErasedAt(ctx context.Context, tenant, learner string) (time.Time, bool, error)
}

// LearnerAudit is implemented by a safety audit that can find and erase the records of one
// learner (Deps.LearnerAudit).
type LearnerAudit interface {
	// LearnerSafetyEvents returns the audit records of learner of tenant, oldest first.
	LearnerSafetyEvents(ctx context.Context, tenant, learner string) ([]safety.Record, error)
	// EraseLearnerSafetyEvents deletes the audit records of learner of tenant, leaving nothing
	// of them in the store; erasing none is not an error.
	EraseLearnerSafetyEvents(ctx context.Context, tenant, learner string) error
}

// LearnerExport is everything the gateway keeps of one learner (GET /v1/learners/{ref}/export).
type LearnerExport struct {
	Learner string `json:"learner"`
	// Sessions are the learner's sessions, oldest first, each with its whole transcript.
	Sessions []LearnerSession `json:"sessions"`
	// SafetyEvents are the safety audit records of the learner's turns, oldest first.
	SafetyEvents []safety.Record `json:"safetyEvents"`
}

// LearnerSession is one session of a LearnerExport.
type LearnerSession struct {
	Session *Session `json:"session"`
	// Transcript is the session's whole transcript, oldest entry first.
	Transcript []TranscriptEntry `json:"transcript"`
}

// learnerStore returns the store's learner index, or an error when the store keeps none.
func (s *Service) learnerStore(learner string) (LearnerStore, error) {
	if !ValidLearner(learner) {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "learner must be 1 to 128 printable ASCII characters without spaces or '/'")
	}
	ls, ok := s.store.(LearnerStore)
	if !ok {
		return nil, Errorf(KindInternal, CodeInternal, "the session store keeps no learner index")
	}
	return ls, nil
}

// ExportLearner returns everything kept of learner of tenant: its sessions (state included),
// their whole transcripts, and its safety audit records. A learner with nothing kept has an
// empty export, not an error: the gateway does not tell which references it has seen.
func (s *Service) ExportLearner(ctx context.Context, tenant, learner string) (*LearnerExport, error) {
	ls, err := s.learnerStore(learner)
	if err != nil {
		return nil, err
	}
	ids, err := ls.LearnerSessions(ctx, tenant, learner)
	if err != nil {
		return nil, err
	}
	out := &LearnerExport{Learner: learner, Sessions: []LearnerSession{}, SafetyEvents: []safety.Record{}}
	for _, id := range ids {
		if !ValidID(id) {
			continue
		}
		sess, err := s.store.Get(ctx, tenant, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if sess.Learner != learner {
			continue
		}
		entries, err := s.wholeTranscript(ctx, tenant, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Sessions = append(out.Sessions, LearnerSession{Session: sess, Transcript: entries})
	}
	slices.SortStableFunc(out.Sessions, func(a, b LearnerSession) int { return a.Session.CreatedAt.Compare(b.Session.CreatedAt) })
	if s.learnerAudit != nil {
		events, err := s.learnerAudit.LearnerSafetyEvents(ctx, tenant, learner)
		if err != nil {
			return nil, err
		}
		if events != nil {
			out.SafetyEvents = events
		}
	}
	return out, nil
}

// wholeTranscript reads every page of the transcript of session id of tenant, oldest first.
func (s *Service) wholeTranscript(ctx context.Context, tenant, id string) ([]TranscriptEntry, error) {
	var entries []TranscriptEntry
	var before int64
	for {
		page, err := s.store.Transcript(ctx, tenant, id, before, MaxTranscriptPage)
		if err != nil {
			return nil, err
		}
		// Pages come newest first; a store's transcript is bounded (a few pages at most).
		entries = append(append([]TranscriptEntry{}, page.Entries...), entries...)
		// Next only ever goes down; one that does not would page for ever.
		if page.Next == 0 || before != 0 && page.Next >= before {
			return entries, nil
		}
		before = page.Next
	}
}

// EraseLearner deletes everything kept of learner of tenant: its safety audit records, then its
// sessions (see LearnerStore.EraseLearner). It is idempotent: erasing again, or erasing a
// learner never seen, succeeds; an erasure that failed half-way is finished by the next.
//
// The tombstone goes first: a turn running on one of the learner's sessions checks it after its
// audit records are written, so either the erasure below finds them, or the turn sees the
// tombstone and erases them itself (see auditTurn).
func (s *Service) EraseLearner(ctx context.Context, tenant, learner string) error {
	ls, err := s.learnerStore(learner)
	if err != nil {
		return err
	}
	if ts, ok := s.store.(LearnerTombstones); ok {
		if err := ts.MarkErased(ctx, tenant, learner, s.now().UTC(), s.tombstoneTTL()); err != nil {
			return err
		}
	}
	if s.learnerAudit != nil {
		if err := s.learnerAudit.EraseLearnerSafetyEvents(ctx, tenant, learner); err != nil {
			return err
		}
	}
	return ls.EraseLearner(ctx, tenant, learner)
}

// auditTimeout bounds the write of one turn's audit records, off the client's path.
const auditTimeout = 5 * time.Second

// tombstoneTTL is how long an erasure is remembered: longer than any turn running at the
// erasure may take to end and write its audit records, with a minute to spare for the clocks of
// the instances.
func (s *Service) tombstoneTTL() time.Duration {
	return s.opts.TurnTimeout + 2*auditTimeout + time.Minute
}

// erasedSince reports whether the learner of sess was erased after sess was created: then
// nothing of sess may be written. A store that keeps no tombstones, or one that cannot be read,
// reports false (the erasure's own deletes still ran).
func (s *Service) erasedSince(ctx context.Context, sess *Session) bool {
	ts, ok := s.store.(LearnerTombstones)
	if !ok || sess.Learner == "" {
		return false
	}
	at, ok, err := ts.ErasedAt(ctx, sess.Tenant, sess.Learner)
	return err == nil && ok && !at.Before(sess.CreatedAt)
}
