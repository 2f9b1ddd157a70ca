// Package storetest is the conformance suite of coach.Store: the behaviour the engine relies on,
// checked through the interface alone, so that every store (redisstore on a single server and on
// a Cluster, and coachtest.MemStore that the engine's tests use) is held to the same rules and
// the in-memory one cannot drift from the real one unnoticed. The optional interfaces the
// engine type-asserts (coach.LearnerStore, coach.SafetyAudit with coach.LearnerAudit) are
// checked when the store has them.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// ttl is the lock TTL of the suite's claims: long enough never to expire during a test.
const ttl = time.Minute

// Run runs the conformance suite, one subtest per rule, each on a new store from newStore. The
// stores of one run may share a backend: every case uses sessions and learners of its own.
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
	{"the safety audit finds and erases one learner's records", func(t *testing.T, s coach.Store) {
		a, ok := s.(LearnerSafetyAudit)
		if !ok {
			t.Skip("the store is no learner's safety audit; RunAudit checks a separate one")
		}
		auditCase(t, a)
	}},
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
