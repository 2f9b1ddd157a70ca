package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []int64
		p      float64
		want   int64
	}{
		{"one sample", []int64{7}, 99, 7},
		{"p50 of two", []int64{1, 2}, 50, 1},
		{"p99 of 100 is the 99th", hundred, 99, 99},
		{"p1 of 100 is the first", hundred, 1, 1},
		{"p100 is the max", hundred, 100, 100},
		{"p0 is the min", hundred, 0, 1},
		{"p99 of 10 is the max", hundred[:10], 99, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(p%v) = %d, want %d", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	ns := []int64{int64(3 * time.Millisecond), int64(time.Millisecond), int64(2 * time.Millisecond)}
	got := summarize(ns)
	want := Summary{N: 3, Min: 1, P1: 1, P25: 1, P50: 2, P75: 3, P90: 3, P95: 3, P99: 3, Max: 3, Mean: 2}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if empty := summarize(nil); empty != (Summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", empty)
	}
}

// TestTurnPairing checks how a turn's two sides are paired: overheads subtract the model's own
// time, and each line is charged from the flush of the piece that completed it.
func TestTurnPairing(t *testing.T) {
	sc := &script{first: 2, pieces: make([]string, 4)}
	rec := &turnRec{
		sc:        sc,
		send:      1_000,
		arrive:    1_300,                               // 300 ns to reach fakellm
		flushes:   []int64{2_000, 3_000, 4_000, 5_000}, // piece 2 (the first text) at 4_000
		first:     4_500,                               // the first text reached the client 500 ns later
		last:      5_900,
		recv:      []int64{4_500, 5_050},
		recvChunk: []int32{2, 3},
	}
	ttfd, ttll, ok := rec.overheads()
	if !ok {
		t.Fatal("overheads not ok")
	}
	// TTFD: (4500-1000) - (4000-1300) = 800; TTLL: (5900-1000) - (5000-1300) = 1200.
	if ttfd != 800 || ttll != 1200 {
		t.Errorf("overheads = %d, %d; want 800, 1200", ttfd, ttll)
	}
	got, err := rec.deltaLatencies(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 500 || got[1] != 50 {
		t.Errorf("delta latencies = %v, want [500 50]", got)
	}

	rec.recvChunk[1] = 9
	if _, err := rec.deltaLatencies(nil); err == nil {
		t.Error("a line mapped to a piece never flushed was accepted")
	}
	rec.flushes = rec.flushes[:2]
	if _, _, ok := rec.overheads(); ok {
		t.Error("overheads without the first text's flush were reported")
	}
}

func TestFindTag(t *testing.T) {
	tests := []struct {
		name string
		body string
		want uint64
		ok   bool
	}{
		{"one", `{"content":"hello #bt42#"}`, 42, true},
		{"the last wins", `[{"content":"old #bt7#"},{"content":"new #bt8#"}]`, 8, true},
		{"none", `{"content":"hello"}`, 0, false},
		{"unterminated", `{"content":"#bt12"}`, 0, false},
		{"not a number", `{"content":"#btx#"}`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := findTag([]byte(tt.body))
			if got != tt.want || ok != tt.ok {
				t.Errorf("findTag = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if seq, ok := findTag([]byte(tag(123))); !ok || seq != 123 {
		t.Errorf("findTag(tag(123)) = %d, %v", seq, ok)
	}
}

func TestTurnsFor(t *testing.T) {
	tests := []struct {
		name                     string
		cfg                      Config
		c                        int
		turns, rounds, perWorker int
	}{
		{"c=1 default", Config{}, 1, 30, 3, 10},
		{"c=100 default", Config{}, 100, 600, 2, 3},
		{"c=5000 default", Config{}, 5000, 5000, 1, 1},
		{"rounded up to whole rounds", Config{Turns: 10, Rounds: 1}, 4, 12, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turns, rounds, per := tt.cfg.turnsFor(tt.c)
			if turns != tt.turns || rounds != tt.rounds || per != tt.perWorker {
				t.Errorf("turnsFor(%d) = %d, %d, %d; want %d, %d, %d", tt.c, turns, rounds, per, tt.turns, tt.rounds, tt.perWorker)
			}
		})
	}
}
