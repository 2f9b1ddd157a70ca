package cards

import (
	"testing"

	"github.com/coachgw/coachgw/internal/schema"
)

// wantFrontendCard fails t unless raw follows api/schemas/card.json. The tests that make cards
// (normalized model output, the level_up prelude, the fallback) call it on each of them.
func wantFrontendCard(t *testing.T, raw []byte) {
	t.Helper()
	doc, err := schema.Decode(raw)
	if err == nil {
		err = frontendCard.Validate(doc)
	}
	if err != nil {
		t.Errorf("card %s does not follow api/schemas/card.json: %v", raw, err)
	}
}

// TestCardSchema checks that api/schemas/card.json takes the cards the gateway makes, of every
// type, and refuses what no client should have to handle: display_card's own shape, unknown
// types, members of another type, and cards the seed's validateCard rejects.
func TestCardSchema(t *testing.T) {
	wantFrontendCard(t, mustJSON(fallbackCard()))
	for _, c := range []Card{*scenarioCard, *insightCard, *promptCard, *reflectCard, *choiceCard, *levelUpCard} {
		wantFrontendCard(t, mustJSON(c))
	}
	refused := []struct{ name, card string }{
		{"display_card's arguments", `{"card_type":"insight","content":"Good."}`},
		{"unknown type", `{"type":"banner","content":"Hi."}`},
		{"no type", `{"content":"Hi."}`},
		{"empty content", `{"type":"scenario","content":""}`},
		{"prompt without input", `{"type":"prompt","content":"Say it."}`},
		{"input_config instead of input", `{"type":"prompt","content":"Say it.","input_config":{"max_length":5}}`},
		{"zero max_length", `{"type":"reflection","content":"Why?","input":{"type":"text","max_length":0,"placeholder":""}}`},
		{"options on an insight", `{"type":"insight","content":"Good.","options":[{"id":"a","label":"A"}]}`},
		{"no options", `{"type":"multiple_choice","content":"Pick.","options":[]}`},
		{"option without a label", `{"type":"multiple_choice","content":"Pick.","options":[{"id":"a","label":""}]}`},
		{"level_up without a level", `{"type":"level_up","new_level":0,"message":"Up."}`},
		{"level_up with content", `{"type":"level_up","new_level":2,"message":"Up.","content":"x"}`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := schema.Decode([]byte(tt.card))
			if err != nil {
				t.Fatal(err)
			}
			if frontendCard.Validate(doc) == nil {
				t.Errorf("card.json takes %s", tt.card)
			}
		})
	}
}
