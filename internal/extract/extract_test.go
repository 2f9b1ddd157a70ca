package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// rootAssistantText streams only the root member assistantText.
func rootAssistantText(p Path) Action {
	if len(p) == 1 && p[0].Is("assistantText") {
		return Stream
	}
	return Skip
}

// splitDocs are documents fed split at every position. They gather the
// decoding and structure cases most sensitive to chunk boundaries.
var splitDocs = []string{
	`{"assistantText":"plain text"}`,
	`{"assistantText":"esc \" \\ \/ \b \f \n \r \t end"}`,
	`{"assistantText":"\u00e9\u00E9 \u20ac \u0000 \u0041"}`,
	`{"assistantText":"pair \ud83d\ude00 upper \uD83D\uDE00!"}`,
	`{"assistantText":"lone \ud83d x \ude00 y \ud83d\ud83d\ude00 \ud83d\n \ud83d\u0041 \ud83d"}`,
	"{\"assistantText\":\"raw é € 😀 日本語 \xef\xbf\xbd\"}",
	"{\"assistantText\":\"bad \xff \xe2\x82 \xe2\x82\xac\x80 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 \xe2\"}",
	`{"meta":{"assistantText":"no"},"assistantText":"yes","list":["a",{"assistantText":"no"}]}`,
	`{"assistant\u0054ext":"escaped key","k\u00e9y":"v","\ud83d\ude00":"emoji key"}`,
	`{"n":-12.5e+3,"z":0,"f":1.25E-2,"t":true,"f2":false,"nil":null,"e":[],"o":{},"s":""}`,
	` [ "a" , [ "b" , { "c" : "d" } ] , -0 , 1e5 ] `,
	`"top-level \u00e9\ud83d\ude00"`,
	`{"content":{"text_blocks":[{"type":"markdown","content":"# Title\n"},{"content":"second","type":"code"}]}}`,
}

func TestSplitEverywhere(t *testing.T) {
	choosers := []struct {
		name   string
		choose func(Path) Action
	}{
		{"streamAll", streamAll},
		{"mixed", mixed},
		{"rootAssistantText", rootAssistantText},
	}
	for di, doc := range splitDocs {
		for _, c := range choosers {
			t.Run(fmt.Sprintf("doc%d/%s", di, c.name), func(t *testing.T) {
				if !json.Valid([]byte(doc)) {
					t.Fatalf("test document is not valid JSON: %q", doc)
				}
				for k := 0; k <= len(doc); k++ {
					if msg := checkOracle([]byte(doc), c.choose, []int{k}); msg != "" {
						t.Fatalf("split at %d of %q: %s", k, doc, msg)
					}
				}
				if msg := checkOracle([]byte(doc), c.choose, byteCuts(len(doc))); msg != "" {
					t.Fatalf("byte at a time %q: %s", doc, msg)
				}
			})
		}
	}
}

func TestEmptyChunks(t *testing.T) {
	for di, doc := range splitDocs {
		var cuts []int
		for k := range len(doc) + 1 {
			cuts = append(cuts, k, k)
		}
		for _, choose := range []func(Path) Action{streamAll, mixed} {
			if msg := checkOracle([]byte(doc), choose, cuts); msg != "" {
				t.Errorf("doc %d %q with an empty chunk before and after every byte: %s", di, doc, msg)
			}
		}
	}
}

