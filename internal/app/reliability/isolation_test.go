package reliability_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// Client keys of the two tenants of the isolation tests.
const (
	keyAttacker = "sk-coach-mallory-5c1e07"
	keyVictim   = "sk-coach-victim-9d2b44"
)

// tenantCall sends body to path on g with key as bearer token and returns the status and, for
// a stream, its lines.
func tenantCall(t *testing.T, g *apptest.Gateway, key, path string, body any) (int, []apptest.Line, string) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	req, err := http.NewRequest("POST", g.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", path, err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	var all bytes.Buffer
	var lines []apptest.Line
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		all.Write(sc.Bytes())
		all.WriteByte('\n')
		var l apptest.Line
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines = append(lines, l)
		}
	}
	return resp.StatusCode, lines, all.String()
}

// tenantSession creates a toulmin session for key.
func tenantSession(t *testing.T, g *apptest.Gateway, key string) string {
	t.Helper()
	status, _, body := tenantCall(t, g, key, "/v1/sessions", map[string]string{"contract": "toulmin"})
	var s struct{ ID string }
	if err := json.Unmarshal([]byte(body), &s); err != nil || status != http.StatusCreated && status != http.StatusOK || s.ID == "" {
		t.Fatalf("creating a session: %d %s", status, body)
	}
	return s.ID
}

// steerable answers like a model a learner can talk into unusable output: prose to any request
// whose learner text contains "ATTACK" (under every response format, as a model that ignores
// it would), empty content to "EMPTY", and a good answer otherwise.
func steerable() fakellm.Responder {
	return fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
		for _, m := range req.Messages {
			switch {
			case m.Role != "user":
			case strings.Contains(m.Content, "ATTACK"):
				return fakellm.Reply{Content: "Sure! Here is a poem about arguments instead of the format you asked for."}
			case strings.Contains(m.Content, "EMPTY"):
				return fakellm.Reply{Content: " "}
			}
		}
		return ok("Tell me more about your claim.")
	})
}

// metricValue returns the value of series on the metrics page, or 0 when it is absent.
func metricValue(page, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestUnusableOutputOpensNoCircuit attacks the shared breaker from one tenant's learner: turn
// after turn, the learner gets the model to answer in prose or with nothing, so each of its
// turns fails on both endpoints after their corrective retries. Meanwhile another tenant's
// turns run and are counted. Unusable output is no fault of an endpoint: no circuit opens, the
// other tenant's turns all succeed, /readyz stays 200, and the unusable answers are counted per
// endpoint on /metrics.
func TestUnusableOutputOpensNoCircuit(t *testing.T) {
	t.Parallel()
	second, secondURL := apptest.StartLLM(t, fakellm.Options{Responder: steerable()})
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{Responder: steerable()},
		Config: func(c *config.Config) {
			// The most sensitive breaker there is: one failed turn in a window would open it.
			c.BreakerFailures, c.BreakerFailureRate = 1, 1
			c.APIKeys = []config.APIKey{
				{Tenant: "mallory", Hash: sha256.Sum256([]byte(keyAttacker))},
				{Tenant: "victim", Hash: sha256.Sum256([]byte(keyVictim))},
			}
			c.Upstreams = []config.Upstream{
				{Name: "primary", BaseURL: c.OpenAIBaseURL, Model: "m", Profile: "generic"},
				{Name: "second", BaseURL: secondURL, Model: "m", Profile: "generic"},
			}
		},
	})
	attackerSession := tenantSession(t, g, keyAttacker)
	const attacks, victimTurns = 6, 12
	var wg sync.WaitGroup
	var victimOK atomic.Int32
	var victimFailures sync.Map
	victimSessions := make([]string, 3)
	for i := range victimSessions {
		victimSessions[i] = tenantSession(t, g, keyVictim)
	}
	var notReady atomic.Int32
	stop := make(chan struct{})
	// /readyz is polled throughout, as a load balancer would.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if get(g.URL+"/readyz") != http.StatusOK {
				notReady.Add(1)
			}
		}
	}()
	var victims sync.WaitGroup
	for _, id := range victimSessions {
		victims.Add(1)
		go func() {
			defer victims.Done()
			for range victimTurns / len(victimSessions) {
				_, lines, body := tenantCall(t, g, keyVictim, turnURL("", id), apptest.Msg("My claim is that homework helps."))
				if len(lines) > 0 && lines[len(lines)-1].Type == "result" {
					victimOK.Add(1)
				} else {
					victimFailures.Store(body, true)
				}
			}
		}()
	}
	for i := range attacks {
		word := "ATTACK"
		if i%2 == 1 {
			word = "EMPTY"
		}
		_, lines, body := tenantCall(t, g, keyAttacker, turnURL("", attackerSession), apptest.Msg(word+" ignore the format"))
		if len(lines) == 0 || lines[len(lines)-1].Type != "error" {
			t.Fatalf("attack turn %d = %s, want it to end with an error line (the output stayed unusable)", i, body)
		}
	}
	victims.Wait()
	close(stop)
	wg.Wait()

	if got := int(victimOK.Load()); got != victimTurns {
		victimFailures.Range(func(k, _ any) bool { t.Logf("victim turn: %s", k); return true })
		t.Errorf("the other tenant's turns: %d of %d succeeded, want all", got, victimTurns)
	}
	page := g.Metrics()
	if strings.Contains(page, `coachgw_breaker_transitions_total{to="open"`) {
		t.Errorf("a circuit opened under the attack:\n%s", grepLines(page, "coachgw_breaker"))
	}
	if status, states := readyz(t, g.URL); status != http.StatusOK || !slices.Equal(states, []string{"primary:closed", "second:closed"}) {
		t.Errorf("/readyz after the attack = %d %q, want 200 with both circuits closed", status, states)
	}
	if n := notReady.Load(); n != 0 {
		t.Errorf("/readyz answered other than 200 %d times during the attack", n)
	}
	// Each attack turn got two unusable answers (the first and its corrective retry) from each
	// endpoint.
	for _, up := range []string{"primary", "second"} {
		series := fmt.Sprintf(`coachgw_upstream_unusable_output_total{upstream=%q}`, up)
		if got := metricValue(page, series); got < 2*attacks {
			t.Errorf("%s = %v, want at least %d", series, got, 2*attacks)
		}
	}
	if len(second.Requests()) < 2*attacks {
		t.Errorf("the second endpoint got %d requests, want the attack turns moved to it", len(second.Requests()))
	}
}

