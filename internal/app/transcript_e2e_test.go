package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestCardsTranscriptIsWhatTheStreamsSent plays a cards drill through both turn routes in turn
// (NDJSON and the chat route), an injected level_up card and a fallback card included, and reads
// the transcript back: entry for entry it is the learner's inputs as sent and the cards and
// results as the streams carried them, in order, with the fallback flags; and every card in it,
// like the session's lastCard, follows api/schemas/card.json.
func TestCardsTranscriptIsWhatTheStreamsSent(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) { c.CardsCyclesPerLevel = 1 })
	s := g.Create("cards", nil)
	banner := cardCall(`{"content":"A banner card.","card_type":"banner"}`)
	turns := []struct {
		chat    bool
		body    any
		input   string
		replies []string
	}{
		{false, apptest.Msg("Begin training."), `{"message":"Begin training."}`, []string{`{"card_type":"scenario","content":"A tense all-hands."}`}},
		{true, chatBody(textPart("[Continue]")), `{"message":"[Continue]"}`, []string{`{"card_type":"prompt","content":"What do you say?","input_config":{"max_length":300}}`}},
		{false, apptest.Msg("I own the <b>delay</b> & the fix."), `{"message":"I own the <b>delay</b> & the fix."}`, []string{`{"card_type":"insight","content":"You led with ownership."}`}},
		{true, chatBody(textPart("[Continue]")), `{"message":"[Continue]"}`, []string{`{"card_type":"multiple_choice","content":"Who first?","options":[{"id":"a","label":"The CFO"},{"id":"b","label":"The team"}]}`}},
		{true, chatBody(dataPart("data-coach-select", map[string]string{"selected": "b"})), `{"selected":"b"}`, []string{`{"card_type":"reflection","content":"Why them?","input_config":{"max_length":150}}`}},
		{false, apptest.Msg("They carry it."), `{"message":"They carry it."}`, nil}, // the fallback card
	}
	// want is the transcript the streams imply: "learner <input>", "card <card>", "result <result> <fallback>".
	var want []string
	for i, tr := range turns {
		if tr.replies == nil {
			g.LLM.Enqueue(banner, banner)
		}
		for _, r := range tr.replies {
			g.LLM.Enqueue(cardCall(r))
		}
		want = append(want, "learner "+tr.input)
		if tr.chat {
			r := chat(t, g, s.ID, tr.body)
			if r.Status != http.StatusOK {
				t.Fatalf("turn %d: status %d %s", i+1, r.Status, r.Body)
			}
			for _, e := range r.Events {
				if e.Type == "data-coach-card" {
					var d struct{ Card json.RawMessage }
					_ = json.Unmarshal(e.Data, &d)
					want = append(want, "card "+compactJSON(t, d.Card))
				}
			}
			res := r.result(t)
			want = append(want, fmt.Sprintf("result %s %v", compactJSON(t, res.Result), res.Fallback))
			continue
		}
		resp := g.Turn(s.ID, tr.body)
		resp.CheckEnding(t)
		for _, l := range resp.Lines {
			switch l.Type {
			case "card":
				want = append(want, "card "+compactJSON(t, l.Card))
			case "result":
				want = append(want, fmt.Sprintf("result %s %v", compactJSON(t, l.Result), l.Fallback))
			}
		}
	}
	joined := strings.Join(want, "\n")
	if !strings.Contains(joined, `"type":"level_up"}`) || !strings.HasSuffix(joined, " true") {
		t.Fatalf("the drill has no level_up card or does not end with a fallback card:\n%s", joined)
	}

	var page struct {
		Messages []struct {
			Seq      int64           `json:"seq"`
			Role     string          `json:"role"`
			Input    json.RawMessage `json:"input"`
			Result   json.RawMessage `json:"result"`
			Fallback *bool           `json:"fallback"`
			Card     json.RawMessage `json:"card"`
		} `json:"messages"`
		Next *int64 `json:"next"`
	}
	if code := g.Call("GET", "/v1/sessions/"+s.ID+"/messages?limit=200", nil, &page); code != http.StatusOK || page.Next != nil {
		t.Fatalf("GET messages: status %d next %v, want 200 and null", code, page.Next)
	}
	var got []string
	for i, m := range page.Messages {
		if m.Seq != int64(i+1) {
			t.Errorf("entry %d has seq %d", i+1, m.Seq)
		}
		switch {
		case m.Role == "learner" && m.Input != nil && m.Result == nil && m.Card == nil && m.Fallback == nil:
			got = append(got, "learner "+compactJSON(t, m.Input))
		case m.Role == "coach" && m.Card != nil && m.Result == nil && m.Fallback == nil:
			got = append(got, "card "+compactJSON(t, m.Card))
			if err := apptest.CheckCard(apptest.Line{Type: "card", Card: m.Card}); err != nil {
				t.Errorf("entry %d: %v", m.Seq, err)
			}
		case m.Role == "coach" && m.Result != nil && m.Fallback != nil && m.Card == nil:
			got = append(got, fmt.Sprintf("result %s %v", compactJSON(t, m.Result), *m.Fallback))
			if err := apptest.CheckCard(apptest.Line{Type: "result", Result: m.Result, Session: apptest.Session{Contract: "cards"}}); err != nil {
				t.Errorf("entry %d: %v", m.Seq, err)
			}
		default:
			t.Errorf("entry %d is neither a learner input, a card nor a result with its fallback flag: %+v", m.Seq, m)
		}
	}
	if g := strings.Join(got, "\n"); g != joined {
		t.Errorf("transcript =\n%s\nwant what the streams sent =\n%s", g, joined)
	}

	var st struct{ LastCard json.RawMessage }
	if err := json.Unmarshal(g.Get(s.ID).State, &st); err != nil {
		t.Fatal(err)
	}
	if err := apptest.CheckCard(apptest.Line{Type: "card", Card: st.LastCard}); err != nil {
		t.Errorf("the session's lastCard: %v", err)
	}
}

