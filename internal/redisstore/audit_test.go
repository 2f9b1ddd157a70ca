package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// auditRecord is the record of check n of a turn of tenant.
func auditRecord(tenant string, n int) safety.Record {
	return safety.Record{
		Time: time.Date(2025, 5, 1, 12, 0, n, 0, time.UTC), Tenant: tenant,
		Session: "0123456789abcdef0123456789abcdef", Learner: safety.Learner{Ref: "learner-7"}, Turn: fmt.Sprint("turn-", n),
		Stage: safety.StageInput, Classifier: safety.BuiltinName, Categories: []safety.Category{"self_harm"},
		Severity: safety.SeverityHigh, Rules: []string{"en.passive.1"}, Action: safety.ActionCrisis,
		Mode: safety.ModeEnforce, LatencyMS: 0.25,
	}
}

// TestSafetyAudit writes the records of two tenants in one Audit and reads them back: one round
// trip for the write (once the script is loaded), each tenant's records only, in order and whole, paged with after, and
// nothing but the record in the stream.
func TestSafetyAudit(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			client := b.dial(t)
			hook := &CountingHook{}
			client.AddHook(hook)
			audit := NewSafetyAudit(client, f.prefix, time.Hour, 0)
			// The first pipeline of a client may open a connection of its own, whose handshake
			// would count; a running gateway's finds it open.
			if _, err := client.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() }); err != nil {
				t.Fatal(err)
			}
			// A fresh Redis has no scripts: the first Audit loads its own, as a restarted one's would.
			if err := audit.Audit(ctx, []safety.Record{auditRecord("script-loader", 0)}); err != nil {
				t.Fatal(err)
			}

			var records []safety.Record
			for n := range 5 {
				records = append(records, auditRecord("acme", n))
				if n == 2 {
					records = append(records, auditRecord("beta", 9))
				}
			}
			before := hook.Count()
			if err := audit.Audit(ctx, records); err != nil {
				t.Fatalf("Audit: %v", err)
			}
			if got := hook.Count() - before; got != 1 {
				t.Errorf("Audit of %d records of 2 tenants took %d round trips, want 1", len(records), got)
			}
			if err := audit.Audit(ctx, nil); err != nil {
				t.Errorf("Audit of no records: %v", err)
			}

			got, next, err := audit.SafetyEvents(ctx, "acme", "", 100)
			if err != nil || len(got) != 5 {
				t.Fatalf("SafetyEvents(acme) = %d records, %v; want 5", len(got), err)
			}
			for n, r := range got {
				want := auditRecord("acme", n)
				want.ID = r.ID
				if r.ID == "" || !recordsEqual(r, want) {
					t.Errorf("record %d = %+v, want %+v with an id", n, r, want)
				}
			}
			if next != got[4].ID {
				t.Errorf("next = %q, want the last record's id %q", next, got[4].ID)
			}
			beta, _, err := audit.SafetyEvents(ctx, "beta", "", 100)
			if err != nil || len(beta) != 1 || beta[0].Turn != "turn-9" || beta[0].Tenant != "beta" {
				t.Errorf("SafetyEvents(beta) = %+v, %v; want beta's one record", beta, err)
			}
			if none, next, err := audit.SafetyEvents(ctx, "gamma", "", 100); err != nil || len(none) != 0 || next != "" {
				t.Errorf("SafetyEvents(gamma) = %+v, %q, %v; want nothing and no cursor", none, next, err)
			}

			// Pages of two follow on from each other, and the page after the last is empty with
			// the same cursor.
			var paged []string
			for cursor, pages := "", 0; ; pages++ {
				page, next, err := audit.SafetyEvents(ctx, "acme", cursor, 2)
				if err != nil || len(page) > 2 || pages > 3 {
					t.Fatalf("page %d after %q = %d records, %v; want at most 2, 3 pages", pages, cursor, len(page), err)
				}
				if len(page) == 0 {
					if next != cursor {
						t.Errorf("empty page: next %q, want the cursor %q again", next, cursor)
					}
					break
				}
				for _, r := range page {
					paged = append(paged, r.Turn)
				}
				cursor = next
			}
			if want := []string{"turn-0", "turn-1", "turn-2", "turn-3", "turn-4"}; !slices.Equal(paged, want) {
				t.Errorf("paged turns %v, want %v", paged, want)
			}

			// The stream holds the record and nothing else.
			raw, err := f.client.XRange(ctx, audit.key("acme"), "-", "+").Result()
			if err != nil || len(raw) != 5 {
				t.Fatalf("XRANGE = %d entries, %v", len(raw), err)
			}
			allowed := []string{"time", "session", "learner", "turn", "stage", "classifier", "ran", "categories", "severity", "rules", "action", "mode", "latencyMs"}
			for _, m := range raw {
				if len(m.Values) != 1 || m.Values["r"] == nil {
					t.Fatalf("entry %s has members %v, want only r", m.ID, m.Values)
				}
				var members map[string]json.RawMessage
				if err := json.Unmarshal([]byte(m.Values["r"].(string)), &members); err != nil {
					t.Fatal(err)
				}
				for k := range members {
					if !slices.Contains(allowed, k) {
						t.Errorf("entry %s holds %q, which is no audit field", m.ID, k)
					}
				}
			}
			if ttl, err := f.client.PTTL(ctx, audit.key("acme")).Result(); err != nil || ttl <= 0 || ttl > time.Hour {
				t.Errorf("PTTL of the stream = %v, %v; want it to expire within the retention", ttl, err)
			}
		})
	}
}

