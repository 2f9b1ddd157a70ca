package coachclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

const (
	sessionJSON = `{"id":"3fa9c0de3fa9c0de3fa9c0de3fa9c0de","contract":"toulmin","locale":"en","version":2,` +
		`"state":{"step":"claim"},"createdAt":"2025-01-02T03:04:05Z","updatedAt":"2025-01-02T03:04:06Z",` +
		`"limits":{"messageChars":4000,"draftChars":4000}}`
	deltaLine  = `{"type":"delta","text":"Tell me "}` + "\n"
	delta2Line = `{"type":"delta","text":"more — ¿qué opinas?"}` + "\n"
	resultLine = `{"type":"result","result":{"assistantText":"Tell me more"},"session":` + sessionJSON + "}\n"
	errorLine  = `{"type":"error","error":"coach_stream_failed","message":"the model endpoint failed (server)"}` + "\n"
)

func TestStreamEvents(t *testing.T) {
	turn := deltaLine + delta2Line + resultLine
	wantTurn := []string{
		`coachclient.Delta {"type":"delta","text":"Tell me "}`,
		`coachclient.Delta {"type":"delta","text":"more — ¿qué opinas?"}`,
		`coachclient.Result ` + strings.TrimSuffix(resultLine, "\n"),
	}
	tests := []struct {
		name    string
		chunks  []string
		want    []string
		wantErr error
	}{
		{"a turn", []string{turn}, wantTurn, io.EOF},
		{"one line per write", []string{deltaLine, delta2Line, resultLine}, wantTurn, io.EOF},
		{"lines split across writes, runes too", bytewise(turn), wantTurn, io.EOF},
		{"lines split at odd places", []string{deltaLine[:5], deltaLine[5:] + delta2Line[:20], delta2Line[20:] + resultLine}, wantTurn, io.EOF},
		{
			"module deltas carry their block",
			[]string{`{"type":"delta","text":"Breathe.","block":0,"blockType":"paragraph"}` + "\n" + resultLine},
			[]string{`coachclient.Delta {"type":"delta","text":"Breathe.","block":0,"blockType":"paragraph"}`, wantTurn[2]},
			io.EOF,
		},
		{
			"card and reset lines",
			[]string{`{"type":"card","card":{"type":"level_up","level":2}}` + "\n" + deltaLine + `{"type":"reset","reason":"stalled"}` + "\n" + resultLine},
			[]string{
				`coachclient.Card {"type":"card","card":{"type":"level_up","level":2}}`,
				wantTurn[0],
				`coachclient.Reset {"type":"reset","reason":"stalled"}`,
				wantTurn[2],
			},
			io.EOF,
		},
		{
			"a fallback result",
			[]string{`{"type":"result","result":{"type":"insight"},"session":{"id":"s1","contract":"cards","version":3,"state":{}},"fallback":true}` + "\n"},
			[]string{`coachclient.Result {"type":"result","result":{"type":"insight"},"session":{"id":"s1","contract":"cards","version":3,"state":{}},"fallback":true}`},
			io.EOF,
		},
		{
			"unknown line types pass through",
			[]string{`{"type":"progress","percentage":50, "topics":["a"]}` + "\n" + resultLine},
			[]string{`coachclient.Unknown {"type":"progress","percentage":50,"topics":["a"]}`, wantTurn[2]},
			io.EOF,
		},
		{"an error line ends the stream", []string{deltaLine + errorLine}, []string{wantTurn[0], `coachclient.Error ` + strings.TrimSuffix(errorLine, "\n")}, io.EOF},
		{"blank lines and CRLF", []string{"\r\n" + strings.ReplaceAll(turn, "\n", "\r\n\n")}, wantTurn, io.EOF},
		{"a last line without its newline", []string{strings.TrimSuffix(turn, "\n")}, wantTurn, io.EOF},
		{"nothing after the last line is read", []string{turn + "not even JSON\n"}, wantTurn, io.EOF},
		{"truncated: no last line", []string{deltaLine + delta2Line}, wantTurn[:2], ErrTruncated},
		{"truncated: empty body", nil, nil, ErrTruncated},
		{"truncated: the last line cut short", []string{deltaLine + resultLine[:40]}, wantTurn[:1], ErrTruncated},
		{"malformed: not JSON", []string{deltaLine + "hello\n" + resultLine}, wantTurn[:1], ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, streamOf(tt.chunks...))
			s, err := c.Turn(context.Background(), "3fa9c0de3fa9c0de3fa9c0de3fa9c0de", Message("hi"))
			if err != nil {
				t.Fatalf("Turn: %v", err)
			}
			defer s.Close()
			got, err := readAll(s)
			if !slices.Equal(got, tt.want) {
				t.Errorf("events:\n got %q\nwant %q", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("final error = %v, want %v", err, tt.wantErr)
			}
			if _, again := s.Next(); again != err {
				t.Errorf("Next after the end = %v, want the same %v", again, err)
			}
		})
	}
}

