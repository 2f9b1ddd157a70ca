package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
)

// errCut reports a stream whose body ended cleanly but before the endpoint said it was done:
// without this check a connection cut between two chunks would pass for a complete answer.
var errCut = errors.New("the stream ended before the model finished (no finish_reason and no [DONE])")

// maxPingBytes bounds the bytes an endpoint may send without an event in a row: comments,
// blank lines, fields other than data. Pings are how a server that is still reading a long
// prompt shows it is alive (llama-server sends one every 30 s), so they keep a stream going
// for as long as the turn's deadline, which the stream's context carries, allows; no count of
// them ends it. The bound only stops an endpoint that floods pings from holding a core until
// that deadline: at one short ping a second it is more than a day's worth.
const maxPingBytes = 1 << 20

// readBufSize is a stream's first read buffer: a typical chunk's line fits, several usually do.
// It grows for longer lines, up to the line limit.
const readBufSize = 1 << 10

// stream is a coach.Stream over the server-sent events of a successful response's body.
type stream struct {
	c    *Client
	ctx  context.Context
	body io.ReadCloser
	// alive, when set, is told of every read that brought bytes; wait, when set, before every
	// read that may wait for them (see coach.StreamHooks).
	alive, wait func()
	// asArgs hands content on as the arguments of the tool the request forced (see
	// contentAsArgs).
	asArgs argsFromContent

	// buf[r:w] is read but not yet consumed, and holds no CR or LF before buf[scanned];
	// rerr is the error that ended the body.
	buf     []byte
	r, w    int
	scanned int
	rerr    error
	// skipLF records that the last line ended with a CR at the end of what was read: an LF
	// that comes next belongs to that line end (CRLF).
	skipLF bool
	// begun records that the first line was read (and a byte order mark cut from it).
	begun bool
	// data is the data of the event being read (its data lines joined with LF), hasData
	// whether it had a data line, and errorType whether its type is "error".
	data      []byte
	hasData   bool
	errorType bool
	// done records "data: [DONE]".
	done bool
	// junk collects the lines that are not data, which is where an endpoint that answers a
	// stream with a plain JSON error body puts it; it is read when the body ends.
	junk []byte

	chunk chunk
	// calls holds the tool calls of the current chunk not yet returned, from index next on;
	// finish is that chunk's finish reason, which goes on the last of them.
	calls  []toolCall
	next   int
	finish string
	// tools are the answer's tool calls so far, in the order they opened.
	tools toolCalls
	// finished records that some chunk carried a finish_reason.
	finished bool
	err      error
	closed   atomic.Bool
}

// Next returns the next fragment: choices[0] of the next chunk that has choices, one fragment
// per tool call delta, with the chunk's usage if it has one; a chunk with usage but no choices
// (OpenAI's last chunk under stream_options.include_usage) is a fragment with only Usage. It
// returns io.EOF only after "data: [DONE]" or a finish_reason; any other end of the stream is a
// "stream" ModelError.
func (s *stream) Next() (coach.Fragment, error) {
	if s.next < len(s.calls) {
		return s.nextCall(), nil
	}
	if s.err != nil {
		return coach.Fragment{}, s.err
	}
	for {
		payload, err := s.event()
		if err == nil {
			err = s.chunk.decode(payload)
		}
		if err != nil {
			s.err = s.end(err)
			return coach.Fragment{}, s.err
		}
		ch := &s.chunk
		if !ch.choice {
			if ch.hasUsage {
				return coach.Fragment{Usage: ch.reported(), BadUsage: ch.badUsage}, nil
			}
			continue // e.g. an Azure prompt-filter chunk
		}
		f := coach.Fragment{Content: ch.content, FinishReason: ch.finish, Usage: ch.reported(), BadUsage: ch.badUsage}
		if f.FinishReason != "" {
			s.finished = true
		}
		if calls := ch.calls; len(calls) > 0 {
			s.tools.piece(&f, &calls[0], 0)
			if len(calls) > 1 {
				s.calls, s.next, s.finish = calls, 1, f.FinishReason
				f.FinishReason = ""
			}
		}
		s.asArgs.apply(&f)
		return f, nil
	}
}

