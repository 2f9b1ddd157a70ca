package module

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// variant returns quarterModule with one change applied to its decoded form.
func variant(t *testing.T, change func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(quarterModule), &m); err != nil {
		t.Fatal(err)
	}
	change(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func topicAt(m map[string]any, s, i int) map[string]any {
	return m["sections"].([]any)[s].(map[string]any)["topics"].([]any)[i].(map[string]any)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"bad JSON", `{"id": "x",`, "invalid JSON"},
		{"not an object", `[1, 2]`, "does not match the module schema"},
		{"data after the object", quarterModule + ` {}`, "unexpected data after the module object"},
		{"missing sections", `{"id": "x", "title": "X", "description": ""}`, "sections"},
		{"module id not matching the pattern", variant(t, func(m map[string]any) { m["id"] = "Quarters" }), "id"},
		{"topic id not matching the pattern", variant(t, func(m map[string]any) { topicAt(m, 0, 0)["id"] = "9panic" }), "topics.0.id"},
		{"unknown member", variant(t, func(m map[string]any) { m["topics"] = []any{} }), "topics"},
		{"unknown locale", variant(t, func(m map[string]any) { m["locale"] = "fr" }), "locale"},
		{"section without topics", variant(t, func(m map[string]any) {
			m["sections"].([]any)[0].(map[string]any)["topics"] = []any{}
		}), "topics"},
		{"duplicate topic id across sections", variant(t, func(m map[string]any) { topicAt(m, 1, 1)["id"] = "panic" }), `duplicate topic id "panic"`},
		{"duplicate section id", variant(t, func(m map[string]any) {
			m["sections"].([]any)[1].(map[string]any)["id"] = "one"
		}), `duplicate section id "one"`},
		{"empty keyword list", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["es"] = []any{}
		}), "keywords.es"},
		{"missing spanish keywords", variant(t, func(m map[string]any) {
			delete(topicAt(m, 0, 1)["keywords"].(map[string]any), "es")
		}), "es"},
		{"empty keyword", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["en"] = []any{""}
		}), "keywords.en.0"},
		{"blank keyword", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["en"] = []any{"   "}
		}), "keywords.en.0"},
		{"keyword without letters", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["en"] = []any{"!!!"}
		}), `keyword "!!!" has no letters or digits`},
		{"star inside a keyword", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["en"] = []any{"an*ger"}
		}), `only allowed at the end`},
		{"star after a short word", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["en"] = []any{"an*"}
		}), "at least 3 letters"},
		{"star after a space", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["keywords"].(map[string]any)["en"] = []any{"anger *"}
		}), "directly follow a word"},
		{"topic name equal to another topic's name", variant(t, func(m map[string]any) {
			topicAt(m, 0, 1)["name"].(map[string]any)["en"] = "PANIC"
		}), `name "PANIC" is also an id or name of topic "panic"`},
		{"topic name equal to another topic's id", variant(t, func(m map[string]any) {
			topicAt(m, 1, 1)["name"].(map[string]any)["es"] = "fight-or-flight"
		}), `is also an id or name of topic "fight_or_flight"`},
		{"blank title", variant(t, func(m map[string]any) { m["title"] = "  " }), "title"},
		{"null title", variant(t, func(m map[string]any) { m["title"] = nil }), "title"},
		{"too large", `{"id":"x","title":"` + strings.Repeat("a", MaxFileSize) + `"}`, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("modules/bad.json", []byte(tt.data))
			if err == nil {
				t.Fatalf("Parse = %v, nil; want an error mentioning %q", m.ID, tt.want)
			}
			var le *LoadError
			if !errors.As(err, &le) || le.File != "modules/bad.json" {
				t.Fatalf("error %v is not a LoadError for modules/bad.json", err)
			}
			contains(t, "error", err.Error(), "module file modules/bad.json: ")
			contains(t, "error", err.Error(), tt.want)
		})
	}
}

