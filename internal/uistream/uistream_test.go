package uistream

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

func blockDelta(block int, typ, text string) coach.Event {
	return coach.Event{Type: coach.EventDelta, Text: text, Block: block, BlockType: typ}
}

func TestWriter(t *testing.T) {
	session := &coach.Session{ID: "s1", Contract: "toulmin", Locale: "en", Version: 2, State: json.RawMessage(`{}`)}
	held := &coach.Session{ID: "s1", Contract: "toulmin", Locale: "es-US", Version: 3, State: json.RawMessage(`{}`),
		Safety: &coach.SafetyHold{Hold: true, Since: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), Episode: "ep1"}}
	const start = `data: {"type":"start","messageId":"m1"}` + "\n\n"
	tests := []struct {
		name   string
		events []coach.Event
		want   []string
	}{
		{"toulmin: one text part, then the result",
			[]coach.Event{coach.Delta("Hel"), coach.Delta("lo <b>\n"),
				{Type: coach.EventResult, Result: json.RawMessage(`{"assistantText":"Hello"}`), Session: session}},
			[]string{
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"Hel"}`,
				`{"type":"text-delta","id":"text-1","delta":"lo \u003cb\u003e\n"}`,
				`{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-result","data":{"result":{"assistantText":"Hello"},"session":{"id":"s1","contract":"toulmin","locale":"en","version":2,"state":{},"createdAt":"0001-01-01T00:00:00Z","updatedAt":"0001-01-01T00:00:00Z"}}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"cards: an injected card before the text; a fallback result",
			[]coach.Event{{Type: coach.EventCard, Card: json.RawMessage(`{"type":"level_up","new_level":2}`)}, coach.Delta("Go."),
				{Type: coach.EventResult, Result: json.RawMessage(`{"type":"insight"}`), Fallback: true}},
			[]string{
				`{"type":"data-coach-card","data":{"card":{"type":"level_up","new_level":2}}}`,
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"Go."}`,
				`{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-result","data":{"result":{"type":"insight"},"fallback":true}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"module: one text part per block, with the block in its metadata, open until the end",
			[]coach.Event{blockDelta(0, "heading", "Hi"), blockDelta(0, "heading", "!"), blockDelta(1, "paragraph", "Text"),
				{Type: coach.EventResult, Result: json.RawMessage(`{}`)}},
			[]string{
				`{"type":"text-start","id":"text-1","providerMetadata":{"coachgw":{"block":0,"blockType":"heading"}}}`,
				`{"type":"text-delta","id":"text-1","delta":"Hi"}`,
				`{"type":"text-delta","id":"text-1","delta":"!"}`,
				`{"type":"text-start","id":"text-2","providerMetadata":{"coachgw":{"block":1,"blockType":"paragraph"}}}`,
				`{"type":"text-delta","id":"text-2","delta":"Text"}`,
				`{"type":"text-end","id":"text-1"}`,
				`{"type":"text-end","id":"text-2"}`,
				`{"type":"data-coach-result","data":{"result":{}}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"module reset: every open part ends marked as discarded, new text under new ids",
			[]coach.Event{blockDelta(0, "paragraph", "Wro"), blockDelta(1, "info", "ng"), {Type: coach.EventReset, Reason: "stalled"},
				blockDelta(0, "paragraph", "Right"), {Type: coach.EventResult, Result: json.RawMessage(`{}`)}},
			[]string{
				`{"type":"text-start","id":"text-1","providerMetadata":{"coachgw":{"block":0,"blockType":"paragraph"}}}`,
				`{"type":"text-delta","id":"text-1","delta":"Wro"}`,
				`{"type":"text-start","id":"text-2","providerMetadata":{"coachgw":{"block":1,"blockType":"info"}}}`,
				`{"type":"text-delta","id":"text-2","delta":"ng"}`,
				`{"type":"text-end","id":"text-1","providerMetadata":{"coachgw":{"block":0,"blockType":"paragraph","discarded":true}}}`,
				`{"type":"text-end","id":"text-2","providerMetadata":{"coachgw":{"block":1,"blockType":"info","discarded":true}}}`,
				`{"type":"data-coach-reset","transient":true,"data":{"reason":"stalled"}}`,
				`{"type":"text-start","id":"text-3","providerMetadata":{"coachgw":{"block":0,"blockType":"paragraph"}}}`,
				`{"type":"text-delta","id":"text-3","delta":"Right"}`,
				`{"type":"text-end","id":"text-3"}`,
				`{"type":"data-coach-result","data":{"result":{}}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"toulmin reset",
			[]coach.Event{coach.Delta("Wro"), {Type: coach.EventReset, Reason: "stream_interrupted"}, coach.Delta("Right"),
				{Type: coach.EventResult, Result: json.RawMessage(`{}`)}},
			[]string{
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"Wro"}`,
				`{"type":"text-end","id":"text-1","providerMetadata":{"coachgw":{"discarded":true}}}`,
				`{"type":"data-coach-reset","transient":true,"data":{"reason":"stream_interrupted"}}`,
				`{"type":"text-start","id":"text-2"}`,
				`{"type":"text-delta","id":"text-2","delta":"Right"}`,
				`{"type":"text-end","id":"text-2"}`,
				`{"type":"data-coach-result","data":{"result":{}}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"a crisis turn: the safety part first and kept, then the supportive text and result",
			[]coach.Event{{Type: coach.EventSafety, Safety: &coach.SafetyNotice{Kind: "crisis", Locale: "es-US", Message: "No estás solo.",
				Resources: []safety.Resource{{Name: "988 Línea", Phone: "988", Text: "Envía AYUDA al 988", URL: "https://988lineadevida.org"}, {Name: "Emergencias", Phone: "911"}}}},
				coach.Delta("Estoy aquí."),
				{Type: coach.EventResult, Result: json.RawMessage(`{"assistantText":"Estoy aquí."}`), Session: held}},
			[]string{
				`{"type":"data-coach-safety","data":{"kind":"crisis","locale":"es-US","message":"No estás solo.","resources":[` +
					`{"name":"988 Línea","phone":"988","text":"Envía AYUDA al 988","url":"https://988lineadevida.org"},{"name":"Emergencias","phone":"911"}]}}`,
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"Estoy aquí."}`,
				`{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-result","data":{"result":{"assistantText":"Estoy aquí."},"session":{"id":"s1","contract":"toulmin","locale":"es-US","version":3,"state":{},` +
					`"createdAt":"0001-01-01T00:00:00Z","updatedAt":"0001-01-01T00:00:00Z","safety":{"hold":true,"since":"2026-11-26T10:00:00Z","episode":"ep1"}}}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"unsafe output retracted: the text ends discarded, the reset is transient",
			[]coach.Event{coach.Delta("Bad"), {Type: coach.EventReset, Reason: "unsafe_output"}, coach.Delta("Safe."),
				{Type: coach.EventResult, Result: json.RawMessage(`{}`), Fallback: true}},
			[]string{
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"Bad"}`,
				`{"type":"text-end","id":"text-1","providerMetadata":{"coachgw":{"discarded":true}}}`,
				`{"type":"data-coach-reset","transient":true,"data":{"reason":"unsafe_output"}}`,
				`{"type":"text-start","id":"text-2"}`,
				`{"type":"text-delta","id":"text-2","delta":"Safe."}`,
				`{"type":"text-end","id":"text-2"}`,
				`{"type":"data-coach-result","data":{"result":{},"fallback":true}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"a reset before any text",
			[]coach.Event{{Type: coach.EventReset, Reason: "invalid_output"}, coach.Delta("x"), {Type: coach.EventResult, Result: json.RawMessage(`{}`)}},
			[]string{
				`{"type":"data-coach-reset","transient":true,"data":{"reason":"invalid_output"}}`,
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"x"}`,
				`{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-result","data":{"result":{}}}`,
				`{"type":"finish","finishReason":"stop"}`,
				`[DONE]`,
			}},
		{"error: the code in a data part, then the SDK's error event",
			[]coach.Event{coach.Delta("Par"), {Type: coach.EventError, Code: "coach_stream_failed", Message: "the model \"failed\""},
				coach.Delta("ignored after the end")},
			[]string{
				`{"type":"text-start","id":"text-1"}`,
				`{"type":"text-delta","id":"text-1","delta":"Par"}`,
				`{"type":"text-end","id":"text-1"}`,
				`{"type":"data-coach-error","data":{"error":"coach_stream_failed","message":"the model \"failed\""}}`,
				`{"type":"error","errorText":"the model \"failed\""}`,
				`{"type":"finish","finishReason":"error"}`,
				`[DONE]`,
			}},
		{"an error as the only event",
			[]coach.Event{{Type: coach.EventError, Code: "coach_step_mismatch", Message: "m"}},
			[]string{
				`{"type":"data-coach-error","data":{"error":"coach_step_mismatch","message":"m"}}`,
				`{"type":"error","errorText":"m"}`,
				`{"type":"finish","finishReason":"error"}`,
				`[DONE]`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			flushes := 0
			w, err := NewWriter(&out, func() error { flushes++; return nil }, "m1")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tt.events {
				if err := w.Emit(e); err != nil {
					t.Fatalf("Emit(%+v): %v", e, err)
				}
			}
			if err := w.Flush(); err != nil || flushes != 1 {
				t.Errorf("Flush: %v, flush calls %d, want 1", err, flushes)
			}
			var want strings.Builder
			want.WriteString(start)
			for _, l := range tt.want {
				want.WriteString("data: " + l + "\n\n")
			}
			if got := out.String(); got != want.String() {
				t.Errorf("stream:\n%s\nwant:\n%s", got, want.String())
			}
			for _, l := range tt.want {
				if l != "[DONE]" && !json.Valid([]byte(l)) {
					t.Errorf("want line %s is not JSON (fix the test)", l)
				}
			}
		})
	}
}

// failingWriter fails every write, as a response to a client that left does.
type failingWriter struct{}

var errGone = errors.New("client gone")

func (failingWriter) Write([]byte) (int, error) { return 0, errGone }

func TestWriterReportsWriteErrors(t *testing.T) {
	if _, err := NewWriter(failingWriter{}, nil, "m"); !errors.Is(err, errGone) {
		t.Errorf("NewWriter: %v, want the write's error", err)
	}
	w := &Writer{w: failingWriter{}}
	if err := w.Emit(coach.Delta("x")); !errors.Is(err, errGone) {
		t.Errorf("Emit: %v, want the write's error", err)
	}
	if err := w.Flush(); err != nil {
		t.Errorf("Flush without a flush function: %v", err)
	}
}

// BenchmarkWriterDelta measures the hot path: one text delta of a turn's stream.
func BenchmarkWriterDelta(b *testing.B) {
	w, err := NewWriter(discard{}, nil, "m")
	if err != nil {
		b.Fatal(err)
	}
	e := coach.Delta("a typical piece of coaching text, ")
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Emit(e); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
