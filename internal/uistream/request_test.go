package uistream

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

func TestTurnInput(t *testing.T) {
	const history = `{"id":"a0","role":"assistant","parts":[{"type":"text","text":"Earlier."}]},`
	tests := []struct {
		name      string
		body      string
		want      string // the TurnInput as JSON
		wantCode  string
		wantField string
	}{
		{"useChat's body: the last message's text",
			`{"id":"c","messages":[{"id":"u0","role":"user","parts":[{"type":"text","text":"Old"}]},` + history +
				`{"id":"u1","role":"user","parts":[{"type":"text","text":"Cities should "},{"type":"text","text":"ban cars."}]}],"trigger":"submit-message","messageId":null}`,
			`{"message":"Cities should ban cars."}`, "", ""},
		{"no trigger, extra members and parts the gateway does not read",
			`{"messages":[{"id":"u","role":"user","metadata":{"x":1},"parts":[{"type":"step-start"},{"type":"file","url":"data:,x","mediaType":"text/plain"},{"type":"text","text":"hi","state":"done"}]}],"extra":true}`,
			`{"message":"hi"}`, "", ""},
		{"a card selection", `{"messages":[{"role":"user","parts":[{"type":"data-coach-select","data":{"selected":"b"}}]}]}`,
			`{"selected":"b"}`, "", ""},
		{"a form answer", `{"messages":[{"role":"user","parts":[{"type":"data-coach-form","data":{"id":"f1","values":{"mood":"ok","n":3}}}]}]}`,
			`{"form":{"id":"f1","values":{"mood":"ok","n":3}}}`, "", ""},
		{"continue", `{"messages":[{"role":"user","parts":[{"type":"data-coach-continue","data":{}}]}]}`,
			`{"continue":true}`, "", ""},
		{"continue without data", `{"messages":[{"role":"user","parts":[{"type":"data-coach-continue"}]}]}`,
			"", coach.CodeInvalidRequest, ""},
		{"an empty text is still a message", `{"messages":[{"role":"user","parts":[{"type":"text","text":""}]}]}`,
			`{"message":""}`, "", ""},
		{"regenerate: the last learner message again", `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"regenerate-message","messageId":"a1"}`,
			`{"message":"hi"}`, "", ""},
		{"unknown trigger", `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"resume-stream"}`,
			"", coach.CodeInvalidInput, "trigger"},
		{"no messages", `{"id":"c","messages":[]}`, "", coach.CodeInvalidInput, "messages"},
		{"no messages member", `{}`, "", coach.CodeInvalidInput, "messages"},
		{"the last message is the assistant's", `{"messages":[` + strings.TrimSuffix(history, ",") + `]}`, "", coach.CodeInvalidInput, "messages"},
		{"no part to take", `{"messages":[{"role":"user","parts":[{"type":"step-start"}]}]}`, "", coach.CodeInvalidInput, "messages"},
		{"text and a selection", `{"messages":[{"role":"user","parts":[{"type":"text","text":"x"},{"type":"data-coach-select","data":{"selected":"b"}}]}]}`,
			"", coach.CodeInvalidInput, "messages"},
		{"two selections", `{"messages":[{"role":"user","parts":[{"type":"data-coach-select","data":{"selected":"a"}},{"type":"data-coach-select","data":{"selected":"b"}}]}]}`,
			"", coach.CodeInvalidInput, "messages"},
		{"an unknown coach part", `{"messages":[{"role":"user","parts":[{"type":"data-coach-result","data":{}}]}]}`,
			"", coach.CodeInvalidInput, "messages"},
		{"a selection without selected", `{"messages":[{"role":"user","parts":[{"type":"data-coach-select","data":{}}]}]}`,
			"", coach.CodeInvalidInput, "selected"},
		{"a selection that is not a string", `{"messages":[{"role":"user","parts":[{"type":"data-coach-select","data":{"selected":2}}]}]}`,
			"", coach.CodeInvalidRequest, ""},
		{"a form without data", `{"messages":[{"role":"user","parts":[{"type":"data-coach-form"}]}]}`,
			"", coach.CodeInvalidRequest, ""},
		{"a form whose data is not an object", `{"messages":[{"role":"user","parts":[{"type":"data-coach-form","data":[1]}]}]}`,
			"", coach.CodeInvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			if err := json.Unmarshal([]byte(tt.body), &r); err != nil {
				t.Fatalf("the test's body does not decode: %v", err)
			}
			in, err := r.TurnInput()
			if tt.wantCode != "" {
				var e *coach.Error
				if !errors.As(err, &e) || e.Code != tt.wantCode || e.Field != tt.wantField {
					t.Fatalf("TurnInput: %v (input %+v), want %s naming %q", err, in, tt.wantCode, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("TurnInput: %v", err)
			}
			if got, _ := json.Marshal(in); string(got) != tt.want {
				t.Errorf("TurnInput = %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzChatRequest feeds raw bodies through what the chat route does with them: decode, then
// TurnInput. Nothing may panic; a refusal is invalid_request or invalid_input (a client error);
// an accepted body gives exactly one input, and a message is exactly the last message's text.
func FuzzChatRequest(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzChatRequest")
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if json.Unmarshal(body, &r) != nil {
			return
		}
		in, err := r.TurnInput()
		if err != nil {
			var e *coach.Error
			if !errors.As(err, &e) || (e.Kind != coach.KindInvalid && e.Kind != coach.KindUnprocessable) {
				t.Fatalf("TurnInput refused %s with %v, want a client error", body, err)
			}
			return
		}
		set := 0
		for _, ok := range []bool{in.Message != nil, in.Selected != nil, in.Form != nil, in.Continue} {
			if ok {
				set++
			}
		}
		if set != 1 || in.Step != "" {
			t.Fatalf("TurnInput of %s = %+v, want exactly one input", body, in)
		}
		if in.Message != nil {
			var text strings.Builder
			for _, p := range r.Messages[len(r.Messages)-1].Parts {
				if p.Type == "text" {
					text.WriteString(p.Text)
				}
			}
			if *in.Message != text.String() {
				t.Fatalf("message %q, want the last message's text %q", *in.Message, text.String())
			}
		}
	})
}
