package module

import (
	"slices"
	"strings"
)

// Registry holds the loaded modules by id. It is immutable and safe for concurrent use.
type Registry struct {
	byID map[string]*Module
	list []*Module
}

// Summary is a module as GET /v1/modules lists it.
type Summary struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Sections int    `json:"sections"`
	Topics   int    `json:"topics"`
}

// NewRegistry returns a registry of mods. Two modules with the same id are an error naming the
// second one's file.
func NewRegistry(mods ...*Module) (*Registry, error) {
	if err := checkUnique(mods); err != nil {
		return nil, err
	}
	r := &Registry{byID: make(map[string]*Module, len(mods)), list: slices.Clone(mods)}
	slices.SortFunc(r.list, func(a, b *Module) int { return strings.Compare(a.ID, b.ID) })
	for _, m := range mods {
		r.byID[m.ID] = m
	}
	return r, nil
}

// LoadRegistry returns a registry of the built-in modules plus, when dir is not empty, the
// module files in dir (see LoadDir). A file whose module id equals a built-in one is an error.
func LoadRegistry(dir string) (*Registry, error) {
	mods := Builtin()
	if dir != "" {
		more, err := LoadDir(dir)
		if err != nil {
			return nil, err
		}
		mods = append(mods, more...)
	}
	return NewRegistry(mods...)
}

// Get returns the module with id.
func (r *Registry) Get(id string) (*Module, bool) {
	m, ok := r.byID[id]
	return m, ok
}

// Modules returns the modules ordered by id. The slice must not be modified.
func (r *Registry) Modules() []*Module { return r.list }

// List returns a summary of every module, ordered by id.
func (r *Registry) List() []Summary {
	out := make([]Summary, len(r.list))
	for i, m := range r.list {
		out[i] = Summary{ID: m.ID, Title: m.Title, Sections: len(m.Sections), Topics: len(m.topics)}
	}
	return out
}
