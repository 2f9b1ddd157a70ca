package reliability_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// TestFallbackEndpoints runs turns through two and three configured endpoints, each a fakellm
// of its own, and checks which endpoint answered, what the client saw, and how many requests
// each endpoint got.
func TestFallbackEndpoints(t *testing.T) {
	t.Parallel()
	const text = "Hello there."
	status := func(code int) fakellm.Reply { return fakellm.Reply{Fault: fakellm.Fault{Status: code}} }
	tests := []struct {
		name string
		// replies per endpoint; the first is the gateway's own fakellm. A nil list for the
		// second endpoint of three makes it a port on which nothing listens.
		replies [][]fakellm.Reply
		refuse  int
		want    string
		// upstream answered; calls per endpoint.
		upstream string
		calls    []int
		reason   string
	}{
		{name: "two/healthy primary answers alone",
			replies: [][]fakellm.Reply{{ok(text)}, {ok("unused.")}},
			want:    "delta result", upstream: "primary", calls: []int{1, 0}},
		{name: "two/503 before text falls back silently",
			replies: [][]fakellm.Reply{{status(503)}, {ok(text)}},
			want:    "delta result", upstream: "second", calls: []int{1, 1}},
		{name: "two/cut mid-answer: reset, then the second endpoint's deltas",
			replies: [][]fakellm.Reply{{textFirst(text, fakellm.Fault{Cut: true, CutAfter: 1})}, {ok(text)}},
			want:    "delta reset delta result", upstream: "second", calls: []int{1, 1}, reason: "stream_interrupted"},
		{name: "two/stall mid-answer",
			replies: [][]fakellm.Reply{{textFirst(text, fakellm.Fault{StallAfter: 1, Stall: time.Minute})}, {ok(text)}},
			want:    "delta reset delta result", upstream: "second", calls: []int{1, 1}, reason: "stalled"},
		{name: "two/context length is not fallen back on",
			replies: [][]fakellm.Reply{{{Fault: fakellm.Fault{Status: 400}, Content: "This model's maximum context length is 8192 tokens."}}, {ok(text)}},
			want:    "error:coach_stream_failed", calls: []int{1, 0}},
		{name: "two/a 400 that is no refusal falls back",
			replies: [][]fakellm.Reply{{{Fault: fakellm.Fault{Status: 400}, Content: "Unrecognized request argument supplied: seed"}}, {ok(text)}},
			want:    "delta result", upstream: "second", calls: []int{1, 1}},
		{name: "three/refused connection, then 500, then the third",
			replies: [][]fakellm.Reply{{status(500)}, nil, {ok(text)}}, refuse: 1,
			want: "delta result", upstream: "third", calls: []int{1, -1, 1}},
	}
	names := []string{"primary", "second", "third"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			llms := make([]*fakellm.Server, len(tt.replies))
			bases := make([]string, len(tt.replies))
			for i := 1; i < len(tt.replies); i++ {
				if tt.refuse == i {
					bases[i] = "http://" + closedPort(t) + "/v1"
					continue
				}
				llms[i], bases[i] = apptest.StartLLM(t, fakellm.Options{})
				llms[i].Enqueue(tt.replies[i]...)
			}
			g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
				// Long enough that a loaded machine (-race, a browser test beside this one) never
				// takes them before a healthy answer's first byte or between two of its chunks;
				// the stall they must catch lasts a minute. The turn has room for the stall's idle
				// deadline and the second endpoint's answer after it.
				c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 5*time.Second, 5*time.Second, 30*time.Second
				bases[0] = c.OpenAIBaseURL
				for i := range tt.replies {
					c.Upstreams = append(c.Upstreams, config.Upstream{Name: names[i], BaseURL: bases[i], Model: "m", Profile: "openai"})
				}
			}})
			llms[0] = g.LLM
			g.LLM.Enqueue(tt.replies[0]...)
			s := g.Create("toulmin", nil)
			tr := g.Turn(s.ID, apptest.Msg("hi"))
			tr.CheckEnding(t)
			if got := shape(tr); got != tt.want {
				t.Errorf("stream shape = %q, want %q\n%s", got, tt.want, tr.Body)
			}
			if last := tr.Last(); last.Type == "result" {
				if last.Upstream != tt.upstream || tr.Text() != text {
					t.Errorf("result from %q with text %q, want %q and %q", last.Upstream, tr.Text(), tt.upstream, text)
				}
			}
			for _, l := range tr.Lines {
				if l.Type == "reset" && l.Reason != tt.reason {
					t.Errorf("reset reason = %q, want %q", l.Reason, tt.reason)
				}
			}
			for i, want := range tt.calls {
				if want >= 0 && len(llms[i].Requests()) != want {
					t.Errorf("requests to %s = %d, want %d", names[i], len(llms[i].Requests()), want)
				}
			}
		})
	}
}

