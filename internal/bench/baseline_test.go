package bench

import "testing"

func TestBaselineTargets(t *testing.T) {
	proxy := ModeResult{Mode: "proxy", TTFD: Summary{P50: 0.5, P95: 1}}
	run := func(gw ModeResult, baseRounds []float64) *Result {
		base := ModeResult{Mode: "coachgw@baseline", TTFD: Summary{P50: 1, P95: 2}, CPUPerTurnUs: 4000, CPUPerTurnUsByRound: baseRounds}
		return &Result{Shape: ShapeInfo{Chunks: 40}, Levels: []Level{{Concurrency: 50, Modes: []ModeResult{proxy, gw, base}}}}
	}
	tests := []struct {
		name string
		gw   ModeResult
		want []target
	}{
		{
			name: "all met",
			gw: ModeResult{Mode: "coachgw", Turns: 10, Deltas: 200, TTFD: Summary{P50: 1.2, P95: 3.5}, CPUPerTurnUs: 3600,
				RedisPerTurn: 4, RedisRoundTrips: map[string]int64{"evalsha": 20, "pipeline": 20}},
			want: []target{
				{"c=50: added TTFD over the proxy p50 ≤ 1 ms, p95 ≤ 3 ms", "+0.700 / +2.50 ms (baseline +0.500 / +1.00 ms)", "met"},
				{"c=50: CPU per model chunk below the baseline's", "90.0 µs vs 100.0 µs (0.90×)", "met"},
				{"c=50: Redis round trips per turn ≤ 2 + lines/10", "4.00 for 20.0 lines (bound 4.00)", "met"},
			},
		},
		{
			name: "all missed",
			gw: ModeResult{Mode: "coachgw", Turns: 10, Deltas: 100, TTFD: Summary{P50: 1.6, P95: 3}, CPUPerTurnUs: 4000,
				RedisPerTurn: 6.5, RedisRoundTrips: map[string]int64{"evalsha": 20, "pipeline": 45}},
			want: []target{
				{"c=50: added TTFD over the proxy p50 ≤ 1 ms, p95 ≤ 3 ms", "+1.10 / +2.00 ms (baseline +0.500 / +1.00 ms)", "**missed**"},
				{"c=50: CPU per model chunk below the baseline's", "100.0 µs vs 100.0 µs (1.00×)", "**missed**"},
				{"c=50: Redis round trips per turn ≤ 2 + lines/10", "6.50 for 10.0 lines (bound 3.00)", "**missed**"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&Report{Runs: []*Result{run(tt.gw, nil)}}).baselineTargets()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d targets %q, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("target %d: got %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
	// Round by round, the ratios of the same rounds' figures give the range the sums hide.
	rounds := []struct {
		name     string
		gw, base []float64
		wantCPU  string
	}{
		{"three rounds", []float64{3300, 4400, 3300}, []float64{3000, 4000, 5000}, "90.0 µs vs 100.0 µs (0.90×; rounds 0.66-1.10×, mean 0.953 ± 0.147)"},
		{"one round", []float64{3600}, []float64{4000}, "90.0 µs vs 100.0 µs (0.90×)"},
		{"rounds missing on one side", []float64{3300, 3900}, nil, "90.0 µs vs 100.0 µs (0.90×)"},
		{"a round without CPU", []float64{3300, 3900}, []float64{4000, 0}, "90.0 µs vs 100.0 µs (0.90×)"},
	}
	for _, tt := range rounds {
		gw := ModeResult{Mode: "coachgw", TTFD: Summary{P50: 1.2, P95: 3.5}, CPUPerTurnUs: 3600, CPUPerTurnUsByRound: tt.gw}
		got := (&Report{Runs: []*Result{run(gw, tt.base)}}).baselineTargets()
		if len(got) < 2 || got[1].measured != tt.wantCPU {
			t.Errorf("%s: got targets %q, want the CPU row to read %q", tt.name, got, tt.wantCPU)
		}
	}
	if got := (&Report{Runs: []*Result{{Shape: ShapeInfo{Chunks: 40}, Levels: []Level{{Concurrency: 1, Modes: []ModeResult{proxy}}}}}}).baselineTargets(); len(got) != 0 {
		t.Errorf("without a baseline: got targets %q, want none", got)
	}
}
