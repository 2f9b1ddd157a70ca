package openai

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

// FuzzArgsFromContent checks the arguments taken from content asked for in place of a tool
// call: however the content is cut into fragments, the arguments are the same, they are the
// first JSON object of the content when it has one, and no content is lost but what precedes
// that object.
func FuzzArgsFromContent(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzArgsFromContent")
	f.Fuzz(func(t *testing.T, content string, seed int) {
		whole, wholeRest, _ := argsOf([]string{content})
		rng := rand.New(rand.NewPCG(uint64(seed), 0))
		var pieces []string
		for rest := content; rest != ""; {
			n := 1 + rng.IntN(len(rest))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		args, rest, named := argsOf(pieces)
		if args != whole || rest != wholeRest {
			t.Fatalf("cut into %q: arguments %q and content %q; whole: %q and %q", pieces, args, rest, whole, wholeRest)
		}
		open := strings.IndexByte(content, '{')
		if open < 0 {
			if args != "" || named {
				t.Fatalf("content %q without an object gave arguments %q", content, args)
			}
			return
		}
		if !named || !strings.HasSuffix(content, args+rest) || !strings.HasPrefix(content[open:], args) {
			t.Fatalf("content %q: arguments %q and content %q, named %v", content, args, rest, named)
		}
		dec := json.NewDecoder(strings.NewReader(content[open:]))
		var v map[string]any
		if dec.Decode(&v) == nil {
			if end := dec.InputOffset(); args != content[open:open+int(end)] {
				t.Fatalf("content %q: arguments %q, want the object %q", content, args, content[open:open+int(end)])
			}
		}
	})
}

// argsOf feeds pieces as the content of a ToolNone answer and returns the joined arguments,
// the joined content left, and whether a fragment opened the call.
func argsOf(pieces []string) (args, rest string, named bool) {
	a := contentAsArgs(coach.ModelRequest{Tool: &coach.Tool{Name: "display_card"}}, shape{tool: ToolNone})
	var ab, rb bytes.Buffer
	for _, p := range pieces {
		f := coach.Fragment{Content: p}
		a.apply(&f)
		ab.WriteString(f.ToolArgs)
		rb.WriteString(f.Content)
		named = named || f.ToolName == "display_card"
	}
	return ab.String(), rb.String(), named
}
