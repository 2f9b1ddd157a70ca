package clustertest_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/redisstore"
)

// fixture is one test's store on a server, under a key prefix of its own. The servers live only
// as long as the test, so the keys need no cleanup.
type fixture struct {
	client redis.UniversalClient
	store  *redisstore.Store
	prefix string
}

// newFixture connects to url the way the gateway does (redisstore.Connect, New, Prepare).
func newFixture(t *testing.T, url string) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := redisstore.Connect(ctx, url)
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	prefix := "coachgw-test-" + strings.ToLower(rand.Text())
	store := redisstore.New(client, redisstore.Options{Prefix: prefix, TTL: time.Hour})
	if err := store.Prepare(ctx); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return &fixture{client: client, store: store, prefix: prefix}
}

// docKey and lockKey are the documented key layout (see package redisstore).
func (f *fixture) docKey(id string) string  { return f.prefix + ":{" + id + "}:s" }
func (f *fixture) lockKey(id string) string { return f.prefix + ":{" + id + "}:lock" }

func (f *fixture) lockHeld(t *testing.T, id string) bool {
	t.Helper()
	n, err := f.client.Exists(context.Background(), f.lockKey(id)).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", f.lockKey(id), err)
	}
	return n == 1
}

func newSession(tenant string) *coach.Session {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &coach.Session{
		ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1,
		State:     json.RawMessage(`{"step":"claim"}`),
		CreatedAt: now, UpdatedAt: now, Tenant: tenant,
		History: []coach.Message{{Role: coach.RoleUser, Content: "v1"}},
	}
}

func (f *fixture) create(t *testing.T, tenant string) *coach.Session {
	t.Helper()
	s := newSession(tenant)
	if err := f.store.Create(context.Background(), s); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return s
}

func (f *fixture) claim(t *testing.T, tenant, id string, ttl time.Duration) (*coach.Session, string) {
	t.Helper()
	s, token, err := f.store.Claim(context.Background(), tenant, id, ttl)
	if err != nil {
		t.Fatalf("Claim %s: %v", id, err)
	}
	return s, token
}

