package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestProfileFixtures reads each profile's recorded toulmin, cards and module streams
// (testdata/streams/<profile>-<contract>.sse) through a Client of that profile: the text comes
// out whole, a card comes out as display_card's arguments however the endpoint sent it, and the
// usage comes out exactly when the profile asks for it.
func TestProfileFixtures(t *testing.T) {
	card := &coach.Tool{Name: "display_card", Parameters: []byte(`{"type":"object"}`)}
	for _, p := range Profiles() {
		for _, contract := range []string{"toulmin", "cards", "module"} {
			t.Run(p.Name+"-"+contract, func(t *testing.T) {
				body, err := os.ReadFile("../../testdata/streams/" + p.Name + "-" + contract + ".sse")
				if err != nil {
					t.Fatal(err)
				}
				u := newUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write(body)
				})
				req := coach.ModelRequest{Messages: hello.Messages, Schema: &coachSchema}
				if contract == "cards" {
					req = coach.ModelRequest{Messages: hello.Messages, Tool: card}
				}
				s, err := u.client(Config{Profile: p.Name}).Stream(context.Background(), req, coach.StreamHooks{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				frags, err := collect(t, s)
				if err != io.EOF {
					t.Fatalf("stream ended with %v, want io.EOF", err)
				}
				var content, args strings.Builder
				var usage *coach.Usage
				named := 0
				for _, f := range frags {
					content.WriteString(f.Content)
					args.WriteString(f.ToolArgs)
					if f.ToolName == "display_card" {
						named++
					}
					if f.Usage != nil {
						usage = f.Usage
					}
				}
				if contract == "cards" {
					if named != 1 || !strings.HasPrefix(args.String(), `{"card_type":"scenario"`) || !strings.HasSuffix(args.String(), `}`) {
						t.Errorf("cards: %d calls named display_card, arguments %q, want one call with the card", named, args.String())
					}
				} else if !strings.HasPrefix(content.String(), "{") || !strings.HasSuffix(content.String(), "}") {
					t.Errorf("content = %q, want the JSON answer", content.String())
				}
				// generic's fixtures are an endpoint that ignores stream_options, as an unknown
				// one may: it is asked for usage, reports none, and its tokens are estimated.
				wantUsage := p.IncludeUsage && p.Name != GenericProfile
				if (usage != nil) != wantUsage || usage != nil && (usage.PromptTokens == 0 || usage.CompletionTokens == 0) {
					t.Errorf("usage = %+v, want one exactly when the profile asks for it and its endpoint honours it (%v)", usage, wantUsage)
				}
			})
		}
	}
}

// TestLlamacppRealWire reads the llama-server streams issue 20 recorded beyond the profile's
// fixtures: a tool stream cut at the completion cap after a second, parallel call opened (two
// calls told apart by index, finish "length", the usage still reported), and a cancelled
// stream, which has no usage chunk and must not pass for a complete answer.
func TestLlamacppRealWire(t *testing.T) {
	card := &coach.Tool{Name: "display_card", Parameters: []byte(`{"type":"object"}`)}
	read := func(t *testing.T, name string, req coach.ModelRequest) ([]coach.Fragment, error) {
		body, err := os.ReadFile("../../testdata/streams/" + name + ".sse")
		if err != nil {
			t.Fatal(err)
		}
		u := newUpstream(t, rawResponse(string(body)))
		// The tool stream answered a forced tool, which the profile asks for only when overridden.
		s, err := u.client(Config{Profile: "llamacpp", ToolChoice: "required"}).Stream(context.Background(), req, coach.StreamHooks{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return collect(t, s)
	}
	t.Run("cut at the cap", func(t *testing.T) {
		frags, err := read(t, "llamacpp-cards-length", coach.ModelRequest{Messages: hello.Messages, Tool: card})
		if err != io.EOF {
			t.Fatalf("stream ended with %v, want io.EOF", err)
		}
		args := map[int]string{}
		var finish string
		var usage *coach.Usage
		for _, f := range frags {
			args[f.ToolIndex] += f.ToolArgs
			if f.FinishReason != "" {
				finish = f.FinishReason
			}
			if f.Usage != nil {
				usage = f.Usage
			}
		}
		if len(args) != 2 || !strings.HasPrefix(args[0], `{"card_type":"scenario"`) || !strings.HasSuffix(args[0], `}`) || args[1] != `{"card_type":"insight","content":"You` {
			t.Errorf("calls = %v, want the card and a second call cut short", args)
		}
		if finish != "length" || usage == nil || usage.PromptTokens != 2412 {
			t.Errorf("finish %q usage %+v, want length and the usage chunk", finish, usage)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		frags, err := read(t, "llamacpp-toulmin-cancelled", coach.ModelRequest{Messages: hello.Messages, Schema: &coachSchema})
		if !errors.Is(err, errCut) {
			t.Fatalf("stream ended with %v, want it reported as cut", err)
		}
		for _, f := range frags {
			if f.Usage != nil {
				t.Errorf("fragment %+v has usage; a cancelled stream has none", f)
			}
		}
	})
}
