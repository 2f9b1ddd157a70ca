package safety

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// FallbackLocale is the key of the resources used when neither a session's locale nor its
// language has an entry.
const FallbackLocale = "fallback"

// Resource is one place a learner in crisis can reach, in the shape of the safety line's
// "resources" items. At least one of Phone, Text and URL is set.
type Resource struct {
	Name string `json:"name"`
	// Phone is the number to call, as dialled in its country.
	Phone string `json:"phone,omitempty"`
	// Text says how to reach the service by text message (the number, and the word to send if any).
	Text string `json:"text,omitempty"`
	// URL is the service's web page or chat, https only.
	URL string `json:"url,omitempty"`
}

// LocaleResources is what a learner in one locale is shown: a short message in the locale's
// language and the resources, most important first.
type LocaleResources struct {
	Message   string     `json:"message"`
	Resources []Resource `json:"resources"`
}

// Resources holds the crisis resources per locale. The zero value has none; use
// BuiltinResources or LoadResources.
type Resources struct {
	byLocale map[string]LocaleResources
}

// builtinResources are the resources shipped with the gateway: national lines that answer
// around the clock and are free to call. Operators outside these locales (or with a line of
// their own, such as a school counsellor) set COACH_CRISIS_RESOURCES_FILE.
var builtinResources = map[string]LocaleResources{
	"en-US": {
		Message: "You don't have to go through this alone. You can talk to someone right now, any time, for free.",
		Resources: []Resource{
			{Name: "988 Suicide & Crisis Lifeline", Phone: "988", Text: "988", URL: "https://988lifeline.org"},
			{Name: "Emergency services (if you are in danger now)", Phone: "911"},
			{Name: "Childhelp National Child Abuse Hotline", Phone: "1-800-422-4453"},
		},
	},
	"es-US": {
		Message: "No tienes que pasar por esto a solas. Puedes hablar con alguien ahora mismo, a cualquier hora y gratis.",
		Resources: []Resource{
			{Name: "988 Línea de Prevención del Suicidio y Crisis (llama al 988 y marca 2 para español)", Phone: "988", Text: "Envía AYUDA al 988", URL: "https://988lineadevida.org"},
			{Name: "Emergencias (si estás en peligro ahora)", Phone: "911"},
			{Name: "Childhelp, línea nacional contra el abuso infantil (con intérpretes en español)", Phone: "1-800-422-4453"},
		},
	},
	"es-ES": {
		Message: "No tienes que pasar por esto a solas. Puedes hablar con alguien ahora mismo, a cualquier hora y gratis.",
		Resources: []Resource{
			{Name: "Línea 024 de atención a la conducta suicida", Phone: "024"},
			{Name: "Emergencias (si estás en peligro ahora)", Phone: "112"},
			{Name: "Fundación ANAR, teléfono de ayuda a niños y adolescentes", Phone: "900 20 20 10", URL: "https://www.anar.org"},
		},
	},
	"es-MX": {
		Message: "No tienes que pasar por esto a solas. Puedes hablar con alguien ahora mismo, a cualquier hora y gratis.",
		Resources: []Resource{
			{Name: "Línea de la Vida", Phone: "800 911 2000"},
			{Name: "Emergencias (si estás en peligro ahora)", Phone: "911"},
		},
	},
	// 116 123 is the EU's harmonised number for emotional support
	// (https://digital-strategy.ec.europa.eu/en/policies/116-helplines), but it is in service in
	// some member states only and under different services: it is named where the service that
	// answers it is known (Samaritans in the UK and Ireland), not in a generic European entry
	// whose number might not ring. Sources, read 2026-11: Samaritans https://www.samaritans.org/how-we-can-help/contact-samaritan/
	// (116 123, free, 24 hours, UK and Ireland); NHS https://www.nhs.uk/nhs-services/mental-health-services/where-to-get-urgent-help-for-mental-health/
	// (111, and 999 in an emergency).
	"en-GB": {
		Message: "You don't have to go through this alone. You can talk to someone right now, any time, for free.",
		Resources: []Resource{
			{Name: "Samaritans (free, any time)", Phone: "116 123", URL: "https://www.samaritans.org"},
			{Name: "Emergency services (if you are in danger now)", Phone: "999"},
			{Name: "NHS 111, urgent mental health help (choose the mental health option)", Phone: "111", URL: "https://111.nhs.uk"},
		},
	},
	// Sources: Samaritans Ireland https://www.samaritans.org/ireland/how-we-can-help/contact-samaritan/
	// (116 123, free, 24 hours); HSE https://www2.hse.ie/mental-health/services-support/get-urgent-help/
	// (112 or 999 in an emergency).
	"en-IE": {
		Message: "You don't have to go through this alone. You can talk to someone right now, any time, for free.",
		Resources: []Resource{
			{Name: "Samaritans (free, any time)", Phone: "116 123", URL: "https://www.samaritans.org/ireland/"},
			{Name: "Emergency services (if you are in danger now; 999 works too)", Phone: "112"},
		},
	},
	// Sources: 9-8-8 https://988.ca (call or text 988, 24 hours, English and French); Government of
	// Canada https://www.canada.ca/en/public-health/services/mental-health-services/mental-health-get-help.html
	// (911 in an emergency).
	"en-CA": {
		Message: "You don't have to go through this alone. You can talk to someone right now, any time, for free.",
		Resources: []Resource{
			{Name: "9-8-8 Suicide Crisis Helpline", Phone: "988", Text: "988", URL: "https://988.ca"},
			{Name: "Emergency services (if you are in danger now)", Phone: "911"},
		},
	},
	// Sources: Lifeline Australia https://www.lifeline.org.au (13 11 14, 24 hours); healthdirect
	// https://www.healthdirect.gov.au/emergency-situations-what-to-do (000 in an emergency).
	"en-AU": {
		Message: "You don't have to go through this alone. You can talk to someone right now, any time, for free.",
		Resources: []Resource{
			{Name: "Lifeline (any time)", Phone: "13 11 14", URL: "https://www.lifeline.org.au"},
			{Name: "Emergency services (if you are in danger now)", Phone: "000"},
		},
	},
	// The language-level and fallback entries name no emergency number: it differs by country
	// (112, 911, 999…), and a wrong one is worse than the message's advice to call the local one.
	"es": {
		Message: "No tienes que pasar por esto a solas. Busca la línea de ayuda de tu país o llama a emergencias si estás en peligro.",
		Resources: []Resource{
			{Name: "Find A Helpline: líneas de ayuda gratuitas por país", URL: "https://findahelpline.com"},
		},
	},
	FallbackLocale: {
		Message: "You don't have to go through this alone. Find the free helpline for your country, or call your local emergency number if you are in danger.",
		Resources: []Resource{
			{Name: "Find A Helpline: free, confidential helplines by country", URL: "https://findahelpline.com"},
		},
	},
}

