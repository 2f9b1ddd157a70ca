package replay

import (
	"context"
	"testing"

	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/moderation"
	"github.com/coachgw/coachgw/internal/safety"
)

// TestReplayAnswersTheJudge: the replay model, the first endpoint of a gateway with nothing
// configured, answers a judge's request with a valid judgement that keeps the screen's decision.
func TestReplayAnswersTheJudge(t *testing.T) {
	_, base, stop, err := fakellm.Start(fakellm.Options{Responder: Responder(), Model: "coachgw-replay"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	j := moderation.NewJudge(moderation.JudgeOptions{Options: moderation.Options{BaseURL: base, Model: "coachgw-replay"}, TTL: -1})
	s, err := safety.NewScreen()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"honestly I don't want to be alive anymore",
		"quiero matarme",
		"Can you help me find the claim in this paragraph?",
		"Personne ne m'aime, je vais me tuer ce soir",
	} {
		in := safety.Text{Stage: safety.StageInput, Content: text}
		v, err := j.Check(context.Background(), in)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want, _ := s.Check(context.Background(), in)
		if v.Crisis != want.Crisis {
			t.Errorf("%q: judged %+v, want the screen's decision %+v", text, v, want)
		}
	}
}