func (f *fixture) get(t *testing.T, tenant, id string) *coach.Session {
	t.Helper()
	s, err := f.store.Get(context.Background(), tenant, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return s
}

// next returns the session a turn would commit after s, its history recording what wrote it.
func next(s *coach.Session, note string) *coach.Session {
	n := *s
	n.Version++
	n.State = json.RawMessage(fmt.Sprintf(`{"note":%q}`, note))
	n.History = append(slices.Clone(s.History), coach.Message{Role: coach.RoleAssistant, Content: note})
	return &n
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}

func wantVersion(t *testing.T, f *fixture, id string, want int64) {
	t.Helper()
	if got := f.get(t, "acme", id).Version; got != want {
		t.Errorf("stored version of %s = %d, want %d", id, got, want)
	}
}

const longTTL = time.Minute

// contract is the store's behaviour as every deployment must show it, whatever the Redis
// topology behind the URL.
var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"create get delete", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		if got := f.get(t, "acme", s.ID); got.Version != 1 || string(got.State) != string(s.State) || len(got.History) != 1 {
			t.Errorf("Get = %+v, want the created session", got)
		}
		if err := f.store.Delete(ctx, "acme", s.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		_, err := f.store.Get(ctx, "acme", s.ID)
		wantErr(t, "Get after Delete", err, coach.ErrNotFound)
	}},
	{"tenant isolation", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		_, err := f.store.Get(ctx, "other", s.ID)
		wantErr(t, "Get by another tenant", err, coach.ErrNotFound)
		_, _, err = f.store.Claim(ctx, "other", s.ID, longTTL)
		wantErr(t, "Claim by another tenant", err, coach.ErrNotFound)
		if f.lockHeld(t, s.ID) {
			t.Error("a Claim by another tenant left a lock")
		}
	}},
	{"claim of a missing session", func(t *testing.T, f *fixture) {
		id := coach.NewID()
		_, _, err := f.store.Claim(context.Background(), "acme", id, longTTL)
		wantErr(t, "Claim", err, coach.ErrNotFound)
		if f.lockHeld(t, id) {
			t.Error("a Claim of a missing session left a lock")
		}
	}},
	{"claim of a locked session is busy", func(t *testing.T, f *fixture) {
		s := f.create(t, "acme")
		f.claim(t, "acme", s.ID, longTTL)
		_, token, err := f.store.Claim(context.Background(), "acme", s.ID, longTTL)
		wantErr(t, "second Claim", err, coach.ErrBusy)
		if token != "" {
			t.Errorf("busy Claim token = %q, want empty", token)
		}
	}},
	{"commit stores and releases", func(t *testing.T, f *fixture) {
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		if err := f.store.Commit(context.Background(), next(claimed, "v2"), token); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		wantVersion(t, f, s.ID, 2)
		if f.lockHeld(t, s.ID) {
			t.Error("Commit left the lock")
		}
	}},
	{"commit of a stale version conflicts", func(t *testing.T, f *fixture) {
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		for _, v := range []int64{1, 3, 0} {
			n := next(claimed, "stale")
			n.Version = v
			wantErr(t, fmt.Sprintf("Commit of version %d", v), f.store.Commit(context.Background(), n, token), coach.ErrConflict)
		}
		wantVersion(t, f, s.ID, 1)
		if !f.lockHeld(t, s.ID) {
			t.Error("a conflicting Commit released the lock")
		}
	}},
	{"commit with a wrong token conflicts", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		wantErr(t, "Commit with a wrong token", f.store.Commit(ctx, next(claimed, "x"), "not-"+token), coach.ErrConflict)
		wantVersion(t, f, s.ID, 1)
		if err := f.store.Commit(ctx, next(claimed, "v2"), token); err != nil {
			t.Errorf("Commit with the right token: %v", err)
		}
	}},
	{"release only with own token", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		_, token := f.claim(t, "acme", s.ID, longTTL)
		if err := f.store.Release(ctx, s.ID, "not-"+token); err != nil {
			t.Fatalf("Release with a wrong token: %v", err)
		}
		if !f.lockHeld(t, s.ID) {
			t.Fatal("Release with a wrong token dropped the lock")
		}
		if err := f.store.Release(ctx, s.ID, token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if f.lockHeld(t, s.ID) {
			t.Fatal("Release with the token kept the lock")
		}
		f.claim(t, "acme", s.ID, longTTL)
	}},
	{"lock expiry lets another writer in", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		late, lateToken := f.claim(t, "acme", s.ID, 50*time.Millisecond)
		poll(t, "the 50ms lock expires", 5*time.Second, func() (bool, string) { return !f.lockHeld(t, s.ID), "lock held" })
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		wantErr(t, "late writer's Commit", f.store.Commit(ctx, next(late, "late"), lateToken), coach.ErrConflict)
		if err := f.store.Commit(ctx, next(claimed, "v2"), token); err != nil {
			t.Fatalf("Commit of the second claim: %v", err)
		}
		if got := f.get(t, "acme", s.ID); got.Version != 2 || string(got.State) != `{"note":"v2"}` {
			t.Errorf("stored = version %d state %s, want version 2 from the second claim", got.Version, got.State)
		}
	}},
	{"commit after delete conflicts", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		if err := f.store.Delete(ctx, "acme", s.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if f.lockHeld(t, s.ID) {
			t.Error("Delete left the lock")
		}
		wantErr(t, "Commit after Delete", f.store.Commit(ctx, next(claimed, "x"), token), coach.ErrConflict)
		_, err := f.store.Get(ctx, "acme", s.ID)
		wantErr(t, "Get after a Commit of a deleted session", err, coach.ErrNotFound)
	}},
	{"concurrent claims have one winner", func(t *testing.T, f *fixture) {
		s := f.create(t, "acme")
		const n = 50
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, _, errs[i] = f.store.Claim(context.Background(), "acme", s.ID, longTTL)
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
func concurrentWriters(t *testing.T, f *fixture) {
	const sessions, writers, rounds = 12, 8, 4
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = f.create(t, "acme").ID
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
					s, token, err := f.store.Claim(ctx, "acme", id, longTTL)
					if errors.Is(err, coach.ErrBusy) {
						time.Sleep(time.Millisecond) // back off instead of spinning on Redis
						continue
					}
					if err != nil {
						fail("Claim %s: %v", id, err)
						return
					}
					if err := f.store.Commit(ctx, next(s, fmt.Sprintf("w%d r%d", w, r)), token); err != nil {
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
		s := f.get(t, "acme", id)
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
				if note := fmt.Sprintf("w%d r%d", w, r); !seen[note] {
					t.Errorf("%s: commit %q lost", id, note)
				}
			}
		}
	}
}