// NotifiesWait reports whether s calls a Wait hook before its reads: when it was given one.
func (s *stream) NotifiesWait() bool { return s.wait != nil }

func (s *stream) nextCall() coach.Fragment {
	var f coach.Fragment
	s.tools.piece(&f, &s.calls[s.next], s.next)
	s.next++
	if s.next == len(s.calls) {
		f.FinishReason = s.finish
		s.calls, s.next = nil, 0
	}
	return f
}

// toolCalls assembles the pieces of an answer's tool calls the way OpenAI's streaming rule
// says: by index. Endpoints differ in everything else. vLLM with a named tool_choice and
// llama-server before b5481 repeat the name on every piece and send no id; LM Studio sends
// "name":"" and the type on every piece; DashScope sends "id":"" on later pieces; a proxy may
// number calls from 1. So a call's id and name are whatever non-empty value arrives first,
// and a repeated one is dropped, so that the fragment that names a call is the one that opens
// it. Two rules cover endpoints that break the index rule: a piece without an index belongs to
// the call with its id, or opens one when its id is new or it is not the first piece of its
// chunk, and else continues the last call; and a new id on an index whose call already has
// another one opens a new call (vLLM and lmdeploy have numbered every call 0).
type toolCalls struct {
	calls []openCall
}

// openCall is one call of the answer: the endpoint's index for it (-1 when it sent none), and
// the id and name it was given.
type openCall struct {
	wire     int
	id, name string
}

// piece sets f to the piece tc of a tool call, the pos-th in its chunk.
func (t *toolCalls) piece(f *coach.Fragment, tc *toolCall, pos int) {
	n := t.find(tc, pos)
	if n < 0 {
		wire := -1
		if tc.hasIndex {
			wire = tc.index
		}
		t.calls = append(t.calls, openCall{wire: wire})
		n = len(t.calls) - 1
	}
	c := &t.calls[n]
	f.ToolIndex, f.ToolArgs = n, tc.args
	if c.id == "" && tc.id != "" {
		c.id, f.ToolCallID = tc.id, tc.id
	}
	if c.name == "" && tc.name != "" {
		c.name, f.ToolName = tc.name, tc.name
	}
}

// find returns the position of the call tc is a piece of, or -1 when tc opens a call.
func (t *toolCalls) find(tc *toolCall, pos int) int {
	if tc.hasIndex {
		for n := len(t.calls) - 1; n >= 0; n-- {
			if c := &t.calls[n]; c.wire == tc.index {
				if tc.id != "" && c.id != "" && tc.id != c.id {
					return -1
				}
				return n
			}
		}
		return -1
	}
	if tc.id != "" {
		for n := len(t.calls) - 1; n >= 0; n-- {
			if t.calls[n].id == tc.id {
				return n
			}
		}
		if len(t.calls) > 0 && t.calls[len(t.calls)-1].id != "" {
			return -1
		}
	}
	if pos > 0 {
		return -1
	}
	return len(t.calls) - 1
}

// errorEvent starts the data of an in-stream error event, the way go-openai recognises one.
var errorEvent = []byte(`{"error":`)

// bom is UTF-8's byte order mark, which the SSE standard drops from the start of a stream.
var bom = []byte("\xEF\xBB\xBF")

// event returns the data of the next event, valid until the next call. It reads the stream as
// the SSE standard (WHATWG HTML, "Server-sent events") says: lines end with CR, LF or CRLF; a
// leading byte order mark is dropped; a line that starts with ':' is a comment; a line is a
// field "name: value" (one space after the colon dropped); the data lines of an event are
// joined with LF, and a blank line ends the event. Of the other fields, "event: error" makes
// the event an error, and "id" and "retry" are read and ignored: a stream is one completion,
// never resumed. Beyond the standard, as openai-python and go-openai do, data "[DONE]" ends
// the stream (io.EOF) and data that opens with {"error": is an error; and an event whose data
// lines arrived whole is taken even when the body ends before the blank line after it.
func (s *stream) event() ([]byte, error) {
	s.data, s.hasData, s.errorType = s.data[:0], false, false
	for idle := 0; ; {
		line, err := s.line()
		if err != nil {
			if err == io.EOF && s.hasData {
				if data, ok, err := s.dispatch(); ok || err != nil {
					return data, err
				}
			}
			if apiErr := s.junkError(); apiErr != nil {
				return nil, apiErr
			}
			return nil, err
		}
		if !s.begun {
			s.begun = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if s.hasData {
				if data, ok, err := s.dispatch(); ok || err != nil {
					return data, err
				}
			}
			s.errorType = false
			idle++
		} else if idle += len(line) + 1; line[0] != ':' {
			if data, handled, err := s.single(line); handled {
				if data != nil || err != nil {
					return data, err
				}
				continue // an event with blank data
			}
			if err := s.field(line); err != nil {
				return nil, err
			}
		}
		if idle > maxPingBytes {
			return nil, fmt.Errorf("the endpoint sent %d bytes without an event", idle)
		}
	}
}

