package cards

import (
	"bytes"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

//go:embed prompts/system.tmpl
var promptFiles embed.FS

var systemTemplate = template.Must(template.ParseFS(promptFiles, "prompts/system.tmpl"))

type promptData struct {
	Language        string
	Level, MaxLevel int
	Levels          []string
	LevelUp         bool
}

// systemPrompt renders the system prompt for a turn starting from st and ends it with the
// session facts the design note fixes for cards.
func (c *Contract) systemPrompt(locale string, st state, levelUp bool) string {
	d := promptData{Language: "English", Level: st.Level, MaxLevel: c.cfg.MaxLevel, LevelUp: levelUp}
	if locale == "es" {
		d.Language = "Spanish"
	}
	for n := 1; n <= st.Level; n++ {
		d.Levels = append(d.Levels, c.levelText(n))
	}
	var b bytes.Buffer
	if err := systemTemplate.Execute(&b, d); err != nil {
		panic(fmt.Sprintf("cards: system prompt template: %v", err)) // the embedded template is fixed at build time
	}
	last := "none"
	if st.LastCard != nil {
		last = st.LastCard.Type
	}
	var out strings.Builder
	out.WriteString(strings.TrimRight(b.String(), "\n"))
	out.WriteString("\n\n## Session facts")
	for _, f := range [][2]string{
		{"contract", Name},
		{"locale", locale},
		{"level", strconv.Itoa(st.Level)},
		{"max_level", strconv.Itoa(c.cfg.MaxLevel)},
		{"last_card", last},
		{"cycles_at_level", strconv.Itoa(st.Cycles)},
	} {
		out.WriteString("\n" + f[0] + ": " + oneLine(f[1]))
	}
	return out.String()
}

// oneLine keeps a fact on its line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
