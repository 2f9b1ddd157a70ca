package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestTurnLogRoundTripsPerBatchNotPerDelta counts the Redis round trips of one turn of many
// deltas with the resumable-turn line log on (the default): the claim and the commit, the
// running turn's learner input, plus the log's writes, which are one pipeline (XADD and
// PEXPIRE, with the current-turn pointer on the first and the last) per flush window of 100 ms,
// never one per delta. A log that appended per line, or per flush of the engine, would take
// about a round trip per delta and fail.
func TestTurnLogRoundTripsPerBatchNotPerDelta(t *testing.T) {
	const words, delay = 120, 4 * time.Millisecond
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{DelayMin: delay, DelayMax: delay},
		// The instance's liveness key is set on a timer of its own, once per instance whatever
		// its turns: a bound of an hour keeps it out of the turn's count.
		Config: func(c *config.Config) { c.TurnLostAfter = time.Hour },
	})
	if g.Config.ResumeTTL <= 0 {
		t.Fatal("the line log is off by default; this test is about its cost when on")
	}
	s := g.Create("toulmin", nil)
	chunks := []string{`{"assistantText":"`}
	for range words {
		chunks = append(chunks, "word ")
	}
	chunks = append(chunks, `.","step":"claim"}`)
	g.LLM.Enqueue(fakellm.Reply{Chunks: chunks})

	before := redisRoundTrips(t, g)
	start := time.Now()
	tr := g.Turn(s.ID, apptest.Msg("Cities should ban cars."))
	took := time.Since(start)
	if tr.Last().Type != "result" {
		t.Fatalf("turn ended with %+v, want its result", tr.Last())
	}
	deltas := strings.Count(tr.Kinds(), "delta")
	// The log's last batch is written just after the response ends: wait until the count
	// stays put.
	after := redisRoundTrips(t, g)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(150 * time.Millisecond)
		n := redisRoundTrips(t, g)
		if n == after {
			break
		}
		after = n
	}

	got := after - before
	// Claim and commit, the pointer written at the start, the learner's input kept for
	// chat/messages while the turn runs, a batch per started window of the turn (a window
	// opens at a line and closes logInterval later, so there are at most as many as the turn
	// lasted windows, plus one), and the last batch.
	windows := int(took/(100*time.Millisecond)) + 1
	limit := 2 + 1 + 1 + windows + 1
	t.Logf("%d deltas in %v: %d Redis round trips (at most %d allowed)", deltas, took.Round(time.Millisecond), got, limit)
	if deltas < 2*limit {
		t.Fatalf("only %d deltas for a bound of %d round trips: the turn cannot tell batches from deltas", deltas, limit)
	}
	if got > limit {
		t.Errorf("a turn of %d deltas in %v took %d Redis round trips, want at most %d (claim, commit, and a batch per 100 ms window)",
			deltas, took.Round(time.Millisecond), got, limit)
	}
	if got < 2+2 {
		t.Errorf("%d Redis round trips, want at least the claim, the commit and the log's first and last batch", got)
	}
}
