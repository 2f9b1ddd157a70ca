package security_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestSecretsNeverLogged drives a gateway with client keys, a model key and rate limiting
// through successes and failures, then greps everything it logged for the secrets and for the
// key hashes (not secret, but no business in a log either).
func TestSecretsNeverLogged(t *testing.T) {
	const openaiKey = "sk-openai-live-5e0d1c9b8a7f"
	const wrongKey = "sk-coach-guessed-0000000000"
	var cfg config.Config
	g := apptest.Start(t, func(c *config.Config) {
		withKeys(c)
		c.OpenAIAPIKey = openaiKey
		c.RateLimit = 3
		cfg = *c
	})
	// cmd/coachgw logs the configuration at start; do the same into the captured log.
	log := zerolog.New(g.Log)
	log.Info().Object("config", cfg).Msg("starting coachgw")

	id := create(t, g, keyAcme, "toulmin")
	g.LLM.Enqueue(replyText("Hi."))
	if a := send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("hello")); a.last().Type != "result" {
		t.Fatalf("turn: %s", a.Body)
	}
	g.LLM.Enqueue(fakellm.Reply{Fault: fakellm.Fault{Status: 400}})
	if a := send(t, g, keyAcme, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("again")); a.last().Error != "coach_stream_failed" {
		t.Fatalf("failing turn: %s", a.Body)
	}
	if a := send(t, g, keyAcme, "POST", "/v1/sessions", map[string]string{"contract": "cards"}); a.Status != http.StatusTooManyRequests {
		t.Fatalf("fourth limited request: %d, want 429", a.Status)
	}
	for _, key := range []string{wrongKey, hexHash(keyAcme), keyAcme + " " + keyBeta} {
		if a := send(t, g, key, "GET", "/v1/modules", nil); a.Status != http.StatusUnauthorized {
			t.Fatalf("bad key: %d, want 401", a.Status)
		}
	}
	req, _ := http.NewRequest("GET", g.URL+"/v1/modules", nil)
	req.Header.Set("Authorization", "Token "+keyBeta)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	logged := g.Log.String()
	if !strings.Contains(logged, `"status":401`) || !strings.Contains(logged, `"apiKeys":3`) {
		t.Fatalf("the log lacks the lines this test needs:\n%s", logged)
	}
	for _, secret := range []string{keyAcme, keyAcme2, keyBeta, wrongKey, openaiKey, hexHash(keyAcme), hexHash(keyAcme2), hexHash(keyBeta), hexHash(wrongKey)} {
		for _, form := range []string{secret, strings.ToUpper(secret)} {
			if strings.Contains(logged, form) {
				t.Errorf("the gateway log contains %q", form)
			}
		}
	}

	// The model endpoint gets the model key, and never a client's.
	for i, r := range g.LLM.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer "+openaiKey {
			t.Errorf("model request %d: Authorization %q, want the model key", i, got)
		}
		for _, k := range []string{keyAcme, keyBeta} {
			if strings.Contains(string(r.Raw), k) || strings.Contains(strings.Join(r.Header.Values("Authorization"), " "), k) {
				t.Errorf("model request %d carries a client key", i)
			}
		}
	}
}
