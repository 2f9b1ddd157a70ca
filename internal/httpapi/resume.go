package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/turns"
)

// Codes of the resume and stop routes' errors.
const (
	codeTurnNotFound  = "turn_not_found"
	codeNoRunningTurn = "no_running_turn"
)

// currentTurn finds the session's current turn for a resume: the session must be the caller's
// tenant's (as for GET /v1/sessions/{id}), then its pointer names the turn. want, when not
// empty, must be that turn. It returns "" when there is no turn to resume.
func (s *Server) currentTurn(c echo.Context, want string) (string, error) {
	ctx := c.Request().Context()
	id := c.Param("id")
	if _, err := s.deps.Service.GetSession(ctx, tenant(c), id); err != nil {
		return "", err
	}
	log := s.deps.Turns.Log()
	if log == nil {
		return "", nil
	}
	turn, _, _, err := log.Current(ctx, id)
	if err != nil {
		return "", err
	}
	if turn != "" && want != "" && want != turn {
		return "", newHTTPError(http.StatusNotFound, codeTurnNotFound, "the session's current turn is another one")
	}
	return turn, nil
}

// getCurrentTurn is GET /v1/sessions/{id}/turns/current?after=N[&turn=ID]: the lines of the
// session's running or last turn after the first N, then each new line until its last.
func (s *Server) getCurrentTurn(c echo.Context) error {
	after := int64(0)
	if v := c.QueryParam("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return coach.FieldError("after", "after must be a whole number of lines")
		}
		after = n
	}
	turn, err := s.currentTurn(c, c.QueryParam("turn"))
	if err != nil {
		return err
	}
	if turn == "" {
		return c.NoContent(http.StatusNoContent)
	}
	f, err := s.deps.Turns.Follow(c.Param("id"), turn)
	if err != nil {
		return err
	}
	defer f.Close()
	c.Response().Header().Set(HeaderTurn, turn)
	s.writeHeader(c)
	return s.follow(c, f, turn, after, newLineWriter(c.Response()), nil)
}

// getChatStream is GET /v1/sessions/{id}/chat/stream: the session's running or last turn as a
// UI message stream from its start (useChat's resume), whose message id is the turn's id (see
// openUIStream). A turn that ended without being stored, or was lost with its instance, is 204,
// as no turn is, and the replay leaves out what resets already discarded (see chatReplay).
func (s *Server) getChatStream(c echo.Context) error {
	turn, err := s.currentTurn(c, "")
	if err != nil {
		return err
	}
	if turn == "" {
		return c.NoContent(http.StatusNoContent)
	}
	// A turn whose instance died is ended as lost first, so that it is 204 as any turn that
	// ended in an error, rather than replayed until a reader finds it lost.
	if _, err := s.deps.Turns.Lost(c.Request().Context(), c.Param("id"), turn); err != nil {
		return err
	}
	plan, err := s.planChatReplay(c.Request().Context(), c.Param("id"), turn)
	if err != nil {
		return err
	}
	if plan.unstored {
		return c.NoContent(http.StatusNoContent)
	}
	f, err := s.deps.Turns.Follow(c.Param("id"), turn)
	if err != nil {
		return err
	}
	defer f.Close()
	c.Response().Header().Set(HeaderTurn, turn)
	w, err := openUIStream(c, turn)
	if err != nil {
		return err
	}
	return s.follow(c, f, turn, 0, w, plan.decoder())
}

// follow writes the lines of turn's log after the first after to out until the turn's last
// line, the client's leaving, or the turn's longest life. Raw lines go to a lineWriter as they
// are (decode is nil then); any other Sink gets them decoded by decode. The lines come from f,
// fed by the turn's one reader on this instance (turns.Turns.Follow, which the caller asks
// before its stream starts, so that a turn with as many resumers as it may have here is a
// plain 429); a client that does not take its lines as fast as the turn writes them is
// dropped, its response ended: it resumes with ?after=N.
func (s *Server) follow(c echo.Context, f *turns.Follower, turn string, after int64, out coach.Sink, decode func([]byte) (coach.Event, bool)) error {
	req := c.Request()
	opts := s.deps.Service.Options()
	deadline := time.Now().Add(opts.TurnTimeout + writeGrace)
	rc := http.NewResponseController(c.Response().Writer)
	_ = rc.SetWriteDeadline(deadline.Add(writeGrace))
	ctx, cancel := context.WithDeadline(req.Context(), deadline)
	defer cancel()
	raw, _ := out.(*lineWriter)
	for {
		b, ok := f.Next(ctx)
		if !ok {
			if err := f.Err(); err != nil {
				logger(c).Warn().Err(err).Str("session", c.Param("id")).Str("turn", turn).Msg("following a turn's lines")
			}
			return nil
		}
		n := b.First
		lines := b.Lines
		for len(lines) > 0 {
			i := bytes.IndexByte(lines, '\n')
			if i < 0 {
				i = len(lines) - 1
			}
			line := lines[:i+1]
			lines = lines[i+1:]
			n++
			if n <= after {
				continue
			}
			var err error
			if raw != nil {
				_, err = raw.w.Write(line)
			} else if e, ok := decode(bytes.TrimSuffix(line, []byte("\n"))); ok {
				err = out.Emit(e)
			}
			if err != nil {
				return nil
			}
		}
		if err := out.Flush(); err != nil {
			return nil
		}
		if b.End {
			return nil
		}
	}
}

// deleteCurrentTurn is DELETE /v1/sessions/{id}/turns/current: it stops the session's running
// turn wherever it runs. The turn ends with a turn_cancelled error line, which every reader
// gets, and stores nothing. A turn whose instance died runs nowhere: it is ended as lost
// (turns.Turns.Lost), and the answer is 404 no_running_turn.
func (s *Server) deleteCurrentTurn(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if _, err := s.deps.Service.GetSession(ctx, tenant(c), id); err != nil {
		return err
	}
	stopped, err := s.deps.Turns.Stop(ctx, id)
	if err != nil {
		return err
	}
	if stopped {
		return c.NoContent(http.StatusNoContent)
	}
	return newHTTPError(http.StatusNotFound, codeNoRunningTurn, "the session has no running turn")
}