func TestClusterStore(t *testing.T) {
	c := startCluster(t)
	for _, tc := range contract {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newFixture(t, c.url)) })
	}
	t.Run("sessions spread over the masters, each in one slot", func(t *testing.T) {
		f := newFixture(t, c.url)
		cc, ok := f.client.(*redis.ClusterClient)
		if !ok {
			t.Fatalf("Connect(%s) returned a %T, want a *redis.ClusterClient", c.url, f.client)
		}
		spreadSessions(t, f, cc)
	})
}

// spreadSessions runs claim, busy, conflict, commit and release on many sessions, which land in
// slots all over the cluster, and checks where their keys live while every session is locked:
// both keys of a session in the same slot on the same master, and sessions on every master.
func spreadSessions(t *testing.T, f *fixture, cc *redis.ClusterClient) {
	ctx := context.Background()
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		s := f.create(t, "acme")
		ids[i] = s.ID
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		_, _, err := f.store.Claim(ctx, "acme", s.ID, longTTL)
		wantErr(t, "second Claim", err, coach.ErrBusy)
		wantErr(t, "Commit with a wrong token", f.store.Commit(ctx, next(claimed, "x"), "not-"+token), coach.ErrConflict)
		if err := f.store.Commit(ctx, next(claimed, "v2"), token); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		_, token = f.claim(t, "acme", s.ID, longTTL)
		if err := f.store.Release(ctx, s.ID, token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		again, token := f.claim(t, "acme", s.ID, longTTL)
		stale := next(again, "stale")
		stale.Version = 2
		wantErr(t, "Commit of a stale version", f.store.Commit(ctx, stale, token), coach.ErrConflict)
		wantVersion(t, f, s.ID, 2)
	}

	// Every session is now locked: each has both keys. Ask every master which it holds.
	var mu sync.Mutex
	held := map[string]map[string]bool{} // master address → keys it holds
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, f.prefix+":*").Result()
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, k := range keys {
			set[k] = true
		}
		mu.Lock()
		defer mu.Unlock()
		held[node.Options().Addr] = set
		return nil
	})
	if err != nil {
		t.Fatalf("listing the keys of every master: %v", err)
	}
	perMaster := map[string]int{}
	for _, id := range ids {
		doc, lock := f.docKey(id), f.lockKey(id)
		docSlot, err1 := cc.ClusterKeySlot(ctx, doc).Result()
		lockSlot, err2 := cc.ClusterKeySlot(ctx, lock).Result()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		if docSlot != lockSlot {
			t.Errorf("%s is in slot %d but %s in slot %d", doc, docSlot, lock, lockSlot)
		}
		owner, err := cc.MasterForKey(ctx, doc)
		if err != nil {
			t.Fatalf("MasterForKey(%s): %v", doc, err)
		}
		addr := owner.Options().Addr
		if !held[addr][doc] || !held[addr][lock] {
			t.Errorf("master %s, owner of slot %d, holds %s: %v, %s: %v; want both", addr, docSlot, doc, held[addr][doc], lock, held[addr][lock])
		}
		perMaster[addr]++
	}
	if len(held) != 3 {
		t.Errorf("the client sees %d masters, want 3", len(held))
	}
	// 60 random ids all landing on one master of three has a chance of 3·3^-60: below 2 means
	// the keys are not spread by their ids.
	if len(perMaster) < 2 {
		t.Errorf("sessions per master = %v, want sessions on at least 2 masters", perMaster)
	}
	t.Logf("sessions per master: %v", perMaster)
}

func TestSentinelStore(t *testing.T) {
	s := startSentinel(t)
	for _, tc := range contract {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newFixture(t, s.url)) })
	}
	t.Run("the sentinel leads to the master", func(t *testing.T) {
		f := newFixture(t, s.url)
		sess := f.create(t, "acme")
		direct := redis.NewClient(&redis.Options{Addr: s.master})
		defer direct.Close()
		if n, err := direct.Exists(context.Background(), f.docKey(sess.ID)).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %s on the master %s = %d, %v; want 1", f.docKey(sess.ID), s.master, n, err)
		}
	})
}
