package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// chatEvent is one server-sent event of a UI message stream (POST /v1/sessions/{id}/chat).
type chatEvent struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Delta            string          `json:"delta"`
	MessageID        string          `json:"messageId"`
	ErrorText        string          `json:"errorText"`
	FinishReason     string          `json:"finishReason"`
	Transient        bool            `json:"transient"`
	Data             json.RawMessage `json:"data"`
	ProviderMetadata json.RawMessage `json:"providerMetadata"`
	Raw              string          `json:"-"`
}

// chatResponse is a chat route's answer read whole: for a stream, its events.
type chatResponse struct {
	Status int
	Header http.Header
	Body   string
	Events []chatEvent
}

// textPart is a request's text part.
func textPart(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

// dataPart is a request's data part.
func dataPart(typ string, data any) map[string]any { return map[string]any{"type": typ, "data": data} }

// chatBody is the body useChat's transport sends for a new learner message made of parts.
func chatBody(parts ...map[string]any) map[string]any {
	return map[string]any{
		"id": "chat-1", "trigger": "submit-message",
		"messages": []any{map[string]any{"id": "m-1", "role": "user", "parts": parts}},
	}
}

// chat posts body to the chat route of session id and reads the whole answer. A stream must be
// well-formed server-sent events: each event one "data: " line, the last one data: [DONE].
func chat(t *testing.T, g *apptest.Gateway, id string, body any) chatResponse {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(g.URL+"/v1/sessions/"+id+"/chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST chat: %v", err)
	}
	return readChat(t, resp)
}

// readChat reads a chat route's answer whole (see chat).
func readChat(t *testing.T, resp *http.Response) chatResponse {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	r := chatResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		return r
	}
	if got := resp.Header.Get("x-vercel-ai-ui-message-stream"); got != "v1" {
		t.Errorf("x-vercel-ai-ui-message-stream = %q, want v1", got)
	}
	frames := strings.Split(r.Body, "\n\n")
	if len(frames) < 2 || frames[len(frames)-1] != "" || frames[len(frames)-2] != "data: [DONE]" {
		t.Fatalf("the stream does not end with data: [DONE] and a blank line:\n%s", r.Body)
	}
	for _, f := range frames[:len(frames)-2] {
		data, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.ContainsAny(data, "\r\n") {
			t.Fatalf("event %q is not one data line", f)
		}
		e := chatEvent{Raw: data}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		r.Events = append(r.Events, e)
		if err := checkChatCard(e); err != nil {
			t.Error(err)
		}
	}
	return r
}

// checkChatCard returns an error when e carries a card (a data-coach-card part, or the result of
// a cards session) that does not follow api/schemas/card.json, as apptest.CheckCard does for
// NDJSON lines: every card the chat route sends in these tests is held to the published schema.
func checkChatCard(e chatEvent) error {
	var d struct {
		Card    json.RawMessage `json:"card"`
		Result  json.RawMessage `json:"result"`
		Session apptest.Session `json:"session"`
	}
	switch e.Type {
	case "data-coach-card":
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return fmt.Errorf("%s: %v", e.Raw, err)
		}
		return apptest.CheckCard(apptest.Line{Type: "card", Card: d.Card})
	case "data-coach-result":
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return fmt.Errorf("%s: %v", e.Raw, err)
		}
		return apptest.CheckCard(apptest.Line{Type: "result", Result: d.Result, Session: d.Session})
	}
	return nil
}

// kinds lists the event types, a run of text-delta events as one.
func (r chatResponse) kinds() string {
	var k []string
	for _, e := range r.Events {
		if e.Type == "text-delta" && len(k) > 0 && k[len(k)-1] == "text-delta" {
			continue
		}
		k = append(k, e.Type)
	}
	return strings.Join(k, " ")
}

