package clustertest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	coachstoretest "github.com/coachgw/coachgw/internal/coach/storetest"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/storetest"
	"github.com/coachgw/coachgw/internal/safety"
)

// newFixture connects to url the way the gateway does (redisstore.Connect, New, Prepare), under a
// key prefix of its own. The servers live only as long as the test, so the keys need no cleanup.
func newFixture(t *testing.T, url string) *storetest.Fixture {
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
	return &storetest.Fixture{Store: store, Client: client, Prefix: prefix}
}

func wantVersion(t *testing.T, f *storetest.Fixture, id string, want int64) {
	t.Helper()
	if got := f.Get(t, "acme", id).Version; got != want {
		t.Errorf("stored version of %s = %d, want %d", id, got, want)
	}
}

const longTTL = storetest.LongTTL

func TestClusterStore(t *testing.T) {
	c := startCluster(t)
	storetest.StoreContract(t, func(t *testing.T) *storetest.Fixture { return newFixture(t, c.url) })
	t.Run("coach.Store conformance", func(t *testing.T) {
		coachstoretest.Run(t, func(t *testing.T) coach.Store { return newFixture(t, c.url).Store })
		coachstoretest.RunAudit(t, func(t *testing.T) coachstoretest.LearnerSafetyAudit {
			f := newFixture(t, c.url)
			return redisstore.NewSafetyAudit(f.Client, f.Prefix, time.Hour, 1000)
		})
	})
	storetest.LearnerContract(t, func(t *testing.T) *storetest.Fixture { return newFixture(t, c.url) })
	t.Run("sessions spread over the masters, each in one slot", func(t *testing.T) {
		f := newFixture(t, c.url)
		cc, ok := f.Client.(*redis.ClusterClient)
		if !ok {
			t.Fatalf("Connect(%s) returned a %T, want a *redis.ClusterClient", c.url, f.Client)
		}
		spreadSessions(t, f, cc)
	})
	t.Run("usage counters and circuits live on slots of their own", func(t *testing.T) {
		usageAndCircuits(t, newFixture(t, c.url))
	})
	t.Run("safety audit streams of many tenants", func(t *testing.T) {
		auditStreams(t, newFixture(t, c.url))
	})
}

// auditStreams writes the audit records of several tenants, whose streams live on slots (and
// masters) of their own, in one Audit, and reads each tenant's back.
func auditStreams(t *testing.T, f *storetest.Fixture) {
	ctx := context.Background()
	audit := redisstore.NewSafetyAudit(f.Client, f.Prefix, time.Hour, 0)
	tenants := []string{"acme", "beta", "gamma", "delta", "epsilon", "zeta"}
	var records []safety.Record
	for n := range 3 {
		for _, tenant := range tenants {
			records = append(records, safety.Record{Time: time.Now().UTC(), Tenant: tenant, Session: fmt.Sprint(tenant, "-", n),
				Stage: safety.StageInput, Classifier: safety.BuiltinName, Action: safety.ActionNone, Mode: safety.ModeEnforce})
		}
	}
	if err := audit.Audit(ctx, records); err != nil {
		t.Fatalf("Audit: %v", err)
	}
	for _, tenant := range tenants {
		got, next, err := audit.SafetyEvents(ctx, tenant, "", 10)
		if err != nil || len(got) != 3 || next != got[len(got)-1].ID {
			t.Fatalf("SafetyEvents(%s) = %d records, next %q, %v; want 3 and the last id", tenant, len(got), next, err)
		}
		for n, r := range got {
			if want := fmt.Sprint(tenant, "-", n); r.Session != want {
				t.Errorf("%s record %d: session %q, want %q", tenant, n, r.Session, want)
			}
		}
	}
}

