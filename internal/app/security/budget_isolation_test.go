package security_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

// TestBudgetIsolation attacks the shared budget machinery from one tenant's side: acme, with a
// small daily budget, fires 30 turns at once until its budget refuses it, while beta's turns run
// beside them. Every one of beta's turns must end with a result: acme's reservations, refusals
// and charges touch acme's counters only.
func TestBudgetIsolation(t *testing.T) {
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{Responder: replay.Responder()},
		Config: func(c *config.Config) {
			withKeys(c)
			c.RateLimit, c.SessionRateLimit = 0, 0
			c.TokenBudgets = map[string]int64{"acme": 3000}
		},
	})
	const attacks, measured = 30, 8
	acme := make([]string, attacks)
	for i := range acme {
		acme[i] = create(t, g, keyAcme, "toulmin")
	}
	beta := make([]string, measured)
	for i := range beta {
		beta[i] = create(t, g, keyBeta, "toulmin")
	}

	var wg sync.WaitGroup
	acmeRefused := make([]bool, attacks)
	for i, id := range acme {
		wg.Go(func() {
			a := send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Cities should plant more trees, because shade cools streets."))
			acmeRefused[i] = a.Status == http.StatusTooManyRequests && (a.code() == coach.CodeBudgetExceeded || a.code() == coach.CodeBudgetBusy)
		})
	}
	betaOK := make([]bool, measured)
	for i, id := range beta {
		wg.Go(func() {
			a := send(t, g, keyBeta, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Schools should start later, because teenagers sleep late."))
			betaOK[i] = a.Status == http.StatusOK && a.last().Type == "result"
			if !betaOK[i] {
				t.Errorf("beta's turn %d: %d %s", i, a.Status, a.Body)
			}
		})
	}
	wg.Wait()

	refused := 0
	for _, r := range acmeRefused {
		if r {
			refused++
		}
	}
	ok := 0
	for _, r := range betaOK {
		if r {
			ok++
		}
	}
	t.Logf("acme: %d of %d turns refused by its budget; beta: %d of %d results", refused, attacks, ok, measured)
	if refused == 0 {
		t.Errorf("acme's budget refused none of its %d turns: the attack did not reach the budget", attacks)
	}
	if ok != measured {
		t.Errorf("beta got %d of %d results while acme spent its budget, want all", ok, measured)
	}
}
