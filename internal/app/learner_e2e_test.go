package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/safety"
)

// Keys of the data-rights test: a learner key and an operator key for each of two tenants.
const (
	learnerKeyAcme  = "sk-learner-acme-52b0"
	operatorKeyAcme = "sk-operator-acme-9c1d"
	learnerKeyBeta  = "sk-learner-beta-7e44"
	operatorKeyBeta = "sk-operator-beta-03fa"
)

// call sends a JSON request with key and answers the status and the body.
func call(t *testing.T, g *apptest.Gateway, key, method, path string, body any) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLearnerExportAndErasure runs the data rights of wire contract v1.3 on a real gateway and
// Redis: learner A of acme has two sessions with turns, learner B one, and beta has a learner
// with A's reference. The export of A holds its sessions and whole transcripts; its erasure
// leaves no key under the gateway's prefix that names A's sessions or A's index, while B and
// beta's A keep every key they had; A's safety records leave the tenant's audit, B's and beta's
// stay.
func TestLearnerExportAndErasure(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) {
		c.APIKeys = []config.APIKey{
			{Tenant: "acme", Hash: sha256.Sum256([]byte(learnerKeyAcme))},
			{Tenant: "acme", Hash: sha256.Sum256([]byte(operatorKeyAcme)), Operator: true},
			{Tenant: "beta", Hash: sha256.Sum256([]byte(learnerKeyBeta))},
			{Tenant: "beta", Hash: sha256.Sum256([]byte(operatorKeyBeta)), Operator: true},
		}
	})
	if g.Config.RedisURL == "" {
		t.Skip("no Redis to scan: the gateway runs on its embedded one")
	}
	opts, err := redis.ParseURL(g.Config.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })

	const refA, refB = "pupil-a@example.org", "pupil-b"
	newSession := func(key, ref string) string {
		t.Helper()
		status, body := call(t, g, key, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "learner": ref})
		if status != http.StatusCreated {
			t.Fatalf("creating a session of %s: %d %s", ref, status, body)
		}
		var s struct{ ID string }
		_ = json.Unmarshal([]byte(body), &s)
		for _, msg := range []string{"Homework should be banned.", "Because kids need rest."} {
			g.LLM.Enqueue(fakellm.Reply{Content: `{"assistantText":"Tell me more about that.","step":"claim"}`})
			if status, body := call(t, g, key, "POST", "/v1/sessions/"+s.ID+"/turns", apptest.Msg(msg)); status != http.StatusOK || !strings.Contains(body, `"type":"result"`) {
				t.Fatalf("turn of %s: %d %s", s.ID, status, body)
			}
		}
		return s.ID
	}
	a1, a2 := newSession(learnerKeyAcme, refA), newSession(learnerKeyAcme, refA)
	b := newSession(learnerKeyAcme, refB)
	betaA := newSession(learnerKeyBeta, refA)

	// The safety audit holds a record of A's, B's and beta's A's turns.
	audit := redisstore.NewSafetyAudit(rdb, g.Config.RedisPrefix, time.Hour, 0)
	for _, r := range []struct{ tenant, ref, id string }{{"acme", refA, a1}, {"acme", refB, b}, {"beta", refA, betaA}} {
		err := audit.Audit(context.Background(), []safety.Record{{Time: time.Now().UTC(), Tenant: r.tenant, Session: r.id, Learner: safety.Learner{Ref: r.ref},
			Stage: safety.StageInput, Classifier: safety.BuiltinName, Categories: []safety.Category{safety.CategorySuicide},
			Severity: safety.SeverityHigh, Action: safety.ActionCrisis, Mode: safety.ModeEnforce}})
		if err != nil {
			t.Fatal(err)
		}
	}

	// No key but the tenant's operator key reaches the learner routes.
	for _, key := range []string{learnerKeyAcme, learnerKeyBeta} {
		for _, req := range [][2]string{{"GET", "/v1/learners/" + refA + "/export"}, {"DELETE", "/v1/learners/" + refA}} {
			if status, body := call(t, g, key, req[0], req[1], nil); status != http.StatusForbidden {
				t.Errorf("%s %s with a learner key: %d %s, want 403", req[0], req[1], status, body)
			}
		}
	}

	status, body := call(t, g, operatorKeyAcme, "GET", "/v1/learners/"+refA+"/export", nil)
	if status != http.StatusOK {
		t.Fatalf("export: %d %s", status, body)
	}
	exp := parseExport(t, body)
	got := map[string]bool{}
	for _, s := range exp.Sessions {
		got[s.Session.ID] = true
		if len(s.Transcript) != 4 || len(s.Session.State) == 0 || s.Session.Learner != refA {
			t.Errorf("exported session %s: %d transcript entries, state %s, learner %q; want 4 entries, its state and %q",
				s.Session.ID, len(s.Transcript), s.Session.State, s.Session.Learner, refA)
		}
	}
	if len(got) != 2 || !got[a1] || !got[a2] || exp.Learner != refA {
		t.Errorf("export = %s, want sessions %s and %s of %s", body, a1, a2, refA)
	}
	// The safety events are those of A's turns (the engine audits every check) and the crisis
	// record written above; none of another learner.
	crisis := false
	for _, e := range exp.SafetyEvents {
		if !strings.Contains(string(e), a1) && !strings.Contains(string(e), a2) {
			t.Errorf("exported safety event %s is not of A's sessions", e)
		}
		crisis = crisis || strings.Contains(string(e), `"action":"crisis"`)
	}
	if !crisis || len(exp.SafetyEvents) < 2 {
		t.Errorf("exported safety events = %s, want the turns' checks and the crisis record", exp.SafetyEvents)
	}

	hash := sha256.Sum256([]byte(refA))
	indexA := g.Config.RedisPrefix + ":{lrn:acme:" + hex.EncodeToString(hash[:]) + "}"
	before := keysUnder(t, rdb, g.Config.RedisPrefix)
	if !before[indexA] {
		t.Fatalf("no index %s among the keys before the erasure: %v", indexA, before)
	}
	for _, key := range []string{operatorKeyAcme, operatorKeyAcme} { // erasure is idempotent
		if status, body := call(t, g, key, "DELETE", "/v1/learners/"+refA, nil); status != http.StatusNoContent {
			t.Fatalf("erasure: %d %s", status, body)
		}
	}
	after := keysUnder(t, rdb, g.Config.RedisPrefix)
	for k := range after {
		if strings.Contains(k, a1) || strings.Contains(k, a2) || k == indexA {
			t.Errorf("after the erasure, key %s of learner A is still there", k)
		}
	}
	for k := range before {
		if !strings.Contains(k, a1) && !strings.Contains(k, a2) && k != indexA && !after[k] {
			t.Errorf("the erasure of A took key %s, which is not A's", k)
		}
	}
	events, err := rdb.XRange(context.Background(), g.Config.RedisPrefix+":{audit:acme}", "-", "+").Result()
	if err != nil || len(events) == 0 {
		t.Fatalf("acme's audit after the erasure = %v, %v, want B's records", events, err)
	}
	for _, e := range events {
		if r := fmt.Sprint(e.Values); !strings.Contains(r, b) || strings.Contains(r, refA) {
			t.Errorf("acme's audit after the erasure holds %s, want B's records alone", r)
		}
	}
	for _, id := range []string{a1, a2} {
		if status, _ := call(t, g, learnerKeyAcme, "GET", "/v1/sessions/"+id, nil); status != http.StatusNotFound {
			t.Errorf("GET erased session %s: %d, want 404", id, status)
		}
	}
	// B, and beta's learner with A's reference, are intact.
	for _, c := range []struct{ key, id string }{{learnerKeyAcme, b}, {learnerKeyBeta, betaA}} {
		status, body := call(t, g, c.key, "GET", "/v1/sessions/"+c.id+"/messages", nil)
		if status != http.StatusOK || strings.Count(body, `"seq":`) != 4 {
			t.Errorf("transcript of %s after A's erasure: %d %s, want its 4 entries", c.id, status, body)
		}
	}
	status, body = call(t, g, operatorKeyBeta, "GET", "/v1/learners/"+refA+"/export", nil)
	if status != http.StatusOK || !strings.Contains(body, betaA) || strings.Count(body, `"classifier"`) != strings.Count(body, `"session":"`+betaA+`","learner"`) {
		t.Errorf("beta's export of its learner %s after acme's erasure: %d %s", refA, status, body)
	}
	status, body = call(t, g, operatorKeyAcme, "GET", "/v1/learners/"+refA+"/export", nil)
	if status != http.StatusOK || strings.Contains(body, a1) || strings.Contains(body, a2) {
		t.Errorf("export after the erasure: %d %s, want no session", status, body)
	}
}