func TestEscapes(t *testing.T) {
	tests := []struct {
		name string
		in   string // the raw contents of a JSON string
		want string
	}{
		{"quote", `a\"b`, `a"b`},
		{"backslash", `a\\b`, `a\b`},
		{"slash", `a\/b`, `a/b`},
		{"backspace", `\b`, "\b"},
		{"formfeed", `\f`, "\f"},
		{"newline", `\n`, "\n"},
		{"return", `\r`, "\r"},
		{"tab", `\t`, "\t"},
		{"u lower hex", `\u00e9`, "é"},
		{"u upper hex", `\u00C9\u20AC`, "É€"},
		{"u nul", `\u0000`, "\x00"},
		{"surrogate pair", `\ud83d\ude00`, "😀"},
		{"surrogate pair upper", `\uD83D\uDE00`, "😀"},
		{"lone high at end", `\ud83d`, "\uFFFD"},
		{"lone high then text", `\ud83dab`, "\uFFFDab"},
		{"lone high then escape", `\ud83d\n`, "\uFFFD\n"},
		{"lone high then bmp", `\ud83d\u0041`, "\uFFFDA"},
		{"high high low", `\ud83d\ud83d\ude00`, "\uFFFD😀"},
		{"lone low", `\ude00`, "\uFFFD"},
		{"low high", `\ude00\ud83d`, "\uFFFD\uFFFD"},
		{"raw multibyte", "é€😀", "é€😀"},
		{"raw replacement char", "\xef\xbf\xbd", "\uFFFD"},
		{"invalid byte", "a\xffb", "a\uFFFDb"},
		{"truncated sequence", "\xe2\x82", "\uFFFD\uFFFD"},
		{"truncated then ascii", "\xe2\x82a", "\uFFFD\uFFFDa"},
		{"stray continuation", "\x80\xbf", "\uFFFD\uFFFD"},
		{"utf8 surrogate", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"overlong", "\xc0\xaf", "\uFFFD\uFFFD"},
		{"beyond max rune", "\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"mixed", `x\"\u00e9\ud83d\ude00é\n\\`, "x\"é😀é\n\\"},
		{"escapes beyond the scratch buffer", strings.Repeat(`\n\u00e9`, 100), strings.Repeat("\né", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(`{"t":"` + tt.in + `"}`)
			var fromJSON struct{ T string }
			if err := json.Unmarshal(doc, &fromJSON); err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if fromJSON.T != tt.want {
				t.Fatalf("encoding/json decodes %q, test wants %q", fromJSON.T, tt.want)
			}
			for _, act := range []Action{Stream, Capture} {
				choose := func(Path) Action { return act }
				for _, cuts := range [][]int{nil, byteCuts(len(doc))} {
					res := extract(doc, choose, cuts)
					if res.err != nil || len(res.problems) > 0 {
						t.Fatalf("action %d, %d cuts: err %v, problems %v", act, len(cuts), res.err, res.problems)
					}
					want := []value{{".t", act, tt.want}}
					if act == Capture {
						v, _ := truncate(tt.want, MaxCapture)
						want[0].Text = string(v)
					}
					if d := diff(res.vals, want); d != "" {
						t.Errorf("action %d, %d cuts:%s", act, len(cuts), d)
					}
				}
			}
		})
	}
}

// captureAt streams the root assistantText and captures values at the listed
// paths.
func captureAt(paths ...string) func(Path) Action {
	return func(p Path) Action {
		s := pathString(p)
		for _, want := range paths {
			if s == want {
				return Capture
			}
		}
		return rootAssistantText(p)
	}
}

