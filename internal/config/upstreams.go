package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Upstream is one model endpoint of COACH_UPSTREAMS or COACH_UPSTREAMS_FILE. The entries are
// tried in the order they are listed. The endpoint's key is never part of the list: APIKeyEnv
// names the environment variable that holds it, and Load reads it into APIKey.
type Upstream struct {
	// Name identifies the endpoint in results, logs, metrics, traces and its breaker's Redis key.
	Name string `json:"name" yaml:"name"`
	// BaseURL is the endpoint's OpenAI-compatible base, e.g. http://127.0.0.1:9000/v1.
	BaseURL string `json:"baseURL" yaml:"baseURL"`
	// APIKeyEnv names the environment variable that holds the endpoint's key; empty sends none.
	APIKeyEnv string `json:"apiKeyEnv,omitempty" yaml:"apiKeyEnv,omitempty"`
	// Model is the model name sent upstream; empty takes COACH_MODEL.
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	// Profile says what the endpoint honours (see Profiles); empty is "generic".
	Profile string `json:"profile,omitempty" yaml:"profile,omitempty"`
	// ToolChoice (named, required, none), ResponseFormat (json_schema, json_object, prompt) and
	// IncludeUsage, when set, override what the profile says.
	ToolChoice     string `json:"toolChoice,omitempty" yaml:"toolChoice,omitempty"`
	ResponseFormat string `json:"responseFormat,omitempty" yaml:"responseFormat,omitempty"`
	IncludeUsage   *bool  `json:"includeUsage,omitempty" yaml:"includeUsage,omitempty"`
	// MaxCompletionTokens, when set, is the completion cap of every request to this endpoint,
	// in place of the contracts' and COACH_MAX_COMPLETION_TOKENS (a small local model's
	// context may hold less).
	MaxCompletionTokens int `json:"maxCompletionTokens,omitempty" yaml:"maxCompletionTokens,omitempty"`
	// ContextWindow, when set, is the endpoint's context window in tokens (llama-server's
	// n_ctx): a request that would not fit it, prompt and completion cap together, is sent
	// with less of the conversation.
	ContextWindow int `json:"contextWindow,omitempty" yaml:"contextWindow,omitempty"`

	// APIKey is the key read from APIKeyEnv. It is never decoded from the list and never logged.
	APIKey string `json:"-" yaml:"-"`
}

// Profiles are the endpoint profiles an Upstream may name; internal/openai defines what each
// one means.
var Profiles = []string{"openai", "anthropic-openai", "gemini-openai", "ollama", "vllm", "llamacpp", "lmstudio", "generic"}

// Values of Upstream.ToolChoice and Upstream.ResponseFormat.
var (
	ToolChoices     = []string{"named", "required", "none"}
	ResponseFormats = []string{"json_schema", "json_object", "prompt"}
)

