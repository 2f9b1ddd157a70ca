package httpapi

import (
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/turns"
)

// Lines of a turn's log, as ndjson.Append writes them.
const (
	lineDelta  = `{"type":"delta","text":"a"}` + "\n"
	lineReset  = `{"type":"reset","reason":"invalid_output"}` + "\n"
	lineSafety = `{"type":"safety","kind":"crisis","locale":"en-US","message":"m","resources":[{"name":"988","phone":"988"}]}` + "\n"
	lineResult = `{"type":"result","result":{"assistantText":"a"},"turn":"t1"}` + "\n"
	lineError  = `{"type":"error","error":"turn_cancelled","message":"stopped","turn":"t1"}` + "\n"
	lineCard   = `{"type":"card","card":{"type":"level_up"}}` + "\n"
	lineLost   = `{"type":"error","error":"turn_lost","message":"gone","turn":"t1"}` + "\n"
)

// TestChatReplayPlan reads logs as GET …/chat/stream does before it answers: whether the turn
// ended, whether it stored nothing, and up to which line its resets settled the text.
func TestChatReplayPlan(t *testing.T) {
	tests := []struct {
		name    string
		batches []turns.Batch
		want    chatReplay
	}{
		{"running, nothing yet", nil, chatReplay{}},
		{"running", []turns.Batch{{Lines: []byte(lineDelta + lineDelta)}}, chatReplay{}},
		{"stored", []turns.Batch{{Lines: []byte(lineDelta)}, {First: 1, Lines: []byte(lineResult), End: true}},
			chatReplay{ended: true}},
		{"crisis stored", []turns.Batch{{Lines: []byte(lineSafety + lineDelta + lineResult), End: true}},
			chatReplay{ended: true}},
		{"stopped", []turns.Batch{{Lines: []byte(lineDelta + lineDelta)}, {First: 2, Lines: []byte(lineError), End: true}},
			chatReplay{ended: true, unstored: true}},
		{"lost", []turns.Batch{{Lines: []byte(lineDelta + lineDelta)}, {First: 2, Lines: []byte(lineLost), End: true}},
			chatReplay{ended: true, unstored: true}},
		{"failed before a line", []turns.Batch{{}, {Lines: []byte(lineError), End: true}},
			chatReplay{ended: true, unstored: true}},
		{"reset then stored", []turns.Batch{{Lines: []byte(lineDelta + lineDelta)}, {First: 2, Lines: []byte(lineReset + lineDelta)}, {First: 4, Lines: []byte(lineResult), End: true}},
			chatReplay{ended: true, settled: 3}},
		{"reset in a running turn", []turns.Batch{{Lines: []byte(lineDelta + lineReset + lineDelta + lineReset)}},
			chatReplay{settled: 4}},
		{"an empty last batch after the result", []turns.Batch{{Lines: []byte(lineDelta + lineResult)}, {First: 2, End: true}},
			chatReplay{ended: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got chatReplay
			for _, b := range tt.batches {
				got.add(b)
			}
			if got != tt.want {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestChatReplayDecoder replays a log through the decoder of its plan: the deltas and resets up
// to the last settled reset are left out, every other line, before or after it, is kept.
func TestChatReplayDecoder(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		settled int64
		want    string
	}{
		{"no reset", []string{lineSafety, lineDelta, lineResult}, 0, "safety delta result"},
		{"a reset", []string{lineCard, lineDelta, lineDelta, lineReset, lineDelta, lineResult}, 4, "card delta result"},
		{"two resets", []string{lineDelta, lineReset, lineDelta, lineReset, lineDelta, lineError}, 4, "delta error"},
		{"a reset after the plan", []string{lineDelta, lineReset, lineDelta, lineReset, lineDelta}, 2, "delta reset delta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decode := chatReplay{settled: tt.settled}.decoder()
			var got []string
			for _, l := range tt.lines {
				if e, ok := decode([]byte(strings.TrimSuffix(l, "\n"))); ok {
					got = append(got, e.Type)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("replayed %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

// TestLineType reads the type of the gateway's own lines, and nothing from anything else.
func TestLineType(t *testing.T) {
	tests := []struct{ line, want string }{
		{lineDelta, coach.EventDelta},
		{lineReset, coach.EventReset},
		{lineError, coach.EventError},
		{`{"type":"`, ""},
		{`{"text":"x","type":"reset"}`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := lineType([]byte(strings.TrimSuffix(tt.line, "\n"))); got != tt.want {
			t.Errorf("lineType(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
