package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// CORS answers, fixed for every allowed origin.
const (
	corsAllowMethods  = "GET, POST, PUT, DELETE, OPTIONS"
	corsAllowHeaders  = "Content-Type, Authorization, X-Request-Id"
	corsExposeHeaders = "X-Request-Id, Retry-After"
	corsMaxAge        = "600"
)

// cors returns a middleware that lets the browser origins in allow (exact scheme://host[:port],
// compared case-insensitively) call the API, or nil when allow is empty: then no CORS header is
// ever sent and browsers keep other origins out.
//
// It is written here rather than taken from Echo's middleware package, which treats its
// AllowOrigins entries as wildcard patterns and subdomain matches (this allow-list is exact) and
// would pull a module (golang.org/x/time) that the build does not otherwise need. It runs before
// authentication: a preflight carries no Authorization header and is answered here, with 204.
// A request from an origin not in the list gets no Access-Control-Allow-Origin, so the browser
// refuses to show it the answer; a preflight from one is answered 204 without CORS headers.
func cors(allow []string) echo.MiddlewareFunc {
	if len(allow) == 0 {
		return nil
	}
	allowed := make(map[string]bool, len(allow))
	for _, o := range allow {
		allowed[strings.ToLower(o)] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			h := c.Response().Header()
			h.Add(echo.HeaderVary, echo.HeaderOrigin)
			origin := req.Header.Get(echo.HeaderOrigin)
			preflight := req.Method == http.MethodOptions && req.Header.Get(echo.HeaderAccessControlRequestMethod) != ""
			if origin == "" || !allowed[strings.ToLower(origin)] {
				if preflight {
					return c.NoContent(http.StatusNoContent)
				}
				return next(c)
			}
			h.Set(echo.HeaderAccessControlAllowOrigin, origin)
			if !preflight {
				h.Set(echo.HeaderAccessControlExposeHeaders, corsExposeHeaders)
				return next(c)
			}
			h.Add(echo.HeaderVary, echo.HeaderAccessControlRequestMethod)
			h.Add(echo.HeaderVary, echo.HeaderAccessControlRequestHeaders)
			h.Set(echo.HeaderAccessControlAllowMethods, corsAllowMethods)
			h.Set(echo.HeaderAccessControlAllowHeaders, corsAllowHeaders)
			h.Set(echo.HeaderAccessControlMaxAge, corsMaxAge)
			return c.NoContent(http.StatusNoContent)
		}
	}
}
