package bench

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// TestMain lets the test binary play the bench's child roles: the bench re-executes its own
// binary with RoleEnv set.
func TestMain(m *testing.M) {
	if role := os.Getenv(RoleEnv); role != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := ServeRole(ctx, role, os.Getenv, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "role "+role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchSmoke runs a tiny bench end to end (no pauses, concurrency 1 and 4, a few turns):
// every path must finish every turn, a coachgw turn must cost exactly two Redis round trips
// by the gateway's own count and three commands by the relay's (which sees commands, not
// pipelines), besides learner safety's audit batches, every stream held must reach its pause
// with text out, and the report must render.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress strings.Builder
	res, err := Run(ctx, Config{
		Levels: []int{1, 4}, Turns: 8, Rounds: 1,
		Shape:    Shape{Chunks: 150, ChunkMin: 3, ChunkMax: 8},
		Seed:     7,
		RedisURL: redistest.URL(t), RedisRelay: true,
		Progress: &progress, Stderr: testWriter{t},
		Command: "smoke",
	})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	if len(res.Levels) != 2 {
		t.Fatalf("got %d levels, want 2", len(res.Levels))
	}
	for _, l := range res.Levels {
		for _, m := range l.Modes {
			name := fmt.Sprintf("c=%d %s", l.Concurrency, m.Mode)
			if m.Errors != 0 {
				t.Errorf("%s: %d errors: %q", name, m.Errors, m.ErrorSamples)
			}
			if want := l.TurnsPerMode; m.Turns != want {
				t.Errorf("%s: %d turns, want %d", name, m.Turns, want)
			}
			if m.TTFD.N != m.Turns || m.Delta.N == 0 {
				t.Errorf("%s: %d TTFD samples and %d delta samples for %d turns", name, m.TTFD.N, m.Delta.N, m.Turns)
			}
			if m.Mode != "coachgw" {
				continue
			}
			// Before its measured phase the level ran the gateway's warm-ups (one turn per
			// worker, at most 16 workers, then c) and its c held streams.
			c := l.Concurrency
			checkTurnRoundTrips(t, name, m, int64(min(c, 16)+c+c))
			if m.CPUPerTurnUs <= 0 || m.AllocPerTurn <= 0 {
				t.Errorf("%s: CPU %v µs and %v bytes per turn, want both measured", name, m.CPUPerTurnUs, m.AllocPerTurn)
			}
		}
		for _, h := range []*Hold{l.ProxyHold, l.Hold} {
			if h == nil || h.Opened != l.Concurrency || h.Paused != l.Concurrency || h.Errors != 0 {
				t.Errorf("c=%d: hold %+v, want every stream opened and paused without errors", l.Concurrency, h)
			}
		}
	}
	rep := &Report{Runs: []*Result{res}, Chart: "bench.svg", Regenerate: []string{"smoke"}}
	md := rep.Markdown()
	for _, want := range []string{"## Latency (ms)", "| 4 | coachgw |", "## Targets", "(evalsha "} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
	checkXML(t, rep.SVG())
}

// auditCommands are the commands of learner safety's audit writes as the relay sees them: the
// records of all turns go out together, one pipeline of an XADD per record and an XTRIM and a
// PEXPIRE per tenant every 200 ms (redisstore.AuditBatcher), beside the turns rather than in
// their path, so a phase has as many of them as its length allows, whatever its turns.
var auditCommands = map[string]bool{"XADD": true, "XTRIM": true, "PEXPIRE": true}

// auditRecordsPerTurn is what learner safety audits of a turn with the built-in screen alone:
// the check of its input and the check of its output.
const auditRecordsPerTurn = 2

// checkTurnRoundTrips checks a coachgw phase's Redis round trips: exactly two per turn, the claim
// (evalsha) and a pipeline of three commands (EVALSHA each by the relay's count: the claim, then
// the commit and the usage settlement together); besides them the relay sees only the audit's
// batches, which the gateway's hook labels audit. earlier is how many turns the gateway ran in
// the level before the phase.
func checkTurnRoundTrips(t *testing.T, name string, m ModeResult, earlier int64) {
	t.Helper()
	turns := int64(m.Turns)
	var pipelines int64
	for label, n := range m.RedisRoundTrips {
		switch {
		case label == "evalsha" && n != turns:
			t.Errorf("%s: %d claims (evalsha) for %d turns, want one a turn", name, n, turns)
		case label == "pipeline":
			pipelines = n
		case label != "evalsha" && !notRoundTrips[label]:
			t.Errorf("%s: %d round trips labelled %s (%v), want only evalsha and pipeline", name, n, label, m.RedisRoundTrips)
		}
	}
	var other int64
	for cmd, n := range m.RelayCommands {
		switch {
		case cmd == "EVALSHA" && (n < 3*turns || n > 3*turns+auditRecordsPerTurn*(turns+earlier)):
			// The relay knows commands by name only, and the audit writes each record through
			// its share script: the records flushed within the phase count too, and a batch
			// goes out every 200 ms whatever the phases, so it can hold the records of any
			// turn the level ran before (its warm-ups and held streams take less than that).
			t.Errorf("%s: the relay saw %d EVALSHA for %d turns (%v), want 3 a turn and at most %d audit records of these and the %d turns before",
				name, n, turns, m.RelayCommands, auditRecordsPerTurn*(turns+earlier), earlier)
		case cmd != "EVALSHA" && !auditCommands[cmd] && !notRoundTrips[cmd]:
			other += n
		}
	}
	if other > 0 {
		t.Errorf("%s: the relay saw commands other than the turns' and the audit's (%v)", name, m.RelayCommands)
	}
	// The gateway's hook labels the audit's batches apart (audit), so its pipelines are the turns'.
	if pipelines != turns {
		t.Errorf("%s: %d pipelines for %d turns (%v; relay %v), want one a turn",
			name, pipelines, turns, m.RedisRoundTrips, m.RelayCommands)
	}
}

// checkXML fails t unless s is well-formed XML.
func checkXML(t *testing.T, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed: %v", err)
		}
	}
}