func recordsEqual(a, b safety.Record) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y) && a.Tenant == b.Tenant
}

func TestSafetyEventsBadCursor(t *testing.T) {
	audit := NewSafetyAudit(nil, "", time.Hour, 0)
	for _, after := range []string{"x", "1", "1-", "-1", "1-2-3", "(1-0", "99999999999999999999-0"} {
		_, _, err := audit.SafetyEvents(context.Background(), "acme", after, 10)
		if e := coach.AsError(err); e.Code != coach.CodeInvalidInput || e.Field != "after" {
			t.Errorf("after %q: error %v, want invalid_input on after", after, err)
		}
	}
}

// TestSafetyAuditRetention ages records past the retention: the reader answers none of them,
// the next write trims them away, and a stream no longer written expires as a whole.
func TestSafetyAuditRetention(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			const retention = time.Minute
			audit := NewSafetyAudit(f.client, f.prefix, retention, 0)
			if err := audit.Audit(ctx, []safety.Record{auditRecord("acme", 0), auditRecord("acme", 1)}); err != nil {
				t.Fatal(err)
			}
			_, cursor, err := audit.SafetyEvents(ctx, "acme", "", 1)
			if err != nil || cursor == "" {
				t.Fatalf("first page: cursor %q, %v", cursor, err)
			}

			later := time.Now().Add(retention + time.Second)
			audit.now = func() time.Time { return later }
			for _, after := range []string{"", cursor, "0-0"} {
				if got, _, err := audit.SafetyEvents(ctx, "acme", after, 10); err != nil || len(got) != 0 {
					t.Errorf("after %q past the retention: %d records, %v; want none", after, len(got), err)
				}
			}
			if b.mini != nil {
				// miniredis trims exactly: the next write, at the later time, leaves only itself
				// (Redis trims whole stream nodes, so on it only the reader's cutoff is exact).
				b.mini.SetTime(later)
				if err := audit.Audit(ctx, []safety.Record{auditRecord("acme", 2)}); err != nil {
					t.Fatal(err)
				}
				if n, err := f.client.XLen(ctx, audit.key("acme")).Result(); err != nil || n != 1 {
					t.Errorf("XLEN after a write past the retention = %d, %v; want 1", n, err)
				}
				b.mini.FastForward(retention + time.Second)
				if n, err := f.client.Exists(ctx, audit.key("acme")).Result(); err != nil || n != 0 {
					t.Errorf("the stream exists %d (%v) a retention after its last write, want it gone", n, err)
				}
			}
		})
	}
}

// TestSafetyAuditTenantIsolation floods one tenant's audit far past its bound: the flood trims
// only that tenant's stream, and another tenant's records all stay.
func TestSafetyAuditTenantIsolation(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			const bound = 100
			audit := NewSafetyAudit(f.client, f.prefix, time.Hour, bound)
			if err := audit.Audit(ctx, []safety.Record{auditRecord("quiet", 0), auditRecord("quiet", 1), auditRecord("quiet", 2)}); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				batch := make([]safety.Record, 100)
				for i := range batch {
					batch[i] = auditRecord("noisy", i)
				}
				if err := audit.Audit(ctx, batch); err != nil {
					t.Fatal(err)
				}
			}
			n, err := f.client.XLen(ctx, audit.key("noisy")).Result()
			// Redis trims whole stream nodes (100 entries by default), so up to one node more.
			if err != nil || n < bound || n > 2*bound {
				t.Errorf("the flooding tenant's stream holds %d records (%v), want about %d", n, err, bound)
			}
			quiet, _, err := audit.SafetyEvents(ctx, "quiet", "", 1000)
			if err != nil || len(quiet) != 3 {
				t.Errorf("the quiet tenant reads %d records (%v) after another's flood, want its 3", len(quiet), err)
			}
		})
	}
}

