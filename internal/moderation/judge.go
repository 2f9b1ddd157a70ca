package moderation

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/pii"
	"github.com/coachgw/coachgw/internal/safety"
)

// JudgeRubric is the judge's system prompt: the short rubric published in docs/safety.md, by
// which a chat model decides whom a text the screen caught concerns.
//
//go:embed prompts/judge.md
var JudgeRubric string

// JudgeSchemaName names the judge's structured output in the request's response_format; the
// embedded replay model recognises a judge's request by it.
const JudgeSchemaName = "coachgw_safety_judgement"

// JudgeRulePrefix prefixes, in Verdict.Rules, the concern the judge decided ("judge.topic").
const JudgeRulePrefix = "judge."

// judgeSchema is the JSON schema of the judge's answer, strict in OpenAI's sense (every
// property required, no other): "why" first, since a model that writes its reason before its
// decision decides better.
var judgeSchema = json.RawMessage(`{"type":"object","additionalProperties":false,` +
	`"required":["why","concern","category","severity"],"properties":{` +
	`"why":{"type":"string"},` +
	`"concern":{"type":"string","enum":["self","other","topic","none"]},` +
	`"category":{"type":"string","enum":["suicide","self_harm","abuse","danger","concern_other","none"]},` +
	`"severity":{"type":"string","enum":["none","concern","high","imminent"]}}}`)

// judgeMaxTokens caps the judge's answer: one short sentence and three words of JSON.
const judgeMaxTokens = 200

// Cache bounds of the judge's verdicts.
const (
	// JudgeCacheTTL is how long a verdict is reused for the same text of the same tenant: long
	// enough for a class that pastes the same passage, short enough that a rubric or model
	// change shows within minutes.
	JudgeCacheTTL = 10 * time.Minute
	// judgeCachePerTenant bounds each tenant's verdicts, so that one tenant's flood of distinct
	// texts evicts only its own.
	judgeCachePerTenant = 256
	// judgeCacheTenants bounds the tenants cached at once (the least recent is dropped whole).
	judgeCacheTenants = 256
)

// JudgeOptions configure a judge.
type JudgeOptions struct {
	Options
	// TTL is how long a verdict is cached (default JudgeCacheTTL; negative: no cache).
	TTL time.Duration
	// MaskPII masks personal data in the text before the judge sees it (COACH_PII_REDACT=mask),
	// as the model endpoints see it: under COACH_SAFETY_JUDGE=auto the judge is one of them.
	MaskPII bool
}

// NewJudge returns the safety judge (COACH_SAFETY_JUDGE): an OpenAI-compatible chat model asked,
// on the published rubric (JudgeRubric), whom a learner's text that the screen caught or could
// not read concerns. It posts a non-streaming chat completion to o.BaseURL +
// "/chat/completions" with temperature 0, the rubric as the system message, the text as the
// value of "text" in a JSON object as the user message (so that the text, however it is
// written, cannot end its own message or pass for the rubric; with o.MaskPII its personal
// data masked), and a response_format asking for
// the JSON schema above (an endpoint that refuses it with 400 or 422 is asked again without it,
// then and from then on: the rubric asks for the same object in words). It reads the answer as
// safety.Verdict:
//
//   - "self": a crisis, Concern self, the answer's category (the screen's categories are
//     kept beside it by the safety.Guard), severity high or imminent.
//   - "other": a crisis of CategoryConcernOther, severity concern.
//   - "topic" and "none": no crisis, Concern topic or none.
//
// Verdict.Rules holds "judge.<concern>"; the answer's "why" is asked for because it improves
// the decision and is then dropped, since it may quote the learner. An answer that does not
// fit the schema is an error, never a clean verdict.
//
// Verdicts are cached in process by a hash of the tenant, the stage and the text, per tenant
// (256 texts each, 256 tenants, o.TTL): one tenant never sees whether another's learner wrote
// a text, nor evicts another's verdicts. Failures are not cached.
func NewJudge(o JudgeOptions) *Judge {
	ep := newEndpoint(o.Options, "judge", "/chat/completions")
	j := &Judge{}
	request := func(t safety.Text) any {
		if o.MaskPII {
			t.Content = pii.Mask(t.Content)
		}
		return judgeRequest(ep.model, t, !j.plain.Load())
	}
	j.Classifier = Classifier{ep: ep, request: request, verdict: readJudgement}
	if o.TTL >= 0 {
		if o.TTL == 0 {
			o.TTL = JudgeCacheTTL
		}
		j.ttl = o.TTL
		j.tenants, _ = lru.New[string, *lru.Cache[[32]byte, cached]](judgeCacheTenants) // the size is positive
	}
	return j
}

// cached is a verdict in the cache, with when it stops being used. Expiry is checked when a
// verdict is read, so the cache needs no goroutine (golang-lru's expirable caches start one
// per cache that never ends, one per tenant here).
type cached struct {
	v     safety.Verdict
	until time.Time
}

// Judge is the safety judge: a Classifier with a verdict cache. It is safe for concurrent use.
type Judge struct {
	Classifier
	// plain is set once the endpoint refused a request with response_format (400 or 422): not
	// every OpenAI-compatible server takes json_schema, and the rubric asks for the same JSON
	// object in words, so later requests go without it.
	plain   atomic.Bool
	ttl     time.Duration
	mu      sync.Mutex // makes finding or adding a tenant's cache atomic
	tenants *lru.Cache[string, *lru.Cache[[32]byte, cached]]
}

