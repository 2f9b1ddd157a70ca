package module

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

func FuzzLoadModule(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzLoadModule")
	shipped, err := builtinFiles.ReadFile("modules/anxiety-basics.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(shipped)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.json", data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || le.File != "fuzz.json" {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		if m.TopicCount() == 0 || len(m.Sections) == 0 {
			t.Fatalf("loaded a module without topics")
		}
		for _, tp := range m.Topics() {
			if id, ok := m.Resolve(tp.ID); !ok || id != tp.ID {
				t.Fatalf("Resolve(%q) = %q, %v", tp.ID, id, ok)
			}
			for _, kw := range append(append([]string{}, tp.Keywords.EN...), tp.Keywords.ES...) {
				if !containsID(m.Detect(strings.TrimSuffix(strings.TrimSpace(kw), "*")), tp.ID) {
					t.Fatalf("keyword %q does not detect its topic %q", kw, tp.ID)
				}
			}
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Parse("again.json", again)
		if err != nil {
			t.Fatalf("a loaded module does not load again after marshalling: %v\n%s", err, again)
		}
		if m2.TopicCount() != m.TopicCount() {
			t.Fatalf("topics %d, after a round trip %d", m.TopicCount(), m2.TopicCount())
		}
	})
}
