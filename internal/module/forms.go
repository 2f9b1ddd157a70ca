package module

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
)

// Form is a form the model offered (content.forms[i] of a structured response), kept in the
// session state so that the learner's answers can be checked against it.
type Form struct {
	ID          string  `json:"id"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	Fields      []Field `json:"fields"`
	SubmitLabel string  `json:"submit_label,omitempty"`
	Optional    *bool   `json:"optional,omitempty"`
}

// Field is one input of a Form.
type Field struct {
	ID          string   `json:"id"`
	Type        string   `json:"type"`
	Label       string   `json:"label"`
	Required    bool     `json:"required,omitempty"`
	Options     []Option `json:"options,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	HelpText    string   `json:"help_text,omitempty"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
}

// Option is one choice of a radio, checkbox or select field.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// Field types.
const (
	FieldRadio    = "radio"
	FieldCheckbox = "checkbox"
	FieldSelect   = "select"
	FieldText     = "text"
	FieldTextarea = "textarea"
	FieldNumber   = "number"
)

func (f *Field) choice() bool {
	return f.Type == FieldRadio || f.Type == FieldCheckbox || f.Type == FieldSelect
}

func (f *Field) option(value string) (Option, bool) {
	for _, o := range f.Options {
		if o.Value == value {
			return o, true
		}
	}
	return Option{}, false
}

// check reports what makes a form the model offered unusable beyond the schema: the seed
// requires options on choice fields, and answers are keyed by field id, so ids must be unique.
func (f *Form) check() error {
	seen := make(map[string]bool, len(f.Fields))
	for _, fd := range f.Fields {
		if seen[fd.ID] {
			return fmt.Errorf("form %q: duplicate field id %q", f.ID, fd.ID)
		}
		seen[fd.ID] = true
		if fd.choice() && len(fd.Options) == 0 {
			return fmt.Errorf("form %q: %s field %q needs options", f.ID, fd.Type, fd.ID)
		}
		if fd.Min != nil && fd.Max != nil && *fd.Min > *fd.Max {
			return fmt.Errorf("form %q: field %q has min greater than max", f.ID, fd.ID)
		}
	}
	return nil
}

// answer is one answered field of a submitted form.
type answer struct {
	field *Field
	// shown is the answer as the readable message shows it.
	shown string
	// texts are what keyword detection reads: chosen options' labels and values, typed text.
	texts []string
}

// checkAnswers validates a submission against the form it answers and returns the answered
// fields in form order. Every problem is a coach.FieldError naming form.values.<field id>.
func checkAnswers(f *Form, values map[string]json.RawMessage) ([]answer, error) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.ContainsFunc(f.Fields, func(fd Field) bool { return fd.ID == k }) {
			name := coach.Clip(k)
			return nil, coach.FieldError("form.values."+name, "form %q has no field %q", f.ID, name)
		}
	}
	var out []answer
	for i := range f.Fields {
		fd := &f.Fields[i]
		raw, ok := values[fd.ID]
		if ok && bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			ok = false
		}
		var a *answer
		if ok {
			var err error
			if a, err = parseAnswer(fd, raw); err != nil {
				return nil, coach.FieldError("form.values."+fd.ID, "%s", err.Error())
			}
		}
		if a == nil {
			if fd.Required {
				return nil, coach.FieldError("form.values."+fd.ID, "%q is required", fd.Label)
			}
			continue
		}
		out = append(out, *a)
	}
	return out, nil
}

