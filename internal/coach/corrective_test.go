package coach_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestCorrectiveRetryShowsFailedReply checks the corrective request: the model's failed reply
// comes back to it as its own (assistant) message, cut to maxReplyEcho bytes, and the correction
// follows as the user's answer, so the conversation never ends with two user messages.
func TestCorrectiveRetryShowsFailedReply(t *testing.T) {
	long := strings.Repeat("é", coach.MaxReplyEcho) // two bytes a character: the cut falls mid-rune
	tests := []struct {
		name string
		// frags is the failed reply; the retry answers "fixed.".
		frags []string
		// reply is the assistant message the corrective request shows ("" for none).
		reply string
	}{
		{name: "short reply shown whole", frags: []string{"no ", "period"}, reply: "no period"},
		{name: "long reply cut", frags: []string{long}, reply: long[:coach.MaxReplyEcho] + " [… cut]"},
		{name: "empty reply shows no message", frags: nil, reply: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			opts.MaxOutputBytes = 1 << 20
			m := &fakeModel{scripts: []script{{frags: tt.frags}, {frags: []string{"fixed."}}}}
			svc, _, sess := newTestService(t, m, opts, nil)
			if _, rep := runTurn(t, svc, sess.ID); rep.Outcome != "ok" {
				t.Fatalf("outcome = %q (%v), want ok", rep.Outcome, rep.Err)
			}
			if len(m.requests) != 2 {
				t.Fatalf("model calls = %d, want 2", len(m.requests))
			}
			first, retry := m.requests[0].Messages, m.requests[1].Messages
			added := retry[len(first):]
			wantAdded := 2
			if tt.reply == "" {
				wantAdded = 1
			}
			if len(added) != wantAdded {
				t.Fatalf("the corrective request adds %d messages (%+v), want %d", len(added), added, wantAdded)
			}
			fix := added[len(added)-1]
			if fix.Role != coach.RoleUser || !strings.HasPrefix(fix.Content, "Your previous reply could not be used") {
				t.Errorf("last message = %s %q, want the user's correction", fix.Role, fix.Content)
			}
			if tt.reply != "" {
				if got := added[0]; got.Role != coach.RoleAssistant || got.Content != strings.ToValidUTF8(tt.reply, "") {
					t.Errorf("message before the correction = %s %q (%d bytes), want the assistant's failed reply (%d bytes)",
						got.Role, coach.Clip(got.Content), len(got.Content), len(tt.reply))
				}
				for i := 1; i < len(retry); i++ {
					if retry[i].Role == coach.RoleUser && retry[i-1].Role == coach.RoleUser {
						t.Errorf("messages %d and %d are both user messages", i-1, i)
					}
				}
			}
		})
	}
}

// TestLengthFinishIsCutOff checks that output the endpoint stopped at its token cap is
// diagnosed as cut off, whatever the contract found wrong with it, and gets the corrective
// retry telling the model to be shorter; a complete answer with a length finish is used.
func TestLengthFinishIsCutOff(t *testing.T) {
	tests := []struct {
		name    string
		first   script
		calls   int
		wantFix string // a part of the correction; "" when there is no retry
		wantEnd string // how the first attempt ended, in the attempt log
	}{
		{name: "cut at the cap", first: script{frags: []string{`{"assistantText":"a very long`}, finish: coach.FinishLength},
			calls: 2, wantFix: "your answer was cut off: be shorter", wantEnd: "cut_off"},
		{name: "invalid without the cap is not cut off", first: script{frags: []string{"no period"}, finish: "stop"},
			calls: 2, wantFix: "no final period", wantEnd: "invalid_output"},
		{name: "complete at the cap is used", first: script{frags: []string{"just fits."}, finish: coach.FinishLength},
			calls: 1, wantEnd: "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{scripts: []script{tt.first, {frags: []string{"short."}}}}
			svc, _, sess := newTestService(t, m, testOptions(), nil)
			_, rep := runTurn(t, svc, sess.ID)
			if rep.Outcome != "ok" {
				t.Fatalf("outcome = %q (%v), want ok", rep.Outcome, rep.Err)
			}
			if len(m.requests) != tt.calls {
				t.Fatalf("model calls = %d, want %d", len(m.requests), tt.calls)
			}
			if tt.wantFix != "" {
				fix := lastMessage(m.requests[1])
				if !strings.Contains(fix, tt.wantFix) {
					t.Errorf("correction = %q, want it to say %q", fix, tt.wantFix)
				}
				if tt.wantEnd == "cut_off" && strings.Contains(fix, "no final period") {
					t.Errorf("correction = %q, want the cut diagnosed rather than the contract's complaint", fix)
				}
			}
			if len(rep.AttemptLog) == 0 || rep.AttemptLog[0].End != tt.wantEnd {
				t.Errorf("attempt log = %+v, want the first attempt to end %q", rep.AttemptLog, tt.wantEnd)
			}
		})
	}
}