// TestSafetyAuditUnavailable: a store that does not answer is store_unavailable on both sides.
func TestSafetyAuditUnavailable(t *testing.T) {
	b := embeddedBackend(t, "miniredis")
	audit := NewSafetyAudit(b.dial(t), "", time.Hour, 0)
	b.mini.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := audit.Audit(ctx, []safety.Record{auditRecord("acme", 0)}); !errors.Is(err, coach.ErrUnavailable) {
		t.Errorf("Audit with the store down: %v, want unavailable", err)
	}
	if _, _, err := audit.SafetyEvents(ctx, "acme", "", 10); !errors.Is(err, coach.ErrUnavailable) {
		t.Errorf("SafetyEvents with the store down: %v, want unavailable", err)
	}
}

// TestAuditBatcherTenantShare: one tenant flooding the batcher (its turns outrunning the store)
// fills only its own share of the queue, and another tenant's records still go out whole.
func TestAuditBatcherTenantShare(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			audit := NewSafetyAudit(f.client, f.prefix, time.Hour, 0)
			batcher := NewAuditBatcher(audit, time.Hour, nil)
			t.Cleanup(func() { _ = batcher.Close(ctx) })

			flood := make([]safety.Record, 10*auditTenantQueueMax)
			for i := range flood {
				flood[i] = auditRecord("noisy", i)
			}
			if err := batcher.Audit(ctx, flood); !errors.Is(err, errAuditQueueFull) {
				t.Errorf("a flood of %d records: %v, want %v", len(flood), err, errAuditQueueFull)
			}
			quiet := []safety.Record{auditRecord("quiet", 0), auditRecord("quiet", 1), auditRecord("quiet", 2)}
			if err := batcher.Audit(ctx, quiet); err != nil {
				t.Errorf("the quiet tenant's records after the flood: %v, want them queued", err)
			}
			if err := batcher.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got, _, err := audit.SafetyEvents(ctx, "quiet", "", 1000)
			if err != nil || len(got) != len(quiet) {
				t.Errorf("the quiet tenant reads %d records (%v), want its %d", len(got), err, len(quiet))
			}
			if n, err := f.client.XLen(ctx, audit.key("noisy")).Result(); err != nil || n != auditTenantQueueMax {
				t.Errorf("the flooding tenant's stream holds %d records (%v), want its share, %d", n, err, auditTenantQueueMax)
			}
		})
	}
}

// TestSafetyAuditLearnerShare attacks the audit from one learner's side: a held learner's
// turns, each one record, flood the tenant's stream far past its bound. The learner writes its
// daily share (a hundredth of the bound) and its crisis record; the records another learner of
// the tenant wrote before stay, all of them, and that learner still writes its own.
func TestSafetyAuditLearnerShare(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			const bound = 1000
			audit := NewSafetyAudit(f.client, f.prefix, time.Hour, bound)
			record := func(learner string, n int, action safety.Action) safety.Record {
				r := auditRecord("acme", n)
				r.Learner, r.Action = safety.Learner{Ref: learner}, action
				return r
			}
			var quiet []safety.Record
			for i := range 5 {
				quiet = append(quiet, record("quiet", i, safety.ActionNone))
			}
			if err := audit.Audit(ctx, quiet); err != nil {
				t.Fatal(err)
			}
			if err := audit.Audit(ctx, []safety.Record{record("flooder", 0, safety.ActionCrisis)}); err != nil {
				t.Fatal(err)
			}
			for range 30 {
				batch := make([]safety.Record, 100)
				for i := range batch {
					batch[i] = record("flooder", i, safety.ActionHeld)
				}
				if err := audit.Audit(ctx, batch); err != nil {
					t.Fatal(err)
				}
			}
			if err := audit.Audit(ctx, []safety.Record{record("quiet", 99, safety.ActionNone)}); err != nil {
				t.Fatal(err)
			}
			events, _, err := audit.SafetyEvents(ctx, "acme", "", 5000)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, e := range events {
				got[e.Learner.Ref+"/"+string(e.Action)]++
			}
			want := map[string]int{"quiet/none": 6, "flooder/crisis": 1, "flooder/held": bound/learnerShareDivisor - 1}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s records: got %d, want %d (all: %v)", k, got[k], n, got)
				}
			}
		})
	}
}
