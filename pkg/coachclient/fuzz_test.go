package coachclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeedDir holds the seed corpus. It lives at the repository level, where go test does not
// look, so FuzzReadEvents adds its files itself.
var fuzzSeedDir = filepath.Join("..", "..", "testdata", "fuzz", "FuzzReadEvents")

// fuzzMaxLine is small so that the fuzzer reaches the line limit.
const fuzzMaxLine = 512

// FuzzReadEvents reads arbitrary bytes as a turn's stream. The reader must not panic or loop;
// whether the bytes arrive at once or in small pieces must not matter; every event it returns
// must be valid and survive its wire line's round trip; a Result or Error must be the last event;
// and the stream must end with io.EOF after one of those or with one of the package's errors.
func FuzzReadEvents(f *testing.F) {
	seeds, err := readSeeds(fuzzSeedDir)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, wholeErr := readEvents(t, bytes.NewReader(data), len(data))
		split, splitErr := readEvents(t, &pieces{data: data}, len(data))
		if !slices.Equal(whole, split) || fmt.Sprint(wholeErr) != fmt.Sprint(splitErr) {
			t.Fatalf("reading in pieces differs:\nwhole %q, %v\npieces %q, %v", whole, wholeErr, split, splitErr)
		}
	})
}

// readEvents reads a stream of size bytes from r, checking every event, and returns the events'
// wire lines and the error that ended the stream.
func readEvents(t *testing.T, r io.Reader, size int) ([]string, error) {
	s := newStream(context.Background(), io.NopCloser(r), func() {}, fuzzMaxLine)
	var lines []string
	var last Event
	// A stream has no more events than lines, and no more lines than bytes plus one.
	for range size + 2 {
		ev, err := s.Next()
		if err != nil {
			checkEnd(t, last, err)
			return lines, err
		}
		if last != nil && (last.Kind() == typeResult || last.Kind() == typeError) {
			t.Fatalf("%s after the stream's last event %s", show(ev), show(last))
		}
		lines = append(lines, checkEvent(t, ev))
		last = ev
	}
	t.Fatalf("more events than the input has lines: %q", lines)
	return nil, nil
}

func checkEnd(t *testing.T, last Event, err error) {
	t.Helper()
	ended := last != nil && (last.Kind() == typeResult || last.Kind() == typeError)
	switch {
	case err == io.EOF:
		if !ended {
			t.Fatalf("io.EOF after %s, not after a result or error", show(last))
		}
	case ended:
		t.Fatalf("error %v after the stream's last event", err)
	case errors.Is(err, ErrTruncated), errors.Is(err, ErrMalformed), errors.Is(err, ErrLineTooLong):
	default:
		t.Fatalf("unexpected error %v", err)
	}
}

// checkEvent checks that ev is valid and that its wire line reads back as the same event, and
// returns the line.
func checkEvent(t *testing.T, ev Event) string {
	t.Helper()
	switch e := ev.(type) {
	case Delta:
		if e.Block != nil && *e.Block < 0 {
			t.Fatalf("negative block: %s", show(ev))
		}
		if !utf8.ValidString(e.Text) || !utf8.ValidString(e.BlockType) {
			t.Fatalf("invalid UTF-8: %s", show(ev))
		}
	case Card:
		if !isObject(e.Card) || !json.Valid(e.Card) {
			t.Fatalf("card is not an object: %s", show(ev))
		}
	case Reset:
	case Result:
		if !isObject(e.Result) || !json.Valid(e.Result) || e.Session.ID == "" {
			t.Fatalf("incomplete result: %s", show(ev))
		}
	case Error:
		if e.Code == "" {
			t.Fatalf("error without a code: %s", show(ev))
		}
	case Unknown:
		if e.Type == "" || slices.Contains([]string{typeDelta, typeCard, typeReset, typeResult, typeError}, e.Type) {
			t.Fatalf("unknown event of type %q", e.Type)
		}
		if !isObject(e.Raw) || !json.Valid(e.Raw) {
			t.Fatalf("unknown event's line is not an object: %s", e.Raw)
		}
	default:
		t.Fatalf("event of type %T", ev)
	}
	line, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("marshalling %#v: %v", ev, err)
	}
	back, err := parseLine(line)
	if err != nil {
		t.Fatalf("the wire line %s of %#v does not parse: %v", line, ev, err)
	}
	again, err := json.Marshal(back)
	if err != nil || !bytes.Equal(again, line) {
		t.Fatalf("round trip: %s became %s (%v)", line, again, err)
	}
	return string(line)
}

// pieces reads data in pieces of 1 to 7 bytes.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	p.n++
	n := min(len(b), len(p.data), 1+p.n%7)
	copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}

// readSeeds reads a corpus directory in Go's "go test fuzz v1" format, one []byte per file.
func readSeeds(dir string) ([][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seeds [][]byte
	for _, ent := range entries {
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" ||
			!strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
			return nil, fmt.Errorf("%s: want a go test fuzz v1 header and one []byte", ent.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", ent.Name(), err)
		}
		seeds = append(seeds, []byte(s))
	}
	return seeds, nil
}
