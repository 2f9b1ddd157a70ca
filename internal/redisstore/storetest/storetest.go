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
	"math/rand/v2"
	"slices"
	"strings"
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

// TranscriptKey is the transcript's list; its counters are the same key with an "m" appended.
func (f *Fixture) TranscriptKey(id string) string { return f.Prefix + ":{" + id + "}:t" }

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
	for _, tc := range append(slices.Clone(contract), transcriptCases...) {
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
		if err := f.Store.Commit(ctx, n, token, coach.CommitExtra{}); err != nil {
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
		if err := f.Store.Commit(ctx, Next(again, `{"step":"warrant"}`), token2, coach.CommitExtra{}); err != nil {
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
			WantErr(t, fmt.Sprintf("Commit of version %d", version), f.Store.Commit(ctx, n, token, coach.CommitExtra{}), coach.ErrConflict)
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
		WantErr(t, "Commit with a wrong token", f.Store.Commit(ctx, n, "not-"+token, coach.CommitExtra{}), coach.ErrConflict)
		SameSession(t, f.Get(t, "acme", s.ID), s)
		if err := f.Store.Commit(ctx, n, token, coach.CommitExtra{}); err != nil {
			t.Errorf("Commit with the right token after a wrong one: %v", err)
		}
	}},
	{"commit of another tenant conflicts", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		n := Next(claimed, `{"step":"grounds"}`)
		n.Tenant = "other"
		WantErr(t, "Commit as another tenant", f.Store.Commit(ctx, n, token, coach.CommitExtra{}), coach.ErrConflict)
		SameSession(t, f.Get(t, "acme", s.ID), s)
	}},
	{"renew extends only the holder's lock", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		_, token := f.Claim(t, "acme", s.ID, time.Second)
		if err := f.Store.Renew(ctx, s.ID, token, time.Hour); err != nil {
			t.Fatalf("Renew by the holder: %v", err)
		}
		if ttl := f.Client.PTTL(ctx, f.LockKey(s.ID)).Val(); ttl < 59*time.Minute {
			t.Errorf("lock PTTL after Renew = %v, want about 1h", ttl)
		}
		WantErr(t, "Renew with a wrong token", f.Store.Renew(ctx, s.ID, "not-"+token, 2*time.Hour), coach.ErrConflict)
		if ttl := f.Client.PTTL(ctx, f.LockKey(s.ID)).Val(); ttl > time.Hour {
			t.Errorf("lock PTTL after a wrong Renew = %v, want it unchanged", ttl)
		}
		if err := f.Store.Release(ctx, s.ID, token); err != nil {
			t.Fatal(err)
		}
		WantErr(t, "Renew after Release", f.Store.Renew(ctx, s.ID, token, time.Hour), coach.ErrConflict)
		if f.LockHeld(t, s.ID) {
			t.Errorf("Renew after Release took the lock again")
		}
	}},
	{"an expired lock cannot be renewed", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		const ttl = 50 * time.Millisecond
		_, token := f.Claim(t, "acme", s.ID, ttl)
		f.WaitLockExpired(t, s.ID, ttl)
		WantErr(t, "Renew of an expired lock", f.Store.Renew(ctx, s.ID, token, time.Hour), coach.ErrConflict)
		_, other := f.Claim(t, "acme", s.ID, LongTTL)
		WantErr(t, "Renew of a lock taken over", f.Store.Renew(ctx, s.ID, token, time.Hour), coach.ErrConflict)
		if err := f.Store.Renew(ctx, s.ID, other, time.Hour); err != nil {
			t.Errorf("Renew by the new holder: %v", err)
		}
	}},
	{"lock expiry lets another writer in", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		const ttl = 50 * time.Millisecond
		late, lateToken := f.Claim(t, "acme", s.ID, ttl)
		f.WaitLockExpired(t, s.ID, ttl)
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		WantErr(t, "late writer's Commit", f.Store.Commit(ctx, Next(late, `{"step":"late"}`), lateToken, coach.CommitExtra{}), coach.ErrConflict)
		n := Next(claimed, `{"step":"grounds"}`)
		if err := f.Store.Commit(ctx, n, token, coach.CommitExtra{}); err != nil {
			t.Fatalf("Commit of the second claim: %v", err)
		}
		SameSession(t, f.Get(t, "acme", s.ID), n)
		WantErr(t, "late writer's Commit after the new one", f.Store.Commit(ctx, Next(late, `{"step":"late"}`), lateToken, coach.CommitExtra{}), coach.ErrConflict)
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
		WantErr(t, "Commit after Delete", f.Store.Commit(ctx, Next(claimed, `{}`), token, coach.CommitExtra{}), coach.ErrConflict)
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
						// Back off instead of spinning on Redis, a few random milliseconds so
						// that 96 writers do not retry in step: the embedded Redis serves one
						// command at a time, and under the race detector on a loaded machine
						// writers retrying every millisecond queue up past the client's timeouts.
						time.Sleep(time.Duration(1+rand.IntN(8)) * time.Millisecond)
						continue
					}
					if err != nil {
						fail("Claim %s: %v", id, err)
						return
					}
					extra := coach.CommitExtra{Transcript: []coach.TranscriptEntry{Learner(note(w, r))}}
					if err := f.Store.Commit(ctx, Next(s, note(w, r)), token, extra); err != nil {
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
		// The transcript was written by the same commits: one entry each, numbered in the
		// order the versions were.
		page, err := f.Store.Transcript(context.Background(), "acme", id, 0, coach.MaxTranscriptPage)
		if err != nil {
			t.Fatalf("Transcript %s: %v", id, err)
		}
		if len(page.Entries) != writers*rounds {
			t.Errorf("%s: %d transcript entries, want %d", id, len(page.Entries), writers*rounds)
			continue
		}
		for i, e := range page.Entries {
			if e.Seq != int64(i+1) || string(e.Input) != s.History[i+1].Content {
				t.Errorf("%s: transcript entry %d = seq %d %s, want seq %d %s", id, i, e.Seq, e.Input, i+1, s.History[i+1].Content)
			}
		}
	}
}

