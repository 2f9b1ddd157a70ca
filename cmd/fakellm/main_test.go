package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

const streams = "../../testdata/streams"

// serve runs the command with args until the test ends and returns its base URL.
func serve(t *testing.T, args []string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // later log lines are drained unread
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after cancel, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not return after cancel")
		}
	})
	select {
	case line := <-lines:
		var first struct {
			URL     string `json:"url"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &first); err != nil || first.Message != "fakellm listening" || !strings.HasPrefix(first.URL, "http://127.0.0.1:") {
			t.Fatalf("first log line %q (%v), want the listening address", line, err)
		}
		return first.URL
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no listening line")
	}
	return ""
}

// chat posts a request body and returns the response body.
func chat(t *testing.T, url, body string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// texts reassembles the content and tool-call arguments of a streamed body.
func texts(t *testing.T, body string) (content, tool, args string) {
	t.Helper()
	for line := range strings.Lines(body) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			content += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				tool += tc.Function.Name
				args += tc.Function.Arguments
			}
		}
	}
	return content, tool, args
}

func request(system, user, toolChoice string) string {
	req := map[string]any{
		"model":  "gpt-test",
		"stream": true,
		"messages": []map[string]string{
			{"role": "system", "content": system},
			{"role": "user", "content": user},
		},
	}
	if toolChoice != "" {
		req["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": toolChoice, "parameters": map[string]any{"type": "object"}}}}
		req["tool_choice"] = map[string]any{"type": "function", "function": map[string]string{"name": toolChoice}}
	}
	b, _ := json.Marshal(req)
	return string(b)
}

func TestReplayModel(t *testing.T) {
	url := serve(t, nil, nil)
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, content, tool, args string)
	}{
		{"toulmin answers JSON content", request("Coach.\n## Session facts\ncontract: toulmin\nlocale: en\nstep: claim\nfirst_turn_for_step: true\ndraft_for_step: \nrewrite_request: false\nconfirmation: false\nis_complete: false", "Remote work is good.", ""),
			func(t *testing.T, content, tool, _ string) {
				var r struct {
					AssistantText string `json:"assistantText"`
				}
				if err := json.Unmarshal([]byte(content), &r); err != nil || r.AssistantText == "" || tool != "" {
					t.Errorf("content %q, tool %q; want a CoachAIResult in the content", content, tool)
				}
			}},
		{"forced tool answers a call", request("Cards.\n## Session facts\ncontract: cards\nlocale: en\nlevel: 1\nmax_level: 5\nlast_card: none\ncycles_at_level: 0", "Begin training.", "display_card"),
			func(t *testing.T, content, tool, args string) {
				if tool != "display_card" || !json.Valid([]byte(args)) || content != "" {
					t.Errorf("content %q, call %q(%q); want a display_card call with JSON arguments", content, tool, args)
				}
			}},
		{"no facts answers the generic text", request("Just chat.", "Hello?", ""),
			func(t *testing.T, content, tool, _ string) {
				if content != replay.Generic || tool != "" {
					t.Errorf("content %q, tool %q; want %q", content, tool, replay.Generic)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := chat(t, url, tt.body, nil)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			if !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Errorf("body does not end with [DONE]: %q", body)
			}
			content, tool, args := texts(t, body)
			tt.check(t, content, tool, args)
		})
	}
}

func TestReplayFixtures(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(streams, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	names, _ := filepath.Glob(filepath.Join(streams, "*.sse"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	slices.Sort(names)
	if len(names) < 2 {
		t.Fatalf("fixtures %v, want at least two", names)
	}
	tests := []struct {
		name   string
		args   []string
		header http.Header
		want   []string // files answering consecutive requests
	}{
		{"a directory takes turns", []string{"-replay", streams}, nil, append(names, names[0])},
		{"a directory by name", []string{"-replay", streams}, http.Header{fakellm.FixtureHeader: {"module-intro"}}, []string{"module-intro.sse", "module-intro.sse"}},
		{"one file answers everything", []string{"-replay", filepath.Join(streams, "cards-scenario.sse")}, nil, []string{"cards-scenario.sse", "cards-scenario.sse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, tt.args, nil)
			for i, file := range tt.want {
				if _, body := chat(t, url, request("", "hi", ""), tt.header); body != read(file) {
					t.Errorf("answer %d is not %s byte for byte:\n%.300s", i, file, body)
				}
			}
		})
	}
}

func TestRecord(t *testing.T) {
	upstream, upURL, stop, err := fakellm.Start(fakellm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	upstream.Enqueue(fakellm.Reply{Content: "recorded words"})
	out := filepath.Join(t.TempDir(), "new", "dir")
	url := serve(t, []string{"-record", "-upstream", upURL, "-out", out}, map[string]string{"OPENAI_API_KEY": "sk-env"})

	status, body := chat(t, url, request("", "hi", ""), nil)
	if content, _, _ := texts(t, body); status != http.StatusOK || content != "recorded words" {
		t.Fatalf("status %d, content %q; want the upstream's answer", status, content)
	}
	if got := upstream.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-env" {
		t.Errorf("upstream Authorization = %q, want the OPENAI_API_KEY fallback", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(out, "*.sse"))
		if len(files) == 1 {
			if got, _ := os.ReadFile(files[0]); string(got) != body {
				t.Errorf("recording differs from the relayed body")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("recordings %v, want one .sse file", files)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"record without upstream", []string{"-record"}, "-record needs -upstream"},
		{"record and replay", []string{"-record", "-upstream", "http://x", "-replay", streams}, "exclude each other"},
		{"unknown flag", []string{"-bogus"}, "flag provided but not defined"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"missing replay path", []string{"-replay", "no/such/dir"}, "no such file"},
		{"replay dir without streams", []string{"-replay", t.TempDir()}, "no .sse files"},
		{"bad log level", []string{"-log-level", "loud"}, "Unknown Level"},
		{"invalid address", []string{"-addr", "256.0.0.1:1"}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, func(string) string { return "" }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run -h = %v, want flag.ErrHelp", err)
	}
}
