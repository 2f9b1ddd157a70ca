package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ContextWindow asks a llama-server for its context window in tokens: GET /props (beside the
// /v1 of baseURL) reports it as default_generation_settings.n_ctx. key, when set, is sent as
// the bearer token, as llama-server started with --api-key wants it. An endpoint that is not a
// llama-server, or does not answer, is an error; the gateway then knows no window.
func ContextWindow(ctx context.Context, hc *http.Client, baseURL, key string) (int, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return 0, err
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + "/props"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /props: status %d", resp.StatusCode)
	}
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&props); err != nil {
		return 0, fmt.Errorf("GET /props: %w", err)
	}
	if props.Settings.NCtx <= 0 {
		return 0, fmt.Errorf("GET /props: no default_generation_settings.n_ctx")
	}
	return props.Settings.NCtx, nil
}
