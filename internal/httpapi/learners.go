package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
)

// learnerRef returns the learner reference of a /v1/learners/{ref} route, unescaped: a client
// may percent-encode any character of it (pupil%40example.org).
func learnerRef(c echo.Context) (string, error) {
	ref, err := url.PathUnescape(c.Param("ref"))
	if err != nil || !coach.ValidLearner(ref) {
		return "", coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "the learner reference must be 1 to 128 printable ASCII characters without spaces or '/'")
	}
	return ref, nil
}

// getLearnerExport is GET /v1/learners/{ref}/export (operator keys only): everything the
// gateway keeps of the learner of the key's tenant, as an NDJSON stream of one line per session,
// transcript page and safety event (coach.ExportLearner), written as it is read so that no
// learner's size makes the gateway hold it whole. Until the first line the answer may still be
// an error status; after it, a failure ends the stream with an error line.
func (s *Server) getLearnerExport(c echo.Context) error {
	ref, err := learnerRef(c)
	if err != nil {
		return err
	}
	w := c.Response()
	started := false
	err = s.deps.Service.ExportLearner(c.Request().Context(), tenant(c), ref, func(line any) error {
		if !started {
			h := w.Header()
			h.Set(echo.HeaderContentType, "application/x-ndjson")
			// The export is one person's data: no cache on the way may keep a copy.
			h.Set(echo.HeaderCacheControl, "no-store")
			h.Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		b, err := json.Marshal(line)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
	if err == nil || !started {
		return err
	}
	code, body := s.errorResponse(err)
	if code >= 500 {
		logger(c).Error().Err(err).Int("status", code).Msg("learner export failed after its first line")
	}
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		errorBody
	}{"error", body})
	_, _ = w.Write(append(b, '\n'))
	return nil
}

// deleteLearner is DELETE /v1/learners/{ref} (v1.3, operator keys only): erases everything the
// gateway keeps of the learner of the key's tenant. It answers 204 whether or not there was
// anything to erase, so erasing again is safe.
func (s *Server) deleteLearner(c echo.Context) error {
	ref, err := learnerRef(c)
	if err != nil {
		return err
	}
	if err := s.deps.Service.EraseLearner(c.Request().Context(), tenant(c), ref); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// loggedPath returns the path of a request as the access log writes it: a learner route's
// reference is opaque client data that may name a person (an e-mail address), so those are
// logged as their route; every other path clipped like echoed input.
func loggedPath(c echo.Context) string {
	if route := c.Path(); strings.HasPrefix(route, "/v1/learners/") {
		return route
	}
	return coach.Clip(c.Request().URL.Path)
}
