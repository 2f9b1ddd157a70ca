// Package storetest is the conformance suite of coach.Store: the behaviour the engine relies on,
// checked through the interface alone, so that every store (redisstore on a single server and on
// a Cluster, and coachtest.MemStore that the engine's tests use) is held to the same rules and
// the in-memory one cannot drift from the real one unnoticed. The other store ports the engine
// type-asserts (coach.UsageStore, coach.LearnerStore, coach.LearnerTombstones,
// coach.LearnerHolds, coach.SafetyAudit with coach.LearnerAudit) are checked when the store has
// them, and their cases are skipped when it has not.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// ttl is the lock TTL of the suite's claims: long enough never to expire during a test.
const ttl = time.Minute

// Run runs the conformance suite, one subtest per rule, each on a new store from newStore. The
// stores of one run may share a backend: every case uses sessions and learners of its own, and
// every budget case a tenant of its own.
func Run(t *testing.T, newStore func(t *testing.T) coach.Store) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s coach.Store)
}{
	{"Ping answers", func(t *testing.T, s coach.Store) {
		if err := s.Ping(context.Background()); err != nil {
			t.Errorf("Ping = %v, want nil", err)
		}
	}},
	{"Get returns what Create stored", func(t *testing.T, s coach.Store) {
		want := create(t, s, "acme", "")
		same(t, get(t, s, "acme", want.ID), want)
	}},
	{"a missing session is not found everywhere", func(t *testing.T, s coach.Store) {
		ctx, id := context.Background(), coach.NewID()
		_, err := s.Get(ctx, "acme", id)
		wantErr(t, "Get", err, coach.ErrNotFound)
		_, _, err = s.Claim(ctx, "acme", id, ttl)
		wantErr(t, "Claim", err, coach.ErrNotFound)
		_, err = s.Transcript(ctx, "acme", id, 0, 10)
		wantErr(t, "Transcript", err, coach.ErrNotFound)
		wantErr(t, "Delete", s.Delete(ctx, "acme", id), nil)
	}},
	{"another tenant's session is not found, even while it is claimed", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		_, err := s.Get(ctx, "globex", sess.ID)
		wantErr(t, "Get", err, coach.ErrNotFound)
		_, _, err = s.Claim(ctx, "globex", sess.ID, ttl)
		wantErr(t, "Claim of a busy session", err, coach.ErrNotFound)
		_, err = s.Transcript(ctx, "globex", sess.ID, 0, 10)
		wantErr(t, "Transcript", err, coach.ErrNotFound)
		wantErr(t, "Delete", s.Delete(ctx, "globex", sess.ID), nil)
		// The other tenant's Delete left the session and its lock alone.
		commit(t, s, next(claimed), token)
	}},
	{"Delete removes the session and its transcript", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		commitWith(t, s, next(claimed), token, entries(2))
		wantErr(t, "Delete", s.Delete(ctx, "acme", sess.ID), nil)
		_, err := s.Get(ctx, "acme", sess.ID)
		wantErr(t, "Get after Delete", err, coach.ErrNotFound)
		_, err = s.Transcript(ctx, "acme", sess.ID, 0, 10)
		wantErr(t, "Transcript after Delete", err, coach.ErrNotFound)
		wantErr(t, "Delete again", s.Delete(ctx, "acme", sess.ID), nil)
	}},
	{"a claimed session is busy until its commit", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		same(t, claimed, sess)
		if token == "" {
			t.Fatal("Claim returned an empty token")
		}
		_, _, err := s.Claim(ctx, "acme", sess.ID, ttl)
		wantErr(t, "second Claim", err, coach.ErrBusy)
		n := next(claimed)
		commit(t, s, n, token)
		same(t, get(t, s, "acme", sess.ID), n)
		again, token2 := claim(t, s, "acme", sess.ID)
		same(t, again, n)
		if token2 == token {
			t.Errorf("the next claim's token = the last one's %q, want a new one", token)
		}
	}},
	{"Commit with a foreign token conflicts and writes nothing", func(t *testing.T, s coach.Store) {
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		wantErr(t, "Commit", s.Commit(context.Background(), next(claimed), "not-"+token, coach.CommitExtra{Transcript: entries(1)}), coach.ErrConflict)
		same(t, get(t, s, "acme", sess.ID), sess)
		wantTranscript(t, s, sess.ID, 0)
		// The holder's lock is untouched.
		commit(t, s, next(claimed), token)
	}},
	{"Commit of a version that does not follow the stored one conflicts", func(t *testing.T, s coach.Store) {
		for _, skew := range []int64{0, 2, -1} {
			sess := create(t, s, "acme", "")
			claimed, token := claim(t, s, "acme", sess.ID)
			n := next(claimed)
			n.Version = sess.Version + skew
			wantErr(t, "Commit of a skewed version", s.Commit(context.Background(), n, token, coach.CommitExtra{}), coach.ErrConflict)
			same(t, get(t, s, "acme", sess.ID), sess)
		}
	}},
	{"Commit under another tenant conflicts", func(t *testing.T, s coach.Store) {
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		n := next(claimed)
		n.Tenant = "globex"
		wantErr(t, "Commit", s.Commit(context.Background(), n, token, coach.CommitExtra{}), coach.ErrConflict)
		same(t, get(t, s, "acme", sess.ID), sess)
	}},
	{"Commit after Release conflicts", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		wantErr(t, "Release", s.Release(ctx, sess.ID, token), nil)
		wantErr(t, "Commit", s.Commit(ctx, next(claimed), token, coach.CommitExtra{}), coach.ErrConflict)
		same(t, get(t, s, "acme", sess.ID), sess)
	}},
	{"Commit of a deleted session conflicts", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		wantErr(t, "Delete", s.Delete(ctx, "acme", sess.ID), nil)
		wantErr(t, "Commit", s.Commit(ctx, next(claimed), token, coach.CommitExtra{}), coach.ErrConflict)
		_, err := s.Get(ctx, "acme", sess.ID)
		wantErr(t, "Get", err, coach.ErrNotFound)
	}},
	{"a commit resent after its success succeeds without writing again", func(t *testing.T, s coach.Store) {
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		n := next(claimed)
		commitWith(t, s, n, token, entries(2))
		commitWith(t, s, n, token, entries(2))
		same(t, get(t, s, "acme", sess.ID), n)
		wantTranscript(t, s, sess.ID, 2)
	}},
	{"Release with a foreign token leaves the lock", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		_, token := claim(t, s, "acme", sess.ID)
		wantErr(t, "Release with a foreign token", s.Release(ctx, sess.ID, "not-"+token), nil)
		_, _, err := s.Claim(ctx, "acme", sess.ID, ttl)
		wantErr(t, "Claim", err, coach.ErrBusy)
		wantErr(t, "Release", s.Release(ctx, sess.ID, token), nil)
		claim(t, s, "acme", sess.ID)
	}},
	{"Renew holds only with the lock's token", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		claimed, token := claim(t, s, "acme", sess.ID)
		wantErr(t, "Renew", s.Renew(ctx, sess.ID, token, ttl), nil)
		wantErr(t, "Renew with a foreign token", s.Renew(ctx, sess.ID, "not-"+token, ttl), coach.ErrConflict)
		commit(t, s, next(claimed), token)
		wantErr(t, "Renew after the commit", s.Renew(ctx, sess.ID, token, ttl), coach.ErrConflict)
	}},
	{"the transcript is numbered across commits and paged oldest first", func(t *testing.T, s coach.Store) {
		ctx := context.Background()
		sess := create(t, s, "acme", "")
		for _, n := range []int{3, 2, 4} {
			claimed, token := claim(t, s, "acme", sess.ID)
			commitWith(t, s, next(claimed), token, entries(n))
		}
		wantTranscript(t, s, sess.ID, 9)
		pages := []struct {
			before   int64
			limit    int
			from, to int64
			wantNext int64
		}{
			{0, 4, 6, 9, 6},
			{6, 4, 2, 5, 2},
			{2, 4, 1, 1, 0},
			{0, 100, 1, 9, 0},
		}
		for _, p := range pages {
			page, err := s.Transcript(ctx, "acme", sess.ID, p.before, p.limit)
			if err != nil {
				t.Fatalf("Transcript(before %d, limit %d): %v", p.before, p.limit, err)
			}
			var seqs []int64
			for _, e := range page.Entries {
				seqs = append(seqs, e.Seq)
			}
			var want []int64
			for q := p.from; q <= p.to; q++ {
				want = append(want, q)
			}
			if !slices.Equal(seqs, want) || page.Next != p.wantNext {
				t.Errorf("Transcript(before %d, limit %d) = seqs %v next %d, want %v next %d", p.before, p.limit, seqs, page.Next, want, p.wantNext)
			}
		}
	}},
	{"the learner index lists the learner's sessions of the tenant", func(t *testing.T, s coach.Store) {
		ls, ok := s.(coach.LearnerStore)
		if !ok {
			t.Skip("the store keeps no learner index")
		}
		ctx := context.Background()
		learner := "pupil-" + coach.NewID()
		mine := []string{create(t, s, "acme", learner).ID, create(t, s, "acme", learner).ID}
		other := create(t, s, "acme", "other-"+learner).ID
		otherTenant := create(t, s, "globex", learner).ID
		got, err := ls.LearnerSessions(ctx, "acme", learner)
		if err != nil {
			t.Fatalf("LearnerSessions: %v", err)
		}
		for _, id := range mine {
			if !slices.Contains(got, id) {
				t.Errorf("LearnerSessions = %v, want it to hold %s", got, id)
			}
		}
		if slices.Contains(got, otherTenant) {
			t.Errorf("LearnerSessions of acme = %v, holds globex's session %s", got, otherTenant)
		}
		none, err := ls.LearnerSessions(ctx, "acme", "never-"+learner)
		if err != nil || len(none) != 0 {
			t.Errorf("LearnerSessions of a learner never seen = %v, %v, want none", none, err)
		}
		wantErr(t, "EraseLearner", ls.EraseLearner(ctx, "acme", learner), nil)
		for _, id := range mine {
			_, err := s.Get(ctx, "acme", id)
			wantErr(t, "Get of an erased session", err, coach.ErrNotFound)
		}
		if got, _ := ls.LearnerSessions(ctx, "acme", learner); len(got) != 0 {
			t.Errorf("LearnerSessions after EraseLearner = %v, want none", got)
		}
		get(t, s, "acme", other)
		get(t, s, "globex", otherTenant)
		wantErr(t, "EraseLearner again", ls.EraseLearner(ctx, "acme", learner), nil)
	}},
	{"a learner's hold is the learner's of the tenant, and only its episode's clear ends it", func(t *testing.T, s coach.Store) {
		lh, ok := s.(coach.LearnerHolds)
		if !ok {
			t.Skip("the store keeps no learner holds")
		}
		ctx := context.Background()
		learner := "pupil-" + coach.NewID()
		since := time.Now().UTC().Truncate(time.Millisecond)
		wantHold(t, lh, "acme", learner, "")
		for _, ep := range []string{"episode-1", "episode-2"} {
			wantErr(t, "HoldLearner", lh.HoldLearner(ctx, "acme", learner, coach.SafetyHold{Hold: true, Since: since, Episode: ep}), nil)
		}
		wantErr(t, "ClearLearnerHold of the replaced episode", lh.ClearLearnerHold(ctx, "acme", learner, "episode-1"), nil)
		if h := wantHold(t, lh, "acme", learner, "episode-2"); h != nil && (!h.Hold || !h.Since.Equal(since)) {
			t.Errorf("LearnerHold = %+v, want held since %v", h, since)
		}
		wantHold(t, lh, "globex", learner, "")
		wantHold(t, lh, "acme", "other-"+learner, "")
		wantErr(t, "ClearLearnerHold by another tenant", lh.ClearLearnerHold(ctx, "globex", learner, "episode-2"), nil)
		wantHold(t, lh, "acme", learner, "episode-2")
		wantErr(t, "ClearLearnerHold", lh.ClearLearnerHold(ctx, "acme", learner, "episode-2"), nil)
		wantHold(t, lh, "acme", learner, "")
		wantErr(t, "ClearLearnerHold of no hold", lh.ClearLearnerHold(ctx, "acme", learner, "episode-2"), nil)
		ls, ok := s.(coach.LearnerStore)
		if !ok {
			return
		}
		wantErr(t, "HoldLearner", lh.HoldLearner(ctx, "acme", learner, coach.SafetyHold{Hold: true, Since: since, Episode: "episode-3"}), nil)
		wantErr(t, "EraseLearner", ls.EraseLearner(ctx, "acme", learner), nil)
		wantHold(t, lh, "acme", learner, "")
	}},
	{"a tombstone tells when the learner of the tenant was last erased", func(t *testing.T, s coach.Store) {
		ts, ok := s.(coach.LearnerTombstones)
		if !ok {
			t.Skip("the store keeps no tombstones")
		}
		ctx := context.Background()
		learner := "pupil-" + coach.NewID()
		wantErased(t, ts, "acme", learner, time.Time{})
		first := time.Now().UTC().Truncate(time.Millisecond)
		wantErr(t, "MarkErased", ts.MarkErased(ctx, "acme", learner, first, ttl), nil)
		wantErased(t, ts, "acme", learner, first)
		wantErased(t, ts, "globex", learner, time.Time{})
		wantErased(t, ts, "acme", "other-"+learner, time.Time{})
		later := first.Add(time.Minute)
		wantErr(t, "MarkErased again", ts.MarkErased(ctx, "acme", learner, later, ttl), nil)
		wantErased(t, ts, "acme", learner, later)
	}},
	{"a reservation within the budget comes with the claim, and the commit settles it", func(t *testing.T, s coach.Store) {
		us := usageStore(t, s)
		b := newBudget(t, s, us, 100)
		sess := create(t, s, b.tenant, "")
		claimed, token := b.reserve(t, sess.ID, "t1", 100, coach.Granted)
		same(t, claimed, sess)
		_, _, err := s.Claim(context.Background(), b.tenant, sess.ID, ttl)
		wantErr(t, "Claim of the reserved session", err, coach.ErrBusy)
		// The reservation fills the budget until the turn settles what it used.
		other := create(t, s, b.tenant, "").ID
		_, busy := b.reserve(t, other, "t2", 1, coach.BudgetBusy)
		wantErr(t, "Release", s.Release(context.Background(), other, busy), nil)
		b.settle(t, claimed, token, "t1", 10)
		_, token = b.reserve(t, other, "t3", 1, coach.Granted)
		wantErr(t, "Release", s.Release(context.Background(), other, token), nil)
	}},
	{"a claim reserving another tenant's or a missing session is not found", func(t *testing.T, s coach.Store) {
		us := usageStore(t, s)
		b := newBudget(t, s, us, 100)
		sess := create(t, s, "acme", "")
		for _, id := range []string{sess.ID, coach.NewID()} {
			_, _, _, err := us.ClaimReserving(context.Background(), b.tenant, id, ttl, b.reservation(id, coach.NewID(), 10))
			wantErr(t, "ClaimReserving", err, coach.ErrNotFound)
		}
		claim(t, s, "acme", sess.ID)
	}},
	{"a tenant that spent its budget is refused; other tenants and the next day are not", func(t *testing.T, s coach.Store) {
		us := usageStore(t, s)
		ctx := context.Background()
		b := newBudget(t, s, us, 100)
		sess := create(t, s, b.tenant, "")
		claimed, token := b.reserve(t, sess.ID, "t1", 10, coach.Granted)
		b.settle(t, claimed, token, "t1", 100)
		// The refused reservation still claims the session, for the caller to release.
		_, token = b.reserve(t, sess.ID, "t2", 10, coach.BudgetSpent)
		_, _, err := s.Claim(ctx, b.tenant, sess.ID, ttl)
		wantErr(t, "Claim of a session claimed by a refused reservation", err, coach.ErrBusy)
		wantErr(t, "ReleaseCharging with no charge", us.ReleaseCharging(ctx, sess.ID, token, nil), nil)
		// One tenant's spending refuses no one else, nor its own next day.
		other := newBudget(t, s, us, 100)
		other.reserve(t, create(t, s, other.tenant, "").ID, "t1", 10, coach.Granted)
		tomorrow := *b
		tomorrow.day = b.day.Add(24 * time.Hour)
		claimed, token = tomorrow.reserve(t, sess.ID, "t3", 10, coach.Granted)
		commit(t, s, next(claimed), token)
	}},
	{"a turn is charged once however often its settlement is sent", func(t *testing.T, s coach.Store) {
		us := usageStore(t, s)
		ctx := context.Background()
		b := newBudget(t, s, us, 100)
		sess := create(t, s, b.tenant, "")
		claimed, token := b.reserve(t, sess.ID, "t1", 10, coach.Granted)
		n := next(claimed)
		charge := b.usage(sess.ID, "t1", 60)
		for range 2 {
			wantErr(t, "Commit", s.Commit(ctx, n, token, coach.CommitExtra{Usage: charge}), nil)
		}
		wantErr(t, "ReleaseCharging of the committed turn", us.ReleaseCharging(ctx, sess.ID, token, charge), nil)
		// Charged once, 60 of 100 leave room; charged twice they would not.
		claimed, token = b.reserve(t, sess.ID, "t2", 1, coach.Granted)
		// A commit that conflicts settles all the same: the tokens were spent.
		wantErr(t, "Commit with a foreign token", s.Commit(ctx, next(claimed), "not-"+token, coach.CommitExtra{Usage: b.usage(sess.ID, "t2", 40)}), coach.ErrConflict)
		wantErr(t, "Release", s.Release(ctx, sess.ID, token), nil)
		_, token = b.reserve(t, sess.ID, "t3", 1, coach.BudgetSpent)
		wantErr(t, "Release", s.Release(ctx, sess.ID, token), nil)
	}},
	{"a session's largest attempt raises what its own turns reserve, not other sessions'", func(t *testing.T, s coach.Store) {
		us := usageStore(t, s)
		ctx := context.Background()
		b := newBudget(t, s, us, 540)
		big := create(t, s, b.tenant, "")
		claimed, token := b.reserve(t, big.ID, "t1", 10, coach.Granted)
		charge := b.usage(big.ID, "t1", 50)
		charge.Largest = 500
		wantErr(t, "Commit", s.Commit(ctx, next(claimed), token, coach.CommitExtra{Usage: charge}), nil)
		// Other sessions reserve their own estimates: 50 charged and 20 reserved leave room.
		for i := range 2 {
			b.reserve(t, create(t, s, b.tenant, "").ID, fmt.Sprint("small-", i), 10, coach.Granted)
		}
		// The big session's turn reserves its largest attempt, 500: 570 fill the budget.
		b.reserve(t, big.ID, "t2", 10, coach.Granted)
		b.reserve(t, create(t, s, b.tenant, "").ID, "t3", 10, coach.BudgetBusy)
	}},
	{"the safety audit finds and erases one learner's records", func(t *testing.T, s coach.Store) {
		a, ok := s.(LearnerSafetyAudit)
		if !ok {
			t.Skip("the store is no learner's safety audit; RunAudit checks a separate one")
		}
		auditCase(t, a)
	}},
}

