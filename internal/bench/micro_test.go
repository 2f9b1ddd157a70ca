package bench

import (
	"strings"
	"testing"
)

func TestParseMicro(t *testing.T) {
	out := `goos: linux
pkg: github.com/coachgw/coachgw/internal/extract
BenchmarkExtract/size=1KiB/chunk=realistic-2    74074    27208 ns/op    38.41 MB/s    0 B/op    0 allocs/op
BenchmarkExtract/size=1KiB/chunk=realistic-2    90000    20000 ns/op    50.00 MB/s    0 B/op    0 allocs/op
PASS
pkg: github.com/coachgw/coachgw/internal/ndjson
BenchmarkAppendDelta-2   5928682    220.9 ns/op    0 B/op    0 allocs/op
`
	got, err := ParseMicro(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Micro{
		{Pkg: "github.com/coachgw/coachgw/internal/extract", Name: "BenchmarkExtract/size=1KiB/chunk=realistic", NsPerOp: 20000, MBPerSec: 50},
		{Pkg: "github.com/coachgw/coachgw/internal/ndjson", Name: "BenchmarkAppendDelta", NsPerOp: 220.9},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("benchmark %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestMicroTargets(t *testing.T) {
	r := &Report{Micro: []Micro{
		{Name: "BenchmarkExtract/size=1KiB/chunk=realistic", NsPerOp: 1000, MBPerSec: 1000},
		{Name: "BenchmarkExtract/size=1MiB/chunk=realistic", NsPerOp: 1000 * 1300, MBPerSec: 800},
		{Name: "BenchmarkExtract/size=1KiB/chunk=1B", NsPerOp: 1000, MBPerSec: 1000, Allocs: 1},
		{Name: "BenchmarkExtract/size=1MiB/chunk=1B", NsPerOp: 1000 * 1000, MBPerSec: 1000},
	}}
	got := map[string]string{}
	for _, tg := range r.microTargets() {
		got[tg.name] = tg.verdict
	}
	want := map[string]string{
		"extractor ≥ 300 MB/s on realistic chunks":                             "met",
		"extractor linear: 1 MiB costs ≤ 1.2 × 1024 × 1 KiB, fed the same way": "**missed**",
		"extractor: no allocation per chunk":                                   "**missed**",
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s: %q, want %q", name, got[name], v)
		}
	}
}
