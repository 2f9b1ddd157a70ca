package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
)

// limitTurn counts a turn of a held session, which the gateway answers without the model,
// against Deps.TurnRateLimit a minute, per session and, when the session names a learner, per
// learner reference of the tenant across all its sessions (a hold follows the learner, so all
// of a held learner's sessions count together). It reports whether the turn may run; when not,
// it has set Retry-After (whole seconds) and err is 429 rate_limited.
//
// Such a turn costs no tokens and takes microseconds, and each one writes an audit record, so
// without this it would be free and unlimited. A turn that asks the model is bounded already,
// by the session's turn lock and its tenant's token budget, and is not counted here: counting
// it would add Redis round trips before every learner's first line. It runs after the session
// is claimed, since only the claimed session says whether it is held and whose it is.
//
// The counters are keyed by hashes of the session id and the learner reference, so that no
// key names what a learner's erasure deletes; they expire with their window. A limiter that
// fails lets the turn through, as rateLimit does.
func (s *Server) limitTurn(c echo.Context, sess *coach.Session) (ok bool, err error) {
	if s.deps.Limiter == nil || s.deps.TurnRateLimit <= 0 || !sess.Held() {
		return true, nil
	}
	keys := []string{"turns:s:" + sess.Tenant + ":" + digest(sess.ID)}
	if sess.Learner != "" {
		keys = append(keys, "turns:l:"+sess.Tenant+":"+digest(sess.Learner))
	}
	for _, key := range keys {
		allowed, retry, err := s.deps.Limiter.Allow(c.Request().Context(), key, s.deps.TurnRateLimit, rateWindow)
		if err != nil {
			logger(c).Warn().Err(err).Msg("turn rate limiter unavailable: letting the turn through")
			continue
		}
		if !allowed {
			secs := max(1, int(math.Ceil(retry.Seconds())))
			c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(secs))
			return false, newHTTPError(http.StatusTooManyRequests, codeRateLimited,
				"too many turns while the lesson is paused: at most "+strconv.Itoa(s.deps.TurnRateLimit)+" a minute for a session or a learner; retry after "+strconv.Itoa(secs)+"s")
		}
	}
	return true, nil
}

// digest returns the hex SHA-256 of s.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