// texts returns the text of each text part, in the order they were opened, and checks that every
// delta and end belongs to an open part and that every part ends.
func (r chatResponse) texts(t *testing.T) []string {
	t.Helper()
	var texts []string
	open := map[string]int{} // id → index in texts
	for _, e := range r.Events {
		switch e.Type {
		case "text-start":
			if _, dup := open[e.ID]; dup {
				t.Errorf("text-start %s while it is open", e.ID)
			}
			open[e.ID] = len(texts)
			texts = append(texts, "")
		case "text-delta", "text-end":
			i, ok := open[e.ID]
			if !ok {
				t.Errorf("%s for %q, which is not open", e.Type, e.ID)
				continue
			}
			texts[i] += e.Delta
			if e.Type == "text-end" {
				delete(open, e.ID)
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("text parts %v were never ended", open)
	}
	return texts
}

// data returns the data of the one event of type typ, or fails.
func (r chatResponse) data(t *testing.T, typ string) json.RawMessage {
	t.Helper()
	var found []json.RawMessage
	for _, e := range r.Events {
		if e.Type == typ {
			found = append(found, e.Data)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events in %q, want 1", len(found), typ, r.kinds())
	}
	return found[0]
}

// resultPart is the data of a data-coach-result part.
type resultPart struct {
	Result   json.RawMessage `json:"result"`
	Session  apptest.Session `json:"session"`
	Fallback bool            `json:"fallback"`
}

func (r chatResponse) result(t *testing.T) resultPart {
	t.Helper()
	var p resultPart
	if err := json.Unmarshal(r.data(t, "data-coach-result"), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChatToulminIsTheSameTurn runs one scripted toulmin answer through the NDJSON route and the
// chat route: the chat's text is the deltas' text, its data-coach-result carries the same result
// line, and the session moves on the same way.
func TestChatToulminIsTheSameTurn(t *testing.T) {
	g := apptest.Start(t, nil)
	answer := apptest.Obj("assistantText", "Good start. What exactly should cities do?", "step", "claim",
		"confidence", 0.5, "nextQuestion", "Can you make it more specific?")
	plain, viaChat := g.Create("toulmin", nil), g.Create("toulmin", nil)

	g.LLM.Enqueue(fakellm.Reply{Content: answer})
	want := g.Turn(plain.ID, apptest.Msg("Cities should ban cars."))
	g.LLM.Enqueue(fakellm.Reply{Content: answer})
	got := chat(t, g, viaChat.ID, chatBody(textPart("Cities should ban cars.")))

	if got.Status != http.StatusOK {
		t.Fatalf("status %d %s", got.Status, got.Body)
	}
	if k := got.kinds(); k != "start text-start text-delta text-end data-coach-result finish" {
		t.Errorf("events %q", k)
	}
	if got.Events[0].MessageID == "" {
		t.Errorf("start event %s has no messageId", got.Events[0].Raw)
	}
	if texts := got.texts(t); len(texts) != 1 || texts[0] != want.Text() {
		t.Errorf("text parts %q, want [%q]", texts, want.Text())
	}
	res := got.result(t)
	if string(res.Result) != string(want.Last().Result) || res.Session.Version != 2 || res.Session.ID != viaChat.ID {
		t.Errorf("data-coach-result %s\nwant result %s in session version 2", got.data(t, "data-coach-result"), want.Last().Result)
	}
	if last := got.Events[len(got.Events)-1]; last.FinishReason != "stop" {
		t.Errorf("finish event %s, want finishReason stop", last.Raw)
	}
	if prompt := g.LLM.Requests()[1].Messages; prompt[len(prompt)-1].Content != "Cities should ban cars." {
		t.Errorf("the model was sent %q as the learner's message", prompt[len(prompt)-1].Content)
	}
	if s := g.Get(viaChat.ID); s.Version != 2 {
		t.Errorf("stored version %d, want 2", s.Version)
	}
}

// TestChatCards plays a drill through the chat route: an injected level_up card is a
// data-coach-card part before the text, and a multiple_choice card is answered with a
// data-coach-select part.
func TestChatCards(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) { c.CardsCyclesPerLevel = 1 })
	s := g.Create("cards", nil)
	steps := []struct {
		name      string
		body      any
		args      string
		wantKinds string
	}{
		{"scenario", chatBody(textPart("Begin training.")), `{"card_type":"scenario","content":"A tense all-hands."}`,
			"start text-start text-delta text-end data-coach-result finish"},
		{"prompt", chatBody(textPart("[Continue]")), `{"card_type":"prompt","content":"What do you say?","input_config":{"max_length":300}}`,
			"start text-start text-delta text-end data-coach-result finish"},
		{"insight", chatBody(textPart("I own the delay.")), `{"card_type":"insight","content":"You led with ownership."}`,
			"start text-start text-delta text-end data-coach-result finish"},
		{"level up, then a choice", chatBody(textPart("[Continue]")),
			`{"card_type":"multiple_choice","content":"Who first?","options":[{"id":"a","label":"The CFO"},{"id":"b","label":"The team"}]}`,
			"start data-coach-card text-start text-delta text-end data-coach-result finish"},
		{"selected", chatBody(dataPart("data-coach-select", map[string]string{"selected": "b"})), `{"card_type":"insight","content":"The team it is."}`,
			"start text-start text-delta text-end data-coach-result finish"},
	}
	for _, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			g.LLM.Enqueue(cardCall(step.args))
			r := chat(t, g, s.ID, step.body)
			if r.Status != http.StatusOK || r.kinds() != step.wantKinds {
				t.Fatalf("status %d, events %q; want %q\n%s", r.Status, r.kinds(), step.wantKinds, r.Body)
			}
			var card struct {
				Content string `json:"content"`
			}
			res := r.result(t)
			_ = json.Unmarshal(res.Result, &card)
			if texts := r.texts(t); len(texts) != 1 || texts[0] != card.Content {
				t.Errorf("text parts %q, want the card's content %q", texts, card.Content)
			}
			if !strings.Contains(step.wantKinds, "data-coach-card") {
				return
			}
			var injected struct {
				Card struct {
					Type     string `json:"type"`
					NewLevel int    `json:"new_level"`
				} `json:"card"`
			}
			if err := json.Unmarshal(r.data(t, "data-coach-card"), &injected); err != nil || injected.Card.Type != "level_up" || injected.Card.NewLevel != 2 {
				t.Errorf("data-coach-card %s, want {card: the level_up card to level 2}", r.data(t, "data-coach-card"))
			}
		})
		if !ok {
			t.FailNow()
		}
	}
	reqs := g.LLM.Requests()
	if last := reqs[len(reqs)-1].Messages; !strings.Contains(last[len(last)-1].Content, `"b"`) {
		t.Errorf("the selection reached the model as %q, want option b", last[len(last)-1].Content)
	}
}

