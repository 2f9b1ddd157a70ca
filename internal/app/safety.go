package app

import (
	"fmt"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/moderation"
	"github.com/coachgw/coachgw/internal/redact"
	"github.com/coachgw/coachgw/internal/safety"
)

// guard builds the safety checks of cfg (wire contract v1.3): the built-in screen, which needs
// nothing; the moderation endpoint and the guard model beside it when configured, each with a
// circuit of its own (so a classifier's outage never opens a model endpoint's circuit, nor the
// reverse); and the crisis resources, built in or from COACH_CRISIS_RESOURCES_FILE. A guard
// whose mode is off runs nothing, and has no screen: its compiled rules are some 2.6 MiB of
// live heap in 13,000 objects, which every collection would mark for nothing.
func (a *App) guard(cfg config.Config) (*safety.Guard, error) {
	resources := safety.BuiltinResources()
	if cfg.CrisisResourcesFile != "" {
		var err error
		if resources, err = safety.LoadResources(cfg.CrisisResourcesFile); err != nil {
			return nil, fmt.Errorf("COACH_CRISIS_RESOURCES_FILE: %w", err)
		}
	}
	g := &safety.Guard{
		Mode: safety.Mode(cfg.SafetyMode), Failure: safety.Failure(cfg.SafetyFailure),
		Timeout: cfg.SafetyTimeout, Holdback: cfg.SafetyHoldbackChars, Resources: resources,
		FailedOpen: func(classifier string, stage safety.Stage, err error) {
			a.log.Error().Err(err).Str("classifier", classifier).Str("stage", string(stage)).
				Msg("a safety check failed and was let pass (COACH_SAFETY_FAILURE=open)")
		},
	}
	if g.Enabled() {
		var err error
		if g.Screen, err = safety.NewScreen(); err != nil {
			return nil, fmt.Errorf("safety screen: %w", err)
		}
	}
	bopts := breaker.Options{
		Failures: cfg.BreakerFailures, FailureRate: cfg.BreakerFailureRate / 100, Window: cfg.BreakerWindow,
		Cooldown: cfg.BreakerCooldown,
		Warn:     func(err error, msg string) { a.log.Warn().Err(err).Msg(msg) },
	}
	if cfg.ModerationURL != "" {
		c := moderation.New(moderation.Options{
			BaseURL: cfg.ModerationURL, Model: cfg.ModerationModel, APIKey: cfg.ModerationAPIKey,
			ConnectTimeout: cfg.ConnectTimeout, Timeout: cfg.SafetyTimeout, Breaker: bopts,
		})
		g.Classifiers = append(g.Classifiers, safety.NamedClassifier{Name: c.Name(), Classifier: c})
	}
	if cfg.GuardURL != "" {
		// config accepts only the formats there is a classifier for (llamaguard3).
		c := moderation.NewLlamaGuard3(moderation.Options{
			BaseURL: cfg.GuardURL, Model: cfg.GuardModel, APIKey: cfg.GuardAPIKey,
			ConnectTimeout: cfg.ConnectTimeout, Timeout: cfg.SafetyTimeout, Breaker: bopts,
		})
		g.Classifiers = append(g.Classifiers, safety.NamedClassifier{Name: c.Name(), Classifier: c})
	}
	if j := a.judge(cfg, bopts); j != nil {
		g.Judge = safety.NamedClassifier{Name: j.Name(), Classifier: j}
	}
	if g.Mode == safety.ModeOff {
		a.log.Warn().Msg("COACH_SAFETY_MODE=off: no learner input or model output is checked")
	}
	return g, nil
}

// judge builds the safety judge of cfg (COACH_SAFETY_JUDGE): nil when it is off; on
// COACH_SAFETY_JUDGE_URL when set; else on the first model endpoint (under `go run` with nothing
// configured, the embedded replay model, which answers a judge's request by the built-in screen),
// with COACH_SAFETY_JUDGE_MODEL in place of its model when set.
func (a *App) judge(cfg config.Config, bopts breaker.Options) *moderation.Judge {
	if cfg.SafetyJudge == "off" {
		return nil
	}
	o := moderation.Options{
		BaseURL: cfg.SafetyJudgeURL, Model: cfg.SafetyJudgeModel, APIKey: cfg.SafetyJudgeAPIKey,
		ConnectTimeout: cfg.ConnectTimeout, Timeout: cfg.SafetyTimeout, Breaker: bopts,
	}
	if o.BaseURL == "" {
		if len(a.upstreams) == 0 {
			return nil
		}
		first := a.upstreams[0]
		o.BaseURL, o.APIKey = first.baseURL, first.apiKey
		if o.Model == "" {
			o.Model = first.ModelName
		}
	}
	j := moderation.NewJudge(moderation.JudgeOptions{Options: o, MaskPII: cfg.PIIRedact == "mask"})
	a.log.Info().Str("url", redact.URL(o.BaseURL)).Str("model", o.Model).
		Msg("safety judge: a model decides whom a text the screen caught concerns (COACH_SAFETY_JUDGE=off for the screen alone)")
	return j
}
