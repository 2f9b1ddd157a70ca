package moderation

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/safety"
)

// Categories of an OpenAI-compatible moderation answer that this classifier maps. The names
// are those of the API reference's "categories" object (and go-openai's ResultCategories tags).
const (
	modSelfHarm             = "self-harm"
	modSelfHarmIntent       = "self-harm/intent"
	modSelfHarmInstructions = "self-harm/instructions"
)

// ModerationRulePrefix prefixes, in Verdict.Rules, every category a moderation endpoint
// flagged ("moderation.self-harm/intent", "moderation.violence"), mapped or not, so that an
// operator in observe mode sees what the endpoint said without the audit holding the text.
const ModerationRulePrefix = "moderation."

// New returns the classifier of an OpenAI-compatible /v1/moderations endpoint. It posts
// {"model","input"} (go-openai's ModerationRequest) to o.BaseURL + "/moderations" and maps the
// categories the endpoint flagged in results[0].categories, by its own thresholds:
//
//   - input: "self-harm/intent" (the speaker says they are harming or mean to harm themselves)
//     is safety.CategorySuicide, and "self-harm" (self-harm promoted, encouraged or depicted)
//     is safety.CategorySelfHarm, each a crisis of severity High.
//   - output: "self-harm/instructions" is safety.CategorySelfHarmInstructions, a hit.
//
// Nothing else is a crisis, precision first. "violence" and "harassment/threatening" do not
// say that the learner is the one threatened, so they are not read as abuse. On output,
// "self-harm" alone is not read as encouragement: the supportive answer the gateway wants the
// model to give a learner in distress talks about self-harm too. category_scores are not used:
// a score says how sure the endpoint is that a category applies, not how urgent the learner's
// situation is (a plainly stated passive wish to be dead scores as high as a plan), so no
// score is read as SeverityImminent; that is left to the built-in screen, whose rules tell a
// plan or means from ideation.
//
// An answer without results, or whose categories lack, or hold anything but true or false for, a category
// the stage maps, is an error: a category the endpoint did not report was not checked.
//
// go-openai's Client.Moderations is not used: it refuses every model name outside OpenAI's own
// list (a self-hosted moderation model would never be asked), reads bodies without a limit,
// and its ResultCategories reads an absent category as false, a clean verdict for a category
// never checked. Its ModerationRequest is the request sent.
func New(o Options) *Classifier {
	ep := newEndpoint(o, "moderation", "/moderations")
	return &Classifier{
		ep:      ep,
		request: func(t safety.Text) any { return oai.ModerationRequest{Input: t.Content, Model: ep.model} },
		verdict: parseModeration,
	}
}

// moderationResponse is the part of a moderation answer the classifier reads. A category is
// kept raw so that an absent, null or non-boolean category is told from an unflagged one, and a
// category this classifier does not map cannot fail the check whatever it holds.
type moderationResponse struct {
	Results []struct {
		Categories map[string]json.RawMessage `json:"categories"`
	} `json:"results"`
}

// errNoVerdict is wrapped by every answer that holds no verdict.
var errNoVerdict = errors.New("the answer holds no verdict")

// parseModeration reads the body of a moderation answer for stage.
func parseModeration(stage safety.Stage, body []byte) (safety.Verdict, error) {
	var r moderationResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return safety.Verdict{}, fmt.Errorf("%w: the body is not a moderation object", errNoVerdict)
	}
	if len(r.Results) == 0 {
		return safety.Verdict{}, fmt.Errorf("%w: no results", errNoVerdict)
	}
	cats := r.Results[0].Categories
	flagged := func(name string) (bool, error) {
		switch string(cats[name]) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("%w: category %q is missing or not a boolean", errNoVerdict, name)
	}
	var v safety.Verdict
	add := func(name string, c safety.Category) error {
		hit, err := flagged(name)
		if hit {
			v.Categories = append(v.Categories, c)
		}
		return err
	}
	var err error
	switch stage {
	case safety.StageInput:
		err = errors.Join(add(modSelfHarmIntent, safety.CategorySuicide), add(modSelfHarm, safety.CategorySelfHarm))
	case safety.StageOutput:
		err = add(modSelfHarmInstructions, safety.CategorySelfHarmInstructions)
	default:
		err = fmt.Errorf("unknown stage %q", stage)
	}
	if err != nil {
		return safety.Verdict{}, err
	}
	for name, b := range cats {
		if string(b) == "true" && categoryName(name) {
			v.Rules = append(v.Rules, ModerationRulePrefix+name)
		}
	}
	slices.Sort(v.Rules)
	if len(v.Categories) > 0 {
		slices.Sort(v.Categories)
		v.Crisis, v.Severity = true, safety.SeverityHigh
	}
	return v, nil
}

// categoryName reports whether name looks like a moderation category ("self-harm/intent"):
// only such names go into Verdict.Rules, so that an endpoint echoing text in its keys never
// puts it in an audit record.
func categoryName(name string) bool {
	if name == "" || len(name) > 40 {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && r != '-' && r != '/' && r != '_' {
			return false
		}
	}
	return true
}
