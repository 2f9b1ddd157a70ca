package coach

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind classifies an Error so that one adapter can map it to a transport status.
type Kind uint8

// Kinds of Error.
const (
	KindInternal      Kind = iota
	KindInvalid            // the request is malformed
	KindNotFound           // the addressed thing does not exist (or belongs to another tenant)
	KindConflict           // the request conflicts with the session's current state
	KindUnprocessable      // well-formed input that the session cannot take
	KindUnavailable        // a dependency is down; try again later
	KindStream             // the turn failed after its stream started
	KindLimited            // a limit of the caller's is used up; try again after RetryAfter
)

// Error is a domain error with a stable machine-readable code.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	// Field names the offending input field, when there is one.
	Field string
	// RetryAfter, when set, is how long until the request may succeed (KindLimited).
	RetryAfter time.Duration
	err        error
}

func (e *Error) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.err }

// Errorf returns an Error of kind and code with a formatted message.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of kind and code caused by err.
func Wrap(err error, kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message, err: err}
}

// FieldError returns a KindUnprocessable invalid_input error naming field.
func FieldError(field, format string, args ...any) *Error {
	return &Error{Kind: KindUnprocessable, Code: CodeInvalidInput, Field: field, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, wrapping anything else as an internal error.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(err, KindInternal, CodeInternal, "internal error")
}

// Error codes. The coach_* codes are the seed's stream error codes.
const (
	CodeInvalidRequest    = "invalid_request"
	CodeInvalidInput      = "invalid_input"
	CodeSessionNotFound   = "session_not_found"
	CodeModuleNotFound    = "module_not_found"
	CodeUnknownContract   = "unknown_contract"
	CodeSessionBusy       = "session_busy"
	CodeSessionComplete   = "session_complete"
	CodeNoPendingProposal = "no_pending_proposal"
	// CodeSafetyHold refuses a proposal decision of a session on safety hold: while it holds,
	// the lesson does not move on (v1.3).
	CodeSafetyHold       = "safety_hold"
	CodeVersionConflict  = "version_conflict"
	CodeStoreUnavailable = "store_unavailable"
	CodeShuttingDown     = "shutting_down"
	CodeInternal         = "internal"
	// CodeTurnCancelled ends a turn that was stopped (DELETE …/turns/current).
	CodeTurnCancelled = "turn_cancelled"
	// CodeTurnLogTruncated ends a resumed turn whose log could not keep all of its lines (see
	// docs/operations.md): the live stream never has it.
	CodeTurnLogTruncated = "turn_log_truncated"
	// CodeSessionDeleted ends a turn whose learner was erased while it ran: nothing of it is
	// stored.
	CodeSessionDeleted = "session_deleted"
	// CodeTooManyTurns refuses a turn of a tenant that already runs as many turns at once as
	// it may, turns whose clients left included.
	CodeTooManyTurns = "too_many_turns"
	// CodeTurnLost ends, for its readers, a turn whose instance died while it ran.
	CodeTurnLost = "turn_lost"
	// CodeTooManyReaders refuses a resumer of a turn that has as many as it may on the
	// instance asked (COACH_MAX_READERS_PER_TURN).
	CodeTooManyReaders = "too_many_readers"

	CodeStreamFailed     = "coach_stream_failed"
	CodeValidationFailed = "coach_validation_failed"
	CodeEmptyResponse    = "coach_empty_response"
	CodeStepMismatch     = "coach_step_mismatch"
)

// Sentinel errors that stores return.
var (
	ErrNotFound    = Errorf(KindNotFound, CodeSessionNotFound, "no such session")
	ErrBusy        = Errorf(KindConflict, CodeSessionBusy, "another turn of this session is in flight")
	ErrConflict    = Errorf(KindConflict, CodeVersionConflict, "the session changed since it was read")
	ErrUnavailable = Errorf(KindUnavailable, CodeStoreUnavailable, "the session store is unavailable")
	// ErrShuttingDown ends turns that are still open when the gateway's drain deadline passes.
	ErrShuttingDown = Errorf(KindUnavailable, CodeShuttingDown, "the gateway is shutting down; retry the turn")
	// ErrTurnCancelled ends a turn that was stopped on request: nothing is stored.
	ErrTurnCancelled = Errorf(KindStream, CodeTurnCancelled, "the turn was stopped; nothing was stored")
	// ErrSessionDeleted ends a turn whose learner was erased while it ran: nothing is stored.
	ErrSessionDeleted = Errorf(KindStream, CodeSessionDeleted, "the session's learner was erased while the turn ran; nothing was stored")
	// ErrTurnLost ends, for its readers, a turn whose instance died while it ran. The instance
	// may have died after the turn's commit, so the message does not claim that nothing was
	// stored.
	ErrTurnLost = Errorf(KindStream, CodeTurnLost, "the gateway instance running the turn stopped before the turn ended; the session's transcript shows whether its answer was stored")
)

// maxEcho is how many characters of a client's input an error message repeats.
const maxEcho = 100

// Clip returns input as an error message may repeat it: at most maxEcho characters, with an
// ellipsis when it was cut, so that a 60 KB id does not come back as a 60 KB message. Every
// message that echoes client input passes it through Clip.
func Clip(input string) string {
	n := 0
	for i := range input {
		if n == maxEcho {
			return strings.ToValidUTF8(input[:i], "") + "…"
		}
		n++
	}
	return input
}
