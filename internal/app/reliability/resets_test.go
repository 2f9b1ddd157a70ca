package reliability_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestResetsMetricCountsResetLines plays a run of turns through fakellm's fault modes, some
// before any delta went out and some after, and checks that coachgw_resets_total, by contract
// and reason, is exactly the reset lines the clients were sent: a retry the client never saw
// (a corrective retry of an answer that showed nothing, a silent retry before text) is no reset.
func TestResetsMetricCountsResetLines(t *testing.T) {
	t.Parallel() // waits for a stall's idle deadline
	const text = "Hello there."
	after := func(f fakellm.Fault) fakellm.Reply { return textFirst(text, f) }
	before := func(f fakellm.Fault) fakellm.Reply { return textLast(text, f) }
	moduleOK := apptest.Obj("content", map[string]any{"text_blocks": []any{map[string]any{"type": "paragraph", "content": "Let's go on."}}},
		"meta", map[string]any{"response_type": "conversational"})
	moduleEmpty := apptest.Obj("content", map[string]any{"text_blocks": []any{}},
		"meta", map[string]any{"response_type": "conversational", "progress": map[string]any{"covered_topics": []string{"genetics"}}})
	turns := []struct {
		contract string
		replies  []fakellm.Reply
	}{
		{"toulmin", []fakellm.Reply{after(fakellm.Fault{Cut: true, CutAfter: 1}), ok(text)}},
		{"toulmin", []fakellm.Reply{before(fakellm.Fault{Cut: true, CutAfter: 2}), ok(text)}},
		{"toulmin", []fakellm.Reply{after(fakellm.Fault{StallAfter: 1, Stall: time.Minute}), ok(text)}},
		{"toulmin", []fakellm.Reply{after(fakellm.Fault{MalformedSSE: true}), ok(text)}},
		{"toulmin", []fakellm.Reply{before(fakellm.Fault{MalformedSSE: true}), ok(text)}},
		{"toulmin", []fakellm.Reply{{Fault: fakellm.Fault{Status: 503}}, ok(text)}},
		// Unusable output before any text: corrected without a reset line.
		{"toulmin", []fakellm.Reply{{Content: `{"step":"claim","assistantTe`}, ok(text)}},
		{"toulmin", []fakellm.Reply{{Content: apptest.Obj("step", "claim", "confidence", 0.5)}, ok(text)}},
		// Unusable output after text: corrected after a reset line.
		{"toulmin", []fakellm.Reply{{Content: apptest.Obj("assistantText", text, "step", "claim", "isComplete", "no")}, ok(text)}},
		{"module", []fakellm.Reply{{Content: moduleEmpty}, {Content: moduleOK}}},
		{"module", []fakellm.Reply{{Content: moduleEmpty}, {Content: moduleEmpty}}},
	}
	g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
		c.MaxAttempts = 3
		// Long enough that a loaded machine (-race, a browser test beside this one) never takes
		// them before a healthy answer's first byte or between two of its chunks, which would
		// add a retry or a reset the turn does not script; the stall they must catch lasts a
		// minute. The turn has room for the stall's idle deadline and the retry after it.
		c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 5*time.Second, 5*time.Second, 30*time.Second
	}})
	lines := map[string]int{} // contract/reason → reset lines sent
	total := 0
	for i, turn := range turns {
		extra := map[string]string(nil)
		if turn.contract == "module" {
			extra = map[string]string{"module": "anxiety-basics"}
		}
		s := g.Create(turn.contract, extra)
		g.LLM.Enqueue(turn.replies...)
		tr := g.Turn(s.ID, apptest.Msg("hi"))
		tr.CheckEnding(t)
		if last := tr.Last(); last.Type != "result" {
			t.Errorf("turn %d (%s): last line %s, want a result", i+1, turn.contract, last.Raw)
		}
		for _, l := range tr.Lines {
			if l.Type == "reset" {
				lines[turn.contract+"/"+l.Reason]++
				total++
			}
		}
	}
	if total == 0 {
		t.Fatal("no reset line in the whole run: the run tests nothing")
	}
	counted := map[string]int{}
	for _, line := range strings.Split(g.Metrics(), "\n") {
		rest, ok := strings.CutPrefix(line, `coachgw_resets_total{contract="`)
		if !ok {
			continue
		}
		contract, rest, _ := strings.Cut(rest, `",reason="`)
		reason, value, _ := strings.Cut(rest, `"} `)
		var v int
		if _, err := fmt.Sscan(value, &v); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		counted[contract+"/"+reason] = v
	}
	if fmt.Sprint(counted) != fmt.Sprint(lines) {
		t.Errorf("coachgw_resets_total = %v, want the reset lines sent: %v", counted, lines)
	}
}
