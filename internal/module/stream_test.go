package module

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
)

// richResponse has escapes, a surrogate pair, raw multi-byte text and a member after the blocks.
const richResponse = `{"content":{"text_blocks":[` +
	`{"type":"heading","level":2,"content":"\ud83c\udf89 Gran progreso"},` +
	`{"type":"paragraph","content":"Línea \"uno\"\nlínea dos — ñandú 🎉"},` +
	`{"type":"list","content":"- a\\b\n- \u00e9"}` +
	`],"next_step":{"prompt":"¿Seguimos?"}},"meta":{"response_type":"summary"}}`

var richBlocks = map[int]string{0: "🎉 Gran progreso", 1: "Línea \"uno\"\nlínea dos — ñandú 🎉", 2: "- a\\b\n- é"}
var richTypes = []string{"heading", "paragraph", "list"}

// feedAll feeds the output in the given pieces to a fresh streamer and returns the events.
func feedAll(pieces []string) []coach.Event {
	var s streamer
	s.init()
	var events []coach.Event
	for _, p := range pieces {
		events = append(events, s.feed([]byte(p))...)
	}
	return events
}

// checkDeltas checks the events' per-block text, block types, UTF-8 and block order.
func checkDeltas(t *testing.T, events []coach.Event, want map[int]string, types []string) {
	t.Helper()
	last := -1
	for _, e := range events {
		if e.Type != coach.EventDelta || e.Text == "" || !utf8.ValidString(e.Text) {
			t.Fatalf("bad event %+v", e)
		}
		if e.Block < last {
			t.Fatalf("block %d after block %d", e.Block, last)
		}
		last = e.Block
		if e.BlockType != types[e.Block] {
			t.Fatalf("block %d has type %q, want %q", e.Block, e.BlockType, types[e.Block])
		}
	}
	got := joinDeltas(events)
	if len(got) != len(want) {
		t.Fatalf("deltas = %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("block %d text = %q, want %q", i, got[i], w)
		}
	}
}

func TestStreamBlocksAnySplit(t *testing.T) {
	// Every two-piece split, including inside escapes, multi-byte runes and member names.
	for i := 0; i <= len(richResponse); i++ {
		checkDeltas(t, feedAll([]string{richResponse[:i], richResponse[i:]}), richBlocks, richTypes)
	}
	// One byte at a time, and uneven pieces.
	var bytes1 []string
	for i := range len(richResponse) {
		bytes1 = append(bytes1, richResponse[i:i+1])
	}
	checkDeltas(t, feedAll(bytes1), richBlocks, richTypes)
	for _, size := range []int{2, 3, 5, 7, 13} {
		var pieces []string
		for i := 0; i < len(richResponse); i += size {
			pieces = append(pieces, richResponse[i:min(i+size, len(richResponse))])
		}
		checkDeltas(t, feedAll(pieces), richBlocks, richTypes)
	}
}

func TestStreamIsIncremental(t *testing.T) {
	// Text is relayed as it arrives, not when its block ends.
	var s streamer
	s.init()
	events := s.feed([]byte(`{"content":{"text_blocks":[{"type":"tip","content":"Breathe `))
	if len(events) != 1 || events[0].Text != "Breathe " || events[0].BlockType != "tip" || events[0].Block != 0 {
		t.Fatalf("events = %+v, want the first words of block 0 as a tip", events)
	}
	events = s.feed([]byte(`slowly."}`))
	if len(events) != 1 || events[0].Text != "slowly." {
		t.Fatalf("events = %+v, want the rest", events)
	}
}

func TestStreamTypeAfterContent(t *testing.T) {
	out := `{"content":{"text_blocks":[` +
		`{"content":"Tip text","type":"tip"},` +
		`{"content":"No type at all"},` +
		`{"type":"list","content":"- typed first"},` +
		`{"content":"Unknown type","type":"bullet"},` +
		`{"content":"Last, untyped"}` +
		`]},"meta":{"response_type":"educational"}}`
	checkDeltas(t, feedAll([]string{out}), map[int]string{
		0: "Tip text", 1: "No type at all", 2: "- typed first", 3: "Unknown type", 4: "Last, untyped",
	}, []string{"tip", "paragraph", "list", "paragraph", "paragraph"})

	// Byte by byte: block 0's text is held until its type arrives, then sent whole.
	var s streamer
	s.init()
	typeAt := strings.Index(out, `"tip"`) + len(`"tip"`)
	for i := range typeAt - 1 {
		if ev := s.feed([]byte(out[i : i+1])); len(ev) > 0 {
			t.Fatalf("delta %+v before block 0's type was known (offset %d)", ev, i)
		}
	}
	ev := s.feed([]byte(out[typeAt-1 : typeAt]))
	if len(ev) != 1 || ev[0].Text != "Tip text" || ev[0].Block != 0 || ev[0].BlockType != "tip" {
		t.Fatalf("at the type's end: %+v, want block 0's whole text as a tip", ev)
	}
	// Block 1 never gets a type: it is sent when block 2 begins.
	block2 := strings.Index(out, `{"type":"list"`) + len(`{"type":"`)
	for i := typeAt; i < block2-1; i++ {
		if ev := s.feed([]byte(out[i : i+1])); len(ev) > 0 {
			t.Fatalf("delta %+v before block 1 ended (offset %d)", ev, i)
		}
	}
	ev = s.feed([]byte(out[block2-1 : block2]))
	if len(ev) != 1 || ev[0].Block != 1 || ev[0].BlockType != "paragraph" || ev[0].Text != "No type at all" {
		t.Fatalf("when block 2 began: %+v, want block 1 as a paragraph", ev)
	}
}

