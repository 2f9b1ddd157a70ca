package coachtest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// MemStore is an in-memory coach.Store with the rules of internal/redisstore: a session of
// another tenant is coach.ErrNotFound everywhere (Delete leaves it alone), a held lock is
// coach.ErrBusy, and Commit writes only while the lock holds its token and the stored version is
// one less than the new one, else coach.ErrConflict. Sessions are copied in and out, as a store
// that serializes them would, so a test cannot change a stored session behind the store's back.
// It is safe for concurrent use.
type MemStore struct {
	mu       sync.Mutex
	sessions map[string]stored
	locks    map[string]string
	asked    []string
	// transcripts holds each session's transcript, whose entries are numbered from 1.
	transcripts map[string][]coach.TranscriptEntry
	// records are the safety audit records written with Audit, oldest first.
	records []safety.Record
}

// stored is a session with the token of the Commit that wrote it, which lets a repeated Commit
// succeed as the Redis store's does.
type stored struct {
	sess   coach.Session
	commit string
}

var _ coach.Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{sessions: map[string]stored{}, locks: map[string]string{}, transcripts: map[string][]coach.TranscriptEntry{}}
}

// Asked returns the session ids the store was asked about, in order, by every method that takes
// one: a test can prove that an id never reached the store.
func (m *MemStore) Asked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.asked)
}

// Locked reports whether session id is locked.
func (m *MemStore) Locked(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.locks[id]
	return ok
}

// Session returns a copy of the stored session id, whatever its tenant, without counting as a
// question the store was asked.
func (m *MemStore) Session(id string) (coach.Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.sessions[id]
	return clone(st.sess), ok
}

// Create stores a new session. An id that is already taken is an error.
func (m *MemStore) Create(_ context.Context, s *coach.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, s.ID)
	if _, ok := m.sessions[s.ID]; ok {
		return coach.Errorf(coach.KindInternal, coach.CodeInternal, "session id %s is already taken", s.ID)
	}
	m.sessions[s.ID] = stored{sess: clone(*s)}
	return nil
}

// Get returns the session id of tenant, or coach.ErrNotFound.
func (m *MemStore) Get(_ context.Context, tenant, id string) (*coach.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, id)
	st, ok := m.sessions[id]
	if !ok || st.sess.Tenant != tenant {
		return nil, coach.ErrNotFound
	}
	s := clone(st.sess)
	return &s, nil
}

// Delete removes the session id of tenant and its lock; a missing session, or one of another
// tenant, is left alone without error.
func (m *MemStore) Delete(_ context.Context, tenant, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, id)
	if st, ok := m.sessions[id]; ok && st.sess.Tenant == tenant {
		delete(m.sessions, id)
		delete(m.locks, id)
		delete(m.transcripts, id)
	}
	return nil
}

// Claim locks the session id of tenant and returns it with the lock's token. The tenant is
// checked before the lock, so a claim of another tenant's busy session is still
// coach.ErrNotFound. The lock never expires: ttl is ignored.
func (m *MemStore) Claim(_ context.Context, tenant, id string, _ time.Duration) (*coach.Session, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, id)
	st, ok := m.sessions[id]
	if !ok || st.sess.Tenant != tenant {
		return nil, "", coach.ErrNotFound
	}
	if _, held := m.locks[id]; held {
		return nil, "", coach.ErrBusy
	}
	token := coach.NewID()
	m.locks[id] = token
	s := clone(st.sess)
	return &s, token, nil
}

// Commit stores s, appends extra's transcript entries (numbering them) and releases the lock
// held with token, or returns coach.ErrConflict and writes nothing when the lock is not token's (released, taken over, or the session deleted) or the
// stored session is not s's tenant at s.Version-1. Committing the same token and version again
// after a success succeeds without writing again.
func (m *MemStore) Commit(_ context.Context, s *coach.Session, token string, extra coach.CommitExtra) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, s.ID)
	cur, ok := m.sessions[s.ID]
	if held, locked := m.locks[s.ID]; !locked || held != token {
		if ok && cur.commit == token && cur.sess.Tenant == s.Tenant && cur.sess.Version == s.Version {
			return nil
		}
		return coach.ErrConflict
	}
	if !ok || cur.sess.Tenant != s.Tenant || cur.sess.Version != s.Version-1 {
		return coach.ErrConflict
	}
	m.sessions[s.ID] = stored{sess: clone(*s), commit: token}
	delete(m.locks, s.ID)
	for _, e := range extra.Transcript {
		e.Seq = int64(len(m.transcripts[s.ID]) + 1)
		m.transcripts[s.ID] = append(m.transcripts[s.ID], e)
	}
	return nil
}

// Transcript returns a page of the transcript of session id of tenant (see coach.Store), or
// coach.ErrNotFound.
func (m *MemStore) Transcript(_ context.Context, tenant, id string, before int64, limit int) (coach.TranscriptPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, id)
	if st, ok := m.sessions[id]; !ok || st.sess.Tenant != tenant {
		return coach.TranscriptPage{}, coach.ErrNotFound
	}
	return coach.PageOf(m.transcripts[id], before, limit), nil
}

// Renew reports whether the lock on session id is still held with token: coach.ErrConflict when
// it is not. The lock never expires, so there is nothing to extend.
func (m *MemStore) Renew(_ context.Context, id, token string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, id)
	if held, locked := m.locks[id]; !locked || held != token {
		return coach.ErrConflict
	}
	return nil
}

// Release drops the lock on session id if it is held with token; otherwise it does nothing.
func (m *MemStore) Release(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, id)
	if held, locked := m.locks[id]; locked && held == token {
		delete(m.locks, id)
	}
	return nil
}

// Ping reports that the store answers.
func (m *MemStore) Ping(context.Context) error { return nil }

// clone returns s sharing no memory with the original.
func clone(s coach.Session) coach.Session {
	s.State = slices.Clone(s.State)
	s.History = slices.Clone(s.History)
	for i := range s.History {
		s.History[i].ToolCalls = slices.Clone(s.History[i].ToolCalls)
	}
	return s
}
