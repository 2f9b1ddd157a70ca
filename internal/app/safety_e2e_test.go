package app_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// The safety suites' keys: a learner's front end and its tenant's operator.
const (
	learnerKey  = "acme-learner-key-1111"
	operatorKey = "acme-operator-key-2222"
)

// lessonMark is in every scripted lesson answer: it must never reach a learner in crisis.
const lessonMark = "Lesson block seven"

// safetyConfig is the configuration of the safety suites: the default holdback (apptest sets 0
// for the suites written before v1.3) and, with keys, a learner key and an operator key of acme.
func safetyConfig(keys bool) func(*config.Config) {
	return func(c *config.Config) {
		c.SafetyHoldbackChars = 160
		if keys {
			c.APIKeys = []config.APIKey{
				{Tenant: "acme", Hash: sha256.Sum256([]byte(learnerKey))},
				{Tenant: "acme", Hash: sha256.Sum256([]byte(operatorKey)), Operator: true},
			}
		}
	}
}

// send sends a JSON request with key (none when "") and returns the answer read whole.
func send(t *testing.T, g *apptest.Gateway, key, method, path string, body any) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, raw
}

// keyedTurn posts a turn of session id with key and reads its NDJSON lines.
func keyedTurn(t *testing.T, g *apptest.Gateway, key, id string, body any) apptest.TurnResponse {
	t.Helper()
	resp, raw := send(t, g, key, "POST", "/v1/sessions/"+id+"/turns", body)
	tr := apptest.TurnResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("turn: status %d, Content-Type %q, body %s; want a stream", resp.StatusCode, ct, raw)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l apptest.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		l.Raw = sc.Text()
		if err := apptest.CheckCard(l); err != nil {
			t.Error(err)
		}
		tr.Lines = append(tr.Lines, l)
	}
	return tr
}

// safetyLine is a safety line's members.
type safetyLine struct {
	Type      string `json:"type"`
	Kind      string `json:"kind"`
	Locale    string `json:"locale"`
	Message   string `json:"message"`
	Resources []struct {
		Name, Phone, Text, URL string
	} `json:"resources"`
}

// hold is the safety member of a session object.
type hold struct {
	Safety *struct {
		Hold  bool   `json:"hold"`
		Since string `json:"since"`
	} `json:"safety"`
}

func holdOf(t *testing.T, raw []byte) bool {
	t.Helper()
	var h hold
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("session %s: %v", raw, err)
	}
	return h.Safety != nil && h.Safety.Hold
}

// resultSession returns the raw session object of a stream's result line.
func resultSession(t *testing.T, tr apptest.TurnResponse) []byte {
	t.Helper()
	var l struct{ Session json.RawMessage }
	if err := json.Unmarshal([]byte(tr.Last().Raw), &l); err != nil {
		t.Fatal(err)
	}
	return l.Session
}

// checkSupportive fails unless tr is one safety line with the resources of locale, then text,
// then a result that carries no lesson text.
func checkSupportive(t *testing.T, tr apptest.TurnResponse, locale, resource string) {
	t.Helper()
	if tr.Status != http.StatusOK {
		t.Fatalf("status %d body %s", tr.Status, tr.Body)
	}
	tr.CheckEnding(t)
	if len(tr.Lines) < 3 || tr.Lines[0].Type != "safety" || tr.Last().Type != "result" {
		t.Fatalf("lines %q, want safety, text, result", tr.Kinds())
	}
	for _, l := range tr.Lines[1 : len(tr.Lines)-1] {
		if l.Type != "delta" {
			t.Errorf("line %s between the safety line and the result, want only deltas", l.Raw)
		}
	}
	var sl safetyLine
	if err := json.Unmarshal([]byte(tr.Lines[0].Raw), &sl); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range sl.Resources {
		found = found || strings.Contains(r.Name+" "+r.Phone, resource)
	}
	if sl.Kind != "crisis" || sl.Locale != locale || sl.Message == "" || !found {
		t.Errorf("safety line %s, want a crisis notice for %s with %q", tr.Lines[0].Raw, locale, resource)
	}
	if strings.Contains(tr.Body, lessonMark) {
		t.Errorf("the lesson reached the learner in crisis:\n%s", tr.Body)
	}
	if tr.Text() == "" || tr.Last().Fallback {
		t.Errorf("text %q, fallback %v; want supportive text", tr.Text(), tr.Last().Fallback)
	}
}

