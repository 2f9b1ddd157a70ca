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
// deltas with the resumable-turn line log on (the default), from the gateway's own hook: at most
// 2 + deltas/10, the target. The claim and the commit are two; the log's first batch (with the
// current-turn pointer and the learner's input in the same pipeline), a batch per 16 lines or
// 250 ms, and its last make the rest. A log that appended per line, per 100 ms, or with its own
// round trip for the input would fail.
func TestTurnLogRoundTripsPerBatchNotPerDelta(t *testing.T) {
	// The bench's model stream: 150 chunks 10 ms apart, a turn of 1.5 s, long enough that a log
	// writing per 100 ms window exceeds the bound.
	const words, delay = 150, 10 * time.Millisecond
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
	limit := 2 + deltas/10
	t.Logf("%d deltas in %v: %d Redis round trips (at most %d allowed)", deltas, took.Round(time.Millisecond), got, limit)
	if got > limit {
		t.Errorf("a turn of %d deltas took %d Redis round trips, want at most 2 + deltas/10 = %d", deltas, got, limit)
	}
	if got < 2+2 {
		t.Errorf("%d Redis round trips, want at least the claim, the commit and the log's first and last batch", got)
	}
}
