package redact

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "https://api.example.test/v1", "https://api.example.test/v1"},
		{"user and password", "https://bob:s3cret@api.example.test/v1", "https://***@api.example.test/v1"},
		{"password only", "redis://:pw@127.0.0.1:6379/0", "redis://***@127.0.0.1:6379/0"},
		{"user only", "https://tok123@api.example.test/v1", "https://***@api.example.test/v1"},
		{"@ in path is no userinfo", "https://api.example.test/v1/@me", "https://api.example.test/v1/@me"},
		{"token", "https://api.example.test/v1?token=abc", "https://api.example.test/v1?token=***"},
		{"key", "https://api.example.test/v1?key=abc&x=1", "https://api.example.test/v1?key=***&x=1"},
		{"api_key upper case", "https://api.example.test/v1?API_KEY=abc", "https://api.example.test/v1?API_KEY=***"},
		{"access_token", "http://collector:4318/v1/traces?access_token=abc", "http://collector:4318/v1/traces?access_token=***"},
		{"apikey", "https://h/v1?a=1&ApiKey=abc", "https://h/v1?a=1&ApiKey=***"},
		{"signature", "https://h/v1?signature=abc", "https://h/v1?signature=***"},
		{"sig with fragment", "https://h/v1?sig=abc#frag", "https://h/v1?sig=***#frag"},
		{"other parameters kept", "https://h/v1?api-version=2024-06-01", "https://h/v1?api-version=2024-06-01"},
		{"everything", "https://u:p@h:8443/v1?token=t&Sig=s&keep=1", "https://***@h:8443/v1?token=***&Sig=***&keep=1"},
		{"unparsable", "http://u:p@h:port%zz/?token=t", "http://***@h:port%zz/?token=***"},
		{"no scheme", "localhost:4317", "localhost:4317"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URL(tt.in); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScrubber(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	s := NewScrubber(key, "https://alice:pa%2Fss@api.example.test/v1?token=qt-999&x=1", "http://collector:4318/v1/traces?Access_Token=ot-42")
	tests := []struct {
		name, secret string
	}{
		{"key", key},
		{"base64 key", b64(base64.StdEncoding, key)},
		{"base64url key unpadded", b64(base64.RawURLEncoding, key)},
		{"base64 bearer", b64(base64.StdEncoding, "Bearer "+key)},
		{"base64 bearer unpadded", b64(base64.RawStdEncoding, "Bearer "+key)},
		{"base64url bearer", b64(base64.URLEncoding, "Bearer "+key)},
		{"basic auth", b64(base64.StdEncoding, "alice:pa/ss")},
		{"basic auth url alphabet", b64(base64.RawURLEncoding, "alice:pa/ss")},
		{"userinfo", "alice:pa/ss"},
		{"userinfo as in the URL", "alice:pa%2Fss"},
		{"password", "pa/ss"},
		{"base URL query token", "qt-999"},
		{"OTLP query token", "ot-42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"error":{"message":"bad request; echoed: ` + tt.secret + ` (end)"}}`
			got := s.Scrub(in)
			if strings.Contains(got, tt.secret) {
				t.Errorf("Scrub(%q) = %q, still holds the secret", in, got)
			}
			if !strings.Contains(got, "echoed: ***") || !strings.Contains(got, "(end)") {
				t.Errorf("Scrub(%q) = %q, want the secret replaced by *** and the rest kept", in, got)
			}
		})
	}
	t.Run("zero scrubber", func(t *testing.T) {
		if got := (Scrubber{}).Scrub("text " + key); got != "text "+key {
			t.Errorf("zero Scrubber changed the text: %q", got)
		}
	})
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "hello", 10, "hello"},
		{"exact", "hello", 5, "hello"},
		{"cut", "hello world", 5, "hello…[6 bytes cut]"},
		{"cut on a rune boundary", "aéé", 2, "a…[4 bytes cut]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Excerpt(tt.in, tt.n)
			if got != tt.want {
				t.Errorf("Excerpt(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Excerpt(%q, %d) = %q, not valid UTF-8", tt.in, tt.n, got)
			}
		})
	}
}
