package module

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/schema"
)

// Bounds on what a turn echoes into errors and logs.
const (
	maxViolations = 1500 // bytes of schema violations in a validation error
	maxDiagnostic = 4000 // bytes of model output in a diagnostic
	maxIgnored    = 20   // unknown topic references listed in a diagnostic
)

// Finish turns the complete output into the turn's result.
//
// Output that is not JSON once a markdown fence is stripped becomes a fallback result: the raw
// text as one paragraph block, response_type "conversational". Output in the legacy form format
// is migrated to a structured response. The model's meta.progress is advisory: the topics it
// names count when they are topics of this module, and the server then replaces the whole object
// with its own figures (so a malformed progress object costs no retry). Everything else must
// follow the response schema, and its forms must be answerable; otherwise the turn fails with
// coach_validation_failed, which the engine retries once with the problem fed back.
func (t *turn) Finish() (*coach.Outcome, error) {
	raw := t.stream.out
	if len(schema.StripFence(raw)) == 0 {
		return nil, coach.Errorf(coach.KindStream, coach.CodeEmptyResponse, "the reply was empty")
	}
	var rules, diag []string
	var notice string
	var doc map[string]any
	var reported []string
	var forms []*Form
	decoded, err := schema.Decode(raw)
	if err != nil && looksLikeJSON(raw) {
		// Broken JSON (typically cut off) is worth a corrective retry; shown as markdown it
		// would put raw JSON in front of the learner.
		return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "the reply is not valid JSON: %v", err)
	}
	if err != nil {
		doc = fallbackResponse(strings.TrimSpace(string(raw)))
		rules = append(rules, RuleFallback)
		diag = append(diag, "model output is not JSON and was sent as markdown: "+clip(raw, maxDiagnostic))
	} else {
		decoded = schema.StripNulls(decoded)
		if legacy, ok := legacyForm(decoded); ok {
			decoded = migrateLegacy(legacy, t.sess.Language())
			rules = append(rules, RuleLegacyForm)
		}
		reported = takeProgress(decoded)
		if err := responseSchema().Validate(decoded); err != nil {
			return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "%s", clip([]byte(err.Error()), maxViolations))
		}
		doc = decoded.(map[string]any) // the schema requires an object
		if forms, err = offeredForms(doc); err != nil {
			return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "%s", err.Error())
		}
		if !showsText(doc) {
			// The seed's contract: text_blocks carry what the learner reads, forms only come
			// with them. An answer that shows nothing is no answer (toulmin's empty
			// assistantText is the same error), and it must not move the learner's progress.
			return nil, coach.Errorf(coach.KindStream, coach.CodeEmptyResponse, "%s", noText)
		}
	}

	cov := t.learner.clone()
	var refs []string
	var unknown []string
	for _, ref := range reported {
		if id, ok := t.mod.Resolve(ref); ok {
			refs = append(refs, id)
		} else if strings.TrimSpace(ref) != "" && !slices.Contains(unknown, ref) {
			unknown = append(unknown, ref)
		}
	}
	cov.add(refs)
	if len(unknown) > 0 {
		rules = append(rules, RuleUnknownTopic)
		notice = "ignored topics the model reported that module " + t.mod.ID + " does not have: " + quoteList(unknown, maxIgnored)
	}

	st := t.st
	st.CoveredTopics = cov.ids()
	st.Percentage = cov.percentage()
	reached := cov.newMilestones(st.Milestones)
	st.Milestones = append(slices.Clone(st.Milestones), reached...)
	if len(forms) > 0 {
		st.Forms = make(map[string]*Form, len(forms))
		for _, f := range forms {
			st.Forms[f.ID] = f
		}
	}
	progress := map[string]any{
		"percentage":       st.Percentage,
		"covered_topics":   st.CoveredTopics,
		"newly_covered":    cov.since(t.before),
		"remaining_topics": len(cov.covered) - cov.n,
	}
	if len(reached) > 0 {
		progress["milestone"] = reached[len(reached)-1]
	}
	doc["meta"].(map[string]any)["progress"] = progress

	out, err := t.outcome(doc, st)
	if err != nil {
		return nil, err
	}
	out.Fallback = slices.Contains(rules, RuleFallback)
	out.Rules, out.Diagnostic, out.Notice = rules, strings.Join(diag, "; "), notice
	return out, nil
}

