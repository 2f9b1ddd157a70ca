package metrics

import (
	"math"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

func TestOverhead(t *testing.T) {
	tests := []struct {
		name string
		rep  coach.Report
		// wantFirst and wantTurn are the sums observed in seconds; a negative count means none.
		wantFirst, wantTurn   float64
		countFirst, countTurn uint64
	}{
		{
			name: "turn with text",
			rep: coach.Report{Contract: "toulmin", Outcome: "ok", Deltas: 3, FirstDelta: 250 * time.Millisecond, Duration: 2 * time.Second,
				Timing: coach.Timing{ModelToFirstLine: 248 * time.Millisecond, Model: 1990 * time.Millisecond}},
			wantFirst: 0.002, wantTurn: 0.010, countFirst: 1, countTurn: 1,
		},
		{
			name:     "turn without text counts only its whole",
			rep:      coach.Report{Contract: "toulmin", Outcome: coach.CodeStepMismatch, Duration: 3 * time.Millisecond},
			wantTurn: 0.003, countTurn: 1,
		},
		{
			name: "a turn the client left is nobody's overhead",
			rep: coach.Report{Contract: "toulmin", Outcome: "cancelled", Deltas: 1, FirstDelta: time.Second, Duration: 9 * time.Second,
				Timing: coach.Timing{Model: time.Second}},
		},
		{
			name: "clocks that disagree never make it negative",
			rep: coach.Report{Contract: "cards", Outcome: "ok", Deltas: 1, FirstDelta: time.Millisecond, Duration: time.Millisecond,
				Timing: coach.Timing{ModelToFirstLine: 2 * time.Millisecond, Model: 2 * time.Millisecond}},
			countFirst: 1, countTurn: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			m.TurnStarted(tt.rep.Contract)
			m.TurnEnded(tt.rep)
			for _, c := range []struct {
				phase string
				sum   float64
				count uint64
			}{{"first_line", tt.wantFirst, tt.countFirst}, {"turn", tt.wantTurn, tt.countTurn}} {
				s := series(t, m, "coachgw_overhead_seconds", "phase", c.phase)
				if s == nil {
					t.Fatalf("no series for phase %s", c.phase)
				}
				h := s.GetHistogram()
				if got := h.GetSampleCount(); got != c.count {
					t.Errorf("phase %s: got %d observations, want %d", c.phase, got, c.count)
				}
				if got := h.GetSampleSum(); math.Abs(got-c.sum) > 1e-9 {
					t.Errorf("phase %s: got sum %gs, want %gs", c.phase, got, c.sum)
				}
			}
		})
	}
}
