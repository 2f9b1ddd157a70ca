package app

import (
	"fmt"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/moderation"
	"github.com/coachgw/coachgw/internal/safety"
)

// guard builds the safety checks of cfg (wire contract v1.3): the built-in screen, which needs
// nothing; the moderation endpoint and the guard model beside it when configured, each with a
// circuit of its own (so a classifier's outage never opens a model endpoint's circuit, nor the
// reverse); and the crisis resources, built in or from COACH_CRISIS_RESOURCES_FILE. A guard
// whose mode is off runs nothing.
func (a *App) guard(cfg config.Config) (*safety.Guard, error) {
	screen, err := safety.NewScreen()
	if err != nil {
		return nil, fmt.Errorf("safety screen: %w", err)
	}
	resources := safety.BuiltinResources()
	if cfg.CrisisResourcesFile != "" {
		if resources, err = safety.LoadResources(cfg.CrisisResourcesFile); err != nil {
			return nil, fmt.Errorf("COACH_CRISIS_RESOURCES_FILE: %w", err)
		}
	}
	g := &safety.Guard{
		Mode: safety.Mode(cfg.SafetyMode), Screen: screen, Failure: safety.Failure(cfg.SafetyFailure),
		Timeout: cfg.SafetyTimeout, Holdback: cfg.SafetyHoldbackChars, Resources: resources,
		FailedOpen: func(classifier string, stage safety.Stage, err error) {
			a.log.Error().Err(err).Str("classifier", classifier).Str("stage", string(stage)).
				Msg("a safety check failed and was let pass (COACH_SAFETY_FAILURE=open)")
		},
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
	if g.Mode == safety.ModeOff {
		a.log.Warn().Msg("COACH_SAFETY_MODE=off: no learner input or model output is checked")
	}
	return g, nil
}
