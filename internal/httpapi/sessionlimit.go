package httpapi

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/labstack/echo/v4"
)

// codeSessionRateLimited is the error of a session refused by Deps.SessionRateLimit: a code of
// its own, since turns of existing sessions still go ahead.
const codeSessionRateLimited = "session_rate_limited"

// limitSessions refuses POST /v1/sessions beyond Deps.SessionRateLimit a minute per tenant with
// 429 session_rate_limited and Retry-After (whole seconds). A session costs memory in the state
// store until it expires, so one client creating them as fast as it can would fill the store
// (and, on the embedded one, lengthen every save) for everyone.
//
// With API keys the limit is the tenant's. Without, every caller is tenant "", and one budget
// for all would let one client starve the rest, so the limit is per client address: the TCP
// peer's, never a header a client can write (X-Forwarded-For), and for IPv6 its /64, which a
// single host usually holds whole. Behind a proxy every client has the proxy's address; such a
// deployment configures API keys, or raises the limit.
//
// A limiter that fails lets the request through, as rateLimit does: creating the session then
// meets the same store and answers for itself.
func (s *Server) limitSessions(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if s.deps.Limiter == nil || s.deps.SessionRateLimit <= 0 || req.Method != http.MethodPost || c.Path() != "/v1/sessions" {
			return next(c)
		}
		key := "sessions:t:" + tenant(c)
		if len(s.deps.APIKeys) == 0 {
			key = "sessions:a:" + clientAddress(req.RemoteAddr)
		}
		ok, retry, err := s.deps.Limiter.Allow(req.Context(), key, s.deps.SessionRateLimit, rateWindow)
		if err != nil {
			logger(c).Warn().Err(err).Msg("session rate limiter unavailable: letting the request through")
			return next(c)
		}
		if !ok {
			secs := max(1, int(math.Ceil(retry.Seconds())))
			c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(secs))
			return newHTTPError(http.StatusTooManyRequests, codeSessionRateLimited,
				"too many new sessions: at most "+strconv.Itoa(s.deps.SessionRateLimit)+" a minute; retry after "+strconv.Itoa(secs)+"s")
		}
		return next(c)
	}
}

// clientAddress returns the address that new sessions are counted against for a peer at
// remoteAddr (host:port): an IPv4 address as it is, an IPv6 address's /64 prefix (an
// IPv4-mapped one as IPv4), and anything else as it is.
func clientAddress(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.WithZone("").Prefix(64)
	return p.String()
}
