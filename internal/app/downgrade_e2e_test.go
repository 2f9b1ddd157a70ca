package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/openai"
)

// TestDowngradeRemembered points the gateway at an endpoint that rejects response_format
// json_object with LM Studio's 400: the turn succeeds on the weaker request, the gateway warns
// and counts the downgrade once, and the next turn is sent in the weaker shape straight away.
func TestDowngradeRemembered(t *testing.T) {
	var rejected, served atomic.Int64
	answer, _ := json.Marshal(apptest.Obj("assistantText", "Good start.", "step", "claim", "confidence", 0.5))
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"json_object"`)) {
			rejected.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"'response_format.type' must be 'json_schema' or 'text'"}`)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":`+string(answer)+`}}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer endpoint.Close()
	g := apptest.Start(t, func(c *config.Config) {
		c.Upstreams = []config.Upstream{{Name: "studio", BaseURL: endpoint.URL + "/v1", Model: "m", Profile: "lmstudio", ResponseFormat: "json_object"}}
	})
	for i := range 2 {
		s := g.Create("toulmin", nil)
		if tr := g.Turn(s.ID, apptest.Msg("Cities should ban cars.")); tr.Last().Type != "result" {
			t.Fatalf("turn %d: %s", i+1, tr.Body)
		}
	}
	if r, s := rejected.Load(), served.Load(); r != 1 || s != 2 {
		t.Errorf("%d requests rejected and %d served, want 1 and 2: the downgrade is remembered", r, s)
	}
	if n := strings.Count(g.Log.String(), "the model endpoint rejected a request setting"); n != 1 {
		t.Errorf("%d downgrade warnings, want 1:\n%s", n, g.Log.String())
	}
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if want := `coachgw_upstream_downgrades_total{setting="response_format",to="prompt",upstream="studio"} 1`; !bytes.Contains(metrics, []byte(want)) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestProfileNamesAgree checks that the configuration accepts exactly the profiles, tool
// choices and response formats the model adapter knows.
func TestProfileNamesAgree(t *testing.T) {
	var names []string
	for _, p := range openai.Profiles() {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, config.Profiles) {
		t.Errorf("config.Profiles = %q, the adapter's profiles %q", config.Profiles, names)
	}
	for _, c := range config.ToolChoices {
		if _, err := openai.ParseToolChoice(c); err != nil {
			t.Errorf("config accepts tool choice %q: %v", c, err)
		}
	}
	for _, f := range config.ResponseFormats {
		if _, err := openai.ParseFormat(f); err != nil {
			t.Errorf("config accepts response format %q: %v", f, err)
		}
	}
	if len(config.ToolChoices) != 3 || len(config.ResponseFormats) != 3 {
		t.Errorf("config knows tool choices %q and formats %q, want the adapter's three of each", config.ToolChoices, config.ResponseFormats)
	}
}

// TestStartLogShowsEffectiveDeadlines checks that the start log names, per model endpoint, the
// deadlines its attempts get: the global ones, or the longer ones of a local server's profile.
func TestStartLogShowsEffectiveDeadlines(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) {
		c.Upstreams = []config.Upstream{
			{Name: "cloud", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Profile: "openai"},
			{Name: "local", BaseURL: "http://127.0.0.1:1/v1", Model: "m", Profile: "llamacpp"},
		}
	})
	want := map[string][2]float64{"cloud": {2000, 2000}, "local": {120000, 60000}} // apptest's 2 s, the profile's
	seen := map[string]bool{}
	for _, line := range strings.Split(g.Log.String(), "\n") {
		var l struct {
			Upstream  string  `json:"upstream"`
			Message   string  `json:"message"`
			FirstByte float64 `json:"firstByteTimeout"`
			Idle      float64 `json:"idleTimeout"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Message != "model endpoint: its effective deadlines" {
			continue
		}
		seen[l.Upstream] = true
		if w := want[l.Upstream]; l.FirstByte != w[0] || l.Idle != w[1] {
			t.Errorf("%s: first byte %v ms, idle %v ms; want %v, %v", l.Upstream, l.FirstByte, l.Idle, w[0], w[1])
		}
	}
	if len(seen) != 2 {
		t.Errorf("deadlines logged for %v, want cloud and local:\n%s", seen, g.Log.String())
	}
}
