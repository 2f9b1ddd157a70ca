package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/uistream"
)

// decode reads a JSON request body into dst: application/json only, valid UTF-8, one JSON
// value. readBody has already read the body and bounded its size and arrival time.
func (s *Server) decode(c echo.Context, dst any) error {
	req := c.Request()
	if mt, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
		return newHTTPError(http.StatusUnsupportedMediaType, codeUnsupportedMedia, "send the body as application/json")
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "reading the body: %v", err)
	}
	if !utf8.Valid(body) {
		return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "unexpected data after the JSON body")
	}
	return nil
}

type createSessionRequest struct {
	Contract string `json:"contract"`
	Module   string `json:"module"`
	Locale   string `json:"locale"`
	Learner  string `json:"learner"`
}

func (s *Server) createSession(c echo.Context) error {
	var in createSessionRequest
	if err := s.decode(c, &in); err != nil {
		return err
	}
	if err := s.limitSessions(c, in.Learner); err != nil {
		return err
	}
	sess, err := s.deps.Service.CreateSession(c.Request().Context(), tenant(c), in.Contract, coach.NewSession{Locale: in.Locale, Module: in.Module, Learner: in.Learner, AssertedBy: learnerAsserter(c)})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/sessions/"+sess.ID)
	return c.JSON(http.StatusCreated, s.withLimits(sess))
}

func (s *Server) getSession(c echo.Context) error {
	sess, err := s.deps.Service.GetSession(c.Request().Context(), tenant(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.withLimits(sess))
}

// deleteSession deletes a session; a held one only for an operator key, or on an open gateway,
// which lets every caller do what an operator does.
func (s *Server) deleteSession(c echo.Context) error {
	op := operator(c) || len(s.deps.APIKeys) == 0
	if err := s.deps.Service.DeleteSession(c.Request().Context(), tenant(c), c.Param("id"), op); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// messagesResponse is a page of a session's transcript.
type messagesResponse struct {
	Messages []coach.TranscriptEntry `json:"messages"`
	// Next is the before of the page of older entries; null on the oldest page.
	Next *int64 `json:"next"`
}

// getMessages answers a page of the learner's transcript: ?limit=N (1 to 200, default 50) entries
// before ?before=SEQ (default: the newest), oldest first.
func (s *Server) getMessages(c echo.Context) error {
	page, err := s.transcriptPage(c)
	if err != nil {
		return err
	}
	out := messagesResponse{Messages: page.Entries, Next: nextSeq(page)}
	if out.Messages == nil {
		out.Messages = []coach.TranscriptEntry{}
	}
	return c.JSON(http.StatusOK, out)
}

// chatMessagesResponse is a page of a session's transcript as AI SDK UI messages.
type chatMessagesResponse struct {
	Messages []uistream.UIMessage `json:"messages"`
	// Next is the before of the page of older entries; null on the oldest page.
	Next *int64 `json:"next"`
}

// getChatMessages is GET /v1/sessions/{id}/chat/messages (v1.2): the same page as getMessages,
// shaped as the UI messages the chat route streamed (see uistream.Messages), for
// useChat({messages}). The newest page ends with the learner message of a turn that runs and is
// not stored yet (see pendingMessage), so that a page restored mid-answer shows what the
// learner asked before the resumed answer.
func (s *Server) getChatMessages(c echo.Context) error {
	page, err := s.transcriptPage(c)
	if err != nil {
		return err
	}
	msgs := uistream.Messages(page.Entries)
	if before, _ := queryInt(c, "before"); before == 0 {
		if m := s.pendingMessage(c, page.Entries); m != nil {
			msgs = append(msgs, *m)
		}
	}
	return c.JSON(http.StatusOK, chatMessagesResponse{Messages: msgs, Next: nextSeq(page)})
}

// transcriptPage reads the page of the session's transcript that ?limit and ?before ask for.
func (s *Server) transcriptPage(c echo.Context) (coach.TranscriptPage, error) {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return coach.TranscriptPage{}, err
	}
	before, err := queryInt(c, "before")
	if err != nil {
		return coach.TranscriptPage{}, err
	}
	return s.deps.Service.Transcript(c.Request().Context(), tenant(c), c.Param("id"), before, int(min(limit, coach.MaxTranscriptPage+1)))
}

// nextSeq returns a page's next as the JSON answer has it: null on the oldest page.
func nextSeq(page coach.TranscriptPage) *int64 {
	if page.Next > 0 {
		return &page.Next
	}
	return nil
}

// queryInt returns the query parameter name as a positive integer, 0 when it is absent.
func queryInt(c echo.Context, name string) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, coach.FieldError(name, "%s must be a positive integer", name)
	}
	return n, nil
}

type draftRequest struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

func (s *Server) putDraft(c echo.Context) error {
	var in draftRequest
	if err := s.decode(c, &in); err != nil {
		return err
	}
	if err := s.cleanText("value", &in.Value); err != nil {
		return err
	}
	sess, err := s.deps.Service.SetDraft(c.Request().Context(), tenant(c), c.Param("id"), in.Field, in.Value)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.withLimits(sess))
}

type proposalRequest struct {
	Action string `json:"action"`
}

func (s *Server) postProposal(c echo.Context) error {
	var in proposalRequest
	if err := s.decode(c, &in); err != nil {
		return err
	}
	// The transcript keeps the decision as the learner made it; Decide rejects any other action
	// before anything is written.
	input, err := json.Marshal(in)
	if err != nil {
		return err
	}
	sess, err := s.deps.Service.Decide(c.Request().Context(), tenant(c), c.Param("id"), in.Action, input)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.withLimits(sess))
}

func (s *Server) postTurn(c echo.Context) error {
	var in coach.TurnInput
	if err := s.decode(c, &in); err != nil {
		return err
	}
	return s.turn(c, c.Param("id"), in)
}

// coachRequest is the body of the seed's /api/coach route.
type coachRequest struct {
	SessionID string  `json:"sessionId"`
	Message   *string `json:"message"`
	Step      string  `json:"step"`
}

func (s *Server) postCoach(c echo.Context) error {
	var in coachRequest
	if err := s.decode(c, &in); err != nil {
		return err
	}
	if in.SessionID == "" {
		return coach.FieldError("sessionId", "sessionId is required")
	}
	return s.turn(c, in.SessionID, coach.TurnInput{Message: in.Message, Step: in.Step})
}

func (s *Server) listModules(c echo.Context) error {
	if s.deps.Modules == nil {
		return c.JSON(http.StatusOK, []any{})
	}
	return c.JSON(http.StatusOK, s.deps.Modules.Summaries())
}

func (s *Server) getModule(c echo.Context) error {
	if s.deps.Modules != nil {
		if def, ok := s.deps.Modules.Definition(c.Param("id")); ok {
			return c.JSON(http.StatusOK, def)
		}
	}
	return coach.Errorf(coach.KindNotFound, coach.CodeModuleNotFound, "no module %q", coach.Clip(c.Param("id")))
}