func TestPaths(t *testing.T) {
	blocks := func(p Path) Action {
		if len(p) == 4 && p[0].Is("content") && p[1].Is("text_blocks") && p[2].Index >= 0 {
			switch {
			case p[3].Is("content"):
				return Stream
			case p[3].Is("type"):
				return Capture
			}
		}
		return Skip
	}
	tests := []struct {
		name   string
		doc    string
		choose func(Path) Action
		want   []value
	}{{
		name:   "nested same key is not emitted",
		doc:    `{"meta":{"assistantText":"x"},"assistantText":"y"}`,
		choose: rootAssistantText,
		want:   []value{{".assistantText", Stream, "y"}},
	}, {
		name:   "field order does not matter",
		doc:    `{"assistantText":"y","step":"claim","meta":{"assistantText":"x"}}`,
		choose: captureAt(".step"),
		want:   []value{{".assistantText", Stream, "y"}, {".step", Capture, "claim"}},
	}, {
		name:   "same key in arrays is not emitted",
		doc:    `{"list":[{"assistantText":"a"},"assistantText"],"assistantText":"b"}`,
		choose: rootAssistantText,
		want:   []value{{".assistantText", Stream, "b"}},
	}, {
		name:   "non-string root member is not offered",
		doc:    `{"assistantText":{"assistantText":"x"}}`,
		choose: rootAssistantText,
	}, {
		name:   "keys are never offered",
		doc:    `{"a":{"b":["c",{"d":"e"}]}}`,
		choose: streamAll,
		want:   []value{{".a.b[0]", Stream, "c"}, {".a.b[1].d", Stream, "e"}},
	}, {
		name:   "escaped key names are decoded",
		doc:    `{"assistant\u0054ext":"y","\u0061\/b":"z"}`,
		choose: captureAt(".a/b"),
		want:   []value{{".assistantText", Stream, "y"}, {".a/b", Capture, "z"}},
	}, {
		name:   "arrays of objects",
		doc:    `{"content":{"text_blocks":[{"type":"md","content":"one"},{"content":"two","type":"code"},{"type":"empty"}]},"text_blocks":[{"content":"no"}]}`,
		choose: blocks,
		want: []value{
			{".content.text_blocks[0].type", Capture, "md"},
			{".content.text_blocks[0].content", Stream, "one"},
			{".content.text_blocks[1].content", Stream, "two"},
			{".content.text_blocks[1].type", Capture, "code"},
			{".content.text_blocks[2].type", Capture, "empty"},
		},
	}, {
		name:   "array indexes count every element",
		doc:    `[1,"a",[true,"b"],{},"c",null]`,
		choose: streamAll,
		want:   []value{{"[1]", Stream, "a"}, {"[2][1]", Stream, "b"}, {"[4]", Stream, "c"}},
	}, {
		name:   "top-level string has an empty path",
		doc:    `"hello"`,
		choose: streamAll,
		want:   []value{{"", Stream, "hello"}},
	}, {
		name:   "empty values",
		doc:    `{"assistantText":"","step":""}`,
		choose: captureAt(".step"),
		want:   []value{{".assistantText", Stream, ""}, {".step", Capture, ""}},
	}, {
		name:   "duplicate members are all reported",
		doc:    `{"assistantText":"a","assistantText":"b"}`,
		choose: rootAssistantText,
		want:   []value{{".assistantText", Stream, "a"}, {".assistantText", Stream, "b"}},
	}, {
		name:   "unknown actions skip",
		doc:    `{"a":"x"}`,
		choose: func(Path) Action { return Capture + 1 },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(tt.doc)
			for _, cuts := range [][]int{nil, byteCuts(len(doc))} {
				res := extract(doc, tt.choose, cuts)
				if res.err != nil || len(res.problems) > 0 {
					t.Fatalf("%d cuts: err %v, problems %v", len(cuts), res.err, res.problems)
				}
				if d := diff(res.vals, tt.want); d != "" {
					t.Errorf("%d cuts:%s", len(cuts), d)
				}
			}
		})
	}
}

func TestTruncation(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		name string
		doc  string
		want []value
	}{{
		name: "capture at limit",
		doc:  `{"c":"` + long[:MaxCapture] + `"}`,
		want: []value{{".c", Capture, long[:MaxCapture]}},
	}, {
		name: "capture over limit",
		doc:  `{"c":"` + long + `"}`,
		want: []value{{".c", Capture, long[:MaxCapture]}},
	}, {
		name: "capture cut at a sequence boundary",
		doc:  `{"c":"` + long[:MaxCapture-1] + `é"}`,
		want: []value{{".c", Capture, long[:MaxCapture-1]}},
	}, {
		name: "capture cut before an escape",
		doc:  `{"c":"` + long[:MaxCapture-2] + `\ud83d\ude00"}`,
		want: []value{{".c", Capture, long[:MaxCapture-2]}},
	}, {
		name: "stream is not truncated",
		doc:  `{"s":"` + long + long + `"}`,
		want: []value{{".s", Stream, long + long}},
	}, {
		name: "key at limit",
		doc:  `{"` + long[:MaxKey] + `":"v"}`,
		want: []value{{"." + long[:MaxKey], Capture, "v"}},
	}, {
		name: "key over limit",
		doc:  `{"` + long[:MaxKey+1] + `":"v"}`,
		want: []value{{"." + long[:MaxKey] + "~", Capture, "v"}},
	}, {
		name: "key cut at a sequence boundary",
		doc:  `{"` + long[:MaxKey-1] + `\u00e9":"v"}`,
		want: []value{{"." + long[:MaxKey-1] + "~", Capture, "v"}},
	}}
	choose := func(p Path) Action {
		if len(p) == 1 && p[0].Is("s") {
			return Stream
		}
		return Capture
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(tt.doc)
			for _, cuts := range [][]int{nil, byteCuts(len(doc))} {
				res := extract(doc, choose, cuts)
				if res.err != nil || len(res.problems) > 0 {
					t.Fatalf("%d cuts: err %v, problems %v", len(cuts), res.err, res.problems)
				}
				if d := diff(res.vals, tt.want); d != "" {
					t.Errorf("%d cuts:%s", len(cuts), d)
				}
			}
		})
	}
}

