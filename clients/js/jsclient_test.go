package jsclient_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsclient "github.com/coachgw/coachgw/clients/js"
	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

// TestFS checks that the embedded files are the package's modules and nothing else.
func TestFS(t *testing.T) {
	names, err := fs.Glob(jsclient.FS(), "*")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
		if !strings.HasSuffix(n, ".js") {
			t.Errorf("embedded %q, want only .js modules", n)
		}
	}
	for _, want := range []string{"index.js", "stream.js", "ndjson.js", "errors.js", "client.js"} {
		if !have[want] {
			t.Errorf("%s is not embedded (have %v)", want, names)
		}
	}
}

// TestNode runs the package's node tests (test/*.test.js, with node's own test runner) against a
// real gateway started here on a loopback port: the replay model answers through a fakellm the
// tests may script (FAKELLM_URL: POST /_fakellm/enqueue queues replies with faults), on a real
// Redis whenever one answers. It skips when node is not on PATH, except under CI (CI=true),
// where it fails. The tests of the Vue and React bindings need `npm ci --prefix clients/js`;
// without it they skip, again except under CI.
func TestNode(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	node, err := exec.LookPath("node")
	if err != nil {
		if ci {
			t.Fatal("node is not on PATH; install Node.js 20 or later")
		}
		t.Skip("node is not on PATH; the JavaScript client's tests need Node.js 20 or later")
	}
	g := apptest.StartWith(t, apptest.Options{
		Config: func(c *config.Config) {
			// A level-up after every cycle, so that a short cards drill reaches a card line.
			c.CardsCyclesPerLevel = 1
			// The suites stall a turn's model and then act on the running turn (stop it,
			// resume it, leave and follow it again): the idle deadline that ends the stall must
			// leave them the time a loaded CI machine takes, beyond apptest's 2 s.
			c.IdleTimeout = 5 * time.Second
		},
		// Small pauses between chunks, so a test can act while a turn streams.
		LLM: fakellm.Options{Responder: replay.Responder(), DelayMin: time.Millisecond, DelayMax: 3 * time.Millisecond},
	})
	files, err := filepath.Glob(filepath.Join("test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in test/: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// One file at a time: the tests that script the fakellm share its queue.
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)...)
	cmd.Env = append(os.Environ(),
		"COACHGW_URL="+g.URL,
		"FAKELLM_URL="+strings.TrimSuffix(g.Config.OpenAIBaseURL, "/v1"),
		"NO_COLOR=1",
	)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node --test against %s:\n%s", g.URL, out.String())
	if err != nil {
		t.Fatalf("node --test failed: %v", err)
	}
}
