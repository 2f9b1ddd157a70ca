package app

import (
	"context"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/escalation"
	"github.com/coachgw/coachgw/internal/metrics"
)

// escalator returns the escalation webhook of COACH_ESCALATION_URL (wire contract v1.3), or nil
// when none is configured: then no one is told of a crisis episode but the audit. The episodes
// its queue has no room for wait in overflow, in the session store's Redis, where every
// instance finds them, and each attempt first checks the store's erasure tombstones. Close
// gives the episodes still pending up to COACH_SHUTDOWN_TIMEOUT to be delivered, after the open
// streams have drained, since a crisis escalation matters more than a prompt exit; those still
// pending then stay in the overflow for another instance.
func (a *App) escalator(m *metrics.Metrics, overflow escalation.Overflow) coach.Escalator {
	if a.cfg.EscalationURL == "" {
		return nil
	}
	w := escalation.New(escalation.Options{
		URL: a.cfg.EscalationURL, Secret: a.cfg.EscalationSecret, IncludeText: a.cfg.EscalationIncludeText,
		ConnectTimeout: a.cfg.ConnectTimeout, Observer: m, Log: a.log,
		Overflow: overflow, Tombstones: a.store,
	})
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), max(a.cfg.ShutdownTimeout, time.Second))
		defer cancel()
		if err := w.Close(ctx); err != nil {
			a.log.Error().Err(err).Msg("shutdown: crisis escalations still pending were abandoned")
		}
	})
	return w
}
