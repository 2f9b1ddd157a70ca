package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
)

// errCut reports a stream whose body ended cleanly but before the endpoint said it was done:
// without this check a connection cut between two chunks would pass for a complete answer.
var errCut = errors.New("the stream ended before the model finished (no finish_reason and no [DONE])")

// maxEmptyLines is how many lines without data in a row end a stream, as in go-openai: an
// endpoint that sends only comments or blank lines is broken, however alive it looks.
const maxEmptyLines = 300

// readBufSize is a stream's first read buffer: a typical chunk's line fits, several usually do.
// It grows for longer lines, up to the line limit.
const readBufSize = 1 << 10

// stream is a coach.Stream over a chat completion's server-sent events. go-openai sends the
// request and turns error responses into its errors; the events themselves are read here (see
// chunk for why). It is also the exchange that the doer fills in for the request that opened
// it (see exchangeKey).
type stream struct {
	c   *Client
	ctx context.Context
	// request is the encoded request body, until doer.Do takes it.
	request []byte

	// body, errBody and retryAfter are set by doer.Do, which runs inside
	// CreateChatCompletionStream on the goroutine that called Stream, before they are read.
	body       io.ReadCloser
	errBody    io.Closer
	retryAfter time.Duration
	// alive, when set, is told of every read that brought bytes; wait, when set, before every
	// read that may wait for them (see coach.StreamHooks).
	alive, wait func()

	// buf[r:w] is read but not yet consumed, and holds no newline before buf[scanned];
	// rerr is the error that ended the body.
	buf     []byte
	r, w    int
	scanned int
	rerr    error
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
	// finished records that some chunk carried a finish_reason.
	finished bool
	err      error
	closed   atomic.Bool
}

// Next returns the next fragment: choices[0] of the next chunk that has choices, one fragment
// per tool call delta. It returns io.EOF only after "data: [DONE]" or a finish_reason; any
// other end of the stream is a "stream" ModelError.
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
			continue // e.g. the usage chunk, or an Azure prompt-filter chunk
		}
		f := coach.Fragment{Content: ch.content, FinishReason: ch.finish}
		if f.FinishReason != "" {
			s.finished = true
		}
		if calls := ch.calls; len(calls) > 0 {
			setCall(&f, &calls[0])
			if len(calls) > 1 {
				s.calls, s.next, s.finish = calls, 1, f.FinishReason
				f.FinishReason = ""
			}
		}
		return f, nil
	}
}

// NotifiesWait reports whether s calls a Wait hook before its reads: when it was given one.
func (s *stream) NotifiesWait() bool { return s.wait != nil }

func (s *stream) nextCall() coach.Fragment {
	var f coach.Fragment
	setCall(&f, &s.calls[s.next])
	s.next++
	if s.next == len(s.calls) {
		f.FinishReason = s.finish
		s.calls, s.next = nil, 0
	}
	return f
}

func setCall(f *coach.Fragment, tc *toolCall) {
	f.ToolCallID, f.ToolName, f.ToolArgs = tc.id, tc.name, tc.args
}

// errorEvent starts the data of an in-stream error event, the way go-openai recognises one.
var errorEvent = []byte(`{"error":`)

// event returns the data of the next event line, valid until the next call. It reads lines as
// go-openai does: space trimmed, "data:" and the spaces after it cut, "[DONE]" the end (io.EOF),
// an error event an error, and a last line without its newline ignored.
func (s *stream) event() ([]byte, error) {
	for empty := 0; ; empty++ {
		line, err := s.line()
		if err != nil {
			if apiErr := s.junkError(); apiErr != nil {
				return nil, apiErr
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		data, ok := bytes.CutPrefix(line, dataPrefix)
		if !ok {
			if len(s.junk)+len(line) <= maxErrorBody {
				s.junk = append(s.junk, line...)
			}
			if empty >= maxEmptyLines {
				return nil, oai.ErrTooManyEmptyStreamMessages
			}
			continue
		}
		data = bytes.TrimLeft(data, " \t\n\f\r")
		switch {
		case bytes.HasPrefix(data, errorEvent):
			return nil, eventError(data)
		case string(data) == "[DONE]":
			s.done = true
			return nil, io.EOF
		}
		return data, nil
	}
}

var dataPrefix = []byte("data:")

// eventError is the error an in-stream error event reports.
func eventError(data []byte) error {
	var er oai.ErrorResponse
	if err := json.Unmarshal(data, &er); err != nil || er.Error == nil {
		return fmt.Errorf("a malformed error event in the stream: %.200q", data)
	}
	return fmt.Errorf("error, %w", er.Error)
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

// line returns the next line without its "\n", valid until the next call. A line longer than
// the limit fails as soon as it is known to be, without waiting for its end.
func (s *stream) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.scanned:s.w], '\n'); i >= 0 {
			line := s.buf[s.r : s.scanned+i]
			s.r = s.scanned + i + 1
			s.scanned = s.r
			return line, nil
		}
		s.scanned = s.w // a long line arriving in many reads is scanned once, not once per read
		if s.rerr != nil {
			return nil, s.rerr
		}
		max := s.c.http.maxLine
		if s.w-s.r > max {
			s.rerr = fmt.Errorf("a stream line is longer than %d bytes", max)
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
			grown := make([]byte, min(2*len(s.buf), max+1))
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

// exchangeKey keys the *stream in a request's context. go-openai's errors carry no response
// headers and its stream hides the body, so the doer hands both to the stream that asked.
type exchangeKey struct{}

// maxErrorBody bounds how much of an error response go-openai reads into its error.
const maxErrorBody = 64 << 10

// doer is the go-openai HTTPDoer: it wraps the http.Client and records, per request, what
// go-openai does not expose.
type doer struct {
	hc      *http.Client
	maxLine int
	now     func() time.Time
}

// Do sends req, with the body Stream encoded in place of go-openai's. It marks req idempotent
// so that the transport itself resends it when a reused keep-alive connection turns out to be
// dead, instead of failing the turn into the engine's slower backoff; a nil value marks the
// request without sending the header.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	req.Header["X-Idempotency-Key"] = nil
	s, _ := req.Context().Value(exchangeKey{}).(*stream)
	if s != nil && s.request != nil {
		setBody(req, s.request)
		s.request = nil // the open stream must not hold it (see releaseBody)
	}
	release := releaseBody(req)
	resp, err := d.hc.Do(req)
	release()
	if err != nil {
		return nil, err
	}
	if s == nil {
		return resp, nil
	}
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		s.body = resp.Body
		return resp, nil
	}
	s.retryAfter = retryAfter(resp.Header, d.now())
	resp.Body = &limitedBody{Reader: io.LimitReader(resp.Body, maxErrorBody), Closer: resp.Body}
	s.errBody = resp.Body
	return resp, nil
}

// setBody makes body the body of req, resendable as http.NewRequest makes a byte body.
func setBody(req *http.Request, body []byte) {
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
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

type limitedBody struct {
	io.Reader
	io.Closer
}