// testWriter sends the children's logs to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runAB runs a small bench of two gateway paths in the same rounds (set turns its flag on) with
// answers of chunks chunks, and fails the test unless both ran every turn without errors.
func runAB(t *testing.T, chunks int, set func(*Config), a, b string) (*Result, *ModeResult, *ModeResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress strings.Builder
	cfg := Config{
		Levels: []int{2}, Turns: 4, Rounds: 2, Hold: -1,
		Shape:    Shape{Chunks: chunks, ChunkMin: 3, ChunkMax: 8},
		Seed:     7,
		RedisURL: redistest.URL(t),
		Progress: &progress, Stderr: testWriter{t},
		Command: "smoke",
	}
	set(&cfg)
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	l := res.Levels[0]
	ma, mb := l.mode(a), l.mode(b)
	if ma == nil || mb == nil {
		t.Fatalf("modes %+v, want %s and %s", l.Modes, a, b)
	}
	for _, m := range []*ModeResult{ma, mb} {
		if m.Errors != 0 || m.Turns != l.TurnsPerMode {
			t.Errorf("%s: %d errors in %d turns (%q), want none in %d", m.Mode, m.Errors, m.Turns, m.ErrorSamples, l.TurnsPerMode)
		}
	}
	return res, ma, mb
}

// TestBenchTurnLogAB runs the gateway with and without its line log in the same rounds
// (-turn-log-ab): both paths must run without errors, the one with the log at more Redis round
// trips per turn than the one without it but far fewer than a round trip per delta, within the
// target of 2 + deltas/10, and the report must name the log's cost.
func TestBenchTurnLogAB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	res, off, on := runAB(t, 600, func(c *Config) { c.TurnLogAB = true }, "coachgw", "coachgw+log")
	// A phase's count is read when its last turn's response has ended; the log's last batch
	// of that turn may come just after and be counted in the next phase, so the counts are
	// checked loosely (TestBenchSmoke checks the gateway's own two exactly).
	if off.RedisPerTurn < 2 {
		t.Errorf("coachgw: %v Redis round trips per turn (%v), want at least the claim and the commit", off.RedisPerTurn, off.RedisRoundTrips)
	}
	// What the log adds is compared with the turn's delta lines: batched, it costs a round trip
	// per 16 lines or 250 ms of a turn plus its first and last; appending line by line, one per
	// delta. Learner safety (enforced) sends a delta per clause, not per chunk, which is why the
	// answers are long: about 80 deltas a turn against a handful of batches, so that a log
	// writing per line fails this by far and a batched one passes even on a loaded machine.
	deltasPerTurn := float64(on.Deltas) / float64(on.Turns)
	t.Logf("Redis round trips per turn: %v with the log (%v), %v without (%v), for %v deltas",
		on.RedisPerTurn, on.RedisRoundTrips, off.RedisPerTurn, off.RedisRoundTrips, deltasPerTurn)
	if logPerTurn := on.RedisPerTurn - off.RedisPerTurn; logPerTurn <= 0 || logPerTurn >= deltasPerTurn/4 {
		t.Errorf("coachgw+log: %v Redis round trips per turn (%v), %v without the log (%v), for %v deltas: want the log's share above 0 and far below the deltas",
			on.RedisPerTurn, on.RedisRoundTrips, off.RedisPerTurn, off.RedisRoundTrips, deltasPerTurn)
	}
	if bound := 2 + deltasPerTurn/10; on.RedisPerTurn > bound {
		t.Errorf("coachgw+log: %v Redis round trips per turn (%v) for %v deltas, want at most 2 + deltas/10 = %v",
			on.RedisPerTurn, on.RedisRoundTrips, deltasPerTurn, bound)
	}
	rep := &Report{Runs: []*Result{res}, Chart: "bench.svg", Regenerate: []string{"smoke"}}
	md := rep.Markdown()
	for _, want := range []string{"| 2 | coachgw+log |", "resumable turns (line log on) add ≤ 0.2 ms to TTFD p50", "a fourth path, **coachgw+log**"} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
	checkXML(t, rep.SVG())
}

