package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

const (
	keyAcmeOperator = "acme-operator-key-5555"
	keyBetaOperator = "beta-operator-key-7777"
)

// withOperators configures withKeys' learner keys and one operator key for each of acme and beta.
func withOperators(d *Deps) {
	withKeys(d)
	d.APIKeys = append(d.APIKeys,
		APIKey{Tenant: "acme", Hash: HashKey(keyAcmeOperator), Operator: true},
		APIKey{Tenant: "beta", Hash: HashKey(keyBetaOperator), Operator: true})
}

func bearerOf(key string) []string { return []string{"Authorization", "Bearer " + key} }

// holdSession puts session id of tenant on a safety hold, as a crisis turn does.
func holdSession(t *testing.T, store *coachtest.MemStore, tenant, id string) {
	t.Helper()
	ctx := context.Background()
	sess, token, err := store.Claim(ctx, tenant, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sess.Safety = &coach.SafetyHold{Hold: true, Since: time.Now().UTC(), Episode: "ep-1"}
	sess.Version++
	if err := store.Commit(ctx, sess, token, coach.CommitExtra{}); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorOnly attacks the operator routes from every key that is not an operator key of
// the session's tenant: a learner's key of the same tenant, another tenant's keys, no key, and
// every caller of an open gateway. None of them changes the hold.
func TestOperatorOnly(t *testing.T) {
	ts := startServer(t, withOperators)
	id := ts.create("toulmin", bearerOf(keyAcme)...)
	holdSession(t, ts.store, "acme", id)
	clear := `{"action":"clear"}`
	tests := []struct {
		name     string
		headers  []string
		want     int
		wantCode string
	}{
		{"no key", nil, http.StatusUnauthorized, codeUnauthorized},
		{"the tenant's learner key", bearerOf(keyAcme), http.StatusForbidden, codeForbidden},
		{"the tenant's older learner key", bearerOf("acme-old-key"), http.StatusForbidden, codeForbidden},
		{"another tenant's learner key", bearerOf(keyBeta), http.StatusForbidden, codeForbidden},
		{"another tenant's operator key", bearerOf(keyBetaOperator), http.StatusNotFound, "session_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", "/v1/sessions/"+id+"/safety", clear, tt.headers...)
			if r.Status != tt.want || r.errorCode() != tt.wantCode {
				t.Fatalf("status %d %s, want %d %s", r.Status, r.Body, tt.want, tt.wantCode)
			}
			if got, _ := ts.store.Session(id); !got.Held() {
				t.Errorf("the hold is gone after a refused clear: %+v", got.Safety)
			}
		})
	}

	open := startServer(t, nil)
	oid := open.create("toulmin")
	holdSession(t, open.store, "", oid)
	for _, h := range [][]string{nil, bearerOf("anything"), bearerOf(keyAcmeOperator)} {
		r := open.do("POST", "/v1/sessions/"+oid+"/safety", clear, h...)
		if r.Status != http.StatusForbidden || r.errorCode() != codeForbidden {
			t.Errorf("open gateway, headers %q: status %d %s, want 403 %s", h, r.Status, r.Body, codeForbidden)
		}
	}
	if got, _ := open.store.Session(oid); !got.Held() {
		t.Errorf("open gateway: the hold is gone: %+v", got.Safety)
	}
}