// BuiltinResources returns the resources shipped with the gateway.
func BuiltinResources() *Resources {
	r := &Resources{byLocale: make(map[string]LocaleResources, len(builtinResources))}
	for k, v := range builtinResources {
		r.byLocale[k] = v
	}
	return r
}

// maxResourcesFile bounds the file read at start-up; a crisis-resources file is a few KB.
const maxResourcesFile = 1 << 20

// ResourcesFile is the COACH_CRISIS_RESOURCES_FILE format:
//
//	{"locales": {"en-GB": {"message": "…", "resources": [{"name": "Samaritans", "phone": "116 123", "url": "https://www.samaritans.org"}]},
//	             "fallback": {…}}}
//
// A locale in the file replaces the built-in entry of the same locale whole; the built-in
// entries of locales the file does not name stay. Keys are BCP 47 tags of a language and an
// optional region ("es", "es-AR", "es-419") or "fallback".
type ResourcesFile struct {
	Locales map[string]LocaleResources `json:"locales"`
}

// LoadResources reads a COACH_CRISIS_RESOURCES_FILE over the built-in resources.
func LoadResources(path string) (*Resources, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crisis resources: %w", err)
	}
	defer f.Close()
	r, err := ParseResources(io.LimitReader(f, maxResourcesFile+1))
	if err != nil {
		return nil, fmt.Errorf("crisis resources %s: %w", path, err)
	}
	return r, nil
}

