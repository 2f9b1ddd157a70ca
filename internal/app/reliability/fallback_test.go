package reliability_test

import (
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestFallbackEndpoints runs turns through two and three configured endpoints, each a fakellm
// of its own, and checks which endpoint answered, what the client saw, and how many requests
// each endpoint got.
func TestFallbackEndpoints(t *testing.T) {
	t.Parallel()
	const text = "Hello there."
	status := func(code int) fakellm.Reply { return fakellm.Reply{Fault: fakellm.Fault{Status: code}} }
	tests := []struct {
		name string
		// replies per endpoint; the first is the gateway's own fakellm. A nil list for the
		// second endpoint of three makes it a port on which nothing listens.
		replies [][]fakellm.Reply
		refuse  int
		want    string
		// upstream answered; calls per endpoint.
		upstream string
		calls    []int
		reason   string
	}{
		{name: "two/healthy primary answers alone",
			replies: [][]fakellm.Reply{{ok(text)}, {ok("unused.")}},
			want:    "delta result", upstream: "primary", calls: []int{1, 0}},
		{name: "two/503 before text falls back silently",
			replies: [][]fakellm.Reply{{status(503)}, {ok(text)}},
			want:    "delta result", upstream: "second", calls: []int{1, 1}},
		{name: "two/cut mid-answer: reset, then the second endpoint's deltas",
			replies: [][]fakellm.Reply{{textFirst(text, fakellm.Fault{Cut: true, CutAfter: 1})}, {ok(text)}},
			want:    "delta reset delta result", upstream: "second", calls: []int{1, 1}, reason: "stream_interrupted"},
		{name: "two/stall mid-answer",
			replies: [][]fakellm.Reply{{textFirst(text, fakellm.Fault{StallAfter: 1, Stall: time.Minute})}, {ok(text)}},
			want:    "delta reset delta result", upstream: "second", calls: []int{1, 1}, reason: "stalled"},
		{name: "two/context length is not fallen back on",
			replies: [][]fakellm.Reply{{{Fault: fakellm.Fault{Status: 400}, Content: "This model's maximum context length is 8192 tokens."}}, {ok(text)}},
			want:    "error:coach_stream_failed", calls: []int{1, 0}},
		{name: "three/refused connection, then 500, then the third",
			replies: [][]fakellm.Reply{{status(500)}, nil, {ok(text)}}, refuse: 1,
			want: "delta result", upstream: "third", calls: []int{1, -1, 1}},
	}
	names := []string{"primary", "second", "third"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			llms := make([]*fakellm.Server, len(tt.replies))
			bases := make([]string, len(tt.replies))
			for i := 1; i < len(tt.replies); i++ {
				if tt.refuse == i {
					bases[i] = "http://" + closedPort(t) + "/v1"
					continue
				}
				llms[i], bases[i] = apptest.StartLLM(t, fakellm.Options{})
				llms[i].Enqueue(tt.replies[i]...)
			}
			g := apptest.StartWith(t, apptest.Options{Config: func(c *config.Config) {
				c.FirstByteTimeout, c.IdleTimeout = 400*time.Millisecond, 300*time.Millisecond
				bases[0] = c.OpenAIBaseURL
				for i := range tt.replies {
					c.Upstreams = append(c.Upstreams, config.Upstream{Name: names[i], BaseURL: bases[i], Model: "m", Profile: "openai"})
				}
			}})
			llms[0] = g.LLM
			g.LLM.Enqueue(tt.replies[0]...)
			s := g.Create("toulmin", nil)
			tr := g.Turn(s.ID, apptest.Msg("hi"))
			tr.CheckEnding(t)
			if got := shape(tr); got != tt.want {
				t.Errorf("stream shape = %q, want %q\n%s", got, tt.want, tr.Body)
			}
			if last := tr.Last(); last.Type == "result" {
				if last.Upstream != tt.upstream || tr.Text() != text {
					t.Errorf("result from %q with text %q, want %q and %q", last.Upstream, tr.Text(), tt.upstream, text)
				}
			}
			for _, l := range tr.Lines {
				if l.Type == "reset" && l.Reason != tt.reason {
					t.Errorf("reset reason = %q, want %q", l.Reason, tt.reason)
				}
			}
			for i, want := range tt.calls {
				if want >= 0 && len(llms[i].Requests()) != want {
					t.Errorf("requests to %s = %d, want %d", names[i], len(llms[i].Requests()), want)
				}
			}
		})
	}
}
