package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coachgw/coachgw/internal/config"
)

// microCommand produces the microbenchmark output that -micro reads.
const microCommand = "go test -run '^$' -bench . -benchmem -count 3 ./internal/extract/ ./internal/ndjson/ ./internal/toulmin/ ./internal/openai/"

// Main is coachbench's command line: it parses args, runs the bench (or, with -in, renders
// earlier results) and writes the report. stdout receives the markdown; stderr the progress.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, getenv, stderr)
	if err != nil {
		return err
	}
	rep := &Report{}
	if o.in != "" {
		for _, path := range strings.Split(o.in, ",") {
			res, err := readResult(path)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, res)
			rep.Regenerate = append(rep.Regenerate, res.Command)
		}
	} else {
		res, err := Run(ctx, o.cfg)
		if err != nil {
			return err
		}
		rep.Runs = []*Result{res}
		rep.Regenerate = []string{res.Command}
		if o.out != "" {
			if err := writeJSON(o.out, res); err != nil {
				return err
			}
		}
	}
	if o.micro != "" {
		f, err := os.Open(o.micro)
		if err != nil {
			return err
		}
		rep.Micro, err = ParseMicro(f)
		f.Close()
		if err != nil {
			return err
		}
		rep.Regenerate = append(rep.Regenerate, microCommand+" > "+o.micro)
	}
	if o.notes != "" {
		b, err := os.ReadFile(o.notes)
		if err != nil {
			return err
		}
		rep.Notes = string(b)
	}
	if o.in != "" {
		rep.Regenerate = append(rep.Regenerate, commandLine(args, ""))
	}
	if o.svg != "" {
		if err := writeFile(o.svg, rep.SVG()); err != nil {
			return err
		}
		if o.md != "" {
			rel, err := filepath.Rel(filepath.Dir(o.md), o.svg)
			if err != nil {
				rel = o.svg
			}
			rep.Chart = filepath.ToSlash(rel)
		}
	}
	text := rep.Markdown()
	if o.md != "" {
		if err := writeFile(o.md, text); err != nil {
			return err
		}
	}
	_, err = io.WriteString(stdout, text)
	return err
}

// options is coachbench's command line, parsed: the run's Config and where its results go.
type options struct {
	// cfg is the run to make; unset (and unchecked) with in, which renders earlier runs.
	cfg Config
	// out, md and svg are the JSON, markdown and SVG files to write ("" for none).
	out, md, svg string
	// in, micro and notes are the files the report is made from besides, or instead of, a run.
	in, micro, notes string
}

