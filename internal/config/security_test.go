package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// hashOf returns the configured form of key: the hex SHA-256.
func hashOf(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func keyOf(tenant, key string) APIKey {
	return APIKey{Tenant: tenant, Hash: sha256.Sum256([]byte(key))}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestLoadAPIKeys(t *testing.T) {
	file := writeFile(t, "# production keys\n\nbeta:"+hashOf("kb")+"  # rotated 2024-05\r\n  gamma:"+strings.ToUpper(hashOf("kg"))+"\n")
	tests := []struct {
		name string
		env  map[string]string
		want []APIKey
	}{
		{"none", nil, nil},
		{"env list", map[string]string{"COACH_API_KEYS": "acme:" + hashOf("ka") + ", beta:" + hashOf("kb") + ","},
			[]APIKey{keyOf("acme", "ka"), keyOf("beta", "kb")}},
		{"two keys of one tenant (rotation)", map[string]string{"COACH_API_KEYS": "acme:" + hashOf("old") + ",acme:" + hashOf("new")},
			[]APIKey{keyOf("acme", "old"), keyOf("acme", "new")}},
		{"file with comments, blank lines, CRLF and uppercase hex", map[string]string{"COACH_API_KEYS_FILE": file},
			[]APIKey{keyOf("beta", "kb"), keyOf("gamma", "kg")}},
		{"env and file together", map[string]string{"COACH_API_KEYS": "acme:" + hashOf("ka"), "COACH_API_KEYS_FILE": file},
			[]APIKey{keyOf("acme", "ka"), keyOf("beta", "kb"), keyOf("gamma", "kg")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(env(tt.env))
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if !reflect.DeepEqual(got.APIKeys, tt.want) {
				t.Errorf("APIKeys = %+v, want %+v", got.APIKeys, tt.want)
			}
		})
	}
}

func TestLoadAPIKeysErrors(t *testing.T) {
	const plaintext = "sk-client-plaintext-key"
	tests := []struct {
		name, key, val string
		// want is a piece of the error message.
		want string
	}{
		{"plaintext key instead of its hash", "COACH_API_KEYS", "acme:" + plaintext, "COACH_API_KEYS entry 1: the part after the tenant must be the SHA-256"},
		{"short hash", "COACH_API_KEYS", "acme:" + hashOf("k")[:62], "SHA-256 of the key in hex"},
		{"no tenant", "COACH_API_KEYS", hashOf("k"), "want tenant:sha256hex"},
		{"tenant with a brace", "COACH_API_KEYS", "ac}me:" + hashOf("k"), "want tenant:sha256hex"},
		{"empty tenant", "COACH_API_KEYS", ":" + hashOf("k"), "want tenant:sha256hex"},
		{"second entry bad", "COACH_API_KEYS", "acme:" + hashOf("k") + ",beta:xyz", "COACH_API_KEYS entry 2"},
		{"same hash twice", "COACH_API_KEYS", "acme:" + hashOf("k") + ",beta:" + hashOf("k"), "configured twice"},
		{"bad file line", "COACH_API_KEYS_FILE", writeFile(t, "# ok\nacme:"+hashOf("k")+"\nbeta "+plaintext+"\n"), "COACH_API_KEYS_FILE line 3"},
		{"missing file", "COACH_API_KEYS_FILE", filepath.Join(t.TempDir(), "absent"), "COACH_API_KEYS_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(map[string]string{tt.key: tt.val}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%s) error = %v, want one containing %q", tt.key, err, tt.want)
			}
			if strings.Contains(err.Error(), plaintext) {
				t.Errorf("error %q repeats the configured entry", err)
			}
		})
	}
}

func TestLoadCORSOrigins(t *testing.T) {
	tests := []struct {
		val     string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"https://app.example.com", []string{"https://app.example.com"}, false},
		{" https://App.Example.com/ , http://localhost:5173", []string{"https://app.example.com", "http://localhost:5173"}, false},
		{"*", nil, true},
		{"https://*.example.com", nil, true},
		{"app.example.com", nil, true},
		{"ftp://app.example.com", nil, true},
		{"https://app.example.com/path", nil, true},
		{"https://user@app.example.com", nil, true},
		{"https://app.example.com?x=1", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.val, func(t *testing.T) {
			got, err := Load(env(map[string]string{"COACH_CORS_ORIGINS": tt.val}))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load(COACH_CORS_ORIGINS=%q) error = %v, want error %v", tt.val, err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got.CORSOrigins, tt.want) {
				t.Errorf("CORSOrigins = %q, want %q", got.CORSOrigins, tt.want)
			}
		})
	}
}

func TestLoadRateLimit(t *testing.T) {
	tests := []struct {
		val     string
		want    int
		wantErr bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"120", 120, false},
		{"-1", 0, true},
		{"lots", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.val, func(t *testing.T) {
			got, err := Load(env(map[string]string{"COACH_RATE_LIMIT": tt.val}))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load(COACH_RATE_LIMIT=%q) error = %v, want error %v", tt.val, err, tt.wantErr)
			}
			if got.RateLimit != tt.want {
				t.Errorf("RateLimit = %d, want %d", got.RateLimit, tt.want)
			}
		})
	}
}

// TestAPIKeysNotLogged checks that the logged configuration counts the keys but shows neither
// the tenants' hashes nor anything of the key file.
func TestAPIKeysNotLogged(t *testing.T) {
	file := writeFile(t, "beta:"+hashOf("kb")+"\n")
	c, err := Load(env(map[string]string{"COACH_API_KEYS": "acme:" + hashOf("ka"), "COACH_API_KEYS_FILE": file,
		"OPENAI_API_KEY": "sk-live-secret", "REDIS_URL": "rediss://:hunter2@db:6379/0"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Object("config", c).Send()
	for _, secret := range []string{hashOf("ka"), hashOf("kb"), "sk-live-secret", "hunter2"} {
		if strings.Contains(strings.ToLower(buf.String()), secret) {
			t.Errorf("logged config %s contains %q", buf.String(), secret)
		}
	}
	if !strings.Contains(buf.String(), `"apiKeys":2`) {
		t.Errorf("logged config %s does not count the 2 API keys", buf.String())
	}
}
