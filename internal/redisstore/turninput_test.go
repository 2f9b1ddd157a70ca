package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/turns"
)

// TestTurnInput keeps a running turn's input with its log's first batch and reads it back, on
// the real Redis and the embedded one: per turn, absent before it is kept and for another turn
// or session.
func TestTurnInput(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			log := NewTurnLog(f.client, f.prefix, "")
			const session, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
			input := `{"message":"Cities should ban cars."}`
			if got, err := log.Input(ctx, session, "t1"); err != nil || got != nil {
				t.Fatalf("Input before the first batch = %q, %v; want nil, nil", got, err)
			}
			if err := appendWrite(ctx, log, session, "t1", turns.Write{State: turns.Running, TTL: time.Minute, Input: []byte(input)}); err != nil {
				t.Fatalf("Append: %v", err)
			}
			tests := []struct {
				session, turn, want string
			}{
				{session, "t1", input},
				{session, "t2", ""},
				{other, "t1", ""},
			}
			for _, tt := range tests {
				got, err := log.Input(ctx, tt.session, tt.turn)
				if err != nil || string(got) != tt.want {
					t.Errorf("Input(%s, %s) = %q, %v; want %q", tt.session, tt.turn, got, err, tt.want)
				}
			}
			if ttl := f.client.PTTL(ctx, log.pointerKey(session)).Val(); ttl <= 0 || ttl > time.Minute {
				t.Errorf("the pointer's TTL, which keeps the input, = %v, want at most the minute it was kept for", ttl)
			}
			// The session's next turn takes the pointer: the earlier turn's input is no longer
			// its own.
			if err := appendWrite(ctx, log, session, "t2", turns.Write{State: turns.Running, TTL: time.Minute}); err != nil {
				t.Fatalf("Append: %v", err)
			}
			if got, err := log.Input(ctx, session, "t1"); err != nil || got != nil {
				t.Errorf("Input(t1) once t2 runs = %q, %v; want nil", got, err)
			}
		})
	}
}
