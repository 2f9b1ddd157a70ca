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
	env := map[string]string{"COACH_ADDR": "127.0.0.1:0", "COACH_REPLAY_DELAY_MIN": "0s", "COACH_REPLAY_DELAY_MAX": "1ms", "COACH_DATA_DIR": dataDir}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	addr := ""
	logs := bufio.NewScanner(pr)
	var warnings []string
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
		t.Fatalf("the gateway did not log its address: %v", <-done)
	}
	for _, want := range []string{"embedded in-process Redis, saved to " + filepath.Join(dataDir, "embedded-redis.json"), "embedded replay model", "no API keys configured"} {
		if !strings.Contains(strings.Join(warnings, "\n"), want) {
			t.Errorf("start-up warnings %q do not mention %q", warnings, want)
		}
	}

	base := "http://" + addr
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

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run() after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run() did not return after its context was cancelled")
	}
	if saved, err := os.ReadFile(filepath.Join(dataDir, "embedded-redis.json")); err != nil || !strings.Contains(string(saved), sess.ID) {
		t.Errorf("after the stop, the saved embedded Redis (%v) does not hold session %s", err, sess.ID)
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
