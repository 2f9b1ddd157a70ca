package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/safety"
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
// the session's tenant: a learner's key of the same tenant, another tenant's keys, no key. None
// of them changes the hold. On an open gateway every caller is the operator and clears it.
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
	for _, h := range [][]string{nil, bearerOf("anything")} {
		holdSession(t, open.store, "", oid)
		r := open.do("POST", "/v1/sessions/"+oid+"/safety", clear, h...)
		if r.Status/100 != 2 {
			t.Errorf("open gateway, headers %q: status %d %s, want 2xx", h, r.Status, r.Body)
		}
		if got, _ := open.store.Session(oid); got.Held() {
			t.Errorf("open gateway, headers %q: still held after the clear: %+v", h, got.Safety)
		}
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

// fakeAudit is an in-memory audit of numbered records per tenant: record n has id "n-0".
type fakeAudit struct {
	records map[string][]safety.Record
	// asked records the tenants asked for.
	asked []string
}

func (f *fakeAudit) SafetyEvents(_ context.Context, tenant, after string, limit int) ([]safety.Record, string, error) {
	f.asked = append(f.asked, tenant)
	from := 0
	if after != "" {
		n, err := fmt.Sscanf(after, "%d-0", &from)
		if err != nil || n != 1 {
			return nil, "", coach.FieldError("after", "bad after")
		}
	}
	next := after
	var out []safety.Record
	for _, r := range f.records[tenant] {
		var id int
		fmt.Sscanf(r.ID, "%d-0", &id)
		if id > from && len(out) < limit {
			out = append(out, r)
			next = r.ID
		}
	}
	return out, next, nil
}

// withAudit configures withOperators' keys and an audit with 5 records of acme and 1 of beta.
func withAudit(audit *fakeAudit) func(*Deps) {
	audit.records = map[string][]safety.Record{}
	for n := 1; n <= 6; n++ {
		tenant := "acme"
		if n == 3 {
			tenant = "beta"
		}
		audit.records[tenant] = append(audit.records[tenant], safety.Record{
			ID: fmt.Sprint(n, "-0"), Time: time.Unix(1700000000, 0).UTC(), Tenant: tenant, Session: fmt.Sprint("session-", n),
			Stage: safety.StageInput, Classifier: safety.BuiltinName, Action: safety.ActionNone, Mode: safety.ModeEnforce,
		})
	}
	return func(d *Deps) {
		withOperators(d)
		d.SafetyEvents = audit
	}
}

type eventsPage struct {
	Events []struct {
		ID, Session string
		Tenant      *string `json:"tenant"`
	}
	Next *string
}

func readEvents(t *testing.T, r response) eventsPage {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("status %d %s, want 200", r.Status, r.Body)
	}
	var p eventsPage
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil || p.Events == nil || p.Next == nil {
		t.Fatalf("body %s: want events (a list) and next (a string): %v", r.Body, err)
	}
	return p
}

// TestSafetyEvents reads the audit with each tenant's operator key: each sees its own tenant's
// records only, pages follow on through next, and no other key reads anything.
func TestSafetyEvents(t *testing.T) {
	audit := &fakeAudit{}
	ts := startServer(t, withAudit(audit))
	op := bearerOf(keyAcmeOperator)

	var sessions []string
	for after, pages := "", 0; ; pages++ {
		p := readEvents(t, ts.do("GET", "/v1/safety/events?limit=2&after="+after, "", op...))
		if len(p.Events) == 0 {
			if *p.Next != after {
				t.Errorf("empty page: next %q, want %q again", *p.Next, after)
			}
			break
		}
		if pages > 3 || len(p.Events) > 2 {
			t.Fatalf("page %d holds %d events, want at most 2 in 3 pages", pages, len(p.Events))
		}
		for _, e := range p.Events {
			if e.Tenant != nil {
				t.Errorf("event %s names its tenant %q on the wire", e.ID, *e.Tenant)
			}
			sessions = append(sessions, e.Session)
		}
		after = *p.Next
	}
	if want := []string{"session-1", "session-2", "session-4", "session-5", "session-6"}; !slices.Equal(sessions, want) {
		t.Errorf("acme's operator read %v, want %v", sessions, want)
	}
	if p := readEvents(t, ts.do("GET", "/v1/safety/events", "", op...)); len(p.Events) != 5 {
		t.Errorf("default page holds %d events, want all 5 of acme", len(p.Events))
	}
	if p := readEvents(t, ts.do("GET", "/v1/safety/events", "", bearerOf(keyBetaOperator)...)); len(p.Events) != 1 || p.Events[0].Session != "session-3" {
		t.Errorf("beta's operator read %+v, want beta's one event", p.Events)
	}

	audit.asked = nil
	for _, key := range []string{keyAcme, "acme-old-key", keyBeta} {
		r := ts.do("GET", "/v1/safety/events", "", bearerOf(key)...)
		if r.Status != http.StatusForbidden || r.errorCode() != codeForbidden {
			t.Errorf("key %s: status %d %s, want 403 %s", key, r.Status, r.Body, codeForbidden)
		}
	}
	if len(audit.asked) != 0 {
		t.Errorf("the audit was read for %v by keys that are no operator's", audit.asked)
	}
}

func TestSafetyEventsBadInput(t *testing.T) {
	ts := startServer(t, withAudit(&fakeAudit{}))
	op := bearerOf(keyAcmeOperator)
	tests := []struct {
		query, field string
	}{
		{"limit=0", "limit"},
		{"limit=-1", "limit"},
		{"limit=x", "limit"},
		{"limit=1001", "limit"},
		{"after=nope", "after"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := ts.do("GET", "/v1/safety/events?"+tt.query, "", op...)
			var b errorBody
			_ = json.Unmarshal([]byte(r.Body), &b)
			if r.Status != http.StatusUnprocessableEntity || b.Error != coach.CodeInvalidInput || b.Field != tt.field {
				t.Errorf("status %d %s, want 422 invalid_input on %s", r.Status, r.Body, tt.field)
			}
		})
	}
	if p := readEvents(t, ts.do("GET", "/v1/safety/events?limit=1000", "", op...)); len(p.Events) != 5 {
		t.Errorf("limit=1000 read %d events, want 5", len(p.Events))
	}
}

// TestSafetyEventsOpenGateway: without API keys every caller is the operator and reads the audit.
func TestSafetyEventsOpenGateway(t *testing.T) {
	audit := &fakeAudit{}
	ts := startServer(t, func(d *Deps) { d.SafetyEvents = audit })
	for _, h := range [][]string{nil, bearerOf(keyAcmeOperator)} {
		if r := ts.do("GET", "/v1/safety/events", "", h...); r.Status != http.StatusOK {
			t.Errorf("open gateway, headers %q: status %d %s, want 200", h, r.Status, r.Body)
		}
	}
	if len(audit.asked) != 2 {
		t.Errorf("the audit was read %d times on an open gateway, want 2", len(audit.asked))
	}
}