// parseAnswer checks one submitted value against its field. It returns nil for an empty answer
// (an empty string or an empty selection), which only a required field refuses.
func parseAnswer(fd *Field, raw json.RawMessage) (*answer, error) {
	switch fd.Type {
	case FieldRadio, FieldSelect:
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("must be a string, one of %s", optionList(fd))
		}
		if v == "" {
			return nil, nil
		}
		o, ok := fd.option(v)
		if !ok {
			return nil, fmt.Errorf("%q is not one of %s", coach.Clip(v), optionList(fd))
		}
		return &answer{field: fd, shown: o.Label, texts: []string{o.Label, o.Value}}, nil
	case FieldCheckbox:
		var vs []string
		if err := json.Unmarshal(raw, &vs); err != nil {
			return nil, fmt.Errorf("must be an array of strings from %s", optionList(fd))
		}
		if len(vs) == 0 {
			return nil, nil
		}
		a := &answer{field: fd}
		labels := make([]string, 0, len(vs))
		for i, v := range vs {
			o, ok := fd.option(v)
			if !ok {
				return nil, fmt.Errorf("%q is not one of %s", coach.Clip(v), optionList(fd))
			}
			if slices.Contains(vs[:i], v) {
				return nil, fmt.Errorf("%q is chosen twice", coach.Clip(v))
			}
			labels = append(labels, o.Label)
			a.texts = append(a.texts, o.Label, o.Value)
		}
		a.shown = strings.Join(labels, ", ")
		return a, nil
	case FieldNumber:
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		n, isNum := json.Number(""), false
		if dec.Decode(&v) == nil {
			n, isNum = v.(json.Number)
		}
		if !isNum {
			return nil, fmt.Errorf("must be a number")
		}
		x, err := n.Float64()
		if err != nil || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s is out of range", coach.Clip(n.String()))
		}
		if fd.Min != nil && x < *fd.Min {
			return nil, fmt.Errorf("must be at least %s", formatNumber(*fd.Min))
		}
		if fd.Max != nil && x > *fd.Max {
			return nil, fmt.Errorf("must be at most %s", formatNumber(*fd.Max))
		}
		// The number as read, not as written: "5.000…000" with thousands of digits is 5.
		return &answer{field: fd, shown: formatNumber(x)}, nil
	default: // text, textarea
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("must be a string")
		}
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, nil
		}
		return &answer{field: fd, shown: coach.QuoteLearnerText(v), texts: []string{v}}, nil
	}
}

func optionList(fd *Field) string {
	vs := make([]string, len(fd.Options))
	for i, o := range fd.Options {
		vs[i] = strconv.Quote(o.Value)
	}
	return "[" + strings.Join(vs, ", ") + "]"
}

// formatNumber renders x as the history shows it; a negative zero shows as 0.
func formatNumber(x float64) string {
	if x == 0 {
		x = 0
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// formMessage renders a submission as the user message the history keeps, e.g.
//
//	Form "Quick Reflection":
//	- Which level of anxiety do you notice most in yourself? Physical (body sensations)
//
// A label that ends in "?" or ":" is followed by a space, any other by ": ". Typed text is
// quoted as a JSON string (coach.QuoteLearnerText), so that an answer stays on its item's line
// and cannot pass for the form's own framing; chosen options show their labels.
func formMessage(f *Form, answers []answer) string {
	title := f.Title
	if strings.TrimSpace(title) == "" {
		title = f.ID
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Form %q:", title)
	if len(answers) == 0 {
		b.WriteString(" (submitted without answers)")
	}
	for _, a := range answers {
		label := strings.TrimSpace(a.field.Label)
		sep := ": "
		if strings.HasSuffix(label, "?") || strings.HasSuffix(label, ":") {
			sep = " "
		}
		b.WriteString("\n- " + label + sep + a.shown)
	}
	return b.String()
}

// maxFormID bounds a generated form id.
const maxFormID = 48

// formID derives a snake_case form id from a title: "Quick Reflection" → "quick_reflection".
func formID(title string) string {
	var parts []string
	for _, w := range words(title) {
		// Letters that fold to no ASCII letter (other scripts) cannot be part of a snake_case id.
		if w = strings.Map(asciiAlnum, w); w != "" {
			parts = append(parts, w)
		}
	}
	id := strings.Join(parts, "_")
	if len(id) > maxFormID {
		id = strings.TrimRight(id[:maxFormID], "_")
	}
	if id == "" {
		return "form"
	}
	if id[0] < 'a' || id[0] > 'z' {
		id = "form_" + id
	}
	return id
}

func asciiAlnum(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
		return r
	}
	return -1
}
