package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xeipuuv/gojsonschema"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/cards"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/module"
	"github.com/coachgw/coachgw/internal/toulmin"
)

// cardTool is the cards contract's forced tool, as its requests carry it.
var cardTool = &coach.Tool{Name: cards.ToolName, Description: cards.ToolDescription, Parameters: api.Schema(cards.SchemaFile)}

// TestCompletionCap checks that every contract's request carries a cap derived from its schema,
// sent under the name the profile reads, and that an endpoint's own setting replaces it.
func TestCompletionCap(t *testing.T) {
	contracts := []struct {
		name string
		req  coach.ModelRequest
	}{
		{"toulmin", coach.ModelRequest{Messages: hello.Messages, Schema: &coachSchema, MaxTokens: toulmin.MaxTokens}},
		{"cards", coach.ModelRequest{Messages: hello.Messages, Tool: cardTool, MaxTokens: cards.MaxTokens}},
		{"module", coach.ModelRequest{Messages: hello.Messages, Schema: &coach.OutputSchema{Name: module.ResponseSchemaName, Schema: api.Schema("structured-response.json")}, MaxTokens: module.MaxTokens}},
	}
	tests := []struct {
		profile, model string
		override       int
		// param is the member the cap is sent as.
		param string
	}{
		{profile: "openai", param: "max_completion_tokens"},
		{profile: "vllm", param: "max_tokens"},
		{profile: "llamacpp", param: "max_tokens"},
		{profile: "ollama", param: "max_tokens"},
		{profile: "lmstudio", param: "max_tokens"},
		{profile: "gemini-openai", param: "max_tokens"},
		{profile: "anthropic-openai", param: "max_tokens"},
		{profile: "generic", param: "max_tokens"},
		{profile: "", param: "max_tokens"},
		{profile: "", model: "o3-mini", param: "max_completion_tokens"},
		{profile: "llamacpp", override: 700, param: "max_tokens"},
	}
	for _, tt := range tests {
		for _, ct := range contracts {
			t.Run(tt.profile+"/"+tt.model+"/"+ct.name, func(t *testing.T) {
				if ct.req.MaxTokens <= 0 {
					t.Fatalf("the %s contract derives no cap", ct.name)
				}
				c := New(Config{Profile: tt.profile, Model: tt.model, MaxCompletionTokens: tt.override})
				r, err := c.request(ct.req, *c.current())
				if err != nil {
					t.Fatal(err)
				}
				body, err := encodeRequest(&r)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				want := ct.req.MaxTokens
				if tt.override > 0 {
					want = tt.override
				}
				if got, _ := m[tt.param].(float64); int(got) != want {
					t.Errorf("%s = %v, want %d", tt.param, m[tt.param], want)
				}
				other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tt.param]
				if v, ok := m[other]; ok {
					t.Errorf("%s = %v sent too", other, v)
				}
			})
		}
	}
	// The caps stop a model that writes on (13,668 tokens of prose on a real llama-server),
	// and never exceed the smallest completion limit of OpenAI's current models.
	for name, n := range map[string]int{"toulmin": toulmin.MaxTokens, "cards": cards.MaxTokens, "module": module.MaxTokens} {
		if n < 1000 || n > 16384 || name == "cards" && n >= 13668 {
			t.Errorf("%s cap %d", name, n)
		}
	}
}

// TestParallelToolCalls checks that a forced tool comes with parallel_tool_calls: false where
// the profile says the endpoint honours it, and never where no tools are sent.
func TestParallelToolCalls(t *testing.T) {
	want := map[string]bool{"openai": true, "vllm": true}
	cardReq := coach.ModelRequest{Messages: hello.Messages, Tool: cardTool}
	schemaReq := coach.ModelRequest{Messages: hello.Messages, Schema: &coachSchema}
	for _, p := range append(Profiles(), Profile{Name: DefaultProfile}) {
		t.Run(p.Name, func(t *testing.T) {
			c := New(Config{Profile: p.Name})
			for _, req := range []coach.ModelRequest{cardReq, schemaReq} {
				r, err := c.request(req, *c.current())
				if err != nil {
					t.Fatal(err)
				}
				body, _ := encodeRequest(&r)
				var m map[string]any
				_ = json.Unmarshal(body, &m)
				v, sent := m["parallel_tool_calls"]
				wantSent := want[p.Name] && req.Tool != nil
				if sent != wantSent || sent && v != false {
					t.Errorf("tools %v: parallel_tool_calls = %v (sent %v), want sent %v as false", req.Tool != nil, v, sent, wantSent)
				}
			}
		})
	}
}