func TestFrameIs(t *testing.T) {
	long := strings.Repeat("k", MaxKey+1)
	var frames []Frame // the last frame of each offered path, with Key copied
	choose := func(p Path) Action {
		f := p[len(p)-1]
		f.Key = bytes.Clone(f.Key)
		frames = append(frames, f)
		return Skip
	}
	doc := `{"` + long[:MaxKey] + `":"a","` + long + `":"b","":"c","x":["d"]}`
	if res := extract([]byte(doc), choose, nil); res.err != nil {
		t.Fatalf("err %v", res.err)
	}
	if len(frames) != 4 {
		t.Fatalf("%d values offered, want 4", len(frames))
	}
	tests := []struct {
		name  string
		frame int
		key   string
		want  bool
	}{
		{"exact name", 0, long[:MaxKey], true},
		{"longer name", 0, long, false},
		{"truncated name never equals its prefix", 1, long[:MaxKey], false},
		{"truncated name never equals itself", 1, long, false},
		{"empty name", 2, "", true},
		{"array element", 3, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := frames[tt.frame].Is(tt.key); got != tt.want {
				t.Errorf("Frame{Key: %q, Index: %d}.Is(%q) = %v, want %v",
					frames[tt.frame].Key, frames[tt.frame].Index, tt.key, got, tt.want)
			}
		})
	}
	if got := len(frames[1].Key); got != MaxKey {
		t.Errorf("truncated Key has %d bytes, want %d", got, MaxKey)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		off  int64 // offset of the offending byte
	}{
		{"missing colon", `{"a" 1}`, 5},
		{"bad literal", `{"a":tru}`, 8},
		{"bad literal start", `{"a":x}`, 5},
		{"literal case", `True`, 0},
		{"trailing comma in object", `{"a":1,}`, 7},
		{"trailing comma in array", `[1,]`, 3},
		{"leading comma", `{,}`, 1},
		{"missing comma", `{"a":1 "b":2}`, 7},
		{"missing array comma", `[1 2]`, 3},
		{"mismatched closer", `{"a":1]`, 6},
		{"mismatched array closer", `[}`, 1},
		{"single quotes", `{'a':1}`, 1},
		{"unquoted key", `{a:1}`, 1},
		{"non-string key", `{1:2}`, 1},
		{"leading zero", `{"a":01}`, 6},
		{"bare minus", `{"a":-}`, 6},
		{"minus letter", `-x`, 1},
		{"trailing dot", `{"a":1.}`, 7},
		{"leading dot", `{"a":.5}`, 5},
		{"empty exponent", `{"a":1e}`, 7},
		{"exponent sign only", `{"a":1e+}`, 8},
		{"plus sign", `{"a":+1}`, 5},
		{"NaN", `[NaN]`, 1},
		{"hex number", `[0x1]`, 2},
		{"bad escape", `{"a":"\x"}`, 7},
		{"bad escape in key", `{"\a":1}`, 3},
		{"bad unicode escape", `{"a":"\u12G4"}`, 10},
		{"short unicode escape", `["\u12"]`, 6},
		{"bad escape after high surrogate", `["\ud83d\q"]`, 9},
		{"raw control in value", "[\"a\x01b\"]", 3},
		{"raw newline in skipped value", "{\"a\":\"line\nbreak\"}", 10},
		{"raw tab in key", "{\"a\tb\":1}", 3},
		{"trailing garbage", `{"a":1} x`, 8},
		{"second value", `{}{}`, 2},
		{"extra closer", `{"a":1}}`, 7},
		{"unopened closer", `]`, 0},
		{"colon in array", `[1:2]`, 2},
		{"comma after colon", `{"a":,}`, 5},
		{"literal run-on", `truex`, 4},
		{"number then string", `1"a"`, 1},
		{"byte order mark", "\xef\xbb\xbf{}", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(tt.doc)
			if json.Valid(doc) {
				t.Fatalf("test document is valid JSON: %q", doc)
			}
			for _, cuts := range [][]int{nil, byteCuts(len(doc))} {
				e := New(&recorder{choose: streamAll})
				// Close cannot report ErrSyntax, so it comes from Write.
				err := feed(e, doc, cuts)
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("%d cuts: error = %v, want ErrSyntax", len(cuts), err)
				}
				if got := e.Offset(); got != tt.off {
					t.Errorf("%d cuts: Offset() = %d, want %d", len(cuts), got, tt.off)
				}
				if again := e.Write([]byte(`"more"`)); again != err {
					t.Errorf("%d cuts: Write after error = %v, want the same error %v", len(cuts), again, err)
				}
				if got := e.Offset(); got != tt.off {
					t.Errorf("%d cuts: Offset() after a failed Write = %d, want %d", len(cuts), got, tt.off)
				}
				if cerr := e.Close(); cerr != err {
					t.Errorf("%d cuts: Close() = %v, want the Write error %v", len(cuts), cerr, err)
				}
			}
		})
	}
}

