package openai

import (
	"fmt"
	"strings"
	"time"
)

// ToolChoice says how a request with a coach.Tool makes the model answer with that tool's
// arguments.
type ToolChoice uint8

// Tool choices, strongest first. ToolNamed forces the one function by name, as OpenAI's
// tool_choice {"type":"function","function":{"name":…}}; ToolRequired sends tool_choice
// "required" with that single tool, which forces the same call on endpoints that reject or
// ignore a named choice; ToolNone sends no tools at all and asks for the arguments as
// structured output in the message content (the tool's parameters are the output schema, in
// the endpoint's Format), which the stream then hands on as that tool's arguments.
const (
	ToolNamed ToolChoice = iota
	ToolRequired
	ToolNone
)

var toolChoiceNames = [...]string{ToolNamed: "named", ToolRequired: "required", ToolNone: "none"}

// String returns the tool choice's configuration name.
func (t ToolChoice) String() string { return settingName(toolChoiceNames[:], int(t), "ToolChoice") }

// ParseToolChoice parses "named", "required" or "none" (case-insensitive).
func ParseToolChoice(s string) (ToolChoice, error) {
	if i := settingIndex(toolChoiceNames[:], s); i >= 0 {
		return ToolChoice(i), nil
	}
	return 0, fmt.Errorf("openai: unknown tool choice %q (want named, required or none)", s)
}

// Profile is what one kind of OpenAI-compatible endpoint honours, so that the adapter asks it
// only for what it does. Config.Profile names one; Config's overrides change single settings.
type Profile struct {
	// Name is the profile's configuration name.
	Name string
	// ToolChoice is how a forced tool call is asked for.
	ToolChoice ToolChoice
	// Format is how structured output is asked for; with ToolNone it also asks for a tool's
	// arguments.
	Format Format
	// IncludeUsage sends stream_options.include_usage, so that the endpoint reports token
	// usage in a last chunk (with empty choices) before [DONE].
	IncludeUsage bool
	// StreamsToolArgs says whether the endpoint streams a tool call's arguments in pieces.
	// Where it sends them whole, in one chunk, a card's text could not stream as deltas from a
	// tool call, so the profile asks for cards as structured output (ToolNone) instead. The
	// decoder takes both forms either way.
	StreamsToolArgs bool
	// CapParam is the name the completion cap is sent under: "max_tokens", which most
	// OpenAI-compatible servers read, or "max_completion_tokens", which OpenAI's reference
	// documents in its place (max_tokens is deprecated there, and its reasoning models reject
	// it). Empty is "max_tokens", except for reasoning models, which always get
	// max_completion_tokens.
	CapParam string
	// OneToolCall sends parallel_tool_calls: false with the forced tool, where the endpoint
	// honours it: one card is one call, and an endpoint that defaults to parallel calls wrote
	// several in one attempt.
	OneToolCall bool
	// Bounds are the validation keywords the endpoint's structured output enforces, which the
	// strict schema therefore keeps (see StrictFor); the others are dropped, and the gateway's
	// validation of the result still applies them.
	Bounds Bounds
	// Limits are what the endpoint's grammar compiler refuses in the schemas it is sent, which
	// they therefore leave out (see Limits).
	Limits Limits
	// FirstByteTimeout and IdleTimeout, when set, are the least first-byte and idle deadlines
	// of an endpoint of this profile: a CPU model reading a long prompt sends nothing but
	// keep-alive comments for a long time. A longer global setting still applies.
	FirstByteTimeout, IdleTimeout time.Duration
}

// Cap parameter names (Profile.CapParam).
const (
	CapMaxTokens           = "max_tokens"
	CapMaxCompletionTokens = "max_completion_tokens"
)

// Bounds is a set of groups of JSON schema validation keywords.
type Bounds uint8

