package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
)

// Transport-level error codes; domain codes live in package coach.
const (
	codeBodyTooLarge     = "body_too_large"
	codeUnsupportedMedia = "unsupported_media_type"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
)

// errorBody is the JSON body of every error answered before a stream starts.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// status maps a domain error kind to its HTTP status. It is the only place that does.
func status(k coach.Kind) int {
	switch k {
	case coach.KindInvalid:
		return http.StatusBadRequest
	case coach.KindNotFound:
		return http.StatusNotFound
	case coach.KindConflict:
		return http.StatusConflict
	case coach.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case coach.KindUnavailable:
		return http.StatusServiceUnavailable
	case coach.KindLimited:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// httpError is an error that already knows its status, for problems only the transport sees.
type httpError struct {
	status int
	body   errorBody
}

func (e *httpError) Error() string { return e.body.Error + ": " + e.body.Message }

func newHTTPError(status int, code, message string) *httpError {
	return &httpError{status: status, body: errorBody{Error: code, Message: message}}
}

// errorHandler is Echo's HTTPErrorHandler: every error a handler or middleware returns is
// answered here as {"error","message"} with the status its kind maps to.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, body := s.errorResponse(err)
	var ce *coach.Error
	if errors.As(err, &ce) && ce.RetryAfter > 0 {
		c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(ce.RetryAfter.Seconds()))))
	}
	if code >= 500 {
		logger(c).Error().Err(err).Int("status", code).Msg("request failed")
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(code)
	} else {
		err = c.JSON(code, body)
	}
	if err != nil {
		logger(c).Debug().Err(err).Msg("writing the error response")
	}
}

func (s *Server) errorResponse(err error) (int, errorBody) {
	var he *httpError
	if errors.As(err, &he) {
		return he.status, he.body
	}
	var ee *echo.HTTPError
	if errors.As(err, &ee) {
		switch ee.Code {
		case http.StatusNotFound:
			return ee.Code, errorBody{Error: codeNotFound, Message: "no such route"}
		case http.StatusMethodNotAllowed:
			return ee.Code, errorBody{Error: codeMethodNotAllowed, Message: "method not allowed on this route"}
		case http.StatusRequestEntityTooLarge:
			return ee.Code, errorBody{Error: codeBodyTooLarge, Message: "request body too large"}
		}
		return ee.Code, errorBody{Error: http.StatusText(ee.Code), Message: http.StatusText(ee.Code)}
	}
	e := coach.AsError(err)
	if e.Kind == coach.KindInternal {
		return http.StatusInternalServerError, errorBody{Error: coach.CodeInternal, Message: "internal error"}
	}
	return status(e.Kind), errorBody{Error: e.Code, Message: e.Message, Field: e.Field}
}
