package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/coachgw/coachgw/internal/safety"
	"github.com/coachgw/coachgw/internal/turns"
)

// LearnerContract runs the learner index, export reads, erasure and retention (wire contract
// v1.3, data rights) as every deployment must show them, one subtest per case.
func LearnerContract(t *testing.T, newFixture func(t *testing.T) *Fixture) {
	for _, tc := range learnerCases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newFixture(t)) })
	}
}

// LearnerKey is the documented key of the index of learner's sessions of tenant.
func (f *Fixture) LearnerKey(tenant, learner string) string {
	return f.Prefix + ":{lrn:" + tenant + ":" + RefHash(learner) + "}"
}

// RefHash is the hash of a learner reference that its index key carries.
func RefHash(learner string) string {
	h := sha256.Sum256([]byte(learner))
	return hex.EncodeToString(h[:])
}

// CreateFor creates a session of learner of tenant.
func (f *Fixture) CreateFor(t *testing.T, tenant, learner string) *coach.Session {
	t.Helper()
	s := NewSession(tenant)
	s.Learner = learner
	if err := f.Store.Create(context.Background(), s); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return s
}

// Dump returns every key under the fixture's prefix with its contents as text (the members of a
// list, set, hash or stream joined), scanning every master of a cluster.
func (f *Fixture) Dump(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	dump := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, f.Prefix+":*", 1000).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				v, err := contents(ctx, c, k)
				if err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				out[k] = v
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	if cc, ok := f.Client.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			mu.Lock() // the masters are visited at once; out is one map
			defer mu.Unlock()
			return dump(ctx, c)
		})
	} else {
		err = dump(ctx, f.Client)
	}
	if err != nil {
		t.Fatalf("dumping the keys: %v", err)
	}
	return out
}

// contents returns the value of key as text, whatever its type.
func contents(ctx context.Context, c redis.Cmdable, key string) (string, error) {
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return "", err
	}
	switch typ {
	case "string":
		return c.Get(ctx, key).Result()
	case "list":
		v, err := c.LRange(ctx, key, 0, -1).Result()
		return strings.Join(v, "\n"), err
	case "set":
		v, err := c.SMembers(ctx, key).Result()
		return strings.Join(v, "\n"), err
	case "hash":
		v, err := c.HGetAll(ctx, key).Result()
		return fmt.Sprint(v), err
	case "stream":
		v, err := c.XRange(ctx, key, "-", "+").Result()
		return fmt.Sprint(v), err
	case "none":
		return "", nil
	}
	return "", fmt.Errorf("unexpected type %s", typ)
}

// learnerTurn commits one turn of session id of tenant with a transcript entry holding text,
// and writes the turn's line log, with the learner's input, as the gateway does.
func learnerTurn(t *testing.T, f *Fixture, tenant, id, text string) {
	t.Helper()
	commitTurns(t, f.Store, tenant, id, []coach.TranscriptEntry{Learner(fmt.Sprintf(`{"message":%q}`, text))})
	log := redisstore.NewTurnLog(f.Client, f.Prefix, "")
	turn := coach.NewID()[:16]
	ctx := context.Background()
	line := []byte(fmt.Sprintf(`{"type":"delta","text":%q}`+"\n", text))
	writes := []turns.Write{
		{Lines: line, State: turns.Running, TTL: time.Hour, Input: []byte(fmt.Sprintf(`{"message":%q}`, text))},
		{First: 1, State: turns.Ended},
	}
	for _, w := range writes {
		if errs := log.Append(ctx, []turns.Entry{{Session: id, Turn: turn, Write: w}}); errs != nil {
			t.Fatalf("turn log Append: %v", errs)
		}
	}
}

