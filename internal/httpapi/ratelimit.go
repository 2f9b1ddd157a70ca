package httpapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

const codeRateLimited = "rate_limited"

// rateWindow is the window of Deps.RateLimit: it counts requests per minute.
const rateWindow = time.Minute

// Limiter counts requests against a limit shared by every gateway instance.
type Limiter interface {
	// Allow counts one request of key against limit requests per window and says whether it may
	// go ahead; when not, retryAfter is how long until it may.
	Allow(ctx context.Context, key string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error)
}

// limitedRoutes are the routes that cost a model call or a new session: the ones rate limiting
// protects. Reads, drafts and proposals are cheap and stay unlimited.
var limitedRoutes = map[string]bool{
	http.MethodPost + " /v1/sessions":           true,
	http.MethodPost + " /v1/sessions/:id/turns": true,
	http.MethodPost + " /v1/sessions/:id/chat":  true,
	http.MethodPost + " /api/coach":             true,
}

// rateLimit refuses a tenant's requests to the limited routes beyond Deps.RateLimit per minute
// with 429 rate_limited and Retry-After (whole seconds). It runs after authentication, so the
// tenant is known; in open mode every caller is tenant "" and shares one bucket.
//
// When the limiter fails (Redis down), the request goes ahead and a warning is logged: a
// gateway whose state store is down cannot serve turns anyway, and refusing every request
// because the counter is unreachable would turn a Redis hiccup into an outage of its own.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.deps.Limiter == nil || s.deps.RateLimit <= 0 || !limitedRoutes[c.Request().Method+" "+c.Path()] {
			return next(c)
		}
		ok, retry, err := s.deps.Limiter.Allow(c.Request().Context(), tenant(c), s.deps.RateLimit, rateWindow)
		if err != nil {
			logger(c).Warn().Err(err).Msg("rate limiter unavailable: letting the request through")
			return next(c)
		}
		if !ok {
			secs := max(1, int(math.Ceil(retry.Seconds())))
			c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(secs))
			return newHTTPError(http.StatusTooManyRequests, codeRateLimited,
				"too many requests: at most "+strconv.Itoa(s.deps.RateLimit)+" a minute; retry after "+strconv.Itoa(secs)+"s")
		}
		return next(c)
	}
}