// TestParallelToolCallsEncoded checks the fast encoder writes parallel_tool_calls as
// json.Marshal does.
func TestParallelToolCallsEncoded(t *testing.T) {
	c := New(Config{Profile: "llamacpp", ToolChoice: "required"})
	r, err := c.request(coach.ModelRequest{Messages: hello.Messages, Tool: cardTool}, *c.current())
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendRequest(nil, &r)
	want, _ := json.Marshal(&r)
	if !ok || string(got) != string(want) {
		t.Errorf("appendRequest = %s, %v\njson.Marshal = %s", got, ok, want)
	}
}

// TestStrictBounds checks that the strict schema keeps the bounds the profile's endpoint
// enforces, so that what its grammar writes is what the gateway's validation accepts: a
// confidence of -5 (a real llama-server wrote "-5e-0" under the bare schema) and a
// 101-character drill_phase are rejected by the schema sent, as the validator rejects them.
func TestStrictBounds(t *testing.T) {
	card := api.Schema(cards.SchemaFile)
	longPhase := `{"card_type":"prompt","content":"x","input_config":null,"options":null,"drill_phase":"` + strings.Repeat("p", 101) + `","is_iteration":null}`
	negative := `{"assistantText":"Hi.","step":"claim","confidence":-5,"proposedUpdate":null,"nextQuestion":null,"shouldAdvance":null,"nextStep":null,"isComplete":null}`
	tests := []struct {
		profile string
		// numbers and strings say whether the sent schema rejects the negative confidence
		// and the long drill_phase.
		numbers, strings bool
	}{
		{"openai", true, false}, // OpenAI's strict mode rejects maxLength: not sent
		{"", true, false},
		{"vllm", true, true},
		{"llamacpp", true, true},
		{"ollama", true, true},
		{"lmstudio", true, true},
		{"gemini-openai", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			p, _ := LookupProfile(tt.profile)
			for _, c := range []struct {
				schema  []byte
				doc     string
				rejects bool
			}{{coachSchema.Schema, negative, tt.numbers}, {card, longPhase, tt.strings}} {
				sent, err := StrictFor(c.schema, p.Bounds)
				if err != nil {
					t.Fatal(err)
				}
				res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(sent), gojsonschema.NewStringLoader(c.doc))
				if err != nil {
					t.Fatal(err)
				}
				if res.Valid() == c.rejects {
					t.Errorf("the schema sent accepts %s: %v, want %v\n%s", c.doc, res.Valid(), !c.rejects, sent)
				}
			}
		})
	}
	// The bare strict schema (Strict) keeps none, for a schema_bounds downgrade.
	bare, _ := Strict(coachSchema.Schema)
	if strings.Contains(string(bare), "minimum") {
		t.Errorf("Strict kept a bound: %s", bare)
	}
}

// TestLocalDeadlines checks the profiles of servers that run models on CPUs ask for
// first-byte and idle deadlines that fit a long prompt, and the others for none of their own.
func TestLocalDeadlines(t *testing.T) {
	for _, p := range Profiles() {
		fb, idle := New(Config{Profile: p.Name}).Deadlines()
		local := p.Name == "llamacpp" || p.Name == "ollama" || p.Name == "lmstudio"
		switch {
		case local && (fb != 120*time.Second || idle != 60*time.Second):
			t.Errorf("%s: deadlines %v and %v, want 2m0s and 1m0s", p.Name, fb, idle)
		case !local && (fb != 0 || idle != 0):
			t.Errorf("%s: deadlines %v and %v, want the engine's", p.Name, fb, idle)
		}
	}
}