// outcome encodes doc, the response the learner gets, and st, the state after the turn, as the
// turn's outcome, with the exchange as the model will see it in later turns.
func (t *turn) outcome(doc map[string]any, st any) (*coach.Outcome, error) {
	result, err := marshalOrdered(doc)
	if err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "encoding the module result")
	}
	state, err := json.Marshal(st)
	if err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "encoding module state")
	}
	return &coach.Outcome{
		Result: result,
		State:  state,
		History: []coach.Message{
			{Role: coach.RoleUser, Content: t.user},
			{Role: coach.RoleAssistant, Content: string(result)},
		},
	}, nil
}

// noText is the problem of a response without visible text, as the corrective retry tells it.
const noText = "the reply shows no text: content.text_blocks must hold at least one block whose content is not blank"

// showsText reports whether a schema-valid response has a text block with visible content.
func showsText(doc map[string]any) bool {
	blocks, _ := doc["content"].(map[string]any)["text_blocks"].([]any)
	for _, b := range blocks {
		if s, _ := b.(map[string]any)["content"].(string); strings.TrimSpace(s) != "" {
			return true
		}
	}
	return false
}

// emptyFallbackText is the paragraph of the markdown fallback that replaces answers that stayed
// unusable (no text, cut off, invalid) even after the corrective retry, by locale.
var emptyFallbackText = map[string]string{
	"en": "Sorry, I could not put an answer together just now. Could you say that again, or tell me what you would like to look at next?",
	"es": "Perdona, ahora mismo no he podido preparar una respuesta. ¿Puedes repetirlo o decirme qué te gustaría ver ahora?",
}

// Fallback answers in place of a response that was unusable even after the corrective retry
// (it showed no text, was cut off, broke off as JSON or broke the schema): the seed's markdown
// fallback, one paragraph saying so, with the learner's progress as it was before the turn (a
// turn that taught nothing covers nothing, not even what the learner's message mentioned) and
// the forms offered before still open. Whatever was wrong is written for the model and stays
// in the diagnostic; the learner only reads that no answer came together. Rules say which it
// was: RuleEmptyAnswer when the last answer showed no text, RuleUnusableAnswer otherwise. It
// implements coach.Fallback.
func (t *turn) Fallback(cause error) (*coach.Outcome, error) {
	var e *coach.Error
	if !errors.As(cause, &e) || e.Code != coach.CodeEmptyResponse && e.Code != coach.CodeValidationFailed {
		return nil, cause
	}
	why := RuleUnusableAnswer
	if e.Code == coach.CodeEmptyResponse {
		why = RuleEmptyAnswer
	}
	text, ok := emptyFallbackText[t.sess.Language()]
	if !ok {
		text = emptyFallbackText["en"]
	}
	doc := fallbackResponse(text)
	doc["meta"].(map[string]any)["progress"] = t.progressBefore()
	out, err := t.outcome(doc, t.st)
	if err != nil {
		return nil, err
	}
	out.Fallback, out.Rules = true, []string{RuleFallback, why}
	out.Diagnostic = "module: " + cause.Error() + "; a fallback was sent in place of: " + clip(t.stream.out, maxDiagnostic)
	return out, nil
}

// The engine finds SafeReply by a type assertion; this keeps the method from drifting off it.
var _ coach.SafeReplier = (*turn)(nil)

