package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

var hello = coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}}}

func TestFragments(t *testing.T) {
	card := &coach.Tool{Name: "display_card", Parameters: json.RawMessage(`{"type":"object"}`)}
	cardReq := coach.ModelRequest{Messages: hello.Messages, Tool: card}
	contentChunk := func(text string) string {
		return `{"choices":[{"index":0,"delta":{"content":` + quote(text) + `},"finish_reason":null}]}`
	}
	tests := []struct {
		name   string
		cfg    Config
		req    *coach.ModelRequest
		events []string
		want   []coach.Fragment
	}{
		{
			name:   "text, skipping chunks without choices, and the usage chunk",
			events: []string{chunkNoneOf, chunkRole, chunkHel, chunkLo, chunkStop, chunkUsage, done},
			want:   []coach.Fragment{{}, {Content: "Hel"}, {Content: "lo"}, {FinishReason: "stop"}, {Usage: &coach.Usage{PromptTokens: 9, CompletionTokens: 2}}},
		},
		{
			name:   "usage on the chunk that finishes",
			events: []string{chunkHel, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`, done},
			want:   []coach.Fragment{{Content: "Hel"}, {FinishReason: "stop", Usage: &coach.Usage{PromptTokens: 5, CompletionTokens: 1}}},
		},
		{
			name:   "a forced tool answered as JSON content becomes the tool's arguments",
			req:    &cardReq,
			events: []string{chunkRole, contentChunk("  "), contentChunk(`{"card_type":`), contentChunk(`"prompt"}`), chunkStop, done},
			want:   []coach.Fragment{{}, {Content: "  "}, {ToolName: "display_card", ToolArgs: `{"card_type":`}, {ToolArgs: `"prompt"}`}, {FinishReason: "stop"}},
		},
		{
			name:   "a forced tool answered with prose stays content",
			req:    &cardReq,
			events: []string{contentChunk("Sure: "), contentChunk(`{"a":1}`), chunkStop, done},
			want:   []coach.Fragment{{Content: "Sure: "}, {Content: `{"a":1}`}, {FinishReason: "stop"}},
		},
		{
			name: "content after a real tool call stays content",
			req:  &cardReq,
			events: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"display_card","arguments":"{}"}}]}}]}`,
				contentChunk("{}"), chunkStop, done,
			},
			want: []coach.Fragment{{ToolCallID: "call_1", ToolName: "display_card", ToolArgs: "{}"}, {Content: "{}"}, {FinishReason: "stop"}},
		},
		{
			name:   "with tools not honoured, the first JSON object of the content is the arguments, without its fence",
			cfg:    Config{Profile: "ollama"},
			req:    &cardReq,
			events: []string{contentChunk("Here:\n```json\n"), contentChunk(`{"a":"}{\"",`), contentChunk(`"b":[{}]}` + "\n``"), contentChunk("`"), chunkStop, done},
			want: []coach.Fragment{{}, {ToolName: "display_card", ToolArgs: `{"a":"}{\"",`}, {ToolArgs: `"b":[{}]}`, Content: "\n``"}, {Content: "`"},
				{FinishReason: "stop"}},
		},
		{
			name: "tool call opened with id and name, then argument pieces",
			events: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"display_card","arguments":""}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"content\":"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Hi\"}"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				done,
			},
			want: []coach.Fragment{
				{ToolCallID: "call_1", ToolName: "display_card"},
				{ToolArgs: `{"content":`},
				{ToolArgs: `"Hi"}`},
				{FinishReason: "tool_calls"},
			},
		},
		{
			name: "several tool calls in one chunk become one fragment each, the finish reason on the last",
			events: []string{
				`{"choices":[{"index":0,"delta":{"content":"x","tool_calls":[` +
					`{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{}"}},` +
					`{"index":1,"id":"call_2","type":"function","function":{"name":"b","arguments":"{\"k\":1}"}}]},"finish_reason":"tool_calls"}]}`,
				done,
			},
			want: []coach.Fragment{
				{Content: "x", ToolCallID: "call_1", ToolName: "a", ToolArgs: "{}"},
				{ToolCallID: "call_2", ToolName: "b", ToolArgs: `{"k":1}`, ToolIndex: 1, FinishReason: "tool_calls"},
			},
		},
		{
			name:   "data after [DONE] is ignored",
			events: []string{chunkHel, "[DONE]", chunkLo},
			want:   []coach.Fragment{{Content: "Hel"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, serve(tt.events...))
			req := hello
			if tt.req != nil {
				req = *tt.req
			}
			s, err := u.client(tt.cfg).Stream(context.Background(), req, coach.StreamHooks{})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			got, err := collect(t, s)
			if err != io.EOF {
				t.Fatalf("stream ended with %v, want io.EOF", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fragments =\n%+v\nwant\n%+v", got, tt.want)
			}
			if _, err := s.Next(); err != io.EOF {
				t.Errorf("Next after the end = %v, want io.EOF again", err)
			}
		})
	}
}

