package safety

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResourcesFor(t *testing.T) {
	r := BuiltinResources()
	tests := []struct {
		locale, wantKey, wantPhone string
	}{
		{"en-US", "en-US", "988"},
		{"es-US", "es-US", "988"},
		{"es-ES", "es-ES", "024"},
		{"es-MX", "es-MX", "800 911 2000"},
		{"es_mx", "es-MX", "800 911 2000"},
		{"es-AR", "es", ""},
		{"es", "es", ""},
		{"en-GB", "en-GB", "116 123"},
		{"en_gb", "en-GB", "116 123"},
		{"en-IE", "en-IE", "116 123"},
		{"en-CA", "en-CA", "988"},
		{"en-AU", "en-AU", "13 11 14"},
		{"en-NZ", "en", ""},
		{"fr", "fr", ""},
		{"", "en", ""},
		{"../etc", "en", ""},
		{"fallback", "en", ""},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			key, lr := r.For(tt.locale)
			if key != tt.wantKey {
				t.Errorf("For(%q) found %q, want %q", tt.locale, key, tt.wantKey)
			}
			if len(lr.Resources) == 0 || lr.Message == "" {
				t.Fatalf("For(%q) = %+v, want a message and resources", tt.locale, lr)
			}
			if tt.wantPhone != "" && lr.Resources[0].Phone != tt.wantPhone {
				t.Errorf("For(%q) first phone %q, want %q", tt.locale, lr.Resources[0].Phone, tt.wantPhone)
			}
		})
	}
	// es-US names its Spanish option and text line.
	_, us := r.For("es-US")
	if first := us.Resources[0]; !strings.Contains(first.Name, "marca 2") || first.Text == "" {
		t.Errorf("es-US 988 = %+v, want the Spanish option and the text line", first)
	}
}

// TestResourcesEmergencyNumbers checks that a learner in each region with built-in resources has
// a crisis line and the emergency number to tap, as the services' pages cited in resources.go
// give them.
func TestResourcesEmergencyNumbers(t *testing.T) {
	r := BuiltinResources()
	tests := []struct {
		locale string
		want   []string // every phone the locale's list must have
	}{
		{"en-US", []string{"988", "911"}},
		{"en-GB", []string{"116 123", "999", "111"}},
		{"en-IE", []string{"116 123", "112"}},
		{"en-CA", []string{"988", "911"}},
		{"en-AU", []string{"13 11 14", "000"}},
		{"es-ES", []string{"024", "112"}},
		{"es-MX", []string{"800 911 2000", "911"}},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			_, lr := r.For(tt.locale)
			got := map[string]bool{}
			for _, res := range lr.Resources {
				got[res.Phone] = true
			}
			for _, phone := range tt.want {
				if !got[phone] {
					t.Errorf("For(%q) phones %v, want %q among them", tt.locale, lr.Resources, phone)
				}
			}
		})
	}
}

func TestBuiltinResourcesAreValid(t *testing.T) {
	for locale, lr := range builtinResources {
		if err := validateLocaleResources(lr); err != nil {
			t.Errorf("%s: %v", locale, err)
		}
		if _, err := canonicalLocale(locale); err != nil {
			t.Errorf("%s: %v", locale, err)
		}
	}
}

func TestParseResources(t *testing.T) {
	good := `{"locales":{"en-gb":{"message":"You are not alone.","resources":[{"name":"Samaritans","phone":"116 123","url":"https://www.samaritans.org"}]},
		"es-AR":{"message":"No estás solo.","resources":[{"name":"Línea local","phone":"135"}]}}}`
	r, err := ParseResources(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if key, lr := r.For("en-GB"); key != "en-GB" || lr.Resources[0].Phone != "116 123" {
		t.Errorf("For(en-GB) = %s %+v, want the file's entry", key, lr)
	}
	if key, _ := r.For("es-AR"); key != "es-AR" {
		t.Errorf("For(es-AR) found %s, want the file's es-AR", key)
	}
	if key, lr := r.For("es-ES"); key != "es-ES" || lr.Resources[0].Phone != "024" {
		t.Errorf("built-in es-ES lost: %s %+v", key, lr)
	}

	bad := []struct{ name, body, want string }{
		{"not json", `{`, "unexpected EOF"},
		{"unknown field", `{"locales":{"en":{"message":"m","resources":[{"name":"n","phone":"1","fax":"2"}]}}}`, "unknown field"},
		{"no locales", `{"locales":{}}`, "no \"locales\""},
		{"bad locale", `{"locales":{"english":{"message":"m","resources":[{"name":"n","phone":"1"}]}}}`, "locale \"english\""},
		{"empty message", `{"locales":{"en":{"message":" ","resources":[{"name":"n","phone":"1"}]}}}`, "empty message"},
		{"no resources", `{"locales":{"en":{"message":"m","resources":[]}}}`, "no resources"},
		{"no way to reach", `{"locales":{"en":{"message":"m","resources":[{"name":"n"}]}}}`, "no phone, text or url"},
		{"bad phone", `{"locales":{"en":{"message":"m","resources":[{"name":"n","phone":"call me"}]}}}`, "not a number"},
		{"http url", `{"locales":{"en":{"message":"m","resources":[{"name":"n","url":"http://x.example"}]}}}`, "not an https"},
		{"javascript url", `{"locales":{"en":{"message":"m","resources":[{"name":"n","url":"javascript:alert(1)"}]}}}`, "not an https"},
		{"trailing data", `{"locales":{"en":{"message":"m","resources":[{"name":"n","phone":"1"}]}}} {}`, "data after"},
		{"empty fallback", `{"locales":{"fallback":{"message":"m","resources":[]}}}`, "no resources"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseResources(strings.NewReader(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseResources error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadResources(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crisis.json")
	if err := os.WriteFile(path, []byte(`{"locales":{"fallback":{"message":"Call someone.","resources":[{"name":"Local line","phone":"+44 116 123"}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := LoadResources(path)
	if err != nil {
		t.Fatal(err)
	}
	if key, lr := r.For("de-DE"); key != "de" || lr.Resources[0].Name != "Local line" {
		t.Errorf("For(de-DE) = %s %+v, want the file's fallback", key, lr)
	}
	if _, err := LoadResources(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat(" ", maxResourcesFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadResources(big); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("oversized file: err = %v, want larger than", err)
	}
}
