package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/connlimit"
)

// codeSessionRateLimited is the error of a session refused by Deps.SessionRateLimit: a code of
// its own, since turns of existing sessions still go ahead.
const codeSessionRateLimited = "session_rate_limited"

// limitSessions refuses a new session (POST /v1/sessions, learner being the request's learner
// reference) beyond Deps.SessionRateLimit a minute with 429 session_rate_limited and
// Retry-After (whole seconds). A session costs memory in the state store until it expires, so
// one client creating them as fast as it can would fill the store (and, on the embedded one,
// lengthen every save) for everyone.
//
// The count is the smallest share the request names, so that one client's flood never refuses
// another: with API keys, the learner reference's (within the tenant) when one is given, else
// the key's; a tenant's learners and keys do not share one count. Without API keys every caller
// is tenant "" and any learner reference is unchecked text that a flood could vary, so the count
// is the client address's: the TCP peer's, never a header a client can write (X-Forwarded-For),
// and for IPv6 its /64, which a single host usually holds whole. Behind a proxy every client has
// the proxy's address; such a deployment configures API keys, or raises the limit. What a key
// does across many learner references stays bounded by the tenant's COACH_RATE_LIMIT.
//
// A limiter that fails lets the request through, as rateLimit does: creating the session then
// meets the same store and answers for itself.
func (s *Server) limitSessions(c echo.Context, learner string) error {
	req := c.Request()
	if s.deps.Limiter == nil || s.deps.SessionRateLimit <= 0 {
		return nil
	}
	ok, retry, err := s.deps.Limiter.Allow(req.Context(), s.sessionCountKey(c, learner), s.deps.SessionRateLimit, rateWindow)
	if err != nil {
		logger(c).Warn().Err(err).Msg("session rate limiter unavailable: letting the request through")
		return nil
	}
	if !ok {
		secs := max(1, int(math.Ceil(retry.Seconds())))
		c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(secs))
		return newHTTPError(http.StatusTooManyRequests, codeSessionRateLimited,
			"too many new sessions: at most "+strconv.Itoa(s.deps.SessionRateLimit)+" a minute; retry after "+strconv.Itoa(secs)+"s")
	}
	return nil
}

// sessionCountKey returns the limiter key that a new session of learner is counted against
// (see limitSessions). A learner reference is hashed: it may be long, and the limiter's keys
// should not hold it.
func (s *Server) sessionCountKey(c echo.Context, learner string) string {
	switch {
	case len(s.deps.APIKeys) == 0:
		return "sessions:a:" + connlimit.Client(c.Request().RemoteAddr)
	case learner != "":
		h := sha256.Sum256([]byte(tenant(c) + "\x00" + learner))
		return "sessions:l:" + hex.EncodeToString(h[:16])
	default:
		return "sessions:k:" + keyID(c)
	}
}
