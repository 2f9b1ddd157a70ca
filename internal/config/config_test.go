package config

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	got, err := Load(env(nil))
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Errorf("Load() with an empty environment = %+v, want the defaults", got)
	}
}

func TestLoadOverrides(t *testing.T) {
	got, err := Load(env(map[string]string{
		"COACH_ADDR": "127.0.0.1:0", "REDIS_URL": "redis://127.0.0.1:6379/3", "COACH_IDLE_TIMEOUT": "5s",
		"COACH_MAX_ATTEMPTS": "5", "COACH_RESPONSE_FORMAT": "prompt", "COACH_MAX_BODY_BYTES": "1024",
	}))
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	if got.Addr != "127.0.0.1:0" || got.RedisURL != "redis://127.0.0.1:6379/3" || got.IdleTimeout != 5*time.Second ||
		got.MaxAttempts != 5 || got.ResponseFormat != "prompt" || got.MaxBodyBytes != 1024 {
		t.Errorf("Load() = %+v, overrides not applied", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct{ name, key, val string }{
		{"bad duration", "COACH_IDLE_TIMEOUT", "soon"},
		{"negative number", "COACH_MAX_ATTEMPTS", "-1"},
		{"bad format", "COACH_RESPONSE_FORMAT", "xml"},
		{"bad log level", "COACH_LOG_LEVEL", "loud"},
		{"lock TTL too short to renew", "COACH_LOCK_TTL", "10ms"},
		{"turns never lost", "COACH_TURN_LOST_AFTER", "0s"},
		{"turns lost before they start", "COACH_TURN_LOST_AFTER", "-1s"},
		{"bad output bound", "COACH_MAX_OUTPUT_BYTES", "lots"},
		{"no save interval", "COACH_SAVE_INTERVAL", "0s"},
		{"a transcript of no entries", "COACH_TRANSCRIPT_MAX_ENTRIES", "0"},
		{"a transcript of no bytes", "COACH_TRANSCRIPT_MAX_BYTES", "0"},
		{"negative turns per tenant", "COACH_MAX_TURNS_PER_TENANT", "-1"},
		{"turns per tenant in words", "COACH_MAX_TURNS_PER_TENANT", "many"},
		{"negative turns per learner", "COACH_MAX_TURNS_PER_LEARNER", "-1"},
		{"a turn no one may resume", "COACH_MAX_READERS_PER_TURN", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{tt.key: tt.val}))
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("Load(%s=%q) error = %v, want one naming %s", tt.key, tt.val, err, tt.key)
			}
		})
	}
}

// TestMaxTurns checks COACH_MAX_TURNS_PER_TENANT and COACH_MAX_TURNS_PER_LEARNER: 256 and 8 by
// default, a number as given, 0 for no bound.
func TestMaxTurns(t *testing.T) {
	tests := []struct {
		name, val string
		want      int
		got       func(*Config) int
	}{
		{"COACH_MAX_TURNS_PER_TENANT", "", 256, func(c *Config) int { return c.MaxTurnsPerTenant }},
		{"COACH_MAX_TURNS_PER_TENANT", "4", 4, func(c *Config) int { return c.MaxTurnsPerTenant }},
		{"COACH_MAX_TURNS_PER_TENANT", " 1000 ", 1000, func(c *Config) int { return c.MaxTurnsPerTenant }},
		{"COACH_MAX_TURNS_PER_TENANT", "0", 0, func(c *Config) int { return c.MaxTurnsPerTenant }},
		{"COACH_MAX_TURNS_PER_LEARNER", "", 8, func(c *Config) int { return c.MaxTurnsPerLearner }},
		{"COACH_MAX_TURNS_PER_LEARNER", "2", 2, func(c *Config) int { return c.MaxTurnsPerLearner }},
		{"COACH_MAX_TURNS_PER_LEARNER", "0", 0, func(c *Config) int { return c.MaxTurnsPerLearner }},
	}
	for _, tt := range tests {
		cfg, err := Load(env(map[string]string{tt.name: tt.val}))
		if err != nil {
			t.Fatalf("Load(%s=%q) error = %v", tt.name, tt.val, err)
		}
		if got := tt.got(&cfg); got != tt.want {
			t.Errorf("Load(%s=%q): got %d, want %d", tt.name, tt.val, got, tt.want)
		}
	}
}

// TestLoadDataDir checks COACH_DATA_DIR: the user's cache by default, a directory as given
// (trimmed), and "off" in any case for none.
func TestLoadDataDir(t *testing.T) {
	tests := []struct{ val, want string }{
		{"", DefaultDataDir()},
		{"off", ""},
		{"OFF", ""},
		{" Off ", ""},
		{" /srv/coachgw ", "/srv/coachgw"},
		{"offline", "offline"},
	}
	for _, tt := range tests {
		t.Run(tt.val, func(t *testing.T) {
			got, err := Load(env(map[string]string{"COACH_DATA_DIR": tt.val}))
			if err != nil || got.DataDir != tt.want {
				t.Errorf("Load(COACH_DATA_DIR=%q) = DataDir %q, %v; want %q", tt.val, got.DataDir, err, tt.want)
			}
		})
	}
}