// SafeReply answers with text the gateway wrote (a crisis's supportive answer, or the safe
// answer in place of model output that failed the safety check) as a structured response of
// one paragraph block holding text, response_type "conversational" and emotion "supportive",
// with no form, next step or media. Its progress is the session's as it was: the topics the
// learner's input mentioned are not counted, newly_covered is empty, no milestone is reached.
// The state is the session's, byte for byte, so the forms offered before stay open. History is
// empty, so the model never sees the exchange. Tail is text, sent in block 0 as a paragraph.
// It implements coach.SafeReplier; text that no text block can carry (blank, or longer than
// the schema's maxLength) is an internal error, since the gateway wrote it.
func (t *turn) SafeReply(text string) (*coach.Outcome, error) {
	if strings.TrimSpace(text) == "" {
		return nil, coach.Errorf(coach.KindInternal, coach.CodeInternal, "module: the safe reply is blank")
	}
	doc := fallbackResponse(text)
	meta := doc["meta"].(map[string]any)
	meta["emotion"], meta["progress"] = "supportive", t.progressBefore()
	result, err := marshalOrdered(doc)
	if err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "module: encoding the safe reply")
	}
	decoded, err := schema.Decode(result)
	if err == nil {
		err = responseSchema().Validate(decoded)
	}
	if err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "module: the safe reply does not follow the response schema")
	}
	return &coach.Outcome{
		Result:        result,
		Tail:          text,
		TailBlock:     0,
		TailBlockType: textBlockType,
		State:         bytes.Clone(t.sess.State),
	}, nil
}

// progressBefore returns meta.progress of an answer that covers nothing: the learner's progress
// as it was before the turn, nothing newly covered, no milestone.
func (t *turn) progressBefore() map[string]any {
	return map[string]any{
		"percentage":       t.st.Percentage,
		"covered_topics":   t.before.ids(),
		"newly_covered":    []string{},
		"remaining_topics": len(t.before.covered) - t.before.n,
	}
}

// looksLikeJSON reports whether raw, without a fence, starts like a JSON object, or like a JSON
// array of objects, arrays or strings. Markdown often starts with "[" too (a link such as
// "[Box breathing](…)", or "[1]"), and must stay markdown rather than cost a retry.
func looksLikeJSON(raw []byte) bool {
	t := schema.StripFence(raw)
	switch {
	case len(t) == 0:
		return false
	case t[0] == '{':
		return true
	case t[0] != '[':
		return false
	}
	rest := bytes.TrimLeft(t[1:], " \t\r\n")
	return len(rest) == 0 || bytes.IndexByte([]byte(`{["]`), rest[0]) >= 0
}

// textBlockType is the type of the one text block of a response the gateway makes of text.
const textBlockType = "paragraph"

// fallbackResponse wraps text that is not JSON as a structured response.
func fallbackResponse(text string) map[string]any {
	return map[string]any{
		"content": map[string]any{
			"text_blocks": []any{map[string]any{"type": textBlockType, "content": text}},
		},
		"meta": map[string]any{"response_type": "conversational"},
	}
}

// legacyForm returns doc when it is a response in the legacy form format,
// {"type":"form","title":…,"fields":[…]}.
func legacyForm(doc any) (map[string]any, bool) {
	m, ok := doc.(map[string]any)
	if !ok || m["type"] != "form" {
		return nil, false
	}
	if _, structured := m["content"]; structured {
		return nil, false
	}
	return m, true
}

// defaultIntro introduces a migrated legacy form that has neither title nor description.
var defaultIntro = map[string]string{
	"en": "Here is a short form you can fill in, or simply answer in your own words.",
	"es": "Aquí tienes un breve formulario que puedes completar, o simplemente responde con tus propias palabras.",
}

