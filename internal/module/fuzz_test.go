package module

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeeds reads the seed corpus kept at the repository root (go test only reads the
// package-local testdata/fuzz by itself). Each file is in the Go corpus format: the line
// "go test fuzz v1", then one []byte("...") line.
func fuzzSeeds(f *testing.F, dir string) [][]byte {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, len(raw)+1)
		if !sc.Scan() || sc.Text() != "go test fuzz v1" || !sc.Scan() {
			f.Fatalf("%s: not a Go fuzz corpus file", name)
		}
		quoted, ok := strings.CutPrefix(sc.Text(), "[]byte(")
		quoted, ok2 := strings.CutSuffix(quoted, ")")
		data, err := strconv.Unquote(quoted)
		if !ok || !ok2 || err != nil {
			f.Fatalf("%s: want one []byte(\"...\") value: %v", name, err)
		}
		seeds = append(seeds, []byte(data))
	}
	if len(seeds) == 0 {
		f.Fatalf("no seeds in %s", dir)
	}
	return seeds
}

func FuzzLoadModule(f *testing.F) {
	for _, s := range fuzzSeeds(f, "../../testdata/fuzz/FuzzLoadModule") {
		f.Add(s)
	}
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
