package coach_test

import (
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// tailContract is echoContract whose outcomes carry a tail, placed as tail says.
type tailContract struct {
	echoContract
	tail coach.Outcome
}

func (c tailContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.echoContract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return &tailTurn{t.(*echoTurn), c.tail}, nil
}

type tailTurn struct {
	*echoTurn
	tail coach.Outcome
}

func (t *tailTurn) Finish() (*coach.Outcome, error) {
	out, err := t.echoTurn.Finish()
	if err != nil {
		return nil, err
	}
	out.Tail, out.TailBlock, out.TailBlockType = t.tail.Tail, t.tail.TailBlock, t.tail.TailBlockType
	return out, nil
}

// TestTailDelta checks that a turn's tail is sent as one delta right before the result, outside
// any block unless the outcome places it in one (a module's text block).
func TestTailDelta(t *testing.T) {
	tests := []struct {
		name      string
		tail      coach.Outcome
		block     int
		blockType string
	}{
		{"outside any block", coach.Outcome{Tail: " And you?"}, -1, ""},
		{"in block 0", coach.Outcome{Tail: "Aquí sigo.", TailBlock: 0, TailBlockType: "paragraph"}, 0, "paragraph"},
		{"in a later block", coach.Outcome{Tail: "Tip.", TailBlock: 2, TailBlockType: "tip"}, 2, "tip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{scripts: []script{{frags: []string{"Hi."}}}}
			svc, _, sess := newTestService(t, m, coach.Options{}, tailContract{tail: tt.tail})
			got, _ := runTurn(t, svc, sess.ID)
			if len(got) < 2 || got[len(got)-1].Type != coach.EventResult {
				t.Fatalf("lines %s, want a result last", lines(got))
			}
			e := got[len(got)-2]
			if e.Type != coach.EventDelta || e.Text != tt.tail.Tail || e.Block != tt.block || e.BlockType != tt.blockType {
				t.Errorf("line before the result = %+v, want delta %q in block %d %q", e, tt.tail.Tail, tt.block, tt.blockType)
			}
		})
	}
}
