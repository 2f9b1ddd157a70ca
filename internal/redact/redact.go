// Package redact owns what the gateway may say about credentials and untrusted text in its logs
// and errors: URLs without their userinfo or token query parameters, text without a key or
// password in any of the encodings an endpoint may echo it in, and bounded excerpts of bodies
// an endpoint or model sends.
package redact

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mask replaces a credential.
const Mask = "***"

// tokenParams are the query parameters that carry credentials in base, OTLP and Redis URLs
// (Azure's SAS "sig", signed URLs' "signature"); they are matched case-insensitively.
var tokenParams = []string{"token", "key", "api_key", "access_token", "apikey", "signature", "sig"}

func isTokenParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	return slices.Contains(tokenParams, strings.ToLower(name))
}

// URL returns s with its userinfo replaced by *** (user:pass@host → ***@host) and the values of
// its token query parameters (see tokenParams) replaced by ***. Other parameters keep their
// order and encoding. Text that does not parse as a URL is scrubbed the same way by position.
func URL(s string) string {
	rest, frag, hasFrag := strings.Cut(s, "#")
	base, query, hasQuery := strings.Cut(rest, "?")
	if scheme := strings.Index(base, "://"); scheme >= 0 {
		auth := base[scheme+3:]
		if slash := strings.IndexByte(auth, '/'); slash >= 0 {
			auth = auth[:slash]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			base = base[:scheme+3] + Mask + base[scheme+3+at:]
		}
	}
	if hasQuery {
		params := strings.Split(query, "&")
		for i, p := range params {
			name, _, hasValue := strings.Cut(p, "=")
			if hasValue && isTokenParam(name) {
				params[i] = name + "=" + Mask
			}
		}
		base += "?" + strings.Join(params, "&")
	}
	if hasFrag {
		base += "#" + frag
	}
	return base
}

// Scrubber removes credentials from text an endpoint sends back, such as an error body that
// echoes the request's headers or URL. The zero Scrubber removes nothing.
type Scrubber struct {
	// forms are the literal strings to remove, longest first, so that a form containing
	// another is removed whole.
	forms []string
}

// NewScrubber returns a Scrubber for the API key sent as "Bearer <key>" and for the credentials
// of the URLs given (userinfo, token query parameters). Each is removed as sent, percent-encoded,
// and in base64 (standard and URL alphabets, padded or not): the key alone, "Bearer <key>", and
// "user:pass" as Basic auth sends it.
func NewScrubber(key string, urls ...string) Scrubber {
	var secrets, encoded []string
	if key != "" {
		secrets = append(secrets, key)
		encoded = append(encoded, key, "Bearer "+key)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if u.User != nil {
			name := u.User.Username()
			pass, hasPass := u.User.Password()
			if hasPass && pass != "" {
				secrets = append(secrets, pass)
				encoded = append(encoded, pass)
			}
			basic := name
			if hasPass {
				basic += ":" + pass
			}
			if basic != "" {
				secrets = append(secrets, basic, u.User.String())
				encoded = append(encoded, basic)
			}
		}
		for name, values := range u.Query() {
			if isTokenParam(name) {
				for _, v := range values {
					if v != "" {
						secrets = append(secrets, v)
						encoded = append(encoded, v)
					}
				}
			}
		}
	}
	var forms []string
	for _, s := range secrets {
		forms = append(forms, s, url.QueryEscape(s), url.PathEscape(s))
	}
	for _, s := range encoded {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(s)))
		}
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return Scrubber{forms: slices.Compact(forms)}
}

// Scrub returns text with every credential form replaced by ***.
func (s Scrubber) Scrub(text string) string {
	for _, f := range s.forms {
		if f != "" && strings.Contains(text, f) {
			text = strings.ReplaceAll(text, f, Mask)
		}
	}
	return text
}

// Excerpt returns s if it holds at most n bytes, else its first bytes up to n (cut on a UTF-8
// boundary) followed by a note of how many bytes were left out, so that a reader knows the text
// goes on.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + fmt.Sprintf("…[%d bytes cut]", len(s)-cut)
}
