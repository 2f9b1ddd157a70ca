package openai

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestProfileTable holds the profile table to the rules its comments give: a profile whose
// endpoint sends tool arguments whole asks for cards as structured output, so that a card's
// text still streams; generic, for endpoints nothing is known about, is the weakest in every
// setting but usage; and the profile without a name is the behaviour from before profiles.
func TestProfileTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Profiles() {
		if seen[p.Name] || p.Name == DefaultProfile {
			t.Errorf("profile %q is listed twice or has no name", p.Name)
		}
		seen[p.Name] = true
		if !p.StreamsToolArgs && p.ToolChoice != ToolNone {
			t.Errorf("%s: tool arguments arrive whole, but cards are asked for as a %s tool call, whose text could not stream", p.Name, p.ToolChoice)
		}
		if got, ok := LookupProfile(p.Name); !ok || got != p {
			t.Errorf("LookupProfile(%q) = %+v, %v", p.Name, got, ok)
		}
	}
	for _, name := range []string{"openai", "anthropic-openai", "gemini-openai", "ollama", "vllm", "llamacpp", "lmstudio", "generic"} {
		if !seen[name] {
			t.Errorf("no profile %q", name)
		}
	}
	g, _ := LookupProfile(GenericProfile)
	// Usage is the exception: budgets need it, and an endpoint that refuses it is downgraded.
	if g.ToolChoice != ToolNone || g.Format != FormatPrompt || !g.IncludeUsage {
		t.Errorf("generic = %+v, want the weakest form of every setting but usage, which is asked for", g)
	}
	cfg := Config{Format: FormatJSONObject}
	if sh, err := cfg.resolve(); err != nil || sh != (shape{tool: ToolNamed, format: FormatJSONObject, bounds: BoundNumbers | BoundArrays | BoundPatterns, cap: true}) {
		t.Errorf("no profile resolves to %+v, %v; want a named tool, the Config's Format, no usage and OpenAI's strict bounds", sh, err)
	}
}

// TestProfileTableInDocs holds the table of profiles in docs/configuration.md to the profiles
// themselves: a row for each, with its toolChoice, responseFormat and includeUsage, and no row for
// a profile that does not exist, so the manual cannot drift from what the gateway sends.
func TestProfileTableInDocs(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| profile | `toolChoice` | `responseFormat` | `includeUsage` |"
	_, table, ok := strings.Cut(string(page), header)
	if !ok {
		t.Fatalf("docs/configuration.md has no profile table (a line starting %q)", header)
	}
	rows := map[string][]string{}
	for i, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break // the table's end
		}
		if i == 0 {
			continue // |---|---|…
		}
		// | `name` | `toolChoice` | `responseFormat` | yes/no | cap | parallel_tool_calls |
		// bounds | first byte / idle | tool arguments | source |
		cells := strings.Split(line, "|")
		if len(cells) < 10 {
			t.Fatalf("profile table row %q has too few cells", line)
		}
		cell := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		rows[cell(1)] = []string{cell(2), cell(3), cell(4), cell(5), cell(6), cell(8)}
	}
	for _, p := range Profiles() {
		usage := map[bool]string{true: "yes", false: "no"}[p.IncludeUsage]
		capParam := p.CapParam
		if capParam == "" {
			capParam = CapMaxTokens
		}
		oneCall := map[bool]string{true: "false", false: "not sent"}[p.OneToolCall]
		if p.ToolChoice == ToolNone {
			oneCall = "(no tools)"
		}
		deadlines := "engine's"
		if p.FirstByteTimeout > 0 {
			deadlines = fmt.Sprintf("%.0fs / %.0fs", p.FirstByteTimeout.Seconds(), p.IdleTimeout.Seconds())
		}
		want := []string{p.ToolChoice.String(), p.Format.String(), usage, capParam, oneCall, deadlines}
		got, ok := rows[p.Name]
		if !ok {
			t.Errorf("docs/configuration.md's profile table has no row for %s", p.Name)
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("docs/configuration.md's row for %s says toolChoice, responseFormat, includeUsage, cap, parallel_tool_calls, deadlines = %q, the profile %q", p.Name, got, want)
		}
		delete(rows, p.Name)
	}
	for name := range rows {
		t.Errorf("docs/configuration.md's profile table has a row for %q, which is no profile", name)
	}
}
