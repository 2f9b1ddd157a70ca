package moderation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/safety"
)

// LlamaGuard3RulePrefix prefixes, in Verdict.Rules, every category Llama Guard 3 named
// ("llamaguard3.S11", "llamaguard3.S6").
const LlamaGuard3RulePrefix = "llamaguard3."

// llamaGuardMaxTokens caps the verdict. The longest Llama Guard 3 can write, "unsafe" and all
// fourteen categories, is under 50 tokens; the cap is above it so that a verdict is never cut,
// since a list cut after "S1" of "S11" would read as another category. A verdict cut anyway
// (finish_reason "length") is an error.
const llamaGuardMaxTokens = 64

// withheldUser is the user turn before a model answer checked on the output stage. Llama
// Guard 3 judges an answer in a conversation (the chat templates below require a user turn
// before an assistant turn), but a safety.Text holds only the answer: this says so rather than
// invent a question.
const withheldUser = "(The learner's message is not shown.)"

// NewLlamaGuard3 returns the classifier of a Llama Guard 3 model (1B or 8B) served as an
// OpenAI-compatible chat model (COACH_GUARD_FORMAT=llamaguard3). It posts a non-streaming chat
// completion to o.BaseURL + "/chat/completions" with temperature 0 and a small max_tokens, and
// reads the verdict Llama Guard 3 writes: "safe", or "unsafe" and on the next line the
// comma-separated categories violated, S1 to S14 of the MLCommons hazard taxonomy (S11 is
// Suicide & Self-Harm).
//
// The prompt. Llama Guard 3's prompt is one user turn of the Llama 3 chat format holding the
// task ("Task: Check if there is unsafe content in 'User' messages in conversations according
// our safety policy with the below categories."), the categories S1: Violent Crimes … S14:
// Code Interpreter Abuse between <BEGIN UNSAFE CONTENT CATEGORIES> and <END UNSAFE CONTENT
// CATEGORIES>, the conversation as "User: …" and "Agent: …" turns between <BEGIN
// CONVERSATION> and <END CONVERSATION>, and the instruction to assess "ONLY THE LAST User" (or
// "Agent") message, first line 'safe' or 'unsafe', second line the categories. The role is
// 'User' to check a learner's input and 'Agent' to check the model's output, and an input is
// checked without any answer after it. Sources: the prompt format page of the model card,
// https://www.llama.com/docs/model-cards-and-prompt-formats/llama-guard-3/ ; the reference
// builder, PROMPT_TEMPLATE_3 and build_default_prompt in meta-llama/llama-recipes
// src/llama_recipes/inference/prompt_format_utils.py ; and the chat_template of
// meta-llama/Llama-Guard-3-8B's tokenizer_config.json, which renders exactly that prompt from
// plain chat messages, choosing 'User' or 'Agent' by whether the last message is the user's or
// the assistant's.
//
// That chat template is why this classifier sends the conversation as chat messages, the text
// as the user message (input) or as the assistant message after a user turn (output), and
// does not render the prompt itself: every server that serves the model as a chat model (vLLM
// and TGI with the model's tokenizer, Ollama's llama-guard3, llama.cpp with the GGUF's
// template) applies that template to the messages it gets, so a prompt rendered here would be
// wrapped a second time, as the "User:" message of the server's prompt.
//
// A learner's text cannot speak for the template: the Llama 3 special tokens ("<|eot_id|>",
// "<|start_header_id|>" …), which a server's tokenizer may read as tokens even inside a message,
// are broken up ("<|" becomes "< |") before the text is sent, so that a text cannot close its
// own turn and write the verdict. A verdict still never clears a hit of the built-in screen:
// the guard's verdict is merged with it (safety.Verdict.Merge).
//
// Mapping: S11 is a crisis of severity High, safety.CategorySuicide and
// safety.CategorySelfHarm on input (the category is "Suicide & Self-Harm" and does not tell
// them apart), safety.CategorySelfHarmInstructions on output. The other categories are no
// learner crisis (S6, specialized advice, would retract an ordinary breathing exercise): they
// are recorded in Verdict.Rules, without Crisis. An answer that is not a verdict in this
// format is an error, never a clean verdict.
func NewLlamaGuard3(o Options) *Classifier {
	ep := newEndpoint(o, "llamaguard3", "/chat/completions")
	return &Classifier{
		ep:      ep,
		request: func(t safety.Text) any { return llamaGuardRequest(ep.model, t) },
		verdict: readLlamaGuard3,
	}
}

