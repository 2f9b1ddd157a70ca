package coach

import (
	"context"
	"errors"
)

// MaxAttemptLog bounds Report.AttemptLog: a turn makes a handful of model calls (MaxAttempts
// per endpoint, a corrective retry, a few endpoints), and its log line stays short even when a
// configuration allows many more; Report.Attempts still counts them all.
const MaxAttemptLog = 8

// AttemptEntry is how one model call of a turn ended, as the turn's log line shows it, so that
// a retried turn says why it was retried.
type AttemptEntry struct {
	// Upstream names the endpoint called.
	Upstream string
	// End is why the call ended: "ok"; the ModelError class of a failed call ("server",
	// "timeout", "rate_limited", …); what made its output unusable ("invalid_output",
	// "empty", "cut_off" when the endpoint stopped at its token cap); or "canceled".
	End string
	// Detail is the failure's message, clipped; empty for "ok".
	Detail string
	// Finish is the finish reason the endpoint gave, when it gave one.
	Finish string
	// Bytes is the output the call streamed: content and tool-call arguments, ids and names.
	Bytes int
	// Usage is the tokens the endpoint reported for the call, when it did.
	Usage *Usage
}

// logAttempt adds an attempt to r's attempt log, while it has room.
func (r *Report) logAttempt(upstream, finish string, bytes int, usage *Usage, err error) {
	if len(r.AttemptLog) >= MaxAttemptLog {
		return
	}
	end, detail := attemptEnd(err, finish)
	r.AttemptLog = append(r.AttemptLog, AttemptEntry{
		Upstream: upstream, End: end, Detail: detail, Finish: finish, Bytes: bytes, Usage: usage,
	})
}

// attemptEnd names how an attempt that ended with err (nil: it succeeded) ended, with a short
// detail.
func attemptEnd(err error, finish string) (end, detail string) {
	var me *ModelError
	var e *Error
	switch {
	case err == nil:
		return "ok", ""
	case errors.As(err, &me):
		return me.Class, Clip(me.Err.Error())
	case errors.As(err, &e) && e.Code == CodeEmptyResponse:
		return "empty", Clip(e.Message)
	case errors.As(err, &e) && e.Code == CodeValidationFailed && finish == FinishLength:
		return "cut_off", Clip(e.Message)
	case errors.As(err, &e) && e.Code == CodeValidationFailed:
		return "invalid_output", Clip(e.Message)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled", Clip(err.Error())
	default:
		return "error", Clip(AsError(err).Message)
	}
}