// TestServerFlag checks that llama-server's 500 for a server started without --jinja is not
// retried and is reported once per endpoint, with the fix.
func TestServerFlag(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`)
	})
	var told []Misconfiguration
	var mu sync.Mutex
	c := u.client(Config{Name: "local", Profile: "llamacpp", OnMisconfigured: func(m Misconfiguration) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, m)
	}})
	for range 3 {
		_, err := c.Stream(context.Background(), coach.ModelRequest{Messages: hello.Messages, Tool: cardTool}, coach.StreamHooks{})
		if me := modelError(t, err); me.Class != ClassMisconfigured || me.Retryable {
			t.Errorf("class %q, retryable %v; want %q, not retryable", me.Class, me.Retryable, ClassMisconfigured)
		}
	}
	if len(told) != 1 || told[0].Endpoint != "local" || !strings.Contains(told[0].Fix, "--jinja") {
		t.Errorf("told %+v, want once, for local, with the fix", told)
	}
	// A learner who writes the phrase gets an ordinary server error: their words are no
	// evidence about the server.
	echo := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"message":"failed on: requires --jinja flag","type":"server_error"}}`)
	})
	req := coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "it requires --jinja flag"}}}
	_, err := echo.client(Config{}).Stream(context.Background(), req, coach.StreamHooks{})
	if me := modelError(t, err); me.Class != ClassServer {
		t.Errorf("learner's phrase: class %q, want %q", me.Class, ClassServer)
	}
}

// TestProseInsteadOfCall checks that an endpoint on which "required" does not force the call
// although its profile expects it to (the model wrote prose to the token cap; LM Studio is
// such a profile) is asked for the card as structured output once
// streams of proseQuorum different callers ended so, remembered like a downgrade; and, from a
// learner's side, that one caller who keeps getting prose never switches the endpoint for
// everyone.
func TestProseInsteadOfCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		callers []string
		switch_ bool
	}{
		{"one learner, many turns", []string{"a", "a", "a", "a", "a", "a"}, false},
		{"two learners", []string{"a", "b", "a", "b"}, false},
		{"three learners", []string{"a", "b", "c"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				events(w, chunkHel, chunkLo, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`, done)
			})
			var got []string
			c := u.client(Config{Name: "local", Profile: "lmstudio", OnDowngrade: func(d Downgrade) { got = append(got, d.Setting+" "+d.From+">"+d.To) }})
			// The last request, of the first caller again, shows what the others did.
			for i, caller := range append(tc.callers, "a") {
				req := coach.ModelRequest{Messages: hello.Messages, Tool: cardTool, Caller: caller}
				s, err := c.Stream(context.Background(), req, coach.StreamHooks{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := collect(t, s); err != io.EOF {
					t.Fatal(err)
				}
				s.Close()
				body := u.request(t).body
				if i < len(tc.callers) {
					continue
				}
				_, tools := body["tools"]
				rf, _ := body["response_format"].(map[string]any)
				if switched := !tools && rf["type"] == "json_schema"; switched != tc.switch_ {
					t.Errorf("after %q: tools sent %v, response_format %v; want switched to structured output %v", tc.callers, tools, rf, tc.switch_)
				}
			}
			want := ""
			if tc.switch_ {
				want = "tool_choice required>none"
			}
			if strings.Join(got, ",") != want {
				t.Errorf("downgrades %q, want %q", got, want)
			}
		})
	}
}

// TestCardFromFirstTurn checks that a llama-server, which answers prose when a tool is forced
// with "required" and a card when asked for it as structured output, gets a card on the first
// request of the cards contract under the llamacpp profile, with nothing to learn first.
func TestCardFromFirstTurn(t *testing.T) {
	u := newUpstream(t, nil)
	u.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		u.reqs <- received{header: r.Header.Clone(), body: m}
		w.Header().Set("Content-Type", "text/event-stream")
		if _, tools := m["tools"]; tools {
			// What llama-server (b10573, --jinja) sent to 7 of 7 card turns under "required".
			events(w, `{"choices":[{"index":0,"delta":{"content":"Sure! Here is a scenario for you to practise."}}]}`, chunkStop, done)
			return
		}
		events(w, `{"choices":[{"index":0,"delta":{"content":"{\"card_type\":\"scenario\","}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"\"content\":\"A customer calls.\"}"}}]}`, chunkStop, done)
	})
	c := u.client(Config{Profile: "llamacpp", OnDowngrade: func(d Downgrade) { t.Errorf("downgrade %+v, want none", d) }})
	s, err := c.Stream(context.Background(), coach.ModelRequest{Messages: hello.Messages, Tool: cardTool, Caller: "a"}, coach.StreamHooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	frags, err := collect(t, s)
	if err != io.EOF {
		t.Fatalf("stream ended with %v", err)
	}
	var args, prose string
	for _, f := range frags {
		args += f.ToolArgs
		prose += f.Content
	}
	if args != `{"card_type":"scenario","content":"A customer calls."}` || prose != "" {
		t.Errorf("tool args %q, prose %q; want the card as the tool's arguments and no prose", args, prose)
	}
	body := u.request(t).body
	if _, tools := body["tools"]; tools {
		t.Errorf("the first request forced the tool (tool_choice %v); want the card asked for as structured output", body["tool_choice"])
	}
}

// TestEchoedLearnerText attacks downgrades and refusals from a learner's side: an endpoint
// that answers 400 quoting the request (as some proxies and validators do) gets three
// learner messages naming settings, and one naming the context length. None weakens the
// endpoint, and none is a refusal.
func TestEchoedLearnerText(t *testing.T) {
	yes := true
	for _, quote := range []string{"whole body", "message only"} {
		t.Run(quote, func(t *testing.T) {
			u := newUpstream(t, nil)
			u.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var body struct {
					Messages []struct{ Content string } `json:"messages"`
				}
				_ = json.Unmarshal(raw, &body)
				var m map[string]any
				_ = json.Unmarshal(raw, &m)
				u.reqs <- received{header: r.Header.Clone(), body: m}
				last := body.Messages[len(body.Messages)-1].Content
				if !strings.HasPrefix(last, "Please") {
					w.Header().Set("Content-Type", "text/event-stream")
					events(w, chunkHel, chunkStop, done)
					return
				}
				echoed := last
				if quote == "whole body" {
					echoed = string(raw)
				}
				msg, _ := json.Marshal("Invalid request: could not parse " + echoed)
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"message":`+string(msg)+`,"type":"invalid_request_error"}}`)
			})
			var downgrades atomic.Int64
			c := u.client(Config{Profile: "openai", IncludeUsage: &yes, OnDowngrade: func(Downgrade) { downgrades.Add(1) }})
			for _, text := range []string{
				"Please explain what stream_options means here.",
				"Please, what is a json_schema, and is it like a tool_choice?",
				"Please compare json_object with the response_format I know.",
				"Please tell me the maximum context length of an argument.",
				"Please check the grammar of my claim, and its schema: failed to parse?",
			} {
				req := coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleSystem, Content: systemPrompt}, {Role: coach.RoleUser, Content: text}}, Schema: &coachSchema}
				_, err := c.Stream(context.Background(), req, coach.StreamHooks{})
				if me := modelError(t, err); me.Class != ClassInvalid {
					t.Errorf("%q: class %q, want %q", text, me.Class, ClassInvalid)
				}
				u.request(t)
			}
			if n := downgrades.Load(); n != 0 {
				t.Errorf("%d downgrades, want none", n)
			}
			// Another learner's turn is sent in the full shape.
			s, err := c.Stream(context.Background(), hello, coach.StreamHooks{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, ok := u.request(t).body["stream_options"]; !ok {
				t.Error("the next request lost stream_options")
			}
		})
	}
}

