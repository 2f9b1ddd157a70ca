package security_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

// slowMarker marks the learner messages whose model calls wait for the test's gate.
const slowMarker = "please-take-your-time"

// hungUp is what a client that hangs up as soon as a turn's answer begins saw of it.
type hungUp struct {
	status     int
	code       string
	retryAfter string
}

// hangUp posts a turn of session id with key and hangs up as soon as the answer's header
// arrived: a streamed turn goes on without its client. It reports failures as errors, so any
// goroutine may call it.
func hangUp(g *apptest.Gateway, key, id, message string) (hungUp, error) {
	body, _ := json.Marshal(apptest.Msg(message))
	req, err := http.NewRequest("POST", g.URL+"/v1/sessions/"+id+"/turns", bytes.NewReader(body))
	if err != nil {
		return hungUp{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return hungUp{}, err
	}
	defer resp.Body.Close()
	h := hungUp{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if resp.StatusCode != http.StatusOK {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return h, err
		}
		var b struct{ Error string }
		_ = json.Unmarshal(raw, &b)
		h.code = b.Error
	}
	return h, nil
}

// TestTurnsPerTenantCapped attacks the model connections from one tenant's side: with
// COACH_MAX_TURNS_PER_TENANT=4 and a model that answers acme only when the test lets it, acme
// starts 20 turns on 20 sessions and hangs up on each at once. The 4 turns admitted run on
// without their clients (and keep counting: a 21st turn is still refused), the other 16 are
// 429 too_many_turns with a Retry-After; beta's turn meanwhile runs normally, and once acme's
// turns end acme can start a turn again.
func TestTurnsPerTenantCapped(t *testing.T) {
	const limit, attacks = 4, 20
	g, waiting, release := startGated(t, func(c *config.Config) { c.MaxTurnsPerTenant = limit })

	acme := make([]string, attacks+1)
	for i := range acme {
		acme[i] = create(t, g, keyAcme, "toulmin")
	}
	beta := create(t, g, keyBeta, "toulmin")

	got := make([]hungUp, attacks)
	var wg sync.WaitGroup
	for i := range attacks {
		wg.Go(func() {
			h, err := hangUp(g, keyAcme, acme[i], "Cities should ban cars, "+slowMarker)
			if err != nil {
				t.Errorf("acme's turn %d: %v", i, err)
			}
			got[i] = h
		})
	}
	wg.Wait()
	admitted, refused := tally(t, "acme", got)
	if admitted != limit || refused != attacks-limit {
		t.Fatalf("acme's %d turns: got %d admitted and %d refused, want %d and %d", attacks, admitted, refused, limit, attacks-limit)
	}

	// The admitted turns run on without their clients: their model calls are open.
	apptest.Eventually(t, "acme's detached turns reach the model", func() bool { return waiting.Load() == limit })
	if h, err := hangUp(g, keyAcme, acme[attacks], "One more, "+slowMarker); err != nil ||
		h.status != http.StatusTooManyRequests || h.code != coach.CodeTooManyTurns {
		t.Errorf("acme's turn while its detached turns run: got %+v (%v), want 429 %s", h, err, coach.CodeTooManyTurns)
	}

	b := send(t, g, keyBeta, "POST", "/v1/sessions/"+beta+"/turns", apptest.Msg("Schools should start later, because teenagers sleep late."))
	if b.Status != http.StatusOK || b.last().Type != "result" {
		t.Errorf("beta's turn beside acme's: got %d ending %q %s, want 200 ending with a result", b.Status, b.last().Type, b.Body)
	}
	if n := waiting.Load(); n != limit {
		t.Errorf("acme's detached turns waiting on the model after beta's turn: got %d, want %d", n, limit)
	}

	// Once acme's turns end, their places come back: well within the turn timeout.
	release()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := send(t, g, keyAcme, "POST", "/v1/sessions/"+acme[attacks]+"/turns", apptest.Msg("Cities should plant more trees."))
		if a.Status == http.StatusOK {
			if a.last().Type != "result" {
				t.Errorf("acme's turn after its turns ended: got a stream ending %q, want a result: %s", a.last().Type, a.Body)
			}
			break
		}
		if a.Status != http.StatusTooManyRequests || a.code() != coach.CodeTooManyTurns || time.Now().After(deadline) {
			t.Fatalf("acme's turn after its turns ended: got %d %s, want 200", a.Status, a.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(g.Metrics(), "coachgw_turns_over_tenant_cap_total{tenant=") {
		t.Errorf("/metrics lacks coachgw_turns_over_tenant_cap_total")
	}
}

// tally counts who's hung-up turns that were admitted (200) and refused (429 too_many_turns
// with a Retry-After), and fails the test for any other answer.
func tally(t *testing.T, who string, got []hungUp) (admitted, refused int) {
	t.Helper()
	for i, h := range got {
		switch {
		case h.status == http.StatusOK:
			admitted++
		case h.status == http.StatusTooManyRequests && h.code == coach.CodeTooManyTurns && h.retryAfter != "":
			refused++
		default:
			t.Errorf("%s's turn %d: got %d %q (Retry-After %q), want 200 or 429 %s with a Retry-After",
				who, i, h.status, h.code, h.retryAfter, coach.CodeTooManyTurns)
		}
	}
	return admitted, refused
}

// startGated starts a gateway with the API keys of the security tests, no rate limits, far
// deadlines and set's settings, whose model holds back every answer to a message with
// slowMarker until release is called (or a minute passed). waiting counts the model calls held.
func startGated(t *testing.T, set func(*config.Config)) (g *apptest.Gateway, waiting *atomic.Int32, release func()) {
	gate := make(chan struct{})
	var openGate sync.Once
	release = func() { openGate.Do(func() { close(gate) }) }
	waiting = new(atomic.Int32)
	r := replay.Responder()
	g = apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{Responder: fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
			if strings.Contains(lastUser(req), slowMarker) {
				waiting.Add(1)
				defer waiting.Add(-1)
				select {
				case <-gate:
				case <-time.After(time.Minute):
				}
			}
			return r.Respond(req)
		})},
		Config: func(c *config.Config) {
			withKeys(c)
			c.RateLimit, c.SessionRateLimit = 0, 0
			// Deadlines far away: only the gate ends the held turns.
			c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = time.Minute, time.Minute, 2*time.Minute
			set(c)
		},
	})
	// Registered after the gateway's cleanup, so it runs first and the gateway's drain finds
	// no turn waiting on the gate.
	t.Cleanup(release)
	return g, waiting, release
}