// single is the hot path: an event of one data line whose blank line is already read, as
// nearly every endpoint frames every chunk, is dispatched in place, without copying its data.
// It reports false, consuming nothing, for any other line.
func (s *stream) single(line []byte) (data []byte, handled bool, err error) {
	value, isData := bytes.CutPrefix(line, dataPrefix)
	if !isData || s.hasData || s.errorType || s.r >= s.w {
		return nil, false, nil
	}
	switch s.buf[s.r] {
	case '\n':
		s.r++
	case '\r':
		s.r++
		if s.r < s.w && s.buf[s.r] == '\n' {
			s.r++
		} else if s.r == s.w {
			s.skipLF = true
		}
	default:
		return nil, false, nil
	}
	s.scanned = max(s.scanned, s.r)
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	owned := s.data
	s.data, s.hasData = value, true
	data, _, err = s.dispatch() // blank data, the one case it drops, comes back as nil data
	s.data = owned[:0]
	return data, true, err
}

var dataPrefix = []byte("data:")

// field reads one field line of an event.
func (s *stream) field(line []byte) error {
	name, value := line, line[len(line):]
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > s.c.maxLine {
			return fmt.Errorf("a stream event is longer than %d bytes", s.c.maxLine)
		}
		s.data, s.hasData = append(s.data, value...), true
	case "event":
		s.errorType = string(value) == "error"
	case "id", "retry":
	default:
		// Not SSE: where an endpoint that answers a stream with a plain JSON error body puts it.
		if len(s.junk)+len(line) <= maxErrorBody {
			s.junk = append(s.junk, line...)
		}
	}
	return nil
}

// dispatch ends the event read so far. It returns its data and true, or an error for an error
// event or [DONE] (io.EOF); an event whose data is blank is no chunk and is dropped (false).
func (s *stream) dispatch() ([]byte, bool, error) {
	data := bytes.TrimLeft(s.data, " \t\n\f\r")
	errorType := s.errorType
	s.data, s.hasData, s.errorType = s.data[:0], false, false
	switch {
	case len(data) == 0:
		return nil, false, nil
	case errorType || bytes.HasPrefix(data, errorEvent):
		return nil, false, eventError(data)
	case data[0] == '[' && string(bytes.TrimRight(data, " \t\n\f\r")) == "[DONE]":
		s.done = true
		return nil, false, io.EOF
	}
	return data, true, nil
}

// eventError is the error an in-stream error event reports: OpenAI's error object, or the
// bare error some endpoints send under "event: error".
func eventError(data []byte) error {
	var er oai.ErrorResponse
	if err := json.Unmarshal(data, &er); err == nil && er.Error != nil {
		return fmt.Errorf("error, %w", er.Error)
	}
	var bare oai.APIError
	if err := json.Unmarshal(data, &bare); err == nil && bare.Message != "" {
		return fmt.Errorf("error, %w", &bare)
	}
	return fmt.Errorf("a malformed error event in the stream: %.200q", data)
}

// junkError is the error that the lines without data spell, if they spell one.
func (s *stream) junkError() error {
	if len(s.junk) == 0 {
		return nil
	}
	var er oai.ErrorResponse
	if json.Unmarshal(s.junk, &er) != nil || er.Error == nil {
		return nil
	}
	return fmt.Errorf("error, %w", er.Error)
}