// migrateLegacy converts a legacy form to the structured format: the title (else description,
// else a default intro) as a paragraph, and the form, optional, with an id made from its title.
func migrateLegacy(m map[string]any, locale string) map[string]any {
	title, _ := m["title"].(string)
	desc, _ := m["description"].(string)
	intro := strings.TrimSpace(title)
	if intro == "" {
		intro = strings.TrimSpace(desc)
	}
	if intro == "" {
		intro = defaultIntro[locale]
		if intro == "" {
			intro = defaultIntro["en"]
		}
	}
	form := map[string]any{"id": formID(title), "fields": m["fields"], "optional": true}
	if title != "" {
		form["title"] = title
	}
	if desc != "" {
		form["description"] = desc
	}
	if label, ok := m["submit_label"].(string); ok {
		form["submit_label"] = label
	}
	return map[string]any{
		"content": map[string]any{
			"text_blocks": []any{map[string]any{"type": "paragraph", "content": intro}},
			"forms":       []any{form},
		},
		"meta": map[string]any{"response_type": "assessment"},
	}
}

// takeProgress removes meta.progress from doc and returns the topic references in its
// covered_topics and newly_covered lists.
func takeProgress(doc any) []string {
	m, _ := doc.(map[string]any)
	meta, _ := m["meta"].(map[string]any)
	if meta == nil {
		return nil
	}
	p, _ := meta["progress"].(map[string]any)
	delete(meta, "progress")
	var refs []string
	for _, key := range []string{"covered_topics", "newly_covered"} {
		list, _ := p[key].([]any)
		for _, v := range list {
			if s, ok := v.(string); ok {
				refs = append(refs, s)
			}
		}
	}
	return refs
}

// offeredForms returns the forms of a schema-valid response after checking that each can be
// answered (Form.check) and that form ids are unique, since submissions name forms by id.
func offeredForms(doc map[string]any) ([]*Form, error) {
	raw, ok := doc["content"].(map[string]any)["forms"]
	if !ok {
		return nil, nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var forms []*Form
	if err := json.Unmarshal(data, &forms); err != nil {
		return nil, fmt.Errorf("content.forms: %w", err)
	}
	for i, f := range forms {
		if slices.ContainsFunc(forms[:i], func(o *Form) bool { return o.ID == f.ID }) {
			return nil, fmt.Errorf("content.forms: duplicate form id %q", f.ID)
		}
		if err := f.check(); err != nil {
			return nil, errors.New("content.forms: " + err.Error())
		}
	}
	return forms, nil
}

// clip returns b as valid UTF-8 of at most n bytes, marked when cut.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return strings.ToValidUTF8(string(b[:n]), "") + "…"
}

func quoteList(items []string, n int) string {
	q := make([]string, 0, min(len(items), n))
	for _, s := range items[:min(len(items), n)] {
		q = append(q, strconv.Quote(clip([]byte(s), 80)))
	}
	if len(items) > n {
		q = append(q, fmt.Sprintf("and %d more", len(items)-n))
	}
	return strings.Join(q, ", ")
}

// keyOrder fixes the member order of the JSON the gateway writes. The result is also the history
// the model sees as its own earlier replies, and a block's type written before its content is
// what lets the next reply stream without buffering.
var keyOrder = func() map[string]int {
	keys := []string{
		"id", "type", "level", "title", "value", "label", "description", "content",
		"text_blocks", "forms", "media", "next_step",
		"response_type", "progress", "module_state", "emotion",
		"percentage", "covered_topics", "newly_covered", "remaining_topics", "milestone",
	}
	m := make(map[string]int, len(keys))
	for i, k := range keys {
		m[k] = i
	}
	return m
}()

// marshalOrdered encodes a decoded JSON document compactly, without HTML escaping, with object
// members in keyOrder and then by name.
func marshalOrdered(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeOrdered(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeOrdered(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, c string) int {
			ra, oka := keyOrder[a]
			rc, okc := keyOrder[c]
			switch {
			case oka && okc:
				return ra - rc
			case oka:
				return -1
			case okc:
				return 1
			}
			return strings.Compare(a, c)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeOrdered(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeOrdered(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeOrdered(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	return nil
}
