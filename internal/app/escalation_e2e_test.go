package app_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestCrisisTurnEscalatesOnce takes a crisis turn and two held turns after it: the receiver gets
// one signed request for the episode, with the session's tenant, session, learner reference and
// contract, and the learner's text only when COACH_ESCALATION_INCLUDE_TEXT says so.
func TestCrisisTurnEscalatesOnce(t *testing.T) {
	const secret = "escalation-e2e-secret-0123456789"
	const crisis = "I don't want to be alive anymore"
	for _, includeText := range []bool{false, true} {
		name := "without text"
		if includeText {
			name = "with text"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies [][]byte
			var sigs []string
			receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				bodies = append(bodies, body)
				sigs = append(sigs, r.Header.Get("X-Coach-Signature"))
			}))
			defer receiver.Close()
			g := apptest.Start(t, func(c *config.Config) {
				c.EscalationURL, c.EscalationSecret, c.EscalationIncludeText = receiver.URL+"/hook", secret, includeText
			})
			s := g.Create("toulmin", map[string]string{"learner": "learner-ref-7"})
			if tr := g.Turn(s.ID, apptest.Msg(crisis)); !strings.Contains(tr.Kinds(), "safety") {
				t.Fatalf("the crisis turn sent no safety line: %s", tr.Body)
			}
			apptest.Eventually(t, "the receiver got the escalation", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(bodies) > 0
			})
			// The held turns belong to the same episode.
			g.Turn(s.ID, map[string]bool{"continue": true})
			g.Turn(s.ID, apptest.Msg(crisis))
			if m := g.Metrics(); !strings.Contains(m, `coachgw_escalations_total{outcome="delivered"} 1`) {
				t.Errorf("metrics lack one delivered escalation:\n%s", grepLines(m, "escalation"))
			}
			g.Stop()

			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 1 {
				t.Fatalf("the receiver got %d requests, want 1: %q", len(bodies), bodies)
			}
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(bodies[0])
			if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(sigs[0]), []byte(want)) {
				t.Errorf("signature %q, want %q", sigs[0], want)
			}
			var ep map[string]any
			if err := json.Unmarshal(bodies[0], &ep); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]string{"session": s.ID, "learner": "learner-ref-7", "contract": "toulmin"} {
				if ep[k] != want {
					t.Errorf("body %s = %v, want %q", k, ep[k], want)
				}
			}
			if got := strings.Contains(string(bodies[0]), "alive"); got != includeText {
				t.Errorf("body holds the learner's text: %v, want %v: %s", got, includeText, bodies[0])
			}
			if strings.Contains(g.Log.String(), "alive") {
				t.Errorf("the gateway logged the learner's text:\n%s", g.Log.String())
			}
		})
	}
}

func grepLines(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