// line returns the next line without its end (CR, LF or CRLF), valid until the next call. A
// line longer than the limit fails as soon as it is known to be, without waiting for its end.
func (s *stream) line() ([]byte, error) {
	for {
		if s.skipLF && s.r < s.w {
			s.skipLF = false
			if s.buf[s.r] == '\n' {
				s.r++
				s.scanned = max(s.scanned, s.r)
			}
		}
		seg := s.buf[s.scanned:s.w]
		end := bytes.IndexByte(seg, '\n')
		if end >= 0 {
			if cr := bytes.IndexByte(seg[:end], '\r'); cr >= 0 {
				end = cr // a CR first: it ends the line, and the LF after it too if it is next
			}
		} else if end = bytes.IndexByte(seg, '\r'); end >= 0 {
			s.skipLF = s.scanned+end+1 == s.w // what follows the CR is not read yet
		}
		if end >= 0 {
			end += s.scanned
			line := s.buf[s.r:end]
			s.r = end + 1
			if s.buf[end] == '\r' && s.r < s.w && s.buf[s.r] == '\n' {
				s.r++
			}
			s.scanned = s.r
			return line, nil
		}
		s.scanned = s.w // a long line arriving in many reads is scanned once, not once per read
		if s.rerr != nil {
			return nil, s.rerr
		}
		limit := s.c.maxLine
		if s.w-s.r > limit {
			s.rerr = fmt.Errorf("a stream line is longer than %d bytes", limit)
			return nil, s.rerr
		}
		if s.buf == nil {
			s.buf = make([]byte, readBufSize)
		}
		if s.r > 0 {
			s.w = copy(s.buf, s.buf[s.r:s.w])
			s.r, s.scanned = 0, s.w
		}
		if s.w == len(s.buf) {
			grown := make([]byte, min(2*len(s.buf), limit+1))
			copy(grown, s.buf[:s.w])
			s.buf = grown
		}
		if s.wait != nil {
			s.wait()
		}
		n, err := s.body.Read(s.buf[s.w:])
		if n > 0 && s.alive != nil {
			s.alive()
		}
		s.w += n
		if err != nil {
			s.rerr = err
		}
	}
}

// end turns the error that ended the events into what Next reports.
func (s *stream) end(err error) error {
	if err == io.EOF {
		if s.finished || s.done {
			return io.EOF
		}
		err = errCut
	}
	return s.c.fail(classify(s.ctx, err, true))
}

// drainBudget bounds how long Close waits for the rest of a body after [DONE].
const drainBudget = 50 * time.Millisecond

// Close releases the connection; only the first call does anything. After [DONE] it first
// reads what is left of the body (normally only the end of the chunked encoding, already
// buffered), because net/http drops a connection whose body was closed unread: every turn
// would dial anew. A server that keeps the body open after [DONE] costs at most drainBudget,
// never the turn.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.done && s.rerr == nil {
		drained := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, io.LimitReader(s.body, 4<<10))
			close(drained)
		}()
		t := time.NewTimer(drainBudget)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
	}
	return s.body.Close()
}

// maxErrorBody bounds how much of an error response is read into its error.
const maxErrorBody = 64 << 10

// errorResponse reads an error response into the error go-openai would return for it: its
// *APIError when the body is OpenAI's error object, else a *RequestError with the body.
func errorResponse(resp *http.Response) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var er oai.ErrorResponse
	if err == nil {
		err = json.Unmarshal(body, &er)
	}
	if err != nil || er.Error == nil {
		re := &oai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Err: err, Body: body}
		if er.Error != nil {
			re.Err = er.Error
		}
		return re
	}
	er.Error.HTTPStatus, er.Error.HTTPStatusCode = resp.Status, resp.StatusCode
	return er.Error
}