// TestDowngradeExpires checks that a downgrade lasts DowngradeTTL, after which the
// configured shape is sent again (the re-probe), and weakened again if still rejected.
func TestDowngradeExpires(t *testing.T) {
	var reject atomic.Bool
	reject.Store(true)
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if reject.Load() {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"Unknown parameter","type":"invalid_request_error","param":"stream_options","code":"unknown_parameter"}}`)
			reject.Store(false)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		events(w, chunkHel, chunkStop, done)
	})
	var downgrades atomic.Int64
	c := u.client(Config{Profile: "openai", DowngradeTTL: time.Minute, OnDowngrade: func(Downgrade) { downgrades.Add(1) }})
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	usage := func() bool {
		s, err := c.Stream(context.Background(), hello, coach.StreamHooks{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		var last received
		for len(u.reqs) > 0 {
			last = <-u.reqs
		}
		_, ok := last.body["stream_options"]
		return ok
	}
	if usage() {
		t.Error("the rejected setting was sent again at once")
	}
	now = now.Add(59 * time.Second)
	if usage() {
		t.Error("the downgrade ended before its TTL")
	}
	now = now.Add(time.Second)
	if !usage() {
		t.Error("after the TTL the configured setting is not re-probed")
	}
	reject.Store(true)
	if usage() || downgrades.Load() != 2 {
		t.Errorf("a re-probe that is rejected again: %d downgrades, want 2", downgrades.Load())
	}
}