// readyz returns /readyz's status and its circuits as "name:state" strings.
func readyz(t *testing.T, url string) (int, []string) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Upstreams []struct{ Name, State string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/readyz body: %v", err)
	}
	var states []string
	for _, u := range body.Upstreams {
		states = append(states, u.Name+":"+u.State)
	}
	return resp.StatusCode, states
}

// TestBreakerSharedByInstances runs two gateways on one Redis in front of the same failing
// primary endpoint: the failures of one gateway's turns open the primary's circuit for both, so
// the other's turns go straight to its second endpoint; after the cooldown one probe finds the
// primary healthy again and closes the circuit.
func TestBreakerSharedByInstances(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	if url == "" {
		t.Skip("the circuit is shared through a real Redis")
	}
	prefix := redistest.Prefix(t, url)
	// With nothing queued, fakellm answers every request with a 500.
	primary, primaryURL := apptest.StartLLM(t, fakellm.Options{})
	// The second gateway must see the circuit and run a turn before the cooldown ends, which a
	// loaded machine makes slow: the cooldown leaves it some nine seconds for that (it reads the
	// circuits from Redis every second).
	const cooldown = 10 * time.Second
	start := func() *apptest.Gateway {
		return apptest.StartWith(t, apptest.Options{Prefix: prefix, Config: func(c *config.Config) {
			c.BreakerFailures, c.BreakerCooldown = 2, cooldown
			c.Upstreams = []config.Upstream{
				{Name: "primary", BaseURL: primaryURL, Model: "m", Profile: "openai"},
				{Name: "second", BaseURL: c.OpenAIBaseURL, Model: "m", Profile: "openai"},
			}
		}})
	}
	one, two := start(), start()
	const text = "Hello there."
	turn := func(g *apptest.Gateway, want string) {
		t.Helper()
		g.LLM.Enqueue(ok(text))
		tr := g.Turn(g.Create("toulmin", nil).ID, apptest.Msg("hi"))
		if last := tr.Last(); last.Type != "result" || last.Upstream != want {
			t.Fatalf("turn ended with %s from %q, want a result from %q\n%s", last.Type, last.Upstream, want, tr.Body)
		}
	}
	turn(one, "second")
	turn(one, "second")
	if got := len(primary.Requests()); got != 2 {
		t.Fatalf("primary requests = %d, want 2", got)
	}
	// The second gateway reads the open circuit from Redis in the background.
	waitFor(t, "the second gateway sees the primary's circuit open", cooldown, func() bool {
		_, states := readyz(t, two.URL)
		return slices.Equal(states, []string{"primary:open", "second:closed"})
	})
	if status, _ := readyz(t, two.URL); status != http.StatusOK {
		t.Errorf("/readyz = %d with one usable endpoint, want 200", status)
	}
	turn(two, "second")
	if got := len(primary.Requests()); got != 2 {
		t.Errorf("primary requests = %d after the circuit opened, want still 2", got)
	}
	// After the cooldown the next turn probes the primary, which now answers.
	waitFor(t, "the circuit turns half-open", 2*cooldown, func() bool {
		_, states := readyz(t, two.URL)
		return slices.Equal(states, []string{"primary:half-open", "second:closed"})
	})
	primary.Enqueue(ok(text))
	turn(two, "primary")
	if _, states := readyz(t, two.URL); !slices.Equal(states, []string{"primary:closed", "second:closed"}) {
		t.Errorf("circuits after a good probe = %q, want both closed", states)
	}
}

// TestBreakerAllOpen opens the circuit of a gateway's only endpoint: /readyz still answers 200
// (readiness is this instance's, v1.2) and lists the circuit open, and the next turn is not
// refused but reaches the endpoint in panic mode; its answer closes the circuit.
func TestBreakerAllOpen(t *testing.T) {
	t.Parallel()
	g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
		c.BreakerFailures, c.BreakerCooldown = 1, time.Minute
	}})
	s := g.Create("toulmin", nil)
	if tr := g.Turn(s.ID, apptest.Msg("hi")); tr.Last().Error != "coach_stream_failed" { // three 500s
		t.Fatalf("first turn = %s, want coach_stream_failed", tr.Body)
	}
	status, states := readyz(t, g.URL)
	if status != http.StatusOK || !slices.Equal(states, []string{"default:open"}) {
		t.Errorf("/readyz = %d %q, want 200 with default:open", status, states)
	}
	if series := `coachgw_breaker_state{state="open",upstream="default"} 1`; !strings.Contains(g.Metrics(), series) {
		t.Errorf("/metrics lacks %s", series)
	}
	g.LLM.Enqueue(ok("Back again."))
	tr := g.Turn(s.ID, apptest.Msg("hi"))
	if tr.Last().Type != "result" || len(g.LLM.Requests()) != 4 {
		t.Errorf("turn with the circuit open = %s after %d requests, want a result after 4", tr.Body, len(g.LLM.Requests()))
	}
	if _, states := readyz(t, g.URL); !slices.Equal(states, []string{"default:closed"}) {
		t.Errorf("circuits after the endpoint answered = %q, want default:closed", states)
	}
	if series := `coachgw_breaker_panics_total{upstream="default"} 1`; !strings.Contains(g.Metrics(), series) {
		t.Errorf("/metrics lacks %s", series)
	}
}

