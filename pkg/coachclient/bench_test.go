package coachclient

import (
	"context"
	"io"
	"strings"
	"testing"
)

// BenchmarkStreamNext reads a turn of 1000 deltas and its result, the shape of a long answer.
func BenchmarkStreamNext(b *testing.B) {
	body := strings.Repeat(`{"type":"delta","text":"a few words of the answer "}`+"\n", 1000) + resultLine
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s := newStream(context.Background(), io.NopCloser(strings.NewReader(body)), func() {}, DefaultMaxLineBytes)
		for {
			if _, err := s.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}