// entryTime is when the entries of the suite were made.
var entryTime = time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.UTC)

// Learner returns a learner's transcript entry whose input is the JSON input.
func Learner(input string) coach.TranscriptEntry {
	return coach.TranscriptEntry{At: entryTime, Role: coach.TranscriptLearner, Input: json.RawMessage(input)}
}

// turnEntries returns the transcript entries of a turn n: the learner's message, an injected
// card and the coach's result.
func turnEntries(n int) []coach.TranscriptEntry {
	at := entryTime
	fallback := n%2 == 1
	return []coach.TranscriptEntry{
		Learner(fmt.Sprintf(`{"message":"turn %d"}`, n)),
		{At: at, Role: coach.TranscriptCoach, Card: json.RawMessage(fmt.Sprintf(`{"type":"level_up","n":%d}`, n))},
		{At: at, Role: coach.TranscriptCoach, Result: json.RawMessage(fmt.Sprintf(`{"text":"answer %d"}`, n)), Fallback: &fallback},
	}
}

// commitTurns claims and commits session id of tenant once per element of turns, with that
// element as the commit's transcript.
func commitTurns(t *testing.T, store *redisstore.Store, tenant, id string, turns ...[]coach.TranscriptEntry) {
	t.Helper()
	for i, tr := range turns {
		s, token, err := store.Claim(context.Background(), tenant, id, LongTTL)
		if err != nil {
			t.Fatalf("Claim %d: %v", i, err)
		}
		if err := store.Commit(context.Background(), Next(s, `{}`), token, coach.CommitExtra{Transcript: tr}); err != nil {
			t.Fatalf("Commit %d: %v", i, err)
		}
	}
}

// wantPage fails t unless page holds the entries with seqs from..to and next.
func wantPage(t *testing.T, what string, page coach.TranscriptPage, from, to, next int64) {
	t.Helper()
	var got []int64
	for _, e := range page.Entries {
		got = append(got, e.Seq)
	}
	var want []int64
	for q := from; q <= to; q++ {
		want = append(want, q)
	}
	if !slices.Equal(got, want) || page.Next != next {
		t.Errorf("%s: seqs %v next %d, want %v next %d", what, got, page.Next, want, next)
	}
}