// TestChatModule checks that each text block of a module answer is a text part of its own, with
// the block's number and type in its provider metadata, and that a form is answered with a
// data-coach-form part.
func TestChatModule(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	two := structured([]json.RawMessage{
		block("type", "heading", "content", "Stress"),
		block("type", "paragraph", "content", "Stress is the body's answer to a demand."),
	}, reporting())
	g.LLM.Enqueue(moduleReply(two))
	r := chat(t, g, s.ID, chatBody(textPart("What is stress?")))
	if want := "start text-start text-delta text-start text-delta text-end text-end data-coach-result finish"; r.Status != http.StatusOK || r.kinds() != want {
		t.Fatalf("status %d, events %q, want %q", r.Status, r.kinds(), want)
	}
	if texts := r.texts(t); len(texts) != 2 || texts[0] != "Stress" || texts[1] != "Stress is the body's answer to a demand." {
		t.Errorf("text parts %q, want one per block", texts)
	}
	var meta []string
	for _, e := range r.Events {
		if e.Type == "text-start" {
			meta = append(meta, string(e.ProviderMetadata))
		}
	}
	if want := []string{`{"coachgw":{"block":0,"blockType":"heading"}}`, `{"coachgw":{"block":1,"blockType":"paragraph"}}`}; strings.Join(meta, " ") != strings.Join(want, " ") {
		t.Errorf("text-start providerMetadata %q, want %q", meta, want)
	}
	validResult(t, r.result(t).Result)

	g.LLM.Enqueue(moduleReply(formOffer))
	if r := chat(t, g, s.ID, chatBody(textPart("Quiz me."))); r.Status != http.StatusOK {
		t.Fatalf("form offer: status %d", r.Status)
	}
	g.LLM.Enqueue(moduleReply(simpleResponse))
	form := map[string]any{"id": "anxiety_levels_check", "values": map[string]any{"situation": "at work", "intensity": 4}}
	r = chat(t, g, s.ID, chatBody(dataPart("data-coach-form", form)))
	if r.Status != http.StatusOK || r.result(t).Session.Version != 4 {
		t.Fatalf("form answer: status %d, events %q\n%s", r.Status, r.kinds(), r.Body)
	}
	bad := map[string]any{"id": "anxiety_levels_check", "values": map[string]any{"situation": "work", "intensity": 11}}
	if r := chat(t, g, s.ID, chatBody(dataPart("data-coach-form", bad))); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `"form.values.intensity"`) {
		t.Errorf("a form answer out of range: %d %s, want 422 naming form.values.intensity", r.Status, r.Body)
	}
}

