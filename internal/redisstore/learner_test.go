package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/safety"
)

// TestBatcherErasesQueuedRecords erases a learner while the learner's records still wait in the
// audit batcher: the export sees them, and none is written after the erasure.
func TestBatcherErasesQueuedRecords(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			audit := NewSafetyAudit(f.client, f.prefix, time.Hour, 0)
			batch := NewAuditBatcher(audit, time.Hour, nil) // writes only when asked to
			t.Cleanup(func() { _ = batch.Close(ctx) })
			rec := func(learner, session string) safety.Record {
				return safety.Record{Time: time.Now().UTC(), Tenant: "acme", Session: session, Learner: safety.Learner{Ref: learner},
					Stage: safety.StageInput, Classifier: safety.BuiltinName}
			}
			if err := batch.Audit(ctx, []safety.Record{rec("pupil-7", "s-of-pupil-7"), rec("pupil-8", "s-of-pupil-8")}); err != nil {
				t.Fatal(err)
			}
			var got []safety.Record
			err := batch.LearnerSafetyEvents(ctx, "acme", "pupil-7", func(r safety.Record) error {
				got = append(got, r)
				return nil
			})
			if err != nil || len(got) != 1 {
				t.Fatalf("LearnerSafetyEvents of queued records = %+v, %v, want one", got, err)
			}
			if err := batch.Audit(ctx, []safety.Record{rec("pupil-7", "s-of-pupil-7")}); err != nil {
				t.Fatal(err)
			}
			if err := batch.EraseLearnerSafetyEvents(ctx, "acme", "pupil-7"); err != nil {
				t.Fatalf("EraseLearnerSafetyEvents: %v", err)
			}
			if err := batch.Close(ctx); err != nil {
				t.Fatal(err)
			}
			msgs, err := f.client.XRange(ctx, audit.key("acme"), "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 || strings.Contains(msgs[0].Values["r"].(string), "pupil-7") {
				t.Errorf("audit after the erasure = %v, want pupil-8's record alone", msgs)
			}
		})
	}
}
