package openai

import (
	"context"
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
				if (usage != nil) != p.IncludeUsage || usage != nil && (usage.PromptTokens == 0 || usage.CompletionTokens == 0) {
					t.Errorf("usage = %+v, want one exactly when the profile asks for it (%v)", usage, p.IncludeUsage)
				}
			})
		}
	}
}
