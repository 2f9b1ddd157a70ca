package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// createFor creates a toulmin session of learner with the key's headers and takes one turn in
// it, so that it has a transcript.
func (ts *testServer) createFor(learner string, headers ...string) string {
	ts.t.Helper()
	r := ts.do("POST", "/v1/sessions", `{"contract":"toulmin","learner":"`+learner+`"}`, headers...)
	if r.Status != http.StatusCreated {
		ts.t.Fatalf("creating a session of %s: %d %s", learner, r.Status, r.Body)
	}
	var s struct{ ID string }
	if err := json.Unmarshal([]byte(r.Body), &s); err != nil {
		ts.t.Fatal(err)
	}
	if r := ts.do("POST", "/v1/sessions/"+s.ID+"/turns", `{"message":"Homework should be banned."}`, headers...); r.Status != http.StatusOK {
		ts.t.Fatalf("turn of %s: %d %s", s.ID, r.Status, r.Body)
	}
	return s.ID
}

// TestLearnerRoutesNeedAnOperator attacks the learner routes from every key that is not an
// operator key: none of them reads or erases anything.
func TestLearnerRoutesNeedAnOperator(t *testing.T) {
	ts := startServer(t, withOperators)
	id := ts.createFor("pupil-7", bearerOf(keyAcme)...)
	tests := []struct {
		name     string
		headers  []string
		want     int
		wantCode string
	}{
		{"no key", nil, http.StatusUnauthorized, codeUnauthorized},
		{"the tenant's learner key", bearerOf(keyAcme), http.StatusForbidden, codeForbidden},
		{"another tenant's learner key", bearerOf(keyBeta), http.StatusForbidden, codeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, req := range [][2]string{{"GET", "/v1/learners/pupil-7/export"}, {"DELETE", "/v1/learners/pupil-7"}} {
				r := ts.do(req[0], req[1], "", tt.headers...)
				if r.Status != tt.want || r.errorCode() != tt.wantCode {
					t.Errorf("%s %s: status %d %s, want %d %s", req[0], req[1], r.Status, r.Body, tt.want, tt.wantCode)
				}
				if strings.Contains(r.Body, id) {
					t.Errorf("%s %s answered the learner's session id: %s", req[0], req[1], r.Body)
				}
			}
			if _, ok := ts.store.Session(id); !ok {
				t.Fatal("the learner's session is gone after a refused erasure")
			}
		})
	}
	// On an open gateway every caller is the operator.
	open := startServer(t, nil)
	for _, req := range [][2]string{{"GET", "/v1/learners/pupil-7/export"}, {"DELETE", "/v1/learners/pupil-7"}} {
		if r := open.do(req[0], req[1], ""); r.Status/100 != 2 {
			t.Errorf("open gateway %s %s: status %d %s, want 2xx", req[0], req[1], r.Status, r.Body)
		}
	}
}

// exportSession is one session of an export as a client puts it together.
type exportSession struct {
	Session    coach.Session
	Transcript []coach.TranscriptEntry
}

// exportBody is an export as a client reads it.
type exportBody struct {
	Learner      string
	Sessions     []exportSession
	SafetyEvents []safety.Record
}

