// Package storetest holds the coach.Store contract of redisstore.Store as a test suite, run by
// the tests of every Redis deployment the store supports: a single server and miniredis (package
// redisstore), a Redis Cluster and a Sentinel-watched master (package clustertest). It imports
// redisstore, so only external test packages (package redisstore_test, clustertest_test) may
// import it.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/redisstore"
)

// Fixture is one test's store on a server, under a key prefix of its own.
type Fixture struct {
	Store  *redisstore.Store
	Client redis.UniversalClient
	Prefix string
	// FastForward moves the server's clock by d when the server is a miniredis; nil for a real
	// server, whose locks the suite waits out by polling.
	FastForward func(d time.Duration)
}

// LongTTL is the lock TTL of claims that must not expire during a test.
const LongTTL = time.Minute

// DocKey and LockKey are the documented key layout (see package redisstore).
func (f *Fixture) DocKey(id string) string  { return f.Prefix + ":{" + id + "}:s" }
func (f *Fixture) LockKey(id string) string { return f.Prefix + ":{" + id + "}:lock" }

// LockHeld reports whether session id is locked, by looking at the lock key itself.
func (f *Fixture) LockHeld(t *testing.T, id string) bool {
	t.Helper()
	n, err := f.Client.Exists(context.Background(), f.LockKey(id)).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", f.LockKey(id), err)
	}
	return n == 1
}

// WaitLockExpired returns once the lock of id (taken with ttl) has expired: on miniredis by moving
// its clock, on a real server by polling for a bounded time.
func (f *Fixture) WaitLockExpired(t *testing.T, id string, ttl time.Duration) {
	t.Helper()
	if f.FastForward != nil {
		f.FastForward(ttl)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.LockHeld(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("lock of a claim with ttl %v still held after 5s", ttl)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// NewSession returns a new version-1 session of tenant.
func NewSession(tenant string) *coach.Session {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &coach.Session{
		ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1,
		State:     json.RawMessage(`{"step":"claim","draft":{}}`),
		CreatedAt: now, UpdatedAt: now, Tenant: tenant,
		History: []coach.Message{{Role: coach.RoleUser, Content: "Hello"}},
	}
}

// Create stores a new session of tenant.
func (f *Fixture) Create(t *testing.T, tenant string) *coach.Session {
	t.Helper()
	s := NewSession(tenant)
	if err := f.Store.Create(context.Background(), s); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return s
}

// Claim claims session id, failing t unless it gets the session and a token.
func (f *Fixture) Claim(t *testing.T, tenant, id string, ttl time.Duration) (*coach.Session, string) {
	t.Helper()
	s, token, err := f.Store.Claim(context.Background(), tenant, id, ttl)
	if err != nil {
		t.Fatalf("Claim %s: %v", id, err)
	}
	if token == "" {
		t.Fatal("Claim returned an empty token")
	}
	return s, token
}

// Get reads session id, failing t on an error.
func (f *Fixture) Get(t *testing.T, tenant, id string) *coach.Session {
	t.Helper()
	s, err := f.Store.Get(context.Background(), tenant, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return s
}

// Next returns the session a turn would commit after s, with state as its state and, as its
// history's new entry, the state again (which records what wrote it).
func Next(s *coach.Session, state string) *coach.Session {
	n := *s
	n.Version++
	n.State = json.RawMessage(state)
	n.UpdatedAt = s.UpdatedAt.Add(time.Second)
	n.History = append(slices.Clone(s.History), coach.Message{Role: coach.RoleAssistant, Content: state})
	return &n
}

// SameSession fails t unless got is want as the store keeps it.
func SameSession(t *testing.T, got, want *coach.Session) {
	t.Helper()
	if got.ID != want.ID || got.Contract != want.Contract || got.Locale != want.Locale ||
		got.Version != want.Version || got.Tenant != want.Tenant ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("session = %+v, want %+v", got, want)
	}
	if string(got.State) != string(want.State) {
		t.Errorf("state = %s, want %s", got.State, want.State)
	}
	if !slices.EqualFunc(got.History, want.History, func(a, b coach.Message) bool {
		return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls)
	}) {
		t.Errorf("history = %+v, want %+v", got.History, want.History)
	}
}

// WantErr fails t unless err is want.
func WantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}

// StoreContract runs the store's behaviour as every deployment must show it, whatever the Redis
// topology behind it, one subtest per case, each on a fixture of its own from newFixture.
func StoreContract(t *testing.T, newFixture func(t *testing.T) *Fixture) {
	for _, tc := range contract {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newFixture(t)) })
	}
}

