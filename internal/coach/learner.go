package coach

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/coachgw/coachgw/internal/safety"
)

// CodeTooManySessions refuses a new session of a learner reference that has
// COACH_MAX_SESSIONS_PER_LEARNER sessions already (409): a learner's sessions, and so its
// export, are bounded whoever holds the key.
const CodeTooManySessions = "too_many_sessions"

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
	// LearnerSafetyEvents calls each with the audit records of learner of tenant, oldest
	// first, holding no more than a page of them at once; an error of each ends the walk and
	// is returned.
	LearnerSafetyEvents(ctx context.Context, tenant, learner string, each func(safety.Record) error) error
	// EraseLearnerSafetyEvents deletes the audit records of learner of tenant, leaving nothing
	// of them in the store; erasing none is not an error.
	EraseLearnerSafetyEvents(ctx context.Context, tenant, learner string) error
}

// Lines of a learner's export (GET /v1/learners/{ref}/export), in this order: one
// ExportLearnerLine, then per session (oldest first) one ExportSessionLine and its transcript's
// ExportTranscriptLines (oldest page first), then one ExportSafetyEventLine per audit record
// (oldest first).
const (
	ExportLearnerType     = "learner"
	ExportSessionType     = "session"
	ExportTranscriptType  = "transcript"
	ExportSafetyEventType = "safety_event"
)

// ExportLearnerLine opens an export: whose it is.
type ExportLearnerLine struct {
	Type    string `json:"type"`
	Learner string `json:"learner"`
}

// ExportSessionLine is one session of the learner, state included.
type ExportSessionLine struct {
	Type    string   `json:"type"`
	Session *Session `json:"session"`
}

// ExportTranscriptLine is one page of a session's transcript, oldest entry first.
type ExportTranscriptLine struct {
	Type    string            `json:"type"`
	Session string            `json:"sessionId"`
	Entries []TranscriptEntry `json:"entries"`
}

// ExportSafetyEventLine is one safety audit record of the learner's turns.
type ExportSafetyEventLine struct {
	Type  string        `json:"type"`
	Event safety.Record `json:"event"`
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

// ExportLearner passes emit everything kept of learner of tenant, a line at a time (see
// ExportLearnerLine): its sessions (state included), their whole transcripts a page at a time,
// and its safety audit records. It holds at most one session and one transcript page at once,
// besides the ids and creation times of the learner's sessions (tens of bytes each), whatever
// the learner's size. A learner with nothing kept has an
// export of its first line alone, not an error: the gateway does not tell which references it
// has seen. An error of emit ends the export and is returned.
func (s *Service) ExportLearner(ctx context.Context, tenant, learner string, emit func(line any) error) error {
	ls, err := s.learnerStore(learner)
	if err != nil {
		return err
	}
	ids, err := ls.LearnerSessions(ctx, tenant, learner)
	if err != nil {
		return err
	}
	// The sessions go out oldest first: a first pass keeps only their creation times.
	type listed struct {
		id      string
		created time.Time
	}
	var order []listed
	for _, id := range ids {
		if !ValidID(id) {
			continue
		}
		sess, err := s.store.Get(ctx, tenant, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if sess.Learner == learner {
			order = append(order, listed{id, sess.CreatedAt})
		}
	}
	slices.SortStableFunc(order, func(a, b listed) int { return a.created.Compare(b.created) })
	if err := emit(ExportLearnerLine{Type: ExportLearnerType, Learner: learner}); err != nil {
		return err
	}
	for _, l := range order {
		sess, err := s.store.Get(ctx, tenant, l.id)
		if errors.Is(err, ErrNotFound) {
			continue // gone since the first pass
		}
		if err != nil {
			return err
		}
		if sess.Learner != learner {
			continue
		}
		if err := emit(ExportSessionLine{Type: ExportSessionType, Session: sess}); err != nil {
			return err
		}
		if err := s.exportTranscript(ctx, tenant, l.id, emit); err != nil {
			return err
		}
	}
	if s.learnerAudit == nil {
		return nil
	}
	return s.learnerAudit.LearnerSafetyEvents(ctx, tenant, learner, func(r safety.Record) error {
		return emit(ExportSafetyEventLine{Type: ExportSafetyEventType, Event: r})
	})
}

// exportTranscript passes emit the transcript of session id of tenant, a page to a line, oldest
// page first. The store pages newest first, so a first pass keeps only the pages' cursors, the
// newest page's as the Seq after its last entry: entries committed after the first pass are not
// exported, and none before them is missed. A session that went in between ends its transcript
// early.
func (s *Service) exportTranscript(ctx context.Context, tenant, id string, emit func(any) error) error {
	var cursors []int64
	for before := int64(0); ; {
		page, err := s.store.Transcript(ctx, tenant, id, before, MaxTranscriptPage)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if before == 0 {
			if len(page.Entries) == 0 {
				return nil
			}
			cursors = append(cursors, page.Entries[len(page.Entries)-1].Seq+1)
		}
		// Next only ever goes down; one that does not would page for ever.
		if page.Next == 0 || before != 0 && page.Next >= before {
			break
		}
		before = page.Next
		cursors = append(cursors, before)
	}
	for _, before := range slices.Backward(cursors) {
		page, err := s.store.Transcript(ctx, tenant, id, before, MaxTranscriptPage)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(page.Entries) == 0 {
			continue
		}
		if err := emit(ExportTranscriptLine{Type: ExportTranscriptType, Session: id, Entries: page.Entries}); err != nil {
			return err
		}
	}
	return nil
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

// ErasureMemory is the least time an erasure is remembered: longer than a crisis escalation
// naming the learner may wait in the escalation webhook's overflow for its receiver (a week),
// which checks the tombstone before each attempt.
const ErasureMemory = 8 * 24 * time.Hour

// tombstoneTTL is how long an erasure is remembered: longer than any turn running at the
// erasure may take to end and write its audit records, with a minute to spare for the clocks of
// the instances, and at least ErasureMemory.
func (s *Service) tombstoneTTL() time.Duration {
	return max(ErasureMemory, s.opts.TurnTimeout+2*auditTimeout+time.Minute)
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
