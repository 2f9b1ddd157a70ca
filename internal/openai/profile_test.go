package openai

import "testing"

// TestProfileTable holds the profile table to the rules its comments give: a profile whose
// endpoint sends tool arguments whole asks for cards as structured output, so that a card's
// text still streams; generic, for endpoints nothing is known about, is the weakest in every
// setting; and the profile without a name is the behaviour from before profiles.
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
	if g.ToolChoice != ToolNone || g.Format != FormatPrompt || g.IncludeUsage {
		t.Errorf("generic = %+v, want the weakest form of every setting", g)
	}
	cfg := Config{Format: FormatJSONObject}
	if sh, err := cfg.resolve(); err != nil || sh != (shape{tool: ToolNamed, format: FormatJSONObject}) {
		t.Errorf("no profile resolves to %+v, %v; want a named tool, the Config's Format and no usage", sh, err)
	}
}