func TestClose(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want error
	}{
		{"empty", ``, io.ErrUnexpectedEOF},
		{"whitespace only", " \n\t\r", io.ErrUnexpectedEOF},
		{"open object", `{`, io.ErrUnexpectedEOF},
		{"key only", `{"a"`, io.ErrUnexpectedEOF},
		{"inside key", `{"ab`, io.ErrUnexpectedEOF},
		{"after colon", `{"a":`, io.ErrUnexpectedEOF},
		{"inside value", `{"a":"xx`, io.ErrUnexpectedEOF},
		{"inside escape", `{"a":"\`, io.ErrUnexpectedEOF},
		{"inside unicode escape", `{"a":"\u00`, io.ErrUnexpectedEOF},
		{"after high surrogate", `["\ud83d`, io.ErrUnexpectedEOF},
		{"inside raw sequence", "[\"\xe2\x82", io.ErrUnexpectedEOF},
		{"after member", `{"a":1`, io.ErrUnexpectedEOF},
		{"after comma", `[1,`, io.ErrUnexpectedEOF},
		{"nested", `[[[]]`, io.ErrUnexpectedEOF},
		{"top-level string", `"abc`, io.ErrUnexpectedEOF},
		{"literal", `tru`, io.ErrUnexpectedEOF},
		{"minus", `-`, io.ErrUnexpectedEOF},
		{"dot", `1.`, io.ErrUnexpectedEOF},
		{"exponent", `1e-`, io.ErrUnexpectedEOF},
		{"object", `{"a":[1,{"b":null}]}`, nil},
		{"trailing whitespace", "{} \n\t\r ", nil},
		{"leading whitespace", " \n[]", nil},
		{"top-level string complete", `"abc"`, nil},
		{"top-level integer", `123`, nil},
		{"top-level zero", `0`, nil},
		{"top-level number", `-0.5e+10`, nil},
		{"top-level number and space", `1.5 `, nil},
		{"top-level literal", `false`, nil},
		{"top-level null", `null`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(tt.doc)
			if valid := json.Valid(doc); valid != (tt.want == nil) {
				t.Fatalf("json.Valid(%q) = %v, disagrees with the test", doc, valid)
			}
			for _, cuts := range [][]int{nil, byteCuts(len(doc))} {
				if got := extract(doc, streamAll, cuts).err; got != tt.want {
					t.Errorf("%d cuts: error = %v, want %v", len(cuts), got, tt.want)
				}
			}
		})
	}
}

func TestTooDeep(t *testing.T) {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	tests := []struct {
		name string
		doc  string
		want error
		off  int64
	}{
		{"arrays at limit", nest(MaxDepth, "[", "]"), nil, 2 * MaxDepth},
		{"arrays past limit", nest(MaxDepth+1, "[", "]"), ErrTooDeep, MaxDepth},
		{"objects at limit", nest(MaxDepth, `{"a":`, "}")[:5*MaxDepth] + "1" + strings.Repeat("}", MaxDepth), nil, 6*MaxDepth + 1},
		{"objects past limit", nest(MaxDepth+1, `{"a":`, "}"), ErrTooDeep, 5 * MaxDepth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(&recorder{choose: streamAll})
			err := feed(e, []byte(tt.doc), nil)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			if got := e.Offset(); got != tt.off {
				t.Errorf("Offset() = %d, want %d", got, tt.off)
			}
			if again := e.Write([]byte("]")); tt.want != nil && again != err {
				t.Errorf("Write after error = %v, want the same error %v", again, err)
			}
		})
	}
}

