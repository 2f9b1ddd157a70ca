package ndjson

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

func TestAppend(t *testing.T) {
	tests := []struct {
		name string
		e    coach.Event
		want string
	}{
		{"delta", coach.Delta("Hi \"you\"\n"), `{"type":"delta","text":"Hi \"you\"\n"}`},
		{"block delta", coach.Event{Type: coach.EventDelta, Text: "x", Block: 2, BlockType: "heading"}, `{"type":"delta","text":"x","block":2,"blockType":"heading"}`},
		{"reset", coach.Event{Type: coach.EventReset, Reason: "stalled"}, `{"type":"reset","reason":"stalled"}`},
		{"error", coach.Event{Type: coach.EventError, Code: "coach_stream_failed", Message: "m"}, `{"type":"error","error":"coach_stream_failed","message":"m"}`},
		{"card", coach.Event{Type: coach.EventCard, Card: json.RawMessage(`{"type":"level_up"}`)}, `{"type":"card","card":{"type":"level_up"}}`},
		{"result", coach.Event{Type: coach.EventResult, Result: json.RawMessage(`{"a":1}`), Fallback: true}, `{"type":"result","result":{"a":1},"fallback":true}`},
		{"result with upstream", coach.Event{Type: coach.EventResult, Result: json.RawMessage(`{"a":1}`), Upstream: "local"}, `{"type":"result","result":{"a":1},"upstream":"local"}`},
		{"safety", coach.Event{Type: coach.EventSafety, Safety: &coach.SafetyNotice{Kind: "crisis", Locale: "en-US", Message: "m", Resources: []safety.Resource{{Name: "988", Phone: "988"}}}},
			`{"type":"safety","kind":"crisis","locale":"en-US","message":"m","resources":[{"name":"988","phone":"988"}]}`},
		{"error with turn", coach.Event{Type: coach.EventError, Code: "turn_cancelled", Message: "stopped", Turn: "t1"}, `{"type":"error","error":"turn_cancelled","message":"stopped","turn":"t1"}`},
		{"result with session and turn", coach.Event{Type: coach.EventResult, Result: json.RawMessage(`{"a":1}`), Session: &coach.Session{ID: "s1", Contract: "toulmin", Version: 2}, Turn: "t1"},
			`{"type":"result","result":{"a":1},"session":` + sessionJSON(t, &coach.Session{ID: "s1", Contract: "toulmin", Version: 2}) + `,"turn":"t1"}`},
		{"result with usage", coach.Event{Type: coach.EventResult, Result: json.RawMessage(`{"a":1}`), Upstream: "p", Usage: &coach.Usage{PromptTokens: 812, CompletionTokens: 64}},
			`{"type":"result","result":{"a":1},"upstream":"p","usage":{"promptTokens":812,"completionTokens":64}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Append(nil, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want+"\n" {
				t.Errorf("Append() = %s, want %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("line %s is not valid JSON", got)
			}
			// A replay decodes the kept line and encodes it again: every line type must come
			// back as it was.
			e, err := Parse(got[:len(got)-1])
			if err != nil {
				t.Fatalf("Parse(%s): %v", got, err)
			}
			again, err := Append(nil, e)
			if err != nil || string(again) != string(got) {
				t.Errorf("Append(Parse(%s)) = %s, %v; want the line again", got, again, err)
			}
		})
	}
}

// sessionJSON is s as a result line carries it.
func sessionJSON(t *testing.T, s *coach.Session) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{"", "plain", "quote\" back\\slash", "ctl\x00\x01\x1f", "<b>&amp;</b>", "ünï😀", "\u2028\u2029", "bad\xffutf8", "tab\tcr\r"}
	for _, in := range inputs {
		t.Run(in, func(t *testing.T) {
			got := AppendString(nil, in)
			want, _ := json.Marshal(in)
			if string(got) != string(want) {
				t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
			}
		})
	}
}

// TestAppendString puts each character that needs care at every offset of a string a little
// longer than two of the eight-byte words AppendString scans at once.
func TestAppendString(t *testing.T) {
	const filler = "abcdefghijklmnopqr"
	for _, special := range []string{"\x00", "\b", "\f", "\x1f", " ", "\"", "\\", "<", ">", "&", "=", "?", "$", "'", "\x7f", "é",
		"\u2028", "\u2029", "\u2027", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80"} {
		for at := 0; at <= len(filler); at++ {
			s := filler[:at] + special + filler[at:]
			want, _ := json.Marshal(s)
			if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
				t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"a", "\"\\", "\u2028", "\xff", "😀<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: not JSON: %v", s, got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}

var sink []byte

func BenchmarkAppendDelta(b *testing.B) {
	e := coach.Delta("Your claim is clear, but ")
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = Append(buf[:0], e)
	}
	sink = buf
}

func BenchmarkAppendDeltaEscaped(b *testing.B) {
	e := coach.Event{Type: coach.EventDelta, Text: strings.Repeat("a \"quoted\" ñ\n", 3), Block: 1, BlockType: "paragraph"}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = Append(buf[:0], e)
	}
	sink = buf
}
