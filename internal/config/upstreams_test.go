package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestLoadUpstreams(t *testing.T) {
	yes := true
	want := []Upstream{
		{Name: "primary", BaseURL: "https://api.example.com/v1", APIKeyEnv: "PRIMARY_KEY", APIKey: "sk-primary",
			Model: "gpt-4o-mini", Profile: "openai", IncludeUsage: &yes},
		{Name: "local", BaseURL: "http://127.0.0.1:8081/v1", Model: "qwen2.5", Profile: "llamacpp",
			ToolChoice: "required", ResponseFormat: "json_object", ContextWindow: 8192},
		{Name: "spare", BaseURL: "http://127.0.0.1:8082/v1", Model: "fallback-model", Profile: "generic"},
	}
	const list = `[
	  {"name":"primary","baseURL":"https://api.example.com/v1","apiKeyEnv":"PRIMARY_KEY","model":"gpt-4o-mini","profile":"openai","includeUsage":true},
	  {"name":"local","baseURL":"http://127.0.0.1:8081/v1","model":"qwen2.5","profile":"llamacpp","toolChoice":"required","responseFormat":"json_object","contextWindow":8192},
	  {"name":"spare","baseURL":"http://127.0.0.1:8082/v1"}]`
	const yamlList = `
- name: primary
  baseURL: https://api.example.com/v1
  apiKeyEnv: PRIMARY_KEY
  model: gpt-4o-mini
  profile: openai
  includeUsage: true
- {name: local, baseURL: "http://127.0.0.1:8081/v1", model: qwen2.5, profile: llamacpp, toolChoice: required, responseFormat: json_object, contextWindow: 8192}
- name: spare
  baseURL: http://127.0.0.1:8082/v1
`
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"inline JSON", map[string]string{"COACH_UPSTREAMS": list}},
		{"JSON file", map[string]string{"COACH_UPSTREAMS_FILE": write("upstreams.json", list)}},
		{"YAML file", map[string]string{"COACH_UPSTREAMS_FILE": write("upstreams.yaml", yamlList)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["PRIMARY_KEY"] = "sk-primary"
			tt.env["COACH_MODEL"] = "fallback-model"
			c, err := Load(env(tt.env))
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if !reflect.DeepEqual(c.Upstreams, want) {
				t.Errorf("Upstreams = %+v\nwant %+v", c.Upstreams, want)
			}
		})
	}
}

func TestLoadUpstreamsErrors(t *testing.T) {
	const secret = "sk-pasted-by-mistake"
	tests := []struct {
		name string
		list string
		// want must appear in the error.
		want string
	}{
		{"not JSON", `{"name":"a"}`, "not a JSON array"},
		{"empty list", `[]`, "empty"},
		{"no name", `[{"baseURL":"http://h/v1"}]`, "entry 1: name must be"},
		{"bad name", `[{"name":"a b","baseURL":"http://h/v1"}]`, "name must be"},
		{"duplicate name", `[{"name":"a","baseURL":"http://h/v1"},{"name":"a","baseURL":"http://g/v1"}]`, `entry 2 (a): the name "a" is used twice`},
		{"no URL", `[{"name":"a"}]`, "baseURL is required"},
		{"relative URL", `[{"name":"a","baseURL":"h/v1"}]`, "absolute http or https"},
		{"ftp URL", `[{"name":"a","baseURL":"ftp://h/v1"}]`, "absolute http or https"},
		{"unknown profile", `[{"name":"a","baseURL":"http://h/v1","profile":"bedrock"}]`, `profile "bedrock"`},
		{"unknown tool choice", `[{"name":"a","baseURL":"http://h/v1","toolChoice":"auto"}]`, `toolChoice "auto"`},
		{"unknown response format", `[{"name":"a","baseURL":"http://h/v1","responseFormat":"xml"}]`, `responseFormat "xml"`},
		{"negative context window", `[{"name":"a","baseURL":"http://h/v1","contextWindow":-1}]`, "contextWindow must not be negative"},
		{"unknown field", `[{"name":"a","baseURL":"http://h/v1","modle":"x"}]`, "unknown field"},
		{"inline key", `[{"name":"a","baseURL":"http://h/v1","apiKey":"` + secret + `"}]`, `unknown field "apiKey"`},
		{"key in apiKeyEnv", `[{"name":"a","baseURL":"http://h/v1","apiKeyEnv":"` + secret + `"}]`, "must name an environment variable"},
		{"key variable unset", `[{"name":"a","baseURL":"http://h/v1","apiKeyEnv":"UNSET_KEY"}]`, "UNSET_KEY, which is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{"COACH_UPSTREAMS": tt.list}))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "COACH_UPSTREAMS") {
				t.Fatalf("Load() error = %v, want one with COACH_UPSTREAMS and %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Load() error %q repeats the key", err)
			}
		})
	}
	t.Run("both set", func(t *testing.T) {
		_, err := Load(env(map[string]string{"COACH_UPSTREAMS": `[]`, "COACH_UPSTREAMS_FILE": "x.json"}))
		if err == nil || !strings.Contains(err.Error(), "both set") {
			t.Errorf("Load() error = %v, want one saying both are set", err)
		}
	})
	t.Run("YAML value in the wrong place", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "u.yml")
		if err := os.WriteFile(p, []byte("- name: a\n  baseURL: http://h/v1\n  includeUsage: "+secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(env(map[string]string{"COACH_UPSTREAMS_FILE": p}))
		if err == nil || !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), secret) {
			t.Errorf("Load() error = %v, want one naming line 3 without the value", err)
		}
	})
}