func TestReset(t *testing.T) {
	rec := &recorder{choose: rootAssistantText}
	e := New(rec)
	tests := []struct {
		name    string
		doc     string
		wantErr error
		want    []value
	}{
		{"syntax error", `{"assistantText":"partial" 1}`, ErrSyntax, []value{{".assistantText", Stream, "partial"}}},
		{"after error", `{"assistantText":"one"}`, nil, []value{{".assistantText", Stream, "one"}}},
		{"mid string", `{"x":[{"assistantText":"abc`, io.ErrUnexpectedEOF, nil},
		{"after incomplete", `{"assistantText":"two \u00e9"}`, nil, []value{{".assistantText", Stream, "two é"}}},
		{"after complete", `{"assistantText":"three"}`, nil, []value{{".assistantText", Stream, "three"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Reset()
			if got := e.Offset(); got != 0 {
				t.Errorf("Offset() after Reset = %d, want 0", got)
			}
			*rec = recorder{choose: rootAssistantText}
			err := feed(e, []byte(tt.doc), byteCuts(len(tt.doc)))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if len(rec.problems) > 0 {
				t.Fatalf("handler contract: %v", rec.problems)
			}
			if d := diff(rec.finished(), tt.want); d != "" {
				t.Errorf("values:%s", d)
			}
		})
	}
}

func TestOffset(t *testing.T) {
	e := New(&recorder{choose: streamAll})
	var total int64
	for _, chunk := range []string{``, `{"a"`, ` : "x\u00`, `e9", `, `"b":[1.5,`, `true]} `, ``, "\n"} {
		if err := e.Write([]byte(chunk)); err != nil {
			t.Fatalf("Write(%q) = %v", chunk, err)
		}
		total += int64(len(chunk))
		if got := e.Offset(); got != total {
			t.Errorf("after Write(%q): Offset() = %d, want %d", chunk, got, total)
		}
	}
	if err := e.Close(); err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
}

func TestNoAllocations(t *testing.T) {
	doc := benchDoc(16 << 10)
	sizes := realisticSizes(1)
	e := New(&countHandler{})
	feedAll := func() {
		e.Reset()
		if err := feedSizes(e, doc, sizes); err != nil {
			t.Fatal(err)
		}
	}
	if got := testing.AllocsPerRun(20, feedAll); got != 0 {
		t.Errorf("allocations per document = %v, want 0", got)
	}
}

// blocksHandler streams every content.text_blocks[i].content and captures
// the sibling type, the way the gateway reads a module's output.
type blocksHandler struct {
	text, ends int
}

func (h *blocksHandler) Match(p Path) (int, Action) {
	if len(p) == 4 && p[0].Is("content") && p[1].Is("text_blocks") && p[2].Key == nil {
		switch {
		case p[3].Is("content"):
			return p[2].Index, Stream
		case p[3].Is("type"):
			return p[2].Index, Capture
		}
	}
	return 0, Skip
}

func (h *blocksHandler) Text(_ int, _ Path, text []byte) { h.text += len(text) }

func (h *blocksHandler) End(int, Path, []byte) { h.ends++ }

// typicalDoc returns a document of about size bytes in the shape the
// gateway reads: four deep at most, member names of at most 32 bytes, short
// captured values and streamed prose.
func typicalDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"content":{"title":"Quarterly review","text_blocks":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"markdown","content":"`)
		for k := range 3 {
			b.WriteString(benchSentences[(i+k)%len(benchSentences)])
		}
		b.WriteString(`","rendering_hint_for_the_client":"plain","index":` + strconv.Itoa(i) + `}`)
	}
	b.WriteString(`]},"usage":{"prompt_tokens":812,"completion_tokens":1290},"done":true}`)
	return b.Bytes()
}

// typicalBytes bounds what New and reading a typical document allocate in
// all. With fixed-size stacks an Extractor took 14 KB.
const typicalBytes = 1024

