package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/redis/go-redis/v9"
)

// backend is a Redis server the suite runs against.
type backend struct {
	name string
	// dial returns a new client of the server, closed when t ends.
	dial func(t *testing.T) redis.UniversalClient
	// mini is the server when it is a miniredis, whose clock the suite can move; nil for a real one.
	mini *miniredis.Miniredis
}

// backends returns the real Redis (REDIS_URL, else 127.0.0.1:6379) and the embedded miniredis.
// Without a reachable Redis the first falls back to a miniredis too, except under CI, where that
// is a failure: CI must prove the real thing.
func backends(t *testing.T) []backend {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	real := backend{name: "redis"}
	if c, err := Connect(ctx, url); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis at %s under CI: %v", url, err)
		}
		t.Logf("no Redis at %s (%v); the redis cases run on miniredis", url, err)
		real = embeddedBackend(t, "redis")
	} else {
		_ = c.Close()
		real.dial = func(t *testing.T) redis.UniversalClient {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			c, err := Connect(ctx, url)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
	}
	return []backend{real, embeddedBackend(t, "miniredis")}
}

func embeddedBackend(t *testing.T, name string) backend {
	t.Helper()
	m, c, err := startEmbedded()
	if err != nil {
		t.Fatalf("startEmbedded: %v", err)
	}
	_ = c.Close()
	t.Cleanup(m.Close)
	return backend{name: name, mini: m, dial: func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}}
}

// fixture is one test's store, under a key prefix of its own that is removed afterwards.
type fixture struct {
	b      backend
	client redis.UniversalClient
	store  *Store
	prefix string
}