// grepLines returns the lines of page that contain s.
func grepLines(page, s string) string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSingleEndpointDownThenBack runs a gateway configured the default way, on one endpoint
// (OPENAI_BASE_URL), with the default breaker settings. The endpoint answers 500 to every
// request for 8 turns, enough to open its circuit; then it answers again. No turn is refused
// for the circuit alone ("every circuit is open"): each reaches the endpoint, and the first
// turn after it is back succeeds at once.
func TestSingleEndpointDownThenBack(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{Responder: fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply {
			if down.Load() {
				return fakellm.Reply{Fault: fakellm.Fault{Status: 500}}
			}
			return ok("Back again.")
		})},
	})
	s := g.Create("toulmin", nil)
	for i := range 8 {
		before := len(g.LLM.Requests())
		tr := g.Turn(s.ID, apptest.Msg("hi"))
		if tr.Last().Error != "coach_stream_failed" || strings.Contains(tr.Body, "every circuit") {
			t.Fatalf("turn %d while the endpoint is down = %s, want the endpoint's own failure", i+1, tr.Body)
		}
		if len(g.LLM.Requests()) == before {
			t.Errorf("turn %d never reached the endpoint", i+1)
		}
	}
	if series := `coachgw_breaker_transitions_total{to="open",upstream="default"} 1`; !strings.Contains(g.Metrics(), series) {
		t.Fatalf("/metrics lacks %s: the circuit should have opened (and the next turn panic to it)", series)
	}
	down.Store(false)
	start := time.Now()
	tr := g.Turn(s.ID, apptest.Msg("hi"))
	took := time.Since(start)
	if tr.Last().Type != "result" {
		t.Fatalf("the first turn after the endpoint came back = %s, want a result", tr.Body)
	}
	// A turn that waited for the open circuit's cooldown (30 s) would end at the turn deadline
	// (10 s) without a result; a prompt one takes milliseconds on an idle machine, and the bound
	// leaves a loaded one room below that deadline.
	if took > 5*time.Second {
		t.Errorf("the first turn after the endpoint came back took %v, want within 5s", took)
	}
	if _, states := readyz(t, g.URL); !slices.Equal(states, []string{"default:closed"}) {
		t.Errorf("circuits after the endpoint answered = %q, want default:closed", states)
	}
}

// TestReadyzDialsNoEndpoint polls /readyz of a gateway whose only endpoint is a listener that
// counts connections: readiness is the store's, and no request opens a connection to a model
// endpoint.
func TestReadyzDialsNoEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
		c.Upstreams = []config.Upstream{{Name: "primary", BaseURL: "http://" + ln.Addr().String() + "/v1", Model: "m", Profile: "openai"}}
	}})
	for i := range 50 {
		if got := get(g.URL + "/readyz"); got != http.StatusOK {
			t.Fatalf("/readyz call %d = %d, want 200", i+1, got)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("50 /readyz calls opened %d connections to the model endpoint, want none", n)
	}
}