// wantHold fails t unless the hold of learner of tenant is of episode ("": no hold), and
// returns it.
func wantHold(t *testing.T, lh coach.LearnerHolds, tenant, learner, episode string) *coach.SafetyHold {
	t.Helper()
	h, err := lh.LearnerHold(context.Background(), tenant, learner)
	switch {
	case err != nil:
		t.Errorf("LearnerHold(%s, %s): %v", tenant, learner, err)
	case episode == "" && h != nil:
		t.Errorf("LearnerHold(%s, %s) = %+v, want none", tenant, learner, h)
	case episode != "" && (h == nil || h.Episode != episode):
		t.Errorf("LearnerHold(%s, %s) = %+v, want the hold of %s", tenant, learner, h, episode)
	}
	return h
}

// wantErased fails t unless the tombstone of learner of tenant says it was erased at want
// (zero: no tombstone).
func wantErased(t *testing.T, ts coach.LearnerTombstones, tenant, learner string, want time.Time) {
	t.Helper()
	at, ok, err := ts.ErasedAt(context.Background(), tenant, learner)
	if err != nil || ok != !want.IsZero() || !at.Equal(want) {
		t.Errorf("ErasedAt(%s, %s) = %v, %v, %v; want %v, %v", tenant, learner, at, ok, err, want, !want.IsZero())
	}
}

