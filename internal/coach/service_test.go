package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

func ptr(s string) *string { return &s }

func testOptions() coach.Options {
	o := coach.DefaultOptions()
	o.BackoffBase, o.BackoffMax = time.Millisecond, 2*time.Millisecond
	o.RetryAfterCap = 5 * time.Millisecond
	o.FirstByteTimeout, o.IdleTimeout = time.Second, time.Second
	return o
}

func newTestService(t *testing.T, m *fakeModel, opts coach.Options, c coach.Contract) (*coach.Service, *storeFake, *coach.Session) {
	t.Helper()
	st := newStoreFake()
	if c == nil {
		c = echoContract{}
	}
	svc := coach.NewService(st, m, []coach.Contract{c}, opts, nil)
	sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return svc, st, sess
}

// lines renders events compactly: "delta:Hi", "reset:stalled", "result", "error:code".
func lines(events []coach.Event) string {
	var b []string
	for _, e := range events {
		switch e.Type {
		case coach.EventDelta:
			b = append(b, "delta:"+e.Text)
		case coach.EventReset:
			b = append(b, "reset:"+e.Reason)
		case coach.EventError:
			b = append(b, "error:"+e.Code)
		case coach.EventCard:
			b = append(b, "card:"+string(e.Card))
		default:
			b = append(b, e.Type)
		}
	}
	return strings.Join(b, " ")
}

func runTurn(t *testing.T, svc *coach.Service, id string) ([]coach.Event, coach.Report) {
	t.Helper()
	run, err := svc.StartTurn(context.Background(), "", id, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	var got []coach.Event
	rep := run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error { got = append(got, e); return nil }))
	return got, rep
}

func TestTurnOutcomes(t *testing.T) {
	retryable := &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503")}
	cut := &coach.ModelError{Class: "stream", Retryable: true, Err: io.ErrUnexpectedEOF}
	tests := []struct {
		name      string
		scripts   []script
		opts      func(*coach.Options)
		want      string
		wantCalls int
		stored    bool
		lastMsg   string // substring of the last message of the last request
	}{
		{name: "clean turn", scripts: []script{{frags: []string{"Hel", "lo."}}},
			want: "delta:Hel delta:lo. result", wantCalls: 1, stored: true},
		{name: "retry before any delta", scripts: []script{{openErr: retryable}, {frags: []string{"ok."}}},
			want: "delta:ok. result", wantCalls: 2, stored: true},
		{name: "rate limited with Retry-After", scripts: []script{{openErr: &coach.ModelError{Class: "rate_limited", Retryable: true, RetryAfter: time.Hour, Err: errors.New("429")}}, {frags: []string{"ok."}}},
			want: "delta:ok. result", wantCalls: 2, stored: true},
		{name: "retries exhausted", scripts: []script{{openErr: retryable}, {openErr: retryable}, {openErr: retryable}},
			want: "error:coach_stream_failed", wantCalls: 3},
		{name: "client error is not retried", scripts: []script{{openErr: &coach.ModelError{Class: "client", Err: errors.New("401")}}},
			want: "error:coach_stream_failed", wantCalls: 1},
		{name: "cut before any delta is retried silently", scripts: []script{{err: cut}, {frags: []string{"ok."}}},
			want: "delta:ok. result", wantCalls: 2, stored: true},
		{name: "cut after deltas resets", scripts: []script{{frags: []string{"Hel"}, err: cut}, {frags: []string{"Hello."}}},
			want: "delta:Hel reset:stream_interrupted delta:Hello. result", wantCalls: 2, stored: true},
		{name: "cut twice fails", scripts: []script{{frags: []string{"a"}, err: cut}, {frags: []string{"b"}, err: cut}},
			want: "delta:a reset:stream_interrupted delta:b error:coach_stream_failed", wantCalls: 2},
		{name: "invalid output is corrected once", scripts: []script{{frags: []string{"no period"}}, {frags: []string{"fixed."}}},
			want: "delta:no period reset:invalid_output delta:fixed. result", wantCalls: 2, stored: true, lastMsg: "could not be used"},
		{name: "invalid output twice", scripts: []script{{frags: []string{"x"}}, {frags: []string{"y"}}},
			want: "delta:x reset:invalid_output delta:y error:coach_validation_failed", wantCalls: 2},
		{name: "empty response", scripts: []script{{frags: []string{"EMPTY"}}, {frags: []string{"EMPTY"}}},
			want: "delta:EMPTY reset:invalid_output delta:EMPTY error:coach_empty_response", wantCalls: 2},
		{name: "no recovery configured", scripts: []script{{frags: []string{"x"}}},
			opts: func(o *coach.Options) { o.Recoveries = -1 }, want: "delta:x error:coach_validation_failed", wantCalls: 1},
		{name: "stall after deltas resets", scripts: []script{{frags: []string{"a"}, block: true}, {frags: []string{"b."}}},
			opts: func(o *coach.Options) { o.IdleTimeout = 20 * time.Millisecond },
			want: "delta:a reset:stalled delta:b. result", wantCalls: 2, stored: true},
		{name: "no first byte is retried", scripts: []script{{block: true}, {frags: []string{"b."}}},
			opts: func(o *coach.Options) { o.FirstByteTimeout = 20 * time.Millisecond },
			want: "delta:b. result", wantCalls: 2, stored: true},
		{name: "turn deadline", scripts: []script{{frags: []string{"a"}, block: true}},
			opts: func(o *coach.Options) { o.TurnTimeout, o.IdleTimeout = 30*time.Millisecond, time.Hour },
			want: "delta:a error:coach_stream_failed", wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			m := &fakeModel{scripts: tt.scripts}
			svc, st, sess := newTestService(t, m, opts, nil)
			got, rep := runTurn(t, svc, sess.ID)
			if g := lines(got); g != tt.want {
				t.Errorf("lines = %q, want %q", g, tt.want)
			}
			if m.calls() != tt.wantCalls {
				t.Errorf("model calls = %d, want %d", m.calls(), tt.wantCalls)
			}
			stored, _ := st.Get(context.Background(), "", sess.ID)
			if gotStored := stored.Version == 2; gotStored != tt.stored {
				t.Errorf("stored version = %d, want stored=%v", stored.Version, tt.stored)
			}
			if !tt.stored && (string(stored.State) != string(sess.State) || len(stored.History) != 0) {
				t.Errorf("a failed turn changed the session: state %s, history %v", stored.State, stored.History)
			}
			if st.locked(sess.ID) {
				t.Error("the session is still locked after the turn")
			}
			if tt.lastMsg != "" {
				msgs := m.requests[len(m.requests)-1].Messages
				if last := msgs[len(msgs)-1].Content; !strings.Contains(last, tt.lastMsg) {
					t.Errorf("last message of the retry = %q, want it to contain %q", last, tt.lastMsg)
				}
			}
			if rep.Attempts != tt.wantCalls {
				t.Errorf("report attempts = %d, want %d", rep.Attempts, tt.wantCalls)
			}
		})
	}
}

