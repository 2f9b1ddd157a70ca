package fakellm

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

const fixtureDir = "../../testdata/streams"

func TestFixtureReplay(t *testing.T) {
	tests := []struct {
		file  string
		check func(t *testing.T, d decoded)
	}{
		{"toulmin-claim-first-turn.sse", func(t *testing.T, d decoded) {
			var r struct {
				AssistantText  string          `json:"assistantText"`
				Step           string          `json:"step"`
				NextQuestion   string          `json:"nextQuestion"`
				ProposedUpdate json.RawMessage `json:"proposedUpdate"`
			}
			if err := json.Unmarshal([]byte(d.content), &r); err != nil {
				t.Fatalf("content %q: %v", d.content, err)
			}
			if r.Step != "claim" || r.AssistantText == "" || r.NextQuestion == "" || r.ProposedUpdate != nil || d.args != "" {
				t.Errorf("result %+v, want a claim-step coaching question without a proposal", r)
			}
			if !strings.HasPrefix(d.content, `{"assistantText":`) {
				t.Errorf("content starts %.20q, want assistantText first", d.content)
			}
		}},
		{"cards-scenario.sse", func(t *testing.T, d decoded) {
			var card struct {
				CardType string `json:"card_type"`
				Content  string `json:"content"`
			}
			if err := json.Unmarshal([]byte(d.args), &card); err != nil {
				t.Fatalf("arguments %q: %v", d.args, err)
			}
			if d.toolOpens != 1 || d.toolName != "display_card" || card.CardType != "scenario" || card.Content == "" || d.content != "" {
				t.Errorf("call %q opened %d times with %+v, want one display_card scenario card", d.toolName, d.toolOpens, card)
			}
			for i, p := range d.argPieces {
				if (len(p) < 4 || len(p) > 8) && i != len(d.argPieces)-1 {
					t.Errorf("argument piece %q is not 4 to 8 bytes", p)
				}
			}
		}},
		{"module-intro.sse", func(t *testing.T, d decoded) {
			var r struct {
				Content struct {
					TextBlocks []struct {
						Type    string `json:"type"`
						Content string `json:"content"`
					} `json:"text_blocks"`
				} `json:"content"`
				Meta struct {
					ResponseType string `json:"response_type"`
				} `json:"meta"`
			}
			if err := json.Unmarshal([]byte(d.content), &r); err != nil {
				t.Fatalf("content %q: %v", d.content, err)
			}
			var types []string
			for _, b := range r.Content.TextBlocks {
				types = append(types, b.Type)
			}
			if strings.Join(types, ",") != "heading,paragraph,paragraph" || r.Meta.ResponseType == "" {
				t.Errorf("text blocks %v, meta %+v; want heading, paragraph, paragraph", types, r.Meta)
			}
		}},
	}
	for _, tt := range tests {
		want, err := os.ReadFile(filepath.Join(fixtureDir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(tt.file, ".sse")
		vias := []struct {
			name   string
			reply  Reply
			header http.Header
		}{
			{"enqueued by name", Reply{Fixture: name}, nil},
			{"header with extension", Reply{}, http.Header{FixtureHeader: {tt.file}}},
		}
		for _, via := range vias {
			t.Run(name+"/"+via.name, func(t *testing.T) {
				var log chunkLog
				s, url := start(t, Options{Fixtures: os.DirFS(fixtureDir), OnChunk: log.record})
				s.Enqueue(via.reply)
				x := do(t, nil, url, chatBody(true), via.header)
				if x.err != nil || x.readErr != nil {
					t.Fatalf("request: %v, body: %v", x.err, x.readErr)
				}
				if string(x.body) != string(want) {
					t.Fatalf("replayed %d bytes differ from the %d of %s", len(x.body), len(want), tt.file)
				}
				if got := x.resp.Header.Get("Content-Type"); got != "text/event-stream" {
					t.Errorf("Content-Type = %q, want text/event-stream", got)
				}
				d := decode(x.events)
				if len(d.bad) > 0 || !d.done || len(d.roles) != 1 || d.finish != "stop" {
					t.Errorf("bad events %q, done %v, roles %v, finish %q; want a clean stream", d.bad, d.done, d.roles, d.finish)
				}
				seqs, texts, _ := log.snapshot()
				if got := strings.Join(texts, ""); got != d.content+d.args {
					t.Errorf("OnChunk texts join to %q, want %q", got, d.content+d.args)
				}
				for i, seq := range seqs {
					if seq != i {
						t.Fatalf("OnChunk seqs %v, want 0, 1, 2, …", seqs)
					}
				}
				tt.check(t, d)
			})
		}
	}
}

func TestFixtureDelays(t *testing.T) {
	const delay = 2 * time.Millisecond
	var log chunkLog
	s, url := start(t, Options{Fixtures: os.DirFS(fixtureDir), DelayMin: delay, DelayMax: delay, OnChunk: log.record})
	s.Enqueue(Reply{Fixture: "cards-scenario"})
	x := do(t, nil, url, chatBody(true), nil)
	want, _ := os.ReadFile(filepath.Join(fixtureDir, "cards-scenario.sse"))
	if x.err != nil || string(x.body) != string(want) {
		t.Fatalf("request: %v; replayed bytes equal the file: %v", x.err, string(x.body) == string(want))
	}
	_, _, times := log.snapshot()
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < delay {
			t.Errorf("gap before chunk %d = %v, want at least %v", i, gap, delay)
		}
	}
}

func TestFixtureEdgeCases(t *testing.T) {
	sse := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n" +
		"data: [DONE]\n\n"
	fixtures := fstest.MapFS{
		"stream.sse":       {Data: []byte(sse)},
		"unterminated.sse": {Data: []byte("data: {\"choices\":[]}\n\ndata: [DONE]")},
		"completion.sse":   {Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`)},
	}
	tests := []struct {
		name        string
		reply       Reply
		wantStatus  int
		wantType    string
		wantBody    string // exact, or a substring for errors
		wantEvents  int
		wantReadErr bool
	}{
		{name: "completion JSON", reply: Reply{Fixture: "completion"}, wantStatus: 200, wantType: "application/json",
			wantBody: `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`},
		{name: "unterminated last event", reply: Reply{Fixture: "unterminated"}, wantStatus: 200, wantType: "text/event-stream",
			wantBody: "data: {\"choices\":[]}\n\ndata: [DONE]", wantEvents: 1},
		{name: "cut replay", reply: Reply{Fixture: "stream", Fault: Fault{Cut: true, CutAfter: 2}}, wantStatus: 200,
			wantType: "text/event-stream", wantBody: sse[:strings.Index(sse, "data: {\"choices\":[{\"delta\":{\"content\":\"c")], wantEvents: 2, wantReadErr: true},
		{name: "malformed replay", reply: Reply{Fixture: "stream", Fault: Fault{MalformedSSE: true}}, wantStatus: 200,
			wantType: "text/event-stream", wantEvents: 5},
		{name: "missing", reply: Reply{Fixture: "absent"}, wantStatus: 500, wantType: "application/json", wantBody: "absent.sse"},
		{name: "escaping the directory", reply: Reply{Fixture: "../secret"}, wantStatus: 500, wantType: "application/json",
			wantBody: `invalid fixture name \"../secret.sse\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := start(t, Options{Fixtures: fixtures})
			s.Enqueue(tt.reply)
			x := do(t, nil, url, chatBody(true), nil)
			if x.err != nil {
				t.Fatal(x.err)
			}
			if x.resp.StatusCode != tt.wantStatus || x.resp.Header.Get("Content-Type") != tt.wantType {
				t.Errorf("got %d %s, want %d %s", x.resp.StatusCode, x.resp.Header.Get("Content-Type"), tt.wantStatus, tt.wantType)
			}
			if tt.wantStatus == 200 && tt.wantBody != "" && string(x.body) != tt.wantBody {
				t.Errorf("body %q, want %q", x.body, tt.wantBody)
			}
			if tt.wantStatus != 200 && !strings.Contains(string(x.body), tt.wantBody) {
				t.Errorf("body %s, want it to mention %s", x.body, tt.wantBody)
			}
			if tt.wantType == "text/event-stream" && len(x.events) != tt.wantEvents {
				t.Errorf("%d events, want %d", len(x.events), tt.wantEvents)
			}
			if (x.readErr != nil) != tt.wantReadErr {
				t.Errorf("read error %v, want one: %v", x.readErr, tt.wantReadErr)
			}
		})
	}
}