// usageStore returns s as a coach.UsageStore, skipping t when it keeps no budgets.
func usageStore(t *testing.T, s coach.Store) coach.UsageStore {
	t.Helper()
	us, ok := s.(coach.UsageStore)
	if !ok {
		t.Skip("the store keeps no token budgets")
	}
	return us
}

// budget is a tenant of its own with a daily token budget, so that no other case's turns
// count against it.
type budget struct {
	s      coach.Store
	us     coach.UsageStore
	tenant string
	day    time.Time
	tokens int64
}

func newBudget(t *testing.T, s coach.Store, us coach.UsageStore, tokens int64) *budget {
	t.Helper()
	return &budget{s: s, us: us, tenant: "budget-" + coach.NewID(), day: time.Now().UTC(), tokens: tokens}
}

// reservation returns the reservation of turn on session id, estimated at tokens.
func (b *budget) reservation(id, turn string, tokens int64) coach.Reservation {
	return coach.Reservation{Turn: turn, Tenant: b.tenant, Day: b.day, Budget: b.tokens, Session: id, Tokens: tokens}
}

// reserve claims session id reserving tokens for turn, and fails t unless the reservation's
// answer is want. The session is claimed whatever the answer.
func (b *budget) reserve(t *testing.T, id, turn string, tokens int64, want coach.Refusal) (*coach.Session, string) {
	t.Helper()
	sess, token, refusal, err := b.us.ClaimReserving(context.Background(), b.tenant, id, ttl, b.reservation(id, turn, tokens))
	if err != nil {
		t.Fatalf("ClaimReserving of turn %s: %v", turn, err)
	}
	if refusal != want {
		t.Errorf("ClaimReserving of turn %s = refusal %d, want %d", turn, refusal, want)
	}
	return sess, token
}