func TestTurnStoresStateAndHistory(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"one."}}, {frags: []string{"two."}}}}
	svc, st, sess := newTestService(t, m, testOptions(), nil)
	runTurn(t, svc, sess.ID)
	got, _ := runTurn(t, svc, sess.ID)
	res := got[len(got)-1]
	if res.Session == nil || res.Session.Version != 3 {
		t.Fatalf("result session = %+v, want version 3", res.Session)
	}
	stored, _ := st.Get(context.Background(), "", sess.ID)
	if string(stored.State) != `{"turns":2}` {
		t.Errorf("state = %s, want {\"turns\":2}", stored.State)
	}
	if len(stored.History) != 4 || stored.History[3].Content != "two." {
		t.Errorf("history = %+v, want 4 messages ending with two.", stored.History)
	}
}

func TestPreludeComesFirst(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"a."}}}}
	svc, _, sess := newTestService(t, m, testOptions(), echoContract{prelude: []coach.Event{{Type: coach.EventCard, Card: json.RawMessage(`{"type":"level_up"}`)}}})
	got, _ := runTurn(t, svc, sess.ID)
	if g, want := lines(got), `card:{"type":"level_up"} delta:a. result`; g != want {
		t.Errorf("lines = %q, want %q", g, want)
	}
}

func TestClientGoneCancelsAndWritesNothing(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"a", "b"}, block: true}}}
	svc, st, sess := newTestService(t, m, testOptions(), nil)
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	rep := run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error {
		n++
		if n == 2 {
			return errors.New("broken pipe")
		}
		return nil
	}))
	if rep.Outcome != "cancelled" {
		t.Errorf("outcome = %q, want cancelled", rep.Outcome)
	}
	if n := st.commitCount(); n != 0 || st.locked(sess.ID) {
		t.Errorf("commits = %d, locked = %v; want nothing written and the lock released", n, st.locked(sess.ID))
	}
}

