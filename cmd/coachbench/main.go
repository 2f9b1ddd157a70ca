// Command coachbench measures what the gateway adds on top of the model: it runs the same
// scripted fakellm stream directly, through a plain reverse proxy and as a real toulmin turn
// through coachgw, side by side, and writes a markdown report (BENCHMARKS.md), a JSON file and
// an SVG chart. See internal/bench for the method.
//
//	go run ./cmd/coachbench                      # levels 1, 100 and 1000
//	go run ./cmd/coachbench -c 5000 -out docs/bench/bench-5000.json -md '' -svg ''
//	go run ./cmd/coachbench -in docs/bench/bench.json,docs/bench/bench-5000.json -micro docs/bench/micro.txt
//	go run ./cmd/coachbench -quick               # a small run, for a smoke test
//	go run ./cmd/coachbench -c 1,8,50 -safety-mode off -baseline-bin /tmp/base/coachbench  # against a4f58e0 (BENCHMARKS.md)
//
// The gateway runs with its defaults, the resumable-turn line log and learner safety's enforce
// mode among them, so that the report measures the gateway as deployed; -turn-log=false and
// -safety-mode change those two.
//
// REDIS_URL selects a real Redis for the gateway; unset, the gateway uses a miniredis that
// the bench runs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/coachgw/coachgw/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "coachbench:", err)
		os.Exit(1)
	}
}

// run runs the bench, or one of its child roles when the environment asks for one.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if role := getenv(bench.RoleEnv); role != "" {
		return bench.ServeRole(ctx, role, getenv, stdout)
	}
	return bench.Main(ctx, args, getenv, stdout, os.Stderr)
}
