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
// until a batch is full, and go out in SafetyAudit.Audit calls of at most auditBatchMax records
// (one round trip each).
//
// The queue is shared by every tenant, so each tenant may hold only its share of it: a tenant
// whose turns outrun the store (a flood, or a Redis slow to take the writes) loses its own
// records beyond its share, never another tenant's.
type AuditBatcher struct {
	audit  *SafetyAudit
	every  time.Duration
	failed func()

	mu        sync.Mutex
	pending   []safety.Record
	perTenant map[string]int

	// queued tells run that records wait, so that it writes them within the interval; ready
	// that a batch is full; flush asks it to write what is pending at once and to close the
	// channel it passes when that is done.
	queued chan struct{}
	ready  chan struct{}
	flush  chan chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// Bounds of the batcher: the records written in one round trip, the records waiting in all,
// and the records one tenant may have waiting.
const (
	auditBatchMax       = 512
	auditQueueMax       = 16 * auditBatchMax
	auditTenantQueueMax = 4 * auditBatchMax
)

// errAuditQueueFull is returned by Audit when records were dropped, the queue or the tenant's
// share of it being full: the records are dropped rather than a turn made to wait for the audit.
var errAuditQueueFull = errors.New("safety audit queue full")

// NewAuditBatcher starts a batcher over a that writes at least every interval; failed, when set,
// is called for each batch the store did not take.
func NewAuditBatcher(a *SafetyAudit, every time.Duration, failed func()) *AuditBatcher {
	b := &AuditBatcher{audit: a, every: every, failed: failed, perTenant: map[string]int{},
		queued: make(chan struct{}, 1), ready: make(chan struct{}, 1), flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

var _ coach.SafetyAudit = (*AuditBatcher)(nil)

// Audit queues records for the next batch. It never waits: records beyond the queue's bound or
// their tenant's share of it are dropped, and it says so.
func (b *AuditBatcher) Audit(_ context.Context, records []safety.Record) error {
	b.mu.Lock()
	dropped, first := false, len(b.pending) == 0
	for _, r := range records {
		if len(b.pending) >= auditQueueMax || b.perTenant[r.Tenant] >= auditTenantQueueMax {
			dropped = true
			continue
		}
		b.pending = append(b.pending, r)
		b.perTenant[r.Tenant]++
	}
	full := len(b.pending) >= auditBatchMax
	first = first && len(b.pending) > 0
	b.mu.Unlock()
	if first {
		select {
		case b.queued <- struct{}{}:
		default:
		}
	}
	if full {
		select {
		case b.ready <- struct{}{}:
		default:
		}
	}
	if dropped {
		return errAuditQueueFull
	}
	return nil
}

// run writes batches until Close. Its timer runs only while records wait: a timer that ticked
// through idle time would wake a CPU for nothing, which on a quiet instance costs more than
// the turns' own work.
func (b *AuditBatcher) run() {
	defer close(b.done)
	t := time.NewTimer(b.every)
	t.Stop()
	defer t.Stop()
	var due <-chan time.Time
	for {
		select {
		case <-b.queued:
			if due == nil {
				t.Reset(b.every)
				due = t.C
			}
		case <-b.ready:
			b.write()
		case <-due:
			due = nil
			b.write()
		case done := <-b.flush:
			b.write()
			close(done)
		case <-b.stop:
			b.write()
			return
		}
	}
}

// write takes every pending record and writes them, auditBatchMax to a round trip.
func (b *AuditBatcher) write() {
	b.mu.Lock()
	batch := b.pending
	b.pending = nil
	clear(b.perTenant)
	b.mu.Unlock()
	for len(batch) > 0 {
		n := min(len(batch), auditBatchMax)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := b.audit.Audit(ctx, batch[:n]); err != nil && b.failed != nil {
			b.failed()
		}
		cancel()
		batch = batch[n:]
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
func (b *AuditBatcher) LearnerSafetyEvents(ctx context.Context, tenant, learner string, each func(safety.Record) error) error {
	if err := b.Flush(ctx); err != nil {
		return failure("safety audit", err)
	}
	return b.audit.LearnerSafetyEvents(ctx, tenant, learner, each)
}

// EraseLearnerSafetyEvents erases the learner's records (SafetyAudit.EraseLearnerSafetyEvents)
// after flushing, so that no record queued before the erasure is written after it.
func (b *AuditBatcher) EraseLearnerSafetyEvents(ctx context.Context, tenant, learner string) error {
	if err := b.Flush(ctx); err != nil {
		return failure("safety audit", err)
	}
	return b.audit.EraseLearnerSafetyEvents(ctx, tenant, learner)
}
