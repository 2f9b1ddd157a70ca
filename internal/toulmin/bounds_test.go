package toulmin

import (
	"errors"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestFinishRejectsOversizedText gives each text member of the result more characters than
// its maxLength in api/schemas/coach-ai-result.json allows: the output is unusable, as output
// that does not parse is, and nothing of it is stored.
func TestFinishRejectsOversizedText(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct{ name, raw string }{
		{"assistantText", `{"assistantText":"` + long(8001) + `","step":"claim"}`},
		{"nextQuestion", `{"assistantText":"Good.","nextQuestion":"` + long(4001) + `","step":"claim"}`},
		{"proposal value", `{"assistantText":"Good.","step":"claim","confidence":0.9,"proposedUpdate":{"field":"claim","value":"` + long(8001) + `","rationale":"r"}}`},
		{"proposal rationale", `{"assistantText":"Good.","step":"claim","confidence":0.9,"proposedUpdate":{"field":"claim","value":"v","rationale":"` + long(4001) + `"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := begin(t, State{Step: StepClaim, Draft: map[string]string{StepClaim: "Cities should ban cars."}, Turns: map[string]int{StepClaim: 2}}, "please rewrite it")
			feed(t, tr, chunks(tt.raw, 512))
			out, err := tr.Finish()
			var ce *coach.Error
			if !errors.As(err, &ce) || ce.Code != coach.CodeValidationFailed || out != nil {
				t.Errorf("Finish = %v, %v; want %s and no outcome", out, err, coach.CodeValidationFailed)
			}
		})
	}
	tr := begin(t, State{Step: StepClaim}, "hi")
	feed(t, tr, chunks(`{"assistantText":"`+long(8000)+`","step":"claim"}`, 512))
	if _, err := tr.Finish(); err != nil {
		t.Errorf("8000 characters of assistantText: %v, want it accepted", err)
	}
}
