package openai

import (
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// Settings a downgrade weakens, as Downgrade.Setting names them.
const (
	SettingToolChoice        = "tool_choice"
	SettingResponseFormat    = "response_format"
	SettingIncludeUsage      = "include_usage"
	SettingSchemaBounds      = "schema_bounds"
	SettingParallelToolCalls = "parallel_tool_calls"
	SettingCompletionCap     = "completion_cap"
)

// maxDowngrades bounds the requests Stream sends again after a rejection: one for each
// setting, and one more for the two steps of response_format (bounds, then the format).
const maxDowngrades = 6

// Downgrade reports that an endpoint rejected part of a request as unsupported, and that its
// Client sends a weaker form of that part from now on, until Config.DowngradeTTL has passed.
type Downgrade struct {
	// Endpoint is Config.Name.
	Endpoint string
	// Setting is one of the Setting constants.
	Setting string
	// From and To are the setting's values before and after, as the configuration names them
	// ("named", "required", "none"; "json_schema", "json_object", "prompt"; "true", "false";
	// "kept", "dropped"; "sent", "not sent").
	From, To string
	// Reason is the endpoint's error, with the API key scrubbed, cut to maxReason bytes, or
	// what the Client saw instead (prose where the tool call was forced).
	Reason string
}

// maxReason bounds Downgrade.Reason: an error body may be 64 KiB, a log line should not.
const maxReason = 500

// String describes the shape as the configuration would set it.
func (s *shape) String() string {
	usage := "false"
	if s.usage {
		usage = "true"
	}
	return "toolChoice=" + s.tool.String() + " responseFormat=" + s.format.String() + " includeUsage=" + usage
}

// weaker returns sh with setting one step weaker, the setting that changed (a rejected
// response_format first loses the schema's bounds, which older strict modes refuse), its
// values before and after, and false when it is as weak as it gets.
func (sh shape) weaker(setting string) (next shape, changed, from, to string, ok bool) {
	switch setting {
	case SettingToolChoice:
		if sh.tool == ToolNone {
			return sh, "", "", "", false
		}
		from := sh.tool.String()
		sh.tool++
		return sh, setting, from, sh.tool.String(), true
	case SettingResponseFormat, SettingSchemaBounds:
		if sh.format == FormatJSONSchema && sh.bounds != 0 {
			sh.bounds = 0
			return sh, SettingSchemaBounds, "kept", "dropped", true
		}
		if setting == SettingSchemaBounds || sh.format == FormatPrompt {
			return sh, "", "", "", false
		}
		from := sh.format.String()
		sh.format++
		return sh, SettingResponseFormat, from, sh.format.String(), true
	case SettingIncludeUsage:
		if !sh.usage {
			return sh, "", "", "", false
		}
		sh.usage = false
		return sh, setting, "true", "false", true
	case SettingParallelToolCalls:
		if !sh.oneCall {
			return sh, "", "", "", false
		}
		sh.oneCall = false
		return sh, setting, "sent", "not sent", true
	case SettingCompletionCap:
		if !sh.cap {
			return sh, "", "", "", false
		}
		sh.cap = false
		return sh, setting, "sent", "not sent", true
	}
	return sh, "", "", "", false
}

// sent lists the settings of sh that a request for req actually sends, whose rejection a
// weaker form could avoid.
func (c *Client) sent(sh shape, req coach.ModelRequest) []string {
	var out []string
	if sh.usage {
		out = append(out, SettingIncludeUsage)
	}
	if sh.cap && c.completionCap(req) > 0 {
		out = append(out, SettingCompletionCap)
	}
	if req.Tool != nil && sh.tool != ToolNone {
		if sh.oneCall {
			out = append(out, SettingParallelToolCalls)
		}
		return append(out, SettingToolChoice)
	}
	if (req.Schema != nil || req.Tool != nil) && sh.format != FormatPrompt {
		out = append(out, SettingResponseFormat)
	}
	return out
}

// completionCap is the cap req is sent with: the Config's override, else the request's own.
func (c *Client) completionCap(req coach.ModelRequest) int {
	if c.maxTokens > 0 {
		return c.maxTokens
	}
	return req.MaxTokens
}

// current returns the shape to send now: the weakened one until its downgrades expire, then
// the configured one again, which re-probes whether the endpoint still rejects it.
func (c *Client) current() *shape {
	sh := c.shape.Load()
	if sh == c.base {
		return sh
	}
	if exp := c.expires.Load(); exp != 0 && c.now().UnixNano() >= exp && c.shape.CompareAndSwap(sh, c.base) {
		c.expires.Store(0)
		return c.base
	}
	return sh
}

// weaken makes the Client send next in place of *used from now on and tells OnDowngrade. It
// reports false when another request changed the shape meanwhile; that request's shape is
// then current, and worth trying.
func (c *Client) weaken(used *shape, next shape, d Downgrade) bool {
	if !c.shape.CompareAndSwap(used, &next) {
		return false
	}
	c.expires.Store(c.now().Add(c.ttl).UnixNano())
	if c.onDowngrade != nil {
		d.Endpoint = c.name
		if len(d.Reason) > maxReason {
			d.Reason = strings.ToValidUTF8(d.Reason[:maxReason], "") + "…"
		}
		c.onDowngrade(d)
	}
	return true
}

// downgrade handles err, the failure of a request for req sent in shape *used. When err is a
// 400 that names a setting the request sent, it makes the Client send a weaker form of that
// setting from now on, tells OnDowngrade, and reports true: the request is worth sending
// again. A 400 for anything else (a refusal, see ClassRefused, or a message the endpoint
// cannot read) is the request's own fault and reports false.
func (c *Client) downgrade(used *shape, req coach.ModelRequest, err *coach.ModelError) bool {
	setting := rejectedSetting(err.Err, c.sent(*used, req), sentTexts(req))
	if setting == "" || err.Class == ClassRefused && setting != SettingCompletionCap {
		// The context length or the content policy: no shape avoids that. A cap too large
		// for the context is a refusal by its words, but sending no cap avoids it.
		return false
	}
	next, changed, from, to, ok := used.weaker(setting)
	if !ok {
		return false
	}
	c.weaken(used, next, Downgrade{Setting: changed, From: from, To: to, Reason: c.fail(err).Err.Error()})
	return true
}

// settingWords are the words by which a 400 names the setting it rejects, in its param, code
// or message. Longer names come first: "parallel_tool_calls" before "tool call".
//
// A refusal of a schema names the schema or the grammar compiled from it, not the setting
// that carried it: llama-server answers "Failed to initialize samplers: failed to parse
// grammar" to a repetition its grammar refuses, vLLM "The provided JSON schema contains
// features not supported by xgrammar." or "Failed to transform json schema into a grammar".
// Such a refusal weakens whichever of the two carried the schema: the forced tool's
// parameters (asked for as structured output instead) or the response format (its bounds
// first, then the format).
var settingWords = []struct {
	setting string
	words   []string
}{
	{SettingIncludeUsage, []string{"stream_options", "include_usage"}},
	{SettingParallelToolCalls, []string{"parallel_tool_calls"}},
	{SettingCompletionCap, []string{"max_completion_tokens", "max_tokens"}},
	{SettingToolChoice, []string{"tool_choice", "tools", "tool choice", "tool use", "tool call", "function call", "grammar", "schema"}},
	{SettingResponseFormat, []string{"response_format", "json_schema", "json_object", "response_schema", "structured output", "grammar", "schema"}},
}

// rejectedSetting returns the one of sent that err, an HTTP 400, says the endpoint does not
// support, or "". The structured error decides first: its param and code are the endpoint's
// own words. Its message (and a body that is not OpenAI's error object) count only where
// they cannot be the learner's words: not when they echo what the request sent (learner
// holds the texts of its messages, see sentTexts), and never by a phrase the learner wrote.
// Otherwise three learner messages quoting "stream_options", "json_schema" and "json_object"
// to an endpoint that echoes requests in its 400s would weaken the endpoint for every tenant.
func rejectedSetting(err error, sent []string, learner []string) string {
	if httpStatus(err) != 400 || len(sent) == 0 {
		return ""
	}
	// The error is go-openai's: an *APIError, or a *RequestError with the body when the body
	// is not OpenAI's error object (LM Studio's {"error":"…"}), which may wrap an empty one.
	var structured, text strings.Builder
	var ae *oai.APIError
	var re *oai.RequestError
	if errors.As(err, &re) {
		text.Write(re.Body)
	}
	if errors.As(err, &ae) {
		text.WriteString(" " + ae.Message + " " + ae.Type)
		if ae.Param != nil {
			structured.WriteString(" " + *ae.Param)
		}
		if code, ok := ae.Code.(string); ok {
			structured.WriteString(" " + code)
		}
	}
	if s := matchSetting(strings.ToLower(structured.String()), sent, nil); s != "" {
		return s
	}
	msg := strings.ToLower(text.String())
	if echoes(msg, learner) {
		return ""
	}
	return matchSetting(msg, sent, learner)
}

// matchSetting returns the first of sent that msg names by one of its words, leaving out
// words that occur in any of learner.
func matchSetting(msg string, sent, learner []string) string {
	for _, sw := range settingWords {
		if !slices.Contains(sent, sw.setting) {
			continue
		}
		for _, w := range sw.words {
			if strings.Contains(msg, w) && !anyContains(learner, w) {
				return sw.setting
			}
		}
	}
	return ""
}

// sentTexts returns the texts of req's messages, lower-cased: what an endpoint could echo
// back of a learner's words (messages, drafts in the system prompt, earlier answers).
func sentTexts(req coach.ModelRequest) []string {
	out := make([]string, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Content != "" {
			out = append(out, strings.ToLower(m.Content))
		}
		for _, tc := range m.ToolCalls {
			out = append(out, strings.ToLower(tc.Arguments))
		}
	}
	return out
}

// anyContains reports whether any of texts contains w.
func anyContains(texts []string, w string) bool {
	for _, t := range texts {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// echoProbe is how much of a message's start echoes looks for; shorter messages (a "yes")
// would match by chance.
const (
	echoProbe    = 64
	minEchoProbe = 16
)

// echoes reports whether msg, an error's lower-cased text, quotes one of texts: the start of
// a message as it was sent, or JSON-escaped as a quoted request body holds it. Such an error
// speaks partly in the learner's words, so only its structured fields are believed.
func echoes(msg string, texts []string) bool {
	for _, t := range texts {
		if len(t) < minEchoProbe {
			continue
		}
		probe := strings.ToValidUTF8(t[:min(len(t), echoProbe)], "")
		if strings.Contains(msg, probe) {
			return true
		}
		quoted := string(ndjson.AppendString(nil, probe))
		quoted = quoted[1 : len(quoted)-1]
		if quoted != probe && strings.Contains(msg, quoted) {
			return true
		}
	}
	return false
}

// callWatch passes on a stream of a request that forced a tool call with "required", and
// watches whether the model made the call. A stream that ends with prose and no call shows an endpoint where the
// forced choice does not force (llama-server's grammar allows any text before a call, Ollama
// ignores tool_choice): the Client then asks that endpoint for the tool's arguments as
// structured output (ToolNone), as its profile would for an endpoint that ignores tools, for
// Config.DowngradeTTL, like a downgrade.
//
// One learner can talk a model out of a call it was merely asked for, so one such stream is
// not evidence about the endpoint: the switch waits until streams of proseQuorum different
// callers (coach.ModelRequest.Caller) ended in prose within Config.DowngradeTTL.
type callWatch struct {
	coach.Stream
	c          *Client
	used       *shape
	caller     string
	call, text bool
}

// proseQuorum is how many different callers' streams must end in prose instead of a forced
// call before the endpoint is asked for structured output instead.
const proseQuorum = 3

// proseVotes remembers the callers whose streams ended in prose instead of a forced call, each
// until the Client's downgrade TTL has passed since.
type proseVotes struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// vote records caller at now and reports whether proseQuorum different callers voted within
// ttl; a quorum is spent, so the next switch needs new votes.
func (v *proseVotes) vote(caller string, now time.Time, ttl time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil {
		v.seen = make(map[string]time.Time, proseQuorum)
	}
	for k, at := range v.seen {
		if now.Sub(at) >= ttl {
			delete(v.seen, k)
		}
	}
	v.seen[caller] = now
	if len(v.seen) < proseQuorum {
		return false
	}
	clear(v.seen)
	return true
}

// Next passes on the stream's next fragment.
func (w *callWatch) Next() (coach.Fragment, error) {
	f, err := w.Stream.Next()
	switch {
	case err == nil:
		w.call = w.call || f.ToolArgs != "" || f.ToolName != "" || f.ToolCallID != ""
		w.text = w.text || strings.TrimSpace(f.Content) != ""
	case err == io.EOF && w.text && !w.call:
		if !w.c.prose.vote(w.caller, w.c.now(), w.c.ttl) {
			w.text = false
			break
		}
		if next, _, from, to, ok := w.used.weaker(SettingToolChoice); ok {
			for next.tool != ToolNone {
				next, _, _, _, _ = next.weaker(SettingToolChoice)
			}
			to = next.tool.String()
			w.c.weaken(w.used, next, Downgrade{Setting: SettingToolChoice, From: from, To: to,
				Reason: "the model answered in prose instead of the forced " + SettingToolChoice + " call"})
		}
		w.text = false // once per stream
	}
	return f, err
}

// NotifiesWait passes on whether the stream calls its Wait hook (coach.WaitNotifier).
func (w *callWatch) NotifiesWait() bool {
	wn, ok := w.Stream.(coach.WaitNotifier)
	return ok && wn.NotifiesWait()
}