// TestBenchSafetyAB runs the gateway with its learner-safety checks enforced and off in the same
// rounds (-safety-ab): both paths must run without errors; the one with the checks off relays the
// first text in the line it arrives with, while the one enforcing them holds it for a sentence
// end, which the bench must see as model time waited (first line held); and the report must
// name the cost.
func TestBenchSafetyAB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	res, on, off := runAB(t, 150, func(c *Config) { c.SafetyAB = true }, "coachgw", "coachgw/safety-off")
	for _, m := range []*ModeResult{on, off} {
		if m.CPUPerTurnUs <= 0 || m.MallocsPerTurn <= 0 {
			t.Errorf("%s: CPU %v µs and %v allocs per turn, want both measured", m.Mode, m.CPUPerTurnUs, m.MallocsPerTurn)
		}
	}
	if off.Held.N != off.Turns || off.Held.Max != 0 {
		t.Errorf("coachgw/safety-off: first line held %+v, want 0 in each of %d turns (text relayed as it comes)", off.Held, off.Turns)
	}
	if on.Held.N != on.Turns || on.Held.P50 != 0 {
		t.Errorf("coachgw: first line held %+v, want none in most of %d turns (benign text leaves as it comes)", on.Held, on.Turns)
	}
	if on.Deltas*10 < off.Deltas*9 || on.Deltas > off.Deltas {
		t.Errorf("coachgw sent %d delta lines, safety off %d: want within 10 %%, the window keeps the model's deltas", on.Deltas, off.Deltas)
	}
	rep := &Report{Runs: []*Result{res}, Chart: "bench.svg", Regenerate: []string{"smoke"}}
	md := rep.Markdown()
	for _, want := range []string{"| 2 | coachgw/safety-off |", "learner safety (enforce vs off, built-in screen) adds ≤ 300 ms to TTFD p95", "another path, **coachgw/safety-off**"} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
	checkXML(t, rep.SVG())
}

// TestRoundOrder checks that the rounds' orders balance places and neighbours: over one full
// cycle, every mode runs in every place equally often and follows every other mode equally
// often, so that what a phase inherits from the one before it falls on all modes alike.
func TestRoundOrder(t *testing.T) {
	for n := 1; n <= 7; n++ {
		cycle := n
		if n%2 == 1 {
			cycle = 2 * n
		}
		place := map[[2]int]int{}
		follows := map[[2]int]int{}
		for round := range cycle {
			order := roundOrder(n, round)
			seen := map[int]bool{}
			for k, m := range order {
				if m < 0 || m >= n || seen[m] {
					t.Fatalf("n=%d round %d: order %v is not a permutation", n, round, order)
				}
				seen[m] = true
				place[[2]int{m, k}]++
				if k > 0 {
					follows[[2]int{order[k-1], m}]++
				}
			}
		}
		for m := range n {
			for k := range n {
				if got, want := place[[2]int{m, k}], cycle/n; got != want {
					t.Errorf("n=%d: mode %d runs in place %d %d times in %d rounds, want %d", n, m, k, got, cycle, want)
				}
			}
			for o := range n {
				if o == m {
					continue
				}
				if got, want := follows[[2]int{o, m}], cycle*(n-1)/(n*(n-1)); got != want {
					t.Errorf("n=%d: mode %d follows mode %d %d times in %d rounds, want %d", n, m, o, got, cycle, want)
				}
			}
		}
	}
}
