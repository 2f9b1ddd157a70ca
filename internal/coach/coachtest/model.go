package coachtest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/coachgw/coachgw/internal/coach"
)

// Reply is the scripted answer to one model call: fragments streamed in order, or an error
// returned before the stream starts.
type Reply struct {
	frags []coach.Fragment
	err   error
}

// Content returns a reply that streams s as assistant text in fragments of size bytes, cutting
// through escapes and UTF-8 sequences alike, as a real stream may; size <= 0 sends s whole.
func Content(s string, size int) Reply {
	var r Reply
	for size > 0 && len(s) > size {
		r.frags = append(r.frags, coach.Fragment{Content: s[:size]})
		s = s[size:]
	}
	if s != "" {
		r.frags = append(r.frags, coach.Fragment{Content: s})
	}
	return r
}

// Fragments returns a reply that streams frags as they are (tool-call arguments, finish
// reasons and all).
func Fragments(frags ...coach.Fragment) Reply {
	return Reply{frags: slices.Clone(frags)}
}

// Fail returns a reply whose call fails with err before it streams; the coach.Model port wants
// such errors to be *coach.ModelError.
func Fail(err error) Reply {
	return Reply{err: err}
}

// Model is a scripted coach.Model: each call gets the next queued reply and every request is
// recorded. A call with no reply left fails with a non-retryable *coach.ModelError, so a test
// that makes more calls than it scripted fails on that call rather than on some later symptom.
// The zero value has no replies queued. It is safe for concurrent use.
type Model struct {
	mu       sync.Mutex
	replies  []Reply
	requests []coach.ModelRequest
}

var _ coach.Model = (*Model)(nil)

// NewModel returns a Model with replies queued.
func NewModel(replies ...Reply) *Model {
	return &Model{replies: replies}
}

// Enqueue queues replies after those already queued.
func (m *Model) Enqueue(replies ...Reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, replies...)
}

// Stream records req and plays the next reply.
func (m *Model) Stream(ctx context.Context, req coach.ModelRequest, _ coach.StreamHooks) (coach.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The engine builds a retry's messages by appending to a request's; a copy keeps the
	// recorded request as it was sent.
	req.Messages = slices.Clone(req.Messages)
	m.requests = append(m.requests, req)
	if len(m.replies) == 0 {
		return nil, &coach.ModelError{Class: "client", Err: fmt.Errorf("coachtest: no scripted reply left for call %d", len(m.requests))}
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	if r.err != nil {
		return nil, r.err
	}
	return &stream{ctx: ctx, frags: r.frags}, nil
}

// Requests returns the requests of every call so far, in order.
func (m *Model) Requests() []coach.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// Calls returns how many calls were made.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// stream plays one reply's fragments; it ends early with the context's error when the call's
// context ends, as a real stream does.
type stream struct {
	ctx   context.Context
	frags []coach.Fragment
}

func (s *stream) Next() (coach.Fragment, error) {
	if err := s.ctx.Err(); err != nil {
		return coach.Fragment{}, err
	}
	if len(s.frags) == 0 {
		return coach.Fragment{}, io.EOF
	}
	f := s.frags[0]
	s.frags = s.frags[1:]
	return f, nil
}

func (s *stream) Close() error { return nil }
