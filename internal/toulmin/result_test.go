package toulmin

import (
	"reflect"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

func TestParseResult(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    string // the parsed result re-encoded
		dropped []string
	}{
		{"minimal", `{"assistantText":"Hi.","step":"claim"}`, `{"assistantText":"Hi.","step":"claim"}`, nil},
		{"fenced", "```json\n{\"assistantText\":\"Hi.\",\"step\":\"claim\"}\n```", `{"assistantText":"Hi.","step":"claim"}`, nil},
		{"strict-mode nulls", `{"assistantText":"Hi.","step":"claim","confidence":null,"proposedUpdate":null,"nextQuestion":null,"shouldAdvance":null,"nextStep":null,"isComplete":null}`,
			`{"assistantText":"Hi.","step":"claim"}`, nil},
		{"all members", `{"isComplete":false,"nextStep":"grounds","shouldAdvance":true,"nextQuestion":"Q?","proposedUpdate":{"rationale":"r","value":"v","field":"claim"},"confidence":0.75,"step":"claim","assistantText":"Hi."}`,
			`{"assistantText":"Hi.","step":"claim","confidence":0.75,"proposedUpdate":{"field":"claim","value":"v","rationale":"r"},"nextQuestion":"Q?","shouldAdvance":true,"nextStep":"grounds","isComplete":false}`, nil},
		{"unknown members", `{"assistantText":"Hi.","step":"claim","reasoning":"because","proposedUpdate":{"field":"claim","value":"v","rationale":"r","score":3}}`,
			`{"assistantText":"Hi.","step":"claim","proposedUpdate":{"field":"claim","value":"v","rationale":"r"}}`, []string{"reasoning", "proposedUpdate.score"}},
		{"missing step and proposal members", `{"assistantText":"Hi.","proposedUpdate":{}}`,
			`{"assistantText":"Hi.","step":"","proposedUpdate":{"field":"","value":"","rationale":""}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dropped, err := parseResult([]byte(tt.raw))
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got := string(r.encode()); got != tt.want {
				t.Errorf("result\n got  %s\n want %s", got, tt.want)
			}
			if !reflect.DeepEqual(dropped, tt.dropped) {
				t.Errorf("dropped = %v, want %v", dropped, tt.dropped)
			}
		})
	}
}

func TestParseResultErrors(t *testing.T) {
	tests := []struct {
		name, raw, code, mentions string
	}{
		{"empty output", "", coach.CodeEmptyResponse, "empty"},
		{"blank output", " \n ", coach.CodeEmptyResponse, "empty"},
		{"empty fence", "```json\n```", coach.CodeEmptyResponse, "empty"},
		{"empty assistantText", `{"assistantText":"","step":"claim"}`, coach.CodeEmptyResponse, "assistantText"},
		{"blank assistantText", `{"assistantText":" \n\t","step":"claim"}`, coach.CodeEmptyResponse, "assistantText"},
		{"missing assistantText", `{"step":"claim"}`, coach.CodeEmptyResponse, "assistantText"},
		{"null assistantText", `{"assistantText":null,"step":"claim"}`, coach.CodeEmptyResponse, "assistantText"},
		{"not JSON", `Sure! Here is my answer.`, coach.CodeValidationFailed, "JSON"},
		{"truncated", `{"assistantText":"Hi.","step":"cl`, coach.CodeValidationFailed, "JSON"},
		{"trailing data", `{"assistantText":"Hi.","step":"claim"} {"x":1}`, coach.CodeValidationFailed, "JSON"},
		{"array", `[{"assistantText":"Hi."}]`, coach.CodeValidationFailed, "object"},
		{"string", `"Hi."`, coach.CodeValidationFailed, "object"},
		{"assistantText not a string", `{"assistantText":3,"step":"claim"}`, coach.CodeValidationFailed, "assistantText must be a string"},
		{"confidence not a number", `{"assistantText":"Hi.","step":"claim","confidence":"high"}`, coach.CodeValidationFailed, "confidence must be a number"},
		{"shouldAdvance not a boolean", `{"assistantText":"Hi.","step":"claim","shouldAdvance":"yes"}`, coach.CodeValidationFailed, "shouldAdvance must be a boolean"},
		{"step not a string", `{"assistantText":"Hi.","step":1}`, coach.CodeValidationFailed, "step must be a string"},
		{"proposal not an object", `{"assistantText":"Hi.","step":"claim","proposedUpdate":"text"}`, coach.CodeValidationFailed, "proposedUpdate must be an object"},
		{"proposal value not a string", `{"assistantText":"Hi.","step":"claim","proposedUpdate":{"field":"claim","value":1,"rationale":""}}`, coach.CodeValidationFailed, "proposedUpdate.value must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseResult([]byte(tt.raw))
			e := wantCode(t, err, tt.code)
			if !strings.Contains(e.Message, tt.mentions) {
				t.Errorf("message %q does not mention %q", e.Message, tt.mentions)
			}
		})
	}
}
