package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// value is one string value as a test sees it: where it was, what was done
// with it and its decoded text.
type value struct {
	Path string
	Act  Action
	Text string
}

// recorder is a Handler that records every selected value and checks the
// Handler contract on every call.
type recorder struct {
	choose   func(p Path) Action
	vals     []value
	ended    []bool
	problems []string
}

func (r *recorder) Match(p Path) (int, Action) {
	act := r.choose(p)
	if act == Skip {
		return -1, Skip
	}
	r.vals = append(r.vals, value{Path: pathString(p), Act: act})
	r.ended = append(r.ended, false)
	return len(r.vals) - 1, act
}

func (r *recorder) Text(id int, p Path, text []byte) {
	if !r.live(id, p, "Text") {
		return
	}
	v := &r.vals[id]
	if v.Act != Stream {
		r.problem("Text(%d) for a value with action %d", id, v.Act)
	}
	if len(text) == 0 {
		r.problem("Text(%d) with empty text", id)
	}
	if !utf8.Valid(text) {
		r.problem("Text(%d) with invalid UTF-8 %q", id, text)
	}
	v.Text += string(text)
}

func (r *recorder) End(id int, p Path, val []byte) {
	if !r.live(id, p, "End") {
		return
	}
	v := &r.vals[id]
	switch {
	case v.Act == Stream && val != nil:
		r.problem("End(%d) of a streamed value with value %q, want nil", id, val)
	case v.Act == Capture && val == nil:
		r.problem("End(%d) of a captured value with nil value", id)
	case v.Act == Capture:
		v.Text = string(val)
	}
	r.ended[id] = true
}

// live checks that id names a value that has not ended and that p is its path.
func (r *recorder) live(id int, p Path, call string) bool {
	if id < 0 || id >= len(r.vals) {
		r.problem("%s with unknown id %d", call, id)
		return false
	}
	if r.ended[id] {
		r.problem("%s(%d) after End", call, id)
	}
	if got := pathString(p); got != r.vals[id].Path {
		r.problem("%s(%d) with path %s, want %s", call, id, got, r.vals[id].Path)
	}
	return true
}

func (r *recorder) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// finished returns the values that ended, reporting any that did not.
func (r *recorder) finished() []value {
	var out []value
	for i, v := range r.vals {
		if r.ended[i] {
			out = append(out, v)
		}
	}
	return out
}

// pathString renders a path as a.b[2].c, marking truncated names with "~".
func pathString(p Path) string {
	var b strings.Builder
	for _, f := range p {
		if f.Index >= 0 {
			fmt.Fprintf(&b, "[%d]", f.Index)
			continue
		}
		b.WriteString(".")
		b.Write(f.Key)
		if f.trunc {
			b.WriteString("~")
		}
	}
	return b.String()
}

// result is the outcome of feeding a document to an Extractor.
type result struct {
	vals     []value
	err      error // the first error from Write or Close
	problems []string
}

// extract feeds doc to a fresh Extractor in chunks ending at the given
// offsets (the last chunk runs to the end of doc) and closes it.
func extract(doc []byte, choose func(Path) Action, cuts []int) result {
	rec := &recorder{choose: choose}
	e := New(rec)
	err := feed(e, doc, cuts)
	return result{vals: rec.finished(), err: err, problems: rec.problems}
}

// feed writes doc to e cut at the given offsets, then closes e, and returns
// the first error.
func feed(e *Extractor, doc []byte, cuts []int) error {
	prev := 0
	for _, c := range cuts {
		if err := e.Write(doc[prev:c]); err != nil {
			return err
		}
		prev = c
	}
	if err := e.Write(doc[prev:]); err != nil {
		return err
	}
	return e.Close()
}

// byteCuts returns the cuts that feed a document of length n one byte at a time.
func byteCuts(n int) []int {
	cuts := make([]int, 0, n)
	for i := 1; i < n; i++ {
		cuts = append(cuts, i)
	}
	return cuts
}

// streamAll streams every string value.
func streamAll(Path) Action { return Stream }

// mixed chooses an action from the path so that oracle tests cover all
// three actions deterministically.
func mixed(p Path) Action {
	h := len(p)
	for _, f := range p {
		h = h*31 + len(f.Key) + f.Index
	}
	return Action(uint(h) % 3)
}

// oracle lists, in document order, the string values of a valid document as
// encoding/json decodes them, with the paths and actions an Extractor using
// choose must report. Member names and captured values are truncated as the
// Extractor truncates them.
func oracle(doc []byte, choose func(Path) Action) ([]value, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type level struct {
		obj     bool
		wantKey bool
		key     []byte
		trunc   bool
		index   int
	}
	var stack []level
	path := func() Path {
		p := make(Path, len(stack))
		for i, l := range stack {
			if l.obj {
				p[i] = Frame{Key: l.key, Index: -1, trunc: l.trunc}
			} else {
				p[i] = Frame{Index: l.index}
			}
		}
		return p
	}
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	var out []value
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				next()
				continue
			}
			key := tok.(string)
			stack[n-1].key, stack[n-1].trunc = truncate(key, MaxKey)
			stack[n-1].wantKey = false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, level{obj: true, wantKey: true})
			case '[':
				stack = append(stack, level{})
			case ']':
				stack = stack[:len(stack)-1]
				next()
			}
		case string:
			p := path()
			switch act := choose(p); act {
			case Stream:
				out = append(out, value{pathString(p), act, v})
			case Capture:
				s, _ := truncate(v, MaxCapture)
				out = append(out, value{pathString(p), act, string(s)})
			}
			next()
		default:
			next()
		}
	}
}

// truncate cuts s to at most n bytes at a UTF-8 sequence boundary.
func truncate(s string, n int) ([]byte, bool) {
	if len(s) <= n {
		return []byte(s), false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return []byte(s[:n]), true
}

// diff describes how got differs from want, or returns "".
func diff(got, want []value) string {
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			fmt.Fprintf(&b, "\n  missing %s", show(want[i]))
		case i >= len(want):
			fmt.Fprintf(&b, "\n  extra   %s", show(got[i]))
		case got[i] != want[i]:
			fmt.Fprintf(&b, "\n  got  %s\n  want %s", show(got[i]), show(want[i]))
		}
	}
	return b.String()
}

func show(v value) string {
	return fmt.Sprintf("%s act=%d %s", v.Path, v.Act, strconv.Quote(v.Text))
}

// checkOracle feeds doc cut at cuts, compares the values with the oracle and
// returns a description of any failure, or "".
func checkOracle(doc []byte, choose func(Path) Action, cuts []int) string {
	want, err := oracle(doc, choose)
	if err != nil {
		return fmt.Sprintf("oracle: %v", err)
	}
	res := extract(doc, choose, cuts)
	if res.err != nil && !errors.Is(res.err, ErrTooDeep) {
		return fmt.Sprintf("error %v on valid JSON", res.err)
	}
	if len(res.problems) > 0 {
		return "handler contract: " + strings.Join(res.problems, "; ")
	}
	if res.err != nil {
		return ""
	}
	if d := diff(res.vals, want); d != "" {
		return "values differ from encoding/json:" + d
	}
	return ""
}
