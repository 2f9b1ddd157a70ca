package security_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestRateLimitSharedAcrossInstances runs two gateways on one Redis: a tenant's budget is spent
// on either, each tenant has its own, and a refusal says when to come back.
func TestRateLimitSharedAcrossInstances(t *testing.T) {
	var cfg config.Config
	limited := func(c *config.Config) { withKeys(c); c.RateLimit = 2 }
	g1 := apptest.Start(t, func(c *config.Config) { limited(c); cfg = *c })
	rdb := redisOf(t, cfg)
	g2 := apptest.Start(t, func(c *config.Config) { limited(c); c.RedisURL, c.RedisPrefix = cfg.RedisURL, cfg.RedisPrefix })

	session := map[string]string{"contract": "toulmin"}
	id := create(t, g1, keyAcme, "toulmin")
	create(t, g2, keyAcme, "toulmin")
	steps := []struct {
		name string
		g    *apptest.Gateway
		key  string
		path string
		body any
		want int
	}{
		{"third session on the first gateway", g1, keyAcme, "/v1/sessions", session, http.StatusTooManyRequests},
		{"third session on the second gateway", g2, keyAcme, "/v1/sessions", session, http.StatusTooManyRequests},
		{"a turn counts too", g2, keyAcme, "/v1/sessions/" + id + "/turns", apptest.Msg("hi"), http.StatusTooManyRequests},
		{"the seed route counts too", g1, keyAcme, "/api/coach", map[string]string{"sessionId": id, "message": "hi"}, http.StatusTooManyRequests},
		{"another tenant has its own budget", g2, keyBeta, "/v1/sessions", session, http.StatusCreated},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			a := send(t, s.g, s.key, "POST", s.path, s.body)
			if a.Status != s.want {
				t.Fatalf("status %d %s, want %d", a.Status, a.Body, s.want)
			}
			if s.want != http.StatusTooManyRequests {
				return
			}
			// Two a minute: the next token comes back within 30 s.
			if secs, err := strconv.Atoi(a.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 30 || a.code() != "rate_limited" {
				t.Errorf("429 with Retry-After %q and body %s; want rate_limited and 1..30 s", a.Header.Get("Retry-After"), a.Body)
			}
		})
	}
	if a := send(t, g1, keyAcme, "GET", "/v1/sessions/"+id, nil); a.Status != http.StatusOK {
		t.Errorf("reading a session while limited: %d, want 200 (reads are not limited)", a.Status)
	}
	keys := keysUnder(t, rdb, cfg.RedisPrefix)
	for _, want := range []string{cfg.RedisPrefix + ":{rl:acme}", cfg.RedisPrefix + ":{rl:beta}"} {
		if !contains(keys, want) {
			t.Errorf("Redis keys %q lack the limiter %s", keys, want)
		}
	}
}

// TestRateLimitOffByDefault: with COACH_RATE_LIMIT unset the limiter is never asked for a turn,
// so a turn keeps its two round trips and leaves no limiter key behind. (Creating the session
// is counted by COACH_SESSION_RATE_LIMIT, on by default, under a key of its own.)
func TestRateLimitOffByDefault(t *testing.T) {
	var cfg config.Config
	g := apptest.Start(t, func(c *config.Config) { cfg = *c })
	rdb := redisOf(t, cfg)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(replyText("Hello."))
	if tr := g.Turn(s.ID, apptest.Msg("hi")); tr.Last().Type != "result" {
		t.Fatalf("turn: %s", tr.Body)
	}
	for _, k := range keysUnder(t, rdb, cfg.RedisPrefix) {
		if strings.Contains(k, "{rl:") && !strings.Contains(k, "{rl:sessions:") {
			t.Errorf("limiter key %s exists with rate limiting off", k)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
