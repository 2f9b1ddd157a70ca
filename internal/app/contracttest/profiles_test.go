package contracttest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/openai"
	"github.com/coachgw/coachgw/internal/openapitest"
	"github.com/coachgw/coachgw/internal/replay"
)

// The answers every profile's fixtures in testdata/streams carry, each in its endpoint's wire
// format (see testdata/streams/README.md).
const (
	fixtureQuestion      = "Who is remote work good for, and in what way — could you put that into one sentence that someone might reasonably dispute?"
	fixtureAssistantText = `Thanks for sharing your topic. Right now "remote work is good" reads more like a subject than a claim: a reader can't yet tell what exactly you want them to accept, or why anyone would disagree.`
	fixtureCardContent   = "You're two weeks into a new VP role. Your first big initiative is stalling because a peer VP keeps missing commitments. You've mentioned it twice in 1:1s. Today, they missed another deadline."
	fixtureCard          = `{"type":"scenario","content":"You're two weeks into a new VP role. Your first big initiative is stalling because a peer VP keeps missing commitments. You've mentioned it twice in 1:1s. Today, they missed another deadline.","drill_phase":"Problem-Solving"}`
)

// TestProfiles drives each contract through a gateway whose one endpoint has each profile, the
// endpoint replaying that profile's fixtures: every contract must stream its text as deltas and
// end with a result that follows api/openapi.yaml, whatever the endpoint's wire format, and the
// gateway must have asked the endpoint in the profile's request shape.
func TestProfiles(t *testing.T) {
	type variant struct {
		profile, toolChoice, cardsFixture string
	}
	var variants []variant
	for _, p := range openai.Profiles() {
		variants = append(variants, variant{profile: p.Name, cardsFixture: p.Name + "-cards"})
	}
	variants = append(variants,
		// Gemini told to call the tool after all: the arguments arrive whole, in one chunk.
		variant{profile: "gemini-openai", toolChoice: "required", cardsFixture: "gemini-openai-cards-tool"},
		// Ollama told to force the tool by name, which it ignores: the card comes as content.
		variant{profile: "ollama", toolChoice: "named", cardsFixture: "ollama-cards"},
		// llama-server told to force the tool after all, by a model that makes the call.
		variant{profile: "llamacpp", toolChoice: "required", cardsFixture: "llamacpp-cards-tool"},
	)
	for _, v := range variants {
		name := v.profile
		if v.toolChoice != "" {
			name += " with toolChoice " + v.toolChoice
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, _ := openai.LookupProfile(v.profile)
			tool := p.ToolChoice
			if v.toolChoice != "" {
				tool, _ = openai.ParseToolChoice(v.toolChoice)
			}
			h := &harness{v: openapitest.New(t), g: apptest.StartWith(t, apptest.Options{
				LLM: fakellm.Options{Fixtures: os.DirFS("../../../testdata/streams")},
				Config: func(c *config.Config) {
					c.Upstreams = []config.Upstream{{Name: "only", BaseURL: c.OpenAIBaseURL, Model: "test-model", Profile: v.profile, ToolChoice: v.toolChoice}}
				},
			})}

			// toulmin
			id := h.create(t, `{"contract":"toulmin"}`)
			h.g.LLM.Enqueue(fakellm.Reply{Fixture: v.profile + "-toulmin"})
			a := h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Remote work is good."))
			wantStream(t, "toulmin", a, "delta result")
			// v1.2: the deltas add up to the visible text, the appended question included.
			if got, want := deltaText(a), fixtureAssistantText+"\n\n"+fixtureQuestion; got != want {
				t.Errorf("toulmin deltas = %q, want %q", got, want)
			}
			wantRequest(t, "toulmin", h.g.LLM, p.Format, p.IncludeUsage, "")

			// cards
			id = h.create(t, `{"contract":"cards"}`)
			h.g.LLM.Enqueue(fakellm.Reply{Fixture: v.cardsFixture})
			a = h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Begin training."))
			wantStream(t, "cards", a, "delta result")
			if got := deltaText(a); got != fixtureCardContent {
				t.Errorf("cards deltas = %q, want the card's content %q", got, fixtureCardContent)
			}
			if res := a.last(); string(res.Result) != fixtureCard || res.Fallback {
				t.Errorf("cards result = %s, want %s (no fallback)", res.Raw, fixtureCard)
			}
			cardFormat := p.Format
			if tool != openai.ToolNone {
				cardFormat = openai.FormatPrompt // a tool call: no response_format
			}
			wantResultSchema(t, a, "card.json")
			wantRequest(t, "cards", h.g.LLM, cardFormat, p.IncludeUsage, tool.String())

			// module
			id = h.create(t, `{"contract":"module","module":"`+moduleID+`"}`)
			h.g.LLM.Enqueue(fakellm.Reply{Fixture: v.profile + "-module"})
			a = h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Hi, where do we start?"))
			if a.status != http.StatusOK || a.last().Type != "result" || len(a.lines) < 2 || a.lines[0].Block == nil {
				t.Errorf("module: status %d lines %q, want block deltas and a result", a.status, a.kinds())
			}
			wantResultSchema(t, a, "structured-response.json")
			wantRequest(t, "module", h.g.LLM, p.Format, p.IncludeUsage, "")
		})
	}
}

