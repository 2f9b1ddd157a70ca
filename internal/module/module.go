// Package module owns the gateway's learning modules and the "module" contract that teaches
// them: module files (data, validated against api/schemas/module.json) and their registry, the
// server-side progress tracking (topic coverage by keywords, form answers and the model's own
// reports; milestones), the learner's form answers, and the model's structured responses
// (api/schemas/structured-response.json), which it streams block by block, validates, falls
// back from or migrates, and stamps with the server's progress figures.
package module

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/coachgw/coachgw/internal/schema"
)

// MaxFileSize bounds a module file; anything larger is refused rather than read.
const MaxFileSize = 1 << 20

// Module is one learning module as its file defines it. A loaded Module is immutable and safe
// for concurrent use; it marshals back to the file format (the GET /v1/modules/{id} body).
type Module struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Locale      string    `json:"locale,omitempty"`
	Sections    []Section `json:"sections"`

	source string
	topics []*Topic
	byID   map[string]int
	byName map[string]int
	kw     matcher
}

// Section is a group of topics.
type Section struct {
	ID     string  `json:"id"`
	Title  string  `json:"title"`
	Topics []Topic `json:"topics"`
}

// Topic is one thing the learner should come to understand.
type Topic struct {
	ID       string   `json:"id"`
	Name     Text     `json:"name"`
	Keywords Keywords `json:"keywords"`
}

// Text is a text in every supported language.
type Text struct {
	EN string `json:"en"`
	ES string `json:"es"`
}

// In returns the text in locale, English for any locale but "es".
func (t Text) In(locale string) string {
	if locale == "es" {
		return t.ES
	}
	return t.EN
}

// Keywords are the words that show a topic was covered, per language. Detection always uses both
// languages, since learners mix them.
type Keywords struct {
	EN []string `json:"en"`
	ES []string `json:"es"`
}

// Source names where the module was loaded from: a file path, or "builtin:<name>".
func (m *Module) Source() string { return m.source }

// Topics returns the module's topics in order, across sections. The slice must not be modified.
func (m *Module) Topics() []*Topic { return m.topics }

// TopicCount returns how many topics the module has.
func (m *Module) TopicCount() int { return len(m.topics) }

// Topic returns the topic with id.
func (m *Module) Topic(id string) (*Topic, bool) {
	i, ok := m.byID[id]
	if !ok {
		return nil, false
	}
	return m.topics[i], true
}

// Resolve returns the id of the topic that ref names: its id or its name in either language,
// compared by words (case, accents and punctuation do not matter, so "Fight-Flight Response"
// resolves). ok is false when ref names no topic of this module.
func (m *Module) Resolve(ref string) (id string, ok bool) {
	if i, ok := m.byID[ref]; ok {
		return m.topics[i].ID, true
	}
	if i, ok := m.byName[normal(ref)]; ok {
		return m.topics[i].ID, true
	}
	return "", false
}

// Detect returns the ids of the topics whose keywords occur in text, in module order.
func (m *Module) Detect(text string) []string {
	var ids []string
	for i, hit := range m.kw.match(text) {
		if hit {
			ids = append(ids, m.topics[i].ID)
		}
	}
	return ids
}

// LoadError is a module file that cannot be used; the gateway refuses to start with one.
type LoadError struct {
	// File is the file's path (or "builtin:<name>").
	File string
	Err  error
}

// Error names the file and the problem.
func (e *LoadError) Error() string { return "module file " + e.File + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *LoadError) Unwrap() error { return e.Err }

// moduleSchema is compiled on first use, so that merely importing the package cannot panic.
var moduleSchema = sync.OnceValue(func() *schema.Validator { return schema.Load("module.json") })