func newFixture(t *testing.T, b backend) *fixture {
	t.Helper()
	client := b.dial(t)
	prefix := "coachgw-test-" + strings.ToLower(rand.Text())
	t.Cleanup(func() { removePrefix(t, client, prefix) })
	store := New(client, Options{Prefix: prefix, TTL: time.Hour})
	if err := store.Prepare(context.Background()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return &fixture{b: b, client: client, store: store, prefix: prefix}
}

func removePrefix(t *testing.T, client redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var cursor uint64
	for {
		keys, next, err := client.Scan(ctx, cursor, prefix+":*", 100).Result()
		if err != nil {
			t.Errorf("cleanup scan: %v", err)
			return
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup del: %v", err)
				return
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// lockHeld reports whether session id is locked, by looking at the lock key itself.
func (f *fixture) lockHeld(t *testing.T, id string) bool {
	t.Helper()
	n, err := f.client.Exists(context.Background(), f.store.lockKey(id)).Result()
	if err != nil {
		t.Fatalf("EXISTS lock: %v", err)
	}
	return n == 1
}

// waitLockExpired returns once the lock of id (taken with ttl) has expired: on miniredis by moving
// its clock, on a real server by polling for a bounded time.
func (f *fixture) waitLockExpired(t *testing.T, id string, ttl time.Duration) {
	t.Helper()
	if f.b.mini != nil {
		f.b.mini.FastForward(ttl)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.lockHeld(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("lock of a claim with ttl %v still held after 5s", ttl)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newSession(tenant string) *coach.Session {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &coach.Session{
		ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1,
		State:     json.RawMessage(`{"step":"claim","draft":{}}`),
		CreatedAt: now, UpdatedAt: now, Tenant: tenant,
		History: []coach.Message{{Role: coach.RoleUser, Content: "Hello"}},
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
		t.Fatalf("Claim: %v", err)
	}
	if token == "" {
		t.Fatal("Claim returned an empty token")
	}
	return s, token
}

// next returns the session a turn would commit after s.
func next(s *coach.Session, state string) *coach.Session {
	n := *s
	n.Version++
	n.State = json.RawMessage(state)
	n.UpdatedAt = s.UpdatedAt.Add(time.Second)
	n.History = append(slices.Clone(s.History), coach.Message{Role: coach.RoleAssistant, Content: state})
	return &n
}

func (f *fixture) get(t *testing.T, tenant, id string) *coach.Session {
	t.Helper()
	s, err := f.store.Get(context.Background(), tenant, id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return s
}

func sameSession(t *testing.T, got, want *coach.Session) {
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

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}

const longTTL = time.Minute

var suite = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"create get delete", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		sameSession(t, f.get(t, "acme", s.ID), s)
		if err := f.store.Delete(ctx, "acme", s.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		_, err := f.store.Get(ctx, "acme", s.ID)
		wantErr(t, "Get after Delete", err, coach.ErrNotFound)
		if err := f.store.Delete(ctx, "acme", s.ID); err != nil {
			t.Errorf("Delete of a missing session: %v, want nil", err)
		}
	}},
	{"document layout", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		_, _ = f.claim(t, "acme", s.ID, longTTL)
		raw, err := f.client.Get(ctx, f.prefix+":{"+s.ID+"}:s").Result()
		if err != nil {
			t.Fatalf("GET %s:{id}:s: %v", f.prefix, err)
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
		if n := f.client.Exists(ctx, f.prefix+":{"+s.ID+"}:lock").Val(); n != 1 {
			t.Errorf("EXISTS %s:{id}:lock = %d, want 1", f.prefix, n)
		}
		if ttl := f.client.PTTL(ctx, f.store.docKey(s.ID)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("document PTTL = %v, want within (0, 1h]", ttl)
		}
	}},
	{"create of a taken id", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		if err := f.store.Create(ctx, s); err != nil {
			t.Errorf("Create resent with the same document: %v, want nil", err)
		}
		other := newSession("acme")
		other.ID = s.ID
		other.Locale = "es"
		err := f.store.Create(ctx, other)
		var ce *coach.Error
		if !errors.As(err, &ce) || ce.Kind != coach.KindInternal {
			t.Errorf("Create of a taken id: error = %v, want a KindInternal *coach.Error", err)
		}
		if got := f.get(t, "acme", s.ID); got.Locale != "en" {
			t.Errorf("locale after a colliding Create = %q, want %q", got.Locale, "en")
		}
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
		if err := f.store.Delete(ctx, "other", s.ID); err != nil {
			t.Errorf("Delete by another tenant: %v, want nil", err)
		}
		sameSession(t, f.get(t, "acme", s.ID), s)
		// A tenant whose name starts like the owner's is another tenant.
		_, err = f.store.Get(ctx, "acm", s.ID)
		wantErr(t, "Get by a prefix tenant", err, coach.ErrNotFound)
		_, _, err = f.store.Claim(ctx, "acm", s.ID, longTTL)
		wantErr(t, "Claim by a prefix tenant", err, coach.ErrNotFound)
	}},
	{"claim of a locked session is busy", func(t *testing.T, f *fixture) {
		s := f.create(t, "acme")
		got, _ := f.claim(t, "acme", s.ID, longTTL)
		sameSession(t, got, s)
		_, token, err := f.store.Claim(context.Background(), "acme", s.ID, longTTL)
		wantErr(t, "second Claim", err, coach.ErrBusy)
		if token != "" {
			t.Errorf("busy Claim token = %q, want empty", token)
		}
		if ce := coach.AsError(err); ce.Kind != coach.KindConflict || ce.Code != coach.CodeSessionBusy {
			t.Errorf("busy Claim kind, code = %v, %s, want KindConflict, %s", ce.Kind, ce.Code, coach.CodeSessionBusy)
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
	{"commit stores and releases", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		n := next(claimed, `{"step":"grounds"}`)
		if err := f.store.Commit(ctx, n, token); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		got := f.get(t, "acme", s.ID)
		sameSession(t, got, n)
		if got.Version != 2 {
			t.Errorf("stored version = %d, want 2", got.Version)
		}
		if f.lockHeld(t, s.ID) {
			t.Error("Commit left the lock")
		}
		again, token2 := f.claim(t, "acme", s.ID, longTTL)
		if err := f.store.Commit(ctx, next(again, `{"step":"warrant"}`), token2); err != nil {
			t.Fatalf("second Commit: %v", err)
		}
		if v := f.get(t, "acme", s.ID).Version; v != 3 {
			t.Errorf("stored version after two commits = %d, want 3", v)
		}
	}},
	{"commit of a stale version conflicts", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		for _, version := range []int64{claimed.Version, claimed.Version + 2, 0} {
			n := next(claimed, `{"step":"stale"}`)
			n.Version = version
			wantErr(t, fmt.Sprintf("Commit of version %d", version), f.store.Commit(ctx, n, token), coach.ErrConflict)
		}
		sameSession(t, f.get(t, "acme", s.ID), s)
		if !f.lockHeld(t, s.ID) {
			t.Error("a conflicting Commit released the lock")
		}
	}},
	{"commit with a wrong token conflicts", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		n := next(claimed, `{"step":"grounds"}`)
		wantErr(t, "Commit with a wrong token", f.store.Commit(ctx, n, "not-"+token), coach.ErrConflict)
		sameSession(t, f.get(t, "acme", s.ID), s)
		if err := f.store.Commit(ctx, n, token); err != nil {
			t.Errorf("Commit with the right token after a wrong one: %v", err)
		}
	}},
	{"commit of another tenant conflicts", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		n := next(claimed, `{"step":"grounds"}`)
		n.Tenant = "other"
		wantErr(t, "Commit as another tenant", f.store.Commit(ctx, n, token), coach.ErrConflict)
		sameSession(t, f.get(t, "acme", s.ID), s)
	}},
	{"lock expiry lets another writer in", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		const ttl = 50 * time.Millisecond
		late, lateToken := f.claim(t, "acme", s.ID, ttl)
		f.waitLockExpired(t, s.ID, ttl)
		claimed, token := f.claim(t, "acme", s.ID, longTTL)
		wantErr(t, "late writer's Commit", f.store.Commit(ctx, next(late, `{"step":"late"}`), lateToken), coach.ErrConflict)
		n := next(claimed, `{"step":"grounds"}`)
		if err := f.store.Commit(ctx, n, token); err != nil {
			t.Fatalf("Commit of the second claim: %v", err)
		}
		sameSession(t, f.get(t, "acme", s.ID), n)
		wantErr(t, "late writer's Commit after the new one", f.store.Commit(ctx, next(late, `{"step":"late"}`), lateToken), coach.ErrConflict)
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
		wantErr(t, "Commit after Delete", f.store.Commit(ctx, next(claimed, `{}`), token), coach.ErrConflict)
		_, err := f.store.Get(ctx, "acme", s.ID)
		wantErr(t, "Get after a Commit of a deleted session", err, coach.ErrNotFound)
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
		if err := f.store.Release(ctx, s.ID, token); err != nil {
			t.Errorf("second Release: %v, want nil", err)
		}
		f.claim(t, "acme", s.ID, longTTL)
	}},
	{"resent claim and commit are idempotent", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.create(t, "acme")
		// A claim resent by go-redis after a lost reply carries the same token.
		token := "resent-token"
		for i := range 2 {
			res, err := claimScript.Run(ctx, f.client, f.store.keys(s.ID), tenantHeader("acme"), token, longTTL.Milliseconds(), time.Hour.Milliseconds()).Result()
			if _, ok := res.(string); err != nil || !ok {
				t.Fatalf("claim attempt %d = %v, %v, want the document", i+1, res, err)
			}
		}
		n := next(s, `{"step":"grounds"}`)
		for i := range 2 {
			if err := f.store.Commit(ctx, n, token); err != nil {
				t.Fatalf("commit attempt %d: %v", i+1, err)
			}
		}
		sameSession(t, f.get(t, "acme", s.ID), n)
		// Once another writer has committed on top, the old commit is no longer its own.
		claimed, token2 := f.claim(t, "acme", s.ID, longTTL)
		if err := f.store.Commit(ctx, next(claimed, `{"step":"warrant"}`), token2); err != nil {
			t.Fatalf("Commit of the next claim: %v", err)
		}
		wantErr(t, "old commit resent after a newer one", f.store.Commit(ctx, n, token), coach.ErrConflict)
	}},
	{"concurrent claims have one winner", func(t *testing.T, f *fixture) {
		s := f.create(t, "acme")
		const n = 50
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
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
	{"round trips", func(t *testing.T, f *fixture) {
		ctx := context.Background()
		client := f.b.dial(t)
		var hook CountingHook
		client.AddHook(&hook)
		store := New(client, Options{Prefix: f.prefix})
		if err := store.Prepare(ctx); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		s := newSession("acme")
		var claimed *coach.Session
		var token string
		steps := []struct {
			name string
			op   func() error
			want int64
		}{
			{"Create", func() error { return store.Create(ctx, s) }, 1},
			{"Get", func() error { _, err := store.Get(ctx, "acme", s.ID); return err }, 1},
			{"Claim", func() (err error) { claimed, token, err = store.Claim(ctx, "acme", s.ID, longTTL); return err }, 1},
			{"Commit", func() error { return store.Commit(ctx, next(claimed, `{}`), token) }, 1},
			{"Claim again", func() (err error) { _, token, err = store.Claim(ctx, "acme", s.ID, longTTL); return err }, 1},
			{"Release", func() error { return store.Release(ctx, s.ID, token) }, 1},
			{"Delete", func() error { return store.Delete(ctx, "acme", s.ID) }, 1},
			{"Ping", func() error { return store.Ping(ctx) }, 1},
		}
		for _, st := range steps {
			before := hook.Count()
			if err := st.op(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if got := hook.Count() - before; got != st.want {
				t.Errorf("%s round trips = %d, want %d", st.name, got, st.want)
			}
		}
	}},
}

func TestStore(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, newFixture(t, b)) })
			}
		})
	}
}

