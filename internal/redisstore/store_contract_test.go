package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	coachstoretest "github.com/coachgw/coachgw/internal/coach/storetest"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/storetest"
)

// TestStore runs the store contract (package storetest), the coach.Store conformance suite every
// store shares (package coach/storetest) and the cases only a single server shows on the real
// Redis and on miniredis.
func TestStore(t *testing.T) {
	for _, b := range redisstore.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			newFixture := func(t *testing.T) *storetest.Fixture {
				store, client, prefix, fastForward := b.NewStore(t)
				return &storetest.Fixture{Store: store, Client: client, Prefix: prefix, FastForward: fastForward}
			}
			storetest.StoreContract(t, newFixture)
			storetest.LearnerContract(t, newFixture)
			t.Run("coach.Store conformance", func(t *testing.T) {
				coachstoretest.Run(t, func(t *testing.T) coach.Store { return newFixture(t).Store })
				coachstoretest.RunAudit(t, func(t *testing.T) coachstoretest.LearnerSafetyAudit {
					f := newFixture(t)
					return redisstore.NewSafetyAudit(f.Client, f.Prefix, time.Hour, 1000)
				})
			})
			t.Run("resent claim and commit are idempotent", func(t *testing.T) { resentClaimAndCommit(t, newFixture(t)) })
			t.Run("round trips", func(t *testing.T) { roundTrips(t, b, newFixture(t)) })
		})
	}
}

func resentClaimAndCommit(t *testing.T, f *storetest.Fixture) {
	ctx := context.Background()
	s := f.Create(t, "acme")
	// A claim resent by go-redis after a lost reply carries the same token.
	token := "resent-token"
	for i := range 2 {
		res, err := f.Store.RunClaimScript(ctx, "acme", s.ID, token, storetest.LongTTL)
		if _, ok := res.(string); err != nil || !ok {
			t.Fatalf("claim attempt %d = %v, %v, want the document", i+1, res, err)
		}
	}
	n := storetest.Next(s, `{"step":"grounds"}`)
	for i := range 2 {
		if err := f.Store.Commit(ctx, n, token, coach.CommitExtra{}); err != nil {
			t.Fatalf("commit attempt %d: %v", i+1, err)
		}
	}
	storetest.SameSession(t, f.Get(t, "acme", s.ID), n)
	// Once another writer has committed on top, the old commit is no longer its own.
	claimed, token2 := f.Claim(t, "acme", s.ID, storetest.LongTTL)
	if err := f.Store.Commit(ctx, storetest.Next(claimed, `{"step":"warrant"}`), token2, coach.CommitExtra{}); err != nil {
		t.Fatalf("Commit of the next claim: %v", err)
	}
	storetest.WantErr(t, "old commit resent after a newer one", f.Store.Commit(ctx, n, token, coach.CommitExtra{}), coach.ErrConflict)
}

func roundTrips(t *testing.T, b redisstore.Backend, f *storetest.Fixture) {
	ctx := context.Background()
	client := b.Dial(t)
	var hook redisstore.CountingHook
	client.AddHook(&hook)
	store := redisstore.New(client, redisstore.Options{Prefix: f.Prefix})
	if err := store.Prepare(ctx); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	// The first pipeline of a client may open a connection of its own (its handshake would
	// count); the turns of a running gateway find it open.
	if _, err := client.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() }); err != nil {
		t.Fatalf("warming the pool: %v", err)
	}
	s := storetest.NewSession("acme")
	var claimed *coach.Session
	var token string
	const longTTL = storetest.LongTTL
	steps := []struct {
		name string
		op   func() error
		want int64
	}{
		{"Create", func() error { return store.Create(ctx, s) }, 1},
		{"Get", func() error { _, err := store.Get(ctx, "acme", s.ID); return err }, 1},
		{"Claim", func() (err error) { claimed, token, err = store.Claim(ctx, "acme", s.ID, longTTL); return err }, 1},
		{"Commit", func() error { return store.Commit(ctx, storetest.Next(claimed, `{}`), token, coach.CommitExtra{}) }, 1},
		{"Claim for a turn", func() (err error) { claimed, token, err = store.Claim(ctx, "acme", s.ID, longTTL); return err }, 1},
		{"Commit with transcript entries", func() error {
			extra := coach.CommitExtra{Transcript: []coach.TranscriptEntry{storetest.Learner(`{"message":"hi"}`), storetest.Learner(`{"continue":true}`)}}
			return store.Commit(ctx, storetest.Next(claimed, `{}`), token, extra)
		}, 1},
		{"Transcript", func() error { _, err := store.Transcript(ctx, "acme", s.ID, 0, 10); return err }, 1},
		{"Claim reserving tokens of a budget", func() (err error) {
			res := coach.Reservation{Turn: "t1", Tenant: "acme", Day: time.Now(), Budget: 1000, Tokens: 100}
			claimed, token, _, err = store.ClaimReserving(ctx, "acme", s.ID, longTTL, res)
			return err
		}, 1},
		{"Commit settling the turn's tokens", func() error {
			extra := coach.CommitExtra{Usage: &coach.TenantUsage{Turn: "t1", Tenant: "acme", Day: time.Now(), Usage: coach.Usage{PromptTokens: 5, CompletionTokens: 2}}}
			return store.Commit(ctx, storetest.Next(claimed, `{}`), token, extra)
		}, 1},
		{"Claim reserving again", func() (err error) {
			res := coach.Reservation{Turn: "t2", Tenant: "acme", Day: time.Now(), Budget: 1000, Tokens: 100}
			claimed, token, _, err = store.ClaimReserving(ctx, "acme", s.ID, longTTL, res)
			return err
		}, 1},
		{"Release settling a failed turn's tokens", func() error {
			return store.ReleaseCharging(ctx, s.ID, token, &coach.TenantUsage{Turn: "t2", Tenant: "acme", Day: time.Now(), Usage: coach.Usage{PromptTokens: 5}})
		}, 1},
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
}

// TestHeaders checks that the headers the scripts compare are exactly how the encoder starts a
// document, including tenants that JSON escapes.
func TestHeaders(t *testing.T) {
	for _, tenant := range []string{"", "acme", `quo"te`, "<b>&amp;", "ünï\u2028", "back\\slash", "a,b:c"} {
		t.Run(tenant, func(t *testing.T) {
			s := storetest.NewSession(tenant)
			s.Version = 7
			doc, err := redisstore.Encode(s, "tok")
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			for _, h := range []string{redisstore.TenantHeader(tenant), redisstore.VersionHeader(tenant, 7), redisstore.CommitHeader(tenant, 7, "tok")} {
				if !strings.HasPrefix(string(doc), h) {
					t.Errorf("document %s does not start with header %s", doc, h)
				}
			}
			back, err := redisstore.Decode(string(doc))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			storetest.SameSession(t, back, s)
		})
	}
}
