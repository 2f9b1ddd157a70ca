package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

func TestToulminNormalTurnExactLines(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	out := apptest.Obj("assistantText", "Good start.\nWhy \"now\"?", "step", "claim", "confidence", 0.5, "nextQuestion", "Who is affected?")
	cut := strings.Index(out, `\nWhy`)
	g.LLM.Enqueue(fakellm.Reply{Chunks: []string{out[:cut-2], out[cut-2 : cut+3], out[cut+3:]}})

	tr := g.Turn(s.ID, apptest.Msg("Cities should ban cars."))
	if tr.Status != http.StatusOK || tr.Header.Get("Content-Type") != "application/x-ndjson" ||
		tr.Header.Get("X-Accel-Buffering") != "no" || tr.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("status %d, headers %v; want a 200 NDJSON stream without buffering", tr.Status, tr.Header)
	}
	// v1.2: the question the guards append is streamed as the last delta.
	wantDeltas := []string{`{"type":"delta","text":"Good star"}`, `{"type":"delta","text":"t.\nW"}`, `{"type":"delta","text":"hy \"now\"?"}`, `{"type":"delta","text":"\n\nWho is affected?"}`}
	var gotDeltas []string
	for _, l := range tr.Lines[:len(tr.Lines)-1] {
		gotDeltas = append(gotDeltas, l.Raw)
	}
	if !reflect.DeepEqual(gotDeltas, wantDeltas) {
		t.Logf("stream: %s", tr.Body)
		t.Errorf("delta lines =\n%s\nwant\n%s", strings.Join(gotDeltas, "\n"), strings.Join(wantDeltas, "\n"))
	}
	res := tr.Last()
	wantResult := `{"assistantText":"Good start.\nWhy \"now\"?\n\nWho is affected?","step":"claim","confidence":0.5,"nextQuestion":"Who is affected?"}`
	if res.Type != "result" || string(res.Result) != wantResult {
		t.Errorf("result line = %s\nwant result %s", res.Raw, wantResult)
	}
	if res.Session.Version != 2 || !strings.Contains(string(res.Session.State), `"turns":{"claim":1}`) {
		t.Errorf("result session = %+v, want version 2 with one claim turn", res.Session)
	}
	if got := g.Get(s.ID); got.Version != 2 {
		t.Errorf("stored version = %d, want 2", got.Version)
	}
	req := g.LLM.Requests()[0]
	if req.ResponseFormat != "json_schema" || req.Messages[0].Role != "system" || req.Messages[len(req.Messages)-1].Content != "Cities should ban cars." {
		t.Errorf("upstream request: format %q, messages %+v", req.ResponseFormat, req.Messages)
	}
}