// wantTTLWithin fails t unless key expires, within max.
func wantTTLWithin(t *testing.T, f *Fixture, key string, max time.Duration) {
	t.Helper()
	ttl, err := f.Client.PTTL(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	if ttl <= 0 || ttl > max {
		t.Errorf("TTL of %s = %v, want more than 0 and at most %v", key, ttl, max)
	}
}

var learnerCases = []struct {
	name string
	run  func(t *testing.T, f *Fixture)
}{
	{"a session with a learner is indexed by the hash of the reference, in the create's round trip", func(t *testing.T, f *Fixture) {
		var hook redisstore.CountingHook
		f.Client.AddHook(&hook)
		ctx := context.Background()
		// A client's first pipeline may open a connection of its own (its handshake would
		// count); a running gateway's are open.
		if _, err := f.Client.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() }); err != nil {
			t.Fatalf("warming the pool: %v", err)
		}
		s := NewSession("acme")
		s.Learner = "pupil@example.org"
		before := hook.Count()
		if err := f.Store.Create(ctx, s); err != nil {
			t.Fatalf("Create: %v", err)
		}
		// On a cluster the index and the document are in different slots, which no transaction
		// spans: the index's MULTI/EXEC goes first, then the document's SET NX.
		want := int64(1)
		if _, cluster := f.Client.(*redis.ClusterClient); cluster {
			want = 2
		}
		if got := hook.Count() - before; got != want {
			t.Errorf("Create with a learner took %d round trips, want %d", got, want)
		}
		ids, err := f.Store.LearnerSessions(ctx, "acme", s.Learner)
		if err != nil || !slices.Equal(ids, []string{s.ID}) {
			t.Errorf("LearnerSessions = %v, %v, want [%s]", ids, err, s.ID)
		}
		for k := range f.Dump(t) {
			if strings.Contains(k, s.Learner) {
				t.Errorf("key %s holds the learner reference itself", k)
			}
		}
		wantTTLWithin(t, f, f.LearnerKey("acme", s.Learner), redisstore.DefaultRetention)
		if got := f.Get(t, "acme", s.ID).Learner; got != s.Learner {
			t.Errorf("stored learner = %q, want %q", got, s.Learner)
		}
		// Another tenant's learner with the same reference is another learner.
		if ids, err := f.Store.LearnerSessions(ctx, "globex", s.Learner); err != nil || len(ids) != 0 {
			t.Errorf("LearnerSessions of another tenant = %v, %v, want none", ids, err)
		}
		// A session without a learner is in no index.
		plain := f.Create(t, "acme")
		for k, v := range f.Dump(t) {
			if strings.Contains(k, ":{lrn:") && strings.Contains(v, plain.ID) {
				t.Errorf("index %s lists session %s, which has no learner", k, plain.ID)
			}
		}
	}},
	{"a failed create never leaves a session its learner's index does not list", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		var cut outage
		f.Client.AddHook(&cut)
		t.Cleanup(cut.disarm)
		// Redis goes away at the index's write, or at the document's, and stays away: nothing
		// can be undone afterwards. Whichever part was written must not be a session that its
		// learner's export and erasure would miss.
		for _, at := range []string{"index", "document"} {
			learner := "pupil-" + at
			s := NewSession("acme")
			s.Learner = learner
			if at == "index" {
				cut.arm(f.LearnerKey("acme", learner))
			} else {
				cut.arm(f.DocKey(s.ID))
			}
			err := f.Store.Create(ctx, s)
			cut.disarm()
			if err == nil {
				t.Fatalf("Create with Redis gone at the %s's write succeeded", at)
			}
			ids, err := f.Store.LearnerSessions(ctx, "acme", learner)
			if err != nil {
				t.Fatalf("LearnerSessions: %v", err)
			}
			if _, err := f.Store.Get(ctx, "acme", s.ID); err == nil && !slices.Contains(ids, s.ID) {
				t.Errorf("gone at the %s's write: session %s is stored, and its learner's index lists only %v", at, s.ID, ids)
			}
			// An entry left without its document is skipped by the erasure, and goes with it.
			if err := f.Store.EraseLearner(ctx, "acme", learner); err != nil {
				t.Fatalf("EraseLearner after a failed create: %v", err)
			}
			for k := range f.Dump(t) {
				if strings.Contains(k, s.ID) || k == f.LearnerKey("acme", learner) {
					t.Errorf("gone at the %s's write: key %s is left after the learner's erasure", at, k)
				}
			}
		}
	}},
	{"erasure leaves no key and no value of the learner, and every other learner as it was", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		const ref = "pupil-7"
		a1, a2 := f.CreateFor(t, "acme", ref), f.CreateFor(t, "acme", ref)
		b := f.CreateFor(t, "acme", "pupil-8")
		other := f.CreateFor(t, "globex", ref)
		for _, s := range []*coach.Session{a1, a2, b, other} {
			learnerTurn(t, f, s.Tenant, s.ID, "first of "+s.ID)
			learnerTurn(t, f, s.Tenant, s.ID, "second of "+s.ID)
		}
		// A lock of a turn in flight goes too.
		if _, _, err := f.Store.Claim(ctx, "acme", a2.ID, LongTTL); err != nil {
			t.Fatalf("Claim: %v", err)
		}
		before := f.Dump(t)
		if err := f.Store.EraseLearner(ctx, "acme", ref); err != nil {
			t.Fatalf("EraseLearner: %v", err)
		}
		after := f.Dump(t)
		erasedIndex := f.LearnerKey("acme", ref)
		for k, v := range after {
			for _, id := range []string{a1.ID, a2.ID} {
				if strings.Contains(k, id) || strings.Contains(v, id) {
					t.Errorf("after erasure, key %s still refers to erased session %s", k, id)
				}
			}
			if k == erasedIndex {
				t.Errorf("after erasure, the learner's index %s is still there", k)
			}
		}
		// Everything else is exactly as it was.
		for k, v := range before {
			if strings.Contains(k, a1.ID) || strings.Contains(k, a2.ID) || k == erasedIndex {
				continue
			}
			if after[k] != v {
				t.Errorf("key %s changed by the erasure of another learner: %q, was %q", k, after[k], v)
			}
		}
		for _, s := range []*coach.Session{b, other} {
			page, err := f.Store.Transcript(ctx, s.Tenant, s.ID, 0, 10)
			if err != nil || len(page.Entries) != 2 {
				t.Errorf("transcript of %s after the erasure = %d entries, %v, want 2", s.ID, len(page.Entries), err)
			}
		}
		if ids, err := f.Store.LearnerSessions(ctx, "globex", ref); err != nil || !slices.Equal(ids, []string{other.ID}) {
			t.Errorf("another tenant's learner's sessions = %v, %v, want [%s]", ids, err, other.ID)
		}
		// Erasing again, or erasing a learner never seen, is not an error.
		for _, learner := range []string{ref, "never-seen"} {
			if err := f.Store.EraseLearner(ctx, "acme", learner); err != nil {
				t.Errorf("EraseLearner(%s) again: %v", learner, err)
			}
		}
	}},
	{"an index entry that is not the learner's session is never erased", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		victim := f.CreateFor(t, "acme", "pupil-8")
		foreign := f.CreateFor(t, "globex", "pupil-7")
		// Whatever put them there (a hand-edited index, an id collision), the erasure of
		// acme's pupil-7 checks each session's tenant and learner first.
		if err := f.Client.SAdd(ctx, f.LearnerKey("acme", "pupil-7"), victim.ID, foreign.ID).Err(); err != nil {
			t.Fatalf("SADD: %v", err)
		}
		if err := f.Store.EraseLearner(ctx, "acme", "pupil-7"); err != nil {
			t.Fatalf("EraseLearner: %v", err)
		}
		f.Get(t, "acme", victim.ID)
		f.Get(t, "globex", foreign.ID)
	}},
	{"a learner's audit records are found, and erased without a byte left, each tenant's apart", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		audit := redisstore.NewSafetyAudit(f.Client, f.Prefix, time.Hour, 0)
		const ref = "pupil-7"
		record := func(tenant, learner, session string) safety.Record {
			return safety.Record{Time: time.Now().UTC(), Tenant: tenant, Session: session, Learner: safety.Learner{Ref: learner, AssertedBy: "key-1"}, Turn: "t1",
				Stage: safety.StageInput, Classifier: safety.BuiltinName, Categories: []safety.Category{safety.CategorySuicide},
				Severity: safety.SeverityHigh, Action: safety.ActionCrisis, Mode: safety.ModeEnforce}
		}
		a1, a2, b, other := coach.NewID(), coach.NewID(), coach.NewID(), coach.NewID()
		records := []safety.Record{
			record("acme", ref, a1), record("acme", "pupil-70", b), record("acme", ref, a2),
			record("acme", "", b), record("globex", ref, other),
		}
		for _, r := range records { // one Audit each, as turns write them
			if err := audit.Audit(ctx, []safety.Record{r}); err != nil {
				t.Fatalf("Audit: %v", err)
			}
		}
		got, err := learnerEvents(ctx, audit, "acme", ref)
		if err != nil || len(got) != 2 || got[0].Session != a1 || got[1].Session != a2 || got[0].ID == "" {
			t.Fatalf("LearnerSafetyEvents = %+v, %v, want the records of %s and %s, with their ids", got, err, a1, a2)
		}
		before, _, err := audit.SafetyEvents(ctx, "acme", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := audit.EraseLearnerSafetyEvents(ctx, "acme", ref); err != nil {
			t.Fatalf("EraseLearnerSafetyEvents: %v", err)
		}
		for k, v := range f.Dump(t) {
			if strings.Contains(k, "audit:acme") && (strings.Contains(v, a1) || strings.Contains(v, a2) || strings.Contains(v, `"learner":"pupil-7"`)) {
				t.Errorf("after the erasure, %s still holds the learner's records: %s", k, v)
			}
		}
		// Every other record is kept under its own id, so an operator's cursor still holds.
		after, _, err := audit.SafetyEvents(ctx, "acme", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, r := range before {
			if r.Learner.Ref != ref {
				want = append(want, r.ID)
			}
		}
		var gotIDs []string
		for _, r := range after {
			gotIDs = append(gotIDs, r.ID)
		}
		if !slices.Equal(gotIDs, want) || len(want) != 2 {
			t.Errorf("records after the erasure = %v, want the others %v", gotIDs, want)
		}
		wantTTLWithin(t, f, f.Prefix+":{audit:acme}", time.Hour)
		if got, err := learnerEvents(ctx, audit, "globex", ref); err != nil || len(got) != 1 {
			t.Errorf("another tenant's learner's records = %+v, %v, want its one", got, err)
		}
		// Erasing again finds nothing to erase.
		if err := audit.EraseLearnerSafetyEvents(ctx, "acme", ref); err != nil {
			t.Errorf("EraseLearnerSafetyEvents again: %v", err)
		}
	}},
	{"no key of a session outlives its retention, however active the session", func(t *testing.T, f *Fixture) {
		ctx := context.Background()
		const retention = 2 * time.Hour
		store := redisstore.New(f.Client, redisstore.Options{Prefix: f.Prefix, TTL: 24 * time.Hour, Retention: retention})
		s := NewSession("acme")
		s.Learner = "pupil-7"
		s.CreatedAt = s.CreatedAt.Add(-90 * time.Minute)
		if err := store.Create(ctx, s); err != nil {
			t.Fatalf("Create: %v", err)
		}
		left := 30 * time.Minute
		wantTTLWithin(t, f, f.DocKey(s.ID), left)
		wantTTLWithin(t, f, f.LearnerKey("acme", s.Learner), left)
		commitTurns(t, store, "acme", s.ID, turnEntries(1))
		for _, k := range []string{f.DocKey(s.ID), f.TranscriptKey(s.ID), f.TranscriptKey(s.ID) + "m"} {
			wantTTLWithin(t, f, k, left)
		}
		// Past its retention, a claim finds no session and deletes what is left of it.
		late := redisstore.New(f.Client, redisstore.Options{Prefix: f.Prefix, TTL: 24 * time.Hour, Retention: time.Hour})
		if _, _, err := late.Claim(ctx, "acme", s.ID, LongTTL); !errors.Is(err, coach.ErrNotFound) {
			t.Errorf("Claim past the retention: error = %v, want %v", err, coach.ErrNotFound)
		}
		for k := range f.Dump(t) {
			if strings.Contains(k, s.ID) {
				t.Errorf("key %s of a session past its retention is still there", k)
			}
		}
	}},
}