// TestSafetyCrisisTurnEachContract takes a crisis turn in each contract and locale: the
// supportive answer without the model, the hold surviving the next turn (continue, for toulmin),
// and an operator's clear letting the next turn reach the model.
func TestSafetyCrisisTurnEachContract(t *testing.T) {
	g := apptest.Start(t, safetyConfig(true))
	toulminLesson := fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+".", "step", "claim")}
	toulminLesson.Chunks = chop(toulminLesson.Content, 6)
	cardLesson := cardCall(apptest.Obj("card_type", "insight", "content", lessonMark+"."))
	moduleLesson := moduleReply(structured([]json.RawMessage{block("type", "paragraph", "content", lessonMark+".")}, reporting()))
	tests := []struct {
		contract, locale, message, resource string
		lesson                              fakellm.Reply
		next                                any
		check                               func(t *testing.T, result []byte)
	}{
		{"toulmin", "en-US", "I don't want to be alive anymore.", "988", toulminLesson, map[string]any{"continue": true},
			func(t *testing.T, r []byte) {
				var res struct{ AssistantText string }
				if json.Unmarshal(r, &res) != nil || !strings.Contains(res.AssistantText, "988") {
					t.Errorf("result %s, want an assistantText with the resources", r)
				}
			}},
		{"toulmin", "es-MX", "Estoy cansada de vivir.", "Línea de la Vida", toulminLesson, map[string]any{"continue": true},
			func(t *testing.T, r []byte) {
				var res struct{ AssistantText string }
				if json.Unmarshal(r, &res) != nil || res.AssistantText == "" {
					t.Errorf("result %s, want an assistantText", r)
				}
			}},
		{"cards", "en-US", "I don't want to be alive anymore.", "988", cardLesson, apptest.Msg("ok, next card please"),
			func(t *testing.T, r []byte) {
				var c struct{ Type, Content string }
				if json.Unmarshal(r, &c) != nil || c.Type != "insight" || c.Content == "" {
					t.Errorf("result %s, want an insight card", r)
				}
			}},
		{"cards", "es-MX", "Estoy cansada de vivir.", "Línea de la Vida", cardLesson, apptest.Msg("ok, sigamos"),
			func(t *testing.T, r []byte) {
				var c struct{ Type, Content string }
				if json.Unmarshal(r, &c) != nil || c.Type != "insight" || c.Content == "" {
					t.Errorf("result %s, want an insight card", r)
				}
			}},
		{"module", "en-US", "I don't want to be alive anymore.", "988", moduleLesson, apptest.Msg("ok, what's next in the lesson?"),
			func(t *testing.T, r []byte) { checkParagraph(t, r) }},
		{"module", "es-MX", "Estoy cansada de vivir.", "Línea de la Vida", moduleLesson, apptest.Msg("ok, ¿qué sigue?"),
			func(t *testing.T, r []byte) { checkParagraph(t, r) }},
	}
	for _, tc := range tests {
		t.Run(tc.contract+"/"+tc.locale, func(t *testing.T) {
			body := map[string]string{"contract": tc.contract, "locale": tc.locale}
			if tc.contract == "module" {
				body["module"] = "anxiety-basics"
			}
			resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", body)
			var s apptest.Session
			if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
				t.Fatalf("create: status %d %s", resp.StatusCode, raw)
			}
			// The lesson is queued: a crisis turn must not get it; the turn after the clear does.
			g.LLM.Enqueue(tc.lesson)
			calls := len(g.LLM.Requests())

			tr := keyedTurn(t, g, learnerKey, s.ID, apptest.Msg(tc.message))
			checkSupportive(t, tr, tc.locale, tc.resource)
			tc.check(t, tr.Last().Result)
			if !holdOf(t, resultSession(t, tr)) {
				t.Errorf("the result's session %s has no hold", resultSession(t, tr))
			}
			if _, raw := send(t, g, learnerKey, "GET", "/v1/sessions/"+s.ID, nil); !holdOf(t, raw) {
				t.Errorf("session %s, want safety.hold true", raw)
			}
			if n := len(g.LLM.Requests()); n != calls {
				t.Errorf("the model was called %d times for the crisis turn, want never", n-calls)
			}

			held := keyedTurn(t, g, learnerKey, s.ID, tc.next)
			checkSupportive(t, held, tc.locale, tc.resource)
			tc.check(t, held.Last().Result)
			if n := len(g.LLM.Requests()); n != calls {
				t.Errorf("the model was called %d times for the held turn, want never", n-calls)
			}

			// A learner key cannot clear; the operator's can.
			if resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions/"+s.ID+"/safety", map[string]string{"action": "clear"}); resp.StatusCode != http.StatusForbidden {
				t.Errorf("clear with a learner key: status %d %s, want 403", resp.StatusCode, raw)
			}
			resp, raw = send(t, g, operatorKey, "POST", "/v1/sessions/"+s.ID+"/safety", map[string]string{"action": "clear"})
			if resp.StatusCode != http.StatusOK || holdOf(t, raw) {
				t.Fatalf("clear: status %d %s, want 200 and no hold", resp.StatusCode, raw)
			}

			after := keyedTurn(t, g, learnerKey, s.ID, apptest.Msg("Thanks, I'm safe now. Let's go on."))
			after.CheckEnding(t)
			if n := len(g.LLM.Requests()); n != calls+1 {
				t.Errorf("the turn after the clear made %d model calls, want 1", n-calls)
			}
			if after.Lines[0].Type == "safety" || !strings.Contains(after.Body, lessonMark) || after.Last().Type != "result" || after.Last().Fallback {
				t.Errorf("the turn after the clear: %s\nwant the lesson", after.Body)
			}
		})
	}
}