// Groups of validation keywords a strict schema may keep.
const (
	// BoundNumbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf.
	BoundNumbers Bounds = 1 << iota
	// BoundStrings: minLength, maxLength.
	BoundStrings
	// BoundArrays: minItems, maxItems.
	BoundArrays
	// BoundPatterns: pattern.
	BoundPatterns

	// BoundsAll is every group.
	BoundsAll = BoundNumbers | BoundStrings | BoundArrays | BoundPatterns
)

// boundKeywords maps each keyword a strict schema may keep to its group.
var boundKeywords = map[string]Bounds{
	"minimum": BoundNumbers, "maximum": BoundNumbers, "exclusiveMinimum": BoundNumbers,
	"exclusiveMaximum": BoundNumbers, "multipleOf": BoundNumbers,
	"minLength": BoundStrings, "maxLength": BoundStrings,
	"minItems": BoundArrays, "maxItems": BoundArrays,
	"pattern": BoundPatterns,
}

// localTimeouts are the first-byte and idle deadlines of the profiles of servers that often
// run a model on a CPU. A real llama-server took 32.7 s to its first data for a cold
// 4.2k-token prompt on a loaded 2-core machine, and sends a ":" keep-alive comment only every
// 30 s while it reads a prompt: 120 s leaves room for a prompt four times as long, and 60 s
// idle for one missed keep-alive.
const (
	localFirstByteTimeout = 120 * time.Second
	localIdleTimeout      = 60 * time.Second
)

// DefaultProfile is the profile of a Config that names none. It is the adapter's behaviour
// before profiles existed, with Config.Format choosing the structured output mode: what a
// single endpoint configured by OPENAI_BASE_URL and COACH_RESPONSE_FORMAT keeps getting.
const DefaultProfile = ""

// GenericProfile is the most conservative profile, for an endpoint nothing is known about; it
// is the profile of an upstream entry that names none.
const GenericProfile = "generic"

