package uistream

import (
	"encoding/json"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

func TestMessages(t *testing.T) {
	no := false
	learner := func(seq int64, input string) coach.TranscriptEntry {
		return coach.TranscriptEntry{Seq: seq, Role: coach.TranscriptLearner, Input: json.RawMessage(input)}
	}
	result := func(seq int64, r string) coach.TranscriptEntry {
		return coach.TranscriptEntry{Seq: seq, Role: coach.TranscriptCoach, Result: json.RawMessage(r), Fallback: &no}
	}
	card := func(seq int64, c string) coach.TranscriptEntry {
		return coach.TranscriptEntry{Seq: seq, Role: coach.TranscriptCoach, Card: json.RawMessage(c)}
	}
	crisisNotice := &coach.SafetyNotice{Kind: "crisis", Locale: "en-US", Message: "You don't have to go through this alone.",
		Resources: []safety.Resource{{Name: "988 Suicide & Crisis Lifeline", Phone: "988", Text: "988", URL: "https://988lineadevida.org"}}}
	crisis := func(seq int64, r string) coach.TranscriptEntry {
		e := result(seq, r)
		e.Safety = crisisNotice
		return e
	}
	// of gives entries the turn that wrote them, as the engine stores them since v1.2.
	of := func(turn string, entries ...coach.TranscriptEntry) []coach.TranscriptEntry {
		for i := range entries {
			entries[i].Turn = turn
		}
		return entries
	}
	const (
		notice        = `{"kind":"crisis","locale":"en-US","message":"You don't have to go through this alone.","resources":[{"name":"988 Suicide \u0026 Crisis Lifeline","phone":"988","text":"988","url":"https://988lineadevida.org"}]}`
		supportive    = `{"assistantText":"I'm here with you."}`
		toulminResult = `{"assistantText":"Tell me more.\n\nWhat is your claim?","step":"claim"}`
		cardResult    = `{"card_type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":"Call"}]}`
		levelUp       = `{"card_type":"level_up","content":"Level 2!"}`
		moduleResult  = `{"content":{"text_blocks":[{"type":"paragraph","content":"Hello."},{"type":"tip","content":"Breathe."}]}}`
	)
	tests := []struct {
		name    string
		entries []coach.TranscriptEntry
		want    string
	}{
		{"toulmin: a learner entry and a coach result", []coach.TranscriptEntry{learner(1, `{"message":"Cities should ban cars."}`), result(2, toulminResult)},
			`[{"id":"msg-1","role":"user","parts":[{"type":"text","text":"Cities should ban cars.","state":"done"}]},` +
				`{"id":"msg-2","role":"assistant","parts":[{"type":"text","text":"Tell me more.\n\nWhat is your claim?","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"result":` + toulminResult + `}}]}]`},
		{"toulmin: continue and a proposal decision", []coach.TranscriptEntry{learner(3, `{"continue":true,"step":"grounds"}`), learner(4, `{"action":"accept"}`)},
			`[{"id":"msg-3","role":"user","parts":[{"type":"data-coach-continue","data":{"step":"grounds"}}]},` +
				`{"id":"msg-4","role":"user","parts":[{"type":"data-coach-decision","data":{"action":"accept"}}]}]`},
		{"cards: a selection, an injected card and the result", []coach.TranscriptEntry{learner(5, `{"selected":"a"}`), card(6, levelUp), result(7, cardResult)},
			`[{"id":"msg-5","role":"user","parts":[{"type":"data-coach-select","data":{"selected":"a"}}]},` +
				`{"id":"msg-6","role":"assistant","parts":[{"type":"data-coach-card","data":{"card":` + levelUp + `}},` +
				`{"type":"text","text":"Pick one.","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"result":` + cardResult + `}}]}]`},
		{"cards: a page that ends after an injected card", []coach.TranscriptEntry{card(6, levelUp)},
			`[{"id":"msg-6","role":"assistant","parts":[{"type":"data-coach-card","data":{"card":` + levelUp + `}}]}]`},
		{"module: a form answer and text blocks", []coach.TranscriptEntry{learner(8, `{"form":{"id":"f1","values":{"mood":3}}}`), result(9, moduleResult)},
			`[{"id":"msg-8","role":"user","parts":[{"type":"data-coach-form","data":{"id":"f1","values":{"mood":3}}}]},` +
				`{"id":"msg-9","role":"assistant","parts":[` +
				`{"type":"text","text":"Hello.","state":"done","providerMetadata":{"coachgw":{"block":0,"blockType":"paragraph"}}},` +
				`{"type":"text","text":"Breathe.","state":"done","providerMetadata":{"coachgw":{"block":1,"blockType":"tip"}}},` +
				`{"type":"data-coach-result","data":{"fallback":false,"result":` + moduleResult + `}}]}]`},
		{"a crisis turn: its notice first, then the supportive text and result", []coach.TranscriptEntry{learner(10, `{"message":"…"}`), crisis(11, supportive)},
			`[{"id":"msg-10","role":"user","parts":[{"type":"text","text":"…","state":"done"}]},` +
				`{"id":"msg-11","role":"assistant","parts":[` +
				`{"type":"data-coach-safety","data":` + notice + `},` +
				`{"type":"text","text":"I'm here with you.","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"result":` + supportive + `}}]}]`},
		{"a notice on an entry of its own, before the result", []coach.TranscriptEntry{learner(12, `{"continue":true}`), {Seq: 13, Role: coach.TranscriptCoach, Safety: crisisNotice}, result(14, supportive)},
			`[{"id":"msg-12","role":"user","parts":[{"type":"data-coach-continue","data":{}}]},` +
				`{"id":"msg-13","role":"assistant","parts":[` +
				`{"type":"data-coach-safety","data":` + notice + `},` +
				`{"type":"text","text":"I'm here with you.","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"result":` + supportive + `}}]}]`},
		{"turns: an answer's id is its turn's, and its result names the turn", append(of("t1", learner(1, `{"message":"Cities should ban cars."}`), result(2, toulminResult)), of("t2", learner(3, `{"message":"More."}`), result(4, toulminResult))...),
			`[{"id":"msg-1","role":"user","parts":[{"type":"text","text":"Cities should ban cars.","state":"done"}]},` +
				`{"id":"t1","role":"assistant","parts":[{"type":"text","text":"Tell me more.\n\nWhat is your claim?","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"turn":"t1","result":` + toulminResult + `}}]},` +
				`{"id":"msg-3","role":"user","parts":[{"type":"text","text":"More.","state":"done"}]},` +
				`{"id":"t2","role":"assistant","parts":[{"type":"text","text":"Tell me more.\n\nWhat is your claim?","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"turn":"t2","result":` + toulminResult + `}}]}]`},
		{"turns: an injected card opens its turn's message", of("t3", learner(5, `{"selected":"a"}`), card(6, levelUp), result(7, cardResult)),
			`[{"id":"msg-5","role":"user","parts":[{"type":"data-coach-select","data":{"selected":"a"}}]},` +
				`{"id":"t3","role":"assistant","parts":[{"type":"data-coach-card","data":{"card":` + levelUp + `}},` +
				`{"type":"text","text":"Pick one.","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"turn":"t3","result":` + cardResult + `}}]}]`},
		{"turns: a notice on an entry without a turn, then its turn's result", []coach.TranscriptEntry{{Seq: 15, Role: coach.TranscriptCoach, Safety: crisisNotice}, of("t4", result(16, supportive))[0]},
			`[{"id":"t4","role":"assistant","parts":[` +
				`{"type":"data-coach-safety","data":` + notice + `},` +
				`{"type":"text","text":"I'm here with you.","state":"done"},` +
				`{"type":"data-coach-result","data":{"fallback":false,"turn":"t4","result":` + supportive + `}}]}]`},
		{"no entries", nil, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(Messages(tt.entries))
			if err != nil {
				t.Fatal(err)
			}
			if got := compact(t, b); got != compact(t, []byte(tt.want)) {
				t.Errorf("got  %s\nwant %s", got, compact(t, []byte(tt.want)))
			}
		})
	}
}

