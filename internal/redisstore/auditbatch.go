package redisstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// AuditBatcher writes the audit records of many turns together: every turn with learner text
// has at least one record, and one round trip per turn for them would be half again what the
// turn itself costs (its claim and its commit). Records wait at most the batch interval, or
// until a batch is full, and go out in one SafetyAudit.Audit call (one round trip).
type AuditBatcher struct {
	audit  *SafetyAudit
	every  time.Duration
	in     chan []safety.Record
	failed func()
	// flush asks run to write what it holds and what is queued at once, and to close the
	// channel it passes when that is done.
	flush chan chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// auditBatchMax is the most records written in one round trip.
const auditBatchMax = 512

// errAuditQueueFull is returned by Audit when the batcher is this far behind; the records are
// dropped rather than a turn made to wait for the audit.
var errAuditQueueFull = errors.New("safety audit queue full")

// NewAuditBatcher starts a batcher over a that writes at least every interval; failed, when set,
// is called for each batch the store did not take.
func NewAuditBatcher(a *SafetyAudit, every time.Duration, failed func()) *AuditBatcher {
	b := &AuditBatcher{audit: a, every: every, in: make(chan []safety.Record, 4096), failed: failed,
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

var _ coach.SafetyAudit = (*AuditBatcher)(nil)

// Audit queues records for the next batch. It never waits: a full queue drops them and says so.
func (b *AuditBatcher) Audit(_ context.Context, records []safety.Record) error {
	select {
	case b.in <- records:
		return nil
	default:
		return errAuditQueueFull
	}
}

func (b *AuditBatcher) run() {
	defer close(b.done)
	t := time.NewTicker(b.every)
	defer t.Stop()
	var batch []safety.Record
	write := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := b.audit.Audit(ctx, batch); err != nil && b.failed != nil {
			b.failed()
		}
		cancel()
		batch = batch[:0]
	}
	for {
		select {
		case rs := <-b.in:
			batch = append(batch, rs...)
			if len(batch) >= auditBatchMax {
				write()
			}
		case <-t.C:
			write()
		case done := <-b.flush:
			for drained := false; !drained; {
				select {
				case rs := <-b.in:
					batch = append(batch, rs...)
				default:
					drained = true
				}
			}
			write()
			close(done)
		case <-b.stop:
			for {
				select {
				case rs := <-b.in:
					batch = append(batch, rs...)
				default:
					write()
					return
				}
			}
		}
	}
}

// Close writes what is queued and stops the batcher, waiting at most until ctx ends.
func (b *AuditBatcher) Close(ctx context.Context) error {
	b.once.Do(func() { close(b.stop) })
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ coach.LearnerAudit = (*AuditBatcher)(nil)

// Flush writes every record queued before it was called, waiting at most until ctx ends.
func (b *AuditBatcher) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case b.flush <- done:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LearnerSafetyEvents returns the learner's records (SafetyAudit.LearnerSafetyEvents), those
// still queued included: it flushes first.
func (b *AuditBatcher) LearnerSafetyEvents(ctx context.Context, tenant, learner string) ([]safety.Record, error) {
	if err := b.Flush(ctx); err != nil {
		return nil, failure("safety audit", err)
	}
	return b.audit.LearnerSafetyEvents(ctx, tenant, learner)
}

// EraseLearnerSafetyEvents erases the learner's records (SafetyAudit.EraseLearnerSafetyEvents)
// after flushing, so that no record queued before the erasure is written after it.
func (b *AuditBatcher) EraseLearnerSafetyEvents(ctx context.Context, tenant, learner string) error {
	if err := b.Flush(ctx); err != nil {
		return failure("safety audit", err)
	}
	return b.audit.EraseLearnerSafetyEvents(ctx, tenant, learner)
}
