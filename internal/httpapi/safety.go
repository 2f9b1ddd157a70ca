package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
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

// Pages of GET /v1/safety/events.
const (
	defaultSafetyEventsPage = 100
	maxSafetyEventsPage     = 1000
)

// safetyEventsResponse is a page of the tenant's safety audit.
type safetyEventsResponse struct {
	Events []safety.Record `json:"events"`
	// Next is the after of the following page: the last event's id, or the request's after
	// when there is nothing newer yet ("" when the tenant has no events at all).
	Next string `json:"next"`
}

// getSafetyEvents is GET /v1/safety/events?after=ID&limit=N (v1.3, operator keys only): up to
// limit (1 to 1000, default 100) audit records of the key's tenant after the record whose id is
// after, oldest first.
func (s *Server) getSafetyEvents(c echo.Context) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	switch {
	case limit == 0:
		limit = defaultSafetyEventsPage
	case limit > maxSafetyEventsPage:
		return coach.FieldError("limit", "limit must be between 1 and %d", maxSafetyEventsPage)
	}
	events, next, err := s.deps.SafetyEvents.SafetyEvents(c.Request().Context(), tenant(c), c.QueryParam("after"), int(limit))
	if err != nil {
		return err
	}
	if events == nil {
		events = []safety.Record{}
	}
	return c.JSON(http.StatusOK, safetyEventsResponse{Events: events, Next: next})
}
