// Command coachgw is the coaching gateway: it streams coaching turns from any OpenAI-compatible
// model endpoint to coaching front ends as NDJSON, with session state in Redis. With nothing
// configured it runs on an embedded Redis and an embedded replay model. See README.md and docs/configuration.md.
//
// "coachgw qualify" judges the configured model endpoints with scripted learners instead of
// serving (see internal/qualify).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/app"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/logcap"
	"github.com/coachgw/coachgw/internal/qualify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "coachgw:", err)
		os.Exit(1)
	}
}

// run starts the gateway and serves until ctx is done, then drains and returns nil; with the
// argument "qualify" it runs `coachgw qualify` instead.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "qualify" {
		return qualify.Main(ctx, args[1:], getenv, stdout)
	}
	if len(args) > 0 {
		return errors.New("coachgw takes no arguments but \"qualify\"; it is configured by environment variables (see docs/configuration.md)")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stdout)
	log.Info().Object("config", cfg).Msg("starting coachgw")
	redis.SetLogger(redisLogger{log.With().Str("component", "redis").Logger()})

	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	return a.Serve(ctx, ln)
}

func newLogger(cfg config.Config, w io.Writer) zerolog.Logger {
	level, _ := zerolog.ParseLevel(cfg.LogLevel) // config.Load has checked it
	if cfg.LogFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	// Every line is capped, whatever a field quotes (see internal/logcap); the console writer
	// renders the capped JSON.
	return zerolog.New(logcap.Writer(w, logcap.MaxLine)).Level(level).With().Timestamp().Logger()
}

// redisLogger sends go-redis's own messages (dial failures, Sentinel switches) to the gateway's
// log instead of stderr. It is set once per process, since go-redis keeps it in a global.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn().Msgf(format, v...)
}