// TestProfilesReplayModel runs a turn of each contract against the replay model behind each
// profile: the replay model answers in the request's shape (a card as a tool call when tools
// are offered, as content when they are not), so each profile's whole path from request to
// result is exercised by a model that reads the prompt.
func TestProfilesReplayModel(t *testing.T) {
	for _, p := range openai.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			h := &harness{v: openapitest.New(t), g: apptest.StartWith(t, apptest.Options{
				LLM: fakellm.Options{Responder: replay.Responder()},
				Config: func(c *config.Config) {
					c.Upstreams = []config.Upstream{{Name: "replay", BaseURL: c.OpenAIBaseURL, Model: "coachgw-replay", Profile: p.Name}}
				},
			})}
			for _, tt := range []struct{ session, message string }{
				{`{"contract":"toulmin"}`, "Remote work is good."},
				{`{"contract":"cards"}`, "Begin training."},
				{`{"contract":"module","module":"` + moduleID + `"}`, "Hi, where do we start?"},
			} {
				id := h.create(t, tt.session)
				a := h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg(tt.message))
				if res := a.last(); a.status != http.StatusOK || res.Type != "result" || res.Fallback || deltaText(a) == "" {
					t.Errorf("%s: status %d lines %q, want deltas and a result that is no fallback\n%s", tt.session, a.status, a.kinds(), a.body)
				}
			}
		})
	}
}

// deltaText joins the text of a stream's delta lines.
func deltaText(a answer) string {
	var b bytes.Buffer
	for _, l := range a.lines {
		if l.Type == "delta" {
			b.WriteString(l.Text)
		}
	}
	return b.String()
}

