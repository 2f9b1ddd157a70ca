package bench

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Micro is one line of `go test -bench -benchmem` output.
type Micro struct {
	Pkg      string  `json:"pkg"`
	Name     string  `json:"name"`
	NsPerOp  float64 `json:"nsPerOp"`
	MBPerSec float64 `json:"mbPerSec,omitempty"`
	BPerOp   float64 `json:"bytesPerOp"`
	Allocs   float64 `json:"allocsPerOp"`
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

// ParseMicro reads the benchmark lines of `go test -bench -benchmem` output. When a benchmark
// appears more than once (-count), the fastest run is kept: on a shared machine the others
// measure the neighbours.
func ParseMicro(r io.Reader) ([]Micro, error) {
	var out []Micro
	index := map[string]int{}
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		b := Micro{Pkg: pkg, Name: m[1]}
		b.NsPerOp, _ = strconv.ParseFloat(m[2], 64)
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "MB/s":
				b.MBPerSec = v
			case "B/op":
				b.BPerOp = v
			case "allocs/op":
				b.Allocs = v
			}
		}
		key := pkg + " " + b.Name
		if i, ok := index[key]; ok {
			if b.NsPerOp < out[i].NsPerOp {
				out[i] = b
			}
			continue
		}
		index[key] = len(out)
		out = append(out, b)
	}
	return out, sc.Err()
}

// findMicro returns the benchmark whose name ends in suffix, or nil.
func findMicro(ms []Micro, suffix string) *Micro {
	for i := range ms {
		if strings.HasSuffix(ms[i].Name, suffix) {
			return &ms[i]
		}
	}
	return nil
}
