package schema

import "testing"

// TestCompletionCap checks the derivation of a cap from a schema's bounds.
func TestCompletionCap(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		open   Open
		want   int
	}{
		// {"a":"<30 chars>"}: 2 braces + "a": (4) + 32 bytes of string = 38 bytes, 13 tokens.
		{"bounded string", `{"type":"object","properties":{"a":{"type":"string","maxLength":30}}}`, Open{}, 13},
		// The longest enum value, quoted: "medium" is 8 bytes; with braces and "s": 14, 5 tokens.
		{"enum", `{"type":"object","properties":{"s":{"enum":["low","medium"]}}}`, Open{}, 5},
		// An array of up to 3 numbers: [24,24,24] is 2+3*25 = 77 bytes; "n": and braces 83, 28 tokens.
		{"bounded array", `{"type":"object","properties":{"n":{"type":"array","maxItems":3,"items":{"type":"number"}}}}`, Open{}, 28},
		// Unbounded: 2 items of strings of 10 characters: [ + 2*(12+1) + ] = 28; with "n": and braces 34, 12 tokens.
		{"open array", `{"type":"object","properties":{"n":{"type":"array","items":{"type":"string"}}}}`, Open{Items: 2, Chars: 10}, 12},
		// A local reference is followed; a recursive one ends at the largest cap.
		{"ref", `{"type":"object","properties":{"a":{"$ref":"#/definitions/s"}},"definitions":{"s":{"type":"string","maxLength":30}}}`, Open{}, 13},
		{"recursive", `{"type":"object","properties":{"a":{"$ref":"#"}}}`, Open{}, MaxCompletionCap},
		{"not JSON", `{`, Open{}, MaxCompletionCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CompletionCap([]byte(tt.schema), tt.open); got != tt.want {
				t.Errorf("CompletionCap = %d, want %d", got, tt.want)
			}
		})
	}
}