// guardRequest is a chat completion request with temperature 0. go-openai's field carries
// omitempty, which drops a 0 and leaves the server's default (1.0 on vLLM); this field, being
// shallower, replaces it in the JSON.
type guardRequest struct {
	oai.ChatCompletionRequest
	Temperature float32 `json:"temperature"`
}

func llamaGuardRequest(model string, t safety.Text) guardRequest {
	text := neutralize(t.Content)
	msgs := []oai.ChatCompletionMessage{{Role: oai.ChatMessageRoleUser, Content: text}}
	if t.Stage == safety.StageOutput {
		msgs = []oai.ChatCompletionMessage{
			{Role: oai.ChatMessageRoleUser, Content: withheldUser},
			{Role: oai.ChatMessageRoleAssistant, Content: text},
		}
	}
	return guardRequest{ChatCompletionRequest: oai.ChatCompletionRequest{
		Model: model, Messages: msgs, MaxTokens: llamaGuardMaxTokens, Stream: false,
	}}
}

// neutralize breaks up the Llama 3 special tokens in s (they all open with "<|"), which only a
// text trying to steer the guard holds.
func neutralize(s string) string { return strings.ReplaceAll(s, "<|", "< |") }

// readLlamaGuard3 reads the body of a chat completion holding a Llama Guard 3 verdict.
func readLlamaGuard3(stage safety.Stage, body []byte) (safety.Verdict, error) {
	var r oai.ChatCompletionResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return safety.Verdict{}, fmt.Errorf("%w: the body is not a chat completion", errNoVerdict)
	}
	if len(r.Choices) == 0 {
		return safety.Verdict{}, fmt.Errorf("%w: no choices", errNoVerdict)
	}
	c := r.Choices[0]
	if c.FinishReason == oai.FinishReasonLength {
		return safety.Verdict{}, fmt.Errorf("%w: the verdict was cut at max_tokens", errNoVerdict)
	}
	return parseLlamaGuard3(stage, c.Message.Content)
}

// parseLlamaGuard3 reads a Llama Guard 3 verdict written for stage: "safe", or "unsafe" and on
// the next line categories S1 to S14, comma-separated. Case and the space around lines and
// categories are not significant; anything else (a third line, an unknown category, "unsafe"
// without categories) is an error.
func parseLlamaGuard3(stage safety.Stage, out string) (safety.Verdict, error) {
	if stage != safety.StageInput && stage != safety.StageOutput {
		return safety.Verdict{}, fmt.Errorf("unknown stage %q", stage)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	switch strings.ToLower(strings.TrimSpace(lines[0])) {
	case "safe":
		if len(lines) > 1 {
			return safety.Verdict{}, fmt.Errorf("%w: text after \"safe\"", errNoVerdict)
		}
		return safety.Verdict{}, nil
	case "unsafe":
	default:
		return safety.Verdict{}, fmt.Errorf("%w: the first line is neither safe nor unsafe", errNoVerdict)
	}
	if len(lines) != 2 {
		return safety.Verdict{}, fmt.Errorf("%w: \"unsafe\" wants one line of categories", errNoVerdict)
	}
	var v safety.Verdict
	for _, code := range strings.Split(lines[1], ",") {
		n, ok := hazard(code)
		if !ok {
			return safety.Verdict{}, fmt.Errorf("%w: a category is not S1 to S14", errNoVerdict)
		}
		v.Rules = append(v.Rules, LlamaGuard3RulePrefix+"S"+strconv.Itoa(n))
		if n != 11 {
			continue
		}
		if stage == safety.StageInput {
			v.Categories = append(v.Categories, safety.CategorySuicide, safety.CategorySelfHarm)
		} else {
			v.Categories = append(v.Categories, safety.CategorySelfHarmInstructions)
		}
	}
	slices.Sort(v.Rules)
	v.Rules = slices.Compact(v.Rules)
	if len(v.Categories) > 0 {
		slices.Sort(v.Categories)
		v.Categories = slices.Compact(v.Categories)
		v.Crisis, v.Severity = true, safety.SeverityHigh
	}
	return v, nil
}

// hazard reads one category, "S1" to "S14", as its number.
func hazard(code string) (int, bool) {
	code = strings.TrimSpace(code)
	if len(code) < 2 || (code[0] != 'S' && code[0] != 's') {
		return 0, false
	}
	n := 0
	for i, d := range []byte(code[1:]) {
		if d < '0' || d > '9' || (i == 0 && d == '0') || i > 1 {
			return 0, false
		}
		n = n*10 + int(d-'0')
	}
	return n, n >= 1 && n <= 14
}