// TestToulminGuards drives every seed rule through the real server with scripted model output.
func TestToulminGuards(t *testing.T) {
	long := "Private cars should be banned from city centres to cut pollution."
	proposal := map[string]string{"field": "claim", "value": long, "rationale": "clear"}
	tests := []struct {
		name    string
		first   bool // the turn is the step's first user message
		message string
		output  string
		check   func(t *testing.T, result map[string]any, state map[string]any)
	}{
		{name: "step coercion", first: true, message: "hello",
			output: apptest.Obj("assistantText", "Let's go.", "step", "rebuttal"),
			check: func(t *testing.T, r, _ map[string]any) {
				if r["step"] != "claim" {
					t.Errorf("step = %v, want claim", r["step"])
				}
			}},
		{name: "empty value removal", message: "again",
			output: apptest.Obj("assistantText", "Ok.", "step", "claim", "confidence", 0.9, "proposedUpdate", map[string]string{"field": "claim", "value": "  ", "rationale": "x"}),
			check: func(t *testing.T, r, _ map[string]any) {
				if _, ok := r["proposedUpdate"]; ok {
					t.Errorf("proposedUpdate with a blank value survived: %v", r)
				}
			}},
		{name: "first-turn bias strips a low-confidence proposal", first: true, message: long,
			output: apptest.Obj("assistantText", "Try this.", "step", "claim", "confidence", 0.7, "proposedUpdate", proposal),
			check: func(t *testing.T, r, st map[string]any) {
				if _, ok := r["proposedUpdate"]; ok {
					t.Errorf("first-turn proposal with confidence 0.7 survived: %v", r)
				}
				if st["pendingProposal"] != nil {
					t.Errorf("pendingProposal = %v, want null", st["pendingProposal"])
				}
			}},
		{name: "first-turn bias keeps an explicit rewrite request", first: true, message: "Please rewrite: " + long,
			output: apptest.Obj("assistantText", "Here.", "step", "claim", "confidence", 0.7, "proposedUpdate", proposal),
			check: func(t *testing.T, r, st map[string]any) {
				if _, ok := r["proposedUpdate"]; !ok {
					t.Errorf("the rewrite request's proposal was stripped: %v", r)
				}
				if st["pendingProposal"] == nil {
					t.Error("pendingProposal = null, want the proposal")
				}
			}},
		{name: "shouldAdvance needs a proposal or a draft", message: "next",
			output: apptest.Obj("assistantText", "Move on.", "step", "claim", "confidence", 0.9, "shouldAdvance", true, "nextStep", "grounds"),
			check: func(t *testing.T, r, st map[string]any) {
				if r["shouldAdvance"] != nil || r["nextStep"] != nil || st["step"] != "claim" {
					t.Errorf("result %v, state step %v; want no advance", r, st["step"])
				}
			}},
		{name: "shouldAdvance needs confidence 0.6", message: long,
			output: apptest.Obj("assistantText", "Ok.", "step", "claim", "confidence", 0.5, "proposedUpdate", proposal, "shouldAdvance", true),
			check: func(t *testing.T, r, _ map[string]any) {
				if r["shouldAdvance"] != nil {
					t.Errorf("shouldAdvance survived confidence 0.5: %v", r)
				}
			}},
		{name: "shouldAdvance needs text passing the heuristics", message: "x",
			output: apptest.Obj("assistantText", "Ok.", "step", "claim", "confidence", 0.9, "proposedUpdate", map[string]string{"field": "claim", "value": "Cars?", "rationale": "r"}, "shouldAdvance", true),
			check: func(t *testing.T, r, _ map[string]any) {
				if r["shouldAdvance"] != nil {
					t.Errorf("shouldAdvance survived a claim failing the heuristics: %v", r)
				}
			}},
		{name: "nextStep correction", message: long,
			output: apptest.Obj("assistantText", "Great.", "step", "claim", "confidence", 0.9, "proposedUpdate", proposal, "shouldAdvance", true, "nextStep", "rebuttal"),
			check: func(t *testing.T, r, st map[string]any) {
				if r["shouldAdvance"] != true || r["nextStep"] != "grounds" {
					t.Errorf("result %v, want shouldAdvance with nextStep grounds", r)
				}
				if st["step"] != "claim" {
					t.Errorf("state step = %v, want claim until the proposal is accepted", st["step"])
				}
			}},
		{name: "isComplete only on rebuttal", message: long,
			output: apptest.Obj("assistantText", "Done!", "step", "claim", "confidence", 1, "proposedUpdate", proposal, "isComplete", true),
			check: func(t *testing.T, r, st map[string]any) {
				if r["isComplete"] != nil || st["isComplete"] != false {
					t.Errorf("isComplete accepted on the claim step: result %v, state %v", r, st["isComplete"])
				}
			}},
		{name: "question appending", first: true, message: "hello",
			output: apptest.Obj("assistantText", "Hi.", "step", "claim", "nextQuestion", "What do you claim?"),
			check: func(t *testing.T, r, _ map[string]any) {
				if r["assistantText"] != "Hi.\n\nWhat do you claim?" {
					t.Errorf("assistantText = %q, want the question appended", r["assistantText"])
				}
			}},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("toulmin", nil)
			if !tt.first {
				g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")})
				if tr := g.Turn(s.ID, apptest.Msg("warm-up")); tr.Last().Type != "result" {
					t.Fatalf("warm-up turn: %s", tr.Body)
				}
			}
			g.LLM.Enqueue(fakellm.Reply{Content: tt.output})
			tr := g.Turn(s.ID, apptest.Msg(tt.message))
			tr.CheckEnding(t)
			res := tr.Last()
			if res.Type != "result" {
				t.Fatalf("last line = %s, want a result", res.Raw)
			}
			var r, st map[string]any
			if err := json.Unmarshal(res.Result, &r); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(res.Session.State, &st); err != nil {
				t.Fatal(err)
			}
			tt.check(t, r, st)
		})
	}
}

