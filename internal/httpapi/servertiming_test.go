package httpapi

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/metrics"
)

// slowModel answers like its inner model after delay: the model's own time to first byte.
type slowModel struct {
	inner coach.Model
	delay time.Duration
}

func (m slowModel) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	select {
	case <-time.After(m.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.inner.Stream(ctx, req, hooks)
}

// timingEntry is one entry of Server-Timing, as the W3C syntax puts it: name;dur=ms.
var timingEntry = regexp.MustCompile(`^([A-Za-z0-9_!#$%&'*+.^|~-]+);dur=([0-9]+(?:\.[0-9]+)?)$`)

// parseServerTiming returns the durations of a Server-Timing value by name, failing the test on
// any entry that does not parse.
func parseServerTiming(t *testing.T, v string) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	for _, e := range strings.Split(v, ",") {
		m := timingEntry.FindStringSubmatch(strings.TrimSpace(e))
		if m == nil {
			t.Fatalf("Server-Timing entry %q of %q does not parse as name;dur=ms", e, v)
		}
		ms, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = time.Duration(ms * float64(time.Millisecond))
	}
	return out
}

func TestServerTimingAndOverhead(t *testing.T) {
	const delay = 60 * time.Millisecond
	tests := []struct {
		name string
		path func(id string) string
		body func(id string) string
	}{
		{"turns", func(id string) string { return "/v1/sessions/" + id + "/turns" },
			func(string) string { return `{"message":"hello"}` }},
		{"seed route", func(string) string { return "/api/coach" },
			func(id string) string { return `{"sessionId":"` + id + `","message":"hello"}` }},
		{"chat", func(id string) string { return "/v1/sessions/" + id + "/chat" },
			func(string) string { return chatText("hello") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			store := coachtest.NewMemStore()
			model := &serverModel{Model: coachtest.NewModel(), answer: `{"assistantText":"Tell me more.","step":"claim"}`}
			ts := startServer(t, func(d *Deps) {
				d.Service = coach.New(coach.Deps{
					Store: store, Upstreams: []coach.Upstream{{Name: "default", Model: slowModel{model, delay}}},
					Contracts: contracts(t), LearnerAudit: store, Observer: m,
				})
				d.Metrics = m.Handler()
			})
			id := ts.create("toulmin")
			resp, err := http.Post(ts.URL+tt.path(id), "application/json", strings.NewReader(tt.body(id)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got status %d, want 200", resp.StatusCode)
			}
			head := parseServerTiming(t, resp.Header.Get(HeaderServerTiming))
			for _, name := range []string{"claim", "prompt"} {
				if _, ok := head[name]; !ok {
					t.Errorf("head's Server-Timing %q has no %s", resp.Header.Get(HeaderServerTiming), name)
				}
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatal(err)
			}
			v := resp.Trailer.Get(HeaderServerTiming)
			trailer := parseServerTiming(t, v)
			for _, name := range []string{"model_ttfb", "first_line", "first_line_overhead", "model", "turn_overhead", "total"} {
				if _, ok := trailer[name]; !ok {
					t.Errorf("trailer's Server-Timing %q has no %s", v, name)
				}
			}
			if got := trailer["model_ttfb"]; got < delay {
				t.Errorf("got model_ttfb %v, want at least the model's delay %v", got, delay)
			}
			if got := trailer["first_line"]; got < delay {
				t.Errorf("got first_line %v, want at least the model's delay %v", got, delay)
			}
			if got := trailer["first_line_overhead"]; got >= delay {
				t.Errorf("got first_line_overhead %v, want less than the model's delay %v", got, delay)
			}
			// Each value is rounded to the microsecond, so total minus model may be up to a
			// microsecond off, and turn_overhead half of one.
			if got := trailer["turn_overhead"]; got >= delay || got > trailer["total"]-trailer["model"]+2*time.Microsecond {
				t.Errorf("got turn_overhead %v (total %v, model %v), want total minus model, under %v",
					got, trailer["total"], trailer["model"], delay)
			}

			got := scrape(t, ts.URL+"/metrics", "coachgw_overhead_seconds")
			for _, phase := range []string{"first_line", "turn"} {
				if n := got[`coachgw_overhead_seconds_count{phase="`+phase+`"}`]; n != 1 {
					t.Errorf("phase %s: got %v observations, want 1", phase, n)
				}
				if sum := got[`coachgw_overhead_seconds_sum{phase="`+phase+`"}`]; sum <= 0 || sum >= delay.Seconds() {
					t.Errorf("phase %s: got %vs, want more than 0 and less than the model's delay %v", phase, sum, delay)
				}
			}
		})
	}
}

// scrape returns the samples of the metrics whose names start with prefix, by series.
func scrape(t *testing.T, url, prefix string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func TestServerTimingEntries(t *testing.T) {
	tests := []struct {
		name string
		rep  coach.Report
		want string
	}{
		{"turn with text", coach.Report{Deltas: 2, FirstDelta: 61250 * time.Microsecond, Duration: 300 * time.Millisecond,
			Timing: coach.Timing{ModelFirstByte: 60 * time.Millisecond, ModelToFirstLine: 60500 * time.Microsecond, Model: 299 * time.Millisecond}},
			"model_ttfb;dur=60.000, first_line;dur=61.250, first_line_overhead;dur=0.750, model;dur=299.000, turn_overhead;dur=1.000, total;dur=300.000"},
		{"turn that never reached the model", coach.Report{Duration: 1500 * time.Microsecond},
			"model;dur=0.000, turn_overhead;dur=1.500, total;dur=1.500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			timingTrailer(h, tt.rep)
			if got := h.Get(HeaderServerTiming); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	h := httptest.NewRecorder().Header()
	timingHead(h, coach.Timing{Claim: 250 * time.Microsecond, Prompt: 20 * time.Microsecond})
	if got, want := h.Get(HeaderServerTiming), "claim;dur=0.250, prompt;dur=0.020"; got != want {
		t.Errorf("head: got %q, want %q", got, want)
	}
	if got := h.Get("Trailer"); got != HeaderServerTiming {
		t.Errorf("got Trailer %q, want %q", got, HeaderServerTiming)
	}
}
