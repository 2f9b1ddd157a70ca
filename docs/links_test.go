package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestRelativeLinks checks every relative link of the README, the pages in docs/ and
// BENCHMARKS.md (and the client's and the example's READMEs, which the front-end guide leans on): the file or directory
// it names exists, and an anchor into a Markdown file names one of its headings or an explicit
// <a id>. A page that moves, or a heading that is renamed, then breaks this test, not a reader.
func TestRelativeLinks(t *testing.T) {
	// bench/notes.md is not a page: coachbench splices it into BENCHMARKS.md, where its links
	// are checked.
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md", "../BENCHMARKS.md", "../clients/js/README.md", "../examples/vue-chat/README.md")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = headingAnchors(string(text))
		return anchors[path]
	}
	checked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(text)) {
			target, anchor, _ := strings.Cut(l.target, "#")
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", page, l.line, l.target, file)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading or <a id> %q", page, l.line, l.target, file, anchor)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d links: the scan is broken", checked)
	}
}

// link is one relative Markdown link: its target and the line it is on.
type link struct {
	target string
	line   int
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan  = regexp.MustCompile("`[^`]*`")
	explicitA = regexp.MustCompile(`<a id="([^"]+)">`)
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// links returns the relative links of a Markdown text, outside code fences and code spans.
func links(text string) []link {
	var out []link
	fence := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{target: target, line: i + 1})
		}
	}
	return out
}

// headingAnchors returns the anchors a Markdown text offers, as GitHub renders it: each heading's
// slug (lowercased, punctuation dropped, spaces as hyphens, "-1", "-2"… for repeats) and each
// explicit <a id>.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range explicitA.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		heading := strings.TrimLeft(line, "#")
		if len(heading) == len(line) || !strings.HasPrefix(heading, " ") {
			continue
		}
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), ""), " ", "-")
		unique := slug
		for n := 1; anchors[unique]; n++ {
			unique = slug + "-" + strconv.Itoa(n)
		}
		anchors[unique] = true
	}
	return anchors
}