// compactJSON returns raw without insignificant white space and with encoding/json's escaping,
// so that two encodings of the same JSON compare equal.
func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s is not JSON: %v", raw, err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// redisRoundTrips returns how many Redis round trips the gateway has made for requests, from its
// /metrics page: every command and pipeline timed, but for connecting (dial, handshake, and the
// HELLO of a connection opened while the requests ran, which go-redis times on its own; the
// turn's commit, a pipeline since it settles the turn's tokens, has been seen to open one) and
// the breaker's reading of the shared circuits (pttl), which runs on a timer of its own. The
// bench leaves out the same labels.
func redisRoundTrips(t *testing.T, g *apptest.Gateway) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(g.Metrics(), "\n") {
		rest, ok := strings.CutPrefix(line, `coachgw_redis_command_duration_seconds_count{command="`)
		if !ok {
			continue
		}
		command, value, _ := strings.Cut(rest, `"} `)
		if command == "dial" || command == "handshake" || command == "hello" || command == "pttl" {
			continue
		}
		var v int
		if _, err := fmt.Sscan(value, &v); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += v
	}
	return n
}

// TestTurnsWithTheirTranscriptTakeTwoRoundTrips counts the gateway's Redis round trips: a turn
// (message, continue, a cards turn with an injected card, through either route) and a proposal
// decision each take two, a claim and a commit that also writes the transcript's entries; a
// page of the transcript takes one.
func TestTurnsWithTheirTranscriptTakeTwoRoundTrips(t *testing.T) {
	// The turns' line logs (resume) and the safety audit records (batched across turns) are
	// written in the background and counted apart, by coachbench; here they are off, so that
	// the count is the claim and the commit.
	g := apptest.Start(t, func(c *config.Config) {
		c.CardsCyclesPerLevel = 1
		c.ResumeTTL = 0
		c.SafetyMode = "off"
	})
	toulmin := g.Create("toulmin", nil)
	cardsSession := g.Create("cards", nil)
	claim := "Private cars should be banned from city centres to cut pollution."
	steps := []struct {
		name  string
		reply []fakellm.Reply
		do    func() bool
		want  int
	}{
		{"message", []fakellm.Reply{{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")}},
			func() bool { return g.Turn(toulmin.ID, apptest.Msg("Cars are bad.")).Last().Type == "result" }, 2},
		{"message with a proposal", []fakellm.Reply{{Content: apptest.Obj("assistantText", "Try this.", "step", "claim", "confidence", 0.9,
			"proposedUpdate", map[string]string{"field": "claim", "value": claim, "rationale": "clear"})}},
			func() bool { return g.Turn(toulmin.ID, apptest.Msg(claim)).Last().Type == "result" }, 2},
		{"accept", nil, func() bool {
			return g.Call("POST", "/v1/sessions/"+toulmin.ID+"/proposal", map[string]string{"action": "accept"}, nil) == http.StatusOK
		}, 2},
		{"continue", []fakellm.Reply{{Content: apptest.Obj("assistantText", "Now the grounds.", "step", "grounds")}},
			func() bool { return g.Turn(toulmin.ID, map[string]bool{"continue": true}).Last().Type == "result" }, 2},
		{"continue through the chat route", []fakellm.Reply{{Content: apptest.Obj("assistantText", "Still the grounds.", "step", "grounds")}},
			func() bool {
				return chat(t, g, toulmin.ID, chatBody(dataPart("data-coach-continue", map[string]any{}))).Status == http.StatusOK
			}, 2},
		{"a page of the transcript", nil, func() bool {
			return g.Call("GET", "/v1/sessions/"+toulmin.ID+"/messages?limit=3", nil, nil) == http.StatusOK
		}, 1},
		{"cards turns up to a level_up card", []fakellm.Reply{
			cardCall(`{"card_type":"scenario","content":"A tense all-hands."}`),
			cardCall(`{"card_type":"prompt","content":"What do you say?","input_config":{"max_length":300}}`),
			cardCall(`{"card_type":"insight","content":"You led with ownership."}`),
		}, func() bool {
			for _, m := range []string{"Begin training.", "[Continue]", "I own the delay."} {
				if g.Turn(cardsSession.ID, apptest.Msg(m)).Last().Type != "result" {
					return false
				}
			}
			return true
		}, 6},
		{"the cards turn with the level_up card", []fakellm.Reply{cardCall(`{"card_type":"scenario","content":"Two stakeholders disagree."}`)},
			func() bool {
				tr := g.Turn(cardsSession.ID, apptest.Msg("[Continue]"))
				return strings.HasPrefix(tr.Kinds(), "card ") && tr.Last().Type == "result"
			}, 2},
	}
	for _, st := range steps {
		g.LLM.Enqueue(st.reply...)
		before := redisRoundTrips(t, g)
		if !st.do() {
			t.Fatalf("%s did not succeed", st.name)
		}
		if got := redisRoundTrips(t, g) - before; got != st.want {
			t.Errorf("%s: %d Redis round trips, want %d", st.name, got, st.want)
		}
	}
}
