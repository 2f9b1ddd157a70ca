package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
	"github.com/coachgw/coachgw/internal/redact"
)

// turn runs one turn of session id and streams it as NDJSON. Problems found before the first line
// are ordinary HTTP errors; after that, the stream's last line says how the turn ended.
func (s *Server) turn(c echo.Context, id string, in coach.TurnInput) error {
	return s.runTurn(c, id, in, s.openNDJSON)
}

// openStream starts the response of turn in one wire format: it writes the status and headers and
// returns the coach.Sink that encodes the turn's events.
type openStream func(c echo.Context, turn string) (coach.Sink, error)

// openNDJSON starts the primary stream, NDJSON lines (the turn's id is in its header).
func (s *Server) openNDJSON(c echo.Context, _ string) (coach.Sink, error) {
	s.writeHeader(c)
	return newLineWriter(c.Response()), nil
}

// runTurn runs one turn of session id and streams its events in the format open starts. Every
// format goes through here, so checks, the session claim, draining and the turn's log line are
// the same for all of them.
func (s *Server) runTurn(c echo.Context, id string, in coach.TurnInput, open openStream) error {
	if s.draining.Load() {
		return newHTTPError(http.StatusServiceUnavailable, coach.CodeShuttingDown, "the gateway is shutting down")
	}
	if err := s.cleanTurn(&in); err != nil {
		return err
	}
	// The tenant's place among the turns running here is taken before the session is claimed,
	// so a refused turn costs no Redis round trip and leaves the session as it was; it counts
	// every turn, those the gateway answers without the model too. The turn's End gives it back
	// once the turn is over, however long after its client left; Release covers every way out
	// before the turn starts and does nothing after End.
	adm, err := s.deps.Turns.Admit(tenant(c))
	if err != nil {
		return err
	}
	defer adm.Release()
	req := c.Request()
	run, err := s.deps.Service.StartTurn(req.Context(), tenant(c), id, in)
	if err != nil {
		if e := coach.AsError(err); e.Kind == coach.KindStream {
			// The seed reports these (e.g. coach_step_mismatch) as the stream's error line; the
			// turn never ran, and its id only names its stream.
			turnID := coach.NewID()
			c.Response().Header().Set(HeaderTurn, turnID)
			w, err := open(c, turnID)
			if err != nil {
				return err
			}
			if err := w.Emit(coach.ErrorEvent(e, turnID)); err != nil {
				return err
			}
			return w.Flush()
		}
		return err
	}
	// A learner's share of the tenant's places needs the learner reference, which only the
	// claimed session names.
	if err := adm.Learner(run.Session().Learner); err != nil {
		run.Abort()
		return err
	}
	if ok, err := s.limitTurn(c, run.Session()); !ok {
		run.Abort()
		return err
	}
	// The engine's id of the turn names it everywhere: its stream, its log, its resume and its
	// transcript entries (which is how a restored answer is told from its replay).
	turnID := run.ID()

	s.streams.Add(1)
	s.open.Add(1)
	defer func() { s.open.Add(-1); s.streams.Done() }()
	// The turn is not the request's: it runs on a context of its own (see turns.Turns.Start).
	// What is left of its log is written once the client has the last line, mostly by End
	// itself; when End leaves it to the log's writer, a drain waits for that too.
	tr := adm.Start(req.Context(), s.drain, id, turnID)
	defer func() {
		done := tr.End()
		select {
		case <-done:
		default:
			s.streams.Add(1)
			go func() { <-done; s.streams.Done() }()
		}
	}()

	// A client that stops reading must not hold the turn, and its session's lock, longer than
	// the turn may last: the stream's writes share the turn's deadline, plus a grace for the
	// last line. A write that cannot finish by then fails, and the client gets no more lines.
	// Once the turn is over, what is left to write (the end of the response) has the grace.
	rc := http.NewResponseController(c.Response().Writer)
	if rc.SetWriteDeadline(time.Now().Add(s.deps.Service.Options().TurnTimeout+writeGrace)) == nil {
		defer func() { _ = rc.SetWriteDeadline(time.Now().Add(writeGrace)) }()
	}
	c.Response().Header().Set(HeaderTurn, turnID)
	timingHead(c.Response().Header(), run.Timing())
	w, err := open(c, turnID)
	if err != nil {
		run.Abort()
		return err
	}
	// The learner's input goes out with the log's first batch, for chat/messages' pending
	// message (see pendingMessage).
	sink := tr.Sink(w, s.deps.Service.Options().TurnTimeout+writeGrace, &in, logger(c))
	rep := run.Run(tr.Context(), limitsSink{Sink: sink, limits: s.limits(run.Session().Contract)})
	timingTrailer(c.Response().Header(), rep)

	log := logger(c)
	ev := log.Info()
	if rep.Diagnostic != "" {
		// The model's answer is as long as a learner can make it: the error line keeps a
		// short excerpt, and the answer itself goes to debug, bounded too.
		log.Error().Str("session", id).Str("turn", turnID).Strs("rules", rep.Rules).
			Str("model_response", redact.Excerpt(rep.Diagnostic, maxResponseExcerpt)).
			Msg("model output was unusable; a fallback was sent")
		log.Debug().Str("session", id).Str("turn", turnID).
			Str("model_response", redact.Excerpt(rep.Diagnostic, maxResponseDebug)).
			Msg("the unusable model output")
	}
	if rep.Notice != "" {
		log.Warn().Str("session", id).Str("notice", redact.Excerpt(rep.Notice, maxNoticeExcerpt)).
			Msg("part of the model output was ignored")
	}
	if rep.Err != nil && rep.Outcome != "cancelled" {
		ev = log.Warn().Str(zerolog.ErrorFieldName, redact.Excerpt(rep.Err.Error(), maxErrorExcerpt))
	}
	ev.Str("session", id).Str("turn", turnID).Str("contract", rep.Contract).Str("outcome", rep.Outcome).
		Dur("first_delta", rep.FirstDelta).Dur("duration", rep.Duration).Int("deltas", rep.Deltas).
		Int("attempts", rep.Attempts).Array("attempt_log", attemptLog(rep.AttemptLog)).
		Int("resets", rep.Resets).Strs("rules", rep.Rules).Msg("turn")
	return nil
}