// TestChatReset cuts the model's stream after text went out: the open text part ends marked as
// discarded, a transient data-coach-reset follows, and the retried answer's text is a new part.
func TestChatReset(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(cutAfterText, fakellm.Reply{Content: apptest.Obj("assistantText", "Hello again.", "step", "claim")})
	r := chat(t, g, s.ID, chatBody(textPart("hi")))
	if want := "start text-start text-delta text-end data-coach-reset text-start text-delta text-end data-coach-result finish"; r.kinds() != want {
		t.Fatalf("events %q, want %q", r.kinds(), want)
	}
	texts := r.texts(t)
	if len(texts) != 2 || !strings.HasPrefix("Hello there friend.", texts[0]) || texts[0] == "" || texts[1] != "Hello again." {
		t.Errorf("text parts %q, want the cut text, then %q", texts, "Hello again.")
	}
	ids := map[string]bool{}
	for _, e := range r.Events {
		switch e.Type {
		case "text-start":
			if ids[e.ID] {
				t.Errorf("text id %s used twice", e.ID)
			}
			ids[e.ID] = true
		case "text-end":
			if discarded := string(e.ProviderMetadata) == `{"coachgw":{"discarded":true}}`; discarded != (e.ID == r.Events[1].ID) {
				t.Errorf("%s: discarded %v, want it on the cut part only", e.Raw, discarded)
			}
		case "data-coach-reset":
			if !e.Transient || string(e.Data) != `{"reason":"stream_interrupted"}` {
				t.Errorf("reset event %s, want transient with data {reason: stream_interrupted}", e.Raw)
			}
		}
	}
}

// TestChatErrorLine ends a turn with an error: its code is in a data-coach-error part before the
// SDK's error event, the finish reason is error, and nothing is stored.
func TestChatErrorLine(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(fakellm.Reply{Content: `{"assistantText":"Hi", oops`}, fakellm.Reply{Content: "not json"})
	r := chat(t, g, s.ID, chatBody(textPart("hi")))
	if r.Status != http.StatusOK {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	k := r.kinds()
	if !strings.HasSuffix(k, "data-coach-error error finish") || strings.Contains(k, "data-coach-result") {
		t.Fatalf("events %q, want the error parts last", k)
	}
	var e struct{ Error, Message string }
	if err := json.Unmarshal(r.data(t, "data-coach-error"), &e); err != nil || e.Error != "coach_validation_failed" || e.Message == "" {
		t.Errorf("data-coach-error %s, want code coach_validation_failed and a message", r.data(t, "data-coach-error"))
	}
	errEvent := r.Events[len(r.Events)-2]
	if errEvent.ErrorText != e.Message {
		t.Errorf("error event %s, want errorText %q", errEvent.Raw, e.Message)
	}
	if fin := r.Events[len(r.Events)-1]; fin.FinishReason != "error" {
		t.Errorf("finish event %s, want finishReason error", fin.Raw)
	}
	if got := g.Get(s.ID); got.Version != 1 {
		t.Errorf("a failed turn stored version %d, want 1", got.Version)
	}
}

// TestChatContinueAndTranscript accepts a proposal, lets the coach open the next step with a
// data-coach-continue part, and reads the transcript: the chat's turns are recorded as the
// NDJSON route's are, the opening turn without a learner message of its own.
func TestChatContinueAndTranscript(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	claim := "Private cars should be banned from city centres to cut pollution."
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")},
		fakellm.Reply{Content: apptest.Obj("assistantText", "Try this wording.", "step", "claim", "confidence", 0.9,
			"proposedUpdate", map[string]string{"field": "claim", "value": claim, "rationale": "clear"})},
		fakellm.Reply{Content: apptest.Obj("assistantText", "Now, what evidence supports your claim?", "step", "grounds")})
	for _, text := range []string{"Cars are bad in cities.", claim} {
		if r := chat(t, g, s.ID, chatBody(textPart(text))); r.Status != http.StatusOK {
			t.Fatalf("turn %q: %d %s", text, r.Status, r.Body)
		}
	}
	if code := g.Call("POST", "/v1/sessions/"+s.ID+"/proposal", map[string]string{"action": "accept"}, nil); code != http.StatusOK {
		t.Fatalf("accepting the proposal: %d", code)
	}
	r := chat(t, g, s.ID, chatBody(dataPart("data-coach-continue", map[string]any{})))
	if r.Status != http.StatusOK || r.kinds() != "start text-start text-delta text-end data-coach-result finish" {
		t.Fatalf("continue: %d, events %q\n%s", r.Status, r.kinds(), r.Body)
	}
	var res struct{ Step string }
	_ = json.Unmarshal(r.result(t).Result, &res)
	if texts := r.texts(t); res.Step != "grounds" || len(texts) != 1 || texts[0] != "Now, what evidence supports your claim?" {
		t.Errorf("continue: step %q, text %q; want the coach opening the grounds", res.Step, texts)
	}

	var page struct {
		Messages []struct {
			Role   string          `json:"role"`
			Input  json.RawMessage `json:"input"`
			Result json.RawMessage `json:"result"`
		} `json:"messages"`
	}
	if code := g.Call("GET", "/v1/sessions/"+s.ID+"/messages", nil, &page); code != http.StatusOK {
		t.Fatalf("GET messages: %d", code)
	}
	var learner []string
	for _, m := range page.Messages {
		if m.Role == "learner" {
			learner = append(learner, string(m.Input))
		}
	}
	want := []string{`{"message":"Cars are bad in cities."}`, `{"message":"` + claim + `"}`, `{"action":"accept"}`, `{"continue":true}`}
	if strings.Join(learner, " ") != strings.Join(want, " ") {
		t.Errorf("learner entries %q\nwant %q", learner, want)
	}
}