// keysUnder returns every key whose name starts with prefix.
func keysUnder(t *testing.T, rdb *redis.Client, prefix string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	iter := rdb.Scan(context.Background(), 0, prefix+":*", 1000).Iterator()
	for iter.Next(context.Background()) {
		out[iter.Val()] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return out
}

// TestErasureMidTurnIsFinal erases a learner while a turn of theirs waits on a slow model: the
// erasure answers 204, the turn then ends with error session_deleted, and no audit record of
// the learner is written afterwards (the turn's checks are audited when it ends).
func TestErasureMidTurnIsFinal(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) {
		c.APIKeys = []config.APIKey{
			{Tenant: "acme", Hash: sha256.Sum256([]byte(learnerKeyAcme))},
			{Tenant: "acme", Hash: sha256.Sum256([]byte(operatorKeyAcme)), Operator: true},
		}
	})
	const ref = "pupil-erased@example.org"
	status, body := call(t, g, learnerKeyAcme, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "learner": ref})
	if status != http.StatusCreated {
		t.Fatalf("creating a session: %d %s", status, body)
	}
	var s struct{ ID string }
	_ = json.Unmarshal([]byte(body), &s)

	g.LLM.Enqueue(fakellm.Reply{Content: `{"assistantText":"Tell me more about that.","step":"claim"}`,
		Fault: fakellm.Fault{FirstByteDelay: 800 * time.Millisecond}})
	turn := make(chan string, 1)
	go func() {
		b, _ := json.Marshal(apptest.Msg("Homework should be banned."))
		req, _ := http.NewRequest("POST", g.URL+"/v1/sessions/"+s.ID+"/turns", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+learnerKeyAcme)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			turn <- err.Error()
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		turn <- string(out)
	}()
	for deadline := time.Now().Add(5 * time.Second); len(g.LLM.Requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the turn never reached the model")
		}
	}
	if status, body := call(t, g, operatorKeyAcme, "DELETE", "/v1/learners/"+ref, nil); status != http.StatusNoContent {
		t.Fatalf("erasure mid-turn: %d %s", status, body)
	}
	answer := strings.TrimSpace(<-turn)
	lines := strings.Split(answer, "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"type":"error"`) || !strings.Contains(last, `"error":"session_deleted"`) {
		t.Errorf("the erased turn's answer = %s, want a last line error session_deleted", answer)
	}
	// The turn's audit goes out off its path; give it time to be written, then look.
	time.Sleep(300 * time.Millisecond)
	status, body = call(t, g, operatorKeyAcme, "GET", "/v1/learners/"+ref+"/export", nil)
	if status != http.StatusOK {
		t.Fatalf("export after the erasure: %d %s", status, body)
	}
	if strings.Contains(body, s.ID) {
		t.Errorf("after the erasure mid-turn, the export holds %s, want nothing of the learner", body)
	}
}