// usage returns the settlement of turn on session id that charges prompt tokens.
func (b *budget) usage(id, turn string, prompt int) *coach.TenantUsage {
	return &coach.TenantUsage{Turn: turn, Tenant: b.tenant, Day: b.day, Usage: coach.Usage{PromptTokens: prompt}, Session: id}
}

// settle commits the next version of the claimed session, charging prompt tokens to turn.
func (b *budget) settle(t *testing.T, claimed *coach.Session, token, turn string, prompt int) {
	t.Helper()
	if err := b.s.Commit(context.Background(), next(claimed), token, coach.CommitExtra{Usage: b.usage(claimed.ID, turn, prompt)}); err != nil {
		t.Fatalf("Commit settling turn %s: %v", turn, err)
	}
}

// LearnerSafetyAudit is a safety audit that finds and erases one learner's records, as the
// engine's Deps.SafetyAudit and Deps.LearnerAudit are when they are one value.
type LearnerSafetyAudit interface {
	coach.SafetyAudit
	coach.LearnerAudit
}

// RunAudit runs the suite's audit case on an audit kept apart from the store (redisstore's
// SafetyAudit), on a new audit from newAudit.
func RunAudit(t *testing.T, newAudit func(t *testing.T) LearnerSafetyAudit) {
	t.Run("a separate safety audit finds and erases one learner's records", func(t *testing.T) { auditCase(t, newAudit(t)) })
}

