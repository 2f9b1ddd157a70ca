package turns

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// pointerLog is a Log holding one session's current-turn pointer, which records the turns
// ended as lost and the stops asked.
type pointerLog struct {
	memLog
	turn, instance string
	running        bool

	mu    sync.Mutex
	ended [][]byte
	stops int
}

func (p *pointerLog) Current(context.Context, string) (string, bool, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turn, p.running, p.instance, nil
}

func (p *pointerLog) EndLost(_ context.Context, _, turn, instance string, line []byte, _ time.Duration) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if turn != p.turn || instance != p.instance || !p.running {
		return false, nil
	}
	p.running = false
	p.ended = append(p.ended, line)
	return true, nil
}

func (p *pointerLog) Follow(context.Context, string, string) error { return nil }

func (p *pointerLog) Stop(context.Context, string, string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stops++
	return nil
}

// pointer is what a pointerLog starts with.
type pointer struct {
	turn, instance string
	running        bool
}

// liveness is an Instances of the instances named alive.
type liveness struct {
	alive map[string]bool
	err   error
	asked int
}

func (l *liveness) Alive(_ context.Context, instance string) (bool, error) {
	l.asked++
	return l.alive[instance], l.err
}

var errRedis = errors.New("redis is down")

// TestLost checks when a turn is found lost: only the session's running turn, on an instance
// known and not alive, and never one that runs here. A learner reads and stops only their own
// session's turn, so the cases where a live turn is asked about are the attacks: asking never
// ends it.
func TestLost(t *testing.T) {
	tests := []struct {
		name      string
		ask       string // the turn asked about
		pointer   pointer
		alive     map[string]bool
		aliveErr  error
		here      bool // the turn runs on this instance
		noChecker bool
		want      bool
		wantErr   bool
	}{
		{name: "its instance died", ask: "t1", pointer: pointer{turn: "t1", instance: "i1", running: true}, want: true},
		{name: "its instance is alive", ask: "t1", pointer: pointer{turn: "t1", instance: "i1", running: true}, alive: map[string]bool{"i1": true}},
		{name: "another instance is alive", ask: "t1", pointer: pointer{turn: "t1", instance: "i1", running: true}, alive: map[string]bool{"i2": true}, want: true},
		{name: "the turn ended", ask: "t1", pointer: pointer{turn: "t1", instance: "i1"}},
		{name: "another turn is current", ask: "t0", pointer: pointer{turn: "t1", instance: "i1", running: true}},
		{name: "its instance is unknown", ask: "t1", pointer: pointer{turn: "t1", running: true}},
		{name: "it runs here", ask: "t1", pointer: pointer{turn: "t1", instance: "i1", running: true}, here: true},
		{name: "no liveness", ask: "t1", pointer: pointer{turn: "t1", instance: "i1", running: true}, noChecker: true},
		{name: "liveness fails", ask: "t1", pointer: pointer{turn: "t1", instance: "i1", running: true}, aliveErr: errRedis, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &pointerLog{turn: tt.pointer.turn, instance: tt.pointer.instance, running: tt.pointer.running}
			cfg := Config{Log: log, ResumeTTL: time.Minute, LostAfter: 15 * time.Second}
			if !tt.noChecker {
				cfg.Instances = &liveness{alive: tt.alive, err: tt.aliveErr}
			}
			ts := New(cfg)
			if tt.here {
				defer ts.Start(context.Background(), context.Background(), "s1", "t1").End()
			}
			got, err := ts.Lost(context.Background(), "s1", tt.ask)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Lost(s1, %s) = %v, %v; want %v, error: %v", tt.ask, got, err, tt.want, tt.wantErr)
			}
			wantEnded := 0
			if tt.want {
				wantEnded = 1
			}
			if len(log.ended) != wantEnded {
				t.Fatalf("the turn was ended as lost %d times, want %d", len(log.ended), wantEnded)
			}
			if tt.want {
				want := `{"type":"error","error":"turn_lost","message":"`
				if line := string(log.ended[0]); !strings.HasPrefix(line, want) || !strings.HasSuffix(line, `,"turn":"t1"}`+"\n") {
					t.Errorf("the lost turn's last line = %q, want a turn_lost error line naming t1", line)
				}
				// Found again, by another reader: it is over, and it is not ended twice.
				if again, err := ts.Lost(context.Background(), "s1", tt.ask); again || err != nil || len(log.ended) != 1 {
					t.Errorf("Lost again = %v, %v with %d ends; want false, nil with 1", again, err, len(log.ended))
				}
			}
		})
	}
}

// TestStopOfALostTurn checks that a stop of a turn whose instance died ends it as lost and
// reports no running turn (404 no_running_turn), while a turn of a live instance is stopped
// through the log.
func TestStopOfALostTurn(t *testing.T) {
	tests := []struct {
		name      string
		self      string // the id of the instance asked to stop
		alive     bool
		want      bool
		wantStops int
		wantEnded int
	}{
		{"its instance died", "i2", false, false, 0, 1},
		{"its instance is alive", "i2", true, true, 1, 0},
		// A turn of this instance's own that no longer runs here has just ended: its pointer
		// says running only until its last batch is written.
		{"it was this instance's and has ended", "i1", true, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &pointerLog{turn: "t1", instance: "i1", running: true}
			ts := New(Config{Log: log, ResumeTTL: time.Minute, Instances: &liveness{alive: map[string]bool{"i1": tt.alive}}, LostAfter: time.Second, Instance: tt.self})
			got, err := ts.Stop(context.Background(), "s1")
			if got != tt.want || err != nil {
				t.Fatalf("Stop = %v, %v; want %v, nil", got, err, tt.want)
			}
			if log.stops != tt.wantStops || len(log.ended) != tt.wantEnded {
				t.Errorf("stops sent = %d, ends as lost = %d; want %d and %d", log.stops, len(log.ended), tt.wantStops, tt.wantEnded)
			}
		})
	}
}

// TestLostWithinTheBound checks the timing that keeps "lost within COACH_TURN_LOST_AFTER": an
// instance's key outlives its last refresh by ttl, and a silent reader checks every ReadBlock,
// so ttl plus ReadBlock must stay under the bound with room for round trips; and a live
// instance refreshes at least twice within ttl, so that one late refresh does not kill it.
func TestLostWithinTheBound(t *testing.T) {
	for _, lostAfter := range []time.Duration{time.Second, 3 * time.Second, 15 * time.Second, time.Minute} {
		ts := New(Config{Log: &memLog{}, ResumeTTL: time.Minute, Instances: &liveness{}, LostAfter: lostAfter})
		ttl, period := Heartbeat(lostAfter)
		block := ts.ReadBlock()
		if got := ttl + block; got > lostAfter*11/12 {
			t.Errorf("COACH_TURN_LOST_AFTER=%v: key ttl %v + read block %v = %v, want at most %v", lostAfter, ttl, block, got, lostAfter*11/12)
		}
		if period <= 0 || ttl < 3*period {
			t.Errorf("COACH_TURN_LOST_AFTER=%v: refresh every %v for a ttl of %v, want at least three refreshes per ttl", lostAfter, period, ttl)
		}
	}
	if got := New(Config{}).ReadBlock(); got != 5*time.Second {
		t.Errorf("ReadBlock without liveness = %v, want 5s", got)
	}
}
