package app

import (
	"fmt"

	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/safety"
)

// guard builds the safety checks of cfg (wire contract v1.3): the built-in screen, which needs
// nothing, and the crisis resources, built in or from COACH_CRISIS_RESOURCES_FILE. A guard
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
	if g.Mode == safety.ModeOff {
		a.log.Warn().Msg("COACH_SAFETY_MODE=off: no learner input or model output is checked")
	}
	return g, nil
}
