package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/uistream"
)

// postChat is POST /v1/sessions/{id}/chat: a turn asked for by the AI SDK's chat transport
// (useChat) and answered as its UI message stream. It is the same turn as postTurn's, only
// read from and written in the SDK's formats (package uistream).
func (s *Server) postChat(c echo.Context) error {
	var req uistream.Request
	if err := s.decode(c, &req); err != nil {
		return err
	}
	in, err := req.TurnInput()
	if err != nil {
		return err
	}
	if req.Regenerate() {
		if err := s.checkRegenerate(c, &in); err != nil {
			return err
		}
	}
	return s.runTurn(c, c.Param("id"), in, openUIStream)
}

// checkRegenerate lets the SDK's regenerate() run the learner's last input again only when the
// turn that answered it stored nothing (it failed, was stopped, or never started): the session's
// newest learner entry is then another input. When the newest learner entry is this very input,
// the turn is part of the session and running it again would answer it twice: 422 naming the
// trigger. (A learner who failed on the same input twice in a row, e.g. "[Continue]", is told
// to send it as a new message.)
func (s *Server) checkRegenerate(c echo.Context, in *coach.TurnInput) error {
	if err := s.cleanTurn(in); err != nil {
		return err
	}
	page, err := s.deps.Service.Transcript(c.Request().Context(), tenant(c), c.Param("id"), 0, regenerateLookback)
	if err != nil {
		return err
	}
	want, err := json.Marshal(in)
	if err != nil {
		return err
	}
	for i := len(page.Entries) - 1; i >= 0; i-- {
		e := page.Entries[i]
		if e.Role != coach.TranscriptLearner {
			continue
		}
		var stored coach.TurnInput
		if json.Unmarshal(e.Input, &stored) == nil {
			if got, err := json.Marshal(stored); err == nil && bytes.Equal(got, want) {
				return coach.FieldError("trigger", "the last turn was stored: it cannot be regenerated; send a new message")
			}
		}
		return nil
	}
	return nil
}

// regenerateLookback is how many of the newest transcript entries checkRegenerate reads to find
// the newest learner entry: a turn stores one learner entry, up to one injected card and its
// result.
const regenerateLookback = 4

// openUIStream starts turn's UI message stream: its headers, pushed out at once, and the start
// event. The message's id is the turn's id, as in GET …/chat/messages: the SDK replaces its last
// message when a stream starts with that message's id, so a resume replaying a turn whose answer
// the client restored redraws that answer instead of showing it twice.
func openUIStream(c echo.Context, turn string) (coach.Sink, error) {
	res := c.Response()
	uistream.SetHeaders(res.Header())
	res.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res.Writer)
	w, err := uistream.NewWriter(res, rc.Flush, turn)
	if err != nil {
		return nil, err
	}
	return w, rc.Flush()
}