// rawResponse hijacks the connection and writes a response by hand: a body that ends when the
// connection closes, which the client reads as a clean io.EOF. Only so can a test show that a
// stream which simply stops is not taken for a complete one.
func rawResponse(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + body)
		_ = buf.Flush()
	}
}

func TestStreamEnd(t *testing.T) {
	tests := []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request)
		// wantErr is nil for a clean end (io.EOF), else the error's text must contain it.
		wantErr error
	}{
		{
			name: "connection cut in the middle of a chunked response",
			handle: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				events(w, chunkHel, chunkLo)
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					panic(err)
				}
				conn.Close()
			},
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "body ends cleanly without finish_reason or [DONE]",
			handle:  rawResponse("data: " + chunkHel + "\n\ndata: " + chunkLo + "\n\n"),
			wantErr: errCut,
		},
		{
			name:    "body ends in the middle of a line",
			handle:  rawResponse("data: " + chunkHel + "\n\ndata: " + chunkLo + "\n\ndata: {\"choi"),
			wantErr: errCut,
		},
		{
			name:   "[DONE] without any finish_reason is complete, however spaced",
			handle: rawResponse("data: " + chunkHel + "\n\ndata: " + chunkLo + "\r\n\r\ndata:[DONE]\r\n\r\n"),
		},
		{
			name:   "finish_reason without [DONE] is complete",
			handle: rawResponse("data: " + chunkHel + "\n\ndata: " + chunkLo + "\n\ndata: " + chunkStop + "\n\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, tt.handle)
			s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			got, err := collect(t, s)
			if len(got) < 2 || got[0].Content != "Hel" || got[1].Content != "lo" {
				t.Errorf("fragments = %+v, want Hel and lo first", got)
			}
			if tt.wantErr == nil {
				if err != io.EOF {
					t.Fatalf("stream ended with %v, want io.EOF", err)
				}
				return
			}
			me := modelError(t, err)
			if me.Class != ClassStream || !me.Retryable {
				t.Errorf("got class %q retryable %v, want %q retryable", me.Class, me.Retryable, ClassStream)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want it to wrap %v", err, tt.wantErr)
			}
			if _, again := s.Next(); again != err {
				t.Errorf("Next after the failure = %v, want the same error", again)
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	tests := []struct {
		name    string
		line    string
		maxLine int
		// wantContent is the content delivered, or "" when the stream must fail.
		wantContent string
	}{
		{
			name:        "a 100 KB chunk under the default limit is delivered",
			line:        `{"choices":[{"index":0,"delta":{"content":"` + long + `"},"finish_reason":"stop"}]}`,
			wantContent: long,
		},
		{
			name:    "a 100 KB line over the limit fails without waiting for more",
			line:    `{"choices":[{"index":0,"delta":{"content":"` + long + `"},"finish_reason":"stop"}]}`,
			maxLine: 64 << 10,
		},
		{
			name: "a 100 KB line that is not JSON fails",
			line: long,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u *upstream
			u = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				events(w, tt.line)
				if tt.wantContent != "" {
					events(w, done)
					return
				}
				<-u.release // hold the connection open: only the line itself may end the stream
			})
			s, err := u.client(Config{MaxLineBytes: tt.maxLine}).Stream(context.Background(), hello, coach.StreamHooks{})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			f, err := nextWithin(t, s)
			if tt.wantContent != "" {
				if err != nil || f.Content != tt.wantContent {
					t.Fatalf("Next = %d bytes of content, %v; want %d bytes", len(f.Content), err, len(tt.wantContent))
				}
				return
			}
			if me := modelError(t, err); me.Class != ClassStream || !me.Retryable {
				t.Errorf("got class %q retryable %v (%v), want %q retryable", me.Class, me.Retryable, err, ClassStream)
			}
		})
	}
}

