package coachtest

import (
	"context"
	"slices"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

var (
	_ coach.LearnerStore = (*MemStore)(nil)
	_ coach.SafetyAudit  = (*MemStore)(nil)
	_ coach.LearnerAudit = (*MemStore)(nil)
)

// Audit keeps records, as the tenant's safety audit.
func (m *MemStore) Audit(_ context.Context, records []safety.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, records...)
	return nil
}

// LearnerSessions returns the ids of the sessions of learner of tenant, sorted.
func (m *MemStore) LearnerSessions(_ context.Context, tenant, learner string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, st := range m.sessions {
		if st.sess.Tenant == tenant && st.sess.Learner == learner {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// LearnerSafetyEvents calls each with the audit records of learner of tenant, oldest first.
func (m *MemStore) LearnerSafetyEvents(_ context.Context, tenant, learner string, each func(safety.Record) error) error {
	m.mu.Lock()
	var out []safety.Record
	for _, r := range m.records {
		if r.Tenant == tenant && r.Learner.Ref == learner {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	for _, r := range out {
		if err := each(r); err != nil {
			return err
		}
	}
	return nil
}

// EraseLearnerSafetyEvents deletes the audit records of learner of tenant.
func (m *MemStore) EraseLearnerSafetyEvents(_ context.Context, tenant, learner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = slices.DeleteFunc(m.records, func(r safety.Record) bool { return r.Tenant == tenant && r.Learner.Ref == learner })
	return nil
}

// EraseLearner deletes the sessions of learner of tenant with their locks and transcripts.
func (m *MemStore) EraseLearner(_ context.Context, tenant, learner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, st := range m.sessions {
		if st.sess.Tenant == tenant && st.sess.Learner == learner {
			delete(m.sessions, id)
			delete(m.locks, id)
			delete(m.transcripts, id)
		}
	}
	return nil
}