// Parse reads one module file's bytes; name (the file's path) is what errors and Source report.
// Beyond the schema it checks what a schema cannot: section and topic ids unique in the module,
// topic names that do not collide with another topic's id or name (the model refers to topics by
// either), and keywords that contain a word and use "*" only as a trailing prefix marker.
func Parse(name string, data []byte) (*Module, error) {
	m, err := parse(data)
	if err != nil {
		return nil, &LoadError{File: name, Err: err}
	}
	m.source = name
	return m, nil
}

func parse(data []byte) (*Module, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: unexpected data after the module object")
	}
	if err := moduleSchema().Validate(doc); err != nil {
		return nil, fmt.Errorf("does not match the module schema: %w", err)
	}
	var m Module
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	if err := m.compile(); err != nil {
		return nil, err
	}
	return &m, nil
}

// compile checks the module's cross-references and builds its lookup tables and keyword matcher.
func (m *Module) compile() error {
	sections := make(map[string]bool)
	m.byID = make(map[string]int)
	m.byName = make(map[string]int)
	for si := range m.Sections {
		s := &m.Sections[si]
		if sections[s.ID] {
			return fmt.Errorf("duplicate section id %q", s.ID)
		}
		sections[s.ID] = true
		for ti := range s.Topics {
			t := &s.Topics[ti]
			if _, dup := m.byID[t.ID]; dup {
				return fmt.Errorf("duplicate topic id %q", t.ID)
			}
			m.byID[t.ID] = len(m.topics)
			m.topics = append(m.topics, t)
		}
	}
	m.kw.topics = len(m.topics)
	for i, t := range m.topics {
		for _, ref := range []string{t.ID, t.Name.EN, t.Name.ES} {
			key := normal(ref)
			if other, taken := m.byName[key]; taken && other != i {
				return fmt.Errorf("topic %q: name %q is also an id or name of topic %q", t.ID, ref, m.topics[other].ID)
			}
			m.byName[key] = i
		}
		for _, lang := range []struct {
			code string
			list []string
		}{{"en", t.Keywords.EN}, {"es", t.Keywords.ES}} {
			for _, raw := range lang.list {
				k, err := compileKeyword(raw, i)
				if err != nil {
					return fmt.Errorf("topic %q: %s %w", t.ID, lang.code, err)
				}
				m.kw.add(k)
			}
		}
	}
	return nil
}

// LoadDir loads every *.json file directly inside dir, in name order. Any unusable file, or two
// files with the same module id, is an error naming the file; nothing is returned then.
func LoadDir(dir string) ([]*Module, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("module directory: %w", err)
	}
	var mods []*Module
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := readFile(path)
		if err != nil {
			return nil, &LoadError{File: path, Err: err}
		}
		m, err := Parse(path, data)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	if err := checkUnique(mods); err != nil {
		return nil, err
	}
	return mods, nil
}

// readFile reads a file of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+1))
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// checkUnique returns an error naming the second of two modules with the same id.
func checkUnique(mods []*Module) error {
	seen := make(map[string]*Module, len(mods))
	for _, m := range mods {
		if first, dup := seen[m.ID]; dup {
			return &LoadError{File: m.source, Err: fmt.Errorf("duplicate module id %q (also in %s)", m.ID, first.source)}
		}
		seen[m.ID] = m
	}
	return nil
}

//go:embed modules/*.json
var builtinFiles embed.FS

var builtin = sync.OnceValue(func() []*Module {
	names, err := fs.Glob(builtinFiles, "modules/*.json")
	if err != nil {
		panic(err)
	}
	sort.Strings(names)
	mods := make([]*Module, 0, len(names))
	for _, name := range names {
		data, err := builtinFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		m, err := Parse("builtin:"+name, data)
		if err != nil {
			panic(err) // a shipped module that does not load is a build defect; tests catch it
		}
		mods = append(mods, m)
	}
	if err := checkUnique(mods); err != nil {
		panic(err)
	}
	return mods
})

// Builtin returns the modules shipped inside the binary (internal/module/modules/*.json).
func Builtin() []*Module { return slices.Clone(builtin()) }
