// Package replay owns the reasoning of the embedded replay model: given the chat messages a
// contract sends, it produces a believable, schema-valid answer, deterministically. It is what a
// gateway started with no model endpoint talks to, what end-to-end browser tests drive and what
// benchmarks stream, so its answers must pass the same guards as a real model's.
//
// The model reads the "## Session facts" block that ends the first system message (one
// "key: value" per line) and the learner's last message; earlier user messages only where the
// facts leave something implicit: the text a Toulmin confirmation accepts when there is no draft,
// and which half of a cards cycle an insight closed. Answers are built as ordered JSON so that
// the field a contract streams (assistantText, a card's content, text_blocks[i].content, each
// block's type before it) arrives first, as a well-prompted model would write it.
//
// Variation comes from an FNV hash of the learner's message, never from randomness: the same
// conversation always gets the same answer.
package replay

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message is one chat message as the contract sent it.
type Message struct{ Role, Content string }

// Answer is the model's reply: Content for contracts that expect JSON (or text) in the message
// content, ToolName and ToolArgs for a tool call.
type Answer struct {
	Content  string
	ToolName string
	ToolArgs string
}

// Generic is the reply to a conversation no script covers: short and deliberately free of JSON,
// so a contract expecting JSON sees plainly unusable output rather than a plausible fake.
const Generic = "I am the replay model; no script for this conversation."

// cardTool is the tool the cards contract forces.
const cardTool = "display_card"

// correctionPrefix starts the message the engine appends when it retries a turn whose output it
// could not use; the learner's real message is the user message before it.
const correctionPrefix = "Your previous reply could not be used"

// Respond answers msgs. forcedTool is the name of the function the request forces the model to
// call, or empty. When a tool is forced the answer is a call to it (a JSON answer travels in its
// arguments); otherwise JSON answers travel in Content.
func Respond(msgs []Message, forcedTool string) Answer {
	c := newConv(msgs)
	var payload []byte
	switch contract := c.fact("contract"); {
	case contract == "toulmin":
		payload = marshal(toulmin(c))
	case contract == "cards" || contract == "" && forcedTool == cardTool:
		payload = marshal(cards(c))
		if forcedTool == "" {
			forcedTool = cardTool
		}
	case contract == "module":
		payload = marshal(module(c))
	default:
		return Answer{Content: Generic}
	}
	if forcedTool != "" {
		return Answer{ToolName: forcedTool, ToolArgs: string(payload)}
	}
	return Answer{Content: string(payload)}
}

// conv is the conversation as the scripts see it.
type conv struct {
	facts map[string]string
	// users holds the learner's messages, oldest first, without the engine's corrections; the
	// last one is the message being answered.
	users []string
}

func newConv(msgs []Message) *conv {
	c := &conv{}
	for _, m := range msgs {
		if m.Role == "system" {
			if c.facts == nil {
				c.facts = parseFacts(m.Content)
			}
			continue
		}
		if m.Role == "user" && !strings.HasPrefix(m.Content, correctionPrefix) {
			c.users = append(c.users, m.Content)
		}
	}
	if c.facts == nil {
		c.facts = map[string]string{}
	}
	return c
}

// fact returns the value of key, or "" when the prompt did not state it.
func (c *conv) fact(key string) string { return c.facts[key] }

// has reports whether the prompt stated key at all, even with an empty value.
func (c *conv) has(key string) bool {
	_, ok := c.facts[key]
	return ok
}

// flag returns a true|false fact, def when it is missing or unreadable.
func (c *conv) flag(key string, def bool) bool {
	switch strings.ToLower(c.fact(key)) {
	case "true":
		return true
	case "false":
		return false
	}
	return def
}

// last returns the message being answered.
func (c *conv) last() string {
	if len(c.users) == 0 {
		return ""
	}
	return c.users[len(c.users)-1]
}

// before returns the user message n places before the last one, or "".
func (c *conv) before(n int) string {
	i := len(c.users) - 1 - n
	if i < 0 || i >= len(c.users) {
		return ""
	}
	return c.users[i]
}

// locale returns "es" or "en".
func (c *conv) locale() string {
	if strings.HasPrefix(strings.ToLower(c.fact("locale")), "es") {
		return "es"
	}
	return "en"
}

// seed returns the variation seed of this turn: a hash of the learner's message and salt.
func (c *conv) seed(salt string) uint64 { return hash(c.last() + "\x00" + salt) }

const factsHeading = "## Session facts"

// parseFacts reads the key: value lines after the last "## Session facts" heading of a system
// prompt. Lines that are not a lower-case key followed by a colon are ignored, so stray prose
// cannot smuggle in a fact.
func parseFacts(system string) map[string]string {
	i := strings.LastIndex(system, factsHeading)
	if i < 0 {
		return nil
	}
	facts := map[string]string{}
	for _, line := range strings.Split(system[i+len(factsHeading):], "\n") {
		key, value, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || !isKey(key) {
			continue
		}
		value = strings.TrimSpace(value)
		// Learner text is quoted as a JSON string (coach.QuoteLearnerText).
		var text string
		if strings.HasPrefix(value, `"`) && json.Unmarshal([]byte(value), &text) == nil {
			value = text
		}
		facts[key] = value
	}
	return facts
}

func isKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// pick returns one of options chosen by seed.
func pick(seed uint64, options ...string) string { return options[seed%uint64(len(options))] }

// field is one member of an object.
type field struct {
	key   string
	value any
}

// object is a JSON object that keeps its members in order: contracts stream the first members
// while the rest is still being generated, so the order is part of the answer's quality.
type object []field

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := encode(f.key)
		if err != nil {
			return nil, err
		}
		v, err := encode(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode marshals v without escaping <, > and &, which a model would not escape either.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// marshal encodes an answer built from objects, slices, strings, numbers and booleans, which
// cannot fail.
func marshal(o object) []byte {
	b, err := encode(o)
	if err != nil {
		panic("replay: " + err.Error())
	}
	return b
}

// words splits s into its words.
func words(s string) []string { return strings.Fields(s) }

// snippet returns the start of s for quoting inside a sentence: its first sentence, at most n
// words, without closing punctuation, with "…" when something was cut.
func snippet(s string, n int) string {
	s = strings.Join(words(s), " ")
	cut := false
	if i := strings.IndexAny(s, ".!?\n"); i >= 0 && i < len(s)-1 {
		s, cut = s[:i], true
	}
	s = strings.TrimRight(s, ".!?,;: ")
	if w := words(s); len(w) > n {
		s, cut = strings.Join(w[:n], " "), true
	}
	s = strings.Trim(s, "\"'«»“”")
	if cut {
		s += "…"
	}
	return s
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// uncapitalize lower-cases the first letter of s unless the first word looks like a name, an
// acronym or "I", so that s can follow a prefix such as "Unless ".
func uncapitalize(s string) string {
	first, _, _ := strings.Cut(s, " ")
	if first == "I" || strings.HasPrefix(first, "I'") {
		return s
	}
	upper := 0
	for _, r := range first {
		if unicode.IsUpper(r) {
			upper++
		}
	}
	if upper > 1 {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// hasWord reports whether any of phrases occurs in s as whole words, ignoring case.
func hasWord(s string, phrases ...string) bool {
	norm := " " + strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}), " ") + " "
	for _, p := range phrases {
		if strings.Contains(norm, " "+p+" ") {
			return true
		}
	}
	return false
}
