package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
)

// errCut reports a stream whose body ended cleanly but before the endpoint said it was done.
// go-openai returns the same io.EOF for "data: [DONE]" and for a plain end of the body, so
// without this check a connection cut between two chunks would pass for a complete answer.
var errCut = errors.New("the stream ended before the model finished (no finish_reason and no [DONE])")

// stream is a coach.Stream over a go-openai chat completion stream. It is also the exchange
// that the doer fills in for the request that opened it (see exchangeKey).
type stream struct {
	c   *Client
	ctx context.Context
	st  *oai.ChatCompletionStream

	// body, errBody and retryAfter are set by doer.Do, which runs inside
	// CreateChatCompletionStream on the goroutine that called Stream, before they are read.
	body       *sseBody
	errBody    io.Closer
	retryAfter time.Duration

	// calls holds the tool calls of the current chunk not yet returned, from index next on;
	// finish is that chunk's finish reason, which goes on the last of them.
	calls  []oai.ToolCall
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
		resp, err := s.st.Recv()
		if err != nil {
			s.err = s.end(err)
			return coach.Fragment{}, s.err
		}
		if len(resp.Choices) == 0 {
			continue // e.g. the usage chunk, or an Azure prompt-filter chunk
		}
		ch := &resp.Choices[0]
		f := coach.Fragment{Content: ch.Delta.Content, FinishReason: string(ch.FinishReason)}
		if f.FinishReason != "" {
			s.finished = true
		}
		if calls := ch.Delta.ToolCalls; len(calls) > 0 {
			setCall(&f, &calls[0])
			if len(calls) > 1 {
				s.calls, s.next, s.finish = calls, 1, f.FinishReason
				f.FinishReason = ""
			}
		}
		return f, nil
	}
}

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

func setCall(f *coach.Fragment, tc *oai.ToolCall) {
	f.ToolCallID, f.ToolName, f.ToolArgs = tc.ID, tc.Function.Name, tc.Function.Arguments
}

// end turns the error that ended Recv into what Next reports.
func (s *stream) end(err error) error {
	if err == io.EOF {
		if s.finished || s.body != nil && s.body.done {
			return io.EOF
		}
		err = errCut
	}
	return s.c.fail(classify(s.ctx, err, true))
}

// Close releases the connection; only the first call does anything.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.st.Close()
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

// Do sends req. It marks req idempotent so that the transport itself resends it when a reused
// keep-alive connection turns out to be dead, instead of failing the turn into the engine's
// slower backoff; a nil value marks the request without sending the header.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	req.Header["X-Idempotency-Key"] = nil
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	s, _ := req.Context().Value(exchangeKey{}).(*stream)
	if s == nil {
		return resp, nil
	}
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		b := &sseBody{rc: resp.Body, max: d.maxLine, alive: coach.Activity(s.ctx)}
		resp.Body, s.body = b, b
		return resp, nil
	}
	s.retryAfter = retryAfter(resp.Header, d.now())
	resp.Body = &limitedBody{Reader: io.LimitReader(resp.Body, maxErrorBody), Closer: resp.Body}
	s.errBody = resp.Body
	return resp, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// doneLine is the longest line sseBody checks for "data: [DONE]"; the slack allows extra spaces.
const doneLine = 24

// sseBody watches a streaming response body on its way to go-openai's line reader: it fails
// the read once a line grows past max, and notes a "data: [DONE]" line. It scans the bytes
// go-openai buffers anyway and allocates nothing.
type sseBody struct {
	rc  io.ReadCloser
	max int
	// n is the length of the current line so far; head holds its first bytes.
	n    int
	head [doneLine]byte
	done bool
	err  error
	// alive, when set, is told of every read that brought bytes (see coach.Activity).
	alive func()
}

func (b *sseBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if n > 0 && b.alive != nil {
		b.alive()
	}
	if serr := b.scan(p[:n]); serr != nil {
		b.err = serr
		return n, serr
	}
	return n, err
}

func (b *sseBody) scan(p []byte) error {
	for {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if b.n < len(b.head) {
			copy(b.head[b.n:], seg)
		}
		b.n += len(seg)
		if b.n > b.max {
			return fmt.Errorf("a stream line is longer than %d bytes", b.max)
		}
		if i < 0 {
			return nil
		}
		if b.n <= len(b.head) && isDone(b.head[:b.n]) {
			b.done = true
		}
		b.n = 0
		p = p[i+1:]
	}
}

// isDone matches the line go-openai treats as the end: "data:", optional space, "[DONE]".
func isDone(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	return ok && string(bytes.TrimLeft(rest, " \t")) == "[DONE]"
}

// drainBudget bounds how long Close waits for the rest of a body after [DONE].
const drainBudget = 50 * time.Millisecond

// Close closes the body. After [DONE] it first reads what is left (normally only the end of
// the chunked encoding, already buffered), because go-openai stops reading at [DONE] and
// net/http drops a connection whose body was closed unread: every turn would dial anew. A
// server that keeps the body open after [DONE] costs at most drainBudget, never the turn.
func (b *sseBody) Close() error {
	if b.done && b.err == nil {
		drained := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, io.LimitReader(b.rc, 4<<10))
			close(drained)
		}()
		t := time.NewTimer(drainBudget)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
	}
	return b.rc.Close()
}