// compact re-encodes JSON so that two documents compare by content, members sorted.
func compact(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestPendingMessage shapes a running turn's input as the user message its stored learner entry
// will be: the same parts, under the pending id and metadata that name the turn.
func TestPendingMessage(t *testing.T) {
	tests := []struct {
		name, input string
	}{
		{"message", `{"message":"Cities should ban cars."}`},
		{"select", `{"selected":"a"}`},
		{"continue", `{"continue":true,"step":"grounds"}`},
		{"form", `{"form":{"id":"check","values":{"intensity":3}}}`},
		{"unreadable", `not json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PendingMessage("t1", json.RawMessage(tt.input))
			stored := Messages([]coach.TranscriptEntry{{Seq: 7, Turn: "t1", Role: coach.TranscriptLearner, Input: json.RawMessage(tt.input)}})
			if len(stored) != 1 {
				t.Fatalf("Messages of one learner entry = %+v", stored)
			}
			gotParts, _ := json.Marshal(got.Parts)
			wantParts, _ := json.Marshal(stored[0].Parts)
			if string(gotParts) != string(wantParts) {
				t.Errorf("parts = %s, want the stored entry's %s", gotParts, wantParts)
			}
			if got.ID != "pending-t1" || got.Role != coach.RoleUser {
				t.Errorf("id %q role %q, want pending-t1 and user", got.ID, got.Role)
			}
			if want := `{"coachgw":{"pending":true,"turn":"t1"}}`; string(got.Metadata) != want {
				t.Errorf("metadata = %s, want %s", got.Metadata, want)
			}
		})
	}
}
