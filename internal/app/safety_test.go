package app

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/config"
)

// TestGuardBuildsItsScreenOnlyWhenItChecks: a guard whose mode is off runs no check, so it has
// no screen, whose compiled rules would only weigh on every collection; the other modes have
// one. transcript_e2e_test.go runs turns with the mode off.
func TestGuardBuildsItsScreenOnlyWhenItChecks(t *testing.T) {
	a := &App{log: zerolog.Nop()}
	for _, tt := range []struct {
		mode   string
		screen bool
	}{
		{"off", false},
		{"observe", true},
		{"enforce", true},
	} {
		cfg := config.Default()
		cfg.SafetyMode, cfg.SafetyJudge = tt.mode, "off"
		g, err := a.guard(cfg)
		if err != nil {
			t.Fatalf("%s: %v", tt.mode, err)
		}
		if got := g.Screen != nil; got != tt.screen {
			t.Errorf("%s: screen built %v, want %v", tt.mode, got, tt.screen)
		}
	}
}
