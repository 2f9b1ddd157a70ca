package coach_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// endlessModel streams fragments of size bytes without end, and counts the fragments read.
// With toolCalls, each fragment opens a tool call whose id is those bytes, without arguments.
type endlessModel struct {
	size      int
	toolCalls bool
	reads     atomic.Int64
	calls     atomic.Int64
}

func (m *endlessModel) Stream(ctx context.Context, _ coach.ModelRequest, _ coach.StreamHooks) (coach.Stream, error) {
	m.calls.Add(1)
	return &endlessStream{ctx: ctx, m: m, piece: strings.Repeat("a", m.size)}, nil
}

type endlessStream struct {
	ctx   context.Context
	m     *endlessModel
	piece string
}

func (s *endlessStream) Next() (coach.Fragment, error) {
	if err := s.ctx.Err(); err != nil {
		return coach.Fragment{}, err
	}
	s.m.reads.Add(1)
	if s.m.toolCalls {
		return coach.Fragment{ToolCallID: s.piece}, nil
	}
	return coach.Fragment{Content: s.piece}, nil
}

func (s *endlessStream) Close() error { return nil }

// TestOutputBound runs turns against a model that never stops: each attempt stops reading at
// the output bound, is treated as unusable output (the corrective retry, then the fallback or
// the error line), relays no byte past the bound, and stores nothing it read.
func TestOutputBound(t *testing.T) {
	const limit, piece = 10 << 10, 1 << 10
	tests := []struct {
		name     string
		contract coach.Contract
		opts     func(*coach.Options)
		limit    int
		want     string
		outcome  string
		// toolCalls streams tool-call openings instead of text (endlessModel.toolCalls).
		toolCalls bool
	}{
		{"error line", echoContract{}, func(o *coach.Options) { o.MaxOutputBytes = limit }, limit, "reset:invalid_output error:coach_validation_failed", coach.CodeValidationFailed, false},
		{"fallback", fallbackContract{}, func(o *coach.Options) { o.MaxOutputBytes = limit }, limit, "reset:invalid_output reset:invalid_output result", "fallback", false},
		{"bound of the contract", echoContract{}, func(o *coach.Options) { o.ContractOutputBytes = map[string]int{"echo": limit / 2} }, limit / 2, "reset:invalid_output error:coach_validation_failed", coach.CodeValidationFailed, false},
		// Tool calls opened without end, without arguments: their ids are output too (a
		// contract keeps them), so the bound ends the attempt rather than the turn's deadline.
		{"tool-call ids", echoContract{}, func(o *coach.Options) { o.MaxOutputBytes, o.TurnTimeout = limit, 5*time.Second }, limit, "reset:invalid_output error:coach_validation_failed", coach.CodeValidationFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &endlessModel{size: piece, toolCalls: tt.toolCalls}
			opts := testOptions()
			tt.opts(&opts)
			st := newStoreFake()
			svc := coach.NewService(st, m, []coach.Contract{tt.contract}, opts, nil)
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatal(err)
			}
			got, rep := runTurn(t, svc, sess.ID)
			var kinds []string
			relayed := 0
			for _, e := range got {
				if e.Type == coach.EventDelta {
					relayed += len(e.Text)
					continue
				}
				kinds = append(kinds, lines([]coach.Event{e}))
			}
			if g := strings.Join(kinds, " "); !strings.HasPrefix(g, tt.want) {
				t.Errorf("lines = %q, want %q", g, tt.want)
			}
			if rep.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q", rep.Outcome, tt.outcome)
			}
			if calls := m.calls.Load(); calls != 2 {
				t.Errorf("model calls = %d, want 2 (the corrective retry)", calls)
			}
			// Each attempt reads the fragment that crosses the bound and no further.
			if reads, want := m.reads.Load(), int64(2*(tt.limit/piece+1)); reads != want {
				t.Errorf("fragments read = %d, want %d", reads, want)
			}
			if relayed > 2*tt.limit {
				t.Errorf("relayed %d bytes of deltas, want at most %d", relayed, 2*tt.limit)
			}
			stored, _ := st.Get(context.Background(), "", sess.ID)
			for _, h := range stored.History {
				if len(h.Content) > tt.limit {
					t.Errorf("stored a history message of %d bytes", len(h.Content))
				}
			}
		})
	}
}

// TestAppendHistoryBytes checks that history is trimmed to its byte bound, oldest exchanges
// first and at a user message, as well as to its count.
func TestAppendHistoryBytes(t *testing.T) {
	msg := func(role, text string) coach.Message { return coach.Message{Role: role, Content: text} }
	big := strings.Repeat("x", 400)
	old := []coach.Message{msg(coach.RoleUser, big), msg(coach.RoleAssistant, big), msg(coach.RoleUser, "q"), msg(coach.RoleAssistant, big)}
	add := []coach.Message{msg(coach.RoleUser, "new"), {Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{Arguments: big}}}, {Role: coach.RoleTool, Content: "ok"}}
	tests := []struct {
		name      string
		maxBytes  int
		wantFirst string
		wantLen   int
	}{
		{"everything fits", 10_000, big, 7},
		{"the oldest exchange goes", 1000, "q", 5},
		{"only the newest fits", 500, "new", 3},
		{"not even the newest fits", 100, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := coach.AppendHistory(old, add, 200, tt.maxBytes)
			if len(got) != tt.wantLen || len(got) > 0 && got[0].Content != tt.wantFirst {
				t.Fatalf("kept %d messages, want %d starting with %.10q", len(got), tt.wantLen, tt.wantFirst)
			}
			size := 0
			for _, m := range got {
				size += coach.MessageBytes(m)
			}
			if size > tt.maxBytes {
				t.Errorf("kept %d bytes, want at most %d", size, tt.maxBytes)
			}
		})
	}
	// A history that starts with an answer (a turn the coach opened) is kept whole when it fits.
	opened := []coach.Message{msg(coach.RoleAssistant, "Welcome."), msg(coach.RoleUser, "hi")}
	if got := coach.AppendHistory(opened, nil, 200, 1000); len(got) != 2 {
		t.Errorf("kept %d of a history that fits, want 2", len(got))
	}
}
