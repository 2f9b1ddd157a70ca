package toulmin

import "testing"

// BenchmarkGuardsAndSchema measures what the end of a turn costs: parsing one complete
// CoachAIResult, then every guard rule including the schema validation.
func BenchmarkGuardsAndSchema(b *testing.B) {
	raw := []byte(`{"assistantText":"Your claim is clear and debatable. It names who should act and what they should do, which makes it easy to support.","step":"claim","confidence":0.85,"proposedUpdate":{"field":"claim","value":"Cities should close their centres to private cars by 2030.","rationale":"more specific"},"nextQuestion":"Which evidence will you use?","shouldAdvance":true,"nextStep":"grounds"}`)
	c := Context{Step: StepClaim, Draft: map[string]string{}, FirstTurn: false}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		r, _, err := parseResult(raw)
		if err != nil {
			b.Fatal(err)
		}
		ctx := c
		if _, err := guard(r, &ctx); err != nil {
			b.Fatal(err)
		}
	}
}
