// Package fuzzcorpus reads the fuzz seed corpora kept in the repository's testdata/fuzz, which
// go test does not read by itself (it reads only a package's own testdata/fuzz), so that every
// fuzz target, whatever its package, starts from the seeds checked in for it.
package fuzzcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// header opens every file in the format go test -fuzz writes.
const header = "go test fuzz v1"

// Add adds every file in dir to f, each line after the header as one argument, so the files
// must hold the target's argument types, in order. It fails f when dir holds no seed or a
// file does not parse.
func Add(f *testing.F, dir string) {
	f.Helper()
	seeds, err := Load(dir)
	if err != nil {
		f.Fatal(err)
	}
	if len(seeds) == 0 {
		f.Fatalf("no seeds in %s", dir)
	}
	for _, s := range seeds {
		f.Add(s...)
	}
}

// Load reads every file in dir: the values of each, in order. It knows the types the project's
// targets take: []byte, string and int.
func Load(dir string) ([][]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	seeds := make([][]any, 0, len(files))
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
		if len(lines) < 2 || lines[0] != header {
			return nil, fmt.Errorf("%s: want the line %q and one line per value", name, header)
		}
		values := make([]any, 0, len(lines)-1)
		for _, line := range lines[1:] {
			v, err := parse(line)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			values = append(values, v)
		}
		seeds = append(seeds, values)
	}
	return seeds, nil
}

func parse(line string) (any, error) {
	typ, arg, ok := strings.Cut(line, "(")
	arg, ok2 := strings.CutSuffix(arg, ")")
	if !ok || !ok2 {
		return nil, fmt.Errorf("want type(value): %q", line)
	}
	switch typ {
	case "[]byte":
		s, err := strconv.Unquote(arg)
		return []byte(s), err
	case "string":
		return strconv.Unquote(arg)
	case "int":
		return strconv.Atoi(arg)
	default:
		return nil, fmt.Errorf("unsupported type %q in %q", typ, line)
	}
}