// TestClearSafetyHold clears a hold with the tenant's operator key: the session answered and
// stored loses "safety" in a new version, and clearing again changes nothing.
func TestClearSafetyHold(t *testing.T) {
	ts := startServer(t, withOperators)
	op := bearerOf(keyAcmeOperator)
	id := ts.create("toulmin", bearerOf(keyAcme)...)
	holdSession(t, ts.store, "acme", id)

	r := ts.do("POST", "/v1/sessions/"+id+"/safety", `{"action":"clear"}`, op...)
	if r.Status != http.StatusOK {
		t.Fatalf("clear: status %d %s, want 200", r.Status, r.Body)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatal(err)
	}
	if s, ok := got["safety"]; ok {
		t.Errorf("cleared session answers safety %s, want none", s)
	}
	if v := string(got["version"]); v != "3" {
		t.Errorf("cleared session version %s, want 3 (created 1, held 2)", v)
	}
	stored, _ := ts.store.Session(id)
	if stored.Safety != nil || stored.Version != 3 {
		t.Errorf("stored after clear: safety %+v version %d, want none and 3", stored.Safety, stored.Version)
	}
	if ts.store.Locked(id) {
		t.Error("the session is still locked after the clear")
	}

	r = ts.do("POST", "/v1/sessions/"+id+"/safety", `{"action":"clear"}`, op...)
	if r.Status != http.StatusOK {
		t.Fatalf("second clear: status %d %s, want 200", r.Status, r.Body)
	}
	if again, _ := ts.store.Session(id); again.Version != 3 {
		t.Errorf("a clear without hold wrote version %d, want it left at 3", again.Version)
	}
	if ts.store.Locked(id) {
		t.Error("the session is still locked after a clear without hold")
	}
}

func TestClearSafetyHoldBadInput(t *testing.T) {
	ts := startServer(t, withOperators)
	op := bearerOf(keyAcmeOperator)
	id := ts.create("toulmin", bearerOf(keyAcme)...)
	holdSession(t, ts.store, "acme", id)
	tests := []struct {
		name, path, body string
		want             int
		wantCode         string
	}{
		{"unknown action", "/v1/sessions/" + id + "/safety", `{"action":"lift"}`, http.StatusUnprocessableEntity, coach.CodeInvalidInput},
		{"no action", "/v1/sessions/" + id + "/safety", `{}`, http.StatusUnprocessableEntity, coach.CodeInvalidInput},
		{"malformed body", "/v1/sessions/" + id + "/safety", `{"action":`, http.StatusBadRequest, coach.CodeInvalidRequest},
		{"unknown session", "/v1/sessions/" + coach.NewID() + "/safety", `{"action":"clear"}`, http.StatusNotFound, "session_not_found"},
		{"malformed session id", "/v1/sessions/nope/safety", `{"action":"clear"}`, http.StatusNotFound, "session_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", tt.path, tt.body, op...)
			if r.Status != tt.want || r.errorCode() != tt.wantCode {
				t.Fatalf("status %d %s, want %d %s", r.Status, r.Body, tt.want, tt.wantCode)
			}
		})
	}
	if got, _ := ts.store.Session(id); !got.Held() || got.Version != 2 {
		t.Errorf("after refused requests: hold %+v version %d, want held at version 2", got.Safety, got.Version)
	}
}

// TestClearSafetyHoldWhileBusy clears a session whose lock a turn holds: the clear is
// session_busy and leaves the hold, and the turn's own commit then goes through.
func TestClearSafetyHoldWhileBusy(t *testing.T) {
	ts := startServer(t, withOperators)
	id := ts.create("toulmin", bearerOf(keyAcme)...)
	holdSession(t, ts.store, "acme", id)
	ctx := context.Background()
	sess, token, err := ts.store.Claim(ctx, "acme", id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := ts.do("POST", "/v1/sessions/"+id+"/safety", `{"action":"clear"}`, bearerOf(keyAcmeOperator)...)
	if r.Status != http.StatusConflict || r.errorCode() != coach.CodeSessionBusy {
		t.Fatalf("clear while busy: status %d %s, want 409 %s", r.Status, r.Body, coach.CodeSessionBusy)
	}
	sess.Version++
	if err := ts.store.Commit(ctx, sess, token, coach.CommitExtra{}); err != nil {
		t.Fatalf("the turn's commit after a refused clear: %v", err)
	}
	if got, _ := ts.store.Session(id); !got.Held() {
		t.Errorf("the hold is gone after a refused clear: %+v", got.Safety)
	}
}