// TestChatCardsFallback sends a card the frontend would reject, twice: the streamed text is
// discarded by a reset, and the fallback card is the result, with no text of its own.
func TestChatCardsFallback(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("cards", nil)
	banner := cardCall(`{"content":"A banner card.","card_type":"banner"}`)
	g.LLM.Enqueue(banner, banner)
	r := chat(t, g, s.ID, chatBody(textPart("Begin training.")))
	k := r.kinds()
	if !strings.HasSuffix(k, "text-end data-coach-reset data-coach-result finish") || strings.Count(k, "data-coach-reset") < 1 {
		t.Fatalf("events %q, want the last text discarded by a reset before the result", k)
	}
	for _, e := range r.Events {
		if e.Type == "text-end" && string(e.ProviderMetadata) != `{"coachgw":{"discarded":true}}` {
			t.Errorf("%s: every text part of a turn that fell back is discarded", e.Raw)
		}
	}
	if res := r.result(t); !res.Fallback || res.Session.Version != 2 {
		t.Errorf("data-coach-result %s, want the stored fallback card", r.data(t, "data-coach-result"))
	}
}

// TestChatStreamReplaysTheTurn resumes a finished turn the way useChat({resume: true}) does,
// with GET …/chat/stream: the turn is replayed from its start as a UI message stream with the
// same text and result as the POST that ran it, under the same X-Coach-Turn; a session without
// a turn is 204.
func TestChatStreamReplaysTheTurn(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	stream := func(id string) chatResponse {
		t.Helper()
		resp, err := http.Get(g.URL + "/v1/sessions/" + id + "/chat/stream")
		if err != nil {
			t.Fatal(err)
		}
		return readChat(t, resp)
	}
	if r := stream(s.ID); r.Status != http.StatusNoContent || r.Body != "" {
		t.Errorf("before any turn: %d %q, want 204 and no body", r.Status, r.Body)
	}
	g.LLM.Enqueue(fakellm.Reply{Chunks: []string{`{"assistantText":"Good `, `start. What `, `should cities do?","step":"claim","nextQuestion":"Which cities?"}`}})
	posted := chat(t, g, s.ID, chatBody(textPart("Cities should ban cars.")))
	replayed := stream(s.ID)
	if replayed.Status != http.StatusOK || replayed.Header.Get("X-Coach-Turn") != posted.Header.Get("X-Coach-Turn") {
		t.Fatalf("replay: %d, X-Coach-Turn %q; want 200 and the posted turn's %q", replayed.Status, replayed.Header.Get("X-Coach-Turn"), posted.Header.Get("X-Coach-Turn"))
	}
	if got, want := replayed.kinds(), posted.kinds(); got != want {
		t.Errorf("replayed events %q, want the posted turn's %q", got, want)
	}
	if got, want := strings.Join(replayed.texts(t), "|"), strings.Join(posted.texts(t), "|"); got != want || !strings.HasSuffix(got, "\n\nWhich cities?") {
		t.Errorf("replayed text %q, want the posted %q, ending with the streamed question", got, want)
	}
	if got, want := string(replayed.result(t).Result), string(posted.result(t).Result); got != want {
		t.Errorf("replayed result %s, want %s", got, want)
	}
}