func TestToulminRebuttalCompletes(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	for _, step := range []string{"claim", "grounds", "warrant", "groundsBacking", "warrantBacking", "qualifier"} {
		if code := g.Call("PUT", "/v1/sessions/"+s.ID+"/draft", map[string]string{"field": step, "value": "Some text for " + step + " because reasons"}, nil); code != 200 {
			t.Fatalf("PUT draft %s: %d", step, code)
		}
	}
	// Walk the step forward through accepted proposals, then complete on rebuttal.
	for _, step := range []string{"claim", "grounds", "warrant", "groundsBacking", "warrantBacking", "qualifier"} {
		value := "In most cases this " + step + " holds because the evidence shows it clearly."
		g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Nice.", "step", step, "confidence", 0.9,
			"proposedUpdate", map[string]string{"field": step, "value": value, "rationale": "r"}, "shouldAdvance", true)})
		g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Nice.", "step", step, "confidence", 0.9,
			"proposedUpdate", map[string]string{"field": step, "value": value, "rationale": "r"}, "shouldAdvance", true)})
		g.Turn(s.ID, apptest.Msg("first try"))
		if tr := g.Turn(s.ID, apptest.Msg(value)); tr.Last().Type != "result" {
			t.Fatalf("%s: %s", step, tr.Body)
		}
		if code := g.Call("POST", "/v1/sessions/"+s.ID+"/proposal", map[string]string{"action": "accept"}, nil); code != 200 {
			t.Fatalf("accept on %s: %d", step, code)
		}
	}
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Think of exceptions.", "step", "rebuttal")})
	g.Turn(s.ID, apptest.Msg("hmm"))
	if code := g.Call("PUT", "/v1/sessions/"+s.ID+"/draft", map[string]string{"field": "rebuttal", "value": "Unless public transport fails, the ban works."}, nil); code != 200 {
		t.Fatalf("PUT rebuttal draft: %d", code)
	}
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Complete!", "step", "rebuttal", "confidence", 0.9, "shouldAdvance", true)})
	tr := g.Turn(s.ID, apptest.Msg("Unless public transport fails."))
	var r map[string]any
	_ = json.Unmarshal(tr.Last().Result, &r)
	if r["isComplete"] != true || r["shouldAdvance"] != nil {
		t.Errorf("rebuttal result = %v, want shouldAdvance converted to isComplete", r)
	}
	if !strings.Contains(string(tr.Last().Session.State), `"isComplete":true`) {
		t.Errorf("session state = %s, want isComplete", tr.Last().Session.State)
	}
	if tr := g.Turn(s.ID, apptest.Msg("more?")); tr.Status != http.StatusConflict {
		t.Errorf("turn on a complete session: status %d, want 409", tr.Status)
	}
}

// cutAfterText streams the start of an answer, then the connection breaks.
var cutAfterText = fakellm.Reply{
	Chunks: []string{`{"assistantText":"Hello `, `there `, `friend."}`},
	Fault:  fakellm.Fault{Cut: true, CutAfter: 2},
}

func TestToulminErrorCodes(t *testing.T) {
	tests := []struct {
		name    string
		replies []fakellm.Reply
		body    map[string]string
		want    string
		calls   int
	}{
		{"unparseable output", []fakellm.Reply{{Content: `{"assistantText":"Hi", oops`}, {Content: "not json"}}, apptest.Msg("hi"), "coach_validation_failed", 2},
		{"schema-invalid output", []fakellm.Reply{{Content: apptest.Obj("assistantText", "Hi.", "step", "claim", "isComplete", "no")}, {Content: apptest.Obj("assistantText", "Hi.", "step", "claim", "isComplete", "no")}}, apptest.Msg("hi"), "coach_validation_failed", 2},
		{"empty assistantText", []fakellm.Reply{{Content: apptest.Obj("assistantText", "", "step", "claim")}, {Content: apptest.Obj("assistantText", " ", "step", "claim")}}, apptest.Msg("hi"), "coach_empty_response", 2},
		{"step mismatch", nil, map[string]string{"message": "hi", "step": "warrant"}, "coach_step_mismatch", 0},
		{"upstream failure", []fakellm.Reply{{Fault: fakellm.Fault{Status: 500}}, {Fault: fakellm.Fault{Status: 502}}, {Fault: fakellm.Fault{Status: 503}}}, apptest.Msg("hi"), "coach_stream_failed", 3},
		{"upstream rejects the request", []fakellm.Reply{{Fault: fakellm.Fault{Status: 400}}}, apptest.Msg("hi"), "coach_stream_failed", 1},
		{"cut twice after text went out", []fakellm.Reply{cutAfterText, cutAfterText}, apptest.Msg("hi"), "coach_stream_failed", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := apptest.Start(t, func(c *config.Config) { c.MaxAttempts = 3 })
			s := g.Create("toulmin", nil)
			g.LLM.Enqueue(tt.replies...)
			tr := g.Turn(s.ID, tt.body)
			tr.CheckEnding(t)
			if tr.Status != http.StatusOK || tr.Last().Error != tt.want {
				t.Errorf("status %d, lines %q; want 200 ending in error %s", tr.Status, tr.Kinds(), tt.want)
			}
			if n := len(g.LLM.Requests()); n != tt.calls {
				t.Errorf("model calls = %d, want %d", n, tt.calls)
			}
			if got := g.Get(s.ID); got.Version != 1 {
				t.Errorf("a failed turn stored version %d, want 1", got.Version)
			}
		})
	}
}