// auditCase checks that a learner's records are found oldest first, only the learner's of the
// tenant, and erased without touching anyone else's.
func auditCase(t *testing.T, a LearnerSafetyAudit) {
	ctx := context.Background()
	learner := "pupil-" + coach.NewID()
	rec := func(tenant, learner, session string) safety.Record {
		return safety.Record{Tenant: tenant, Learner: safety.Learner{Ref: learner}, Session: session}
	}
	first, second := rec("acme", learner, coach.NewID()), rec("acme", learner, coach.NewID())
	wantErr(t, "Audit", a.Audit(ctx, []safety.Record{first, rec("acme", "other-"+learner, coach.NewID()), rec("globex", learner, coach.NewID())}), nil)
	wantErr(t, "Audit", a.Audit(ctx, []safety.Record{second}), nil)
	if got := events(t, a, "acme", learner); !slices.Equal(got, []string{first.Session, second.Session}) {
		t.Errorf("LearnerSafetyEvents = sessions %v, want %v oldest first", got, []string{first.Session, second.Session})
	}
	stop := errors.New("stop")
	if err := a.LearnerSafetyEvents(ctx, "acme", learner, func(safety.Record) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("LearnerSafetyEvents with a failing callback = %v, want its error", err)
	}
	wantErr(t, "EraseLearnerSafetyEvents", a.EraseLearnerSafetyEvents(ctx, "acme", learner), nil)
	if got := events(t, a, "acme", learner); len(got) != 0 {
		t.Errorf("LearnerSafetyEvents after the erasure = %v, want none", got)
	}
	if got := events(t, a, "acme", "other-"+learner); len(got) != 1 {
		t.Errorf("another learner's records after the erasure = %v, want its one", got)
	}
	if got := events(t, a, "globex", learner); len(got) != 1 {
		t.Errorf("another tenant's records after the erasure = %v, want its one", got)
	}
	wantErr(t, "EraseLearnerSafetyEvents again", a.EraseLearnerSafetyEvents(ctx, "acme", learner), nil)
}

