// Package config reads the gateway's settings from the environment: one struct, every field
// with a default, every secret masked when the struct is logged.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Config is every setting of the gateway. Field comments name the environment variable.
type Config struct {
	Addr string // COACH_ADDR

	RedisURL    string        // REDIS_URL; empty runs an embedded in-process Redis
	RedisPrefix string        // COACH_REDIS_PREFIX
	SessionTTL  time.Duration // COACH_SESSION_TTL: idle sessions expire after this

	OpenAIBaseURL  string // OPENAI_BASE_URL; empty runs the embedded replay model
	OpenAIAPIKey   string // OPENAI_API_KEY
	Model          string // COACH_MODEL
	ResponseFormat string // COACH_RESPONSE_FORMAT: json_schema, json_object or prompt

	ConnectTimeout   time.Duration // COACH_CONNECT_TIMEOUT
	FirstByteTimeout time.Duration // COACH_FIRST_BYTE_TIMEOUT
	IdleTimeout      time.Duration // COACH_IDLE_TIMEOUT
	TurnTimeout      time.Duration // COACH_TURN_TIMEOUT
	MaxAttempts      int           // COACH_MAX_ATTEMPTS
	RetryAfterCap    time.Duration // COACH_RETRY_AFTER_CAP

	ShutdownTimeout time.Duration // COACH_SHUTDOWN_TIMEOUT: how long open streams may drain
	MaxBodyBytes    int64         // COACH_MAX_BODY_BYTES
	MaxMessageChars int           // COACH_MAX_MESSAGE_CHARS
	HistoryLimit    int           // COACH_HISTORY_LIMIT: messages kept per session

	ModulesDir string // COACH_MODULES_DIR: extra learning modules (*.json)

	CardsCyclesPerLevel int // COACH_CARDS_CYCLES_PER_LEVEL
	CardsMaxLevel       int // COACH_CARDS_MAX_LEVEL

	ReplayDelayMin time.Duration // COACH_REPLAY_DELAY_MIN: pause between chunks of the embedded replay model
	ReplayDelayMax time.Duration // COACH_REPLAY_DELAY_MAX

	LogLevel  string // COACH_LOG_LEVEL
	LogFormat string // COACH_LOG_FORMAT: json or console
}

// Default returns the defaults.
func Default() Config {
	return Config{
		Addr:                ":8080",
		RedisPrefix:         "coachgw",
		SessionTTL:          24 * time.Hour,
		Model:               "gpt-4o-mini",
		ResponseFormat:      "json_schema",
		ConnectTimeout:      5 * time.Second,
		FirstByteTimeout:    30 * time.Second,
		IdleTimeout:         20 * time.Second,
		TurnTimeout:         120 * time.Second,
		MaxAttempts:         3,
		RetryAfterCap:       10 * time.Second,
		ShutdownTimeout:     30 * time.Second,
		MaxBodyBytes:        64 << 10,
		MaxMessageChars:     8000,
		HistoryLimit:        200,
		CardsCyclesPerLevel: 2,
		CardsMaxLevel:       5,
		ReplayDelayMin:      10 * time.Millisecond,
		ReplayDelayMax:      20 * time.Millisecond,
		LogLevel:            "info",
		LogFormat:           "json",
	}
}