// usageAndCircuits runs turns of several tenants that reserve tokens with their claims and
// settle them with their commits, and opens the circuits of several endpoints: each tenant's
// counters and turn marks share a slot of their own, so the pipelines of claim and reservation,
// and of commit and settlement, reach two masters at once.
func usageAndCircuits(t *testing.T, f *storetest.Fixture) {
	ctx := context.Background()
	store := f.Store
	day := time.Now()
	tenants := []string{"acme", "beta", "gamma", "delta", "epsilon", "zeta"}
	for _, tenant := range tenants {
		s := f.Create(t, tenant)
		for turn := range 2 {
			id := fmt.Sprint("turn-", turn)
			res := coach.Reservation{Turn: id, Tenant: tenant, Day: day, Budget: 1000, Tokens: 100}
			claimed, token, granted, err := store.ClaimReserving(ctx, tenant, s.ID, longTTL, res)
			if err != nil || granted != coach.Granted {
				t.Fatalf("%s: ClaimReserving = %v, %v; want granted", tenant, granted, err)
			}
			extra := coach.CommitExtra{Usage: &coach.TenantUsage{Turn: id, Tenant: tenant, Day: day, Usage: coach.Usage{PromptTokens: 10, CompletionTokens: 5}}}
			if err := store.Commit(ctx, storetest.Next(claimed, `{}`), token, extra); err != nil {
				t.Fatalf("%s: Commit with usage: %v", tenant, err)
			}
		}
		if got, err := store.TenantUsage(ctx, tenant, day); err != nil || got != (coach.Usage{PromptTokens: 20, CompletionTokens: 10}) {
			t.Errorf("%s: TenantUsage = %+v, %v; want 20 and 10", tenant, got, err)
		}
		if got := f.Get(t, tenant, s.ID).Version; got != 3 {
			t.Errorf("%s: stored version = %d, want 3", tenant, got)
		}
	}
	names := []string{"primary", "second", "third", "fourth"}
	for _, n := range names[:3] {
		if err := store.OpenCircuit(ctx, n, time.Minute); err != nil {
			t.Fatalf("OpenCircuit(%s): %v", n, err)
		}
	}
	open, err := store.OpenCircuits(ctx, names)
	if err != nil || len(open) != 3 || open["fourth"] != 0 {
		t.Errorf("OpenCircuits = %v, %v; want the first three open", open, err)
	}
}

// spreadSessions runs claim, busy, conflict, commit and release on many sessions, which land in
// slots all over the cluster, and checks where their keys live while every session is locked:
// all keys of a session (document, lock, transcript and its counters) in the same slot on the
// same master, and sessions on every master.
func spreadSessions(t *testing.T, f *storetest.Fixture, cc *redis.ClusterClient) {
	ctx := context.Background()
	const n = 60
	ids := make([]string, n)
	for i := range ids {
		s := f.Create(t, "acme")
		ids[i] = s.ID
		claimed, token := f.Claim(t, "acme", s.ID, longTTL)
		_, _, err := f.Store.Claim(ctx, "acme", s.ID, longTTL)
		storetest.WantErr(t, "second Claim", err, coach.ErrBusy)
		storetest.WantErr(t, "Commit with a wrong token", f.Store.Commit(ctx, storetest.Next(claimed, `{"note":"x"}`), "not-"+token, coach.CommitExtra{}), coach.ErrConflict)
		extra := coach.CommitExtra{Transcript: []coach.TranscriptEntry{storetest.Learner(`{"message":"v2"}`)}}
		if err := f.Store.Commit(ctx, storetest.Next(claimed, `{"note":"v2"}`), token, extra); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		_, token = f.Claim(t, "acme", s.ID, longTTL)
		if err := f.Store.Release(ctx, s.ID, token); err != nil {
			t.Fatalf("Release: %v", err)
		}
		again, token := f.Claim(t, "acme", s.ID, longTTL)
		stale := storetest.Next(again, `{"note":"stale"}`)
		stale.Version = 2
		storetest.WantErr(t, "Commit of a stale version", f.Store.Commit(ctx, stale, token, coach.CommitExtra{}), coach.ErrConflict)
		wantVersion(t, f, s.ID, 2)
	}

	// Every session is now locked and has a transcript: each has all four keys. Ask every master
	// which it holds.
	var mu sync.Mutex
	held := map[string]map[string]bool{} // master address → keys it holds
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, f.Prefix+":*").Result()
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
		doc := f.DocKey(id)
		keys := []string{doc, f.LockKey(id), f.TranscriptKey(id), f.TranscriptKey(id) + "m"}
		docSlot, err := cc.ClusterKeySlot(ctx, doc).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		owner, err := cc.MasterForKey(ctx, doc)
		if err != nil {
			t.Fatalf("MasterForKey(%s): %v", doc, err)
		}
		addr := owner.Options().Addr
		for _, k := range keys[1:] {
			if slot, err := cc.ClusterKeySlot(ctx, k).Result(); err != nil || slot != docSlot {
				t.Errorf("%s is in slot %d but %s in slot %d (%v)", doc, docSlot, k, slot, err)
			}
		}
		for _, k := range keys {
			if !held[addr][k] {
				t.Errorf("master %s, owner of slot %d, does not hold %s", addr, docSlot, k)
			}
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
	storetest.StoreContract(t, func(t *testing.T) *storetest.Fixture { return newFixture(t, s.url) })
	t.Run("the sentinel leads to the master", func(t *testing.T) {
		f := newFixture(t, s.url)
		sess := f.Create(t, "acme")
		direct := redis.NewClient(&redis.Options{Addr: s.master})
		defer direct.Close()
		if n, err := direct.Exists(context.Background(), f.DocKey(sess.ID)).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %s on the master %s = %d, %v; want 1", f.DocKey(sess.ID), s.master, n, err)
		}
	})
}
