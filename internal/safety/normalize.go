package safety

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalize folds text into the form the rules are written against: lower case, accents and
// ñ folded to their base letter (learners type "ojala no despertara" as often as "ojalá no
// despertara"), apostrophes dropped ("don't" becomes "dont", "I'm" becomes "im"), every other
// non-letter, non-digit run turned into one space, and two boundary marks kept as their own
// tokens: "|" at a sentence end (. ! ? ; … or a line break) and "," at a comma or colon. Rules
// are written with plain spaces between words, so no rule matches across a comma or a sentence
// end; the window relies on that (text up to a released sentence end can never become part of a
// later hit) and so does the negation check (a "no" in the previous clause does not negate). The
// text always starts and ends in "|", so a rule can name the start of a clause.
//
// Words are then spelled the way the rules are written (see spell): learners, teenagers above
// all, write "kiero", "q", "myslef", "kiiill", "su1c1de" and "2nite", and a rule must not depend
// on a learner spelling a crisis correctly.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(" | ")
	space := true // the builder ends in a space
	mark := func(m byte) {
		if cur := b.String(); len(cur) >= 3 && cur[len(cur)-2] == m && cur[len(cur)-3] == ' ' {
			return // one mark stands for a run of them ("?!", "…\n")
		}
		if !space {
			b.WriteByte(' ')
		}
		b.WriteByte(m)
		b.WriteByte(' ')
		space = true
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\'' || r == '’' || r == '‘' || r == '`' || r == '´':
			// Dropped so that contractions join: "don't" → "dont".
		case r == '.' || r == '!' || r == '?' || r == ';' || r == '…' || r == '\n' || r == '\r':
			mark('|')
		case r == ',' || r == ':':
			mark(',')
		case (r == '@' || r == '$') && (!space || (i < len(s) && isASCIILetter(s[i]))):
			// Inside a word, "@" and "$" stand for letters: "$uicide", "m@tarme".
			b.WriteByte(map[rune]byte{'@': 'a', '$': 's'}[r])
			space = false
		case r < utf8.RuneSelf:
			c := byte(r)
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
				b.WriteByte(c)
				space = false
			} else if !space {
				b.WriteByte(' ')
				space = true
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteString(fold(unicode.ToLower(r)))
			space = false
		default:
			if !space {
				b.WriteByte(' ')
				space = true
			}
		}
	}
	// The end of the text ends its last clause, so a rule written for a clause end ("I don't
	// want to live" and nothing after) matches at the end of a turn.
	mark('|')
	return respell(b.String())
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// fold maps a lower-case letter with a diacritic to its base letter; letters without one (and
// scripts the rules do not cover) are kept as they are.
func fold(r rune) string {
	switch r {
	case 'á', 'à', 'ä', 'â', 'ã', 'å':
		return "a"
	case 'é', 'è', 'ë', 'ê':
		return "e"
	case 'í', 'ì', 'ï', 'î':
		return "i"
	case 'ó', 'ò', 'ö', 'ô', 'õ':
		return "o"
	case 'ú', 'ù', 'ü', 'û':
		return "u"
	case 'ñ':
		return "n"
	case 'ç':
		return "c"
	}
	return string(r)
}
