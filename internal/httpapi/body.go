package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
)

// codeBodyTimeout is the error of a request whose body did not arrive in time.
const codeBodyTimeout = "body_timeout"

// readBody reads every request's body before anything else looks at the request (routing,
// authentication, the handler), under a read deadline of BodyReadTimeout, and hands the handler
// the bytes it read. A client that declares a body and never sends it gets 408 when the deadline
// passes, on any route (/healthz included) and before authentication, instead of holding a
// goroutine for as long as it likes. Net/http would otherwise wait for such a body even on routes
// that never read it: it consumes the rest of a small body before it writes the response.
//
// The deadline is cleared once the body is in, so the NDJSON stream of a long turn is not cut:
// only the body's arrival is timed, never the response. A body over MaxBodyBytes is 413 here:
// at once when its Content-Length says so, without waiting for a byte of it, and otherwise as
// soon as its limit is passed.
func (s *Server) readBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Body == nil || req.Body == http.NoBody {
			return next(c)
		}
		if req.ContentLength > s.deps.MaxBodyBytes {
			return s.tooLarge(c)
		}
		rc := http.NewResponseController(c.Response().Writer)
		timed := rc.SetReadDeadline(time.Now().Add(s.deps.BodyReadTimeout)) == nil
		body, err := io.ReadAll(io.LimitReader(req.Body, s.deps.MaxBodyBytes+1))
		if err != nil {
			// Whatever is left of the body is still on the wire and must not be read as the
			// next request: the connection closes after the answer. The deadline stays
			// expired, so net/http does not wait for that rest either.
			c.Response().Header().Set(echo.HeaderConnection, "close")
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return newHTTPError(http.StatusRequestTimeout, codeBodyTimeout, "the request body did not arrive in time")
			}
			return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "reading the body: %v", err)
		}
		if timed {
			_ = rc.SetReadDeadline(time.Time{})
		}
		if int64(len(body)) > s.deps.MaxBodyBytes {
			return s.tooLarge(c)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		return next(c)
	}
}

// tooLarge answers a request whose body is over MaxBodyBytes. The rest of the body is still on
// the wire and must not be read as the next request: the connection closes after the answer.
func (s *Server) tooLarge(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderConnection, "close")
	return newHTTPError(http.StatusRequestEntityTooLarge, codeBodyTooLarge, "the body is larger than the limit")
}
