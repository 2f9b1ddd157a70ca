package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunWithNothingConfigured runs the gateway as the README's first command does (embedded
// Redis, embedded replay model) on a free port and takes a turn through it.
func TestRunWithNothingConfigured(t *testing.T) {
	// The embedded Redis is saved in a directory of the test's own, never the user's cache.
	dataDir := t.TempDir()
	base, warnings, stop := startRun(t, map[string]string{"COACH_DATA_DIR": dataDir})
	for _, want := range []string{"embedded in-process Redis, saved to " + filepath.Join(dataDir, "embedded-redis.json"), "embedded replay model", "no API keys configured"} {
		if !strings.Contains(strings.Join(warnings, "\n"), want) {
			t.Errorf("start-up warnings %q do not mention %q", warnings, want)
		}
	}

	resp, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(`{"contract":"toulmin"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	resp, err = http.Post(base+"/v1/sessions/"+sess.ID+"/turns", "application/json", strings.NewReader(`{"message":"Cities should ban cars from their centres."}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if !strings.HasPrefix(lines[0], `{"type":"delta"`) || !strings.HasPrefix(lines[len(lines)-1], `{"type":"result"`) {
		t.Errorf("turn through the replay model = %s, want deltas then a result", body)
	}

	stop()
	if saved, err := os.ReadFile(filepath.Join(dataDir, "embedded-redis.json")); err != nil || !strings.Contains(string(saved), sess.ID) {
		t.Errorf("after the stop, the saved embedded Redis (%v) does not hold session %s", err, sess.ID)
	}
}

// startRun runs the gateway as main does, with the environment env on top of a free loopback
// port and a fast replay model, until it logs its address. It returns the gateway's base URL,
// the messages it warned with at start, and stop, which stops it as a signal does and waits
// until run returns.
func startRun(t *testing.T, env map[string]string) (base string, warnings []string, stop func()) {
	t.Helper()
	all := map[string]string{"COACH_ADDR": "127.0.0.1:0", "COACH_REPLAY_DELAY_MIN": "0s", "COACH_REPLAY_DELAY_MAX": "1ms"}
	for k, v := range env {
		all[k] = v
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return all[k] }, pw)
		pw.Close()
	}()
	addr := ""
	logs := bufio.NewScanner(pr)
	for addr == "" && logs.Scan() {
		var l struct{ Level, Message, Addr string }
		_ = json.Unmarshal(logs.Bytes(), &l)
		if l.Level == "warn" {
			warnings = append(warnings, l.Message)
		}
		if l.Message == "listening" {
			addr = l.Addr
		}
	}
	go io.Copy(io.Discard, pr)
	if addr == "" {
		cancel()
		t.Fatalf("the gateway did not log its address: %v", <-done)
	}
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run() after cancel = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("run() did not return after its context was cancelled")
		}
	}
	t.Cleanup(stop)
	return "http://" + addr, warnings, stop
}

// TestRunKeepsSessionsInTheDefaultDataDir runs the gateway twice with nothing configured, not
// even COACH_DATA_DIR, on a fresh machine (a home directory of the test's own, no cache
// directory yet): the first run creates the user's cache directory and saves its session there
// when it stops, and the second finds the session again.
func TestRunKeepsSessionsInTheDefaultDataDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("LocalAppData", filepath.Join(home, "AppData", "Local")) // the cache directory on Windows
	cache, err := os.UserCacheDir()
	if err != nil || !strings.HasPrefix(cache, home) {
		t.Skipf("the user cache directory %q (%v) is not under the test's home directory here", cache, err)
	}
	path := filepath.Join(cache, "coachgw", "embedded-redis.json")

	base, warnings, stop := startRun(t, nil)
	if !strings.Contains(strings.Join(warnings, "\n"), "saved to "+path) {
		t.Errorf("start-up warnings %q do not say the sessions are saved to %s", warnings, path)
	}
	resp, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(`{"contract":"cards"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	stop()
	if saved, err := os.ReadFile(path); err != nil || !strings.Contains(string(saved), sess.ID) {
		t.Fatalf("after the stop, %s (%v) does not hold session %s", path, err, sess.ID)
	}

	base, _, _ = startRun(t, nil)
	resp, err = http.Get(base + "/v1/sessions/" + sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET the session after a restart: status %d, want 200", resp.StatusCode)
	}
}

func TestRunRejectsBadStarts(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"arguments", []string{"serve"}, nil, "takes no arguments"},
		{"bad setting", nil, map[string]string{"COACH_IDLE_TIMEOUT": "soon"}, "COACH_IDLE_TIMEOUT"},
		{"output bound of an unknown contract", nil, map[string]string{"COACH_ADDR": "127.0.0.1:0", "COACH_MAX_OUTPUT_BYTES": "toulmn=65536", "COACH_DATA_DIR": t.TempDir()}, `no contract "toulmn"`},
		{"bad modules dir", nil, map[string]string{"COACH_ADDR": "127.0.0.1:0", "COACH_MODULES_DIR": "/nonexistent-coachgw-modules", "COACH_DATA_DIR": t.TempDir()}, "module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
