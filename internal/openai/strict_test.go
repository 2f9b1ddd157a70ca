package openai

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/xeipuuv/gojsonschema"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/schema"
)

func TestStrict(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want is compared byte for byte after compaction, so member order is checked too.
		want string
	}{
		{
			name: "toulmin result",
			in:   string(api.Schema("coach-ai-result.json")),
			want: `{
			  "title": "CoachAIResult",
			  "description": "The Toulmin coach's answer for one turn (coach-ai-tool-contract).",
			  "type": "object",
			  "additionalProperties": false,
			  "required": ["assistantText","step","confidence","proposedUpdate","nextQuestion","shouldAdvance","nextStep","isComplete"],
			  "properties": {
			    "assistantText": {"type": "string", "description": "The tutor's response message (2-3 sentences max)."},
			    "step": {"$ref": "#/definitions/toulminStep"},
			    "confidence": {"type": ["number","null"], "description": "Confidence 0-1 that the current step is complete."},
			    "proposedUpdate": {
			      "type": ["object","null"],
			      "additionalProperties": false,
			      "required": ["field","value","rationale"],
			      "description": "Proposed text for the current step; shown in the ProposedUpdateCard.",
			      "properties": {
			        "field": {"$ref": "#/definitions/toulminStep"},
			        "value": {"type": "string"},
			        "rationale": {"type": "string"}
			      }
			    },
			    "nextQuestion": {"type": ["string","null"], "description": "A guiding question for the user."},
			    "shouldAdvance": {"type": ["boolean","null"], "description": "Whether to advance to the next step."},
			    "nextStep": {"anyOf": [{"$ref": "#/definitions/toulminStep"}, {"type": "null"}]},
			    "isComplete": {"type": ["boolean","null"], "description": "True when all 7 steps are complete."}
			  },
			  "definitions": {
			    "toulminStep": {"type": "string", "enum": ["claim","grounds","warrant","groundsBacking","warrantBacking","qualifier","rebuttal"]}
			  }
			}`,
		},
		{
			name: "nested objects get required and additionalProperties at every level",
			in: `{"type":"object","properties":{
			  "a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"integer","minimum":1}},"required":["c"]}}}},
			  "required":["a"]}`,
			want: `{"type":"object","properties":{
			  "a":{"type":"object","properties":{"b":{"type":["object","null"],"properties":{"c":{"type":"integer"}},"required":["c"],"additionalProperties":false}},"additionalProperties":false,"required":["b"]}},
			  "required":["a"],"additionalProperties":false}`,
		},
		{
			name: "arrays: items made strict, optional array nullable, validation keywords dropped",
			in: `{"type":"object","properties":{
			  "tags":{"type":"array","items":{"type":"string","maxLength":20},"minItems":1,"uniqueItems":true},
			  "blocks":{"type":"array","items":{"type":"object","properties":{"kind":{"type":"string"},"text":{"type":"string"}},"required":["kind"]}}},
			  "required":["blocks"]}`,
			want: `{"type":"object","properties":{
			  "tags":{"type":["array","null"],"items":{"type":"string"}},
			  "blocks":{"type":"array","items":{"type":"object","properties":{"kind":{"type":"string"},"text":{"type":["string","null"]}},"required":["kind","text"],"additionalProperties":false}}},
			  "required":["tags","blocks"],"additionalProperties":false}`,
		},
		{
			name: "refs: optional refs wrapped with the description outside, $defs made strict",
			in: `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","type":"object",
			  "properties":{
			    "main":{"$ref":"#/$defs/point"},
			    "extra":{"$ref":"#/$defs/point","description":"Optional point."},
			    "self":{"$ref":"#"}},
			  "required":["main"],
			  "$defs":{"point":{"type":"object","properties":{"x":{"type":"number","default":0},"label":{"type":"string","format":"uri"}},"required":["x"]}}}`,
			want: `{"type":"object",
			  "properties":{
			    "main":{"$ref":"#/$defs/point"},
			    "extra":{"anyOf":[{"$ref":"#/$defs/point"},{"type":"null"}],"description":"Optional point."},
			    "self":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
			  "required":["main","extra","self"],
			  "$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"label":{"type":["string","null"]}},"required":["x","label"],"additionalProperties":false}},
			  "additionalProperties":false}`,
		},
		{
			name: "enums: optional typed enum gets null in type and enum, untyped enum in enum only",
			in: `{"type":"object","properties":{
			  "level":{"type":"string","enum":["low","high"]},
			  "size":{"enum":[1,2,3]},
			  "kind":{"type":"string","enum":["a","b"]},
			  "maybe":{"type":["string","null"],"enum":["x",null]}},
			  "required":["kind"]}`,
			want: `{"type":"object","properties":{
			  "level":{"type":["string","null"],"enum":["low","high",null]},
			  "size":{"enum":[1,2,3,null]},
			  "kind":{"type":"string","enum":["a","b"]},
			  "maybe":{"type":["string","null"],"enum":["x",null]}},
			  "required":["level","size","kind","maybe"],"additionalProperties":false}`,
		},
		{
			name: "anyOf and oneOf: branches made strict, null branch added once",
			in: `{"type":"object","properties":{
			  "v":{"anyOf":[{"type":"string"},{"type":"object","properties":{"n":{"type":"number"}}}]},
			  "w":{"oneOf":[{"type":"string"},{"type":"null"}]},
			  "c":{"const":"fixed","description":"A constant."}},
			  "required":[]}`,
			want: `{"type":"object","properties":{
			  "v":{"anyOf":[{"type":"string"},{"type":"object","properties":{"n":{"type":["number","null"]}},"additionalProperties":false,"required":["n"]},{"type":"null"}]},
			  "w":{"anyOf":[{"type":"string"},{"type":"null"}]},
			  "c":{"anyOf":[{"const":"fixed"},{"type":"null"}],"description":"A constant."}},
			  "required":["v","w","c"],"additionalProperties":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Strict([]byte(tt.in))
			if err != nil {
				t.Fatalf("Strict: %v", err)
			}
			if want := compact(t, tt.want); string(got) != want {
				t.Errorf("Strict =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestStrictRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// notStrict says the error must wrap ErrNotStrict (fall back); otherwise it must not.
		notStrict bool
	}{
		{"free-form object", `{"type":"object","properties":{"meta":{"type":"object"}}}`, true},
		{"free-form object with additionalProperties true", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, true},
		{"map-like object", `{"type":"object","properties":{"m":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}}}`, true},
		{"property of any type", `{"type":"object","properties":{"a":{"description":"anything"}}}`, true},
		{"boolean schema", `{"type":"object","properties":{"a":true}}`, true},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array"}}}`, true},
		{"tuple items", `{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`, true},
		{"allOf", `{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]}}}`, true},
		{"patternProperties", `{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x":{"type":"string"}}}`, true},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, true},
		{"root is not an object", `{"type":"array","items":{"type":"string"}}`, true},
		{"root is anyOf", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}}]}`, true},
		{"invalid JSON", `{"type":"object",`, false},
		{"trailing data", `{"type":"object","properties":{"a":{"type":"string"}}} {}`, false},
		{"dangling ref", `{"type":"object","properties":{"a":{"$ref":"#/definitions/missing"}}}`, false},
		{"required not a list", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Strict([]byte(tt.in))
			if err == nil {
				t.Fatalf("Strict = %s, want an error", got)
			}
			if errors.Is(err, ErrNotStrict) != tt.notStrict {
				t.Errorf("errors.Is(%v, ErrNotStrict) = %v, want %v", err, !tt.notStrict, tt.notStrict)
			}
		})
	}
}

// TestStrictRoundTrip checks what strict mode relies on: a strict answer (nulls for absent
// fields) validates against the strict schema, and after schema.StripNulls against the original.
func TestStrictRoundTrip(t *testing.T) {
	original := api.Schema("coach-ai-result.json")
	strict, err := Strict(original)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, doc string
	}{
		{"all optional fields null", `{"assistantText":"Hi.","step":"claim","confidence":null,"proposedUpdate":null,
			"nextQuestion":null,"shouldAdvance":null,"nextStep":null,"isComplete":null}`},
		{"all fields set", `{"assistantText":"Hi.","step":"claim","confidence":0.9,
			"proposedUpdate":{"field":"claim","value":"Cats rule.","rationale":"Clear."},
			"nextQuestion":"Why?","shouldAdvance":true,"nextStep":"grounds","isComplete":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validate(t, strict, tt.doc); err != nil {
				t.Errorf("strict schema rejects the answer: %v", err)
			}
			doc, err := schema.Decode([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			stripped, _ := json.Marshal(schema.StripNulls(doc))
			if err := validate(t, original, string(stripped)); err != nil {
				t.Errorf("original schema rejects the answer without nulls: %v", err)
			}
		})
	}
	t.Run("strict schema still rejects a missing field", func(t *testing.T) {
		if err := validate(t, strict, `{"assistantText":"Hi.","step":"claim"}`); err == nil {
			t.Error("got valid, want missing fields reported")
		}
	})
}

func validate(t *testing.T, schemaJSON []byte, doc string) error {
	t.Helper()
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schemaJSON), gojsonschema.NewStringLoader(doc))
	if err != nil {
		t.Fatalf("validating: %v", err)
	}
	if !res.Valid() {
		return errors.New(res.Errors()[0].String())
	}
	return nil
}