// Load reads the environment through getenv over the defaults. It reports every malformed
// variable at once.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	dur := func(name string, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration like 30s", name, v))
			return
		}
		*dst = d
	}
	num := func(name string, dst *int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number", name, v))
			return
		}
		*dst = n
	}

	str("COACH_ADDR", &c.Addr)
	str("REDIS_URL", &c.RedisURL)
	str("COACH_REDIS_PREFIX", &c.RedisPrefix)
	dur("COACH_SESSION_TTL", &c.SessionTTL)
	str("OPENAI_BASE_URL", &c.OpenAIBaseURL)
	c.OpenAIAPIKey = strings.TrimSpace(getenv("OPENAI_API_KEY"))
	str("COACH_MODEL", &c.Model)
	str("COACH_RESPONSE_FORMAT", &c.ResponseFormat)
	dur("COACH_CONNECT_TIMEOUT", &c.ConnectTimeout)
	dur("COACH_FIRST_BYTE_TIMEOUT", &c.FirstByteTimeout)
	dur("COACH_IDLE_TIMEOUT", &c.IdleTimeout)
	dur("COACH_TURN_TIMEOUT", &c.TurnTimeout)
	num("COACH_MAX_ATTEMPTS", &c.MaxAttempts)
	dur("COACH_RETRY_AFTER_CAP", &c.RetryAfterCap)
	dur("COACH_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	var maxBody int
	num("COACH_MAX_BODY_BYTES", &maxBody)
	if maxBody > 0 {
		c.MaxBodyBytes = int64(maxBody)
	}
	num("COACH_MAX_MESSAGE_CHARS", &c.MaxMessageChars)
	num("COACH_HISTORY_LIMIT", &c.HistoryLimit)
	str("COACH_MODULES_DIR", &c.ModulesDir)
	num("COACH_CARDS_CYCLES_PER_LEVEL", &c.CardsCyclesPerLevel)
	num("COACH_CARDS_MAX_LEVEL", &c.CardsMaxLevel)
	dur("COACH_REPLAY_DELAY_MIN", &c.ReplayDelayMin)
	dur("COACH_REPLAY_DELAY_MAX", &c.ReplayDelayMax)
	str("COACH_LOG_LEVEL", &c.LogLevel)
	str("COACH_LOG_FORMAT", &c.LogFormat)

	switch c.ResponseFormat {
	case "json_schema", "json_object", "prompt":
	default:
		errs = append(errs, fmt.Errorf("COACH_RESPONSE_FORMAT=%q: want json_schema, json_object or prompt", c.ResponseFormat))
	}
	switch c.LogFormat {
	case "json", "console":
	default:
		errs = append(errs, fmt.Errorf("COACH_LOG_FORMAT=%q: want json or console", c.LogFormat))
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("COACH_LOG_LEVEL=%q: %v", c.LogLevel, err))
	}
	if c.ReplayDelayMax < c.ReplayDelayMin {
		c.ReplayDelayMax = c.ReplayDelayMin
	}
	if c.CardsMaxLevel < 1 {
		errs = append(errs, fmt.Errorf("COACH_CARDS_MAX_LEVEL must be at least 1"))
	}
	return c, errors.Join(errs...)
}

// MarshalZerologObject logs the configuration with secrets masked.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	e.Str("addr", c.Addr).
		Str("redis", MaskURL(c.RedisURL)).
		Str("redisPrefix", c.RedisPrefix).
		Dur("sessionTTL", c.SessionTTL).
		Str("openaiBaseURL", MaskURL(c.OpenAIBaseURL)).
		Str("openaiAPIKey", Mask(c.OpenAIAPIKey)).
		Str("model", c.Model).
		Str("responseFormat", c.ResponseFormat).
		Dur("firstByteTimeout", c.FirstByteTimeout).
		Dur("idleTimeout", c.IdleTimeout).
		Dur("turnTimeout", c.TurnTimeout).
		Int("maxAttempts", c.MaxAttempts).
		Dur("shutdownTimeout", c.ShutdownTimeout).
		Int64("maxBodyBytes", c.MaxBodyBytes).
		Str("modulesDir", c.ModulesDir)
}

// Mask hides a secret, keeping only whether it is set.
func Mask(secret string) string {
	if secret == "" {
		return ""
	}
	return "****"
}

// MaskURL hides the password of a URL such as redis://:pw@host:6379/0.
func MaskURL(u string) string {
	scheme := strings.Index(u, "://")
	at := strings.LastIndex(u, "@")
	if scheme < 0 || at < scheme {
		return u
	}
	userinfo := u[scheme+3 : at]
	if i := strings.IndexByte(userinfo, ':'); i >= 0 {
		userinfo = userinfo[:i+1] + "****"
	} else {
		userinfo = "****"
	}
	return u[:scheme+3] + userinfo + u[at:]
}