// transcriptCases are the transcript's part of the contract.
var transcriptCases = []struct {
	name string
	run  func(t *testing.T, f *Fixture)
}{
	{"transcript entries are numbered, kept whole and paged newest first", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		empty, err := f.Store.Transcript(ctx, "acme", s.ID, 0, 10)
		if err != nil || len(empty.Entries) != 0 || empty.Next != 0 {
			t.Fatalf("Transcript of a new session = %+v, %v, want an empty page", empty, err)
		}
		commitTurns(t, f.Store, "acme", s.ID, turnEntries(1), turnEntries(2), turnEntries(3))
		all, err := f.Store.Transcript(ctx, "acme", s.ID, 0, 100)
		if err != nil {
			t.Fatalf("Transcript: %v", err)
		}
		wantPage(t, "all", all, 1, 9, 0)
		for i, e := range all.Entries {
			w := turnEntries(i/3 + 1)[i%3]
			if e.Role != w.Role || string(e.Input) != string(w.Input) || string(e.Result) != string(w.Result) ||
				string(e.Card) != string(w.Card) || !e.At.Equal(w.At) || (e.Fallback == nil) != (w.Fallback == nil) ||
				(e.Fallback != nil && *e.Fallback != *w.Fallback) {
				t.Errorf("entry %d = %+v, want %+v", i, e, w)
			}
		}
		cases := []struct {
			before       int64
			limit        int
			from, to, nx int64
		}{
			{0, 4, 6, 9, 6},
			{6, 4, 2, 5, 2},
			{2, 4, 1, 1, 0},
			{1, 4, 1, 0, 0},
			{100, 2, 8, 9, 8},
			{9, 8, 1, 8, 0},
		}
		for _, c := range cases {
			page, err := f.Store.Transcript(ctx, "acme", s.ID, c.before, c.limit)
			if err != nil {
				t.Fatalf("Transcript before %d: %v", c.before, err)
			}
			wantPage(t, fmt.Sprintf("before %d limit %d", c.before, c.limit), page, c.from, c.to, c.nx)
		}
	}},
	{"transcript keeps its bounds, dropping the oldest", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		few := redisstore.New(f.Client, redisstore.Options{Prefix: f.Prefix, TranscriptMaxEntries: 4})
		commitTurns(t, few, "acme", s.ID, turnEntries(1), turnEntries(2))
		page, err := few.Transcript(ctx, "acme", s.ID, 0, 100)
		if err != nil {
			t.Fatalf("Transcript: %v", err)
		}
		wantPage(t, "after 6 entries, at most 4", page, 3, 6, 0)
		page, _ = few.Transcript(ctx, "acme", s.ID, 5, 1)
		wantPage(t, "before 5 limit 1 after trimming", page, 4, 4, 4)
		page, _ = few.Transcript(ctx, "acme", s.ID, 3, 10)
		wantPage(t, "before the oldest kept", page, 1, 0, 0)

		// One entry of turnEntries takes under 100 bytes: a 250-byte bound keeps the newest
		// few, however many entries it would take, and always the newest one.
		small := redisstore.New(f.Client, redisstore.Options{Prefix: f.Prefix, TranscriptMaxBytes: 250})
		commitTurns(t, small, "acme", s.ID, turnEntries(3))
		page, _ = small.Transcript(ctx, "acme", s.ID, 0, 100)
		if len(page.Entries) == 0 || len(page.Entries) > 3 || page.Entries[len(page.Entries)-1].Seq != 9 {
			t.Errorf("within 250 bytes: %d entries ending at %v, want 1 to 3 ending at seq 9", len(page.Entries), page.Entries)
		}
		size := 0
		for _, raw := range f.Client.LRange(ctx, f.TranscriptKey(s.ID), 0, -1).Val() {
			size += len(raw)
		}
		if got := f.Client.HGet(ctx, f.TranscriptKey(s.ID)+"m", "bytes").Val(); got != fmt.Sprint(size) {
			t.Errorf("bytes counter = %s, want %d (the list's size)", got, size)
		}
		huge := turnEntries(4)
		huge[2].Result = json.RawMessage(`{"text":"` + strings.Repeat("x", 400) + `"}`)
		commitTurns(t, small, "acme", s.ID, huge)
		page, _ = small.Transcript(ctx, "acme", s.ID, 0, 100)
		wantPage(t, "an entry over the byte bound", page, 12, 12, 0)
	}},
	{"a failed commit adds nothing to the transcript, a resent one adds it once", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		claimed, token := f.Claim(t, "acme", s.ID, LongTTL)
		n := Next(claimed, `{}`)
		extra := coach.CommitExtra{Transcript: turnEntries(1)}
		WantErr(t, "Commit with a wrong token", f.Store.Commit(ctx, n, "not-"+token, extra), coach.ErrConflict)
		stale := Next(claimed, `{}`)
		stale.Version += 5
		WantErr(t, "Commit of a stale version", f.Store.Commit(ctx, stale, token, extra), coach.ErrConflict)
		page, _ := f.Store.Transcript(ctx, "acme", s.ID, 0, 100)
		wantPage(t, "after failed commits", page, 1, 0, 0)
		for i := range 2 {
			if err := f.Store.Commit(ctx, n, token, extra); err != nil {
				t.Fatalf("Commit attempt %d: %v", i+1, err)
			}
		}
		page, _ = f.Store.Transcript(ctx, "acme", s.ID, 0, 100)
		wantPage(t, "after a commit sent twice", page, 1, 3, 0)
	}},
	{"transcript belongs to the tenant, expires and is deleted with the session", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		s := f.Create(t, "acme")
		commitTurns(t, f.Store, "acme", s.ID, turnEntries(1))
		for _, tenant := range []string{"other", "acm"} {
			_, err := f.Store.Transcript(ctx, tenant, s.ID, 0, 10)
			WantErr(t, "Transcript by tenant "+tenant, err, coach.ErrNotFound)
		}
		_, err := f.Store.Transcript(ctx, "acme", coach.NewID(), 0, 10)
		WantErr(t, "Transcript of a missing session", err, coach.ErrNotFound)
		docTTL := f.Client.PTTL(ctx, f.DocKey(s.ID)).Val()
		for _, key := range []string{f.TranscriptKey(s.ID), f.TranscriptKey(s.ID) + "m"} {
			if ttl := f.Client.PTTL(ctx, key).Val(); ttl <= 0 || ttl > docTTL+time.Second || ttl < docTTL-time.Minute {
				t.Errorf("PTTL %s = %v, want the document's %v", key, ttl, docTTL)
			}
		}
		if err := f.Store.Delete(ctx, "acme", s.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if n := f.Client.Exists(ctx, f.TranscriptKey(s.ID), f.TranscriptKey(s.ID)+"m").Val(); n != 0 {
			t.Errorf("%d transcript keys left after Delete", n)
		}
		_, err = f.Store.Transcript(ctx, "acme", s.ID, 0, 10)
		WantErr(t, "Transcript after Delete", err, coach.ErrNotFound)
	}},
}
