package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// settingName is the form of a variable the gateway is configured by.
var settingName = regexp.MustCompile(`^(COACH|OPENAI|REDIS)_[A-Z0-9_]+$`)

// TestSettingsTableInDocs holds the settings table of docs/configuration.md to the code: every
// COACH_*, OPENAI_* and REDIS_* variable this package reads (a string literal of that form in its
// non-test sources, which is how Load names what it reads) has a row, and every such variable in
// the table is read, so an operator's one table can neither miss a setting nor list a dead one.
func TestSettingsTableInDocs(t *testing.T) {
	read := settingsRead(t)
	if len(read) < 40 {
		t.Fatalf("found only %d settings in the sources (%v): the scan is broken", len(read), read)
	}
	documented := settingsDocumented(t, "../../docs/configuration.md")
	for _, name := range read {
		if !slices.Contains(documented, name) {
			t.Errorf("%s is read by internal/config but has no row in docs/configuration.md's settings table", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(read, name) {
			t.Errorf("docs/configuration.md's settings table has a row for %s, which internal/config does not read", name)
		}
	}
}

// settingsRead returns the sorted setting names that appear as string literals in the package's
// non-test Go files.
func settingsRead(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && settingName.MatchString(s) && !slices.Contains(names, s) {
				names = append(names, s)
			}
			return true
		})
	}
	slices.Sort(names)
	return names
}

// settingsDocumented returns the setting names in the first column of the settings table of the
// page at path: the table under the heading "## Settings", whose rows name one variable, or two
// joined by " / ", in backquotes.
func settingsDocumented(t *testing.T, path string) []string {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## Settings\n")
	if !ok {
		t.Fatalf("%s has no heading \"## Settings\"", path)
	}
	const header = "| variable | default | meaning |"
	_, table, ok := strings.Cut(section, header)
	if !ok {
		t.Fatalf("%s's settings section has no table starting %q", path, header)
	}
	code := regexp.MustCompile("`([^`]+)`")
	var names []string
	for i, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break // the table's end
		}
		if i == 0 {
			continue // |---|---|---|
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("settings row %q has too few cells", line)
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			if settingName.MatchString(m[1]) {
				if slices.Contains(names, m[1]) {
					t.Errorf("%s has two rows in %s's settings table", m[1], path)
				}
				names = append(names, m[1])
			}
		}
	}
	slices.Sort(names)
	return names
}
