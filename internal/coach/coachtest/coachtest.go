// Package coachtest holds the one set of hand-written fakes of the engine's ports that every
// package driving a coach.Service in its tests shares: an in-memory coach.Store with the Redis
// store's lock, version and tenant rules, and a scripted coach.Model. Each package once carried
// its own copy, and the copies drifted (one let Delete ignore the tenant, another had no Commit
// version check), so a test could pass against a fake that the real store would refuse. The
// engine's own tests (package coach) keep fakes of their own: they cannot import this package
// without an import cycle.
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