// TestAttemptLog checks that the report lists every attempt: its endpoint, why it ended, the
// bytes it streamed and the tokens it reported, and that the list is bounded.
func TestAttemptLog(t *testing.T) {
	server := &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503 upstream down")}
	a := &fakeModel{scripts: []script{
		{frags: []string{"bad"}, usage: &coach.Usage{PromptTokens: 10, CompletionTokens: 3}, finish: "stop"},
		{frags: []string{"still bad"}, usage: &coach.Usage{PromptTokens: 12, CompletionTokens: 4}},
	}}
	b := &fakeModel{scripts: []script{{openErr: server}, {frags: []string{"good."}, usage: &coach.Usage{PromptTokens: 9, CompletionTokens: 2}}}}
	svc := coach.New(coach.Deps{Store: newStoreFake(), Upstreams: []coach.Upstream{{Name: "a", Model: a}, {Name: "b", Model: b}},
		Contracts: []coach.Contract{echoContract{}}, Options: testOptions()})
	sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	_, rep := runTurn(t, svc, sess.ID)
	if rep.Outcome != "ok" {
		t.Fatalf("outcome = %q (%v), want ok", rep.Outcome, rep.Err)
	}
	want := []coach.AttemptEntry{
		{Upstream: "a", End: "invalid_output", Detail: "no final period", Finish: "stop", Bytes: 3, Usage: &coach.Usage{10, 3}},
		{Upstream: "a", End: "invalid_output", Detail: "no final period", Bytes: 9, Usage: &coach.Usage{12, 4}},
		{Upstream: "b", End: "server", Detail: "503 upstream down"},
		{Upstream: "b", End: "ok", Bytes: 5, Usage: &coach.Usage{9, 2}},
	}
	if len(rep.AttemptLog) != len(want) || rep.Attempts != len(want) {
		t.Fatalf("attempt log = %+v (attempts %d), want %d entries", rep.AttemptLog, rep.Attempts, len(want))
	}
	for i, w := range want {
		got := rep.AttemptLog[i]
		if got.Upstream != w.Upstream || got.End != w.End || got.Detail != w.Detail || got.Finish != w.Finish ||
			got.Bytes != w.Bytes || (got.Usage == nil) != (w.Usage == nil) || got.Usage != nil && *got.Usage != *w.Usage {
			t.Errorf("attempt %d = %+v (usage %v), want %+v (usage %v)", i, got, got.Usage, w, w.Usage)
		}
	}

	t.Run("bounded", func(t *testing.T) {
		var r coach.Report
		for range coach.MaxAttemptLog + 3 {
			r.LogAttempt("a", "", 0, nil, server)
		}
		if len(r.AttemptLog) != coach.MaxAttemptLog {
			t.Errorf("attempt log holds %d entries, want at most %d", len(r.AttemptLog), coach.MaxAttemptLog)
		}
	})
}

// resetCounter counts the resets the observer hears of.
type resetCounter struct {
	coach.NopObserver
	mu       sync.Mutex
	resets   int
	retries  []string
	rejected int
}

func (o *resetCounter) Reset(string, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resets++
}

func (o *resetCounter) Retried(_, class string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retries = append(o.retries, class)
}

func (o *resetCounter) Rejected(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected++
}

// TestResetsCountResetLines checks that the observer's resets are exactly the reset lines the
// client got: a corrective retry before any text was sent is a retry, not a reset.
func TestResetsCountResetLines(t *testing.T) {
	cut := &coach.ModelError{Class: "stream", Retryable: true, Err: errors.New("cut")}
	tests := []struct {
		name      string
		a, b      []script
		fallback  bool
		wantLines int
		retries   []string
		rejected  int
	}{
		{name: "unusable output before text", a: []script{{}, {frags: []string{"ok."}}},
			wantLines: 0, retries: []string{"invalid_output"}, rejected: 1},
		{name: "unusable output after text", a: []script{{frags: []string{"bad"}}, {frags: []string{"ok."}}},
			wantLines: 1, rejected: 1},
		{name: "unusable twice before text, fallback", a: []script{{}, {}}, fallback: true,
			wantLines: 0, retries: []string{"invalid_output"}, rejected: 2},
		{name: "unusable twice before text, next endpoint", a: []script{{}, {}}, b: []script{{frags: []string{"ok."}}},
			wantLines: 0, retries: []string{"invalid_output"}, rejected: 2},
		{name: "unusable twice after text, next endpoint", a: []script{{frags: []string{"x"}}, {frags: []string{"y"}}}, b: []script{{frags: []string{"ok."}}},
			wantLines: 2, rejected: 2},
		{name: "cut after text", a: []script{{frags: []string{"x"}, err: cut}, {frags: []string{"ok."}}},
			wantLines: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &resetCounter{}
			ups := []coach.Upstream{{Name: "a", Model: &fakeModel{scripts: tt.a}}}
			if tt.b != nil {
				ups = append(ups, coach.Upstream{Name: "b", Model: &fakeModel{scripts: tt.b}})
			}
			var c coach.Contract = echoContract{}
			if tt.fallback {
				c = fallbackContract{}
			}
			svc := coach.New(coach.Deps{Store: newStoreFake(), Upstreams: ups, Contracts: []coach.Contract{c}, Options: testOptions(), Observer: obs})
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatal(err)
			}
			events, rep := runTurn(t, svc, sess.ID)
			n := 0
			for _, e := range events {
				if e.Type == coach.EventReset {
					n++
				}
			}
			if n != tt.wantLines || obs.resets != n || rep.Resets != n {
				t.Errorf("reset lines = %d, observed resets = %d, report's resets = %d; want %d of each (%s)",
					n, obs.resets, rep.Resets, tt.wantLines, lines(events))
			}
			if strings.Join(obs.retries, ",") != strings.Join(tt.retries, ",") {
				t.Errorf("retries = %q, want %q", obs.retries, tt.retries)
			}
			if obs.rejected != tt.rejected {
				t.Errorf("rejected answers = %d, want %d", obs.rejected, tt.rejected)
			}
		})
	}
}