// exportOf reads the export of ref with headers, an NDJSON line at a time.
func (ts *testServer) exportOf(ref string, headers ...string) exportBody {
	ts.t.Helper()
	r := ts.do("GET", "/v1/learners/"+ref+"/export", "", headers...)
	if r.Status != http.StatusOK {
		ts.t.Fatalf("export of %s: %d %s", ref, r.Status, r.Body)
	}
	if got := r.Header.Get("Cache-Control"); got != "no-store" {
		ts.t.Errorf("export Cache-Control = %q, want no-store", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-ndjson" {
		ts.t.Errorf("export Content-Type = %q, want application/x-ndjson", got)
	}
	var out exportBody
	for i, line := range strings.Split(strings.TrimSuffix(r.Body, "\n"), "\n") {
		var l struct {
			Type      string          `json:"type"`
			Learner   string          `json:"learner"`
			Session   json.RawMessage `json:"session"`
			SessionID string          `json:"sessionId"`
			Entries   []coach.TranscriptEntry
			Event     safety.Record
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			ts.t.Fatalf("export line %d %s: %v", i, line, err)
		}
		switch {
		case i == 0 && l.Type == coach.ExportLearnerType:
			out.Learner = l.Learner
		case i > 0 && l.Type == coach.ExportSessionType:
			var sess coach.Session
			if err := json.Unmarshal(l.Session, &sess); err != nil {
				ts.t.Fatalf("export line %d %s: %v", i, line, err)
			}
			out.Sessions = append(out.Sessions, exportSession{Session: sess})
		case i > 0 && l.Type == coach.ExportTranscriptType && len(out.Sessions) > 0 && l.SessionID == out.Sessions[len(out.Sessions)-1].Session.ID:
			last := &out.Sessions[len(out.Sessions)-1]
			last.Transcript = append(last.Transcript, l.Entries...)
		case i > 0 && l.Type == coach.ExportSafetyEventType:
			out.SafetyEvents = append(out.SafetyEvents, l.Event)
		default:
			ts.t.Fatalf("export line %d is out of place: %s", i, line)
		}
	}
	return out
}

func sessionIDs(e exportBody) map[string]bool {
	ids := map[string]bool{}
	for _, s := range e.Sessions {
		ids[s.Session.ID] = true
	}
	return ids
}

func TestLearnerExportAndErasure(t *testing.T) {
	ts := startServer(t, withOperators)
	const ref = "pupil@example.org"
	acme, beta, op := bearerOf(keyAcme), bearerOf(keyBeta), bearerOf(keyAcmeOperator)
	a1, a2 := ts.createFor(ref, acme...), ts.createFor(ref, acme...)
	b := ts.createFor("pupil-8", acme...)
	other := ts.createFor(ref, beta...)
	err := ts.store.Audit(context.Background(), []safety.Record{
		{Tenant: "acme", Session: a1, Learner: safety.Learner{Ref: ref}, Stage: safety.StageInput, Classifier: "builtin"},
		{Tenant: "acme", Session: b, Learner: safety.Learner{Ref: "pupil-8"}, Stage: safety.StageInput, Classifier: "builtin"},
		{Tenant: "beta", Session: other, Learner: safety.Learner{Ref: ref}, Stage: safety.StageInput, Classifier: "builtin"},
	})
	if err != nil {
		t.Fatal(err)
	}

	// The reference may come percent-encoded, as a client's URL builder sends it.
	exp := ts.exportOf("pupil%40example.org", op...)
	if got, want := sessionIDs(exp), map[string]bool{a1: true, a2: true}; len(got) != 2 || !got[a1] || !got[a2] {
		t.Errorf("exported sessions = %v, want %v", got, want)
	}
	for _, s := range exp.Sessions {
		if len(s.Transcript) < 2 || s.Session.State == nil || s.Session.Learner != ref {
			t.Errorf("exported session %s: %d transcript entries, state %s, learner %q; want the whole of it", s.Session.ID, len(s.Transcript), s.Session.State, s.Session.Learner)
		}
	}
	if len(exp.SafetyEvents) != 1 || exp.SafetyEvents[0].Session != a1 {
		t.Errorf("exported safety events = %+v, want the one of %s", exp.SafetyEvents, a1)
	}

	if r := ts.do("DELETE", "/v1/learners/pupil%40example.org", "", op...); r.Status != http.StatusNoContent {
		t.Fatalf("erasure: %d %s", r.Status, r.Body)
	}
	for _, id := range []string{a1, a2} {
		if _, ok := ts.store.Session(id); ok {
			t.Errorf("session %s is still there after its learner's erasure", id)
		}
	}
	if e := ts.exportOf(ref, op...); len(e.Sessions) != 0 || len(e.SafetyEvents) != 0 {
		t.Errorf("export after the erasure = %+v, want nothing", e)
	}
	// Another learner of the tenant, and the same reference in another tenant, are untouched.
	if e := ts.exportOf("pupil-8", op...); len(e.Sessions) != 1 || len(e.SafetyEvents) != 1 {
		t.Errorf("export of another learner after the erasure = %+v, want its session and event", e)
	}
	if e := ts.exportOf(ref, bearerOf(keyBetaOperator)...); !sessionIDs(e)[other] || len(e.SafetyEvents) != 1 {
		t.Errorf("export of another tenant's learner with the same reference = %+v, want its session and event", e)
	}
	// Erasure is idempotent.
	if r := ts.do("DELETE", "/v1/learners/"+ref, "", op...); r.Status != http.StatusNoContent {
		t.Errorf("second erasure: %d %s", r.Status, r.Body)
	}
	// The reference, which may name a person, never reaches the access log.
	if log := ts.log.String(); strings.Contains(log, "pupil%40example.org") || strings.Contains(log, ref) {
		t.Errorf("the access log holds the learner reference:\n%s", log)
	}
}

func TestLearnerRefIsChecked(t *testing.T) {
	ts := startServer(t, withOperators)
	op := bearerOf(keyAcmeOperator)
	for _, ref := range []string{"a%20b", "a%2Fb", "a%09", strings.Repeat("x", 129)} {
		for _, req := range [][2]string{{"GET", "/v1/learners/" + ref + "/export"}, {"DELETE", "/v1/learners/" + ref}} {
			r := ts.do(req[0], req[1], "", op...)
			if r.Status != http.StatusBadRequest || r.errorCode() != coach.CodeInvalidRequest {
				t.Errorf("%s %s: status %d %s, want 400 invalid_request", req[0], req[1], r.Status, r.Body)
			}
		}
	}
}

// TestLearnerExportStreamsInBoundedMemory exports a learner of 48 sessions whose transcripts
// hold 4 pages of 1 KB entries each (an export of about 40 MB) while sampling the heap: the
// gateway holds a line at a time, so the heap never grows by more than a few pages' worth,
// whereas an export built whole (and encoded as one JSON document) holds all of it at once.
func TestLearnerExportStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("exports about 40 MB")
	}
	ts := startServer(t, withOperators)
	ctx := context.Background()
	const ref, sessions, entries = "pupil-big", 48, 4 * coach.MaxTranscriptPage
	input := json.RawMessage(`{"message":"` + strings.Repeat("x", 1000) + `"}`)
	for range sessions {
		id := ts.createFor(ref, bearerOf(keyAcme)...)
		sess, token, err := ts.store.Claim(ctx, "acme", id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		tr := make([]coach.TranscriptEntry, entries)
		for i := range tr {
			tr[i] = coach.TranscriptEntry{Role: coach.TranscriptLearner, Input: input}
		}
		next := *sess
		next.Version++
		if err := ts.store.Commit(ctx, &next, token, coach.CommitExtra{Transcript: tr}); err != nil {
			t.Fatal(err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	req, _ := http.NewRequest("GET", ts.URL+"/v1/learners/"+ref+"/export", nil)
	req.Header.Set("Authorization", "Bearer "+keyAcmeOperator)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	close(done)
	<-sampled
	if err != nil || resp.StatusCode != http.StatusOK || n < sessions*entries*1000 {
		t.Fatalf("export: status %d, %d bytes, %v; want 200 and every entry", resp.StatusCode, n, err)
	}
	const bound = 8 << 20
	grew := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("export of %d bytes: the heap grew by at most %d bytes", n, grew)
	if grew > bound {
		t.Errorf("exporting %d bytes grew the heap by %d bytes, want at most %d", n, grew, bound)
	}
}
