package module

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/schema"
)

// examples returns the seed's example responses (testdata/examples, copied verbatim).
func examples(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/examples/*.json")
	if err != nil || len(files) != 4 {
		t.Fatalf("want the seed's 4 examples in testdata/examples, got %v (%v)", files, err)
	}
	out := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

func TestSeedExamplesValidate(t *testing.T) {
	for name, raw := range examples(t) {
		t.Run(name, func(t *testing.T) {
			doc, err := schema.Decode(raw)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if err := responseSchema().Validate(schema.StripNulls(doc)); err != nil {
				t.Errorf("Validate = %v, want nil", err)
			}
		})
	}
}

func TestSchemaRejectsBrokenResponses(t *testing.T) {
	base := examples(t)["educational-with-form.json"]
	tests := []struct {
		name   string
		change func(doc map[string]any)
		want   string
	}{
		{"wrong block type", func(d map[string]any) { blockAt(d, 0)["type"] = "bullet" }, "text_blocks.0.type"},
		{"heading level 7", func(d map[string]any) { blockAt(d, 0)["level"] = 7 }, "text_blocks.0.level"},
		{"heading level 0", func(d map[string]any) { blockAt(d, 0)["level"] = 0 }, "text_blocks.0.level"},
		{"block without content", func(d map[string]any) { delete(blockAt(d, 1), "content") }, "content"},
		{"form field id not snake_case", func(d map[string]any) { field(d)["id"] = "PrimaryLevel" }, "fields.0.id"},
		{"form field id with a dash", func(d map[string]any) { field(d)["id"] = "primary-level" }, "fields.0.id"},
		{"form field of unknown type", func(d map[string]any) { field(d)["type"] = "slider" }, "fields.0.type"},
		{"missing meta.response_type", func(d map[string]any) { delete(d["meta"].(map[string]any), "response_type") }, "response_type"},
		{"unknown response_type", func(d map[string]any) { d["meta"].(map[string]any)["response_type"] = "lecture" }, "response_type"},
		{"bad milestone", func(d map[string]any) { progress(d)["milestone"] = "33%" }, "milestone"},
		{"null milestone (before StripNulls)", func(d map[string]any) { progress(d)["milestone"] = nil }, "milestone"},
		{"percentage over 100", func(d map[string]any) { progress(d)["percentage"] = 120 }, "percentage"},
		{"missing meta", func(d map[string]any) { delete(d, "meta") }, "meta"},
		{"missing text_blocks", func(d map[string]any) { delete(d["content"].(map[string]any), "text_blocks") }, "text_blocks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(base, &doc); err != nil {
				t.Fatal(err)
			}
			progress(doc)["milestone"] = "25%" // the seed's null, which the schema rejects
			tt.change(doc)
			err := responseSchema().Validate(doc)
			if err == nil {
				t.Fatalf("Validate = nil, want an error mentioning %q", tt.want)
			}
			contains(t, "error", err.Error(), tt.want)
		})
	}
}

func blockAt(d map[string]any, i int) map[string]any {
	return d["content"].(map[string]any)["text_blocks"].([]any)[i].(map[string]any)
}

func field(d map[string]any) map[string]any {
	form := d["content"].(map[string]any)["forms"].([]any)[0].(map[string]any)
	return form["fields"].([]any)[0].(map[string]any)
}

func progress(d map[string]any) map[string]any {
	return d["meta"].(map[string]any)["progress"].(map[string]any)
}

func TestStructuredResponseSchemaIsTheSeeds(t *testing.T) {
	// The file is the seed's RESPONSE_SCHEMA verbatim; these spot checks catch an accidental edit.
	raw := string(api.Schema("structured-response.json"))
	for _, want := range []string{
		`"$schema": "http://json-schema.org/draft-07/schema#"`,
		`"enum": ["paragraph", "heading", "list", "quote", "info", "warning", "success", "tip"]`,
		`"pattern": "^[a-z][a-z0-9_]*$"`,
		`"enum": ["25%", "50%", "75%", "100%"]`,
	} {
		contains(t, "structured-response.json", raw, want)
	}
	if strings.Contains(raw, `"$id"`) {
		t.Errorf("structured-response.json has an $id the seed does not have")
	}
}

func TestShippedModule(t *testing.T) {
	mods := Builtin()
	if len(mods) != 1 {
		t.Fatalf("Builtin() has %d modules, want 1", len(mods))
	}
	m := mods[0]
	if m.ID != "anxiety-basics" {
		t.Errorf("id = %q, want anxiety-basics", m.ID)
	}
	if len(m.Sections) != 6 {
		t.Errorf("sections = %d, want 6", len(m.Sections))
	}
	if m.TopicCount() < 20 {
		t.Errorf("topics = %d, want at least 20", m.TopicCount())
	}
	// The file validates against module.json on its own, not only through Parse.
	doc, err := schema.Decode(mustRead(t, "modules/anxiety-basics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Load("module.json").Validate(doc); err != nil {
		t.Errorf("module.json validation: %v", err)
	}
	// The seed's examples name topics by name; they must resolve to this module's topics.
	for _, name := range []string{"Introduction to Anxiety", "Three Levels Overview", "Physical Level", "Fight-Flight Response"} {
		if _, ok := m.Resolve(name); !ok {
			t.Errorf("Resolve(%q) failed", name)
		}
	}
	// Every keyword finds its own topic, in both languages.
	for _, tp := range m.Topics() {
		for _, kw := range append(append([]string{}, tp.Keywords.EN...), tp.Keywords.ES...) {
			text := "I was reading about " + strings.TrimSuffix(kw, "*") + " today."
			if got := m.Detect(text); !containsID(got, tp.ID) {
				t.Errorf("Detect(%q) = %v, want it to include %s", text, got, tp.ID)
			}
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestOutputRuleIsVerbatim(t *testing.T) {
	lines := strings.Split(strings.TrimRight(outputRule, "\n"), "\n")
	if lines[0] != "## CRITICAL OUTPUT RULE" {
		t.Errorf("first line = %q", lines[0])
	}
	if last := lines[len(lines)-1]; last != "- Do not break the schema structure" {
		t.Errorf("last line = %q", last)
	}
	for _, h := range []string{"## INTERACTION MODEL", "## STRUCTURE RULES", "## FORM RULES", "## PROGRESS TRACKING", "## TONE", "## FAILURE CONDITIONS (NEVER DO)"} {
		contains(t, "output rule", outputRule, "\n"+h+"\n")
	}
}
