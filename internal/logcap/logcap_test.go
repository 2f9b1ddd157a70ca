package logcap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestWriter(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	tests := []struct {
		name string
		log  func(zerolog.Logger)
		// want are fields the clipped line must still hold as they were.
		want map[string]any
	}{
		{"short line unchanged", func(l zerolog.Logger) { l.Info().Str("session", "s1").Msg("turn") },
			map[string]any{"session": "s1", "message": "turn"}},
		{"one long field", func(l zerolog.Logger) {
			l.Error().Str("session", "s1").Strs("rules", []string{"r1"}).Str("model_response", big).Msg("fallback")
		}, map[string]any{"session": "s1", "message": "fallback", "level": "error"}},
		{"two long fields and a nested one", func(l zerolog.Logger) {
			l.Warn().Str("a", big).Str("b", big[:40<<10]).Dict("d", zerolog.Dict().Str("c", big)).Int("n", 7).Msg("m")
		}, map[string]any{"n": json.Number("7"), "message": "m"}},
		{"long message", func(l zerolog.Logger) { l.Info().Msg(big) }, map[string]any{"level": "info"}},
		{"multibyte and escapes", func(l zerolog.Logger) {
			l.Info().Str("text", strings.Repeat("é\u0001<\"", 30<<10)).Msg("m")
		}, map[string]any{"message": "m"}},
		{"too many fields", func(l zerolog.Logger) {
			e := l.Info()
			for i := range 3000 {
				e = e.Int(fmt.Sprintf("field_%04d", i), i)
			}
			e.Msg("wide")
		}, map[string]any{"message": "wide", "level": "info"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.log(zerolog.New(Writer(&out, 0)))
			line := out.Bytes()
			if len(line) > MaxLine {
				t.Fatalf("line of %d bytes, want at most %d", len(line), MaxLine)
			}
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("want one line ending in a newline, got %q…", line[:min(len(line), 200)])
			}
			var got map[string]any
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("line is not valid JSON: %v: %.300s", err, line)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("field %s = %v, want %v", k, got[k], v)
				}
			}
			clipped := tt.name != "short line unchanged"
			if (got["truncated"] == true) != clipped {
				t.Errorf("truncated = %v, want %v", got["truncated"], clipped)
			}
		})
	}
}

func TestWriterNotJSON(t *testing.T) {
	var out bytes.Buffer
	if _, err := Writer(&out, 1024).Write([]byte(strings.Repeat("plain text ", 1000) + "\n")); err != nil {
		t.Fatal(err)
	}
	if out.Len() > 1024 || !json.Valid(bytes.TrimSpace(out.Bytes())) {
		t.Errorf("got %d bytes, valid JSON %v; want at most 1024 bytes of valid JSON", out.Len(), json.Valid(bytes.TrimSpace(out.Bytes())))
	}
}