// releaseBody lets the marshalled request (several KiB: the system prompt, the schema, the
// history) be collected once it is sent, rather than live as long as the stream: net/http keeps
// the request, and with it its body and GetBody, until the response body is closed. req's body
// lets go of its bytes when the transport closes it after writing, and GetBody, which the
// transport calls only before Do returns, to resend on a dead keep-alive connection, lets go of
// them when the returned func is called.
func releaseBody(req *http.Request) (release func()) {
	if req.Body == nil {
		return func() {}
	}
	req.Body = &sentBody{rc: req.Body}
	if req.GetBody == nil {
		return func() {}
	}
	orig := req.GetBody
	req.GetBody = func() (io.ReadCloser, error) {
		if orig == nil {
			return nil, errBodyReleased
		}
		rc, err := orig()
		if err != nil {
			return nil, err
		}
		return &sentBody{rc: rc}, nil
	}
	return func() { orig = nil }
}

var errBodyReleased = errors.New("the request body was released after its response arrived")

// sentBody is a request body that drops what it reads from once it is closed.
type sentBody struct{ rc io.ReadCloser }

func (b *sentBody) Read(p []byte) (int, error) {
	if b.rc == nil {
		return 0, io.EOF
	}
	return b.rc.Read(p)
}

func (b *sentBody) Close() error {
	rc := b.rc
	b.rc = nil
	if rc == nil {
		return nil
	}
	return rc.Close()
}

// argsFromContent hands content on as the arguments of the tool a request forced. It serves
// two cases, so that a contract that forces a tool never learns how the endpoint was asked:
// a request in shape ToolNone asked for the arguments as content, so the first JSON object in
// it is the arguments, whatever surrounds it (a markdown fence, a word of preamble); and an
// endpoint that ignores a forced tool choice (Ollama, and LM Studio with some models) may
// write the call's JSON as content, which counts as the arguments when it opens with '{'
// before any tool call arrived. The first fragment it changes opens the call with the tool's
// name (its id is left to the contract); the arguments end with the object, and what follows
// stays content.
type argsFromContent struct {
	// tool is the forced tool's name; "" changes nothing.
	tool string
	// always looks for the arguments in all content.
	always bool
	state  argsState
	// depth counts the object's open objects and arrays; inString and escaped say where in a
	// string the scan stands, so that braces in strings do not count.
	depth             int
	inString, escaped bool
}

type argsState uint8

const (
	argsUndecided argsState = iota
	argsTaken               // content is handed on as the arguments
	argsLeft                // content stays content
)

// contentAsArgs returns the argsFromContent of a request for req sent in shape sh.
func contentAsArgs(req coach.ModelRequest, sh shape) argsFromContent {
	if req.Tool == nil {
		return argsFromContent{}
	}
	return argsFromContent{tool: req.Tool.Name, always: sh.tool == ToolNone}
}

// apply moves f's content into its tool arguments where it belongs there.
func (a *argsFromContent) apply(f *coach.Fragment) {
	if a.tool == "" || a.state == argsLeft {
		return
	}
	if f.ToolCallID != "" || f.ToolName != "" || f.ToolArgs != "" {
		if a.state == argsUndecided {
			a.state = argsLeft // the model called the tool after all
		}
		return
	}
	text := f.Content
	if text == "" {
		return
	}
	if a.state == argsUndecided {
		open := strings.IndexByte(text, '{')
		if !a.always {
			trimmed := strings.TrimLeft(text, " \t\r\n")
			if trimmed == "" {
				return
			}
			if trimmed[0] != '{' {
				a.state = argsLeft
				return
			}
		}
		if open < 0 {
			f.Content = "" // what precedes the object: a fence, or a word of preamble
			return
		}
		a.state = argsTaken
		f.ToolName = a.tool
		text = text[open:]
	}
	end := a.scan(text)
	f.ToolArgs, f.Content = text[:end], text[end:]
	if end < len(text) || a.depth == 0 {
		a.state = argsLeft
	}
}

// scan follows text through the object and returns where the object ends in it, or len(text)
// when it goes on.
func (a *argsFromContent) scan(text string) int {
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case a.inString:
			switch {
			case a.escaped:
				a.escaped = false
			case c == '\\':
				a.escaped = true
			case c == '"':
				a.inString = false
			}
		case c == '"':
			a.inString = true
		case c == '{' || c == '[':
			a.depth++
		case c == '}' || c == ']':
			a.depth--
			if a.depth == 0 {
				return i + 1
			}
		}
	}
	return len(text)
}
