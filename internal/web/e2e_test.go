package web_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/app"
	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// chromium is Debian's Chromium, which the browser test drives (no browser download).
const chromium = "/usr/bin/chromium"

// TestBrowserE2E runs e2e/run.mjs, the ChatPanel's browser test, against a gateway started here on
// a loopback port with the embedded Redis and the embedded replay model. It runs when
// COACHGW_BROWSER=1 or CI=true; CI must have installed Chromium and the e2e packages, and the
// test fails when they are missing there (elsewhere it skips). COACHGW_E2E_FILTER runs only the
// scenarios whose name contains it.
func TestBrowserE2E(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	if os.Getenv("COACHGW_BROWSER") != "1" && !ci {
		t.Skip("the browser test runs with COACHGW_BROWSER=1 (or CI=true); it needs " + chromium + " and `npm ci` in internal/web/e2e")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		msg := "browser test: " + fmt.Sprintf(format, args...)
		if ci {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("%s is missing; install it with: apt-get install -y chromium", chromium)
	}
	if _, err := os.Stat(filepath.Join("e2e", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("e2e/node_modules is missing; install it with: npm ci --prefix internal/web/e2e")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH; install Node.js 20 or later")
	}

	base := startGateway(t, nil)
	// A second gateway with a low message limit shows that the panel counts against the limit
	// the server reports, not one it assumes.
	low := startGateway(t, func(cfg *config.Config) { cfg.MaxMessageChars = lowMessageChars })
	// A third gateway with a slow replay model (COACH_REPLAY_DELAY_MIN/MAX) keeps an answer
	// streaming for seconds, long enough to reload the page or press Stop in the middle of it.
	slow := startGateway(t, func(cfg *config.Config) {
		cfg.ReplayDelayMin, cfg.ReplayDelayMax = slowReplayMin, slowReplayMax
	})

	// Every screen state is checked at three widths in both themes: the run takes minutes.
	deadline := time.Now().Add(15 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(deadline) {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("e2e", "run.mjs"))
	cmd.Env = append(os.Environ(), "COACHGW_URL="+base, "COACHGW_LOW_LIMIT_URL="+low,
		fmt.Sprintf("COACHGW_LOW_LIMIT=%d", lowMessageChars), "COACHGW_SLOW_URL="+slow)
	// Screenshots go where COACH_SCREENSHOTS_DIR says (CI keeps them), else into the test's own
	// temporary directory: never into the repository.
	if os.Getenv("COACH_SCREENSHOTS_DIR") == "" {
		cmd.Env = append(cmd.Env, "COACH_SCREENSHOTS_DIR="+t.TempDir())
	}
	// An interrupt lets playwright close the browser it started; a kill follows if it hangs.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node e2e/run.mjs against %s:\n%s", base, out.String())
	if err != nil {
		t.Fatalf("e2e/run.mjs failed: %v (its screenshots show the page as it was)", err)
	}
}

// lowMessageChars is COACH_MAX_MESSAGE_CHARS of the browser test's second gateway.
const lowMessageChars = 300

// slowReplayMin and slowReplayMax are the pauses between the replay model's chunks on the browser
// test's third gateway: an answer then streams for several seconds, long enough for a scenario to
// act in the middle of it (reload, Stop, a second tab following it) while other scenarios run
// beside it on a busy machine.
const (
	slowReplayMin = 120 * time.Millisecond
	slowReplayMax = 180 * time.Millisecond
)

// startGateway serves the gateway (app.New + Serve, as cmd/coachgw does) on a loopback port with
// the defaults: no REDIS_URL and no OPENAI_BASE_URL, so the embedded Redis and the replay model,
// the latter without pauses between chunks; change, when not nil, adjusts the configuration. It
// returns the base URL once /readyz answers and stops the gateway when the test ends.
func startGateway(t *testing.T, change func(*config.Config)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	cfg := config.Default()
	cfg.Addr = ln.Addr().String()
	cfg.DataDir = t.TempDir() // the embedded Redis is saved here, never in the user's cache
	cfg.ReplayDelayMin, cfg.ReplayDelayMax = 0, time.Millisecond
	cfg.ShutdownTimeout = 5 * time.Second
	if change != nil {
		change(&cfg)
	}
	logs := &apptest.SyncBuffer{}
	log := zerolog.New(logs).Level(zerolog.InfoLevel).With().Timestamp().Logger()

	ctx, stop := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		stop()
		_ = ln.Close()
		t.Fatalf("app.New: %v", err)
	}
	// done is closed when Serve returns, with its error in serveErr.
	done := make(chan struct{})
	var serveErr error
	go func() {
		defer close(done)
		serveErr = a.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
			if serveErr != nil {
				t.Errorf("Serve: %v", serveErr)
			}
		case <-time.After(cfg.ShutdownTimeout + 5*time.Second):
			t.Errorf("the gateway did not stop within %v", cfg.ShutdownTimeout+5*time.Second)
		}
		a.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})

	base := "http://" + ln.Addr().String()
	waitReady(t, base, done, &serveErr)
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatalf("GET /: %v", err)
	}
	_ = res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET / answered %d %q, not the ChatPanel: mount web.Handler() on GET/HEAD /, /index.html and /static/* of the gateway's routes", res.StatusCode, ct)
	}
	return base
}

// waitReady polls /readyz until it answers 200, the gateway stops (done is closed, with
// *serveErr), or 30 seconds pass.
func waitReady(t *testing.T, base string, done <-chan struct{}, serveErr *error) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		res, err := client.Get(base + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			err = errors.New(res.Status)
		}
		select {
		case <-done:
			t.Fatalf("the gateway stopped before it was ready: %v", *serveErr)
		case <-deadline:
			t.Fatalf("the gateway was not ready within 30s: %v", err)
		case <-tick.C:
		}
	}
}
