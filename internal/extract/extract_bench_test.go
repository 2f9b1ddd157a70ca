package extract

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// countHandler is the benchmarks' Handler: it streams the root assistantText,
// captures the root step and only counts what it receives.
type countHandler struct {
	text, ends int
}

func (h *countHandler) Match(p Path) (int, Action) {
	if len(p) != 1 {
		return 0, Skip
	}
	switch {
	case p[0].Is("assistantText"):
		return 1, Stream
	case p[0].Is("step"):
		return 2, Capture
	}
	return 0, Skip
}

func (h *countHandler) Text(_ int, _ Path, text []byte) { h.text += len(text) }

func (h *countHandler) End(int, Path, []byte) { h.ends++ }

// benchSentences are JSON-encoded pieces of model prose: mostly plain ASCII
// with the escapes, raw Unicode and \u escapes a model emits, about one per
// 25 bytes, which is denser than typical prose so the slower paths count.
var benchSentences = []string{
	`The claim follows directly from the grounds you supplied: quarterly revenue rose by twelve percent while costs stayed flat. `,
	`As the analyst put it, \"growth is durable\" — at least for the next two quarters. `,
	`\n\n`,
	`Caf\u00e9 owners in S\u00e3o Paulo reported a na\u00efve r\u00e9sum\u00e9 of demand \u2014 still, it counts as backing. `,
	`A rebuttal would need evidence that the trend reverses; none was offered so far. `,
	`Raw Unicode is common too: café, São Paulo, 東京, and an emoji 😀 or \ud83d\ude80 now and then. `,
	`\n- First, restate the claim.\n- Second, check the warrant.\n\tThen cite the file C:\\data\\q3.csv. `,
	`Overall the argument is reasonably strong, so the qualifier \"probably\" fits well here. `,
}

// benchDoc returns a realistic Toulmin result of about size bytes: a long
// assistantText followed by about 330 bytes of other members.
func benchDoc(size int) []byte {
	const tail = `","step":"claim","confidence":0.7,"claim":"Revenue growth is durable.",` +
		`"grounds":["Q3 revenue +12%","costs flat"],"warrant":"Growth without cost growth persists.",` +
		`"backing":{"source":"analyst report","year":2024,"pages":[3,4,17]},` +
		`"qualifier":"probably","rebuttal":null,"done":false,"meta":{"assistantText":"not streamed"}}`
	var b bytes.Buffer
	b.WriteString(`{"assistantText":"`)
	for i := 0; b.Len()+len(tail) < size; i++ {
		b.WriteString(benchSentences[i%len(benchSentences)])
	}
	b.WriteString(tail)
	return b.Bytes()
}

// realisticSizes returns a cycle of pseudo-random chunk sizes of 3 to 8
// bytes, the way a model's token stream arrives. Its length is a power of two
// for feedSizes, and small enough to stay in cache so that the benchmark
// measures the Extractor rather than memory traffic for the chunking.
func realisticSizes(seed uint64) []uint8 {
	r := rand.New(rand.NewPCG(seed, 1))
	sizes := make([]uint8, 4096)
	for i := range sizes {
		sizes[i] = uint8(3 + r.IntN(6))
	}
	return sizes
}

// feedSizes writes doc to e in chunks whose sizes cycle through sizes (whose
// length must be a power of two), then closes e, and returns the first error.
func feedSizes(e *Extractor, doc []byte, sizes []uint8) error {
	mask := len(sizes) - 1
	for k := 0; len(doc) > 0; k++ {
		n := min(int(sizes[k&mask]), len(doc))
		if err := e.Write(doc[:n]); err != nil {
			return err
		}
		doc = doc[n:]
	}
	return e.Close()
}

func BenchmarkExtract(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}
	for _, size := range sizes {
		doc := benchDoc(size.n)
		var want struct{ AssistantText string }
		if err := json.Unmarshal(doc, &want); err != nil {
			b.Fatal(err)
		}
		chunkings := []struct {
			name  string
			sizes []uint8
		}{
			{"realistic", realisticSizes(1)},
			{"64B", []uint8{64}},
			{"1B", []uint8{1}},
		}
		for _, ch := range chunkings {
			b.Run("size="+size.name+"/chunk="+ch.name, func(b *testing.B) {
				h := &countHandler{}
				e := New(h)
				if err := feedSizes(e, doc, ch.sizes); err != nil || h.text != len(want.AssistantText) {
					b.Fatalf("streamed %d bytes with error %v, want %d bytes", h.text, err, len(want.AssistantText))
				}
				b.SetBytes(int64(len(doc)))
				b.ReportAllocs()
				for b.Loop() {
					e.Reset()
					if err := feedSizes(e, doc, ch.sizes); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkNew measures an Extractor's whole life on a typical document:
// New, then the document in realistic chunks. Its B/op is the memory an
// open stream costs.
func BenchmarkNew(b *testing.B) {
	doc := typicalDoc(4 << 10)
	sizes := realisticSizes(1)
	h := &blocksHandler{}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := feedSizes(New(h), doc, sizes); err != nil {
			b.Fatal(err)
		}
	}
}