// events returns the sessions of learner's audit records, in the order the audit gives them.
func events(t *testing.T, la coach.LearnerAudit, tenant, learner string) []string {
	t.Helper()
	var out []string
	if err := la.LearnerSafetyEvents(context.Background(), tenant, learner, func(r safety.Record) error {
		out = append(out, r.Session)
		return nil
	}); err != nil {
		t.Fatalf("LearnerSafetyEvents: %v", err)
	}
	return out
}

// create stores a new version-1 session of tenant and learner (empty: none).
func create(t *testing.T, s coach.Store, tenant, learner string) *coach.Session {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &coach.Session{
		ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1,
		State:     json.RawMessage(`{"step":"claim"}`),
		CreatedAt: now, UpdatedAt: now, Tenant: tenant, Learner: learner,
		History: []coach.Message{{Role: coach.RoleUser, Content: "Hello"}},
	}
	if err := s.Create(context.Background(), sess); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return sess
}

func get(t *testing.T, s coach.Store, tenant, id string) *coach.Session {
	t.Helper()
	got, err := s.Get(context.Background(), tenant, id)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", tenant, id, err)
	}
	return got
}

func claim(t *testing.T, s coach.Store, tenant, id string) (*coach.Session, string) {
	t.Helper()
	got, token, err := s.Claim(context.Background(), tenant, id, ttl)
	if err != nil {
		t.Fatalf("Claim(%s, %s): %v", tenant, id, err)
	}
	return got, token
}

