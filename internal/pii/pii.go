// Package pii owns the masking of personal data in learner text before any model endpoint sees
// it (COACH_PII_REDACT=mask): e-mail addresses, phone numbers (international, Spanish and
// Mexican forms, and North American ones), payment card numbers that pass the Luhn check,
// Spanish DNI and NIE numbers whose check letter is right, and Mexican CURPs. Each span is
// replaced with a typed placeholder ([email], [phone], [card], [national_id]) so the model
// still knows something was there. Numbers that only look alike (years, prices, module
// numbers, dates, the 5-4-3-2-1 exercise) are left alone: a false mask changes the lesson.
package pii

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The placeholders. They contain no digit and no "@", so masking them again changes nothing.
const (
	Email      = "[email]"
	Phone      = "[phone]"
	Card       = "[card]"
	NationalID = "[national_id]"
)

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)
	// digitRunRE is a run of digit groups joined by single spaces or dashes, where cards hide.
	digitRunRE = regexp.MustCompile(`[0-9]+(?:[ \-][0-9]+)*`)
	// dniRE is a DNI (8 digits and a letter) or an NIE (X, Y or Z, 7 digits and a letter).
	dniRE    = regexp.MustCompile(`(?i)(?:[XYZ][ \-]?)?[0-9]{7,8}[ \-]?[A-Z]`)
	curpRE   = regexp.MustCompile(`(?i)[A-Z][AEIOUX][A-Z]{2}[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])[HMX](?:AS|BC|BS|CC|CL|CM|CS|CH|DF|DG|GT|GR|HG|JC|MC|MN|MS|NT|NL|OC|PL|QT|QR|SP|SL|SR|TC|TS|TL|VZ|YN|ZS|NE)[B-DF-HJ-NP-TV-Z]{3}[A-Z0-9][0-9]`)
	phoneREs = []*regexp.Regexp{
		// International: + or 00, a country code, then 7 to 14 more digits in groups.
		regexp.MustCompile(`(?:\+|00)[1-9][0-9]{0,2}(?:[ .\-]?\(?[0-9]{1,4}\)?){2,6}`),
		// Spain: nine digits starting 6, 7, 8 or 9, as 3-3-3, 3-2-2-2, 2-3-2-2 or unbroken.
		regexp.MustCompile(`[6-9][0-9]{2}(?:[ .\-]?[0-9]{3}){2}`),
		regexp.MustCompile(`[6-9][0-9]{2}(?:[ .\-]?[0-9]{2}){3}`),
		regexp.MustCompile(`[89][0-9](?:[ .\-]?[0-9]{3})(?:[ .\-]?[0-9]{2}){2}`),
		// Mexico and North America: ten digits as (55) 1234 5678, 55-1234-5678, (555) 123-4567, 555.123.4567.
		regexp.MustCompile(`\(?[0-9]{2}\)?[ .\-]?[0-9]{4}[ .\-]?[0-9]{4}`),
		regexp.MustCompile(`\(?[0-9]{3}\)?[ .\-]?[0-9]{3}[ .\-]?[0-9]{4}`),
	}
)

// Mask returns s with every e-mail address, phone number, card number and national id
// replaced by its placeholder. It is idempotent, and text with nothing to mask comes back
// unchanged (the same string).
func Mask(s string) string {
	// Most text a model is sent (a system prompt's instructions and schema, most learner
	// turns) holds nothing to mask, and the patterns cost about a microsecond a byte: each kind
	// is only looked for where its cheap necessary sign is there (an "@"; a run of at least
	// six digits, the fewest any number or id below has).
	if strings.IndexByte(s, '@') >= 0 {
		// E-mail first: its local part may hold digits.
		s = replace(s, emailRE, func(string) bool { return true }, Email)
	}
	// A number stands alone only when no digit or letter is glued to it, and a placeholder
	// put in its neighbour's place can free it ("00…0+1…": the "+1…" is glued to a digit until
	// the number before it is masked). So the numbers are masked again until nothing changes,
	// which makes Mask idempotent; each pass that changes anything removes digits, so it ends,
	// and text with nothing to mask takes one pass.
	for mayHoldNumber(s) {
		t := maskNumbers(s)
		if t == s {
			break
		}
		s = t
	}
	return s
}

// maskNumbers masks, in one pass, the card numbers, then the ids, whose letters keep them apart
// from phones, then the phone numbers (a card number also fits the looser phone forms).
func maskNumbers(s string) string {
	s = maskCards(s)
	s = replace(s, curpRE, func(string) bool { return true }, NationalID)
	s = replace(s, dniRE, dniValid, NationalID)
	for _, re := range phoneREs {
		s = replace(s, re, phoneValid, Phone)
	}
	return s
}

