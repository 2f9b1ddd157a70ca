package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// cors returns Echo's CORS middleware for the browser origins in allow (exact
// scheme://host[:port], compared case-insensitively), or nil when allow is empty: then no CORS
// header is ever sent and browsers keep other origins out. The origins are matched by a function
// rather than handed to Echo as AllowOrigins, which reads them as wildcard patterns. It runs
// before authentication, since a preflight carries no Authorization header. X-Coach-Turn is
// exposed so that a page on another origin can name the turn it resumes (v1.2).
func cors(allow []string) echo.MiddlewareFunc {
	if len(allow) == 0 {
		return nil
	}
	allowed := make(map[string]bool, len(allow))
	for _, o := range allow {
		allowed[strings.ToLower(o)] = true
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return allowed[strings.ToLower(origin)], nil },
		AllowMethods:    []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions},
		AllowHeaders:    []string{echo.HeaderContentType, echo.HeaderAuthorization, echo.HeaderXRequestID},
		ExposeHeaders:   []string{echo.HeaderXRequestID, echo.HeaderRetryAfter, HeaderTurn},
		MaxAge:          600,
	})
}