// exportedSession is one session of a learnerExport.
type exportedSession struct {
	Session struct {
		ID      string          `json:"id"`
		State   json.RawMessage `json:"state"`
		Learner string          `json:"learner"`
	}
	Transcript []struct {
		Role string `json:"role"`
	}
}

// learnerExport is an export as a client puts its NDJSON lines together.
type learnerExport struct {
	Learner      string
	Sessions     []exportedSession
	SafetyEvents []json.RawMessage
}

// parseExport puts the lines of an export's body together.
func parseExport(t *testing.T, body string) learnerExport {
	t.Helper()
	var exp learnerExport
	for i, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		var l struct {
			Type      string          `json:"type"`
			Learner   string          `json:"learner"`
			Session   json.RawMessage `json:"session"`
			SessionID string          `json:"sessionId"`
			Entries   json.RawMessage `json:"entries"`
			Event     json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("export line %d %s: %v", i, line, err)
		}
		switch l.Type {
		case "learner":
			exp.Learner = l.Learner
		case "session":
			exp.Sessions = append(exp.Sessions, exportedSession{})
			if err := json.Unmarshal(l.Session, &exp.Sessions[len(exp.Sessions)-1].Session); err != nil {
				t.Fatalf("export line %d %s: %v", i, line, err)
			}
		case "transcript":
			if len(exp.Sessions) == 0 || exp.Sessions[len(exp.Sessions)-1].Session.ID != l.SessionID {
				t.Fatalf("export line %d is a transcript page of no session before it: %s", i, line)
			}
			last := &exp.Sessions[len(exp.Sessions)-1]
			var entries []struct {
				Role string `json:"role"`
			}
			if err := json.Unmarshal(l.Entries, &entries); err != nil {
				t.Fatalf("export line %d %s: %v", i, line, err)
			}
			last.Transcript = append(last.Transcript, entries...)
		case "safety_event":
			exp.SafetyEvents = append(exp.SafetyEvents, l.Event)
		default:
			t.Fatalf("export line %d has an unknown type: %s", i, line)
		}
	}
	return exp
}