func TestDrainEndsTurnWithErrorLine(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"a"}, block: true}}}
	svc, st, sess := newTestService(t, m, testOptions(), nil)
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	var got []coach.Event
	rep := run.Run(ctx, coach.EmitFunc(func(e coach.Event) error {
		got = append(got, e)
		if e.Type == coach.EventDelta {
			cancel(coach.ErrShuttingDown)
		}
		return nil
	}))
	if g, want := lines(got), "delta:a error:shutting_down"; g != want {
		t.Errorf("lines = %q, want %q (outcome %s)", g, want, rep.Outcome)
	}
	if n := st.commitCount(); n != 0 {
		t.Errorf("commits = %d, want 0", n)
	}
}

func TestStoreDownAtCommit(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"a."}}}}
	svc, st, sess := newTestService(t, m, testOptions(), nil)
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	var got []coach.Event
	run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error {
		got = append(got, e)
		st.setDown(true)
		return nil
	}))
	if g, want := lines(got), "delta:a. error:store_unavailable"; g != want {
		t.Errorf("lines = %q, want %q", g, want)
	}
}

func TestStartTurnErrors(t *testing.T) {
	m := &fakeModel{}
	svc, st, sess := newTestService(t, m, testOptions(), nil)
	tests := []struct {
		name string
		id   string
		in   coach.TurnInput
		want string
	}{
		{"malformed id", "../etc", coach.TurnInput{Message: ptr("x")}, coach.CodeSessionNotFound},
		{"key injection", "abc}:s\r\nFLUSHALL", coach.TurnInput{Message: ptr("x")}, coach.CodeSessionNotFound},
		{"unknown session", coach.NewID(), coach.TurnInput{Message: ptr("x")}, coach.CodeSessionNotFound},
		{"input rejected", sess.ID, coach.TurnInput{}, coach.CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.StartTurn(context.Background(), "", tt.id, tt.in)
			if got := coach.AsError(err).Code; got != tt.want {
				t.Errorf("StartTurn error code = %q (%v), want %q", got, err, tt.want)
			}
			if st.locked(sess.ID) {
				t.Error("a rejected turn left the session locked")
			}
		})
	}
	t.Run("busy", func(t *testing.T) {
		run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("x")})
		if err != nil {
			t.Fatal(err)
		}
		defer run.Abort()
		if _, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("x")}); !errors.Is(err, coach.ErrBusy) {
			t.Errorf("second StartTurn error = %v, want ErrBusy", err)
		}
	})
	t.Run("other tenant", func(t *testing.T) {
		if _, err := svc.StartTurn(context.Background(), "tenant-b", sess.ID, coach.TurnInput{Message: ptr("x")}); !errors.Is(err, coach.ErrNotFound) {
			t.Errorf("StartTurn by another tenant error = %v, want ErrNotFound", err)
		}
	})
}

func TestUpdate(t *testing.T) {
	svc, st, sess := newTestService(t, &fakeModel{}, testOptions(), nil)
	got, err := svc.Update(context.Background(), "", sess.ID, "echo", nil, func(s *coach.Session) (json.RawMessage, error) {
		return json.RawMessage(`{"turns":9}`), nil
	})
	if err != nil || got.Version != 2 || string(got.State) != `{"turns":9}` {
		t.Fatalf("Update = %+v, %v; want version 2 with the new state", got, err)
	}
	_, err = svc.Update(context.Background(), "", sess.ID, "other", nil, func(s *coach.Session) (json.RawMessage, error) {
		return nil, coach.Errorf(coach.KindInternal, coach.CodeInternal, "a change for another contract's state must not run")
	})
	if coach.AsError(err).Code != coach.CodeInvalidRequest {
		t.Errorf("Update on a session of another contract error = %v, want invalid_request", err)
	}
	_, err = svc.Update(context.Background(), "", sess.ID, "echo", nil, func(s *coach.Session) (json.RawMessage, error) {
		return nil, coach.Errorf(coach.KindConflict, coach.CodeNoPendingProposal, "none")
	})
	if coach.AsError(err).Code != coach.CodeNoPendingProposal || st.locked(sess.ID) {
		t.Errorf("Update whose change fails: error %v, locked %v; want the change's error and no lock", err, st.locked(sess.ID))
	}
}

