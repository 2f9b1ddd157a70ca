// Package vuechat_test runs the AI SDK example's JavaScript tests against a real gateway: the
// node tests (test/*.test.mjs: the chat route read by the SDK's own transport, reader and Vue
// Chat) and the browser test (test/browser.mjs: the built app in headless Chromium).
package vuechat_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

// chromium is Debian's Chromium, which the browser test drives (no browser download).
const chromium = "/usr/bin/chromium"

// appDir is the directory of the app under test: this one, or COACH_VUECHAT_DIR, a copy of it
// with another major of `ai` installed (CI's matrix of supported majors, .ci/run).
func appDir() string {
	if d := os.Getenv("COACH_VUECHAT_DIR"); d != "" {
		return d
	}
	return "."
}

// need returns node's path, or skips the test when what it needs is missing: node and `npm ci`
// in this directory, and for the browser test Chromium. They run when CI=true (and then a
// missing piece fails the test) or COACHGW_BROWSER=1.
func need(t *testing.T, browser bool) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if !ci && os.Getenv("COACHGW_BROWSER") != "1" {
		t.Skip("the AI SDK example's tests run with COACHGW_BROWSER=1 (or CI=true); they need node, `npm ci --prefix examples/vue-chat` and " + chromium)
	}
	missing := func(msg string) {
		t.Helper()
		if ci {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH; install Node.js 20.19 or later")
	}
	if _, err := os.Stat(filepath.Join(appDir(), "node_modules", "@ai-sdk", "vue", "package.json")); err != nil {
		missing("node_modules is missing; install it with: npm ci --prefix examples/vue-chat")
	}
	if _, err := os.Stat(chromium); browser && err != nil {
		missing(chromium + " is missing; install it with: apt-get install -y chromium")
	}
	return node
}

// startGateway starts a gateway whose model is the replay model behind a fakellm the tests may
// script (FAKELLM_URL), with one completed cards cycle per level so a short drill reaches a
// level_up card, and CORS for origin when it is not empty. It returns the environment that
// tells the JavaScript tests where both are.
func startGateway(t *testing.T, origin string) []string {
	t.Helper()
	g := apptest.StartWith(t, apptest.Options{
		Config: func(c *config.Config) {
			c.CardsCyclesPerLevel = 1
			if origin != "" {
				c.CORSOrigins = []string{origin}
			}
		},
		LLM: fakellm.Options{Responder: replay.Responder(), DelayMin: time.Millisecond, DelayMax: 2 * time.Millisecond},
	})
	return []string{"COACHGW_URL=" + g.URL, "FAKELLM_URL=" + strings.TrimSuffix(g.Config.OpenAIBaseURL, "/v1"), "NO_COLOR=1"}
}

// run runs node with args and env, logs its output, and fails the test when it fails.
func run(t *testing.T, node string, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), env...)
	// An interrupt lets playwright close the browser it started; a kill follows if it hangs.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("node %s:\n%s", strings.Join(args, " "), out.String())
	if err != nil {
		t.Fatalf("node %s failed: %v", strings.Join(args, " "), err)
	}
}

// TestNode runs test/*.test.mjs with node's test runner, one file at a time (the tests that
// script the fakellm share its queue). It runs beside TestBrowser: each has a gateway and a
// fakellm of its own.
func TestNode(t *testing.T) {
	t.Parallel()
	node := need(t, false)
	files, err := filepath.Glob(filepath.Join(appDir(), "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in test/: %v", err)
	}
	env := startGateway(t, "")
	run(t, node, env, append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)...)
}

// TestBrowser builds the app with Vite, serves the build on a loopback port of its own (another
// origin than the gateway's, so CORS is part of the test) and runs test/browser.mjs, which drives
// it in headless Chromium through a toulmin session, a cards drill and a module turn.
func TestBrowser(t *testing.T) {
	t.Parallel()
	node := need(t, true)
	dist := t.TempDir()
	run(t, node, nil, filepath.Join("node_modules", "vite", "bin", "vite.js"), "build", "--logLevel", "warn", "--emptyOutDir", "--outDir", dist)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dist)), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	origin := "http://" + ln.Addr().String()

	env := startGateway(t, origin)
	run(t, node, append(env, "APP_URL="+origin+"/", "CHROMIUM_PATH="+chromium), filepath.Join("test", "browser.mjs"))
}