// parseArgs parses coachbench's flags, with REDIS_URL from getenv; flag errors and usage go to
// stderr.
func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("coachbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	levels := fs.String("c", "1,100,1000", "concurrency levels, comma-separated (5000 is opt-in)")
	turns := fs.Int("turns", 0, "turns per path and level (0: 30 at c=1, 6c up to 1000, c beyond)")
	rounds := fs.Int("rounds", 0, "interleaved rounds per level (0: 3 at c=1, 2 up to 1000, 1 beyond)")
	chunks := fs.Int("chunks", DefaultShape.Chunks, "chunks per model answer")
	chunkMin := fs.Int("chunk-min", DefaultShape.ChunkMin, "smallest chunk, bytes")
	chunkMax := fs.Int("chunk-max", DefaultShape.ChunkMax, "largest chunk, bytes")
	delayMin := fs.Duration("delay-min", DefaultShape.DelayMin, "shortest pause between chunks")
	delayMax := fs.Duration("delay-max", DefaultShape.DelayMax, "longest pause between chunks")
	seed := fs.Uint64("seed", 1, "seed of the scripts and pauses")
	hold := fs.Int("hold", 0, "streams held open to measure memory (0: the level's concurrency, -1: skip)")
	upstreams := fs.Int("upstreams", 0, "configure the gateway with this many model endpoints (COACH_UPSTREAMS: fakellm, then dead fallbacks); 0: OPENAI_BASE_URL alone")
	relay := fs.Bool("redis-relay", false, "also count the gateway's Redis commands on the wire, through a relay (adds a loopback hop to each)")
	profileDir := fs.String("profile-dir", "", "write gateway CPU and heap profiles here")
	var o options
	fs.StringVar(&o.out, "out", "docs/bench/bench.json", "JSON results file ('' for none)")
	fs.StringVar(&o.md, "md", "BENCHMARKS.md", "markdown report ('' for none)")
	fs.StringVar(&o.svg, "svg", "docs/bench/bench.svg", "SVG chart ('' for none)")
	fs.StringVar(&o.in, "in", "", "render the report from these JSON results (comma-separated) instead of running")
	fs.StringVar(&o.micro, "micro", "", "include the microbenchmarks from this `go test -bench -benchmem` output")
	fs.StringVar(&o.notes, "notes", "", "append this markdown file as the report's closing notes")
	turnLog := fs.Bool("turn-log", true, "keep the gateway's resumable-turn line log on (COACH_RESUME_TTL=5m), as the gateway does by default; -turn-log=false turns it off, so that Redis round trips per turn are the turn's own. With -turn-log-ab, coachgw runs with the log off whatever this says")
	turnLogAB := fs.Bool("turn-log-ab", false, "also run a second gateway with the line log on, as the mode coachgw+log, in the same interleaved rounds as coachgw, which then runs with the log off (whatever -turn-log says), so that the pair differs in the log alone")
	safetyAB := fs.Bool("safety-ab", false, "also run a second gateway with its learner-safety checks off (COACH_SAFETY_MODE=off), as the mode coachgw/safety-off, in the same interleaved rounds as coachgw (enforce)")
	safetyMode := fs.String("safety-mode", "enforce", "learner-safety mode of the gateway (COACH_SAFETY_MODE: enforce, observe, off)")
	baseline := fs.String("baseline-bin", "", "also run the gateway role of this coachbench executable (built from other code, e.g. an earlier commit), configured alike, as the mode coachgw@baseline in the same interleaved rounds")
	quick := fs.Bool("quick", false, "a small, fast run for a smoke test (writes no files unless asked)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		defaults := map[string]func(){
			"c": func() { *levels = "1,10" }, "turns": func() { *turns = 10 }, "rounds": func() { *rounds = 1 },
			"delay-min": func() { *delayMin = time.Millisecond }, "delay-max": func() { *delayMax = 2 * time.Millisecond },
			"out": func() { o.out = "" }, "md": func() { o.md = "" }, "svg": func() { o.svg = "" },
		}
		for name, apply := range defaults {
			if !set[name] {
				apply()
			}
		}
	}
	if o.in != "" {
		return o, nil
	}
	lv, err := parseLevels(*levels)
	if err != nil {
		return o, err
	}
	o.cfg = Config{
		Levels: lv, Turns: *turns, Rounds: *rounds, Seed: *seed, Hold: *hold,
		Shape:    Shape{Chunks: *chunks, ChunkMin: *chunkMin, ChunkMax: *chunkMax, DelayMin: *delayMin, DelayMax: *delayMax},
		RedisURL: getenv("REDIS_URL"), RedisRelay: *relay, ProfileDir: *profileDir, Upstreams: *upstreams, TurnLog: *turnLog, TurnLogAB: *turnLogAB, SafetyAB: *safetyAB,
		SafetyMode: *safetyMode, Baseline: *baseline,
		Progress: stderr, Stderr: stderr, Command: commandLine(args, getenv("REDIS_URL")),
	}
	return o, o.cfg.Shape.validate()
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-c %q: want positive whole numbers separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// commandLine renders the invocation for the report, with REDIS_URL's password masked.
func commandLine(args []string, redisURL string) string {
	cmd := "go run ./cmd/coachbench"
	if len(args) > 0 {
		cmd += " " + quoteArgs(args)
	}
	if redisURL != "" {
		cmd = "REDIS_URL=" + config.MaskURL(redisURL) + " " + cmd
	}
	return cmd
}

func readResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Levels) == 0 {
		return nil, errors.New(path + ": no levels")
	}
	return &res, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, string(b)+"\n")
}

func writeFile(path, text string) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
