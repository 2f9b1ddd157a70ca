package reliability_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// tinyFixture is the shortest stream that carries a whole toulmin answer (111 bytes), so that a
// drip of one byte per 100 ms still finishes in about 11 s.
const tinyFixture = `data:{"choices":[{"delta":{"content":"{\"assistantText\":\"Hi\",\"step\":\"claim\"}"},"finish_reason":"stop"}]}` + "\n"

const correctionPrefix = "Your previous reply could not be used"

// shape renders a stream's lines with each run of deltas as one "delta", e.g.
// "delta reset delta result".
func shape(tr apptest.TurnResponse) string {
	var out []string
	for _, k := range strings.Fields(tr.Kinds()) {
		if k == "delta" && len(out) > 0 && out[len(out)-1] == "delta" {
			continue
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

// TestFaultMatrix injects every fault of fakellm into a toulmin turn, once before any delta was
// sent (the gateway retries silently, with backoff, up to MaxAttempts) and once after (it sends
// a reset line and tries once more, with the validation error fed back when the output was
// unusable), and checks the lines, the model calls, the timing, what was stored, and that no
// upstream request outlives the turn.
func TestFaultMatrix(t *testing.T) {
	t.Parallel() // mostly waits: for deadlines, backoff and the drip
	const text = "Hello there."
	after := func(f fakellm.Fault) fakellm.Reply { return textFirst(text, f) }
	before := func(f fakellm.Fault) fakellm.Reply { return textLast(text, f) }
	stall := func(n int) fakellm.Fault { return fakellm.Fault{StallAfter: n, Stall: time.Minute} }
	cut := func(n int) fakellm.Fault { return fakellm.Fault{Cut: true, CutAfter: n} }
	status := func(code int, retryAfter string) fakellm.Reply {
		return fakellm.Reply{Fault: fakellm.Fault{Status: code, RetryAfter: retryAfter}}
	}
	const hugeLine = 2 << 20 // over openai.DefaultMaxLineBytes
	// The deadlines of every case's model calls, the healthy ones too: long enough that a
	// loaded machine (all cases at once, -race, a browser test beside them) never takes them
	// before the first byte or between two chunks of a healthy answer, which the case would
	// then retry without the reset it expects. The faults that test them stall for a minute.
	const firstByte, idle = 5 * time.Second, 5 * time.Second
	// turn is every case's turn deadline unless it sets its own: longer than the slowest
	// expected path (three attempts that each wait out the first-byte deadline, with backoff).
	const turn = 30 * time.Second

	tests := []struct {
		name    string
		config  func(*config.Config)
		replies []fakellm.Reply
		// want is the stream's shape (see shape); reason the reset line's reason, if any.
		want, reason string
		// calls is the number of model requests, -1 when no model answers at all.
		calls int
		// corrected says the last model request ends with the corrective message.
		corrected bool
		// minTime is a lower bound of the turn's duration (0: none). There are no upper
		// bounds, which a loaded machine would break: every turn runs under a deadline
		// (TurnTimeout, turn unless the case sets it) that a gateway waiting longer than it
		// should would hit, which the stream's shape, the number of calls or cause tells.
		minTime time.Duration
		// cause, for a turn that ends with an error line, is a part of that line's message
		// naming what ended the turn.
		cause string
	}{
		// Before any delta: silent retries with backoff, or the error line after MaxAttempts.
		{name: "before/429 Retry-After is honoured", replies: []fakellm.Reply{status(429, "0.4"), ok(text)},
			want: "delta result", calls: 2, minTime: 400 * time.Millisecond},
		{name: "before/429 Retry-After is capped", config: func(c *config.Config) { c.RetryAfterCap = 150 * time.Millisecond },
			replies: []fakellm.Reply{status(429, "60"), ok(text)},
			want:    "delta result", calls: 2, minTime: 150 * time.Millisecond}, // uncapped, the wait would outlast the turn's deadline
		{name: "before/429 on every attempt", replies: []fakellm.Reply{status(429, "0.05"), status(429, "0.05"), status(429, "0.05"), ok(text)},
			want: "error:coach_stream_failed", calls: 3, cause: "(rate_limited)"},
		{name: "before/500 then 502 then success", replies: []fakellm.Reply{status(500, ""), status(502, ""), ok(text)},
			want: "delta result", calls: 3},
		{name: "before/503 on every attempt", replies: []fakellm.Reply{status(503, ""), status(503, ""), status(503, ""), ok(text)},
			want: "error:coach_stream_failed", calls: 3, cause: "(server)"},
		{name: "before/connection closed without an answer", replies: []fakellm.Reply{{Fault: fakellm.Fault{Refuse: true}}, ok(text)},
			want: "delta result", calls: 2},
		{name: "before/connection refused", config: func(c *config.Config) { c.OpenAIBaseURL = "http://" + closedPort(t) + "/v1" },
			want: "error:coach_stream_failed", calls: -1, cause: "(connect)"},
		{name: "before/no byte before the first-byte deadline", replies: []fakellm.Reply{{Content: answer(text), Fault: fakellm.Fault{FirstByteDelay: time.Minute}}, ok(text)},
			want: "delta result", calls: 2, minTime: firstByte}, // a second call, long before the first answers
		{name: "before/no byte on every attempt", replies: []fakellm.Reply{
			{Fault: fakellm.Fault{FirstByteDelay: time.Minute}}, {Fault: fakellm.Fault{FirstByteDelay: time.Minute}}, {Fault: fakellm.Fault{FirstByteDelay: time.Minute}}},
			want: "error:coach_stream_failed", calls: 3, cause: "did not answer in time"},
		{name: "before/stall", replies: []fakellm.Reply{before(stall(2)), ok(text)},
			want: "delta result", calls: 2, minTime: idle},
		{name: "before/cut", replies: []fakellm.Reply{before(cut(2)), ok(text)},
			want: "delta result", calls: 2},
		{name: "before/malformed SSE", replies: []fakellm.Reply{before(fakellm.Fault{MalformedSSE: true}), ok(text)},
			want: "delta result", calls: 2},
		{name: "before/SSE line over 64 KB is read", replies: []fakellm.Reply{before(fakellm.Fault{LongLine: 70000})},
			want: "delta result", calls: 1},
		{name: "before/SSE line over the line limit", replies: []fakellm.Reply{before(fakellm.Fault{LongLine: hugeLine}), ok(text)},
			want: "delta result", calls: 2},
		{name: "before/truncated JSON", replies: []fakellm.Reply{{Content: `{"step":"claim","assistantTe`}, ok(text)},
			want: "delta result", calls: 2, corrected: true},
		{name: "before/schema-invalid JSON", replies: []fakellm.Reply{{Content: apptest.Obj("step", "claim", "confidence", 0.5)}, ok(text)},
			want: "delta result", calls: 2, corrected: true},
		{name: "before/drip slower than a byte per idle deadline", config: func(c *config.Config) {
			c.TurnTimeout = time.Minute // room for the 11 s drip on a loaded machine
		},
			replies: []fakellm.Reply{{Fixture: "tiny", Fault: fakellm.Fault{Drip: 100 * time.Millisecond}}},
			want:    "delta result", calls: 1, minTime: 10 * time.Second},
		{name: "before/drip beyond the turn deadline", config: func(c *config.Config) { c.TurnTimeout = 3 * time.Second },
			replies: []fakellm.Reply{{Fixture: "tiny", Fault: fakellm.Fault{Drip: 100 * time.Millisecond}}, ok(text)},
			want:    "error:coach_stream_failed", calls: 1, minTime: 3 * time.Second, cause: "longer than its deadline"},

		// After deltas: one reset and one more attempt, or the error line when that fails too.
		{name: "after/cut", replies: []fakellm.Reply{after(cut(1)), ok(text)},
			want: "delta reset delta result", reason: "stream_interrupted", calls: 2},
		{name: "after/cut twice", replies: []fakellm.Reply{after(cut(1)), after(cut(1)), ok(text)},
			want: "delta reset delta error:coach_stream_failed", reason: "stream_interrupted", calls: 2},
		{name: "after/cut, then 503 before any delta of the retry", replies: []fakellm.Reply{after(cut(1)), status(503, ""), ok(text)},
			want: "delta reset delta result", reason: "stream_interrupted", calls: 3},
		{name: "after/stall", replies: []fakellm.Reply{after(stall(1)), ok(text)},
			want: "delta reset delta result", reason: "stalled", calls: 2, minTime: idle},
		{name: "after/stall twice", replies: []fakellm.Reply{after(stall(1)), after(stall(1)), ok(text)},
			want: "delta reset delta error:coach_stream_failed", reason: "stalled", calls: 2},
		{name: "after/malformed SSE", replies: []fakellm.Reply{after(fakellm.Fault{MalformedSSE: true}), ok(text)},
			want: "delta reset delta result", reason: "stream_interrupted", calls: 2},
		{name: "after/SSE line over the line limit", replies: []fakellm.Reply{after(fakellm.Fault{LongLine: hugeLine}), ok(text)},
			want: "delta reset delta result", reason: "stream_interrupted", calls: 2},
		{name: "after/truncated JSON", replies: []fakellm.Reply{{Chunks: []string{`{"assistantText":"Hel`, `lo there.","step":"cl`}}, ok(text)},
			want: "delta reset delta result", reason: "invalid_output", calls: 2, corrected: true},
		{name: "after/schema-invalid JSON", replies: []fakellm.Reply{{Content: apptest.Obj("assistantText", text, "step", "claim", "isComplete", "no")}, ok(text)},
			want: "delta reset delta result", reason: "invalid_output", calls: 2, corrected: true},
		{name: "after/schema-invalid JSON twice", replies: []fakellm.Reply{
			{Content: apptest.Obj("assistantText", text, "step", "claim", "isComplete", "no")}, {Content: apptest.Obj("assistantText", text, "step", "claim", "isComplete", "no")}, ok(text)},
			want: "delta reset delta error:coach_validation_failed", reason: "invalid_output", calls: 2, corrected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := apptest.StartWith(t, apptest.Options{
				LLM: fakellm.Options{Fixtures: fstest.MapFS{"tiny.sse": {Data: []byte(tinyFixture)}}},
				Config: func(c *config.Config) {
					c.MaxAttempts = 3
					c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = firstByte, idle, turn
					if tt.config != nil {
						tt.config(c)
					}
				},
			})
			s := g.Create("toulmin", nil)
			g.LLM.Enqueue(tt.replies...)

			start := time.Now()
			tr := g.Turn(s.ID, apptest.Msg("hi"))
			took := time.Since(start)

			tr.CheckEnding(t)
			if got := shape(tr); got != tt.want {
				t.Errorf("stream shape = %q, want %q\n%s", got, tt.want, tr.Body)
			}
			var resets []string
			for _, l := range tr.Lines {
				if l.Type == "reset" {
					resets = append(resets, l.Reason)
				}
			}
			if wantResets := strings.Count(tt.want, "reset"); len(resets) != wantResets || wantResets > 0 && resets[0] != tt.reason {
				t.Errorf("reset reasons = %q, want %d reset(s) with reason %q", resets, wantResets, tt.reason)
			}
			if tt.calls >= 0 {
				if got := len(g.LLM.Requests()); got != tt.calls {
					t.Errorf("model calls = %d, want %d", got, tt.calls)
				}
				// No upstream request outlives its turn: an abandoned one would keep billing.
				waitFor(t, "no upstream request is open", 10*time.Second, func() bool { return g.LLM.Open() == 0 })
			}
			if took < tt.minTime {
				t.Errorf("the turn took %v, want at least %v", took, tt.minTime)
			}
			if last := tr.Last(); last.Type == "error" && !strings.Contains(last.Message, tt.cause) {
				t.Errorf("error message = %q, want it to name %q as what ended the turn", last.Message, tt.cause)
			}
			if reqs := g.LLM.Requests(); len(reqs) > 1 {
				msgs := reqs[len(reqs)-1].Messages
				last := msgs[len(msgs)-1]
				if got := last.Role == "user" && strings.HasPrefix(last.Content, correctionPrefix); got != tt.corrected {
					t.Errorf("last request ends with %s message %q; want the corrective message: %v", last.Role, last.Content, tt.corrected)
				}
			}

			wantVersion := int64(1)
			if tr.Last().Type == "result" {
				wantVersion = 2
				wantText := text
				if strings.Contains(tt.name, "drip") {
					wantText = "Hi"
				}
				if tr.Text() != wantText || tr.Last().Session.Version != 2 {
					t.Errorf("text after the last reset = %q, result session version %d; want %q and 2", tr.Text(), tr.Last().Session.Version, wantText)
				}
			}
			if got := g.Get(s.ID).Version; got != wantVersion {
				t.Errorf("stored version = %d, want %d", got, wantVersion)
			}
		})
	}
}