// Bounds, in bytes, of what a turn's log lines quote (see docs/security.md): the error line of an
// unusable answer keeps maxResponseExcerpt of it (some 200 characters with the note of what was
// cut), the debug line maxResponseDebug; a notice and the turn's error are cut too. The log
// writer (internal/logcap) caps whole lines at 16 KiB besides.
const (
	maxResponseExcerpt = 160
	maxResponseDebug   = 4 << 10
	maxNoticeExcerpt   = 1 << 10
	maxErrorExcerpt    = 2 << 10
)

// attemptLog renders a turn's attempt log as the turn line's attempt_log array: per model call
// the endpoint, why the call ended (end, detail, the endpoint's finish reason), the bytes of
// output it streamed and the tokens it reported.
func attemptLog(log []coach.AttemptEntry) *zerolog.Array {
	arr := zerolog.Arr()
	for _, a := range log {
		d := zerolog.Dict().Str("upstream", a.Upstream).Str("end", a.End)
		if a.Detail != "" {
			d.Str("detail", a.Detail)
		}
		if a.Finish != "" {
			d.Str("finish", a.Finish)
		}
		d.Int("bytes", a.Bytes)
		if a.Usage != nil {
			d.Int("prompt_tokens", a.Usage.PromptTokens).Int("completion_tokens", a.Usage.CompletionTokens)
		}
		arr.Dict(d)
	}
	return arr
}

// HeaderTurn carries a turn's id on the response that streams it (v1.2).
const HeaderTurn = "X-Coach-Turn"

// writeGrace is how long after its turn's deadline a stream may still take to write its last
// line.
const writeGrace = 5 * time.Second

// writeHeader starts an NDJSON stream and pushes the header out at once, so proxies and clients
// see the stream begin before the model's first token.
func (s *Server) writeHeader(c echo.Context) {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	c.Response().WriteHeader(http.StatusOK)
	_ = http.NewResponseController(c.Response().Writer).Flush()
}

// lineWriter is the coach.Sink of an NDJSON stream: Emit writes a line into the response's
// buffer, Flush sends what is buffered.
type lineWriter struct {
	w   *echo.Response
	rc  *http.ResponseController
	buf []byte
}

func newLineWriter(w *echo.Response) *lineWriter {
	return &lineWriter{w: w, rc: http.NewResponseController(w.Writer), buf: make([]byte, 0, 512)}
}

// Emit writes e as one line; it reaches the client at the next Flush, or earlier when the
// response's buffer fills.
func (l *lineWriter) Emit(e coach.Event) error {
	var err error
	if l.buf, err = ndjson.Append(l.buf[:0], e); err != nil {
		return err
	}
	return l.WriteLine(l.buf)
}

// WriteLine writes line, one encoded NDJSON line (see turns.LineWriter).
func (l *lineWriter) WriteLine(line []byte) error {
	_, err := l.w.Write(line)
	return err
}

// Flush sends the lines written so far.
func (l *lineWriter) Flush() error { return l.rc.Flush() }