var contract = []struct {
	name string
	run  func(t *testing.T, f *Fixture)
}{
	{"create get delete", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		SameSession(t, f.Get(t, "acme", s.ID), s)
		if err := f.Store.Delete(ctx, "acme", s.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		_, err := f.Store.Get(ctx, "acme", s.ID)
		WantErr(t, "Get after Delete", err, coach.ErrNotFound)
		if err := f.Store.Delete(ctx, "acme", s.ID); err != nil {
			t.Errorf("Delete of a missing session: %v, want nil", err)
		}
	}},
	{"document layout", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		_, _ = f.Claim(t, "acme", s.ID, LongTTL)
		raw, err := f.Client.Get(ctx, f.DocKey(s.ID)).Result()
		if err != nil {
			t.Fatalf("GET %s:{id}:s: %v", f.Prefix, err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatalf("document is not JSON: %v", err)
		}
		for _, k := range []string{"id", "contract", "locale", "version", "state", "history", "tenant", "createdAt", "updatedAt"} {
			if _, ok := doc[k]; !ok {
				t.Errorf("document lacks %q: %s", k, raw)
			}
		}
		if n := f.Client.Exists(ctx, f.LockKey(s.ID)).Val(); n != 1 {
			t.Errorf("EXISTS %s:{id}:lock = %d, want 1", f.Prefix, n)
		}
		if ttl := f.Client.PTTL(ctx, f.DocKey(s.ID)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("document PTTL = %v, want within (0, 1h]", ttl)
		}
	}},
	{"create of a taken id", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		if err := f.Store.Create(ctx, s); err != nil {
			t.Errorf("Create resent with the same document: %v, want nil", err)
		}
		other := NewSession("acme")
		other.ID = s.ID
		other.Locale = "es"
		err := f.Store.Create(ctx, other)
		var ce *coach.Error
		if !errors.As(err, &ce) || ce.Kind != coach.KindInternal {
			t.Errorf("Create of a taken id: error = %v, want a KindInternal *coach.Error", err)
		}
		if got := f.Get(t, "acme", s.ID); got.Locale != "en" {
			t.Errorf("locale after a colliding Create = %q, want %q", got.Locale, "en")
		}
	}},
	{"tenant isolation", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		_, err := f.Store.Get(ctx, "other", s.ID)
		WantErr(t, "Get by another tenant", err, coach.ErrNotFound)
		_, _, err = f.Store.Claim(ctx, "other", s.ID, LongTTL)
		WantErr(t, "Claim by another tenant", err, coach.ErrNotFound)
		if f.LockHeld(t, s.ID) {
			t.Error("a Claim by another tenant left a lock")
		}
		if err := f.Store.Delete(ctx, "other", s.ID); err != nil {
			t.Errorf("Delete by another tenant: %v, want nil", err)
		}
		SameSession(t, f.Get(t, "acme", s.ID), s)
		// A tenant whose name starts like the owner's is another tenant.
		_, err = f.Store.Get(ctx, "acm", s.ID)
		WantErr(t, "Get by a prefix tenant", err, coach.ErrNotFound)
		_, _, err = f.Store.Claim(ctx, "acm", s.ID, LongTTL)
		WantErr(t, "Claim by a prefix tenant", err, coach.ErrNotFound)
	}},
	{"claim of a locked session is busy", func(t *testing.T, f *Fixture) {
		s := f.Create(t, "acme")
		got, _ := f.Claim(t, "acme", s.ID, LongTTL)
		SameSession(t, got, s)
		_, token, err := f.Store.Claim(context.Background(), "acme", s.ID, LongTTL)
		WantErr(t, "second Claim", err, coach.ErrBusy)
		if token != "" {
			t.Errorf("busy Claim token = %q, want empty", token)
		}
		if ce := coach.AsError(err); ce.Kind != coach.KindConflict || ce.Code != coach.CodeSessionBusy {
			t.Errorf("busy Claim kind, code = %v, %s, want KindConflict, %s", ce.Kind, ce.Code, coach.CodeSessionBusy)
		}
	}},
	{"claim of a missing session", func(t *testing.T, f *Fixture) {
		id := coach.NewID()
		_, _, err := f.Store.Claim(context.Background(), "acme", id, LongTTL)
		WantErr(t, "Claim", err, coach.ErrNotFound)
		if f.LockHeld(t, id) {
			t.Error("a Claim of a missing session left a lock")
		}
	}},
	{"commit stores and releases", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		n := Next(claimed, `{"step":"grounds"}`)
		if err := f.Store.Commit(ctx, n, token); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		got := f.Get(t, "acme", s.ID)
		SameSession(t, got, n)
		if got.Version != 2 {
			t.Errorf("stored version = %d, want 2", got.Version)
		}
		if f.LockHeld(t, s.ID) {
			t.Error("Commit left the lock")
		}
		again, token2 := f.Claim(t, "acme", s.ID, LongTTL)
		if err := f.Store.Commit(ctx, Next(again, `{"step":"warrant"}`), token2); err != nil {
			t.Fatalf("second Commit: %v", err)
		}
		if v := f.Get(t, "acme", s.ID).Version; v != 3 {
			t.Errorf("stored version after two commits = %d, want 3", v)
		}
	}},
	{"commit of a stale version conflicts", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		for _, version := range []int64{claimed.Version, claimed.Version + 2, 0} {
			n := Next(claimed, `{"step":"stale"}`)
			n.Version = version
			WantErr(t, fmt.Sprintf("Commit of version %d", version), f.Store.Commit(ctx, n, token), coach.ErrConflict)
		}
		SameSession(t, f.Get(t, "acme", s.ID), s)
		if !f.LockHeld(t, s.ID) {
			t.Error("a conflicting Commit released the lock")
		}
	}},
	{"commit with a wrong token conflicts", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		n := Next(claimed, `{"step":"grounds"}`)
		WantErr(t, "Commit with a wrong token", f.Store.Commit(ctx, n, "not-"+token), coach.ErrConflict)
		SameSession(t, f.Get(t, "acme", s.ID), s)
		if err := f.Store.Commit(ctx, n, token); err != nil {
			t.Errorf("Commit with the right token after a wrong one: %v", err)
		}
	}},
	{"commit of another tenant conflicts", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		n := Next(claimed, `{"step":"grounds"}`)
		n.Tenant = "other"
		WantErr(t, "Commit as another tenant", f.Store.Commit(ctx, n, token), coach.ErrConflict)
		SameSession(t, f.Get(t, "acme", s.ID), s)
	}},
	{"lock expiry lets another writer in", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		const ttl = 50 * time.Millisecond
		late, lateToken := f.Claim(t, "acme", s.ID, ttl)
		f.WaitLockExpired(t, s.ID, ttl)
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		WantErr(t, "late writer's Commit", f.Store.Commit(ctx, Next(late, `{"step":"late"}`), lateToken), coach.ErrConflict)
		n := Next(claimed, `{"step":"grounds"}`)
		if err := f.Store.Commit(ctx, n, token); err != nil {
			t.Fatalf("Commit of the second claim: %v", err)
		}
		SameSession(t, f.Get(t, "acme", s.ID), n)
		WantErr(t, "late writer's Commit after the new one", f.Store.Commit(ctx, Next(late, `{"step":"late"}`), lateToken), coach.ErrConflict)
	}},
	{"commit after delete conflicts", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		if err := f.Store.Delete(ctx, "acme", s.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if f.LockHeld(t, s.ID) {
			t.Error("Delete left the lock")
		}
		WantErr(t, "Commit after Delete", f.Store.Commit(ctx, Next(claimed, `{}`), token), coach.ErrConflict)
		_, err := f.Store.Get(ctx, "acme", s.ID)
		WantErr(t, "Get after a Commit of a deleted session", err, coach.ErrNotFound)
	}},
	{"release only with own token", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		_, token := f.Claim(t, "acme", s.ID, LongTTL)
		if err := f.Store.Release(ctx, s.ID, "not-"+token); err != nil {
			t.Fatalf("Release with a wrong token: %v", err)
		}
		if !f.LockHeld(t, s.ID) {
			t.Fatal("Release with a wrong token dropped the lock")
		}
		if err := f.Store.Release(ctx, s.ID, token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if f.LockHeld(t, s.ID) {
			t.Fatal("Release with the token kept the lock")
		}
		if err := f.Store.Release(ctx, s.ID, token); err != nil {
			t.Errorf("second Release: %v, want nil", err)
		}
		f.Claim(t, "acme", s.ID, LongTTL)
	}},
	{"concurrent claims have one winner", func(t *testing.T, f *Fixture) {
		s := f.Create(t, "acme")
		const n = 50
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, _, errs[i] = f.Store.Claim(context.Background(), "acme", s.ID, LongTTL)
			})
		}
		close(start)
		wg.Wait()
		won, busy := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, coach.ErrBusy):
				busy++
			default:
				t.Errorf("Claim: %v", err)
			}
		}
		if won != 1 || busy != n-1 {
			t.Errorf("winners, busy = %d, %d, want 1, %d", won, busy, n-1)
		}
	}},
	{"concurrent writers commit every version once", concurrentWriters},
}

