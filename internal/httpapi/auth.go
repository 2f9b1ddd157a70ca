package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const (
	codeUnauthorized = "unauthorized"
	// codeForbidden answers a valid key that may not use a route: an operator route asked for
	// with a key that is not an operator key of its tenant.
	codeForbidden = "forbidden"
)

// APIKey is a client's key as configured: the tenant it acts for and the SHA-256 of the key.
type APIKey struct {
	Tenant string
	Hash   [sha256.Size]byte
	// Operator marks an operator key of the tenant (wire contract v1.3).
	Operator bool
}

// HashKey returns the SHA-256 of a key, the form in which keys are configured.
func HashKey(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// protected reports whether a request needs a key: everything under /v1 and /api. Health,
// readiness, metrics and the static UI stay open. The decision looks at the route Echo matched
// as well as at the decoded and the raw path, and protects when any of them is an API path, so
// that no spelling of a path reaches an API handler unauthenticated.
func protected(c echo.Context) bool {
	req := c.Request()
	for _, p := range []string{c.Path(), req.URL.Path, req.URL.RawPath} {
		if p == "/v1" || p == "/api" || strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/api/") {
			return true
		}
	}
	return false
}

// authenticate lets a request to the API through only with a configured key, sent as
// "Authorization: Bearer <key>", and makes the key's tenant the request's, and whether it is an
// operator key of that tenant. Without configured keys the gateway is open and every request acts
// for tenant "" as its operator: an open gateway lets every caller use every route, the operator
// routes included, so that a fresh install can clear a hold, read the audit, export and erase
// (and the start log says so). Keys are what separate learners from operators.
//
// The key is hashed and compared with every configured hash in constant time, without stopping
// at a match, so the time taken says nothing about which or how many keys exist. Neither the key
// nor its hash is ever logged.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(s.deps.APIKeys) == 0 {
			req := c.Request()
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), operatorKey, true)))
			return next(c)
		}
		if !protected(c) {
			return next(c)
		}
		req := c.Request()
		k, ok := s.lookupKey(bearer(req))
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="coachgw"`)
			return newHTTPError(http.StatusUnauthorized, codeUnauthorized, "send a valid API key as Authorization: Bearer <key>")
		}
		ctx := context.WithValue(req.Context(), tenantKey, k.Tenant)
		ctx = context.WithValue(ctx, operatorKey, k.Operator)
		ctx = context.WithValue(ctx, keyIDKey, KeyID(k.Hash))
		ctx = logger(c).With().Str("tenant", k.Tenant).Logger().WithContext(ctx)
		c.SetRequest(req.WithContext(ctx))
		return next(c)
	}
}

// bearer returns the token of an "Authorization: Bearer <token>" header, "" without one.
func bearer(req *http.Request) string {
	scheme, token, ok := strings.Cut(req.Header.Get(echo.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// lookupKey returns the configured entry of key. It visits every configured key whatever matches.
func (s *Server) lookupKey(key string) (APIKey, bool) {
	if key == "" {
		return APIKey{}, false
	}
	h := HashKey(key)
	found := -1
	for i, k := range s.deps.APIKeys {
		found = subtle.ConstantTimeSelect(subtle.ConstantTimeCompare(h[:], k.Hash[:]), i, found)
	}
	if found < 0 {
		return APIKey{}, false
	}
	return s.deps.APIKeys[found], true
}

// keyID returns the id of the request's key (KeyID), which names the key apart from its
// tenant's other keys without being the key; "" on an open gateway.
func keyID(c echo.Context) string {
	id, _ := c.Request().Context().Value(keyIDKey).(string)
	return id
}

// operator reports whether the request was made with an operator key of its tenant, or to an
// open gateway (no keys configured), where every caller is the operator.
func operator(c echo.Context) bool {
	op, _ := c.Request().Context().Value(operatorKey).(bool)
	return op
}

// KeyID returns the id of the key whose SHA-256 is hash: the first 12 hex digits of that hash,
// as COACH_API_KEYS configures it. An operator tells by it which of the tenant's keys acted;
// it says nothing of the key that the configuration does not already say.
func KeyID(hash [sha256.Size]byte) string { return hex.EncodeToString(hash[:6]) }

// learnerAsserter returns the id of the request's key when it is a learner key (not an
// operator's), whose learner references are only what its client says; "" otherwise, and on a
// gateway without keys.
func learnerAsserter(c echo.Context) string {
	if operator(c) {
		return ""
	}
	id, _ := c.Request().Context().Value(keyIDKey).(string)
	return id
}

// operatorOnly lets a request through only when it was made with an operator key of its tenant
// (a key entry ending in ":operator") or to an open gateway; any other key gets 403 forbidden. A learner's key, which the front end holds, thus never reaches an operator
// route, and the routes act on the key's own tenant only, like every other route.
func operatorOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !operator(c) {
			return newHTTPError(http.StatusForbidden, codeForbidden, "this route needs an operator key of the tenant")
		}
		return next(c)
	}
}