func TestStreamUntypedBlockAtTheEnd(t *testing.T) {
	// Nothing follows the last block, so the document's end ends it.
	out := `{"meta":{"response_type":"educational"},"content":{"text_blocks":[{"content":"end"}]}}`
	checkDeltas(t, feedAll([]string{out[:len(out)-1], out[len(out)-1:]}), map[int]string{0: "end"}, []string{"paragraph"})
}

func TestStreamModes(t *testing.T) {
	json := response("Hola 🎉 ñ")
	tests := []struct {
		name   string
		pieces []string
		want   map[int]string
	}{
		{"markdown", []string{"  \n", "# Title", "\n\nSome **bold** ñ"}, map[int]string{0: "# Title\n\nSome **bold** ñ"}},
		{"markdown with a rune split across fragments", []string{"ca", "fé \xf0\x9f", "\x8e\x89 ok"}, map[int]string{0: "café 🎉 ok"}},
		{"markdown starting with inline code", []string{"`x`", " is code"}, map[int]string{0: "`x` is code"}},
		{"markdown starting with two backticks", []string{"`", "`y`` here"}, map[int]string{0: "``y`` here"}},
		{"fence split across fragments", []string{"`", "``js", "on\n" + json[:20], json[20:] + "\n```\n"}, map[int]string{0: "Hola 🎉 ñ"}},
		{"fence, then more after the closing fence", []string{"```json\n" + json + "\n```\nI hope this helps!"}, map[int]string{0: "Hola 🎉 ñ"}},
		{"fenced text that is not JSON", []string{"```\nhello\n```"}, map[int]string{}},
		{"JSON broken midway stops streaming", []string{`{"content":{"text_blocks":[{"type":"info","content":"abc"}]]`, ` "more":"x"}`}, map[int]string{0: "abc"}},
		{"leading white space before JSON", []string{"\n\n  ", json}, map[int]string{0: "Hola 🎉 ñ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := feedAll(tt.pieces)
			for _, e := range events {
				if !utf8.ValidString(e.Text) || e.Block != 0 || e.BlockType == "" {
					t.Errorf("bad event %+v", e)
				}
			}
			if got := joinDeltas(events); len(got) != len(tt.want) || got[0] != tt.want[0] {
				t.Errorf("deltas = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStreamReset(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	tn, err := c.Begin(s, message("hi"))
	if err != nil {
		t.Fatal(err)
	}
	var events []coach.Event
	emit := func(e coach.Event) { events = append(events, e) }
	_ = tn.Feed(coach.Fragment{Content: "Some markdown first"}, emit)
	tn.Reset()
	events = nil
	out := response("second try")
	for i := 0; i < len(out); i += 9 {
		_ = tn.Feed(coach.Fragment{Content: out[i:min(i+9, len(out))]}, emit)
	}
	_ = tn.Feed(coach.Fragment{ToolArgs: "ignored"}, emit)
	if got := joinDeltas(events); got[0] != "second try" || len(got) != 1 {
		t.Errorf("deltas after Reset = %v", got)
	}
	res, err := tn.Finish()
	if err != nil || res.Fallback {
		t.Fatalf("Finish after Reset = %v, %v; want the second output", res, err)
	}
	if got := blockAt(resultDoc(t, res.Result), 0)["content"]; got != "second try" {
		t.Errorf("result block = %v", got)
	}
}

func TestCompleteUTF8(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"a\xc3", 1},
		{"a\xc3\xb1", 3},
		{"\xf0\x9f\x8e", 0},
		{"x\xf0\x9f\x8e\x89", 5},
		{"\xff", 1},             // invalid, not incomplete: sent (as U+FFFD)
		{"\x80\x80\x80\x80", 4}, // stray continuation bytes
	}
	for _, tt := range tests {
		if got := completeUTF8([]byte(tt.in)); got != tt.want {
			t.Errorf("completeUTF8(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