// wantRequest checks the shape of the last request the endpoint received: its response format
// (FormatPrompt: none sent), whether it asked for usage, and for a cards turn how it forced the
// tool ("named", "required", or "none": no tools at all).
func wantRequest(t *testing.T, what string, llm *fakellm.Server, format openai.Format, usage bool, tool string) {
	t.Helper()
	reqs := llm.Requests()
	if len(reqs) == 0 {
		t.Fatalf("%s: the endpoint received no request", what)
	}
	r := reqs[len(reqs)-1]
	wantFormat := format.String()
	if format == openai.FormatPrompt {
		wantFormat = ""
	}
	if r.ResponseFormat != wantFormat || r.IncludeUsage != usage {
		t.Errorf("%s: response_format %q include_usage %v, want %q and %v", what, r.ResponseFormat, r.IncludeUsage, wantFormat, usage)
	}
	var body struct {
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	_ = json.Unmarshal(r.Raw, &body)
	choice := string(body.ToolChoice)
	switch tool {
	case "":
	case "named":
		if r.ToolChoice != "display_card" || len(r.Tools) != 1 {
			t.Errorf("%s: tool_choice %s with %d tools, want display_card named", what, choice, len(r.Tools))
		}
	case "required":
		if choice != `"required"` || len(r.Tools) != 1 {
			t.Errorf("%s: tool_choice %s with %d tools, want \"required\" with the one tool", what, choice, len(r.Tools))
		}
	case "none":
		if choice != "" || len(r.Tools) != 0 {
			t.Errorf("%s: tool_choice %s with %d tools, want no tools", what, choice, len(r.Tools))
		}
	}
}

// TestQuirkFixtures replays the wire quirks of real endpoints (testdata/streams/quirk-*.sse,
// each citing the public recording or issue thread it follows) through all three contracts,
// under the quirk's profile and under generic, which knows nothing of the endpoint. A quirk of
// the SSE framing has a fixture per contract; a quirk of tool calls is a cards answer, and
// toulmin and module then replay that endpoint's own fixtures. Every contract must end with a
// result that is no fallback, the card being the first call's.
func TestQuirkFixtures(t *testing.T) {
	tests := []struct {
		quirk, profile string
		// perContract: the quirk has a fixture per contract; else only a cards one.
		perContract bool
	}{
		{quirk: "vllm-named", profile: "vllm"},
		{quirk: "llamacpp-pre-b5481", profile: "llamacpp"},
		{quirk: "lmstudio-empty-name", profile: "lmstudio"},
		{quirk: "dashscope-empty-id", profile: "openai"},
		{quirk: "litellm-index-from-1", profile: "openai"},
		{quirk: "several-calls", profile: "ollama"},
		{quirk: "index-reused", profile: "vllm"},
		{quirk: "multiline-data", profile: "openai", perContract: true},
		{quirk: "sse-framing", profile: "openai", perContract: true},
	}
	for _, tt := range tests {
		for _, profile := range []string{tt.profile, openai.GenericProfile} {
			t.Run(tt.quirk+" under "+profile, func(t *testing.T) {
				t.Parallel()
				h := &harness{v: openapitest.New(t), g: apptest.StartWith(t, apptest.Options{
					LLM: fakellm.Options{Fixtures: os.DirFS("../../../testdata/streams")},
					Config: func(c *config.Config) {
						c.Upstreams = []config.Upstream{{Name: "only", BaseURL: c.OpenAIBaseURL, Model: "test-model", Profile: profile}}
					},
				})}
				fixture := func(contract string) string {
					if tt.perContract || contract == "cards" {
						return "quirk-" + tt.quirk + "-" + contract
					}
					return tt.profile + "-" + contract
				}

				id := h.create(t, `{"contract":"toulmin"}`)
				h.g.LLM.Enqueue(fakellm.Reply{Fixture: fixture("toulmin")})
				a := h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Remote work is good."))
				wantStream(t, "toulmin", a, "delta result")
				if got, want := deltaText(a), fixtureAssistantText+"\n\n"+fixtureQuestion; got != want {
					t.Errorf("toulmin deltas = %q, want %q (v1.2: the question streamed too)", got, want)
				}

				id = h.create(t, `{"contract":"cards"}`)
				h.g.LLM.Enqueue(fakellm.Reply{Fixture: fixture("cards")})
				a = h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Begin training."))
				wantStream(t, "cards", a, "delta result")
				if got := deltaText(a); got != fixtureCardContent {
					t.Errorf("cards deltas = %q, want the card's content %q", got, fixtureCardContent)
				}
				if res := a.last(); string(res.Result) != fixtureCard || res.Fallback {
					t.Errorf("cards result = %s, want %s (no fallback)", res.Raw, fixtureCard)
				}
				wantResultSchema(t, a, "card.json")

				id = h.create(t, `{"contract":"module","module":"`+moduleID+`"}`)
				h.g.LLM.Enqueue(fakellm.Reply{Fixture: fixture("module")})
				a = h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("Hi, where do we start?"))
				if res := a.last(); a.status != http.StatusOK || res.Type != "result" || res.Fallback || len(a.lines) < 2 || a.lines[0].Block == nil {
					t.Errorf("module: status %d lines %q, want block deltas and a result that is no fallback", a.status, a.kinds())
				}
				wantResultSchema(t, a, "structured-response.json")
			})
		}
	}
}