// errOutage is the error of every command an outage stops.
var errOutage = errors.New("storetest: Redis is gone")

// outage is a redis.Hook that plays Redis going away in the middle of an operation: once armed
// with a key, the first command or pipeline (a transaction included) that names that key fails
// without being sent, and so does every one after it, until it is disarmed. Its zero value is
// disarmed; it is safe for concurrent use.
type outage struct {
	mu   sync.Mutex
	at   string
	down bool
}

// arm makes the first command naming key, and every one after it, fail.
func (o *outage) arm(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.at, o.down = key, false
}

// disarm lets every command through again.
func (o *outage) disarm() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.at, o.down = "", false
}

// stops reports whether cmds must fail, and if so sets their error.
func (o *outage) stops(cmds ...redis.Cmder) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.at == "" {
		return false
	}
	for _, c := range cmds {
		if slices.Contains(c.Args()[1:], any(o.at)) {
			o.down = true
		}
	}
	if o.down {
		for _, c := range cmds {
			c.SetErr(errOutage)
		}
	}
	return o.down
}

// DialHook leaves dialling alone.
func (o *outage) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook fails a command once Redis is gone.
func (o *outage) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if o.stops(cmd) {
			return errOutage
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook fails a pipeline or transaction once Redis is gone.
func (o *outage) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if o.stops(cmds...) {
			return errOutage
		}
		return next(ctx, cmds)
	}
}

// learnerEvents collects the records LearnerSafetyEvents walks.
func learnerEvents(ctx context.Context, a coach.LearnerAudit, tenant, learner string) ([]safety.Record, error) {
	var out []safety.Record
	err := a.LearnerSafetyEvents(ctx, tenant, learner, func(r safety.Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}
