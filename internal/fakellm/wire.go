package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// wireRequest is the part of an OpenAI chat-completions request the server reads.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []wireToolCall  `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseRequest decodes body. The returned Request is never nil and keeps Raw even when the body
// is not a valid request.
func parseRequest(body []byte) (*Request, error) {
	req := &Request{Raw: body}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return req, errors.New("the request body is not a chat-completions request: " + err.Error())
	}
	req.Model, req.Stream = wr.Model, wr.Stream
	req.IncludeUsage = wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
	for _, m := range wr.Messages {
		content, err := messageText(m.Content)
		if err != nil {
			return req, err
		}
		msg := Message{Role: m.Role, Content: content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	// tool_choice is "none", "auto", "required" or an object naming the function to call.
	var choice struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(wr.ToolChoice) > 0 && wr.ToolChoice[0] == '{' {
		if err := json.Unmarshal(wr.ToolChoice, &choice); err != nil {
			return req, errors.New("tool_choice: " + err.Error())
		}
		req.ToolChoice = choice.Function.Name
	}
	if rf := wr.ResponseFormat; rf != nil && (rf.Type == "json_schema" || rf.Type == "json_object") {
		req.ResponseFormat = rf.Type
	}
	return req, nil
}

// messageText returns a message content that is a string, null, or an array of parts whose text
// parts it joins.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("message content: " + err.Error())
	}
	var b bytes.Buffer
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// Response shapes, field for field in the order OpenAI writes them.

type chunkJSON struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []choiceDelta `json:"choices"`
	Usage   *usageJSON    `json:"usage,omitempty"`
	// Obfuscation pads a chunk, as OpenAI does to hide token lengths; here it makes long lines.
	Obfuscation string `json:"obfuscation,omitempty"`
}

type choiceDelta struct {
	Index        int       `json:"index"`
	Delta        deltaJSON `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type deltaJSON struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type completionJSON struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []messageChoice `json:"choices"`
	Usage   usageJSON       `json:"usage"`
}

type messageChoice struct {
	Index        int         `json:"index"`
	Message      messageJSON `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type messageJSON struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

// meta is what every chunk of one response repeats.
type meta struct {
	id      string
	created int64
	model   string
}

func (m meta) chunk(d deltaJSON, finish *string) chunkJSON {
	return chunkJSON{
		ID: m.id, Object: "chat.completion.chunk", Created: m.created, Model: m.model,
		Choices: []choiceDelta{{Delta: d, FinishReason: finish}},
	}
}

// completion returns the non-streamed answer to req.
func completion(req *Request, rep Reply, m meta) []byte {
	content, args := replyTexts(rep)
	msg := messageJSON{Role: "assistant"}
	finish := "stop"
	if content != "" || rep.ToolCall == nil {
		msg.Content = &content
	}
	if tc := rep.ToolCall; tc != nil {
		var w wireToolCall
		w.ID, w.Type = toolCallID(tc, m), "function"
		w.Function.Name, w.Function.Arguments = tc.Name, args
		msg.ToolCalls = []wireToolCall{w}
		finish = "tool_calls"
	}
	return encode(completionJSON{
		ID: m.id, Object: "chat.completion", Created: m.created, Model: m.model,
		Choices: []messageChoice{{Message: msg, FinishReason: finish}},
		Usage:   usage(req, content+args),
	})
}

// replyTexts returns the whole content and tool-call arguments rep answers with.
func replyTexts(rep Reply) (content, args string) {
	content = rep.Content
	if rep.ToolCall != nil {
		args = rep.ToolCall.Arguments
	}
	if rep.Chunks != nil {
		joined := strings.Join(rep.Chunks, "")
		if rep.ToolCall != nil {
			args = joined
		} else {
			content = joined
		}
	}
	return content, args
}

// toolCallID returns the reply's call id, or one derived from the response id.
func toolCallID(tc *ToolCall, m meta) string {
	if tc.ID != "" {
		return tc.ID
	}
	const n = len("chatcmpl-")
	return "call_" + m.id[n:n+24]
}

// usage estimates token counts the way a tokenizer roughly would: four bytes a token.
func usage(req *Request, out string) usageJSON {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)/4 + 4
	}
	u := usageJSON{PromptTokens: in, CompletionTokens: (len(out) + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomID(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[rng.IntN(len(idAlphabet))]
	}
	return string(b)
}

// encode marshals v without escaping HTML characters, as OpenAI's JSON does not.
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("fakellm: encoding a response: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body := encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers with status and an error body shaped like OpenAI's for that status.
func writeError(w http.ResponseWriter, status int, message string) {
	typ, code := "server_error", ""
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case status < 500:
		typ = "invalid_request_error"
	}
	var c *string
	if code != "" {
		c = &code
	}
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{apiError{Message: message, Type: typ, Code: c}})
}

func itoa(n int) string { return strconv.Itoa(n) }
