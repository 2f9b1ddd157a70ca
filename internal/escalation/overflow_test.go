package escalation_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/escalation"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
	"github.com/coachgw/coachgw/internal/safety"
)

// tally is a hand-written escalation.Observer.
type tally struct {
	mu       sync.Mutex
	outcomes map[string]int
}

func (c *tally) EscalationAttempted(string) {}

func (c *tally) EscalationEnded(o string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outcomes == nil {
		c.outcomes = map[string]int{}
	}
	c.outcomes[o]++
}

func (c *tally) get(o string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outcomes[o]
}

// outage is a receiver that answers 503 until recover is called, then 204, and records the
// episodes it took.
type outage struct {
	*httptest.Server
	up    atomic.Bool
	mu    sync.Mutex
	taken map[string]int
}

func newOutage(t *testing.T) *outage {
	t.Helper()
	o := &outage{taken: map[string]int{}}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !o.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		o.mu.Lock()
		o.taken[r.Header.Get(escalation.HeaderEpisode)]++
		o.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *outage) got(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.taken[id] > 0
}

func (o *outage) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.taken)
}

// redisClient returns a client of the test Redis (REDIS_URL, else the local one, else the
// embedded one) and a key prefix of the test's own.
func redisClient(t *testing.T) (redis.UniversalClient, string) {
	t.Helper()
	url := redistest.URL(t)
	prefix := redistest.Prefix(t, url)
	if url == "" {
		c, stop, err := redisstore.Embedded()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return c, prefix
	}
	c, err := redisstore.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, prefix
}

func crisis(id, ref, key string) safety.Episode {
	return safety.Episode{
		ID: id, Time: time.Now().UTC(), Tenant: "acme", Session: "s-" + id,
		Learner: safety.Learner{Ref: ref, AssertedBy: key}, Contract: "module", Locale: "en",
		Severity: safety.SeverityHigh, Categories: []safety.Category{safety.CategorySuicide},
	}
}

// until waits for cond, failing the test after a deadline that only guards against a hang.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func closeWebhook(t *testing.T, w *escalation.Webhook) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// options are the webhook's settings of these tests: a tenant's share of the queue that one
// learner key's share fills, and retries and looks at the overflow fast enough for a test.
func options(url string, obs escalation.Observer, ov escalation.Overflow) escalation.Options {
	return escalation.Options{
		URL: url, Secret: "0123456789abcdef-test-secret", Observer: obs, Overflow: ov,
		QueueSize: 16, TenantQueueSize: 8, SourceQueueSize: 8, MaxAttempts: 2,
		Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, OverflowInterval: 5 * time.Millisecond,
	}
}

// TestOverflowKeepsEveryLearnersEpisode attacks the queue from one learner key during a
// receiver outage: the key floods 260 crisis episodes, each with a reference it made up, which
// fill the tenant's share of the queue; then a real learner of the tenant (another key) has a
// crisis. No episode is dropped: those without room are kept in the overflow (Redis), counted
// deferred, and once the receiver recovers every one is delivered, the real learner's included.
// On the code before, the 252 past the share and the real learner's were dropped.
func TestOverflowKeepsEveryLearnersEpisode(t *testing.T) {
	rc := newOutage(t)
	client, prefix := redisClient(t)
	obs := &tally{}
	w := escalation.New(options(rc.URL, obs, redisstore.NewEscalationOverflow(client, prefix)))
	const flood = 260
	for i := range flood {
		w.Escalate(crisis(fmt.Sprint("flood-", i), fmt.Sprint("classmate-", i), "3f2a9c0b1d4e"))
	}
	w.Escalate(crisis("real-1", "pupil-7", "9d8c7b6a5f4e"))
	until(t, "every episode deferred once", func() bool { return obs.get(escalation.OutcomeDeferred) >= flood+1 })
	if got := rc.count(); got != 0 {
		t.Fatalf("the receiver took %d episodes during its outage", got)
	}
	rc.up.Store(true)
	until(t, "the real learner's episode", func() bool { return rc.got("real-1") })
	until(t, "every episode", func() bool { return rc.count() == flood+1 })
	closeWebhook(t, w)
	if got := obs.get(escalation.OutcomeDropped); got != 0 {
		t.Errorf("dropped = %d, want 0", got)
	}
	if got := obs.get(escalation.OutcomeDelivered); got != flood+1 {
		t.Errorf("delivered = %d, want %d", got, flood+1)
	}
	t.Logf("%d episodes during the outage: %d deferred, %d delivered after it, %d dropped",
		flood+1, obs.get(escalation.OutcomeDeferred), obs.get(escalation.OutcomeDelivered), obs.get(escalation.OutcomeDropped))
}

// TestErasedLearnersEpisodeIsNotSent erases learners while their episodes wait during a
// receiver outage: one in the queue (retrying), one kept in the overflow. Neither is sent, also
// after the receiver recovers; both are counted erased and the overflow keeps nothing of them.
// A learner erased before its episode began is escalated as usual.
func TestErasedLearnersEpisodeIsNotSent(t *testing.T) {
	rc := newOutage(t)
	client, prefix := redisClient(t)
	store := redisstore.New(client, redisstore.Options{Prefix: prefix})
	ov := redisstore.NewEscalationOverflow(client, prefix)
	obs := &tally{}
	o := options(rc.URL, obs, ov)
	o.MaxAttempts = 1 << 20 // the queued one keeps retrying
	o.Tombstones = store
	o.SourceQueueSize = 1 // queued takes its key's share, and kept finds none
	ctx := context.Background()
	if err := store.MarkErased(ctx, "acme", "pupil-early", time.Now().Add(-time.Minute), time.Hour); err != nil {
		t.Fatal(err)
	}
	w := escalation.New(o)
	w.Escalate(crisis("queued", "pupil-queued", "3f2a9c0b1d4e"))
	for i := range 7 {
		w.Escalate(crisis(fmt.Sprint("other-", i), fmt.Sprint("pupil-other-", i), "9d8c7b6a5f4e"))
	}
	w.Escalate(crisis("kept", "pupil-kept", "3f2a9c0b1d4e"))
	until(t, "the overflow keeping kept and six others", func() bool { return obs.get(escalation.OutcomeDeferred) == 7 })
	for _, ref := range []string{"pupil-queued", "pupil-kept"} {
		if err := store.MarkErased(ctx, "acme", ref, time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	w.Escalate(crisis("after-erasure", "pupil-early", "9d8c7b6a5f4e"))
	// An attempt already past its check when the learner was erased may still be sent; the
	// next one is not. The receiver recovers once both are given up.
	until(t, "both erased", func() bool { return obs.get(escalation.OutcomeErased) == 2 })
	rc.up.Store(true)
	until(t, "the others", func() bool { return rc.count() == 8 })
	closeWebhook(t, w)
	for _, id := range []string{"queued", "kept"} {
		if rc.got(id) {
			t.Errorf("episode %s of an erased learner was sent", id)
		}
	}
	if !rc.got("after-erasure") {
		t.Errorf("the episode of a learner erased before it began was not sent")
	}
	left, err := ov.Due(ctx, "acme", time.Now().Add(time.Hour), 100, time.Now().Add(2*time.Hour))
	if err != nil || len(left) != 0 {
		t.Errorf("the overflow still holds %d entries (%v), want none", len(left), err)
	}
}
