package httpapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/uistream"
)

// keepInput keeps in, the learner input of turn of session, for as long as the turn may run, in
// the background: the turn's first line does not wait for it. The input is encoded as the
// engine encodes the learner's transcript entry, so the pending message and the stored one
// have the same parts.
func (s *Server) keepInput(c echo.Context, session, turn string, in coach.TurnInput) {
	ti := s.deps.Turns.Inputs()
	if ti == nil {
		return
	}
	input, err := json.Marshal(in)
	if err != nil {
		return
	}
	ttl := s.deps.Service.Options().TurnTimeout + writeGrace
	log := logger(c)
	s.streams.Add(1)
	go func() {
		defer s.streams.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ti.KeepInput(ctx, session, turn, input, ttl); err != nil {
			log.Warn().Err(err).Str("session", session).Str("turn", turn).Msg("a running turn's input could not be kept for restore")
		}
	}()
}

// pendingMessage returns the learner message of the session's running turn, for the newest page
// of GET …/chat/messages (entries, before 0): nil when no turn runs, when entries already hold
// the turn (it committed and its pointer has not yet said it ended), or when its input is not
// kept. A turn that ended without being stored, or was lost with its instance, leaves nothing. It is best effort: a failure to
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
