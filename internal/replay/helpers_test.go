package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/xeipuuv/gojsonschema"
)

// system returns a system prompt ending with a session facts block of the given key, value pairs.
func system(kv ...string) Message {
	var b strings.Builder
	b.WriteString("You are a coach. Follow the rules.\n\n## Output\nReply with JSON.\n\n## Session facts")
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString("\n" + kv[i] + ": " + kv[i+1])
	}
	return Message{Role: "system", Content: b.String()}
}

var (
	schemaMu sync.Mutex
	schemas  = map[string]*gojsonschema.Schema{}
)

// loadSchema compiles the gateway's published schema name, or the seed copy in testdata while
// the published one does not exist yet.
func loadSchema(t *testing.T, name, fallback string) *gojsonschema.Schema {
	t.Helper()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemas[name]; ok {
		return s
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "api", "schemas", name))
	if err != nil {
		raw, err = os.ReadFile(filepath.Join("testdata", fallback))
	}
	if err != nil {
		t.Fatalf("reading schema %s: %v", name, err)
	}
	s, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(raw))
	if err != nil {
		t.Fatalf("compiling schema %s: %v", name, err)
	}
	schemas[name] = s
	return s
}

// validate checks doc against schema name and returns the decoded document.
func validate(t *testing.T, name, fallback, doc string) map[string]any {
	t.Helper()
	res, err := loadSchema(t, name, fallback).Validate(gojsonschema.NewStringLoader(doc))
	if err != nil {
		t.Fatalf("validating %s: %v\n%s", name, err, doc)
	}
	if !res.Valid() {
		t.Fatalf("answer is not valid against %s: %v\n%s", name, res.Errors(), doc)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("decoding answer: %v", err)
	}
	return m
}

// sentences counts the sentences of s by their closing punctuation.
func sentences(s string) int {
	n := 0
	for i, r := range s {
		if r == '.' || r == '!' || r == '?' {
			if i+1 == len(s) || s[i+1] == ' ' {
				n++
			}
		}
	}
	return n
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