func TestInStreamErrorEvent(t *testing.T) {
	u := newUpstream(t, serve(chunkHel, `{"error":{"message":"The server is overloaded.","type":"server_error","code":null}}`))
	s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer s.Close()
	got, err := collect(t, s)
	if len(got) != 1 || got[0].Content != "Hel" {
		t.Errorf("fragments = %+v, want Hel", got)
	}
	me := modelError(t, err)
	if me.Class != ClassStream || !me.Retryable || !strings.Contains(err.Error(), "server_error") || strings.Contains(err.Error(), "overloaded") {
		t.Errorf("got %v (class %q retryable %v), want a retryable stream error naming the type, not quoting the message", err, me.Class, me.Retryable)
	}
}

// TestCancel checks that canceling the context ends a blocked Next promptly and that the
// endpoint sees its request end, so an abandoned turn stops costing tokens.
func TestCancel(t *testing.T) {
	tests := []struct {
		name string
		// midStream cancels after the first fragment; otherwise before the response begins.
		midStream bool
	}{
		{name: "mid-stream", midStream: true},
		{name: "before the response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverSaw := make(chan struct{})
			var u *upstream
			u = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.midStream {
					w.Header().Set("Content-Type", "text/event-stream")
					events(w, chunkHel)
				}
				select {
				case <-r.Context().Done():
					close(serverSaw)
				case <-u.release:
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := u.client(Config{})
			var err error
			if tt.midStream {
				s, serr := c.Stream(ctx, hello, coach.StreamHooks{})
				if serr != nil {
					t.Fatalf("Stream: %v", serr)
				}
				defer s.Close()
				if f, ferr := nextWithin(t, s); ferr != nil || f.Content != "Hel" {
					t.Fatalf("first Next = %+v, %v", f, ferr)
				}
				cancel()
				_, err = nextWithin(t, s)
			} else {
				errs := make(chan error, 1)
				go func() {
					_, serr := c.Stream(ctx, hello, coach.StreamHooks{})
					errs <- serr
				}()
				u.request(t)
				cancel()
				select {
				case err = <-errs:
				case <-time.After(wait):
					t.Fatal("Stream did not return after cancel")
				}
			}
			me := modelError(t, err)
			if me.Class != ClassCanceled || me.Retryable || !errors.Is(err, context.Canceled) {
				t.Errorf("got %v (class %q retryable %v), want %q, not retryable, wrapping context.Canceled", err, me.Class, me.Retryable, ClassCanceled)
			}
			select {
			case <-serverSaw:
			case <-time.After(wait):
				t.Fatal("the endpoint never saw its request end")
			}
		})
	}
}

