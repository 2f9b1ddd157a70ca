package fakellm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedNow makes the "created" field, and so whole responses, reproducible.
func fixedNow() time.Time { return time.Unix(1754400000, 0) }

// start serves opts for the test's duration.
func start(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	s, url, stop, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(stop)
	return s, url
}

func chatBody(stream bool) string {
	return fmt.Sprintf(`{"model":"gpt-test","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, stream)
}

// post sends body to the server's chat-completions route.
func post(ctx context.Context, client *http.Client, baseURL, body string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	if client == nil {
		client = http.DefaultClient
	}
	return client.Do(req)
}

// exchange is one request and everything the client saw of its answer.
type exchange struct {
	resp    *http.Response
	err     error // from sending the request
	body    []byte
	readErr error // from reading the body
	events  []string
	elapsed time.Duration
}

func do(t *testing.T, client *http.Client, baseURL, body string, header http.Header) exchange {
	t.Helper()
	began := time.Now()
	resp, err := post(context.Background(), client, baseURL, body, header)
	x := exchange{resp: resp, err: err}
	if err == nil {
		x.body, x.readErr = io.ReadAll(resp.Body)
		resp.Body.Close()
		x.events, _ = readEvents(bytes.NewReader(x.body))
	}
	x.elapsed = time.Since(began)
	return x
}

// readEvents returns the data payloads of an SSE stream in order. It fails on a line that is
// not SSE; an unterminated last event is dropped, as an SSE client would.
func readEvents(r io.Reader) ([]string, error) {
	br := bufio.NewReader(r)
	var out, data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && data == nil {
				return out, nil
			}
			if errors.Is(err, io.EOF) {
				return out, io.ErrUnexpectedEOF
			}
			return out, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if data != nil {
				out = append(out, strings.Join(data, "\n"))
				data = nil
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		case strings.HasPrefix(line, ":"):
		default:
			return out, fmt.Errorf("not an SSE line: %q", line)
		}
	}
}

// testChunk is a streamed chunk as a strict client reads it; pointers tell absent from empty.
type testChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// decoded is a stream put back together.
type decoded struct {
	content, args    string
	contentPieces    []string
	argPieces        []string
	toolID, toolName string
	toolOpens        int
	roles            []int // indexes of the events that carry the role
	finish           string
	ids              map[string]bool
	models           map[string]bool
	usage            bool
	done             bool // [DONE] came last
	bad              []string
}

// decode reassembles events; payloads that are not chunks are collected in bad.
func decode(events []string) decoded {
	d := decoded{ids: map[string]bool{}, models: map[string]bool{}}
	for i, ev := range events {
		if ev == "[DONE]" {
			d.done = i == len(events)-1
			continue
		}
		var c testChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil || c.Object != "chat.completion.chunk" {
			d.bad = append(d.bad, ev)
			continue
		}
		d.ids[c.ID] = true
		d.models[c.Model] = true
		if c.Usage != nil {
			d.usage = true
		}
		for _, ch := range c.Choices {
			if ch.Delta.Role != "" {
				d.roles = append(d.roles, i)
			}
			if ch.Delta.Content != nil {
				d.content += *ch.Delta.Content
				d.contentPieces = append(d.contentPieces, *ch.Delta.Content)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" || tc.Function.Name != "" {
					d.toolOpens++
					d.toolID, d.toolName = tc.ID, tc.Function.Name
					if tc.Function.Arguments == "" {
						continue
					}
				}
				d.args += tc.Function.Arguments
				d.argPieces = append(d.argPieces, tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				d.finish = *ch.FinishReason
			}
		}
	}
	return d
}

// chunkLog records OnChunk calls.
type chunkLog struct {
	mu    sync.Mutex
	seqs  []int
	texts []string
	times []time.Time
}

func (l *chunkLog) record(seq int, text string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seqs = append(l.seqs, seq)
	l.texts = append(l.texts, text)
	l.times = append(l.times, at)
}

func (l *chunkLog) snapshot() ([]int, []string, []time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.seqs...), append([]string(nil), l.texts...), append([]time.Time(nil), l.times...)
}

// waitFor polls cond for at most five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