// profiles lists every named profile. Each setting cites where it comes from; the profile table
// of docs/configuration.md repeats them.
var profiles = []Profile{
	{
		// OpenAI's own API: named tool_choice, strict json_schema, include_usage, argument
		// streaming, parallel_tool_calls and max_completion_tokens (max_tokens "deprecated in
		// favor of max_completion_tokens, and is not compatible with o-series models") are all
		// documented in the Chat Completions reference. Its Structured Outputs guide lists
		// what strict mode enforces: for numbers minimum, maximum, exclusiveMinimum,
		// exclusiveMaximum and multipleOf; for arrays minItems and maxItems; for strings
		// pattern and format, but not minLength or maxLength, which it rejects.
		Name: "openai", ToolChoice: ToolNamed, Format: FormatJSONSchema, IncludeUsage: true, StreamsToolArgs: true,
		CapParam: CapMaxCompletionTokens, OneToolCall: true, Bounds: BoundNumbers | BoundArrays | BoundPatterns,
	},
	{
		// Anthropic's OpenAI SDK compatibility layer (docs.anthropic.com/en/api/openai-sdk):
		// tools and tool_choice are supported, but "strict" is ignored and so is
		// response_format, so the schema has to travel in the prompt; stream_options is
		// "fully supported". Its finish reasons are mapped from Claude's stop reasons
		// ("tool_calls" for tool_use, "length" for max_tokens).
		// The schema goes into the prompt whole, so no Bounds apply; parallel_tool_calls is not
		// among the fields the page lists as supported, so it is not sent.
		Name: "anthropic-openai", ToolChoice: ToolNamed, Format: FormatPrompt, IncludeUsage: true, StreamsToolArgs: true,
	},
	{
		// Gemini's OpenAI compatibility (ai.google.dev/gemini-api/docs/openai): structured
		// output with response_format json_schema and stream_options.include_usage are
		// supported, but a streamed function call arrives whole in one chunk (Gemini streams
		// function call arguments only on Vertex AI with streamFunctionCallArguments), so
		// cards ask for the card as structured output, whose text streams.
		// Gemini's structured output documents minimum and maximum for numbers and minItems
		// and maxItems for arrays among the JSON schema it supports; an unknown keyword is a
		// 400 there, so nothing else is kept.
		Name: "gemini-openai", ToolChoice: ToolNone, Format: FormatJSONSchema, IncludeUsage: true, StreamsToolArgs: false,
		Bounds: BoundNumbers | BoundArrays,
	},
	{
		// Ollama's /v1 layer ignores tool_choice: a forced tool comes back as plain content
		// and "none" still calls tools (ollama/ollama#17921, #8421), and tool calls arrive
		// whole. response_format json_schema is honoured (Ollama's structured outputs), and
		// stream_options.include_usage since v0.5.2 (ollama/ollama#5200).
		// Its format becomes a grammar by llama.cpp's json-schema-to-grammar, which enforces
		// string and array lengths and patterns, and numeric bounds on integers (llama.cpp's
		// grammars/README.md); a keyword it cannot enforce is ignored, never an error, but its
		// grammar parser's repetition limit applies (see Limits.MaxRepeat). It runs models on
		// CPUs, hence the local deadlines.
		Name: "ollama", ToolChoice: ToolNone, Format: FormatJSONSchema, IncludeUsage: true, StreamsToolArgs: false,
		Bounds: BoundsAll, Limits: Limits{MaxRepeat: llamaMaxRepeat},
		FirstByteTimeout: localFirstByteTimeout, IdleTimeout: localIdleTimeout,
	},
	{
		// vLLM's OpenAI-compatible server: named tool_choice through guided decoding,
		// response_format json_schema, and stream_options.include_usage are documented in
		// its "OpenAI-Compatible Server" and "Tool Calling" pages.
		// Its guided decoding (xgrammar, with outlines or guidance as fallbacks) enforces
		// minLength/maxLength, minItems/maxItems, numeric bounds and patterns, and its
		// ChatCompletionRequest takes parallel_tool_calls. With xgrammar it refuses
		// multipleOf, and a string with both a pattern and length bounds (see Limits); SGLang
		// compiles schemas with xgrammar by default too.
		Name: "vllm", ToolChoice: ToolNamed, Format: FormatJSONSchema, IncludeUsage: true, StreamsToolArgs: true,
		OneToolCall: true, Bounds: BoundsAll, Limits: Limits{PatternOrLength: true, NoMultipleOf: true},
	},
	{
		// llama.cpp's llama-server (tools need --jinja): response_format json_schema becomes a
		// grammar and stream_options.include_usage is supported, but a named tool_choice
		// object has been seen silently turned into "auto" (langchain-llama-cpp's notes), so
		// the single tool is forced with "required". Its server documents parallel_tool_calls
		// (a real llama-server wrote 9 calls in one attempt without it). Its
		// json-schema-to-grammar enforces string and array lengths, patterns (anchored with ^
		// and $) and numeric bounds on integers (grammars/README.md: "minimum ... only
		// supported for type integer for now, not number"); keywords it cannot enforce are
		// ignored. Its grammar refuses a repetition count of 2,000 (see Limits.MaxRepeat).
		// It often runs on a CPU, hence the local deadlines.
		// "required" does not force the call either: a real llama-server (b10573, --jinja)
		// answered 7 of 7 card turns under tool_choice "required" in prose, and 11 of 11 on the
		// first call once asked for the card as structured output, whose grammar it enforces
		// from the first token. So cards are asked for as structured output from the first
		// turn (ToolNone); an operator's toolChoice override still gets the forced tool, with
		// parallel_tool_calls.
		Name: "llamacpp", ToolChoice: ToolNone, Format: FormatJSONSchema, IncludeUsage: true, StreamsToolArgs: true,
		OneToolCall: true, Bounds: BoundsAll, Limits: Limits{MaxRepeat: llamaMaxRepeat},
		FirstByteTimeout: localFirstByteTimeout, IdleTimeout: localIdleTimeout,
	},
	{
		// LM Studio accepts only the string tool choices "none", "auto" and "required"
		// (HTTP 400 "Invalid tool_choice type: 'object'", lmstudio-ai/docs#177) and only
		// json_schema as response_format (400 "'response_format.type' must be 'json_schema'",
		// lmstudio-bug-tracker#189). Its usage reporting in streams is not documented, so it
		// is not asked for.
		// Its llama.cpp engine turns json_schema into a llama.cpp grammar (see llamacpp), with
		// that grammar's repetition limit (see Limits.MaxRepeat), and it runs models on desktop
		// CPUs, hence the local deadlines. parallel_tool_calls is not documented, so it is not
		// sent.
		Name: "lmstudio", ToolChoice: ToolRequired, Format: FormatJSONSchema, IncludeUsage: false, StreamsToolArgs: true,
		Bounds: BoundsAll, Limits: Limits{MaxRepeat: llamaMaxRepeat},
		FirstByteTimeout: localFirstByteTimeout, IdleTimeout: localIdleTimeout,
	},
	{
		// An unknown endpoint (a proxy such as LiteLLM or Bifrost in front of anything): send
		// nothing it could reject or ignore. Cards and schemas travel in the prompt, and the
		// card comes back as content. Usage is asked for, since token budgets need it: some
		// deployments (Azure OpenAI before 2024-09) answer 400 to stream_options
		// (openai/openai-python#1469), and that 400 downgrades the endpoint to no usage
		// (see downgrade.go), whose tokens are then estimated from bytes.
		Name: GenericProfile, ToolChoice: ToolNone, Format: FormatPrompt, IncludeUsage: true, StreamsToolArgs: false,
	},
}

