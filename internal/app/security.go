package app

import "github.com/coachgw/coachgw/internal/httpapi"

// apiKeys returns the configured client keys for the HTTP layer. With none, the gateway is open
// to anyone who can reach it, operator routes included, which is fine on a laptop and a finding
// everywhere else: it says so at start, loudly.
func (a *App) apiKeys() []httpapi.APIKey {
	if len(a.cfg.APIKeys) == 0 {
		a.log.Warn().Str("fix", "set COACH_API_KEYS or COACH_API_KEYS_FILE").
			Msg("no API keys configured: the gateway is open to anyone who can reach it, operator routes included (clear a hold, read the safety audit, export and erase a learner)")
		if a.cfg.RateLimit > 0 {
			a.log.Warn().Int("rateLimit", a.cfg.RateLimit).
				Msg("without API keys every caller is the same tenant: COACH_RATE_LIMIT is one budget shared by all of them")
		}
		return nil
	}
	keys := make([]httpapi.APIKey, len(a.cfg.APIKeys))
	for i, k := range a.cfg.APIKeys {
		keys[i] = httpapi.APIKey(k)
	}
	return keys
}
