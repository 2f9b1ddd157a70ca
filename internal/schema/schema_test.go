package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestStripFence(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no fence", `  {"a":1} `, `{"a":1}`},
		{"json fence", "```json\n{\"a\":1}\n```", `{"a":1}`},
		{"bare fence", "```\n{\"a\":1}\n```\n", `{"a":1}`},
		{"unclosed fence", "```json\n{\"a\":1}", `{"a":1}`},
		{"fence without newline", "```{}", "```{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(StripFence([]byte(tt.in))); got != tt.want {
				t.Errorf("StripFence(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestDecodeAndStripNulls(t *testing.T) {
	doc, err := Decode([]byte("```json\n{\"a\":null,\"b\":{\"c\":null,\"d\":1.50},\"e\":[{\"f\":null}]}\n```"))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	got := StripNulls(doc)
	want := map[string]any{"b": map[string]any{"d": json.Number("1.50")}, "e": []any{map[string]any{}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("StripNulls = %#v, want %#v", got, want)
	}
	for _, bad := range []string{`{"a":1} trailing`, `{"a":`, ``} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", bad)
		}
	}
}

// TestDecodeNegativeZero checks that no negative zero survives decoding, while every other number
// stays as it was written.
func TestDecodeNegativeZero(t *testing.T) {
	tests := []struct{ in, want string }{
		{"-0", "0"}, {"-0.0", "0"}, {"-0e5", "0"}, {"-0E-0", "0"}, {"-1e-400", "0"},
		{"0", "0"}, {"0.0", "0.0"}, {"-5e-0", "-5e-0"}, {"-0.5", "-0.5"}, {"1e-400", "1e-400"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			doc, err := Decode([]byte(`{"a":` + tt.in + `,"b":[` + tt.in + `,{"c":` + tt.in + `}]}`))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			n := json.Number(tt.want)
			want := map[string]any{"a": n, "b": []any{n, map[string]any{"c": n}}}
			if !reflect.DeepEqual(doc, want) {
				t.Errorf("Decode = %#v, want %#v", doc, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	v := Load("coach-ai-result.json")
	ok, _ := Decode([]byte(`{"assistantText":"Hi.","step":"claim","confidence":0.5}`))
	if err := v.Validate(ok); err != nil {
		t.Errorf("Validate(valid) = %v, want nil", err)
	}
	bad, _ := Decode([]byte(`{"assistantText":"","step":"conclusion","confidence":2}`))
	err := v.Validate(bad)
	if err == nil {
		t.Fatal("Validate(invalid) = nil, want the violations")
	}
	for _, want := range []string{"assistantText", "step", "confidence"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
}

// TestValidateJSON checks that a document validated as JSON gets the verdict, and the
// violations, that Validate gives it decoded, and that JSON that does not parse is an error.
func TestValidateJSON(t *testing.T) {
	v := Load("coach-ai-result.json")
	tests := []struct {
		name, doc string
		want      []string // what the error must mention; none: valid
	}{
		{"valid", `{"assistantText":"Hi.","step":"claim","confidence":0.5}`, nil},
		{"invalid", `{"assistantText":"","step":"conclusion","confidence":2}`, []string{"assistantText", "step", "confidence"}},
		{"not JSON", `{"assistantText":`, []string{"coach-ai-result.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.ValidateJSON([]byte(tt.doc))
			if tt.want == nil {
				if err != nil {
					t.Errorf("ValidateJSON = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateJSON = nil, want an error mentioning %v", tt.want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("ValidateJSON error %q does not mention %s", err, want)
				}
			}
			if doc, derr := Decode([]byte(tt.doc)); derr == nil {
				if verr := v.Validate(doc); verr == nil || verr.Error() != err.Error() {
					t.Errorf("ValidateJSON = %v, Validate of the decoded document = %v, want the same", err, verr)
				}
			}
		})
	}
}
