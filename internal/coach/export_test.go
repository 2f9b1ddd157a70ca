package coach

import "time"

// The engine's tests that drive a Service over a store live in package coach_test, because the
// one in-memory store they share (coachtest.MemStore, held to the conformance suite of package
// storetest) imports coach. These are the internals those tests check, under exported names
// that exist only while testing.

var (
	AppendHistory  = appendHistory
	MessageBytes   = messageBytes
	Whom           = whom
	Squeeze        = squeeze
	SafeText       = safeText
	ErrIdle        = errIdle
	CutOff         = cutOff
	MaxReplyEcho   = maxReplyEcho
	UnusableAnswer = unusableAnswer
)

// DeltaBuffer is the buffer that joins the delta pieces of one fragment.
type DeltaBuffer = deltaBuffer

// Add adds e to d, sending what it held before when e does not join it.
func (d *DeltaBuffer) Add(e Event, send func(Event)) { d.add(e, send) }

// Flush sends what d holds.
func (d *DeltaBuffer) Flush(send func(Event)) { d.flush(send) }

// LogAttempt records one attempt in r's attempt log.
func (r *Report) LogAttempt(upstream, finish string, bytes int, usage *Usage, err error) {
	r.logAttempt(upstream, finish, bytes, usage, err)
}

// SetNow makes s read the time from now.
func (s *Service) SetNow(now func() time.Time) { s.now = now }
