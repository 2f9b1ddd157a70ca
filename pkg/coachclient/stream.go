package coachclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// Errors of reading a stream.
var (
	// ErrLineTooLong ends a stream with a line longer than the client's limit (see
	// WithMaxLineBytes). The reader stops as soon as the limit is passed rather than waiting
	// for the line's end.
	ErrLineTooLong = errors.New("coachclient: stream line too long")
	// ErrTruncated ends a stream that stopped before its result or error line: the connection
	// was cut, or something between the gateway and the client ended the body early.
	ErrTruncated = errors.New("coachclient: stream ended before its result or error line")
	// ErrMalformed is wrapped by the error of a line that is not a JSON object with a string
	// "type", or a line of a known type without the members its type requires. The gateway
	// never sends one.
	ErrMalformed = errors.New("coachclient: malformed stream line")
	// ErrClosed is returned by Next after Close.
	ErrClosed = errors.New("coachclient: stream closed")
)

// maxReadBuffer bounds the read buffer: lines longer than that are gathered from several reads,
// so a stream does not hold its whole line limit in memory from the start.
const maxReadBuffer = 64 << 10

// Stream reads the events of one turn as the gateway sends them. Next is not safe for concurrent
// use; Close may be called from any goroutine, also while Next waits.
type Stream struct {
	ctx     context.Context
	body    io.ReadCloser
	br      *bufio.Reader
	maxLine int
	line    []byte
	lineNo  int
	// err is what Next returns from now on: io.EOF after the last line, or what ended the stream.
	err error

	// turn is the turn's id, from the response's X-Coach-Turn header.
	turn string

	closed    atomic.Bool
	closeOnce sync.Once
	cancel    context.CancelFunc
	stop      func() bool
}

// newStream reads events from body until ctx ends; cancel ends the request that body belongs to.
func newStream(ctx context.Context, body io.ReadCloser, cancel context.CancelFunc, maxLine int) *Stream {
	s := &Stream{
		ctx:     ctx,
		body:    body,
		br:      bufio.NewReaderSize(body, min(maxLine+1, maxReadBuffer)),
		maxLine: maxLine,
		cancel:  cancel,
	}
	// Cancelling the request's context unblocks a read in the standard transport; closing the
	// body as well makes it so for any RoundTripper.
	s.stop = context.AfterFunc(ctx, func() { s.closeOnce.Do(s.closeBody) })
	return s
}

// Turn returns the turn's id, as the gateway sent it in the X-Coach-Turn header (v1.2; empty
// from an older gateway). GET /v1/sessions/{id}/turns/current?turn=… resumes the turn.
func (s *Stream) Turn() string { return s.turn }

// Next returns the next event. After the stream's Result or Error event it returns io.EOF. It
// returns ErrTruncated if the stream ends without one, ErrLineTooLong or an error wrapping
// ErrMalformed for a line it cannot use, ctx's error once the context of the call that opened the
// stream ends, and ErrClosed after Close. Every error is final: later calls return it again.
func (s *Stream) Next() (Event, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	ev, err := s.next()
	if err == nil && s.ctx.Err() != nil {
		// The line may have been buffered already; an ended context still ends the stream.
		ev, err = nil, s.ctx.Err()
	}
	if err != nil {
		s.err = err
		s.release()
		return nil, err
	}
	switch ev.(type) {
	case Result, Error:
		// The turn is over: whatever might follow is not part of it.
		s.err = io.EOF
		s.release()
	}
	return ev, nil
}

func (s *Stream) next() (Event, error) {
	for {
		line, err := s.readLine()
		if err != nil && !(err == io.EOF && len(line) > 0) {
			return nil, s.readError(err)
		}
		// A last line without its newline still counts; if it is cut short, the stream is.
		last := err == io.EOF
		s.lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if last {
				return nil, ErrTruncated
			}
			continue
		}
		ev, perr := parseLine(line)
		if perr != nil {
			if last && !json.Valid(line) {
				return nil, fmt.Errorf("%w: the last line is incomplete", ErrTruncated)
			}
			return nil, fmt.Errorf("%w %d: %v", ErrMalformed, s.lineNo, perr)
		}
		return ev, nil
	}
}

// readLine returns the next line with its newline, or what is left before the body's end along
// with io.EOF. The line is valid until the next call.
func (s *Stream) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.br.ReadSlice('\n')
		if err == nil && len(s.line) == 0 && len(chunk)-1 <= s.maxLine {
			// The common case: the whole line is in the buffer, no need to copy it.
			return chunk, nil
		}
		s.line = append(s.line, chunk...)
		n := len(s.line)
		if err == nil {
			n-- // the newline
		}
		if n > s.maxLine {
			return nil, fmt.Errorf("%w: line %d is over %d bytes", ErrLineTooLong, s.lineNo+1, s.maxLine)
		}
		if err != bufio.ErrBufferFull {
			return s.line, err
		}
	}
}

// readError explains a failed read.
func (s *Stream) readError(err error) error {
	switch {
	case s.ctx.Err() != nil:
		return s.ctx.Err()
	case s.closed.Load():
		return ErrClosed
	case errors.Is(err, ErrLineTooLong):
		return err
	case err == io.EOF:
		return ErrTruncated
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The chunked body ended without its last chunk: the connection was cut.
		return fmt.Errorf("%w: %w", ErrTruncated, err)
	default:
		return fmt.Errorf("coachclient: reading the stream: %w", err)
	}
}

// Close ends the stream and the request behind it; if the turn is still running, the gateway
// sees its client leave and cancels it. Close is safe to call more than once and from another
// goroutine than Next's.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.release()
	return nil
}

// release lets go of the connection, once, and of the watch on the context.
func (s *Stream) release() {
	s.stop()
	s.closeOnce.Do(s.closeBody)
}

func (s *Stream) closeBody() {
	s.cancel()
	s.body.Close()
}

// Collect reads s to its end and closes it. It returns the turn's visible text (the deltas'
// texts, with whatever preceded the last Reset discarded) and the final event: a Result with a
// nil error, or an Error, which is also returned as the error. Any other failure (ErrTruncated,
// ctx ending, ...) comes back as the error with a nil final event and the text received so far.
// Module deltas of different blocks are concatenated as they are; the Result has the structure.
//
// Cancelling ctx closes s, so ctx bounds Collect even if it is not the context s was opened
// with.
func Collect(ctx context.Context, s *Stream) (text string, final Event, err error) {
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	var b strings.Builder
	for {
		ev, nerr := s.Next()
		if nerr != nil {
			if ctx.Err() != nil {
				return b.String(), nil, ctx.Err()
			}
			return b.String(), nil, nerr
		}
		switch e := ev.(type) {
		case Delta:
			b.WriteString(e.Text)
		case Reset:
			b.Reset()
		case Result:
			return b.String(), e, nil
		case Error:
			return b.String(), e, e
		}
	}
}
