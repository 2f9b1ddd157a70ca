package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/uistream"
)

// pendingMessage returns the learner message of the session's running turn, for the newest page
// of GET …/chat/messages (entries, before 0): nil when no turn runs, when entries already hold
// the turn (it committed and its pointer has not yet said it ended), or when its input is not
// kept (the first batch of the turn's log keeps it, see turns.Write). A turn that ended without
// being stored, or was lost with its instance, leaves nothing. It is best effort: a failure to
// read is logged, and the page is answered without it.
func (s *Server) pendingMessage(c echo.Context, entries []coach.TranscriptEntry) *uistream.UIMessage {
	ti := s.deps.Turns.Inputs()
	if ti == nil {
		return nil
	}
	ctx, id := c.Request().Context(), c.Param("id")
	turn, running, _, err := s.deps.Turns.Log().Current(ctx, id)
	if err != nil {
		logger(c).Warn().Err(err).Str("session", id).Msg("reading the running turn for chat/messages")
		return nil
	}
	if !running {
		return nil
	}
	for _, e := range entries {
		if e.Turn == turn {
			return nil
		}
	}
	// A turn whose instance died will never answer: it is ended as lost here, not shown as
	// pending until its pointer expires.
	if lost, err := s.deps.Turns.Lost(ctx, id, turn); err != nil || lost {
		if err != nil {
			logger(c).Warn().Err(err).Str("session", id).Str("turn", turn).Msg("checking that the running turn's instance is alive for chat/messages")
		}
		return nil
	}
	input, err := ti.Input(ctx, id, turn)
	if err != nil {
		logger(c).Warn().Err(err).Str("session", id).Str("turn", turn).Msg("reading the running turn's input for chat/messages")
		return nil
	}
	if len(input) == 0 {
		return nil
	}
	m := uistream.PendingMessage(turn, input)
	return &m
}
