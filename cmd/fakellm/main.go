// Command fakellm serves an OpenAI-compatible chat-completions endpoint without a model. By
// default the embedded replay model answers; -replay serves recorded fixture streams instead, and
// -record proxies a real endpoint and saves what it streams as new fixtures. Scripts and faults
// can be queued at POST /_fakellm/enqueue or asked for per request with the X-Fakellm-Fault
// header (see package internal/fakellm).
//
// It logs JSON lines to stdout; the first says where it listens, e.g.
// {"level":"info","url":"http://127.0.0.1:9000/v1",…,"message":"fakellm listening"}.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
	"github.com/rs/zerolog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. getenv supplies OPENAI_API_KEY, the key -record sends upstream
// when a client sends none.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	flags := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	flags.SetOutput(stdout)
	addr := flags.String("addr", "127.0.0.1:9000", "listen address; port 0 picks a free port")
	chunkMin := flags.Int("chunk-min", 3, "fewest bytes of text per streamed event")
	chunkMax := flags.Int("chunk-max", 8, "most bytes of text per streamed event")
	delayMin := flags.Duration("delay-min", 0, "shortest pause between events")
	delayMax := flags.Duration("delay-max", 0, "longest pause between events")
	replayPath := flags.String("replay", "", "serve recorded streams: a .sse `file` answers every request; a directory answers round-robin, or by name with the X-Fakellm-Fixture header")
	record := flags.Bool("record", false, "proxy -upstream and save each exchange under -out")
	upstream := flags.String("upstream", "", "base `URL` of the endpoint to record, e.g. https://api.openai.com/v1")
	out := flags.String("out", "testdata/streams", "`directory` for recordings")
	seed := flags.Uint64("seed", 0, "seed for chunk sizes, pauses and ids")
	model := flags.String("model", "fakellm", "model name listed by /v1/models")
	level := flags.String("log-level", "info", "log level: debug logs every request")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	lvl, err := zerolog.ParseLevel(*level)
	if err != nil {
		return err
	}
	log := zerolog.New(stdout).Level(lvl).With().Timestamp().Logger()

	opts := fakellm.Options{
		ChunkMin: *chunkMin, ChunkMax: *chunkMax, DelayMin: *delayMin, DelayMax: *delayMax,
		Seed: *seed, Model: *model, Log: log,
	}
	mode := "replay model"
	switch {
	case *record && *replayPath != "":
		return errors.New("-record and -replay exclude each other")
	case *record:
		if *upstream == "" {
			return errors.New("-record needs -upstream")
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		opts.Record = &fakellm.Recording{Upstream: *upstream, Dir: *out, APIKey: getenv("OPENAI_API_KEY")}
		mode = "record " + *upstream + " into " + *out
	case *replayPath != "":
		if opts.Fixtures, opts.Responder, err = fixtures(*replayPath); err != nil {
			return err
		}
		mode = "replay " + *replayPath
	default:
		opts.Responder = replay.Responder()
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           fakellm.New(opts),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	log.Info().Str("addr", ln.Addr().String()).Str("url", baseURL(ln.Addr())).Str("mode", mode).Msg("fakellm listening")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Streams end with ctx (the server's base context), so shutting down does not wait on them.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	log.Info().Msg("fakellm stopped")
	return nil
}

// baseURL is the OpenAI base URL of a listener, on loopback when it listens on every address.
func baseURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String() + "/v1"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1"
}

// fixtures serves path: one file answers every request, a directory's .sse files take turns.
func fixtures(path string) (fs.FS, fakellm.Responder, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !info.IsDir() {
		name := filepath.Base(path)
		return os.DirFS(filepath.Dir(path)), fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply {
			return fakellm.Reply{Fixture: name}
		}), nil
	}
	names, err := filepath.Glob(filepath.Join(path, "*.sse"))
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("no .sse files in %s", path)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	slices.Sort(names)
	var next atomic.Uint64
	return os.DirFS(path), fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Fixture: names[(next.Add(1)-1)%uint64(len(names))]}
	}), nil
}
