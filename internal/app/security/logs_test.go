package security_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/logcap"
)

// TestLogLinesBounded attacks the log from a learner's side: a cards turn whose model answers
// 200 KB of prose twice (so the turn ends in a fallback, whose answer used to be logged whole),
// and a turn whose endpoint answers 400 with a body quoting the learner's message fifty times.
// No line the gateway writes exceeds logcap.MaxLine, and none needed the writer's cap: the
// excerpts are bounded where they are logged, so the lines keep their fields.
func TestLogLinesBounded(t *testing.T) {
	g := apptest.Start(t, nil)

	prose := strings.Repeat("The model rambles on instead of calling display_card. ", 200<<10/55)
	var chunks []string
	for i := 0; i < len(prose); i += 4 << 10 {
		chunks = append(chunks, prose[i:min(i+4<<10, len(prose))])
	}
	s := g.Create("cards", nil)
	g.LLM.Enqueue(fakellm.Reply{Content: prose, Chunks: chunks}, fakellm.Reply{Content: prose, Chunks: chunks})
	if tr := g.Turn(s.ID, apptest.Msg("Begin training.")); !tr.Last().Fallback {
		t.Fatalf("last line %s, want a fallback result", tr.Last().Raw)
	}

	learner := "ECHO-ME " + strings.Repeat("my private reflection ", 80)
	g.LLM.Enqueue(fakellm.Reply{Fault: fakellm.Fault{Status: 400}, Content: "invalid request; you sent: " + strings.Repeat(learner, 50)})
	t2 := g.Create("toulmin", nil)
	if tr := g.Turn(t2.ID, apptest.Msg(learner)); tr.Last().Type != "error" {
		t.Fatalf("last line %s, want an error line", tr.Last().Raw)
	}

	var fallbackLine, debugLine, turnWarn map[string]any
	apptest.Eventually(t, "both turns are logged", func() bool {
		fallbackLine, debugLine, turnWarn = nil, nil, nil
		for _, line := range strings.Split(g.Log.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			switch {
			case m["message"] == "model output was unusable; a fallback was sent":
				fallbackLine = m
			case m["message"] == "the unusable model output":
				debugLine = m
			case m["message"] == "turn" && m["level"] == "warn" && m["session"] == t2.ID:
				turnWarn = m
			}
		}
		return fallbackLine != nil && debugLine != nil && turnWarn != nil
	})

	for i, line := range strings.Split(g.Log.String(), "\n") {
		if len(line)+1 > logcap.MaxLine {
			t.Errorf("log line %d holds %d bytes, want at most %d: %.200s…", i, len(line)+1, logcap.MaxLine, line)
		}
		if strings.Contains(line, `"truncated":true`) {
			t.Errorf("log line %d needed the writer's cap, want its excerpts bounded where logged: %.300s…", i, line)
		}
	}
	bounded := []struct {
		line  map[string]any
		field string
		max   int
	}{
		{fallbackLine, "model_response", 200},
		{debugLine, "model_response", 4<<10 + 32},
	}
	for _, b := range bounded {
		t.Run(fmt.Sprintf("%s of %q", b.field, b.line["message"]), func(t *testing.T) {
			got, _ := b.line[b.field].(string)
			if len([]rune(got)) > b.max || !strings.Contains(got, "bytes cut]") {
				t.Errorf("%s holds %d characters (%.80q…), want an excerpt marked as cut of at most %d", b.field, len([]rune(got)), got, b.max)
			}
		})
	}
	// An endpoint's error body may quote the learner: the turn's warn line names the error by
	// its status and identifiers only.
	if got, _ := turnWarn["error"].(string); got == "" || len(got) > 512 || strings.Contains(got, "ECHO-ME") || strings.Contains(got, "private reflection") {
		t.Errorf("the turn's warn line has error %.120q…, want the endpoint's error without its body", got)
	}
	if n := strings.Count(g.Log.String(), "ECHO-ME"); n > 2 {
		t.Errorf("the log quotes the echoed learner message %d times, want a bounded excerpt (at most twice)", n)
	}
	if fallbackLine["level"] != "error" || debugLine["level"] != "debug" {
		t.Errorf("levels %v and %v, want the excerpt at error and the bounded answer at debug", fallbackLine["level"], debugLine["level"])
	}
}
