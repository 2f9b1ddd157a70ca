package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// hushContract is echoContract whose turns show no text for fragments that start with "#", as
// a contract shows nothing of the keys that precede its streamed field.
type hushContract struct{ echoContract }

func (c hushContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.echoContract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return &hushTurn{t.(*echoTurn)}, nil
}

type hushTurn struct{ *echoTurn }

func (t *hushTurn) Feed(f coach.Fragment, emit func(coach.Event)) error {
	if strings.HasPrefix(f.Content, "#") {
		t.out.WriteString(f.Content)
		return nil
	}
	return t.echoTurn.Feed(f, emit)
}

func TestSilentRetryStartsTheOutputOver(t *testing.T) {
	cut := &coach.ModelError{Class: "stream", Retryable: true, Err: errors.New("cut")}
	m := &fakeModel{scripts: []script{{frags: []string{"#keys "}, err: cut}, {frags: []string{"Hello."}}}}
	svc, _, sess := newTestService(t, m, testOptions(), hushContract{})
	got, rep := runTurn(t, svc, sess.ID)
	if g, want := lines(got), "delta:Hello. result"; g != want {
		t.Fatalf("lines = %q, want %q", g, want)
	}
	var res struct{ Text string }
	if err := json.Unmarshal(got[len(got)-1].Result, &res); err != nil || res.Text != "Hello." {
		t.Errorf("result text = %q (%v), want %q: the failed call's output leaked into the retry", res.Text, err, "Hello.")
	}
	if rep.Attempts != 2 || rep.Resets != 0 {
		t.Errorf("attempts %d, resets %d; want 2 and 0", rep.Attempts, rep.Resets)
	}
}

// trickleModel answers with text only after a while, meanwhile reporting bytes (e.g. one byte
// at a time of a slow stream, or keep-alive comments) through Activity when report is set.
type trickleModel struct {
	report       bool
	every, total time.Duration
	text         string
}

func (m *trickleModel) Stream(ctx context.Context, _ coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	return &trickleStream{m: m, ctx: ctx, alive: hooks.Activity}, nil
}

type trickleStream struct {
	m     *trickleModel
	ctx   context.Context
	alive func()
	done  bool
}

func (s *trickleStream) Next() (coach.Fragment, error) {
	if s.done {
		return coach.Fragment{}, io.EOF
	}
	if s.m.report && s.alive != nil {
		s.alive() // the first bytes arrive at once, not a tick later
	}
	tick := time.NewTicker(s.m.every)
	defer tick.Stop()
	end := time.After(s.m.total)
	for {
		select {
		case <-s.ctx.Done():
			return coach.Fragment{}, &coach.ModelError{Class: "timeout", Retryable: true, Err: context.Cause(s.ctx)}
		case <-tick.C:
			if s.m.report && s.alive != nil {
				s.alive()
			}
		case <-end:
			s.done = true
			return coach.Fragment{Content: s.m.text}, nil
		}
	}
}

func (s *trickleStream) Close() error { return nil }

func TestDeadlinesCountBytesNotFragments(t *testing.T) {
	tests := []struct {
		name   string
		report bool
		want   string
	}{
		{"a trickle reported as activity is alive", true, "delta:Slow. result"},
		{"silence until the first-byte deadline fails", false, "error:coach_stream_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			// The answer comes after three deadlines; the trickle reports activity fifty times
			// per deadline, so that only a stall of the whole process for most of a deadline
			// (on a loaded machine, both timers are late together) could fail the first case.
			const deadline = 250 * time.Millisecond
			opts.FirstByteTimeout, opts.IdleTimeout, opts.MaxAttempts, opts.Recoveries = deadline, deadline, 1, -1
			st := newStoreFake()
			m := &trickleModel{report: tt.report, every: deadline / 50, total: 3 * deadline, text: "Slow."}
			svc := coach.NewService(st, m, []coach.Contract{echoContract{}}, opts, nil)
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatal(err)
			}
			got, rep := runTurn(t, svc, sess.ID)
			if g := lines(got); g != tt.want {
				t.Errorf("lines = %q, want %q (%v)", g, tt.want, rep.Err)
			}
		})
	}
}

func TestStallAfterTextIsAnIdleTimeout(t *testing.T) {
	opts := testOptions()
	opts.FirstByteTimeout, opts.IdleTimeout = time.Second, 50*time.Millisecond
	m := &fakeModel{scripts: []script{{frags: []string{"a"}, block: true}, {frags: []string{"b"}, block: true}}}
	svc, _, sess := newTestService(t, m, opts, nil)
	got, rep := runTurn(t, svc, sess.ID)
	if g, want := lines(got), "delta:a reset:stalled delta:b error:coach_stream_failed"; g != want {
		t.Errorf("lines = %q, want %q", g, want)
	}
	if !errors.Is(rep.Err, coach.ErrIdle) {
		t.Errorf("turn error = %v, want the idle deadline as its cause", rep.Err)
	}
}
