package openai

import (
	"errors"
	"slices"
	"strings"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
)

// Settings a downgrade weakens, as Downgrade.Setting names them.
const (
	SettingToolChoice     = "tool_choice"
	SettingResponseFormat = "response_format"
	SettingIncludeUsage   = "include_usage"
)

// maxDowngrades bounds the requests Stream sends again after a rejection: one for each
// setting.
const maxDowngrades = 3

// Downgrade reports that an endpoint rejected part of a request as unsupported, and that its
// Client sends a weaker form of that part from now on.
type Downgrade struct {
	// Endpoint is Config.Name.
	Endpoint string
	// Setting is SettingToolChoice, SettingResponseFormat or SettingIncludeUsage.
	Setting string
	// From and To are the setting's values before and after, as the configuration names them
	// ("named", "required", "none"; "json_schema", "json_object", "prompt"; "true", "false").
	From, To string
	// Reason is the endpoint's error, with the API key scrubbed, cut to maxReason bytes.
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

// weaker returns sh with setting one step weaker, and false when it is as weak as it gets.
func (sh shape) weaker(setting string) (shape, string, string, bool) {
	switch setting {
	case SettingToolChoice:
		if sh.tool == ToolNone {
			return sh, "", "", false
		}
		from := sh.tool.String()
		sh.tool++
		return sh, from, sh.tool.String(), true
	case SettingResponseFormat:
		if sh.format == FormatPrompt {
			return sh, "", "", false
		}
		from := sh.format.String()
		sh.format++
		return sh, from, sh.format.String(), true
	case SettingIncludeUsage:
		if !sh.usage {
			return sh, "", "", false
		}
		sh.usage = false
		return sh, "true", "false", true
	}
	return sh, "", "", false
}

// sent lists the settings of sh that a request for req actually sends, whose rejection a
// weaker form could avoid.
func (sh shape) sent(req coach.ModelRequest) []string {
	var out []string
	if sh.usage {
		out = append(out, SettingIncludeUsage)
	}
	if req.Tool != nil && sh.tool != ToolNone {
		return append(out, SettingToolChoice)
	}
	if (req.Schema != nil || req.Tool != nil) && sh.format != FormatPrompt {
		out = append(out, SettingResponseFormat)
	}
	return out
}

// downgrade handles err, the failure of a request for req sent in shape *used. When err is a
// 400 that names a setting the request sent, it makes the Client send a weaker form of that
// setting from now on, tells OnDowngrade, and reports true: the request is worth sending
// again. A 400 for anything else (a refusal, see ClassRefused, or a message the endpoint
// cannot read) is the request's own fault and reports false.
func (c *Client) downgrade(used *shape, req coach.ModelRequest, err *coach.ModelError) bool {
	if err.Class == ClassRefused {
		return false // the context length or the content policy: no shape avoids that
	}
	setting := rejectedSetting(err.Err, used.sent(req))
	if setting == "" {
		return false
	}
	next, from, to, ok := used.weaker(setting)
	if !ok {
		return false
	}
	if !c.shape.CompareAndSwap(used, &next) {
		// Another request downgraded meanwhile: this one tries the shape that is current now.
		return true
	}
	if c.onDowngrade != nil {
		reason := c.fail(err).Err.Error()
		if len(reason) > maxReason {
			reason = strings.ToValidUTF8(reason[:maxReason], "") + "…"
		}
		c.onDowngrade(Downgrade{Endpoint: c.name, Setting: setting, From: from, To: to, Reason: reason})
	}
	return true
}

// settingWords are the words by which a 400 names the setting it rejects, in its param, code
// or message.
var settingWords = []struct {
	setting string
	words   []string
}{
	{SettingIncludeUsage, []string{"stream_options", "include_usage"}},
	{SettingToolChoice, []string{"tool_choice", "tools", "tool choice", "tool use", "tool call", "function call"}},
	{SettingResponseFormat, []string{"response_format", "json_schema", "json_object", "response_schema", "structured output"}},
}

// rejectedSetting returns the one of sent that err, an HTTP 400, says the endpoint does not
// support, or "".
func rejectedSetting(err error, sent []string) string {
	if httpStatus(err) != 400 || len(sent) == 0 {
		return ""
	}
	// The error is go-openai's: an *APIError, or a *RequestError with the body when the body
	// is not OpenAI's error object (LM Studio's {"error":"…"}), which may wrap an empty one.
	var text strings.Builder
	var ae *oai.APIError
	var re *oai.RequestError
	if errors.As(err, &re) {
		text.Write(re.Body)
	}
	if errors.As(err, &ae) {
		text.WriteString(" " + ae.Message + " " + ae.Type)
		if ae.Param != nil {
			text.WriteString(" " + *ae.Param)
		}
		if code, ok := ae.Code.(string); ok {
			text.WriteString(" " + code)
		}
	}
	msg := strings.ToLower(text.String())
	for _, sw := range settingWords {
		if !slices.Contains(sent, sw.setting) {
			continue
		}
		for _, w := range sw.words {
			if strings.Contains(msg, w) {
				return sw.setting
			}
		}
	}
	return ""
}