// upstreamNamePattern is what an endpoint name may look like: it ends up in a Redis key, in
// metric labels and in the result line.
var upstreamNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// envNamePattern is what an environment variable name may look like.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loadUpstreams reads COACH_UPSTREAMS (a JSON array) or the file COACH_UPSTREAMS_FILE (the same
// list as JSON or YAML, told apart by the extension .yaml/.yml), checks every entry and reads
// each entry's key from the variable it names. Setting both is an error: which one would win
// is not obvious to whoever reads the deployment. Errors name the entry by position and name,
// never a value that could be a key.
func loadUpstreams(getenv func(string) string, defaultModel string, errs []error) ([]Upstream, []error) {
	inline := strings.TrimSpace(getenv("COACH_UPSTREAMS"))
	file := strings.TrimSpace(getenv("COACH_UPSTREAMS_FILE"))
	var (
		ups    []Upstream
		source string
		err    error
	)
	switch {
	case inline != "" && file != "":
		return nil, append(errs, errors.New("COACH_UPSTREAMS and COACH_UPSTREAMS_FILE are both set: set one"))
	case inline != "":
		source = "COACH_UPSTREAMS"
		ups, err = decodeUpstreamsJSON([]byte(inline))
	case file != "":
		source = "COACH_UPSTREAMS_FILE"
		var data []byte
		if data, err = os.ReadFile(file); err == nil {
			ups, err = DecodeUpstreams(data, filepath.Ext(file))
		}
	default:
		return nil, errs
	}
	if err != nil {
		return nil, append(errs, fmt.Errorf("%s: %w", source, err))
	}
	if len(ups) == 0 {
		return nil, append(errs, fmt.Errorf("%s: the list is empty; leave it unset for the single endpoint of OPENAI_BASE_URL", source))
	}
	seen := map[string]bool{}
	for i := range ups {
		u := &ups[i]
		where := fmt.Sprintf("%s entry %d", source, i+1)
		if upstreamNamePattern.MatchString(u.Name) {
			where += fmt.Sprintf(" (%s)", u.Name)
		}
		for _, err := range checkUpstream(u, seen) {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if u.Model == "" {
			u.Model = defaultModel
		}
		if u.Profile == "" {
			u.Profile = "generic"
		}
		if u.APIKeyEnv != "" && envNamePattern.MatchString(u.APIKeyEnv) {
			if u.APIKey = strings.TrimSpace(getenv(u.APIKeyEnv)); u.APIKey == "" {
				errs = append(errs, fmt.Errorf("%s: apiKeyEnv names %s, which is not set", where, u.APIKeyEnv))
			}
		}
	}
	return ups, errs
}

// checkUpstream returns what is wrong with u, and records its name in seen.
func checkUpstream(u *Upstream, seen map[string]bool) []error {
	var errs []error
	switch {
	case !upstreamNamePattern.MatchString(u.Name):
		errs = append(errs, errors.New("name must be 1 to 64 letters, digits, '.', '_' or '-'"))
	case seen[u.Name]:
		errs = append(errs, fmt.Errorf("the name %q is used twice", u.Name))
	}
	seen[u.Name] = true
	if b, err := url.Parse(u.BaseURL); u.BaseURL == "" {
		errs = append(errs, errors.New("baseURL is required"))
	} else if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		// The parse error itself may quote credentials in the URL, so it is not repeated.
		errs = append(errs, errors.New("baseURL must be an absolute http or https URL"))
	}
	if u.APIKeyEnv != "" && !envNamePattern.MatchString(u.APIKeyEnv) {
		errs = append(errs, errors.New("apiKeyEnv must name an environment variable (letters, digits, '_'), not hold the key"))
	}
	oneOf := func(field, v string, allowed []string) {
		if v != "" && !contains(allowed, v) {
			errs = append(errs, fmt.Errorf("%s %q: want one of %s", field, v, strings.Join(allowed, ", ")))
		}
	}
	if u.MaxCompletionTokens < 0 {
		errs = append(errs, errors.New("maxCompletionTokens must not be negative"))
	}
	if u.ContextWindow < 0 {
		errs = append(errs, errors.New("contextWindow must not be negative"))
	}
	oneOf("profile", u.Profile, Profiles)
	oneOf("toolChoice", u.ToolChoice, ToolChoices)
	oneOf("responseFormat", u.ResponseFormat, ResponseFormats)
	return errs
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// DecodeUpstreams decodes a list of endpoints as JSON, or as YAML when ext is ".yaml" or
// ".yml". Unknown fields are errors, so that a misspelt override is not silently ignored and an
// inline "apiKey" is refused rather than read.
func DecodeUpstreams(data []byte, ext string) ([]Upstream, error) {
	switch strings.ToLower(ext) {
	case ".yaml", ".yml":
		var ups []Upstream
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&ups); err != nil {
			return nil, fmt.Errorf("not a YAML list of endpoints: %s", scrubYAMLError(err))
		}
		return ups, nil
	default:
		return decodeUpstreamsJSON(data)
	}
}

func decodeUpstreamsJSON(data []byte) ([]Upstream, error) {
	var ups []Upstream
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ups); err != nil {
		// encoding/json's messages name fields and types, never values.
		return nil, fmt.Errorf("not a JSON array of endpoints: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not a JSON array of endpoints: data after the array")
	}
	return ups, nil
}

// scrubYAMLError keeps the line numbers and field names of a YAML error but drops quoted
// values, which could be a key pasted into the wrong field.
func scrubYAMLError(err error) string {
	return quotedValue.ReplaceAllString(err.Error(), "`…`")
}

var quotedValue = regexp.MustCompile("`[^`]*`")
