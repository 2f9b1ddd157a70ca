// Package coachtest holds the one set of hand-written fakes of the engine's ports that every
// package driving a coach.Service in its tests shares: an in-memory coach.Store with the Redis
// store's lock, version and tenant rules, and a scripted coach.Model. There is one in-memory
// store, held by the conformance suite of package storetest to the rules the real stores are
// held to, so that no test passes against a fake that the real store would refuse. The engine's
// own tests use it too, from package coach_test (this package imports coach); what they need
// beyond the store's rules (faults, counts, a lock taken over) wraps it rather than copying it.
package coachtest

import (
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
)

// DeltaText returns the text of the delta events after the last reset event: what a client
// shows once a turn is over.
func DeltaText(events []coach.Event) string {
	var b strings.Builder
	for _, e := range events {
		switch e.Type {
		case coach.EventReset:
			b.Reset()
		case coach.EventDelta:
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// SafeTexts are gateway-written answers (coach.SafeReplier's texts) with what a careless encoding would break: quotes,
// newlines, markup characters, Spanish. Every contract's SafeReply test runs them.
var SafeTexts = []struct{ Name, Text string }{
	{"plain", "I'm really glad you told me. You don't have to go through this alone."},
	{"quotes and newlines", "You said \"I can't do this\".\nThat sounds really hard.\n\nCall or text 988 <any time> & stay with me."},
	{"spanish", "Gracias por contármelo. ¿Estás a salvo ahora mismo? Puedes llamar al 024, también por la noche: aquí sigo contigo."},
}
