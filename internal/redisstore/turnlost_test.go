package redisstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/turns"
)

// TestEndLost runs EndLost against the real Redis and the embedded one: the pointer names the
// instance that wrote the turn's first batch; a lost turn gets one last batch, numbered after
// the lines logged, marked End and expiring with the turn; of many racing calls one ends it;
// a turn that ended, another turn, and a turn that another instance runs are never ended.
func TestEndLost(t *testing.T) {
	const session = "0123456789abcdef0123456789abcdef"
	line := []byte(`{"type":"error","error":"turn_lost","message":"gone","turn":"t1"}` + "\n")
	tests := []struct {
		name     string
		ended    bool   // the turn wrote its last batch
		noLines  bool   // the turn logged no line before it died
		turn     string // the turn EndLost is asked to end
		instance string // the instance EndLost is told runs it
		want     bool
		wantLine int64 // the number of lines before the lost line
	}{
		{name: "lost after three lines", turn: "t1", instance: "i1", want: true, wantLine: 3},
		{name: "lost before its first line", noLines: true, turn: "t1", instance: "i1", want: true, wantLine: 0},
		{name: "the turn ended", ended: true, turn: "t1", instance: "i1"},
		{name: "another turn", turn: "t0", instance: "i1"},
		{name: "another instance", turn: "t1", instance: "i2"},
	}
	for _, b := range backends(t) {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				f := newFixture(t, b)
				ctx := context.Background()
				log := NewTurnLog(f.client, f.prefix, "i1")
				if tt.noLines {
					if err := appendWrite(ctx, log, session, "t1", turns.Write{State: turns.Running, TTL: time.Minute}); err != nil {
						t.Fatal(err)
					}
				} else {
					if err := appendWrite(ctx, log, session, "t1", turns.Write{Lines: []byte("{\"type\":\"delta\",\"text\":\"a\"}\n{\"type\":\"delta\",\"text\":\"b\"}\n"), State: turns.Running, TTL: time.Minute}); err != nil {
						t.Fatal(err)
					}
					if err := appendWrite(ctx, log, session, "t1", turns.Write{First: 2, Lines: []byte("{\"type\":\"delta\",\"text\":\"c\"}\n"), TTL: time.Minute}); err != nil {
						t.Fatal(err)
					}
				}
				if tt.ended {
					if err := appendWrite(ctx, log, session, "t1", turns.Write{First: 3, Lines: []byte("{\"type\":\"result\",\"turn\":\"t1\"}\n"), State: turns.Ended, TTL: time.Minute}); err != nil {
						t.Fatal(err)
					}
				}
				if id, running, inst, err := log.Current(ctx, session); err != nil || id != "t1" || running == tt.ended || inst != "i1" {
					t.Fatalf("Current = %q, %v, %q, %v; want t1, running %v, i1", id, running, inst, err, !tt.ended)
				}
				before, err := log.Read(ctx, session, "t1", "", time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}

				// Readers on several instances find it lost at once: one ends it.
				const racers = 8
				var wg sync.WaitGroup
				results := make(chan bool, racers)
				for range racers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ok, err := NewTurnLog(f.client, f.prefix, "other").EndLost(ctx, session, tt.turn, tt.instance, line, 30*time.Second)
						if err != nil {
							t.Errorf("EndLost: %v", err)
						}
						results <- ok
					}()
				}
				wg.Wait()
				close(results)
				ends := 0
				for ok := range results {
					if ok {
						ends++
					}
				}
				if want := map[bool]int{true: 1, false: 0}[tt.want]; ends != want {
					t.Fatalf("%d racing EndLost calls ended the turn %d times, want %d", racers, ends, want)
				}

				after, err := log.Read(ctx, session, "t1", "", time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				_, running, _, err := log.Current(ctx, session)
				if err != nil {
					t.Fatal(err)
				}
				if !tt.want {
					if len(after) != len(before) || running == tt.ended {
						t.Errorf("a turn not lost got %d batches (had %d), running %v; want it untouched", len(after), len(before), running)
					}
					return
				}
				if len(after) != len(before)+1 {
					t.Fatalf("the log has %d batches, want %d (one more)", len(after), len(before)+1)
				}
				last := after[len(after)-1]
				if last.First != tt.wantLine || !last.End || string(last.Lines) != string(line) {
					t.Errorf("the last batch = first %d, end %v, %q; want first %d, end, %q", last.First, last.End, last.Lines, tt.wantLine, line)
				}
				if running {
					t.Error("the pointer of a lost turn still says running")
				}
				for _, key := range []string{log.logKey(session, "t1"), log.pointerKey(session)} {
					if ttl, err := f.client.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > 30*time.Second {
						t.Errorf("PTTL %s = %v, %v; want the resume ttl given (30s)", key, ttl, err)
					}
				}
			})
		}
	}
}

// TestInstances runs Instances against the real Redis and the embedded one: an instance is
// alive from its beat until its key expires or it leaves, and one instance's beat keeps no
// other alive.
func TestInstances(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			in := NewInstances(f.client, f.prefix)
			alive := func(id string) bool {
				t.Helper()
				ok, err := in.Alive(ctx, id)
				if err != nil {
					t.Fatalf("Alive(%s): %v", id, err)
				}
				return ok
			}
			if alive("i1") {
				t.Fatal("an instance that never beat is alive")
			}
			if err := in.Beat(ctx, "i1", time.Minute); err != nil {
				t.Fatal(err)
			}
			if !alive("i1") || alive("i2") {
				t.Errorf("after i1's beat: i1 alive %v, i2 alive %v; want true, false", alive("i1"), alive("i2"))
			}
			if ttl, err := f.client.PTTL(ctx, in.key("i1")).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
				t.Errorf("PTTL of i1's key = %v, %v; want the minute given", ttl, err)
			}
			if err := in.Leave(ctx, "i1"); err != nil {
				t.Fatal(err)
			}
			if alive("i1") {
				t.Error("an instance that left is alive")
			}
		})
	}
}