func TestStreamMalformedLines(t *testing.T) {
	tests := []struct{ name, line string }{
		{"not an object", `["delta"]`},
		{"null", `null`},
		{"two values", `{"type":"delta","text":"a"} {"type":"delta","text":"b"}`},
		{"no type", `{"text":"a"}`},
		{"type not a string", `{"type":1}`},
		{"empty type", `{"type":""}`},
		{"delta without text", `{"type":"delta"}`},
		{"delta with null text", `{"type":"delta","text":null}`},
		{"delta with a number as text", `{"type":"delta","text":5}`},
		{"negative block", `{"type":"delta","text":"a","block":-1}`},
		{"fractional block", `{"type":"delta","text":"a","block":1.5}`},
		{"block type not a string", `{"type":"delta","text":"a","block":1,"blockType":2}`},
		{"card not an object", `{"type":"card","card":"level_up"}`},
		{"reset without reason", `{"type":"reset"}`},
		{"result without result", `{"type":"result","session":` + sessionJSON + `}`},
		{"result with an array as result", `{"type":"result","result":[],"session":` + sessionJSON + `}`},
		{"result without session", `{"type":"result","result":{}}`},
		{"session without id", `{"type":"result","result":{},"session":{"contract":"toulmin"}}`},
		{"session version not a number", `{"type":"result","result":{},"session":{"id":"s","version":"2"}}`},
		{"session time not RFC 3339", `{"type":"result","result":{},"session":{"id":"s","createdAt":"yesterday"}}`},
		{"fallback not a boolean", `{"type":"result","result":{},"session":{"id":"s"},"fallback":"yes"}`},
		{"error with an empty code", `{"type":"error","error":"","message":"m"}`},
		{"error without message", `{"type":"error","error":"coach_stream_failed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStream(context.Background(), io.NopCloser(strings.NewReader(deltaLine+tt.line+"\n"+resultLine)), func() {}, 1<<10)
			got, err := readAll(s)
			if len(got) != 1 {
				t.Errorf("events before the bad line = %q, want just the delta", got)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), "line 2") {
				t.Errorf("error %q does not name line 2", err)
			}
		})
	}
}

func TestStreamLineLimit(t *testing.T) {
	delta := func(textLen int) string { return `{"type":"delta","text":"` + strings.Repeat("x", textLen) + `"}` }
	overhead := len(delta(0))
	tests := []struct {
		name    string
		limit   int
		textLen int
		wantErr error
	}{
		{"a line at the limit", 100, 100 - overhead, io.EOF},
		{"a line one byte over", 100, 101 - overhead, ErrLineTooLong},
		{"a line at a limit beyond the read buffer", 3 * maxReadBuffer, 3*maxReadBuffer - overhead, io.EOF},
		{"a line one byte over a limit beyond the read buffer", 3 * maxReadBuffer, 3*maxReadBuffer + 1 - overhead, ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := delta(tt.textLen) + "\n" + `{"type":"error","error":"e","message":""}`
			s := newStream(context.Background(), io.NopCloser(strings.NewReader(body)), func() {}, tt.limit)
			_, err := readAll(s)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestStreamLongLineDoesNotHang sends a line that never ends: the reader must give up once the
// line passes the limit instead of waiting for its newline.
func TestStreamLongLineDoesNotHang(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		streamOf(deltaLine, `{"type":"delta","text":"`+strings.Repeat("x", 4096))(w, r)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, WithMaxLineBytes(1024))
	s, err := c.Turn(context.Background(), "s", Message("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := readAll(s)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLineTooLong) {
			t.Errorf("error = %v, want ErrLineTooLong", err)
		}
	case <-timeout():
		t.Fatal("Next is still waiting for the end of an over-long line")
	}
}

// TestStreamEnds checks that cancelling the context or closing the stream unblocks a waiting
// Next and ends the request, so the gateway cancels the turn.
func TestStreamEnds(t *testing.T) {
	tests := []struct {
		name    string
		end     func(cancel context.CancelFunc, s *Stream)
		wantErr error
	}{
		{"cancelling the context", func(cancel context.CancelFunc, _ *Stream) { cancel() }, context.Canceled},
		{"closing the stream", func(_ context.CancelFunc, s *Stream) { s.Close() }, ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverSawEnd := make(chan struct{})
			c := serve(t, func(w http.ResponseWriter, r *http.Request) {
				streamOf(deltaLine)(w, r)
				<-r.Context().Done()
				close(serverSawEnd)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := c.Turn(ctx, "s", Message("hi"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if ev, err := s.Next(); err != nil {
				t.Fatalf("first Next: %v, %v", show(ev), err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s.Next()
				done <- err
			}()
			tt.end(cancel, s)
			select {
			case err := <-done:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Next = %v, want %v", err, tt.wantErr)
				}
			case <-timeout():
				t.Fatal("Next did not return")
			}
			select {
			case <-serverSawEnd:
			case <-timeout():
				t.Fatal("the server never saw the client leave")
			}
		})
	}
}

func TestStreamCutConnection(t *testing.T) {
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		streamOf(deltaLine)(w, r)
		// Drop the connection without the chunked body's end, as a crashing proxy would.
		panic(http.ErrAbortHandler)
	})
	s, err := c.Turn(context.Background(), "s", Message("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := readAll(s)
	if len(got) != 1 || !errors.Is(err, ErrTruncated) {
		t.Errorf("got %q, %v; want one delta, then ErrTruncated", got, err)
	}
}

func TestCollect(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantText  string
		wantFinal string
		wantErr   error
	}{
		{"deltas add up", deltaLine + delta2Line + resultLine, "Tell me more — ¿qué opinas?", "coachclient.Result", nil},
		{
			"a reset discards the text before it",
			deltaLine + `{"type":"reset","reason":"stream_interrupted"}` + "\n" + delta2Line + `{"type":"reset","reason":"invalid_output"}` + "\n" +
				`{"type":"delta","text":"Again."}` + "\n" + resultLine,
			"Again.", "coachclient.Result", nil,
		},
		{"cards are not text", `{"type":"card","card":{"type":"level_up"}}` + "\n" + deltaLine + resultLine, "Tell me ", "coachclient.Result", nil},
		{"an error line is the error", deltaLine + errorLine, "Tell me ", "coachclient.Error", Error{Code: "coach_stream_failed", Message: "the model endpoint failed (server)"}},
		{"a truncated stream", deltaLine, "Tell me ", "<nil>", ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, streamOf(tt.body))
			s, err := c.Turn(context.Background(), "s", Message("hi"))
			if err != nil {
				t.Fatal(err)
			}
			text, final, err := Collect(context.Background(), s)
			if text != tt.wantText {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if got := strings.Fields(show(final))[0]; got != tt.wantFinal {
				t.Errorf("final = %s, want a %s", show(final), tt.wantFinal)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if _, err := s.Next(); err == nil {
				t.Error("the stream is still open after Collect")
			}
		})
	}
}

func TestCollectStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		streamOf(deltaLine)(w, r)
		cancel() // the caller gives up while the turn runs
		<-r.Context().Done()
	})
	// The stream's own context lives on; Collect's ends.
	s, err := c.Turn(context.Background(), "s", Message("hi"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := Collect(ctx, s)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Collect = %v, want context.Canceled", err)
		}
	case <-timeout():
		t.Fatal("Collect did not return when its context ended")
	}
}

func TestEventWireLines(t *testing.T) {
	block := 2
	tests := []struct {
		ev   Event
		want string
	}{
		{Delta{Text: "a<b>"}, `{"type":"delta","text":"a\u003cb\u003e"}`},
		{Delta{Text: "", Block: &block, BlockType: "bullet"}, `{"type":"delta","text":"","block":2,"blockType":"bullet"}`},
		{Card{Card: json.RawMessage(`{ "type": "scenario" }`)}, `{"type":"card","card":{"type":"scenario"}}`},
		{Reset{Reason: "stalled"}, `{"type":"reset","reason":"stalled"}`},
		{Result{Result: json.RawMessage(`{}`), Session: Session{ID: "s", Contract: "cards", Version: 1, State: json.RawMessage(`{}`)}},
			`{"type":"result","result":{},"session":{"id":"s","contract":"cards","version":1,"state":{}}}`},
		{Error{Code: "coach_empty_response", Message: "empty"}, `{"type":"error","error":"coach_empty_response","message":"empty"}`},
		{Unknown{Type: "progress", Raw: json.RawMessage(`{"type":"progress","n":1}`)}, `{"type":"progress","n":1}`},
		{Unknown{Type: "progress"}, `{"type":"progress"}`},
	}
	for _, tt := range tests {
		t.Run(tt.ev.Kind(), func(t *testing.T) {
			got, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("line = %s, want %s", got, tt.want)
			}
			back, err := parseLine(got)
			if err != nil {
				t.Fatalf("parsing %s: %v", got, err)
			}
			if show(back) != show(tt.ev) {
				t.Errorf("round trip = %s, want %s", show(back), show(tt.ev))
			}
		})
	}
	var target Error
	if !errors.As(error(Error{Code: "x"}), &target) || target.Code != "x" {
		t.Errorf("errors.As does not find an Error event: %+v", target)
	}
}

// TestStreamEndsDespiteBufferedLines checks that lines already read into the buffer are not
// handed out once the context ended or the stream was closed.
func TestStreamEndsDespiteBufferedLines(t *testing.T) {
	tests := []struct {
		name    string
		end     func(cancel context.CancelFunc, s *Stream)
		wantErr error
	}{
		{"cancelled", func(cancel context.CancelFunc, _ *Stream) { cancel() }, context.Canceled},
		{"closed", func(_ context.CancelFunc, s *Stream) { s.Close() }, ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := strings.Repeat(deltaLine, 10) + resultLine
			s := newStream(ctx, io.NopCloser(strings.NewReader(body)), func() {}, 1<<10)
			if _, err := s.Next(); err != nil {
				t.Fatal(err)
			}
			tt.end(cancel, s)
			if ev, err := s.Next(); !errors.Is(err, tt.wantErr) {
				t.Errorf("Next = %s, %v; want %v", show(ev), err, tt.wantErr)
			}
		})
	}
}