// replace replaces each match of re that stands alone (no digit or letter glued to either
// end) and that valid accepts. A match that fails is retried one character further on, so a
// near miss at one offset does not hide a real match inside it.
func replace(s string, re *regexp.Regexp, valid func(string) bool, placeholder string) string {
	var b strings.Builder
	last, pos := 0, 0
	for pos < len(s) {
		loc := re.FindStringIndex(s[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		// A match may end with a separator or a bracket; trim what the number does not own.
		for end > start && strings.ContainsRune(" .-(", rune(s[end-1])) {
			end--
		}
		if alone(s, start, end) && valid(s[start:end]) {
			if b.Len() == 0 && last == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:start])
			b.WriteString(placeholder)
			last, pos = end, end
			continue
		}
		_, n := utf8.DecodeRuneInString(s[start:])
		pos = start + n
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// maskCards replaces every card number: within each run of digit groups, the longest span of
// whole groups, from the earliest group, that holds 13 to 19 digits and passes the Luhn check.
// Unlike the other kinds it does not ask for a clean edge: a card number glued to a word is
// still a card number, and a 16-digit Luhn-valid run must never reach a model.
func maskCards(s string) string {
	runs := digitRunRE.FindAllStringIndex(s, -1)
	if runs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, run := range runs {
		// After a "+" the run is an international phone number, unless it is longer than
		// E.164 allows (15 digits).
		if run[0] > 0 && s[run[0]-1] == '+' && len(digits(s[run[0]:run[1]])) <= 15 {
			continue
		}
		// groups holds each group's [start, end) in s.
		var groups [][2]int
		for i := run[0]; i < run[1]; {
			j := i
			for j < run[1] && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			groups = append(groups, [2]int{i, j})
			i = j + 1
		}
		for i := 0; i < len(groups); {
			found := -1
			n := 0
			for j := i; j < len(groups); j++ {
				n += groups[j][1] - groups[j][0]
				if n > 19 {
					break
				}
				if n >= 13 && luhnValid(s[groups[i][0]:groups[j][1]]) {
					found = j
				}
			}
			if found < 0 {
				i++
				continue
			}
			b.WriteString(s[last:groups[i][0]])
			b.WriteString(Card)
			last = groups[found][1]
			i = found + 1
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// alone reports whether s[start:end] is not glued to a letter or digit on either side, and is
// not the value of a price or a percentage.
func alone(s string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:start])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '$' || r == '€' || r == '£' || r == '_' || r == '/' {
			return false
		}
		// A digit group continued by a separator ("1.612 345 678") is part of a longer number.
		if (r == '.' || r == ',' || r == '-') && start > 1 {
			if p, _ := utf8.DecodeLastRuneInString(s[:start-1]); unicode.IsDigit(p) {
				return false
			}
		}
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '€' || r == '%' || r == '_' || r == '/' || r == '@' {
			return false
		}
		if (r == '.' || r == ',' || r == '-') && end+1 < len(s) {
			if n, _ := utf8.DecodeRuneInString(s[end+1:]); unicode.IsDigit(n) {
				return false
			}
		}
	}
	return true
}

func digits(s string) []byte {
	d := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			d = append(d, s[i]-'0')
		}
	}
	return d
}

// luhnValid reports whether the digits of s pass the Luhn check, as every payment card does.
func luhnValid(s string) bool {
	d := digits(s)
	if len(d) < 13 || len(d) > 19 {
		return false
	}
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i])
		if (len(d)-1-i)%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// dniLetters is the check-letter table of the Spanish DNI and NIE: the letter is the number
// modulo 23 looked up here.
const dniLetters = "TRWAGMYFPDXBNJZSQVHLCKE"

// dniValid reports whether s is a DNI (8 digits) or NIE (X/Y/Z and 7 digits) with the right
// check letter.
func dniValid(s string) bool {
	s = strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(s))
	n := 0
	body := s[:len(s)-1]
	switch {
	case len(body) == 8 && strings.IndexByte("XYZ", body[0]) >= 0:
		n = strings.IndexByte("XYZ", body[0])
		body = body[1:]
	case len(body) == 8:
	default:
		return false
	}
	for i := 0; i < len(body); i++ {
		if body[i] < '0' || body[i] > '9' {
			return false
		}
		n = n*10 + int(body[i]-'0')
	}
	return dniLetters[n%23] == s[len(s)-1]
}

// phoneValid checks what the phone patterns cannot: the number of digits (8 to 15 for an
// international number, as E.164 allows), and that brackets pair up.
func phoneValid(s string) bool {
	if strings.Count(s, "(") != strings.Count(s, ")") {
		return false
	}
	d := digits(s)
	switch {
	case strings.HasPrefix(s, "+"):
		return len(d) >= 8 && len(d) <= 15
	case strings.HasPrefix(s, "00"):
		return len(d)-2 >= 8 && len(d)-2 <= 15
	default:
		return len(d) == 9 || len(d) == 10
	}
}

// minDigits is the fewest digits a masked number or id holds: a CURP's date (six); DNI and NIE
// numbers have seven or eight, phones at least eight, cards thirteen.
const minDigits = 6

// mayHoldNumber reports whether s has a run of at least minDigits digits joined by at most two
// separators in a row (" ", ".", "-", "(", ")", "/"), as numbers are written ("(55) 1234 5678").
// Such a run may hold more than any pattern would match, never less, so a text without one has
// nothing to mask but e-mail addresses.
//
// Every turn's prompt goes through it (some 10 KB of instructions and schema, in which words
// are most of the bytes), so it classes each byte with one table lookup, passes over the bytes
// that end a run in a loop of its own, and stops at the first run long enough
// (BenchmarkMask/prompt).
func mayHoldNumber(s string) bool {
	run, seps := 0, 0
	for i := 0; i < len(s); i++ {
		switch numberBytes[s[i]] {
		case byteOther:
			run, seps = 0, 0
			for i+1 < len(s) && numberBytes[s[i+1]] == byteOther {
				i++
			}
		case byteDigit:
			if run++; run >= minDigits {
				return true
			}
			seps = 0
		default:
			if seps++; seps > 2 {
				run, seps = 0, 0
			}
		}
	}
	return false
}

// Classes of bytes in numbers (see mayHoldNumber).
const (
	byteOther = iota
	byteDigit
	byteSeparator
)

// numberBytes is the class of every byte value.
var numberBytes = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = byteDigit
	}
	for _, c := range " .-()/" {
		t[c] = byteSeparator
	}
	return t
}()
