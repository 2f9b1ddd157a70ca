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
			for k, want := range map[string]string{"session": s.ID, "contract": "toulmin"} {
				if ep[k] != want {
					t.Errorf("body %s = %v, want %q", k, ep[k], want)
				}
			}
			// A gateway without keys has no key to name as the reference's asserter.
			if got, _ := json.Marshal(ep["learner"]); string(got) != `{"ref":"learner-ref-7"}` {
				t.Errorf("body learner = %s, want {\"ref\":\"learner-ref-7\"}", got)
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

// TestLearnerKeyReferenceIsAsserted attacks the escalation from a learner's side: a learner key
// creates a session as "classmate-42" and sends a crisis message. The signed webhook and the
// audit must not present the reference as established: both name it as asserted by that key
// (its id, the first 12 hex digits of its configured SHA-256), so the school can tell a
// reference its own systems gave from one a learner's client typed.
func TestLearnerKeyReferenceIsAsserted(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
	}))
	defer receiver.Close()
	learnerHash := sha256.Sum256([]byte(learnerKeyAcme))
	g := apptest.Start(t, func(c *config.Config) {
		c.EscalationURL, c.EscalationSecret = receiver.URL+"/hook", "escalation-e2e-secret-0123456789"
		c.APIKeys = []config.APIKey{
			{Tenant: "acme", Hash: learnerHash},
			{Tenant: "acme", Hash: sha256.Sum256([]byte(operatorKeyAcme)), Operator: true},
		}
	})
	want := `{"ref":"classmate-42","asserted_by":"` + hex.EncodeToString(learnerHash[:6]) + `"}`

	status, body := call(t, g, learnerKeyAcme, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "learner": "classmate-42"})
	if status != http.StatusCreated {
		t.Fatalf("creating a session: %d %s", status, body)
	}
	var s struct{ ID string }
	_ = json.Unmarshal([]byte(body), &s)
	if status, body := call(t, g, learnerKeyAcme, "POST", "/v1/sessions/"+s.ID+"/turns", apptest.Msg("I don't want to be alive anymore")); status != http.StatusOK || !strings.Contains(body, `"type":"safety"`) {
		t.Fatalf("the crisis turn: %d %s", status, body)
	}
	apptest.Eventually(t, "the receiver got the escalation", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) > 0
	})
	mu.Lock()
	var ep struct{ Learner json.RawMessage }
	err := json.Unmarshal(bodies[0], &ep)
	mu.Unlock()
	if err != nil || string(ep.Learner) != want {
		t.Errorf("webhook learner = %s (%v), want %s", ep.Learner, err, want)
	}
	var events struct {
		Events []struct{ Learner json.RawMessage }
	}
	apptest.Eventually(t, "the audit holds the crisis", func() bool {
		status, body := call(t, g, operatorKeyAcme, "GET", "/v1/safety/events", nil)
		return status == http.StatusOK && json.Unmarshal([]byte(body), &events) == nil && len(events.Events) > 0
	})
	for _, e := range events.Events {
		if string(e.Learner) != want {
			t.Errorf("audit record learner = %s, want %s", e.Learner, want)
		}
	}
}