func commit(t *testing.T, s coach.Store, n *coach.Session, token string) {
	t.Helper()
	commitWith(t, s, n, token, nil)
}

func commitWith(t *testing.T, s coach.Store, n *coach.Session, token string, tr []coach.TranscriptEntry) {
	t.Helper()
	if err := s.Commit(context.Background(), n, token, coach.CommitExtra{Transcript: tr}); err != nil {
		t.Fatalf("Commit of version %d: %v", n.Version, err)
	}
}

// next returns the session a turn on s commits: one version on, with a new state and message.
func next(s *coach.Session) *coach.Session {
	n := *s
	n.Version++
	n.State = json.RawMessage(`{"step":"grounds"}`)
	n.UpdatedAt = s.UpdatedAt.Add(time.Second)
	n.History = append(slices.Clone(s.History), coach.Message{Role: coach.RoleAssistant, Content: "Why?"})
	return &n
}

// entries returns n learner entries, as a turn commits them (the store numbers them).
func entries(n int) []coach.TranscriptEntry {
	out := make([]coach.TranscriptEntry, n)
	for i := range out {
		out[i] = coach.TranscriptEntry{At: time.Now().UTC().Truncate(time.Millisecond), Role: coach.TranscriptLearner}
	}
	return out
}

// wantTranscript fails t unless the transcript of session id of acme has n entries numbered
// 1 to n.
func wantTranscript(t *testing.T, s coach.Store, id string, n int) {
	t.Helper()
	page, err := s.Transcript(context.Background(), "acme", id, 0, coach.MaxTranscriptPage)
	if err != nil {
		t.Fatalf("Transcript: %v", err)
	}
	for i, e := range page.Entries {
		if e.Seq != int64(i+1) {
			t.Errorf("entry %d has seq %d, want %d", i, e.Seq, i+1)
		}
	}
	if len(page.Entries) != n {
		t.Errorf("transcript has %d entries, want %d", len(page.Entries), n)
	}
}

// same fails t unless got is want as a store keeps it.
func same(t *testing.T, got, want *coach.Session) {
	t.Helper()
	if got.ID != want.ID || got.Contract != want.Contract || got.Locale != want.Locale ||
		got.Version != want.Version || got.Tenant != want.Tenant || got.Learner != want.Learner ||
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
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}
