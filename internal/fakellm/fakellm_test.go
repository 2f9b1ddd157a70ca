package fakellm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const multibyte = "Ünïcödé — ¿qué tal? 日本語のテキスト 🎉🎉 fin"

func TestStreamShape(t *testing.T) {
	args := `{"card_type":"scenario","content":"You're two weeks into a new VP role — día 1.","drill_phase":"Problem-Solving"}`
	tests := []struct {
		name        string
		opts        Options
		body        string
		reply       Reply
		wantContent string
		wantArgs    string
		wantPieces  []string // content or argument pieces, when fixed
		wantFinish  string
		wantUsage   bool
	}{
		{name: "ascii content", reply: Reply{Content: "Hello there, this is a sentence long enough to split."},
			wantContent: "Hello there, this is a sentence long enough to split.", wantFinish: "stop"},
		{name: "multibyte content in tiny chunks", opts: Options{ChunkMin: 1, ChunkMax: 2}, reply: Reply{Content: multibyte},
			wantContent: multibyte, wantFinish: "stop"},
		{name: "tool call", reply: Reply{ToolCall: &ToolCall{Name: "display_card", Arguments: args}},
			wantArgs: args, wantFinish: "tool_calls"},
		{name: "explicit content chunks", reply: Reply{Content: "ignored", Chunks: []string{"a", "bc", "déf"}},
			wantContent: "abcdéf", wantPieces: []string{"a", "bc", "déf"}, wantFinish: "stop"},
		{name: "explicit argument chunks", reply: Reply{ToolCall: &ToolCall{ID: "call_fixed", Name: "f"}, Chunks: []string{`{"a"`, `:1}`}},
			wantArgs: `{"a":1}`, wantPieces: []string{`{"a"`, `:1}`}, wantFinish: "tool_calls"},
		{name: "empty content", reply: Reply{}, wantContent: "", wantPieces: []string{""}, wantFinish: "stop"},
		{name: "content then tool call", reply: Reply{Content: "Let me show you.", ToolCall: &ToolCall{Name: "display_card", Arguments: args}},
			wantContent: "Let me show you.", wantArgs: args, wantFinish: "tool_calls"},
		{name: "usage chunk when asked",
			body:  `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			reply: Reply{Content: "counted"}, wantContent: "counted", wantFinish: "stop", wantUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := start(t, tt.opts)
			s.Enqueue(tt.reply)
			body := tt.body
			if body == "" {
				body = chatBody(true)
			}
			x := do(t, nil, url, body, nil)
			if x.err != nil || x.readErr != nil {
				t.Fatalf("request: %v, body: %v", x.err, x.readErr)
			}
			if got := x.resp.Header.Get("Content-Type"); got != "text/event-stream" {
				t.Errorf("Content-Type = %q, want text/event-stream", got)
			}
			if _, err := readEvents(bytes.NewReader(x.body)); err != nil {
				t.Fatalf("not a clean SSE stream: %v", err)
			}
			d := decode(x.events)
			if len(d.bad) > 0 {
				t.Errorf("events that are not chunks: %q", d.bad)
			}
			if d.content != tt.wantContent {
				t.Errorf("content = %q, want %q", d.content, tt.wantContent)
			}
			if d.args != tt.wantArgs {
				t.Errorf("arguments = %q, want %q", d.args, tt.wantArgs)
			}
			pieces := d.contentPieces
			if tt.reply.ToolCall != nil {
				pieces = d.argPieces
			}
			if tt.wantPieces != nil && !slices.Equal(pieces, tt.wantPieces) {
				t.Errorf("pieces = %q, want %q", pieces, tt.wantPieces)
			}
			for _, p := range pieces {
				if !utf8.ValidString(p) {
					t.Errorf("piece %q splits a character", p)
				}
			}
			if d.finish != tt.wantFinish {
				t.Errorf("finish_reason = %q, want %q", d.finish, tt.wantFinish)
			}
			if !d.done {
				t.Errorf("[DONE] is not the last event: %q", x.events)
			}
			if !slices.Equal(d.roles, []int{0}) {
				t.Errorf("role carried by events %v, want [0]", d.roles)
			}
			if d.usage != tt.wantUsage {
				t.Errorf("usage chunk = %v, want %v", d.usage, tt.wantUsage)
			}
			if len(d.ids) != 1 || len(d.models) != 1 || !d.models["gpt-test"] {
				t.Errorf("ids %v and models %v, want one id and model gpt-test", d.ids, d.models)
			}
			for id := range d.ids {
				if !strings.HasPrefix(id, "chatcmpl-") {
					t.Errorf("id = %q, want chatcmpl-…", id)
				}
			}
			if tc := tt.reply.ToolCall; tc != nil {
				wantID := tc.ID
				if wantID == "" {
					wantID = d.toolID
				}
				if d.toolOpens != 1 || d.toolName != tc.Name || d.toolID != wantID || !strings.HasPrefix(d.toolID, "call_") {
					t.Errorf("tool call opened %d times as %q %q, want once as %q call_…", d.toolOpens, d.toolID, d.toolName, tc.Name)
				}
			}
		})
	}
}

func TestStreamEventBytes(t *testing.T) {
	s, url := start(t, Options{ChunkMin: 100, ChunkMax: 100})
	s.Enqueue(Reply{Content: "a<b>&c"}, Reply{ToolCall: &ToolCall{ID: "call_1", Name: "display_card", Arguments: `{"x":1}`}})
	content := do(t, nil, url, chatBody(true), nil)
	tool := do(t, nil, url, chatBody(true), nil)
	id := func(x exchange) string {
		var c testChunk
		_ = json.Unmarshal([]byte(x.events[0]), &c)
		return c.ID
	}
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"content", content.body, `data: {"id":"` + id(content) + `","object":"chat.completion.chunk","created":1754400000,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"a<b>&c"},"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"` + id(content) + `","object":"chat.completion.chunk","created":1754400000,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
			"data: [DONE]\n\n"},
		{"tool call", tool.body, `data: {"id":"` + id(tool) + `","object":"chat.completion.chunk","created":1754400000,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"display_card","arguments":""}}]},"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"` + id(tool) + `","object":"chat.completion.chunk","created":1754400000,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":1}"}}]},"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"` + id(tool) + `","object":"chat.completion.chunk","created":1754400000,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
			"data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Errorf("body:\n%s\nwant:\n%s", tt.got, tt.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	ascii := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	tests := []struct {
		name   string
		text   string
		lo, hi int
	}{
		{"ascii 3..8", ascii, 3, 8},
		{"ascii 1..1", ascii, 1, 1},
		{"ascii 5..5", ascii, 5, 5},
		{"multibyte 3..8", multibyte, 3, 8},
		{"multibyte 1..2", multibyte, 1, 2},
		{"multibyte 4..4", multibyte, 4, 4},
		{"emoji only 2..3", "🎉🎈🎊", 2, 3},
		{"empty", "", 3, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(50) {
				pieces := split(tt.text, tt.lo, tt.hi, rand.New(rand.NewPCG(seed, 1)))
				if got := strings.Join(pieces, ""); got != tt.text {
					t.Fatalf("seed %d: pieces join to %q, want %q", seed, got, tt.text)
				}
				for i, p := range pieces {
					last := i == len(pieces)-1
					switch {
					case !utf8.ValidString(p):
						t.Fatalf("seed %d: piece %q splits a character", seed, p)
					case p == "":
						t.Fatalf("seed %d: empty piece", seed)
					case !last && len(p) < tt.lo:
						t.Fatalf("seed %d: piece %q shorter than %d", seed, p, tt.lo)
					case len(p) > tt.hi && utf8.RuneStart(p[tt.hi]):
						// Only keeping a character whole may stretch a piece past hi.
						t.Fatalf("seed %d: piece %q longer than %d", seed, p, tt.hi)
					case len(p) > tt.hi+utf8.UTFMax-1:
						t.Fatalf("seed %d: piece %q far longer than %d", seed, p, tt.hi)
					}
				}
			}
		})
	}
}

func TestDeterministicBytes(t *testing.T) {
	text := strings.Repeat("determinism ", 20)
	get := func(seed uint64) []byte {
		s, url := start(t, Options{Seed: seed})
		s.Enqueue(Reply{Content: text})
		return do(t, nil, url, chatBody(true), nil).body
	}
	tests := []struct {
		name   string
		a, b   uint64
		either bool
	}{
		{"same seed, same bytes", 7, 7, true},
		{"other seed, other chunks", 7, 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bytes.Equal(get(tt.a), get(tt.b)); got != tt.either {
				t.Errorf("seeds %d and %d give equal bytes: %v, want %v", tt.a, tt.b, got, tt.either)
			}
		})
	}
}

func TestOnChunkAndDelays(t *testing.T) {
	var log chunkLog
	const delay = 15 * time.Millisecond
	s, url := start(t, Options{ChunkMin: 4, ChunkMax: 4, DelayMin: delay, DelayMax: delay, OnChunk: log.record})
	s.Enqueue(Reply{Content: "abcdefghijkl"})
	x := do(t, nil, url, chatBody(true), nil)
	if x.err != nil || x.readErr != nil {
		t.Fatalf("request: %v, body: %v", x.err, x.readErr)
	}
	seqs, texts, times := log.snapshot()
	if want := []int{0, 1, 2}; !slices.Equal(seqs, want) {
		t.Errorf("OnChunk seqs = %v, want %v", seqs, want)
	}
	if want := []string{"abcd", "efgh", "ijkl"}; !slices.Equal(texts, want) {
		t.Errorf("OnChunk texts = %q, want %q", texts, want)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < delay {
			t.Errorf("gap before chunk %d = %v, want at least %v", i, gap, delay)
		}
	}
}

func TestNonStream(t *testing.T) {
	tests := []struct {
		name        string
		reply       Reply
		wantContent *string
		wantCall    string
		wantFinish  string
	}{
		{name: "content", reply: Reply{Content: `{"a":"<b>"}`}, wantContent: ptr(`{"a":"<b>"}`), wantFinish: "stop"},
		{name: "chunks joined", reply: Reply{Chunks: []string{"x", "y"}}, wantContent: ptr("xy"), wantFinish: "stop"},
		{name: "tool call", reply: Reply{ToolCall: &ToolCall{ID: "call_9", Name: "display_card", Arguments: `{"card_type":"insight"}`}},
			wantCall: `call_9 display_card {"card_type":"insight"}`, wantFinish: "tool_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := start(t, Options{})
			s.Enqueue(tt.reply)
			x := do(t, nil, url, chatBody(false), nil)
			if x.err != nil || x.readErr != nil {
				t.Fatalf("request: %v, body: %v", x.err, x.readErr)
			}
			if got := x.resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
			var c struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Choices []struct {
					Message struct {
						Role      string  `json:"role"`
						Content   *string `json:"content"`
						ToolCalls []struct {
							ID       string `json:"id"`
							Type     string `json:"type"`
							Function struct {
								Name      string `json:"name"`
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					TotalTokens int `json:"total_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(x.body, &c); err != nil {
				t.Fatalf("body %s: %v", x.body, err)
			}
			if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || len(c.Choices) != 1 || c.Usage.TotalTokens == 0 {
				t.Fatalf("body = %s, want one chat.completion choice with usage", x.body)
			}
			m := c.Choices[0].Message
			if !reflect.DeepEqual(m.Content, tt.wantContent) {
				t.Errorf("content = %v, want %v", deref(m.Content), deref(tt.wantContent))
			}
			gotCall := ""
			if len(m.ToolCalls) == 1 && m.ToolCalls[0].Type == "function" {
				tc := m.ToolCalls[0]
				gotCall = tc.ID + " " + tc.Function.Name + " " + tc.Function.Arguments
			}
			if gotCall != tt.wantCall {
				t.Errorf("tool call = %q, want %q", gotCall, tt.wantCall)
			}
			if got := c.Choices[0].FinishReason; got != tt.wantFinish {
				t.Errorf("finish_reason = %q, want %q", got, tt.wantFinish)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// completionText returns the content of a non-streamed answer, or its error message.
func completionText(t *testing.T, x exchange) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(x.body, &c); err != nil {
		t.Fatalf("body %q: %v", x.body, err)
	}
	switch {
	case c.Error != nil:
		return "error: " + c.Error.Message
	case len(c.Choices) == 1 && len(c.Choices[0].Message.ToolCalls) == 1:
		return "call: " + c.Choices[0].Message.ToolCalls[0].Function.Name
	case len(c.Choices) == 1:
		return c.Choices[0].Message.Content
	}
	t.Fatalf("body %s has no answer", x.body)
	return ""
}

func TestEnqueueThenResponder(t *testing.T) {
	tests := []struct {
		name      string
		responder Responder
		queued    []Reply
		want      []string
	}{
		{name: "queue first, oldest first, then the responder",
			responder: ResponderFunc(func(req *Request) Reply { return Reply{Content: "responder saw " + req.Messages[0].Content} }),
			queued:    []Reply{{Content: "first"}, {Content: "second"}},
			want:      []string{"first", "second", "responder saw hi", "responder saw hi"}},
		{name: "no responder: no script",
			queued: []Reply{{Content: "only"}},
			want:   []string{"only", "error: fakellm: no script"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := start(t, Options{Responder: tt.responder})
			s.Enqueue(tt.queued...)
			var got []string
			for range tt.want {
				got = append(got, completionText(t, do(t, nil, url, chatBody(false), nil)))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("answers = %q, want %q", got, tt.want)
			}
			if len(s.Requests()) != len(tt.want) {
				t.Errorf("Requests() = %d, want %d", len(s.Requests()), len(tt.want))
			}
			waitFor(t, "every request to count as served", func() bool { return s.Served() == len(tt.want) })
		})
	}
}

func TestControlEndpoints(t *testing.T) {
	s, url := start(t, Options{})
	root := strings.TrimSuffix(url, "/v1")
	control := func(method, path, body string) (int, stats) {
		t.Helper()
		req, _ := http.NewRequest(method, root+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var st stats
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st
	}

	code, st := control(http.MethodPost, "/_fakellm/enqueue", `[
		{"content":"one"},
		{"tool_call":{"name":"display_card","arguments":"{}"}},
		{"content":"limited","fault":{"status":429,"retry_after":"1"}},
		{"content":"cut","fault":{"cut_after":0}}
	]`)
	if code != http.StatusOK || st.Queued != 4 {
		t.Fatalf("enqueue: status %d, stats %+v, want 200 with 4 queued", code, st)
	}
	code, st = control(http.MethodPost, "/_fakellm/enqueue", `{"content":"single"}`)
	if code != http.StatusOK || st.Queued != 5 {
		t.Fatalf("enqueue one: status %d, stats %+v, want 200 with 5 queued", code, st)
	}

	steps := []struct {
		name string
		want string
	}{
		{"first reply", "one"},
		{"tool call reply", "call: display_card"},
		{"fault reply", "429 1"},
		{"cut reply", "cut"},
		{"single reply", "single"},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			x := do(t, nil, url, chatBody(false), nil)
			var got string
			switch {
			case x.err != nil:
				t.Fatalf("request: %v", x.err)
			case x.readErr != nil:
				got = "cut"
			case x.resp.StatusCode != http.StatusOK:
				got = x.resp.Status[:3] + " " + x.resp.Header.Get("Retry-After")
			default:
				got = completionText(t, x)
			}
			if got != step.want {
				t.Errorf("answer = %q, want %q", got, step.want)
			}
		})
	}

	// A handler finishes just after its last byte reached the client.
	waitFor(t, "stats of 5 requests, 4 served, none open or queued", func() bool {
		_, st = control(http.MethodGet, "/_fakellm/stats", "")
		return st == stats{Requests: 5, Served: 4}
	})
	if _, st = control(http.MethodPost, "/_fakellm/reset", ""); st != (stats{}) {
		t.Errorf("stats after reset = %+v, want zero", st)
	}
	if len(s.Requests()) != 0 {
		t.Errorf("Requests() after reset has %d entries, want 0", len(s.Requests()))
	}

	bad := []struct{ name, body string }{
		{"not JSON", `nope`},
		{"wrong shape", `[{"content":1}]`},
		{"bad duration", `[{"fault":{"stall":"forever"}}]`},
		{"bad status", `[{"fault":{"status":200}}]`},
	}
	for _, tt := range bad {
		t.Run("rejects "+tt.name, func(t *testing.T) {
			if code, _ := control(http.MethodPost, "/_fakellm/enqueue", tt.body); code != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", code)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	_, url := start(t, Options{Model: "replay-1"})
	root := strings.TrimSuffix(url, "/v1")
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantBody                 string
	}{
		{"models", http.MethodGet, "/v1/models", "", 200, `{"object":"list","data":[{"id":"replay-1","object":"model","created":0,"owned_by":"fakellm"}]}`},
		{"models without /v1", http.MethodGet, "/models", "", 200, `"id":"replay-1"`},
		{"unknown route", http.MethodGet, "/v1/embeddings", "", 404, `"type":"invalid_request_error"`},
		{"wrong method", http.MethodGet, "/v1/chat/completions", "", 405, `"type":"invalid_request_error"`},
		{"bad body", http.MethodPost, "/v1/chat/completions", "{", 400, `"message":"fakellm: the request body is not a chat-completions request`},
		{"bad fault header", http.MethodPost, "/v1/chat/completions", chatBody(true), 400, `X-Fakellm-Fault: \"explode\": unknown fault`},
		{"missing fixture", http.MethodPost, "/v1/chat/completions", chatBody(true), 500, `no fixtures configured to replay nope.sse`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, root+tt.path, strings.NewReader(tt.body))
			switch tt.name {
			case "bad fault header":
				req.Header.Set(FaultHeader, "explode")
			case "missing fixture":
				req.Header.Set(FixtureHeader, "nope")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("got %d %s, want %d containing %s", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func TestCancelMidStreamClosesIt(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		opts  Options
	}{
		{"during a stall", Fault{StallAfter: 1, Stall: time.Hour}, Options{}},
		{"between slow events", Fault{}, Options{ChunkMin: 1, ChunkMax: 1, DelayMin: time.Hour, DelayMax: time.Hour}},
		{"while dripping", Fault{Drip: time.Hour}, Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Now = fixedNow
			s, url := start(t, tt.opts)
			s.Enqueue(Reply{Content: "a reply that will never finish", Fault: tt.fault})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := post(ctx, nil, url, chatBody(true), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if tt.fault.Drip == 0 {
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					t.Fatalf("reading the first event: %v", err)
				}
			}
			if got := s.Open(); got != 1 {
				t.Errorf("Open() mid-stream = %d, want 1", got)
			}
			cancel()
			waitFor(t, "Open() to drop to 0", func() bool { return s.Open() == 0 })
			if got := s.Served(); got != 0 {
				t.Errorf("Served() = %d, want 0 for an abandoned stream", got)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Request
		wantErr bool
	}{
		{
			name: "full request",
			body: `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},
				"messages":[
					{"role":"system","content":"sys\n## Session facts\ncontract: cards"},
					{"role":"user","content":[{"type":"text","text":"Begin "},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"training."}]},
					{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"display_card","arguments":"{\"card_type\":\"scenario\"}"}}]},
					{"role":"tool","tool_call_id":"call_1","content":"shown"}
				],
				"tools":[{"type":"function","function":{"name":"display_card","description":"Display a card.","parameters":{"type":"object"}}}],
				"tool_choice":{"type":"function","function":{"name":"display_card"}},
				"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`,
			want: Request{
				Model: "gpt-4o-mini", Stream: true, IncludeUsage: true,
				Messages: []Message{
					{Role: "system", Content: "sys\n## Session facts\ncontract: cards"},
					{Role: "user", Content: "Begin training."},
					{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "display_card", Arguments: `{"card_type":"scenario"}`}}},
					{Role: "tool", Content: "shown", ToolCallID: "call_1"},
				},
				Tools:          []Tool{{Name: "display_card", Description: "Display a card.", Parameters: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice:     "display_card",
				ResponseFormat: "json_schema",
			},
		},
		{
			name: "auto tool choice and text format",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"auto","response_format":{"type":"text"}}`,
			want: Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}},
		},
		{name: "json_object format", body: `{"messages":[],"response_format":{"type":"json_object"}}`, want: Request{ResponseFormat: "json_object"}},
		{name: "not JSON", body: `{"messages":`, wantErr: true},
		{name: "bad content", body: `{"messages":[{"role":"user","content":42}]}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRequest([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if string(got.Raw) != tt.body {
				t.Errorf("Raw = %q, want the body", got.Raw)
			}
			if tt.wantErr {
				return
			}
			got.Raw = nil
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("request = %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestRequestsKeepHeaders(t *testing.T) {
	s, url := start(t, Options{})
	s.Enqueue(Reply{Content: "ok"})
	do(t, nil, url, chatBody(true), http.Header{"Authorization": {"Bearer sk-test"}})
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("Requests() has %d entries, want 1", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want Bearer sk-test", got)
	}
	if got := string(reqs[0].Raw); got != chatBody(true) {
		t.Errorf("Raw = %q, want %q", got, chatBody(true))
	}
}

func TestRequestLogLimit(t *testing.T) {
	tests := []struct {
		name     string
		keep     int
		sent     int
		wantLast []string
	}{
		{"default keeps everything a test sends", 0, 5, []string{"m0", "m1", "m2", "m3", "m4"}},
		{"keeps the latest", 2, 7, []string{"m5", "m6"}},
		{"keeps none", -1, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := start(t, Options{RequestLog: tt.keep, Responder: ResponderFunc(func(*Request) Reply { return Reply{} })})
			for i := range tt.sent {
				do(t, nil, url, `{"messages":[{"role":"user","content":"m`+strconv.Itoa(i)+`"}]}`, nil)
			}
			var got []string
			for _, r := range s.Requests() {
				got = append(got, r.Messages[0].Content)
			}
			if !slices.Equal(got, tt.wantLast) {
				t.Errorf("Requests() = %q, want %q", got, tt.wantLast)
			}
		})
	}
}