// decliningContract is echoContract whose turns have a Fallback that declines every failure.
type decliningContract struct{ echoContract }

func (c decliningContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.echoContract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return &decliningTurn{t.(*echoTurn)}, nil
}

type decliningTurn struct{ *echoTurn }

func (t *decliningTurn) Fallback(cause error) (*coach.Outcome, error) { return nil, cause }

// TestDeclinedFallbackSendsNoReset checks that a turn whose Fallback has no answer for the
// failure ends with the error line right after the text it streamed: a reset line would
// announce a replacement that never comes.
func TestDeclinedFallbackSendsNoReset(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"bad"}}, {frags: []string{"worse"}}}}
	obs := &resetCounter{}
	svc := coach.New(coach.Deps{Store: newStoreFake(), Upstreams: []coach.Upstream{{Name: "a", Model: m}},
		Contracts: []coach.Contract{decliningContract{}}, Options: testOptions(), Observer: obs})
	sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	events, rep := runTurn(t, svc, sess.ID)
	want := "delta:bad reset:invalid_output delta:worse error:coach_validation_failed"
	if got := lines(events); got != want || rep.Resets != 1 || obs.resets != 1 {
		t.Errorf("lines %q (resets %d, observed %d), want %q (1 reset)", got, rep.Resets, obs.resets, want)
	}
}

// TestCorrectionNeverReachesLearner checks the error line of a turn whose output stays unusable
// after the corrective retry, on a contract with no fallback: it keeps the error's code, but its
// message is the learner's, never the correction written for the model ("be shorter", the
// contract's complaint), which stays in the report's error for the logs.
func TestCorrectionNeverReachesLearner(t *testing.T) {
	cut := script{frags: []string{`{"assistantText":"a very long`}, finish: coach.FinishLength}
	tests := []struct {
		name     string
		scripts  []script
		wantCode string
		modelFix string // what the model was told, which the learner must not read
	}{
		{name: "empty, then cut", scripts: []script{{frags: []string{"EMPTY"}}, cut},
			wantCode: coach.CodeValidationFailed, modelFix: coach.CutOff},
		{name: "cut twice", scripts: []script{cut, cut}, wantCode: coach.CodeValidationFailed, modelFix: coach.CutOff},
		{name: "invalid twice", scripts: []script{{frags: []string{"no period"}}, {frags: []string{"still none"}}},
			wantCode: coach.CodeValidationFailed, modelFix: "no final period"},
		{name: "cut, then empty", scripts: []script{cut, {frags: []string{"EMPTY"}}},
			wantCode: coach.CodeEmptyResponse, modelFix: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{scripts: tt.scripts}
			svc, _, sess := newTestService(t, m, testOptions(), nil)
			events, rep := runTurn(t, svc, sess.ID)
			if len(m.requests) != 2 {
				t.Fatalf("model calls = %d, want 2 (one corrective retry)", len(m.requests))
			}
			last := events[len(events)-1]
			if last.Type != coach.EventError || last.Code != tt.wantCode {
				t.Fatalf("last line = %+v, want an error line %s", last, tt.wantCode)
			}
			if last.Message != coach.UnusableAnswer {
				t.Errorf("error line message = %q, want %q", last.Message, coach.UnusableAnswer)
			}
			if !strings.Contains(rep.Err.Error(), tt.modelFix) {
				t.Errorf("report error = %v, want the model's correction %q kept for the logs", rep.Err, tt.modelFix)
			}
		})
	}
}
