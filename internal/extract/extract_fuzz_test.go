package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeedDir holds the seed corpus. It lives at the repository level, where
// go test -fuzz does not look, so FuzzExtractor adds its files itself.
var fuzzSeedDir = filepath.Join("..", "..", "testdata", "fuzz", "FuzzExtractor")

// fuzzChoose streams the root assistantText and spreads the other actions
// over the remaining strings.
func fuzzChoose(p Path) Action {
	if len(p) == 1 && p[0].Is("assistantText") {
		return Stream
	}
	return mixed(p)
}

func FuzzExtractor(f *testing.F) {
	if err := addSeeds(f, fuzzSeedDir); err != nil {
		f.Fatal(err)
	}
	for _, doc := range splitDocs {
		f.Add([]byte(doc), 1)
	}
	f.Fuzz(func(t *testing.T, data []byte, seed int) {
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		cuts := randomCuts(r, len(data), 1+r.IntN(16))
		res := extract(data, fuzzChoose, cuts)
		if len(res.problems) > 0 {
			t.Fatalf("handler contract: %s", strings.Join(res.problems, "; "))
		}
		whole := extract(data, fuzzChoose, nil)
		if fmt.Sprint(whole.err) != fmt.Sprint(res.err) {
			t.Fatalf("error depends on chunking: whole %v, cut at %v: %v", whole.err, cuts, res.err)
		}

		if !json.Valid(data) {
			if res.err == nil {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			return
		}
		if errors.Is(res.err, ErrTooDeep) {
			return
		}
		if res.err != nil {
			t.Fatalf("error %v on valid JSON %q", res.err, data)
		}
		want, err := oracle(data, fuzzChoose)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		if d := diff(res.vals, want); d != "" {
			t.Fatalf("values of %q cut at %v differ from encoding/json:%s", data, cuts, d)
		}

		// The root assistantText encoding/json keeps is the last one
		// streamed. UseNumber lets numbers beyond float64 decode.
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("decoding valid JSON: %v", err)
		}
		obj, _ := doc.(map[string]any)
		wantText, ok := obj["assistantText"].(string)
		if !ok {
			return
		}
		var got *value
		for i := range res.vals {
			if res.vals[i].Path == ".assistantText" {
				got = &res.vals[i]
			}
		}
		if got == nil || got.Text != wantText {
			t.Fatalf("streamed assistantText of %q = %+v, want %q", data, got, wantText)
		}
	})
}

// addSeeds adds every corpus file in dir to f.
func addSeeds(f *testing.F, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		data, seed, err := readSeed(filepath.Join(dir, ent.Name()))
		if err != nil {
			return err
		}
		f.Add(data, seed)
	}
	return nil
}

// readSeed parses a corpus file in Go's "go test fuzz v1" format holding a
// []byte and an int, the only types FuzzExtractor takes.
func readSeed(name string) ([]byte, int, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, 0, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || lines[0] != "go test fuzz v1" {
		return nil, 0, fmt.Errorf("%s: want a go test fuzz v1 header and two values", name)
	}
	var (
		data          []byte
		seed          int
		gotData, gotN bool
	)
	for _, line := range lines[1:] {
		switch {
		case strings.HasPrefix(line, "[]byte(") && strings.HasSuffix(line, ")"):
			s, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %q: %v", name, line, err)
			}
			data, gotData = []byte(s), true
		case strings.HasPrefix(line, "int(") && strings.HasSuffix(line, ")"):
			n, err := strconv.Atoi(line[len("int(") : len(line)-1])
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %q: %v", name, line, err)
			}
			seed, gotN = n, true
		default:
			return nil, 0, fmt.Errorf("%s: unsupported line %q", name, line)
		}
	}
	if !gotData || !gotN {
		return nil, 0, fmt.Errorf("%s: want one []byte and one int", name)
	}
	return data, seed, nil
}