func TestParseKeepsDefinition(t *testing.T) {
	m := mustParse(t, quarterModule)
	if m.Source() != "test.json" || m.TopicCount() != 4 || len(m.Sections) != 2 {
		t.Fatalf("got source %q, %d topics, %d sections", m.Source(), m.TopicCount(), len(m.Sections))
	}
	tp, ok := m.Topic("anger")
	if !ok || tp.Name.In("es") != "Ira" || tp.Name.In("en") != "Anger" || !slices.Equal(tp.Keywords.ES, []string{"ira", "enfado"}) {
		t.Errorf("Topic(anger) = %+v, %v", tp, ok)
	}
	// The definition marshals back to an equivalent module file.
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.json", b)
	if err != nil {
		t.Fatalf("re-parse: %v", err)
	}
	if again.TopicCount() != 4 || again.Topics()[3].Keywords.EN[0] != "avoid*" {
		t.Errorf("re-parsed module differs: %s", b)
	}
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadDir(t *testing.T) {
	other := strings.Replace(quarterModule, `"id": "quarters"`, `"id": "other"`, 1)
	t.Run("loads json files in name order", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "b.json", quarterModule)
		writeFile(t, dir, "a.json", other)
		writeFile(t, dir, "notes.txt", "not a module")
		if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		mods, err := LoadDir(dir)
		if err != nil {
			t.Fatalf("LoadDir: %v", err)
		}
		var ids []string
		for _, m := range mods {
			ids = append(ids, m.ID)
		}
		if !slices.Equal(ids, []string{"other", "quarters"}) {
			t.Errorf("ids = %v, want [other quarters]", ids)
		}
		if mods[0].Source() != filepath.Join(dir, "a.json") {
			t.Errorf("Source = %q", mods[0].Source())
		}
	})
	tests := []struct {
		name  string
		files map[string]string
		file  string // the file the error must name
		want  string
	}{
		{"bad JSON", map[string]string{"a.json": other, "b.json": "{nope"}, "b.json", "invalid JSON"},
		{"schema failure", map[string]string{"a.json": `{"id": "x"}`}, "a.json", "does not match the module schema"},
		{"duplicate topic ids", map[string]string{"a.json": strings.Replace(quarterModule, `"id": "anger"`, `"id": "panic"`, 1)}, "a.json", `duplicate topic id "panic"`},
		{"empty keywords", map[string]string{"a.json": strings.Replace(quarterModule, `"es": ["ira", "enfado"]`, `"es": []`, 1)}, "a.json", "keywords.es"},
		{"duplicate module id", map[string]string{"a.json": quarterModule, "b.json": quarterModule}, "b.json", `duplicate module id "quarters" (also in `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.files {
				writeFile(t, dir, name, data)
			}
			mods, err := LoadDir(dir)
			if err == nil {
				t.Fatalf("LoadDir = %d modules, nil; want an error", len(mods))
			}
			var le *LoadError
			if !errors.As(err, &le) || le.File != filepath.Join(dir, tt.file) {
				t.Fatalf("error %v does not name %s", err, tt.file)
			}
			contains(t, "error", err.Error(), tt.want)
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		if _, err := LoadDir(filepath.Join(t.TempDir(), "none")); err == nil {
			t.Error("LoadDir of a missing directory = nil error")
		}
	})
}

func TestRegistry(t *testing.T) {
	reg, err := NewRegistry(append(Builtin(), mustParse(t, quarterModule))...)
	if err != nil {
		t.Fatal(err)
	}
	want := []Summary{
		{ID: "anxiety-basics", Title: "Anxiety Basics", Sections: 6, Topics: Builtin()[0].TopicCount()},
		{ID: "quarters", Title: "Quarters", Sections: 2, Topics: 4},
	}
	if got := reg.List(); !slices.Equal(got, want) {
		t.Errorf("List = %+v, want %+v", got, want)
	}
	b, _ := json.Marshal(reg.List()[1])
	if string(b) != `{"id":"quarters","title":"Quarters","sections":2,"topics":4}` {
		t.Errorf("summary JSON = %s", b)
	}
	if m, ok := reg.Get("quarters"); !ok || m.ID != "quarters" {
		t.Errorf("Get(quarters) = %v, %v", m, ok)
	}
	if _, ok := reg.Get("nope"); ok {
		t.Error("Get(nope) found a module")
	}

	if _, err := NewRegistry(Builtin()[0], Builtin()[0]); err == nil || !strings.Contains(err.Error(), "duplicate module id") {
		t.Errorf("NewRegistry with a duplicate = %v, want a duplicate module id error", err)
	}

	dir := t.TempDir()
	writeFile(t, dir, "q.json", quarterModule)
	reg, err = LoadRegistry(dir)
	if err != nil || len(reg.Modules()) != 2 {
		t.Fatalf("LoadRegistry = %v, %v; want the built-in module and quarters", reg, err)
	}
	clash := strings.Replace(quarterModule, `"id": "quarters"`, `"id": "anxiety-basics"`, 1)
	writeFile(t, dir, "clash.json", clash)
	if _, err := LoadRegistry(dir); err == nil || !strings.Contains(err.Error(), "clash.json: duplicate module id") {
		t.Errorf("LoadRegistry with a clash = %v, want an error naming clash.json", err)
	}
}