// TestHeaders checks that the headers the scripts compare are exactly how the encoder starts a
// document, including tenants that JSON escapes.
func TestHeaders(t *testing.T) {
	for _, tenant := range []string{"", "acme", `quo"te`, "<b>&amp;", "ünï\u2028", "back\\slash", "a,b:c"} {
		t.Run(tenant, func(t *testing.T) {
			s := newSession(tenant)
			s.Version = 7
			doc, err := encode(s, "tok")
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			for _, h := range []string{tenantHeader(tenant), versionHeader(tenant, 7), commitHeader(tenant, 7, "tok")} {
				if !strings.HasPrefix(string(doc), h) {
					t.Errorf("document %s does not start with header %s", doc, h)
				}
			}
			back, err := decode(string(doc))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			sameSession(t, back, s)
		})
	}
}

func TestNewDefaultsAndPrefix(t *testing.T) {
	s := New(nil, Options{})
	if s.prefix != DefaultPrefix || s.ttl != DefaultTTL {
		t.Errorf("defaults = %q, %v, want %q, %v", s.prefix, s.ttl, DefaultPrefix, DefaultTTL)
	}
	if got, want := s.docKey("3fa9"), "coachgw:{3fa9}:s"; got != want {
		t.Errorf("docKey = %q, want %q", got, want)
	}
	if got, want := s.lockKey("3fa9"), "coachgw:{3fa9}:lock"; got != want {
		t.Errorf("lockKey = %q, want %q", got, want)
	}
	for _, prefix := range []string{"a{b", "a}b"} {
		t.Run(prefix, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("New with prefix %q did not panic", prefix)
				}
			}()
			New(nil, Options{Prefix: prefix})
		})
	}
}

func TestMillis(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int64
	}{
		{0, 1}, {-time.Second, 1}, {time.Microsecond, 1}, {time.Millisecond, 1},
		{1500 * time.Microsecond, 2}, {50 * time.Millisecond, 50}, {24 * time.Hour, 86_400_000},
	}
	for _, tt := range tests {
		if got := millis(tt.in); got != tt.want {
			t.Errorf("millis(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