// TestOneTurnIsOneSample fails every request of a gateway's only endpoint: a turn's three
// attempts count as one failed turn, so the circuit opens with the second turn, not within the
// first; after the cooldown the next turn is the half-open probe, retries included, and its
// failure opens the circuit again.
func TestOneTurnIsOneSample(t *testing.T) {
	t.Parallel()
	const cooldown = time.Second
	// With nothing queued, fakellm answers every request with a 500.
	g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
		c.MaxAttempts, c.BreakerFailures, c.BreakerCooldown = 3, 2, cooldown
	}})
	s := g.Create("toulmin", nil)
	turn := func(requests int, circuit string) {
		t.Helper()
		if tr := g.Turn(s.ID, apptest.Msg("hi")); tr.Last().Error != "coach_stream_failed" {
			t.Fatalf("turn = %s, want coach_stream_failed", tr.Body)
		}
		if got := len(g.LLM.Requests()); got != requests {
			t.Errorf("requests = %d, want %d", got, requests)
		}
		if _, states := readyz(t, g.URL); circuit != "" && !slices.Equal(states, []string{"default:" + circuit}) {
			t.Errorf("circuits = %q, want default:%s", states, circuit)
		}
	}
	turn(3, "closed") // one failed turn of the two it takes
	turn(6, "")       // the second opens the circuit (it may show half-open on a slow machine)
	waitFor(t, "the circuit turns half-open", 4*cooldown, func() bool {
		_, states := readyz(t, g.URL)
		return slices.Equal(states, []string{"default:half-open"})
	})
	turn(9, "") // the probe: one turn, with its retries
	if series := `coachgw_breaker_transitions_total{to="open",upstream="default"} 2`; !strings.Contains(g.Metrics(), series) {
		t.Errorf("/metrics lacks %s: the failed probe did not open the circuit again", series)
	}
}

// TestUsageAndBudget checks the usage an endpoint reports end to end: on the result line, in
// the token metrics, in the tenant's daily counters, and against a daily budget that refuses
// the next turn with 429 budget_exceeded before its stream starts.
func TestUsageAndBudget(t *testing.T) {
	t.Parallel()
	g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
		c.TokenBudgetDaily = 1 // the first turn may start; its tokens use the budget up
		c.Upstreams = []config.Upstream{{Name: "primary", BaseURL: c.OpenAIBaseURL, Model: "m-1", Profile: "openai"}}
	}})
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(ok("Hello there."))
	tr := g.Turn(s.ID, apptest.Msg("hi"))
	var res struct {
		Upstream string
		Usage    *struct{ PromptTokens, CompletionTokens int }
	}
	if err := json.Unmarshal([]byte(tr.Last().Raw), &res); err != nil || res.Usage == nil || res.Usage.PromptTokens <= 0 || res.Usage.CompletionTokens <= 0 {
		t.Fatalf("result line %s: want usage with both counts (%v)", tr.Last().Raw, err)
	}
	if res.Upstream != "primary" {
		t.Errorf("result upstream = %q, want primary", res.Upstream)
	}

	metrics := g.Metrics()
	for name, want := range map[string]int{"coachgw_prompt_tokens_total": res.Usage.PromptTokens, "coachgw_completion_tokens_total": res.Usage.CompletionTokens} {
		series := fmt.Sprintf(`%s{contract="toulmin",model="m-1",tenant="",upstream="primary"} %d`, name, want)
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}

	next := g.Turn(s.ID, apptest.Msg("again"))
	if next.Status != http.StatusTooManyRequests || !strings.Contains(next.Body, `"error":"budget_exceeded"`) {
		t.Fatalf("turn over budget = %d %s, want 429 budget_exceeded", next.Status, next.Body)
	}
	retry, err := strconv.Atoi(next.Header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 24*60*60 {
		t.Errorf("Retry-After = %q, want seconds until midnight UTC", next.Header.Get("Retry-After"))
	}
	if n := len(g.LLM.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1: a turn over budget never reaches the model", n)
	}
	if got := g.Get(s.ID).Version; got != 2 {
		t.Errorf("session version = %d, want 2: the refused turn changes nothing", got)
	}
	// The lock of the refused turn's claim is released: a turn of a tenant with room would run.
	if tr := g.Turn(s.ID, apptest.Msg("again")); tr.Status != http.StatusTooManyRequests {
		t.Errorf("second refused turn = %d, want 429 again (not 409 session_busy)", tr.Status)
	}
}
