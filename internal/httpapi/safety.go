package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
)

// safetyActionRequest is the body of POST /v1/sessions/{id}/safety.
type safetyActionRequest struct {
	Action string `json:"action"`
}

// postSafety is POST /v1/sessions/{id}/safety (v1.3, operator keys only): {"action":"clear"}
// ends the session's safety hold and answers the session. Clearing a session without a hold
// answers it unchanged.
func (s *Server) postSafety(c echo.Context) error {
	var in safetyActionRequest
	if err := s.decode(c, &in); err != nil {
		return err
	}
	if in.Action != "clear" {
		return coach.FieldError("action", "action must be \"clear\"")
	}
	sess, err := s.deps.Service.ClearSafetyHold(c.Request().Context(), tenant(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.withLimits(sess))
}