// Profiles returns every named profile.
func Profiles() []Profile { return append([]Profile(nil), profiles...) }

// LookupProfile returns the profile called name (case-insensitive). DefaultProfile ("") is
// the behaviour without profiles, with its Format to be taken from the Config.
func LookupProfile(name string) (Profile, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == DefaultProfile {
		// OpenAI's strict mode is what this has always sent, so it keeps what OpenAI's
		// enforces; other fields stay as they were before profiles.
		return Profile{ToolChoice: ToolNamed, Format: FormatJSONSchema, StreamsToolArgs: true,
			Bounds: BoundNumbers | BoundArrays | BoundPatterns}, true
	}
	for _, p := range profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// profileNames lists the named profiles for error messages.
func profileNames() string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// resolve returns the settings c asks for: its profile's, with c's overrides applied.
func (c Config) resolve() (shape, error) {
	p, ok := LookupProfile(c.Profile)
	if !ok {
		return shape{}, fmt.Errorf("openai: unknown profile %q (want one of %s)", c.Profile, profileNames())
	}
	s := p.shape()
	if p.Name == DefaultProfile {
		s.format = c.Format
	}
	if c.ToolChoice != "" {
		t, err := ParseToolChoice(c.ToolChoice)
		if err != nil {
			return shape{}, err
		}
		s.tool = t
	}
	if c.ResponseFormat != "" {
		f, err := ParseFormat(c.ResponseFormat)
		if err != nil {
			return shape{}, err
		}
		s.format = f
	}
	if c.IncludeUsage != nil {
		s.usage = *c.IncludeUsage
	}
	return s, nil
}

// shape returns the request shape p asks for.
func (p Profile) shape() shape {
	return shape{tool: p.ToolChoice, format: p.Format, usage: p.IncludeUsage, bounds: p.Bounds, oneCall: p.OneToolCall, cap: true}
}

// shape is the request shape a Client sends: how it forces a tool, asks for structured output
// and asks for usage, which bounds its strict schemas keep, whether it asks for one tool call
// and whether it sends the completion cap. A Client starts from its Config's and weakens it
// when the endpoint rejects a part of it (see downgrade).
type shape struct {
	tool    ToolChoice
	format  Format
	usage   bool
	bounds  Bounds
	oneCall bool
	cap     bool
}