func TestCreateSessionErrors(t *testing.T) {
	svc, _, _ := newTestService(t, &fakeModel{}, testOptions(), nil)
	for _, tt := range []struct{ contract, locale, want string }{
		{"nope", "", coach.CodeUnknownContract},
		{"echo", "fr", coach.CodeInvalidRequest},
		{"echo", "es-MEX", coach.CodeInvalidRequest},
		{"echo", "es-1x", coach.CodeInvalidRequest},
	} {
		t.Run(tt.contract+"/"+tt.locale, func(t *testing.T) {
			_, err := svc.CreateSession(context.Background(), "", tt.contract, coach.NewSession{Locale: tt.locale})
			if coach.AsError(err).Code != tt.want {
				t.Errorf("CreateSession error = %v, want %s", err, tt.want)
			}
		})
	}
}

func TestCreateSessionLocaleAndLearner(t *testing.T) {
	svc, _, _ := newTestService(t, &fakeModel{}, testOptions(), nil)
	for _, tt := range []struct{ locale, learner, wantLocale, wantLang, wantErr string }{
		{"", "", "en", "en", ""},
		{"es-mx", "stu-42", "es-MX", "es", ""},
		{"EN-us", "", "en-US", "en", ""},
		{"es", "a b", "", "", coach.CodeInvalidRequest},
		{"es", "x/y", "", "", coach.CodeInvalidRequest},
		{"es", strings.Repeat("x", 129), "", "", coach.CodeInvalidRequest},
	} {
		t.Run(tt.locale+"/"+tt.learner, func(t *testing.T) {
			s, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{Locale: tt.locale, Learner: tt.learner})
			if tt.wantErr != "" {
				if coach.AsError(err).Code != tt.wantErr {
					t.Fatalf("got error %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Locale != tt.wantLocale || s.Language() != tt.wantLang || s.Learner != tt.learner {
				t.Errorf("got locale %q language %q learner %q, want %q %q %q", s.Locale, s.Language(), s.Learner, tt.wantLocale, tt.wantLang, tt.learner)
			}
		})
	}
}

func TestAppendHistoryCutsAtUserMessage(t *testing.T) {
	var old []coach.Message
	for i := 0; i < 4; i++ {
		old = append(old,
			coach.Message{Role: coach.RoleUser, Content: fmt.Sprint("u", i)},
			coach.Message{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: fmt.Sprint("c", i)}}},
			coach.Message{Role: coach.RoleTool, ToolCallID: fmt.Sprint("c", i)})
	}
	got := coach.AppendHistory(old, nil, 5, coach.DefaultHistoryBytes)
	if len(got) != 3 || got[0].Content != "u3" {
		t.Errorf("appendHistory kept %+v, want the last whole exchange starting at u3", got)
	}
}

func TestDeltaBufferJoinsPiecesOfOneFragment(t *testing.T) {
	var got []coach.Event
	send := func(e coach.Event) { got = append(got, e) }
	var d coach.DeltaBuffer
	for _, e := range []coach.Event{
		coach.Delta("Good "), coach.Delta("\n"), coach.Delta("day"),
		{Type: coach.EventDelta, Text: "A", Block: 0, BlockType: "heading"},
		{Type: coach.EventDelta, Text: "B", Block: 1, BlockType: "paragraph"},
		{Type: coach.EventDelta, Text: "C", Block: 1, BlockType: "paragraph"},
		{Type: coach.EventCard, Card: json.RawMessage(`{}`)},
		coach.Delta("x"),
	} {
		d.Add(e, send)
	}
	d.Flush(send)
	want := []string{"delta:Good \nday", "delta:A", "delta:BC", "card:{}", "delta:x"}
	if g := lines(got); g != strings.Join(want, " ") {
		t.Errorf("lines = %q, want %q", g, strings.Join(want, " "))
	}
	if got[1].Block != 0 || got[2].Block != 1 || got[2].BlockType != "paragraph" {
		t.Errorf("blocks = %+v, want each delta in its own block", got)
	}
}