func TestCloseTwice(t *testing.T) {
	u := newUpstream(t, serve(chunkHel, chunkStop, done))
	s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("first Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

// TestSSEFraming reads bodies framed in each way the SSE standard (WHATWG HTML, "Server-sent
// events") allows: every one must give the same fragments as plain "data: ...\n\n" events.
func TestSSEFraming(t *testing.T) {
	helSplit := "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"Hel\"}}]}\n\n"
	tests := []struct{ name, body string }{
		{"one event over several data lines, joined with LF", helSplit + "data: " + chunkLo + "\n\ndata: " + chunkStop + "\n\n"},
		{"a comment between data lines of one event", "data: {\"choices\":[{\"index\":0,\n: ping\ndata: \"delta\":{\"content\":\"Hel\"}}]}\n\ndata: " + chunkLo + "\n\ndata: " + chunkStop + "\n\n"},
		{"event, id and retry fields", "retry: 3000\n\nid: 1\nevent: message\ndata: " + chunkHel + "\n\nid: 2\ndata: " + chunkLo + "\n\nevent: message\nid\ndata: " + chunkStop + "\n\n"},
		{"CR line ends", "data: " + chunkHel + "\r\rdata: " + chunkLo + "\r\rdata: " + chunkStop + "\r\r"},
		{"CRLF line ends", "data: " + chunkHel + "\r\n\r\ndata: " + chunkLo + "\r\n\r\ndata: " + chunkStop + "\r\n\r\n"},
		{"mixed line ends", "data: " + chunkHel + "\r\n\rdata: " + chunkLo + "\n\r\ndata: " + chunkStop + "\r\r\n"},
		{"a leading byte order mark", "\xEF\xBB\xBFdata: " + chunkHel + "\n\ndata: " + chunkLo + "\n\ndata: " + chunkStop + "\n\n"},
		{"no space after the colon", "data:" + chunkHel + "\n\ndata:" + chunkLo + "\n\ndata:" + chunkStop + "\n\n"},
		{"the last event without its blank line", "data: " + chunkHel + "\n\ndata: " + chunkLo + "\n\ndata: " + chunkStop + "\n"},
		{"an empty event is no chunk", "data: " + chunkHel + "\n\ndata:\n\ndata: " + chunkLo + "\n\ndata: " + chunkStop + "\n\n"},
		{"1000 pings before the first event", strings.Repeat(": ping\n\n", 1000) + "data: " + chunkHel + "\n\ndata: " + chunkLo + "\n\ndata: " + chunkStop + "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, rawResponse(tt.body))
			s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			got, err := collect(t, s)
			if err != io.EOF {
				t.Fatalf("stream ended with %v, want io.EOF", err)
			}
			want := []coach.Fragment{{Content: "Hel"}, {Content: "lo"}, {FinishReason: "stop"}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fragments = %+v, want %+v", got, want)
			}
		})
	}
}

// TestErrorTypedEvent checks that an event of type "error" fails the stream, named by its type,
// whether its data is OpenAI's error object or a bare one.
func TestErrorTypedEvent(t *testing.T) {
	for data, typ := range map[string]string{
		`{"message":"Overloaded","type":"overloaded_error"}`:       "overloaded_error",
		`{"error":{"message":"Overloaded","type":"server_error"}}`: "server_error",
	} {
		t.Run(data, func(t *testing.T) {
			u := newUpstream(t, rawResponse("data: "+chunkHel+"\n\nevent: error\ndata: "+data+"\n\n"))
			s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			_, err = collect(t, s)
			if me := modelError(t, err); me.Class != ClassStream || !strings.Contains(err.Error(), typ) {
				t.Errorf("got %v (class %q), want a stream error naming type %s", err, me.Class, typ)
			}
		})
	}
}

// TestPings checks the two sides of keep-alive comments: pings alone never end a stream, so a
// server reading a long prompt may ping for as long as the turn allows; but the turn's
// deadline, which the stream's context carries, still ends one that only pings, and a flood of
// them is cut at maxPingBytes rather than held until that deadline.
func TestPings(t *testing.T) {
	t.Run("an endpoint that only pings ends at the deadline", func(t *testing.T) {
		u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for {
				if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		var alive int
		s, err := u.client(Config{}).Stream(ctx, hello, coach.StreamHooks{Activity: func() { alive++ }})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		defer s.Close()
		_, err = nextWithin(t, s)
		if err == nil || ctx.Err() == nil {
			t.Fatalf("Next = %v before the deadline, want the deadline to end the stream", err)
		}
		if alive == 0 {
			t.Error("pings were not reported as activity")
		}
	})
	t.Run("a flood of pings is cut", func(t *testing.T) {
		u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			ping := []byte(strings.Repeat(":\n", 32<<10))
			for r.Context().Err() == nil {
				if _, err := w.Write(ping); err != nil {
					return
				}
			}
		})
		s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		defer s.Close()
		_, err = nextWithin(t, s)
		if me := modelError(t, err); me.Class != ClassStream || !strings.Contains(err.Error(), "without an event") {
			t.Errorf("got %v (class %q), want a stream error about pings without an event", err, me.Class)
		}
	})
}

// FuzzStreamEvents reads arbitrary bytes as a stream's body. The reader must not panic or
// loop, and what it makes of the body must not depend on how the body arrives: read whole,
// or one byte at a time (which splits every CRLF and every line across reads).
func FuzzStreamEvents(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzStreamEvents")
	for _, b := range []string{
		"data: " + chunkHel + "\n\ndata: " + chunkStop + "\n\ndata: [DONE]\n\n",
		"\xEF\xBB\xBF: c\r\nid: 1\r\nevent: message\rretry: 5\ndata: {\"choices\":\ndata: []}\r\n\r\ndata:[DONE]\r\r",
		"event: error\ndata: {\"message\":\"x\"}\n\n",
		`{"error":{"message":"bad key"}}`,
	} {
		f.Add([]byte(b))
	}
	c := New(Config{BaseURL: "http://fuzz/v1", APIKey: testKey})
	read := func(body io.Reader) (frags []coach.Fragment, end string) {
		s := &stream{c: c, ctx: context.Background(), body: io.NopCloser(body)}
		for len(frags) < 1000 {
			fr, err := s.Next()
			if err != nil {
				return frags, err.Error()
			}
			frags = append(frags, fr)
		}
		return frags, ""
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		whole, wholeEnd := read(bytes.NewReader(body))
		bytewise, bytewiseEnd := read(iotest.OneByteReader(bytes.NewReader(body)))
		if !reflect.DeepEqual(whole, bytewise) || wholeEnd != bytewiseEnd {
			t.Fatalf("body %q:\nread whole: %+v, %s\nbyte by byte: %+v, %s", body, whole, wholeEnd, bytewise, bytewiseEnd)
		}
	})
}
