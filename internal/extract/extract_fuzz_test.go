package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/fuzzcorpus"
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
	fuzzcorpus.Add(f, fuzzSeedDir)
	for _, doc := range splitDocs {
		f.Add([]byte(doc), 1)
	}
	f.Fuzz(func(t *testing.T, data []byte, seed int) {
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		cuts := randomCuts(r, len(data), 1+r.IntN(16))
		if r.IntN(4) == 0 {
			cuts = withEmptyChunks(r, cuts)
		}
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

// withEmptyChunks repeats some of cuts, so that feed also writes empty
// chunks, which may arrive in any state.
func withEmptyChunks(r *rand.Rand, cuts []int) []int {
	out := make([]int, 0, 2*len(cuts))
	for _, c := range cuts {
		out = append(out, c)
		if r.IntN(3) == 0 {
			out = append(out, c)
		}
	}
	return out
}