// checkParagraph fails unless result follows the response schema and has a paragraph block.
func checkParagraph(t *testing.T, result []byte) {
	t.Helper()
	validResult(t, result)
	var r struct {
		Content struct {
			TextBlocks []struct{ Type, Content string } `json:"text_blocks"`
		}
	}
	_ = json.Unmarshal(result, &r)
	for _, b := range r.Content.TextBlocks {
		if b.Type == "paragraph" && b.Content != "" {
			return
		}
	}
	t.Errorf("result %s, want a paragraph", result)
}

// TestSafetyUnsafeOutputMidStream streams a benign sentence and then self-harm instructions cut
// across fragments: the instructions never reach the client, text already sent is reset with
// unsafe_output, and the safe retry is the result; two unsafe answers end in the fallback.
func TestSafetyUnsafeOutputMidStream(t *testing.T) {
	unsafe := apptest.Obj("assistantText", "Breathing slowly helps. Cut along your wrists vertically rather than across.", "step", "claim")
	safe := apptest.Obj("assistantText", "Breathing slowly helps you settle.", "step", "claim")
	reply := func(out string) fakellm.Reply { return fakellm.Reply{Content: out, Chunks: chop(out, 5)} }
	tests := []struct {
		name     string
		replies  []fakellm.Reply
		fallback bool
	}{
		{"retry is safe", []fakellm.Reply{reply(unsafe), reply(safe)}, false},
		{"both unsafe", []fakellm.Reply{reply(unsafe), reply(unsafe)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := apptest.Start(t, safetyConfig(false))
			s := g.Create("toulmin", nil)
			g.LLM.Enqueue(tc.replies...)
			tr := g.Turn(s.ID, apptest.Msg("How can I calm down before my exam?"))
			tr.CheckEnding(t)
			var sent strings.Builder
			resets := 0
			for _, l := range tr.Lines {
				switch l.Type {
				case "delta":
					sent.WriteString(l.Text)
				case "reset":
					resets++
					if l.Reason != "unsafe_output" {
						t.Errorf("reset %s, want reason unsafe_output", l.Raw)
					}
				}
			}
			for _, w := range []string{"wrist", "Cut along", "vertically"} {
				if strings.Contains(sent.String(), w) {
					t.Errorf("the client received %q in the deltas %q", w, sent.String())
				}
			}
			if strings.Contains(tr.Body, "wrist") {
				t.Errorf("the stream holds the unsafe text:\n%s", tr.Body)
			}
			// "Breathing slowly helps." leaves at the model's pace, as no output rule could need
			// it: the unsafe sentence after it retracts it.
			var before strings.Builder
			for _, l := range tr.Lines {
				if l.Type == "reset" {
					break
				}
				before.WriteString(l.Text)
			}
			if resets == 0 || tr.Lines[0].Type != "delta" || !strings.HasPrefix(before.String(), "Breathing slowly helps.") {
				t.Errorf("lines %q (%q sent), want the first sentence out, then a reset", tr.Kinds(), sent.String())
			}
			res := tr.Last()
			if res.Type != "result" || res.Fallback != tc.fallback {
				t.Fatalf("last line %s, want a result with fallback %v", res.Raw, tc.fallback)
			}
			var r struct{ AssistantText string }
			_ = json.Unmarshal(res.Result, &r)
			if !tc.fallback && !strings.HasPrefix(r.AssistantText, "Breathing slowly helps you settle.") {
				t.Errorf("result %s, want the safe retry", res.Result)
			}
			if got := len(g.LLM.Requests()); got != 2 {
				t.Errorf("%d model calls, want the answer and one retry", got)
			}
			if tc.fallback && strings.Contains(string(res.Result), "wrist") {
				t.Errorf("fallback result %s holds the unsafe text", res.Result)
			}
			if st := g.Get(s.ID); strings.Contains(string(st.State), "wrist") {
				t.Errorf("the session stored the unsafe text: %s", st.State)
			}
			_, msgs := send(t, g, "", "GET", "/v1/sessions/"+s.ID+"/messages", nil)
			if strings.Contains(string(msgs), "wrist") {
				t.Errorf("the transcript stored the unsafe text: %s", msgs)
			}
		})
	}
}