func TestToulminClientDisconnectCancelsUpstream(t *testing.T) {
	// v1's behaviour, kept behind COACH_TURN_ON_DISCONNECT=cancel.
	g := apptest.Start(t, func(c *config.Config) { c.TurnOnDisconnect = "cancel" })
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(fakellm.Reply{Chunks: []string{`{"assistantText":"A long `, `answer that stalls.","step":"claim"}`},
		Fault: fakellm.Fault{StallAfter: 1, Stall: time.Minute}})
	b, _ := json.Marshal(apptest.Msg("hi"))
	resp, err := http.Post(g.URL+"/v1/sessions/"+s.ID+"/turns", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(first, `"delta"`) {
		t.Fatalf("first line %q, %v; want a delta", first, err)
	}
	apptest.Eventually(t, "the upstream stream is open", func() bool { return g.LLM.Open() == 1 })
	resp.Body.Close()
	start := time.Now()
	apptest.Eventually(t, "the upstream request is cancelled", func() bool { return g.LLM.Open() == 0 })
	if d := time.Since(start); d > time.Second {
		t.Errorf("upstream cancelled after %v", d)
	}
	// Nothing written, lock released: the next turn goes through on version 1.
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Hi.", "step", "claim")})
	apptest.Eventually(t, "the session is free again", func() bool {
		tr := g.Turn(s.ID, apptest.Msg("again"))
		return tr.Status == http.StatusOK && tr.Last().Session.Version == 2
	})
}

func TestToulminConcurrentTurnsOneBusy(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(fakellm.Reply{Chunks: []string{`{"assistantText":"Slow `, `answer.","step":"claim"}`}, Fault: fakellm.Fault{StallAfter: 1, Stall: 300 * time.Millisecond}})
	var wg sync.WaitGroup
	var first apptest.TurnResponse
	wg.Add(1)
	go func() { defer wg.Done(); first = g.Turn(s.ID, apptest.Msg("one")) }()
	apptest.Eventually(t, "the first turn reached the model", func() bool { return g.LLM.Open() == 1 })
	var body struct{ Error string }
	second := g.Post("/v1/sessions/"+s.ID+"/turns", apptest.Msg("two"))
	_ = json.Unmarshal([]byte(second.Body), &body)
	if second.Status != http.StatusConflict || body.Error != "session_busy" {
		t.Errorf("second turn: status %d body %s; want 409 session_busy", second.Status, second.Body)
	}
	wg.Wait()
	if first.Last().Type != "result" || first.Last().Session.Version != 2 {
		t.Errorf("first turn: %q, want a stored result", first.Kinds())
	}
}

func TestCoachRouteIsAToulminTurn(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Hi there.", "step", "claim")})
	tr := g.Post("/api/coach", map[string]string{"sessionId": s.ID, "message": "hello", "step": "claim"})
	if tr.Kinds() != strings.TrimSpace(strings.Repeat("delta ", len(tr.Lines)-1))+" result" || tr.Text() != "Hi there." {
		t.Errorf("/api/coach lines %q text %q", tr.Kinds(), tr.Text())
	}
}