func TestTypicalAllocations(t *testing.T) {
	doc := typicalDoc(4 << 10)
	sizes := realisticSizes(1)
	h := &blocksHandler{}
	var e *Extractor
	read := func() {
		e = New(h)
		if err := feedSizes(e, doc, sizes); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if h.text == 0 || h.ends == 0 {
		t.Fatalf("the handler streamed %d bytes and saw %d ends, want some of both", h.text, h.ends)
	}
	// New, the frame stack and the key stack.
	if got := testing.AllocsPerRun(20, read); got > 3 {
		t.Errorf("allocations for New and a typical document = %v, want at most 3", got)
	}
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		read()
	}
	runtime.ReadMemStats(&after)
	if got := (after.TotalAlloc - before.TotalAlloc) / runs; got > typicalBytes {
		t.Errorf("bytes allocated for New and a typical document = %d, want at most %d", got, typicalBytes)
	}
	again := func() {
		e.Reset()
		if err := feedSizes(e, doc, sizes); err != nil {
			t.Fatal(err)
		}
	}
	if got := testing.AllocsPerRun(20, again); got != 0 {
		t.Errorf("allocations for the same document after Reset = %v, want 0", got)
	}
}

// TestGrowth reads documents that make the frame stack, the key stack and
// the capture buffer grow while a path is open, and checks that every name a
// Handler sees lies in the key stack the Extractor uses at that moment, not
// in one it left behind, and that every value matches encoding/json.
func TestGrowth(t *testing.T) {
	long := strings.Repeat("k", MaxKey)
	var deep strings.Builder
	for d := range MaxDepth {
		fmt.Fprintf(&deep, `{"%s":"v%d","%s%d":`, long, d, long[:MaxKey-3], d)
	}
	deep.WriteString(`"innermost"`)
	deep.WriteString(strings.Repeat("}", MaxDepth))
	var wide strings.Builder
	for d := range 20 {
		fmt.Fprintf(&wide, `[{"%s":"%s","n%d":`, long[:3*d], strings.Repeat("é", 10*d), d)
	}
	wide.WriteString(`null`)
	wide.WriteString(strings.Repeat("}]", 20))
	docs := []string{deep.String(), wide.String()}

	var e *Extractor
	checking := false
	choose := func(p Path) Action {
		if checking {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(e.keys)))
			for _, f := range p {
				if len(f.Key) == 0 {
					continue
				}
				if off := uintptr(unsafe.Pointer(&f.Key[0])) - base; off >= uintptr(cap(e.keys)) {
					t.Fatalf("path %s: a name lies outside the key stack", pathString(p))
				}
			}
		}
		return mixed(p)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for di, doc := range docs {
		want, err := oracle([]byte(doc), choose)
		if err != nil {
			t.Fatal(err)
		}
		for _, cuts := range [][]int{nil, byteCuts(len(doc)), randomCuts(r, len(doc), 8)} {
			rec := &recorder{choose: choose}
			e = New(rec)
			checking = true
			err := feed(e, []byte(doc), cuts)
			checking = false
			if err != nil || len(rec.problems) > 0 {
				t.Fatalf("doc %d, %d cuts: err %v, problems %v", di, len(cuts), err, rec.problems)
			}
			if d := diff(rec.finished(), want); d != "" {
				t.Errorf("doc %d, %d cuts:%s", di, len(cuts), d)
			}
		}
	}
}

// docGen writes random JSON documents that exercise every decoding path:
// escapes of every kind, surrogates (paired, lone and mismatched), raw and
// invalid UTF-8, long and escaped member names, numbers, literals and random
// whitespace.
type docGen struct {
	r *rand.Rand
	b bytes.Buffer
}

func (g *docGen) doc() []byte {
	g.b.Reset()
	g.space()
	g.value(0)
	g.space()
	return bytes.Clone(g.b.Bytes())
}

func (g *docGen) value(depth int) {
	n := 9
	if depth > 6 {
		n = 6 // scalars only, so documents stay small
	}
	switch g.r.IntN(n) {
	case 0, 1, 2:
		g.str()
	case 3:
		g.number()
	case 4:
		g.b.WriteString([]string{"true", "false", "null"}[g.r.IntN(3)])
	case 5:
		g.b.WriteString(`"assistantText"`)
	case 6, 7:
		g.b.WriteByte('{')
		for i := range g.r.IntN(5) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.space()
			if g.r.IntN(4) == 0 {
				g.b.WriteString(`"assistantText"`)
			} else {
				g.str()
			}
			g.space()
			g.b.WriteByte(':')
			g.space()
			g.value(depth + 1)
			g.space()
		}
		g.b.WriteByte('}')
	case 8:
		g.b.WriteByte('[')
		for i := range g.r.IntN(5) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.space()
			g.value(depth + 1)
			g.space()
		}
		g.b.WriteByte(']')
	}
}

