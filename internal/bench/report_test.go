package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRedisTargets checks the Targets table's Redis row: exactly 2 round trips per successful
// turn for a gateway without the line log, and within 2 + delta lines/10 per level with it; a
// run recorded before the log was (no turnLog in its JSON) is held to the first.
func TestRedisTargets(t *testing.T) {
	const (
		exact  = "Redis: exactly 2 round trips per successful turn"
		logged = "Redis: round trips per successful turn ≤ 2 + delta lines/10 (line log on)"
	)
	gw := func(c, turns, deltas, errs int, perTurn float64) Level {
		m := ModeResult{Mode: "coachgw", Turns: turns, Deltas: deltas, Errors: errs, RedisPerTurn: perTurn,
			RedisRoundTrips: map[string]int64{"evalsha": int64(turns)}}
		return Level{Concurrency: c, Modes: []ModeResult{{Mode: "proxy"}, m}}
	}
	uncounted := Level{Concurrency: 1, Modes: []ModeResult{{Mode: "coachgw", Turns: 30, Deltas: 3000}}}
	tests := []struct {
		name string
		runs []*Result
		want []target
	}{
		{
			name: "log off, two each",
			runs: []*Result{{Levels: []Level{gw(1, 30, 3000, 0, 2), gw(100, 600, 60000, 0, 2)}}},
			want: []target{{exact, "2.00 (c=1), 2.00 (c=100)", "met"}},
		},
		{
			name: "log off, more than two",
			runs: []*Result{{Levels: []Level{gw(1, 30, 3000, 0, 2), gw(100, 600, 60000, 0, 2.5)}}},
			want: []target{{exact, "2.00 (c=1), 2.50 (c=100)", "**missed**"}},
		},
		{
			name: "log off, failed turns",
			runs: []*Result{{Levels: []Level{gw(1, 30, 3000, 1, 2)}}},
			want: []target{{exact, "2.00 (c=1)", "**missed**"}},
		},
		{
			name: "log off, not counted",
			runs: []*Result{{Levels: []Level{uncounted}}},
			want: []target{{exact, "not counted", "not measured"}},
		},
		{
			name: "log on, within the bound",
			runs: []*Result{{TurnLog: true, Levels: []Level{gw(8, 48, 6096, 0, 7.09), gw(50, 300, 38100, 0, 7.02)}}},
			want: []target{{logged, "c=8: 7.09 for 127.0 lines (bound 14.70); c=50: 7.02 for 127.0 lines (bound 14.70)", "met"}},
		},
		{
			name: "log on, a level beyond its bound",
			runs: []*Result{{TurnLog: true, Levels: []Level{gw(8, 48, 6096, 0, 7.09), gw(50, 300, 6000, 0, 4.5)}}},
			want: []target{{logged, "c=8: 7.09 for 127.0 lines (bound 14.70); c=50: 4.50 for 20.0 lines (bound 4.00)", "**missed**"}},
		},
		{
			name: "log on, failed turns",
			runs: []*Result{{TurnLog: true, Levels: []Level{gw(8, 48, 6096, 2, 7.09)}}},
			want: []target{{logged, "c=8: 7.09 for 127.0 lines (bound 14.70)", "**missed**"}},
		},
		{
			name: "log on, not counted",
			runs: []*Result{{TurnLog: true, Levels: []Level{uncounted}}},
			want: []target{{logged, "not counted", "not measured"}},
		},
		{
			name: "a run with the log and one without",
			runs: []*Result{
				{Levels: []Level{gw(5000, 5000, 500000, 0, 2)}},
				{TurnLog: true, Levels: []Level{gw(1, 30, 3810, 0, 7.5)}},
			},
			want: []target{{exact, "2.00 (c=5000)", "met"}, {logged, "c=1: 7.50 for 127.0 lines (bound 14.70)", "met"}},
		},
		{
			name: "recorded without the field",
			runs: []*Result{decodeResult(t, `{"levels":[{"concurrency":1,"modes":[{"mode":"coachgw","turns":30,"deltas":3810,"redisPerTurn":7.5,"redisRoundTrips":{"evalsha":30,"pipeline":195}}]}]}`)},
			want: []target{{exact, "7.50 (c=1)", "**missed**"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&Report{Runs: tt.runs}).redisTargets()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d targets %q, want %q", len(got), got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("target %d: got %q, want %q", i, got[i], tt.want[i])
				}
			}
			rep := &Report{Runs: tt.runs}
			md := rep.Markdown()
			for _, w := range tt.want {
				if row := "| " + w.name + " | " + w.measured + " | " + w.verdict + " |"; !strings.Contains(md, row) {
					t.Errorf("the markdown lacks the row %q", row)
				}
			}
			logOn := slices.ContainsFunc(tt.runs, func(r *Result) bool { return r.TurnLog })
			for _, s := range []string{"the log's batched appends, which run beside the turn", "The gateway kept its resumable-turn line log"} {
				if strings.Contains(md, s) != logOn {
					t.Errorf("with the log on %v, the markdown has %q: %v", logOn, s, !logOn)
				}
			}
		})
	}
}

// TestResultTurnLogJSON checks that a run records its line log in the JSON only when on, so
// that a run without it reads as one recorded before the field was.
func TestResultTurnLogJSON(t *testing.T) {
	for _, on := range []bool{false, true} {
		b, err := json.Marshal(&Result{TurnLog: on})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), `"turnLog":true`); got != on {
			t.Errorf("log on %v: JSON %s", on, b)
		}
		if got := decodeResult(t, string(b)).TurnLog; got != on {
			t.Errorf("log on %v: read back as %v", on, got)
		}
	}
}

func decodeResult(t *testing.T, s string) *Result {
	t.Helper()
	var res Result
	if err := json.Unmarshal([]byte(s), &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// TestMethodChildren checks that the Method section says how the runs ran their children: from
// private copies in a balanced order only when every run did, since a run recorded before that
// ran them from the bench's own binary in rotating order.
func TestMethodChildren(t *testing.T) {
	const private, own = "re-executed from a private copy of the bench's binary", "re-executed from the bench's own binary"
	tests := []struct {
		name string
		runs []*Result
		want string
	}{
		{"every run private", []*Result{{PrivateChildren: true}, {PrivateChildren: true}}, private},
		{"one run from before", []*Result{{PrivateChildren: true}, {}}, own},
		{"a run from before", []*Result{{}}, own},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := (&Report{Runs: tt.runs}).Markdown()
			if !strings.Contains(md, tt.want) {
				t.Errorf("the Method section lacks %q", tt.want)
			}
			other := map[string]string{private: own, own: private}[tt.want]
			if strings.Contains(md, other) {
				t.Errorf("the Method section says %q", other)
			}
			if strings.Contains(md, "%!") {
				t.Errorf("the Method section has a formatting error: %s", md)
			}
		})
	}
}