func TestLoadBreaker(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		failures int
		rate     float64
		window   time.Duration
		cooldown time.Duration
	}{
		{name: "defaults", env: map[string]string{}, failures: 5, rate: 50, window: time.Minute, cooldown: 30 * time.Second},
		{name: "all set",
			env:      map[string]string{"COACH_BREAKER_FAILURES": "3", "COACH_BREAKER_COOLDOWN": "1m", "COACH_BREAKER_FAILURE_RATE": "75", "COACH_BREAKER_WINDOW": "2m"},
			failures: 3, rate: 75, window: 2 * time.Minute, cooldown: time.Minute},
		{name: "rate with a percent sign", env: map[string]string{"COACH_BREAKER_FAILURE_RATE": "100%"},
			failures: 5, rate: 100, window: time.Minute, cooldown: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			got := []any{c.BreakerFailures, c.BreakerFailureRate, c.BreakerWindow, c.BreakerCooldown}
			want := []any{tt.failures, tt.rate, tt.window, tt.cooldown}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("failures, rate, window, cooldown = %v, want %v", got, want)
			}
		})
	}
	for _, e := range []map[string]string{
		{"COACH_BREAKER_FAILURES": "0"}, {"COACH_BREAKER_COOLDOWN": "10ms"}, {"COACH_BREAKER_WINDOW": "100ms"},
		{"COACH_BREAKER_FAILURE_RATE": "0"}, {"COACH_BREAKER_FAILURE_RATE": "101"}, {"COACH_BREAKER_FAILURE_RATE": "half"},
	} {
		if _, err := Load(env(e)); err == nil {
			t.Errorf("Load(%v) error = nil, want one", e)
		}
	}
}

func TestUpstreamKeysMaskedInLogs(t *testing.T) {
	c, err := Load(env(map[string]string{
		"COACH_UPSTREAMS": `[{"name":"a","baseURL":"http://u:pw-secret@h/v1","apiKeyEnv":"A_KEY"}]`,
		"A_KEY":           "sk-upstream-secret",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Object("config", c).Send()
	for _, secret := range []string{"sk-upstream-secret", "pw-secret"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("logged config %s contains the secret %q", buf.String(), secret)
		}
	}
	if !strings.Contains(buf.String(), `"apiKeyEnv":"A_KEY"`) {
		t.Errorf("logged config %s lacks the key's variable name", buf.String())
	}
}

func TestLoadBudgets(t *testing.T) {
	c, err := Load(env(map[string]string{"COACH_TOKEN_BUDGET_DAILY": "100000", "COACH_TOKEN_BUDGETS": "acme=5000, beta=0"}))
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]int64{"acme": 5000, "beta": 0, "gamma": 100000, "": 100000} {
		if got := c.TokenBudget(tenant); got != want {
			t.Errorf("TokenBudget(%q) = %d, want %d", tenant, got, want)
		}
	}
	if c, _ := Load(env(nil)); c.TokenBudget("acme") != 0 {
		t.Errorf("TokenBudget without settings = %d, want 0 (none)", c.TokenBudget("acme"))
	}
	for _, bad := range []string{"acme", "acme=x", "acme=-1", "a b=3"} {
		if _, err := Load(env(map[string]string{"COACH_TOKEN_BUDGETS": bad})); err == nil || !strings.Contains(err.Error(), "COACH_TOKEN_BUDGETS") {
			t.Errorf("Load(COACH_TOKEN_BUDGETS=%q) error = %v, want one naming it", bad, err)
		}
	}
}

func TestLoadTracing(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, "http://collector:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/in"}, "http://traces:9999/in"},
		{nil, ""},
	}
	for _, tt := range tests {
		c, err := Load(env(tt.env))
		if err != nil || c.OTLPEndpoint != tt.want {
			t.Errorf("Load(%v).OTLPEndpoint = %q, %v; want %q", tt.env, c.OTLPEndpoint, err, tt.want)
		}
	}
}
