package replay

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/moderation"
	"github.com/coachgw/coachgw/internal/safety"
)

// replayWhy is the reason of every judgement the replay model writes.
const replayWhy = "The replay model cannot judge; it repeats the built-in screen's verdict."

var screen = sync.OnceValues(safety.NewScreen)

// judgeRequest reports whether req is a safety judge's request (moderation.NewJudge): its
// system message is the judge's rubric.
func judgeRequest(req *fakellm.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" && req.Messages[0].Content == moderation.JudgeRubric
}

// judgement answers a judge's request as the rubric asks, by the built-in screen: the replay
// model reads no text, so that under COACH_SAFETY_JUDGE=auto with nothing configured (the
// replay model is then the first endpoint) the judge keeps the screen's decision rather than
// fail every check. A crisis of the screen is "self", or "other" when it concerns only someone
// else; what the screen passed (a text it could not read included) is "none", or the concern
// the screen named.
func judgement(req *fakellm.Request) string {
	var in struct {
		Text string `json:"text"`
	}
	if n := len(req.Messages); n > 0 {
		_ = json.Unmarshal([]byte(req.Messages[n-1].Content), &in)
	}
	a := struct {
		Why      string `json:"why"`
		Concern  string `json:"concern"`
		Category string `json:"category"`
		Severity string `json:"severity"`
	}{Why: replayWhy, Concern: "none", Category: "none", Severity: "none"}
	s, err := screen()
	if err == nil {
		v, _ := s.Check(context.Background(), safety.Text{Stage: safety.StageInput, Content: in.Text})
		switch {
		case v.Crisis && (v.Concern == safety.ConcernOther || (v.Concern == safety.ConcernNone && onlyOther(v))):
			a.Concern, a.Category, a.Severity = "other", string(safety.CategoryConcernOther), safety.SeverityConcern.String()
		case v.Crisis:
			a.Concern, a.Category, a.Severity = "self", string(selfCategory(v)), max(v.Severity, safety.SeverityHigh).String()
		case v.Concern == safety.ConcernTopic:
			a.Concern = "topic"
		}
	}
	b, _ := json.Marshal(a) // four strings always marshal
	return string(b)
}

func onlyOther(v safety.Verdict) bool {
	return len(v.Categories) == 1 && v.Categories[0] == safety.CategoryConcernOther
}

// selfCategory is the first of v's categories about the learner (suicide when none is).
func selfCategory(v safety.Verdict) safety.Category {
	for _, c := range v.Categories {
		if c != safety.CategoryConcernOther {
			return c
		}
	}
	return safety.CategorySuicide
}