// concurrentWriters has many writers per session claim and commit in a loop, retrying while the
// session is busy. Every commit notes its writer and round in the history, so the final history
// shows that each committed version was written exactly once and none was lost.
func concurrentWriters(t *testing.T, f *Fixture) {
	const sessions, writers, rounds = 12, 8, 4
	note := func(w, r int) string { return fmt.Sprintf(`{"note":"w%d r%d"}`, w, r) }
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = f.Create(t, "acme").ID
	}
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range ids {
		for w := range writers {
			wg.Go(func() {
				<-start
				ctx := context.Background()
				deadline := time.Now().Add(30 * time.Second)
				for r := 0; r < rounds; {
					if time.Now().After(deadline) {
						fail("writer %d of %s: round %d still busy after 30s", w, id, r)
						return
					}
					s, token, err := f.Store.Claim(ctx, "acme", id, LongTTL)
					if errors.Is(err, coach.ErrBusy) {
						time.Sleep(time.Millisecond) // back off instead of spinning on Redis
						continue
					}
					if err != nil {
						fail("Claim %s: %v", id, err)
						return
					}
					if err := f.Store.Commit(ctx, Next(s, note(w, r)), token); err != nil {
						fail("Commit %s v%d: %v", id, s.Version+1, err)
						return
					}
					r++
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for _, msg := range failures {
		t.Error(msg)
	}
	for _, id := range ids {
		s := f.Get(t, "acme", id)
		if want := int64(1 + writers*rounds); s.Version != want {
			t.Errorf("%s: version = %d, want %d", id, s.Version, want)
		}
		if len(s.History) != 1+writers*rounds {
			t.Errorf("%s: %d history entries, want %d", id, len(s.History), 1+writers*rounds)
			continue
		}
		seen := map[string]bool{}
		for _, m := range s.History[1:] {
			if seen[m.Content] {
				t.Errorf("%s: commit %q stored twice", id, m.Content)
			}
			seen[m.Content] = true
		}
		for w := range writers {
			for r := range rounds {
				if n := note(w, r); !seen[n] {
					t.Errorf("%s: commit %q lost", id, n)
				}
			}
		}
	}
}