// TestLearnerCannotTakeTheTenantsTurns attacks the tenant's places from one learner's side:
// with COACH_MAX_TURNS_PER_TENANT=6 and COACH_MAX_TURNS_PER_LEARNER=2, mallory starts turns on
// 10 sessions of her learner reference and hangs up on each. Two run on without her, the other
// 8 are 429 too_many_turns; alice, another learner of the same tenant, and a session without a
// learner reference still run their turns beside mallory's.
func TestLearnerCannotTakeTheTenantsTurns(t *testing.T) {
	const share, attacks = 2, 10
	g, waiting, _ := startGated(t, func(c *config.Config) { c.MaxTurnsPerTenant, c.MaxTurnsPerLearner = 6, share })
	mallory := make([]string, attacks)
	for i := range mallory {
		mallory[i] = createOf(t, g, keyAcme, "mallory")
	}
	got := make([]hungUp, attacks)
	var wg sync.WaitGroup
	for i := range attacks {
		wg.Go(func() {
			h, err := hangUp(g, keyAcme, mallory[i], "Cities should ban cars, "+slowMarker)
			if err != nil {
				t.Errorf("mallory's turn %d: %v", i, err)
			}
			got[i] = h
		})
	}
	wg.Wait()
	admitted, refused := tally(t, "mallory", got)
	if admitted != share || refused != attacks-share {
		t.Fatalf("mallory's %d turns: got %d admitted and %d refused, want %d and %d", attacks, admitted, refused, share, attacks-share)
	}
	apptest.Eventually(t, "mallory's detached turns reach the model", func() bool { return waiting.Load() == share })

	alice := createOf(t, g, keyAcme, "alice")
	anonymous := create(t, g, keyAcme, "toulmin")
	for name, id := range map[string]string{"alice": alice, "a session without a learner": anonymous} {
		a := send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Schools should start later, because teenagers sleep late."))
		if a.Status != http.StatusOK || a.last().Type != "result" {
			t.Errorf("%s's turn beside mallory's: got %d ending %q %s, want 200 ending with a result", name, a.Status, a.last().Type, a.Body)
		}
	}
}

// createOf creates a toulmin session of learner reference learner with key and returns its id.
func createOf(t *testing.T, g *apptest.Gateway, key, learner string) string {
	t.Helper()
	a := send(t, g, key, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "learner": learner})
	var s apptest.Session
	if err := json.Unmarshal([]byte(a.Body), &s); a.Status != http.StatusCreated || err != nil {
		t.Fatalf("creating a session of %s: %d %s", learner, a.Status, a.Body)
	}
	return s.ID
}

// lastUser returns the content of req's last user message.
func lastUser(req *fakellm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}