func TestSecretsMaskedInLogs(t *testing.T) {
	c, _ := Load(env(map[string]string{"OPENAI_API_KEY": "sk-live-secret", "REDIS_URL": "redis://user:hunter2@db:6379/0",
		"OPENAI_BASE_URL":                    "https://bob:basicpw@llm.example.test/v1?api_key=qtoken",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector.example.test/v1/traces?Token=otlptoken"}))
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Object("config", c).Send()
	for _, secret := range []string{"sk-live-secret", "hunter2", "bob", "basicpw", "qtoken", "otlptoken"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("logged config %s contains the secret %q", buf.String(), secret)
		}
	}
	if !strings.Contains(buf.String(), "redis://***@db:6379/0") {
		t.Errorf("logged config %s lacks the masked Redis URL", buf.String())
	}
}

func TestLoadOutputBytes(t *testing.T) {
	tests := []struct {
		val         string
		want        int
		wantByName  map[string]int
		wantErrPart string
	}{
		{"", 256 << 10, nil, ""},
		{"100000", 100000, nil, ""},
		{"100000, module=524288", 100000, map[string]int{"module": 524288}, ""},
		{"cards=2048", 256 << 10, map[string]int{"cards": 2048}, ""},
		{"12", 0, nil, "at least 1024"},
		{"=5000", 0, nil, "contract=bytes"},
		{"module=lots", 0, nil, "contract=bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.val, func(t *testing.T) {
			got, err := Load(env(map[string]string{"COACH_MAX_OUTPUT_BYTES": tt.val}))
			if tt.wantErrPart != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrPart) {
					t.Errorf("error = %v, want one saying %q", err, tt.wantErrPart)
				}
				return
			}
			if err != nil || got.MaxOutputBytes != tt.want || !reflect.DeepEqual(got.ContractOutputBytes, tt.wantByName) {
				t.Errorf("got %d %v (%v), want %d %v", got.MaxOutputBytes, got.ContractOutputBytes, err, tt.want, tt.wantByName)
			}
		})
	}
}

func TestSafetySettings(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			if c.SafetyMode != "enforce" || c.SafetyFailure != "closed" || c.PIIRedact != "mask" || c.SafetyHoldbackChars != 160 {
				t.Errorf("got mode %q failure %q pii %q holdback %d, want enforce closed mask 160", c.SafetyMode, c.SafetyFailure, c.PIIRedact, c.SafetyHoldbackChars)
			}
			if c.TranscriptRetention != 365*24*time.Hour {
				t.Errorf("got retention %v, want 365 days", c.TranscriptRetention)
			}
		}},
		{name: "days", env: map[string]string{"COACH_TRANSCRIPT_RETENTION": "30d"}, check: func(t *testing.T, c Config) {
			if c.TranscriptRetention != 30*24*time.Hour {
				t.Errorf("got %v, want 720h", c.TranscriptRetention)
			}
		}},
		{name: "observe", env: map[string]string{"COACH_SAFETY_MODE": "Observe"}, check: func(t *testing.T, c Config) {
			if c.SafetyMode != "observe" {
				t.Errorf("got %q, want observe", c.SafetyMode)
			}
		}},
		{name: "operator key", env: map[string]string{"COACH_API_KEYS": "school:" + hash + ":operator,app:" + strings.Repeat("cd", 32)}, check: func(t *testing.T, c Config) {
			if len(c.APIKeys) != 2 || !c.APIKeys[0].Operator || c.APIKeys[0].Tenant != "school" || c.APIKeys[1].Operator {
				t.Errorf("got %+v, want school as operator and app not", c.APIKeys)
			}
		}},
		{name: "bad mode", env: map[string]string{"COACH_SAFETY_MODE": "strict"}, wantErr: "COACH_SAFETY_MODE"},
		{name: "bad failure", env: map[string]string{"COACH_SAFETY_FAILURE": "ajar"}, wantErr: "COACH_SAFETY_FAILURE"},
		{name: "bad pii", env: map[string]string{"COACH_PII_REDACT": "hash"}, wantErr: "COACH_PII_REDACT"},
		{name: "short retention", env: map[string]string{"COACH_TRANSCRIPT_RETENTION": "10m"}, wantErr: "COACH_TRANSCRIPT_RETENTION"},
		{name: "unsigned webhook", env: map[string]string{"COACH_ESCALATION_URL": "https://hooks.example/x"}, wantErr: "COACH_ESCALATION_SECRET"},
		{name: "guard without model", env: map[string]string{"COACH_GUARD_URL": "http://127.0.0.1:1/v1"}, wantErr: "COACH_GUARD_MODEL"},
		{name: "bad guard format", env: map[string]string{"COACH_GUARD_FORMAT": "shieldgemma"}, wantErr: "COACH_GUARD_FORMAT"},
		{name: "bad judge", env: map[string]string{"COACH_SAFETY_JUDGE": "maybe"}, wantErr: "COACH_SAFETY_JUDGE"},
		{name: "judge without model", env: map[string]string{"COACH_SAFETY_JUDGE_URL": "http://127.0.0.1:1/v1"}, wantErr: "COACH_SAFETY_JUDGE_MODEL"},
		{name: "judge off", env: map[string]string{"COACH_SAFETY_JUDGE": "OFF"}, check: func(t *testing.T, c Config) {
			if c.SafetyJudge != "off" {
				t.Errorf("SafetyJudge = %q, want off", c.SafetyJudge)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			tt.check(t, c)
		})
	}
}