var (
	genEscapes = []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0000`, `\u001f`, `\u00e9`, `\u00E9`, `\u20ac`, `\uffff`,
		`\ud83d\ude00`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\udbff\udfff`, `\ud800\udc00`, `\ud83d\ud83d\ude00`}
	genRaw = []string{"é", "€", "😀", "日本", "\u2028", "\xef\xbf\xbd", "\xff", "\xe2\x82", "\x80", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\xf0\x9f\x98"}
)

func (g *docGen) str() {
	g.b.WriteByte('"')
	n := g.r.IntN(12)
	if g.r.IntN(10) == 0 {
		n = 50 + g.r.IntN(150)
	}
	for range n {
		switch k := g.r.IntN(10); {
		case k < 6:
			g.b.WriteString("abc xyz.,;"[:1+g.r.IntN(10)])
		case k < 8:
			g.b.WriteString(genEscapes[g.r.IntN(len(genEscapes))])
		default:
			g.b.WriteString(genRaw[g.r.IntN(len(genRaw))])
		}
	}
	g.b.WriteByte('"')
}

func (g *docGen) number() {
	if g.r.IntN(2) == 0 {
		g.b.WriteByte('-')
	}
	if g.r.IntN(3) == 0 {
		g.b.WriteByte('0')
	} else {
		g.b.WriteString(strconv.Itoa(1 + g.r.IntN(100000)))
	}
	if g.r.IntN(2) == 0 {
		g.b.WriteString("." + strconv.Itoa(g.r.IntN(1000)))
	}
	if g.r.IntN(3) == 0 {
		g.b.WriteString([]string{"e", "E", "e+", "E-"}[g.r.IntN(4)] + strconv.Itoa(g.r.IntN(30)))
	}
}

func (g *docGen) space() {
	for range g.r.IntN(3) {
		g.b.WriteByte(" \t\r\n"[g.r.IntN(4)])
	}
}

// randomCuts cuts a document of length n into chunks of 1 to maxChunk bytes.
func randomCuts(r *rand.Rand, n, maxChunk int) []int {
	var cuts []int
	for c := 1 + r.IntN(maxChunk); c < n; c += 1 + r.IntN(maxChunk) {
		cuts = append(cuts, c)
	}
	return cuts
}

func TestRandomDocuments(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			g := &docGen{r: r}
			for i := range 300 {
				doc := g.doc()
				if !json.Valid(doc) {
					t.Fatalf("doc %d: generated invalid JSON %q", i, doc)
				}
				for _, choose := range []func(Path) Action{streamAll, mixed} {
					cuts := randomCuts(r, len(doc), 1+r.IntN(16))
					if msg := checkOracle(doc, choose, cuts); msg != "" {
						t.Fatalf("doc %d %q cut at %v: %s", i, doc, cuts, msg)
					}
				}
			}
		})
	}
}

// aliasHandler streams every string and records whether each Text call's
// text lies inside chunk.
type aliasHandler struct {
	chunk  []byte
	inside []bool
}

func (h *aliasHandler) Match(Path) (int, Action) { return 0, Stream }

func (h *aliasHandler) Text(_ int, _ Path, text []byte) {
	inside := false
	for i := range h.chunk {
		inside = inside || &h.chunk[i] == &text[0]
	}
	h.inside = append(h.inside, inside)
}

func (h *aliasHandler) End(int, Path, []byte) {}

func TestTextAliasesInput(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []bool // per Text call: whether it is a subslice of the chunk
	}{
		{"plain run", `{"a":"plain text"}`, []bool{true}},
		{"runs around an escape", `{"a":"one\ntwo"}`, []bool{true, false, true}},
		{"escapes batch into one call", `{"a":"x\n\t\u00e9\"y"}`, []bool{true, false, true}},
		{"raw unicode stays in the run", `{"a":"café 😀 ok"}`, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &aliasHandler{chunk: []byte(tt.doc)}
			e := New(h)
			if err := e.Write(h.chunk); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.inside, tt.want) {
				t.Errorf("Text calls inside the chunk = %v, want %v", h.inside, tt.want)
			}
		})
	}
}
