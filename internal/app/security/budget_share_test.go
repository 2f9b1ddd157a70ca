package security_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

// TestBigLearnerLeavesOthersAdmitted attacks the budget's reservations from one learner's side:
// twelve near-limit messages from one session make its attempts many times an ordinary turn's,
// and then 40 ordinary turns of other sessions of the tenant start at once. With well under
// the budget charged, every one of them must run: what one session's attempts cost raises only
// what that session reserves. (When every turn reserved the tenant's largest attempt of the day,
// most of the 40 were refused budget_exceeded until midnight.) A refusal, should the running
// turns' reservations fill the budget, is budget_busy with a Retry-After of at most the turn
// timeout, never budget_exceeded while charged tokens are below the budget.
func TestBigLearnerLeavesOthersAdmitted(t *testing.T) {
	const (
		budget   = 260000
		big      = 12
		ordinary = 40
	)
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{Responder: replay.Responder()},
		Config: func(c *config.Config) {
			withKeys(c)
			c.RateLimit, c.SessionRateLimit = 0, 0
			c.TokenBudgets = map[string]int64{"acme": budget}
			// 40 turns at once on a loaded 2-core machine: what is measured is the budget,
			// not how fast the embedded Redis answers.
			c.RedisTimeout = 10 * time.Second
		},
	})
	rc := redisOf(t, g.Config)
	countersKey := g.Config.RedisPrefix + ":{tok:acme}:" + time.Now().UTC().Format("20060102")
	charged := func() int64 {
		t.Helper()
		vals, err := rc.HMGet(context.Background(), countersKey, "prompt", "completion").Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, v := range vals {
			if s, ok := v.(string); ok {
				x, _ := strconv.ParseInt(s, 10, 64)
				n += x
			}
		}
		return n
	}

	learner := create(t, g, keyAcme, "toulmin")
	words := strings.Repeat("Cities should plant more trees because shade cools streets. ", 3900/60)
	for i := range big {
		a := send(t, g, keyAcme, "POST", "/v1/sessions/"+learner+"/turns", apptest.Msg(fmt.Sprint(i, " ", words)))
		if a.Status != http.StatusOK {
			t.Fatalf("big message %d: %d %s", i, a.Status, a.Body)
		}
	}
	before := charged()

	others := make([]string, ordinary)
	for i := range others {
		others[i] = create(t, g, keyAcme, "toulmin")
	}
	var wg sync.WaitGroup
	answers := make([]answer, ordinary)
	for i, id := range others {
		wg.Go(func() {
			answers[i] = send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Schools should start later, because teenagers sleep late."))
		})
	}
	wg.Wait()
	ran := 0
	for i, a := range answers {
		switch {
		case a.Status == http.StatusOK && a.last().Type == "result":
			ran++
		case a.Status == http.StatusTooManyRequests && a.code() == coach.CodeBudgetBusy:
			secs, err := strconv.Atoi(a.Header.Get("Retry-After"))
			if err != nil || secs < 1 || time.Duration(secs)*time.Second > g.Config.TurnTimeout {
				t.Errorf("turn %d: budget_busy with Retry-After %q, want 1 s to the turn timeout (%s)", i, a.Header.Get("Retry-After"), g.Config.TurnTimeout)
			}
		default:
			t.Errorf("turn %d of another session: %d %s", i, a.Status, a.Body)
		}
	}
	t.Logf("the big learner's %d turns charged %d of %d tokens; then %d of %d other sessions' turns ran, %d charged in all",
		big, before, budget, ran, ordinary, charged())
	if before >= budget/2 {
		t.Fatalf("the big learner charged %d of %d: the attack should leave more than half", before, budget)
	}
	if ran != ordinary {
		t.Errorf("%d of %d other sessions' turns ran with %d of %d tokens charged, want all", ran, ordinary, before, budget)
	}
}

// TestBudgetBusyIsBrief fills what is left of a budget with reservations of running turns (as
// the counters hold them) and starts a turn: it is refused 429 budget_busy with a Retry-After
// of at most the turn timeout, not budget_exceeded until midnight. Once the charged tokens reach
// the budget the refusal is budget_exceeded.
func TestBudgetBusyIsBrief(t *testing.T) {
	const budget = 10000
	g := apptest.Start(t, func(c *config.Config) {
		withKeys(c)
		c.TokenBudgets = map[string]int64{"acme": budget}
	})
	rc := redisOf(t, g.Config)
	key := g.Config.RedisPrefix + ":{tok:acme}:" + time.Now().UTC().Format("20060102")
	id := create(t, g, keyAcme, "toulmin")
	for _, tc := range []struct {
		charged, reserved int64
		code              string
		maxRetry          time.Duration
	}{
		{100, budget - 100, coach.CodeBudgetBusy, g.Config.TurnTimeout},
		{budget, 0, coach.CodeBudgetExceeded, 24 * time.Hour},
	} {
		if err := rc.HSet(context.Background(), key, "prompt", tc.charged, "completion", 0, "reserved", tc.reserved).Err(); err != nil {
			t.Fatal(err)
		}
		a := send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Cities should plant more trees."))
		secs, err := strconv.Atoi(a.Header.Get("Retry-After"))
		if a.Status != http.StatusTooManyRequests || a.code() != tc.code || err != nil || secs < 1 || time.Duration(secs)*time.Second > tc.maxRetry {
			t.Errorf("%d charged, %d reserved: %d %s, Retry-After %q; want 429 %s and Retry-After of 1 s to %s",
				tc.charged, tc.reserved, a.Status, a.code(), a.Header.Get("Retry-After"), tc.code, tc.maxRetry)
		}
	}
}
