package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
)

// separators are the Unicode line and paragraph separators (NEL, LS, PS). Learner text keeps
// its line breaks, but as "\n" only: these three are line breaks to some readers and not to
// others (a prompt, a log line, a terminal), which is what an injection would exploit.
var separators = strings.NewReplacer("\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// cleanTurn is the one check of every string a learner supplies with a turn: the message, the
// selected option, and the form's id, field names and values, strings nested in arrays and
// objects included. Each goes through cleanText (a number is held to the same length); a form's
// strings and numbers together may not exceed the message limit either, as they reach the model
// as one message.
func (s *Server) cleanTurn(in *coach.TurnInput) error {
	if in.Message != nil {
		if err := s.cleanText("message", in.Message); err != nil {
			return err
		}
	}
	if in.Selected != nil {
		if err := s.cleanText("selected", in.Selected); err != nil {
			return err
		}
	}
	if in.Form == nil {
		return nil
	}
	if err := s.cleanText("form.id", &in.Form.ID); err != nil {
		return err
	}
	total := 0
	for key, raw := range in.Form.Values {
		field := "form.values." + coach.Clip(key)
		if err := s.checkText(field, key); err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // numbers pass through as they were written
		var v any
		if err := dec.Decode(&v); err != nil {
			return coach.FieldError(field, "%s is not a JSON value", field)
		}
		v, changed, err := s.cleanValue(field, v, &total)
		if err != nil {
			return err
		}
		if changed {
			if in.Form.Values[key], err = json.Marshal(v); err != nil {
				return coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "re-encoding a form value")
			}
		}
	}
	if total > s.deps.MaxMessageChars {
		return coach.FieldError("form.values", "the form's answers are longer than %d characters together", s.deps.MaxMessageChars)
	}
	return nil
}

// cleanValue cleans every string in v, a decoded JSON value of a form answer, checks the length
// of every number, adds the lengths of both to total, and reports whether any string changed.
func (s *Server) cleanValue(field string, v any, total *int) (any, bool, error) {
	switch v := v.(type) {
	case string:
		c := v
		if err := s.cleanText(field, &c); err != nil {
			return nil, false, err
		}
		*total += utf8.RuneCountInString(c)
		return c, c != v, nil
	case json.Number:
		// A number is learner text too, kept as it was written: as long as a string may be.
		if err := s.checkText(field, string(v)); err != nil {
			return nil, false, err
		}
		*total += len(v)
		return v, false, nil
	case []any:
		changed := false
		for i, e := range v {
			e, ch, err := s.cleanValue(field, e, total)
			if err != nil {
				return nil, false, err
			}
			v[i], changed = e, changed || ch
		}
		return v, changed, nil
	case map[string]any:
		changed := false
		for k, e := range v {
			if err := s.checkText(field, k); err != nil {
				return nil, false, err
			}
			e, ch, err := s.cleanValue(field, e, total)
			if err != nil {
				return nil, false, err
			}
			v[k], changed = e, changed || ch
		}
		return v, changed, nil
	default:
		return v, false, nil
	}
}

// cleanText normalises the line and paragraph separators of *text to "\n" and then checks it
// with checkText.
func (s *Server) cleanText(field string, text *string) error {
	if strings.ContainsAny(*text, "\u0085\u2028\u2029") {
		*text = separators.Replace(*text)
	}
	return s.checkText(field, *text)
}

// checkText rejects text a learner cannot have typed: over the length limit, or with control
// characters (C0, DEL and C1) other than line breaks and tabs. The line and paragraph
// separators are refused as well: cleanText has normalised them away already, so only a string
// that cannot be rewritten, such as a form's field name, still carries one.
func (s *Server) checkText(field, text string) error {
	if utf8.RuneCountInString(text) > s.deps.MaxMessageChars {
		return coach.FieldError(field, "%s is longer than %d characters", field, s.deps.MaxMessageChars)
	}
	if strings.IndexFunc(text, control) >= 0 {
		return coach.FieldError(field, "%s contains a control character", field)
	}
	if strings.ContainsAny(text, "\u2028\u2029") {
		return coach.FieldError(field, "%s contains a line or paragraph separator", field)
	}
	return nil
}

// control reports whether r is a control character other than a line break or a tab.
func control(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\r' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}
