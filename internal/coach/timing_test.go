package coach_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// stepClock is a clock that moves only when told to, so that a test decides whose time passes.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clockedModel takes open on the clock to take a request and per for each fragment (and the
// stream's end): the model's own time.
type clockedModel struct {
	inner     coach.Model
	clock     *stepClock
	open, per time.Duration
}

func (m clockedModel) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	m.clock.advance(m.open)
	st, err := m.inner.Stream(ctx, req, hooks)
	if err != nil {
		return nil, err
	}
	return clockedStream{st, m.clock, m.per}, nil
}

type clockedStream struct {
	coach.Stream
	clock *stepClock
	per   time.Duration
}

func (s clockedStream) Next() (coach.Fragment, error) {
	s.clock.advance(s.per)
	return s.Stream.Next()
}

func TestTimingSplitsGatewayAndModel(t *testing.T) {
	const open, per, write = 40 * time.Millisecond, 10 * time.Millisecond, 2 * time.Millisecond
	tests := []struct {
		name    string
		scripts []script
		// want is the report's timing and overheads; deltas the deltas it counts.
		wantTiming            coach.Timing
		wantFirst, wantTurn   time.Duration
		wantDeltas            int
		wantFirstLineObserved bool
	}{
		{
			name:    "one attempt",
			scripts: []script{{frags: []string{"Hel", "lo."}}},
			// Two fragments and the end: three waits of per after the request's open. The
			// gateway's time is its writes: each line after the first delta's start.
			wantTiming: coach.Timing{ModelFirstByte: open + per, ModelToFirstLine: open + per, Model: open + 3*per},
			wantFirst:  0, wantTurn: 3 * write, wantDeltas: 2, wantFirstLineObserved: true,
		},
		{
			name: "a retry before text counts both attempts' waits",
			scripts: []script{
				{openErr: &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503")}},
				{frags: []string{"Hi."}},
			},
			wantTiming: coach.Timing{ModelFirstByte: 2*open + per, ModelToFirstLine: 2*open + per, Model: 2*open + 2*per},
			wantFirst:  0, wantTurn: 2 * write, wantDeltas: 1, wantFirstLineObserved: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &stepClock{t: time.Unix(1e9, 0)}
			fm := &fakeModel{scripts: tt.scripts}
			svc := coach.NewService(newStoreFake(), clockedModel{inner: fm, clock: clock, open: open, per: per},
				[]coach.Contract{echoContract{}}, testOptions(), nil)
			svc.SetNow(clock.now)
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatalf("CreateSession: %v", err)
			}
			run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
			if err != nil {
				t.Fatalf("StartTurn: %v", err)
			}
			rep := run.Run(context.Background(), coach.EmitFunc(func(coach.Event) error { clock.advance(write); return nil }))
			if rep.Outcome != "ok" {
				t.Fatalf("got outcome %q (%v), want ok", rep.Outcome, rep.Err)
			}
			if rep.Deltas != tt.wantDeltas {
				t.Errorf("got %d deltas, want %d", rep.Deltas, tt.wantDeltas)
			}
			if rep.Timing != tt.wantTiming {
				t.Errorf("got timing %+v, want %+v", rep.Timing, tt.wantTiming)
			}
			first, ok := rep.FirstLineOverhead()
			if first != tt.wantFirst || ok != tt.wantFirstLineObserved {
				t.Errorf("got first-line overhead %v, %v, want %v, %v", first, ok, tt.wantFirst, tt.wantFirstLineObserved)
			}
			if got := rep.TurnOverhead(); got != tt.wantTurn {
				t.Errorf("got turn overhead %v (duration %v), want %v", got, rep.Duration, tt.wantTurn)
			}
		})
	}
}
