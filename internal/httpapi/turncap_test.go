package httpapi

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/turns"
)

// TestTurnOverTenantCap fills a tenant's places among the running turns and sends one more turn
// on each turn route: it must be 429 too_many_turns with a Retry-After, before the session
// reaches the store (no claim, no model call), and go ahead once a place comes back.
func TestTurnOverTenantCap(t *testing.T) {
	tests := []struct {
		route, body string
	}{
		{"turns", `{"message":"hello"}`},
		{"chat", chatText("hello")},
	}
	for _, tt := range tests {
		t.Run(tt.route, func(t *testing.T) {
			running := turns.New(turns.Config{MaxPerTenant: 1})
			ts := startServer(t, func(d *Deps) { d.Turns = running })
			id := ts.create("toulmin")
			// The open gateway's tenant, the empty name, already runs a turn: a detached one,
			// say, whose client hung up.
			held, err := running.Admit("")
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			asked := len(ts.store.Asked())

			r := ts.do("POST", "/v1/sessions/"+id+"/"+tt.route, tt.body)
			if r.Status != http.StatusTooManyRequests || r.errorCode() != coach.CodeTooManyTurns {
				t.Fatalf("turn over the cap: got %d %s, want 429 %s", r.Status, r.Body, coach.CodeTooManyTurns)
			}
			if got := r.Header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After: got %q, want %q", got, "1")
			}
			if got := ts.store.Asked()[asked:]; len(got) != 0 {
				t.Errorf("the store was asked about %q for a refused turn, want nothing", got)
			}
			if got := ts.model.Calls(); got != 0 {
				t.Errorf("model calls for a refused turn: got %d, want 0", got)
			}

			held.Release()
			r = ts.do("POST", "/v1/sessions/"+id+"/"+tt.route, tt.body)
			if r.Status != http.StatusOK {
				t.Fatalf("turn with a place free: got %d %s, want 200", r.Status, r.Body)
			}
			if !slices.Contains(ts.store.Asked()[asked:], id) {
				t.Errorf("the admitted turn never claimed its session")
			}
			if got := running.Running(""); got != 0 {
				t.Errorf("places held after the turn ended: got %d, want 0", got)
			}
		})
	}
}

// TestRefusedTurnsGiveTheirPlaceBack sends turns that are refused (an unknown session or a busy
// one, after their admission; bad input, before it) and turns that run, three times each with
// one place: each must give its place back, so that refusals a learner provokes never use up
// the tenant's places.
func TestRefusedTurnsGiveTheirPlaceBack(t *testing.T) {
	running := turns.New(turns.Config{MaxPerTenant: 1})
	ts := startServer(t, func(d *Deps) { d.Turns = running })
	id, busy := ts.create("toulmin"), ts.create("toulmin")
	if _, _, err := ts.store.Claim(context.Background(), "", busy, time.Minute); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	tests := []struct {
		name, path, body string
		want             int
	}{
		{"unknown session", "/v1/sessions/no-such-session/turns", `{"message":"hello"}`, http.StatusNotFound},
		{"busy session", "/v1/sessions/" + busy + "/turns", `{"message":"hello"}`, http.StatusConflict},
		{"invalid input", "/v1/sessions/" + id + "/turns", `{"message":""}`, http.StatusUnprocessableEntity},
		{"a turn that runs", "/v1/sessions/" + id + "/turns", `{"message":"hello"}`, http.StatusOK},
	}
	for _, tt := range tests {
		for i := range 3 {
			r := ts.do("POST", tt.path, tt.body)
			if r.Status != tt.want {
				t.Fatalf("%s #%d: got %d %s, want %d", tt.name, i+1, r.Status, r.Body, tt.want)
			}
			if got := running.Running(""); got != 0 {
				t.Fatalf("%s #%d: places held after the answer: got %d, want 0", tt.name, i+1, got)
			}
		}
	}
}
