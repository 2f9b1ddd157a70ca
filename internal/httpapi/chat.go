package httpapi

import (
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
	return s.runTurn(c, c.Param("id"), in, openUIStream)
}

// openUIStream starts a UI message stream: its headers, pushed out at once, and the start event.
func openUIStream(c echo.Context) (coach.Sink, error) {
	res := c.Response()
	uistream.SetHeaders(res.Header())
	res.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res.Writer)
	w, err := uistream.NewWriter(res, rc.Flush, "msg-"+coach.NewID())
	if err != nil {
		return nil, err
	}
	return w, rc.Flush()
}