// Check judges t, from the cache when the same tenant's same text was judged within the TTL.
func (j *Judge) Check(ctx context.Context, t safety.Text) (safety.Verdict, error) {
	if j.tenants == nil {
		return j.check(ctx, t)
	}
	cache, key := j.cache(t.Tenant), sha256.Sum256([]byte(string(t.Stage)+"\x00"+t.Content))
	if c, ok := cache.Get(key); ok && time.Now().Before(c.until) {
		return c.v, nil
	}
	v, err := j.check(ctx, t)
	if err == nil {
		cache.Add(key, cached{v: v, until: time.Now().Add(j.ttl)})
	}
	return v, err
}

// check asks the endpoint, once more without response_format when it refused it.
func (j *Judge) check(ctx context.Context, t safety.Text) (safety.Verdict, error) {
	v, err := j.Classifier.Check(ctx, t)
	var se *statusErr
	if err != nil && errors.As(err, &se) && (se.status == http.StatusBadRequest || se.status == http.StatusUnprocessableEntity) &&
		j.plain.CompareAndSwap(false, true) {
		return j.Classifier.Check(ctx, t)
	}
	return v, err
}

// cache returns the verdict cache of tenant, made on first use.
func (j *Judge) cache(tenant string) *lru.Cache[[32]byte, cached] {
	j.mu.Lock()
	defer j.mu.Unlock()
	c, ok := j.tenants.Get(tenant)
	if !ok {
		c, _ = lru.New[[32]byte, cached](judgeCachePerTenant) // the size is positive
		j.tenants.Add(tenant, c)
	}
	return c
}

// judgeText is the user message of a judge's request.
type judgeText struct {
	Text string `json:"text"`
}

// judgeRequest is the request judging t; with schema, its response_format asks for the
// judgement's JSON schema.
func judgeRequest(model string, t safety.Text, schema bool) guardRequest {
	user, _ := json.Marshal(judgeText{Text: t.Content}) // a string always marshals
	req := guardRequest{ChatCompletionRequest: oai.ChatCompletionRequest{
		Model: model, MaxTokens: judgeMaxTokens, Stream: false,
		Messages: []oai.ChatCompletionMessage{
			{Role: oai.ChatMessageRoleSystem, Content: JudgeRubric},
			{Role: oai.ChatMessageRoleUser, Content: string(user)},
		},
	}}
	if schema {
		req.ResponseFormat = &oai.ChatCompletionResponseFormat{
			Type:       oai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &oai.ChatCompletionResponseFormatJSONSchema{Name: JudgeSchemaName, Schema: judgeSchema, Strict: true},
		}
	}
	return req
}

// judgement is the judge's answer as the schema has it.
type judgement struct {
	Why      string          `json:"why"`
	Concern  string          `json:"concern"`
	Category string          `json:"category"`
	Severity safety.Severity `json:"severity"`
}

// readJudgement reads the body of a chat completion holding a judge's answer.
func readJudgement(stage safety.Stage, body []byte) (safety.Verdict, error) {
	if stage != safety.StageInput {
		return safety.Verdict{}, fmt.Errorf("the judge rules on learner input only, not %q", stage)
	}
	var r oai.ChatCompletionResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return safety.Verdict{}, fmt.Errorf("%w: the body is not a chat completion", errNoVerdict)
	}
	if len(r.Choices) == 0 {
		return safety.Verdict{}, fmt.Errorf("%w: no choices", errNoVerdict)
	}
	if r.Choices[0].FinishReason == oai.FinishReasonLength {
		return safety.Verdict{}, fmt.Errorf("%w: the answer was cut at max_tokens", errNoVerdict)
	}
	return parseJudgement(r.Choices[0].Message.Content)
}

// parseJudgement reads a judge's answer: one JSON object of the schema, which a model that
// ignores response_format may wrap in a Markdown code fence. Anything else is an error.
func parseJudgement(content string) (safety.Verdict, error) {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var a judgement
	if err := dec.Decode(&a); err != nil || dec.More() {
		return safety.Verdict{}, fmt.Errorf("%w: the answer is not the judgement's JSON object", errNoVerdict)
	}
	v := safety.Verdict{Concern: safety.Concern(a.Concern), Rules: []string{JudgeRulePrefix + a.Concern}}
	cat := safety.Category(a.Category)
	switch v.Concern {
	case safety.ConcernSelf:
		switch cat {
		case safety.CategorySuicide, safety.CategorySelfHarm, safety.CategoryAbuse, safety.CategoryDanger:
		default:
			// The learner's own risk of a kind the judge did not name is read as the gravest.
			cat = safety.CategorySuicide
		}
		v.Crisis, v.Categories, v.Severity = true, []safety.Category{cat}, max(a.Severity, safety.SeverityHigh)
	case safety.ConcernOther:
		v.Crisis, v.Categories, v.Severity = true, []safety.Category{safety.CategoryConcernOther}, safety.SeverityConcern
	case safety.ConcernTopic:
	case "none":
		v.Concern = safety.ConcernNone
	default:
		return safety.Verdict{}, fmt.Errorf("%w: concern %q is not self, other, topic or none", errNoVerdict, a.Concern)
	}
	return v, nil
}