func TestFallbackAfterTheCorrectiveRetry(t *testing.T) {
	tests := []struct {
		name    string
		scripts []script
		want    string
		outcome string
	}{
		{"retry fixes it", []script{{frags: []string{"bad"}}, {frags: []string{"good."}}}, "delta:bad reset:invalid_output delta:good. result", "ok"},
		{"retry fails too", []script{{frags: []string{"bad"}}, {frags: []string{"worse"}}}, "delta:bad reset:invalid_output delta:worse reset:invalid_output result", "fallback"},
		{"nothing streamed", []script{{frags: []string{}}, {frags: []string{}}}, "result", "fallback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{scripts: tt.scripts}
			svc, st, sess := newTestService(t, m, testOptions(), fallbackContract{})
			got, rep := runTurn(t, svc, sess.ID)
			if g := lines(got); g != tt.want {
				t.Errorf("lines = %q, want %q", g, tt.want)
			}
			if stored, _ := st.Get(context.Background(), "", sess.ID); stored.Version != 2 {
				t.Errorf("stored version = %d, want the turn stored", stored.Version)
			}
			if m.calls() != 2 {
				t.Errorf("model calls = %d, want 2", m.calls())
			}
			if rep.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q", rep.Outcome, tt.outcome)
			}
		})
	}
}

// TestRequestPerAttempt checks what each model call asks: after unusable output the request
// carries the failed reply, as the model's own message, and the correction, and a retry after an endpoint failure repeats the corrected request.
// The turn builds the request for every attempt instead of the engine keeping one.
func TestRequestPerAttempt(t *testing.T) {
	unavailable := &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503")}
	m := &fakeModel{scripts: []script{{frags: []string{"bad"}}, {openErr: unavailable}, {frags: []string{"good."}}}}
	svc, _, sess := newTestService(t, m, testOptions(), fallbackContract{})
	if _, rep := runTurn(t, svc, sess.ID); rep.Outcome != "ok" {
		t.Fatalf("outcome = %q (%v), want ok", rep.Outcome, rep.Err)
	}
	var got []string
	for _, req := range m.requests {
		var msgs []string
		for _, msg := range req.Messages {
			text := msg.Content
			if strings.HasPrefix(text, "Your previous reply could not be used") {
				text = "(correction)"
			}
			msgs = append(msgs, msg.Role+":"+text)
		}
		got = append(got, strings.Join(msgs, " "))
	}
	want := []string{"user:hi", "user:hi assistant:bad user:(correction)", "user:hi assistant:bad user:(correction)"}
	if !slices.Equal(got, want) {
		t.Errorf("requests =\n%q\nwant\n%q", got, want)
	}
}

func TestReleaseIsRetriedWhileTheStoreIsDown(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"a."}}}}
	svc, st, sess := newTestService(t, m, testOptions(), nil)
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error {
		st.setDown(true) // the store dies before the turn can commit or release
		return nil
	}))
	if !st.locked(sess.ID) {
		t.Fatal("the lock was released while the store was down")
	}
	st.setDown(false)
	deadline := time.Now().Add(5 * time.Second)
	for st.locked(sess.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the lock was not released after the store came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recordingSink records emitted lines and flushes in order.
type recordingSink struct{ got []string }

func (r *recordingSink) Emit(e coach.Event) error {
	r.got = append(r.got, lines([]coach.Event{e}))
	return nil
}

func (r *recordingSink) Flush() error {
	r.got = append(r.got, "flush")
	return nil
}

// TestLinesHeldOnlyWhileTheNextIsInHand checks when lines reach the client: for a stream that
// says when it may wait, lines are held while fragments already read remain and flushed before
// every wait; for any other stream, each fragment's line is flushed at once.
func TestLinesHeldOnlyWhileTheNextIsInHand(t *testing.T) {
	frags := []string{"a", "b", "c", "d", "e."}
	tests := []struct {
		name  string
		batch int
		want  string
	}{
		{name: "a stream that reads two fragments at a time", batch: 2,
			want: "delta:a delta:b flush delta:c delta:d flush delta:e. result flush"},
		{name: "a stream that does not report its waits",
			want: "delta:a flush delta:b flush delta:c flush delta:d flush delta:e. flush result flush"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _, sess := newTestService(t, &fakeModel{scripts: []script{{frags: frags, batch: tt.batch}}}, coach.Options{}, echoContract{})
			run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
			if err != nil {
				t.Fatal(err)
			}
			var sink recordingSink
			if rep := run.Run(context.Background(), &sink); rep.Outcome != "ok" {
				t.Fatalf("outcome = %q (%v), want ok", rep.Outcome, rep.Err)
			}
			if got := strings.Join(sink.got, " "); got != tt.want {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
		})
	}
}
