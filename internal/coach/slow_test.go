package coach_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestSlowClientIsNotAModelStall writes to a client that takes three idle timeouts to accept
// each line, while the model answers at once: waiting for the client is not a model stall, so
// the turn has no reset and makes one model call.
func TestSlowClientIsNotAModelStall(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"Hel", "lo", "."}}}}
	opts := testOptions()
	opts.FirstByteTimeout, opts.IdleTimeout = 100*time.Millisecond, 100*time.Millisecond
	svc, st, sess := newTestService(t, m, opts, nil)
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	var got []coach.Event
	rep := run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error {
		time.Sleep(3 * opts.IdleTimeout)
		got = append(got, e)
		return nil
	}))
	if g := lines(got); g != "delta:Hel delta:lo delta:. result" {
		t.Errorf("lines = %q, want the three deltas and the result, no reset", g)
	}
	if rep.Resets != 0 || m.calls() != 1 || rep.Outcome != "ok" {
		t.Errorf("resets %d, model calls %d, outcome %q; want 0, 1, ok", rep.Resets, m.calls(), rep.Outcome)
	}
	if stored, _ := st.Get(context.Background(), "", sess.ID); stored.Version != 2 {
		t.Errorf("stored version %d, want 2", stored.Version)
	}
}

// TestStalledModelStillTimesOut checks that pausing the watchdog for writes leaves it working:
// a model that goes silent after its first fragment is given up on after the idle timeout.
func TestStalledModelStillTimesOut(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"Hel"}, block: true}, {frags: []string{"Hello."}}}}
	opts := testOptions()
	// The retry must not stall between its fragment and its end, even on a loaded machine.
	opts.IdleTimeout = 200 * time.Millisecond
	svc, _, sess := newTestService(t, m, opts, nil)
	start := time.Now()
	got, rep := runTurn(t, svc, sess.ID)
	if g := lines(got); g != "delta:Hel reset:stalled delta:Hello. result" {
		t.Errorf("lines = %q, want a stall reset and the retry's answer", g)
	}
	if took := time.Since(start); took > 5*time.Second || rep.Outcome != "ok" {
		t.Errorf("took %v, outcome %q", took, rep.Outcome)
	}
}

// TestLockRenewedDuringLongTurn runs a turn that lasts several lock TTLs: the engine renews the
// lock all along, and the turn commits. The model sends each fragment only after one more
// renewal, so the turn is as long as eight renewals however slow the machine, and a turn
// whose renewals stopped would stall (and fail) instead of passing.
func TestLockRenewedDuringLongTurn(t *testing.T) {
	const frags = 8
	var st *storeFake
	afterRenewal := func(ctx context.Context, i int) bool {
		for st.renewals() < i+1 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(time.Millisecond):
			}
		}
		return true
	}
	m := &fakeModel{scripts: []script{{frags: strings.Split("a b c d e f g h.", " "), before: afterRenewal}}}
	opts := testOptions()
	opts.LockTTL = 60 * time.Millisecond // a renewal every 20 ms
	svc, st, sess := newTestService(t, m, opts, nil)
	got, rep := runTurn(t, svc, sess.ID)
	if rep.Outcome != "ok" || !strings.HasSuffix(lines(got), "result") {
		t.Fatalf("outcome %q, lines %q; want the turn stored", rep.Outcome, lines(got))
	}
	if n := st.renewals(); n < frags {
		t.Errorf("%d renewals during the turn, want at least %d", n, frags)
	}
	if st.locked(sess.ID) {
		t.Errorf("the lock is still held after the commit")
	}
}

// TestRenewalMayTakeWhatTheLockHasLeft checks how long a renewal may take: as long as the lock
// has left, not a third of its TTL. A renewal asked a third of the TTL after the claim has two
// thirds left; on a busy machine one that answers late but before the lock expires must still
// keep it, rather than be given up and leave the next tick less time.
func TestRenewalMayTakeWhatTheLockHasLeft(t *testing.T) {
	var st *storeFake
	afterRenewal := func(ctx context.Context, _ int) bool {
		for st.renewals() < 1 {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(time.Millisecond):
			}
		}
		return true
	}
	m := &fakeModel{scripts: []script{{frags: []string{"Hi."}, before: afterRenewal}}}
	opts := testOptions()
	opts.LockTTL = 1500 * time.Millisecond // a renewal every 500 ms
	svc, st, sess := newTestService(t, m, opts, nil)
	if _, rep := runTurn(t, svc, sess.ID); rep.Outcome != "ok" {
		t.Fatalf("outcome %q, want ok", rep.Outcome)
	}
	slack := st.renewalSlack()
	if len(slack) == 0 {
		t.Fatal("no renewal carried a deadline")
	}
	// Asked about 500 ms after the claim, the first renewal has about 1 s left; a third of the
	// TTL is 500 ms.
	if every := opts.LockTTL / 3; slack[0] <= every {
		t.Errorf("the first renewal had %v to answer, want more than a third of the TTL (%v): what the lock has left", slack[0], every)
	}
}

// TestLostLockEndsTheTurn takes the lock over while a turn runs (as after it expired): the next
// renewal finds it gone, the turn ends with version_conflict and writes nothing.
func TestLostLockEndsTheTurn(t *testing.T) {
	m := &fakeModel{scripts: []script{{frags: []string{"Hel"}, block: true}}}
	opts := testOptions()
	opts.LockTTL = 60 * time.Millisecond
	opts.FirstByteTimeout, opts.IdleTimeout = 10*time.Second, 10*time.Second
	svc, st, sess := newTestService(t, m, opts, nil)
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	other := st.takeOver(t, sess.ID)
	start := time.Now()
	var got []coach.Event
	rep := run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error { got = append(got, e); return nil }))
	if g := lines(got); g != "delta:Hel error:"+coach.CodeVersionConflict {
		t.Errorf("lines = %q, want the error line %s", g, coach.CodeVersionConflict)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the turn took %v to notice its lost lock, want about a third of the lock TTL", took)
	}
	if stored, _ := st.Get(context.Background(), "", sess.ID); stored.Version != 1 || rep.Outcome != coach.CodeVersionConflict {
		t.Errorf("stored version %d, outcome %q; want 1 (nothing written), %s", stored.Version, rep.Outcome, coach.CodeVersionConflict)
	}
	if !st.holds(sess.ID, other) {
		t.Errorf("the lock of the other writer was touched")
	}
}
