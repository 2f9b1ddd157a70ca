package pii

import (
	"regexp"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

func TestMask(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// E-mail.
		{"email", "write to ana.lopez+tareas@colegio.edu.es please", "write to [email] please"},
		{"email upper", "Mi correo: JOHN_DOE99@Example.COM.", "Mi correo: [email]."},
		{"not an email", "the @ sign and user@localhost", "the @ sign and user@localhost"},
		// Phones.
		{"international es", "llámame al +34 612 345 678", "llámame al [phone]"},
		{"international mx", "mi cel es +52 1 55 1234 5678", "mi cel es [phone]"},
		{"international 00", "0034 612345678 es mi número", "[phone] es mi número"},
		{"international us", "call +1 (555) 123-4567 now", "call [phone] now"},
		{"spanish mobile", "mi móvil es 612345678", "mi móvil es [phone]"},
		{"spanish 3-2-2-2", "612 34 56 78", "[phone]"},
		{"spanish landline", "llama al 91 123 45 67", "llama al [phone]"},
		{"spanish dots", "612.345.678", "[phone]"},
		{"mexican", "mi número es 55 1234 5678", "mi número es [phone]"},
		{"mexican brackets", "(55) 1234-5678", "[phone]"},
		{"north american", "text me at 555-123-4567", "text me at [phone]"},
		{"two phones", "612345678 o 698765432", "[phone] o [phone]"},
		// Cards.
		{"card", "my card is 4111 1111 1111 1111", "my card is [card]"},
		{"card dashes", "5555-5555-5555-4444!", "[card]!"},
		{"card amex", "378282246310005", "[card]"},
		{"card glued", "x4111111111111111y", "x[card]y"},
		{"card then year", "4111111111111111 2024", "[card] 2024"},
		{"not luhn", "4111 1111 1111 1112", "4111 1111 1111 1112"},
		// National ids.
		{"dni", "mi DNI es 12345678Z", "mi DNI es [national_id]"},
		{"dni lower dash", "12345678-z", "[national_id]"},
		{"nie", "NIE X1234567L", "NIE [national_id]"},
		{"curp", "CURP: GODE561231HDFRRN09.", "CURP: [national_id]."},
		{"dni wrong letter", "12345678A", "12345678A"},
		{"nie wrong letter", "X1234567A", "X1234567A"},
		{"curp bad state", "GODE561231HXXRRN09", "GODE561231HXXRRN09"},
		// Near misses: none of these is personal data.
		{"year", "In 2024 I started the module", "In 2024 I started the module"},
		{"years range", "from 1990 2000 2010 to 2019-2024", "from 1990 2000 2010 to 2019-2024"},
		{"date slashes", "el examen es el 12/05/2024", "el examen es el 12/05/2024"},
		{"date dashes", "on 2024-05-12 and 12-05-2024", "on 2024-05-12 and 12-05-2024"},
		{"date dots", "el 12.05.2024", "el 12.05.2024"},
		{"price euro", "cuesta 1.299.000 € o 612345678€", "cuesta 1.299.000 € o 612345678€"},
		{"price dollar", "it costs $612,345,678 or $6123456789", "it costs $612,345,678 or $6123456789"},
		{"percentage", "612345678% more", "612345678% more"},
		{"module numbers", "module 3, section 4.2, topic 12", "module 3, section 4.2, topic 12"},
		{"grounding", "try 5-4-3-2-1 and 4-7-8 breathing", "try 5-4-3-2-1 and 4-7-8 breathing"},
		{"time", "at 10:30 or 22:15", "at 10:30 or 22:15"},
		{"long number inside", "id 1612345678901", "id 1612345678901"},
		{"zip", "CP 28013 Madrid", "CP 28013 Madrid"},
		{"decimal", "pi is 3.14159265358979", "pi is 3.14159265358979"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Mask(tt.in)
			if got != tt.want {
				t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Mask(got); again != got {
				t.Errorf("Mask is not idempotent: Mask(%q) = %q", got, again)
			}
		})
	}
}

func TestMayHoldNumber(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"no digits at all", false},
		{"12345", false},
		{"123456", true},
		{"tel (55) 1234 5678", true},
		{"1 2 3 4 5 6", true},
		{"1-2-3  4..5//6", true},
		{"12 34   56", false},
		{"123a456", false},
		{"step 3 of 7, 5-4-3-2-1", false},
		{strings.Repeat("word ", 2000) + "612345678", true},
	}
	for _, tt := range tests {
		if got := mayHoldNumber(tt.in); got != tt.want {
			t.Errorf("mayHoldNumber(%.40q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLuhnAndDNI(t *testing.T) {
	for s, want := range map[string]bool{"4111111111111111": true, "4111111111111112": false, "79927398713": false, "5555 5555 5555 4444": true} {
		if got := luhnValid(s); got != want {
			t.Errorf("luhnValid(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"12345678Z": true, "00000000T": true, "Y1234567X": true, "Z1234567R": true, "12345678T": false, "X123456L": false} {
		if got := dniValid(s); got != want {
			t.Errorf("dniValid(%q) = %v, want %v", s, got, want)
		}
	}
}

// luhn16 finds a maximal run of exactly 16 digits that passes the Luhn check.
var digitRun = regexp.MustCompile(`[0-9]+`)

func luhn16Left(s string) string {
	for _, r := range digitRun.FindAllString(s, -1) {
		if len(r) == 16 && luhnValid(r) {
			return r
		}
	}
	return ""
}

// FuzzMask checks that masking never panics, is idempotent, and never leaves a Luhn-valid run
// of 16 digits.
func FuzzMask(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzMask")
	f.Fuzz(func(t *testing.T, s string) {
		got := Mask(s)
		if again := Mask(got); again != got {
			t.Fatalf("not idempotent: Mask(%q) = %q, Mask again = %q", s, got, again)
		}
		if r := luhn16Left(got); r != "" {
			t.Fatalf("Mask(%q) = %q leaves the Luhn-valid run %s", s, got, r)
		}
		if want := maskEverywhere(s); got != want {
			t.Fatalf("Mask(%q) = %q, but every pattern everywhere gives %q: the prefilter skipped a match", s, got, want)
		}
	})
}

// maskEverywhere is Mask without its prefilter: every pattern over the whole text.
func maskEverywhere(s string) string {
	s = replace(s, emailRE, func(string) bool { return true }, Email)
	for {
		t := maskNumbers(s)
		if t == s {
			return s
		}
		s = t
	}
}

// BenchmarkMask measures masking one learner turn with and without personal data.
func BenchmarkMask(b *testing.B) {
	for name, in := range map[string]string{
		"clean": "In module 3 I learned the 5-4-3-2-1 exercise and on 2024-05-12 I tried it before my exam.",
		"pii":   "Soy Ana, mi correo es ana@colegio.es, mi móvil 612 345 678 y mi DNI 12345678Z.",
		// A system prompt: instructions and a schema, about 10 KB, nothing to mask.
		"prompt": strings.Repeat("You are a coach. Follow the schema {\"type\":\"object\",\"maxItems\":12} exactly, step 3 of 7. ", 120),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Mask(in)
			}
		})
	}
}
