package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/outbound"
)

// fixedNow is the clock of tests that send Retry-After as a date.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name           string
		status         int
		header         map[string]string
		body           string
		wantClass      string
		wantRetryable  bool
		wantRetryAfter time.Duration
		// wantContext says the refusal is for the context window (ModelError.ContextFull).
		wantContext bool
	}{
		{
			name: "429 with Retry-After seconds", status: 429, header: map[string]string{"Retry-After": "7"},
			body:      `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			wantClass: ClassRateLimited, wantRetryable: true, wantRetryAfter: 7 * time.Second,
		},
		{
			name: "429 with Retry-After as an HTTP date", status: 429,
			header:    map[string]string{"Retry-After": fixedNow.Add(30 * time.Second).Format(http.TimeFormat)},
			body:      `{"error":{"message":"slow down","type":"requests"}}`,
			wantClass: ClassRateLimited, wantRetryable: true, wantRetryAfter: 30 * time.Second,
		},
		{
			name: "429 with retry-after-ms preferred", status: 429,
			header:    map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"},
			body:      `{"error":{"message":"slow down","type":"requests"}}`,
			wantClass: ClassRateLimited, wantRetryable: true, wantRetryAfter: 1500 * time.Millisecond,
		},
		{
			name: "429 without advice", status: 429, body: `{"error":{"message":"slow down"}}`,
			wantClass: ClassRateLimited, wantRetryable: true,
		},
		{
			name: "500", status: 500, body: `{"error":{"message":"internal","type":"server_error"}}`,
			wantClass: ClassServer, wantRetryable: true,
		},
		{
			name: "503 with Retry-After", status: 503, header: map[string]string{"Retry-After": "2"},
			body:      `{"error":{"message":"overloaded","type":"server_error"}}`,
			wantClass: ClassServer, wantRetryable: true, wantRetryAfter: 2 * time.Second,
		},
		{
			name: "503 whose error is a string, not OpenAI's object", status: 503, body: `{"error":"model is loading"}`,
			wantClass: ClassServer, wantRetryable: true,
		},
		{
			name: "502 with an HTML body", status: 502, body: `<html><body>Bad gateway</body></html>`,
			wantClass: ClassServer, wantRetryable: true,
		},
		{
			name: "400", status: 400, body: `{"error":{"message":"Invalid schema for response_format","type":"invalid_request_error","param":"response_format"}}`,
			wantClass: ClassInvalid,
		},
		{
			name: "422", status: 422, body: `{"detail":"messages: field required"}`,
			wantClass: ClassInvalid,
		},
		{
			name: "400 input token count (Gemini)", status: 400,
			body:      `{"error":{"code":400,"message":"The input token count (1054016) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
			wantClass: ClassRefused, wantContext: true,
		},
		{
			name: "400 input token count in a list (Gemini)", status: 400,
			body:      `[{"error":{"code":400,"message":"The input token count (1054016) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`,
			wantClass: ClassRefused, wantContext: true,
		},
		{
			name: "404 without a body", status: 404, wantClass: ClassClient,
		},
		{
			name: "400 context length exceeded (OpenAI)", status: 400,
			body:      `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			wantClass: ClassRefused, wantContext: true,
		},
		{
			name: "400 content filter (Azure)", status: 400,
			body:      `{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400}}`,
			wantClass: ClassRefused,
		},
		{
			name: "400 prompt too long (Anthropic)", status: 400,
			body:      `{"error":{"message":"prompt is too long: 210000 tokens > 200000 maximum","type":"invalid_request_error"}}`,
			wantClass: ClassRefused, wantContext: true,
		},
		{
			name: "400 context size (llama.cpp)", status: 400,
			body:      `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`,
			wantClass: ClassRefused, wantContext: true,
		},
		{
			// llama-server b10573's answer (tools/server/server-context.cpp, send_error with
			// ERROR_TYPE_EXCEED_CONTEXT_SIZE), with the prompt's and the window's sizes.
			name: "400 request exceeds the available context size (llama-server)", status: 400,
			body:      `{"error":{"code":400,"message":"request (8314 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8314,"n_ctx":8192}}`,
			wantClass: ClassRefused, wantContext: true,
		},
		{
			name: "408", status: 408, body: `{"error":{"message":"timeout"}}`,
			wantClass: ClassTimeout, wantRetryable: true,
		},
		{
			name: "409", status: 409, body: `{"error":{"message":"conflict"}}`,
			wantClass: ClassServer, wantRetryable: true,
		},
		{
			name: "401 echoing the key", status: 401,
			body:      `{"error":{"message":"Incorrect API key provided: Bearer ` + testKey + `","type":"invalid_request_error"}}`,
			wantClass: ClassClient,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			c := u.client(Config{})
			c.now = func() time.Time { return fixedNow }
			s, err := c.Stream(context.Background(), hello, coach.StreamHooks{})
			if err == nil {
				s.Close()
				t.Fatal("Stream succeeded, want an error")
			}
			me := modelError(t, err)
			if me.Class != tt.wantClass || me.Retryable != tt.wantRetryable || me.RetryAfter != tt.wantRetryAfter {
				t.Errorf("got class %q retryable %v retry after %v, want %q %v %v (%v)",
					me.Class, me.Retryable, me.RetryAfter, tt.wantClass, tt.wantRetryable, tt.wantRetryAfter, err)
			}
			if me.ContextFull != tt.wantContext {
				t.Errorf("context full = %v, want %v (%v)", me.ContextFull, tt.wantContext, err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the error shows the API key: %v", err)
			}
		})
	}
}

func TestConnectErrors(t *testing.T) {
	// A listener closed right away leaves a loopback port that refuses connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name, baseURL string
		wantClass     string
	}{
		{"connection refused on port 1", "http://127.0.0.1:1/v1", ClassConnect},
		{"connection refused on a closed port", "http://" + closedPort + "/v1", ClassConnect},
		{"unparsable base URL", "http://127.0.0.1:bad/v1", ClassClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{BaseURL: tt.baseURL, APIKey: testKey}).Stream(context.Background(), hello, coach.StreamHooks{})
			me := modelError(t, err)
			if me.Class != tt.wantClass || me.Retryable != (tt.wantClass == ClassConnect) {
				t.Errorf("got class %q retryable %v (%v), want %q", me.Class, me.Retryable, err, tt.wantClass)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the error shows the API key: %v", err)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	live := context.Background()
	tests := []struct {
		name      string
		ctx       context.Context
		err       error
		streaming bool
		wantClass string
		retryable bool
	}{
		{"deadline passed", expired, context.DeadlineExceeded, false, ClassTimeout, true},
		{"canceled", canceled, errors.New("read: connection reset"), true, ClassCanceled, false},
		{"network timeout", live, &net.OpError{Op: "read", Err: timeoutErr{}}, true, ClassTimeout, true},
		{"dial refused", live, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false, ClassConnect, true},
		{"dns", live, &net.DNSError{Err: "no such host", Name: "x.invalid"}, false, ClassConnect, true},
		{"broken stream", live, io.ErrUnexpectedEOF, true, ClassStream, true},
		{"request not built", live, errors.New("json: unsupported value"), false, ClassClient, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			me := classify(tt.ctx, tt.err, tt.streaming)
			if me.Class != tt.wantClass || me.Retryable != tt.retryable {
				t.Errorf("classify = %q retryable %v, want %q %v", me.Class, me.Retryable, tt.wantClass, tt.retryable)
			}
			if !errors.Is(me, tt.err) {
				t.Errorf("classify(%v) loses the cause: %v", tt.err, me)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"fractional seconds, which endpoints send", http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond},
		{"date", http.Header{"Retry-After": {fixedNow.Add(time.Minute).Format(http.TimeFormat)}}, time.Minute},
		{"date in the past", http.Header{"Retry-After": {fixedNow.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"milliseconds", http.Header{"Retry-After-Ms": {"120"}}, 120 * time.Millisecond},
		{"fractional milliseconds before seconds", http.Header{"Retry-After-Ms": {"0.5"}, "Retry-After": {"3"}}, 500 * time.Microsecond},
		{"unreadable milliseconds fall back to seconds", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"3"}}, 3 * time.Second},
		{"huge milliseconds", http.Header{"Retry-After-Ms": {"1e30"}}, outbound.MaxRetryAfter},
		{"negative", http.Header{"Retry-After": {"-5"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"huge", http.Header{"Retry-After": {"99999999999"}}, outbound.MaxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, fixedNow); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestKeyNeverShown prints a Config and a Client every way a log line might.
func TestKeyNeverShown(t *testing.T) {
	cfg := Config{BaseURL: "https://user:secret@example.invalid/v1", APIKey: testKey, Model: "m"}
	c := New(cfg)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg, "client", c)
	js, _ := json.Marshal(cfg)
	outputs := map[string]string{
		"Config %v": fmt.Sprintf("%v", cfg), "Config %+v": fmt.Sprintf("%+v", cfg), "Config %#v": fmt.Sprintf("%#v", cfg),
		"Config %s": fmt.Sprint(cfg), "*Config %+v": fmt.Sprintf("%+v", &cfg), "Config JSON": string(js),
		"Client %v": fmt.Sprintf("%v", c), "Client %+v": fmt.Sprintf("%+v", c), "Client %#v": fmt.Sprintf("%#v", c),
		"slog": logged.String(),
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(out, testKey) || strings.Contains(out, "secret") {
				t.Errorf("%s shows a secret: %s", name, out)
			}
		})
	}
	t.Run("masked key is marked", func(t *testing.T) {
		if !strings.Contains(cfg.String(), "APIKey:****") {
			t.Errorf("String = %s, want the key shown as ****", cfg)
		}
	})
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"json_schema", FormatJSONSchema, false},
		{"json_object", FormatJSONObject, false},
		{"prompt", FormatPrompt, false},
		{" JSON_Object ", FormatJSONObject, false},
		{"", FormatJSONSchema, false},
		{"xml", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseFormat(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err == nil && got.String() != strings.ToLower(strings.TrimSpace(tt.in)) && tt.in != "" {
				t.Errorf("String() = %q, want it to round-trip %q", got.String(), tt.in)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"zero config", Config{}, false},
		{"loopback endpoint", Config{BaseURL: "http://127.0.0.1:9000/v1", Format: FormatPrompt}, false},
		{"relative URL", Config{BaseURL: "/v1"}, true},
		{"other scheme", Config{BaseURL: "ftp://example.invalid/v1"}, true},
		{"unknown format", Config{Format: Format(9)}, true},
		{"negative timeout", Config{ConnectTimeout: -time.Second}, true},
		{"profile names ignore case", Config{Profile: "LMStudio"}, false},
		{"a profile and overrides", Config{Profile: "ollama", ToolChoice: "Required", ResponseFormat: "json_object"}, false},
		{"unknown profile", Config{Profile: "bedrock"}, true},
		{"unknown tool choice", Config{Profile: "openai", ToolChoice: "auto"}, true},
		{"unknown response format", Config{ResponseFormat: "grammar"}, true},
	}
	for _, p := range Profiles() {
		tests = append(tests, struct {
			name    string
			cfg     Config
			wantErr bool
		}{"profile " + p.Name, Config{Profile: p.Name}, false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// TestErrorBodyScrubbedAndBounded has an endpoint echo its request's credentials, in every form
// it might, and the whole prompt in a 400 body: the error the Client returns, which goes into
// warn lines, holds none of the credentials and none of the body's words, only its status and
// identifiers.
func TestErrorBodyScrubbedAndBounded(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, echo string
	}{
		{"key", testKey},
		{"bearer in base64", b64("Bearer " + testKey)},
		{"key in base64", b64(testKey)},
		{"key in unpadded base64url", base64.RawURLEncoding.EncodeToString([]byte(testKey))},
		{"basic auth of the base URL", b64("bob:basicpw")},
		{"userinfo of the base URL", "bob:basicpw"},
		{"query token of the base URL", "qtok-77"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":{"message":"rejected: `+tt.echo+`","type":"invalid_request_error"}}`)
			})
			base := strings.Replace(u.URL, "http://", "http://bob:basicpw@", 1) + "/v1?api_key=qtok-77"
			_, err := New(Config{BaseURL: base, APIKey: testKey}).Stream(context.Background(), hello, coach.StreamHooks{})
			if err == nil {
				t.Fatal("Stream succeeded, want an error")
			}
			if strings.Contains(err.Error(), tt.echo) {
				t.Errorf("the error shows %s: %v", tt.name, err)
			}
			if !strings.Contains(err.Error(), "401 Unauthorized (type invalid_request_error)") || strings.Contains(err.Error(), "rejected") {
				t.Errorf("error = %v, want the status and type without the message", err)
			}
		})
	}
	t.Run("200 KB body echoing the prompt", func(t *testing.T) {
		prompt := strings.Repeat("learner text ", 200<<10/13)
		u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			js, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "bad request: " + prompt, "type": "invalid_request_error"}})
			_, _ = w.Write(js)
		})
		_, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{})
		if err == nil {
			t.Fatal("Stream succeeded, want an error")
		}
		me := modelError(t, err)
		if got := len(me.Err.Error()); got > maxErrorExcerpt+32 {
			t.Errorf("error message holds %d bytes, want at most about %d", got, maxErrorExcerpt)
		}
		if strings.Contains(err.Error(), "learner text") {
			t.Errorf("error = %.200s…, want none of the body's words", err)
		}
		if me.Class != ClassInvalid {
			t.Errorf("class = %q, want %q: leaving the message out must not change the classification", me.Class, ClassInvalid)
		}
	})
}