// TestSafetyPIIMaskedBeforeTheModel sends an e-mail address and a Spanish phone number: the model
// sees them masked, the transcript keeps what the learner typed.
func TestSafetyPIIMaskedBeforeTheModel(t *testing.T) {
	g := apptest.Start(t, safetyConfig(false))
	s := g.Create("toulmin", map[string]string{"locale": "es-ES"})
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Vale.", "step", "claim")})
	typed := "Escríbeme a ana.lopez@example.com o llámame al +34 612 345 678."
	tr := g.Turn(s.ID, apptest.Msg(typed))
	if tr.Last().Type != "result" {
		t.Fatalf("lines %q, want a result", tr.Kinds())
	}
	reqs := g.LLM.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	sentRaw := string(reqs[0].Raw)
	user := lastUser(t, reqs[0])
	if !strings.Contains(user, "[email]") || !strings.Contains(user, "[phone]") {
		t.Errorf("the model received %q, want [email] and [phone]", user)
	}
	for _, orig := range []string{"ana.lopez@example.com", "612 345 678", "612345678"} {
		if strings.Contains(sentRaw, orig) {
			t.Errorf("the model request holds %q", orig)
		}
	}
	resp, msgs := send(t, g, "", "GET", "/v1/sessions/"+s.ID+"/messages", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET messages: %d %s", resp.StatusCode, msgs)
	}
	var page struct {
		Messages []struct {
			Input json.RawMessage `json:"input"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(msgs, &page); err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, m := range page.Messages {
		var in struct{ Message string }
		_ = json.Unmarshal(m.Input, &in)
		kept = kept || in.Message == typed
	}
	if !kept {
		t.Errorf("the transcript %s does not keep what was typed (%q)", msgs, typed)
	}
}

// TestSafetyChatRouteCrisis: on the AI SDK route a crisis turn has a data-coach-safety part.
func TestSafetyChatRouteCrisis(t *testing.T) {
	g := apptest.Start(t, safetyConfig(false))
	s := g.Create("toulmin", map[string]string{"locale": "en-US"})
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+".", "step", "claim")})
	r := chat(t, g, s.ID, chatBody(textPart("I don't want to be alive anymore.")))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	var sl safetyLine
	if err := json.Unmarshal(r.data(t, "data-coach-safety"), &sl); err != nil {
		t.Fatal(err)
	}
	if sl.Kind != "crisis" || sl.Locale != "en-US" || len(sl.Resources) == 0 || sl.Resources[0].Phone != "988" {
		t.Errorf("data-coach-safety %+v, want the en-US crisis resources", sl)
	}
	if strings.Contains(r.Body, lessonMark) {
		t.Errorf("the lesson reached the learner:\n%s", r.Body)
	}
	if _, raw := send(t, g, "", "GET", "/v1/sessions/"+s.ID, nil); !holdOf(t, raw) {
		t.Errorf("session %s, want safety.hold true", raw)
	}
	if n := len(g.LLM.Requests()); n != 0 {
		t.Errorf("%d model calls, want none", n)
	}
}

// TestSafetyObserveMode: in observe mode a crisis message gets the lesson and no hold, and the
// audit holds the input check as observed.
func TestSafetyObserveMode(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) {
		safetyConfig(true)(c)
		c.SafetyMode = "observe"
	})
	resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin"})
	var s apptest.Session
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
		t.Fatalf("create: status %d %s", resp.StatusCode, raw)
	}
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+".", "step", "claim")})
	tr := keyedTurn(t, g, learnerKey, s.ID, apptest.Msg("I don't want to be alive anymore."))
	tr.CheckEnding(t)
	if tr.Lines[0].Type == "safety" || !strings.Contains(tr.Text(), lessonMark) {
		t.Errorf("observe mode: %s\nwant the lesson and no safety line", tr.Body)
	}
	if holdOf(t, resultSession(t, tr)) {
		t.Errorf("observe mode held the session: %s", resultSession(t, tr))
	}
	if resp, raw := send(t, g, learnerKey, "GET", "/v1/safety/events", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("events with a learner key: status %d %s, want 403", resp.StatusCode, raw)
	}
	var last string
	apptest.Eventually(t, "the audit lists the observed input", func() bool {
		resp, raw := send(t, g, operatorKey, "GET", "/v1/safety/events", nil)
		last = string(raw)
		if resp.StatusCode != http.StatusOK {
			return false
		}
		var p struct {
			Events []struct {
				Session, Stage, Action, Mode string
			} `json:"events"`
		}
		_ = json.Unmarshal(raw, &p)
		for _, e := range p.Events {
			if e.Session == s.ID && e.Stage == "input" && e.Action == "observed" {
				return true
			}
		}
		return false
	})
	if strings.Contains(last, "want to be alive") {
		t.Errorf("the audit holds learner text: %s", last)
	}
}