// ParseResources reads the file format of ResourcesFile over the built-in resources and
// validates every entry, so a typo fails the start-up instead of showing a learner in crisis
// an empty list.
func ParseResources(rd io.Reader) (*Resources, error) {
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	if len(data) > maxResourcesFile {
		return nil, fmt.Errorf("larger than %d bytes", maxResourcesFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var file ResourcesFile
	if err := dec.Decode(&file); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	if len(file.Locales) == 0 {
		return nil, errors.New(`no "locales"`)
	}
	r := BuiltinResources()
	for key, lr := range file.Locales {
		locale, err := canonicalLocale(key)
		if err != nil {
			return nil, err
		}
		if err := validateLocaleResources(lr); err != nil {
			return nil, fmt.Errorf("locale %q: %w", key, err)
		}
		r.byLocale[locale] = lr
	}
	return r, nil
}

var (
	localeRE = regexp.MustCompile(`^([a-zA-Z]{2,3})(?:[-_]([a-zA-Z]{2}|[0-9]{3}))?$`)
	phoneRE  = regexp.MustCompile(`^\+?[0-9][0-9 ().-]{1,24}$`)
)

// canonicalLocale writes a tag as language-REGION ("es_ar" → "es-AR"), or reports it invalid.
func canonicalLocale(tag string) (string, error) {
	if tag == FallbackLocale {
		return tag, nil
	}
	m := localeRE.FindStringSubmatch(strings.TrimSpace(tag))
	if m == nil {
		return "", fmt.Errorf("locale %q: want a language and an optional region, such as es or es-AR, or %q", tag, FallbackLocale)
	}
	if m[2] == "" {
		return strings.ToLower(m[1]), nil
	}
	return strings.ToLower(m[1]) + "-" + strings.ToUpper(m[2]), nil
}

func validateLocaleResources(lr LocaleResources) error {
	if strings.TrimSpace(lr.Message) == "" {
		return errors.New("empty message")
	}
	if len(lr.Resources) == 0 {
		return errors.New("no resources")
	}
	for i, res := range lr.Resources {
		if strings.TrimSpace(res.Name) == "" {
			return fmt.Errorf("resource %d: empty name", i)
		}
		if res.Phone == "" && res.Text == "" && res.URL == "" {
			return fmt.Errorf("resource %d (%s): no phone, text or url", i, res.Name)
		}
		if res.Phone != "" && !phoneRE.MatchString(res.Phone) {
			return fmt.Errorf("resource %d (%s): phone %q is not a number to dial", i, res.Name, res.Phone)
		}
		if res.URL != "" {
			u, err := url.Parse(res.URL)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("resource %d (%s): url %q is not an https address", i, res.Name, res.URL)
			}
		}
	}
	return nil
}

// For returns the resources for a session's locale and the BCP 47 tag they are for: the exact
// tag when resources were found under it ("es-MX"), else the session's language ("es", "en"),
// whose resources are its language's or, when the language has none, the fallback's. A locale
// that is no tag at all reads as English, the sessions' default. The tag is never
// FallbackLocale: it is written in the safety line, whose readers (a page's lang attribute,
// a screen reader) take it as a language.
func (r *Resources) For(locale string) (string, LocaleResources) {
	lang := "en"
	if c, err := canonicalLocale(locale); err == nil && c != FallbackLocale {
		if lr, ok := r.byLocale[c]; ok {
			return c, lr
		}
		lang, _, _ = strings.Cut(c, "-")
		if lr, ok := r.byLocale[lang]; ok {
			return lang, lr
		}
	}
	return lang, r.byLocale[FallbackLocale]
}
