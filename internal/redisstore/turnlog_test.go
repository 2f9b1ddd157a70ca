package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/turns"
)

// TestTurnLog runs the TurnLog against the real Redis and the embedded one: the current-turn
// pointer, batches read back in order, a blocking XREAD woken by the next append (no polling),
// the end marker and the expiry, and a stop published by one client delivered to another's
// subscription.
func TestTurnLog(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			log := NewTurnLog(f.client, f.prefix, "")
			const session, turn = "0123456789abcdef0123456789abcdef", "t1"

			if id, running, _, err := log.Current(ctx, session); err != nil || id != "" || running {
				t.Fatalf("Current before any turn = %q, %v, %v; want \"\", false, nil", id, running, err)
			}
			if err := log.Append(ctx, session, turn, 0, []byte("{\"type\":\"delta\",\"text\":\"a\"}\n{\"type\":\"delta\",\"text\":\"b\"}\n"), turns.Running, time.Minute); err != nil {
				t.Fatalf("Append: %v", err)
			}
			if id, running, _, err := log.Current(ctx, session); err != nil || id != turn || !running {
				t.Fatalf("Current while running = %q, %v, %v; want %q, true, nil", id, running, err, turn)
			}
			got, err := log.Read(ctx, session, turn, "", 10*time.Millisecond)
			if err != nil || len(got) != 1 || got[0].First != 0 || got[0].End || string(got[0].Lines) != "{\"type\":\"delta\",\"text\":\"a\"}\n{\"type\":\"delta\",\"text\":\"b\"}\n" {
				t.Fatalf("Read from the start = %+v, %v; want the first batch", got, err)
			}
			cursor := got[0].Cursor

			// A reader blocked after the first batch is woken by the last one.
			type read struct {
				batches []turns.Batch
				err     error
			}
			woken := make(chan read, 1)
			go func() {
				bs, err := log.Read(ctx, session, turn, cursor, 20*time.Second)
				woken <- read{bs, err}
			}()
			time.Sleep(100 * time.Millisecond) // let the XREAD block first; a later one finds the entry anyway
			if err := log.Append(ctx, session, turn, 2, []byte("{\"type\":\"result\",\"turn\":\"t1\"}\n"), turns.Ended, time.Minute); err != nil {
				t.Fatalf("Append of the end: %v", err)
			}
			select {
			case r := <-woken:
				if r.err != nil || len(r.batches) != 1 || r.batches[0].First != 2 || !r.batches[0].End {
					t.Fatalf("blocked Read = %+v, %v; want the last batch, marked End, from line 2", r.batches, r.err)
				}
				cursor = r.batches[0].Cursor
			case <-time.After(15 * time.Second):
				t.Fatal("a blocked Read was not woken by the next Append")
			}
			if id, running, _, err := log.Current(ctx, session); err != nil || id != turn || running {
				t.Fatalf("Current after the end = %q, %v, %v; want %q, false, nil", id, running, err, turn)
			}
			if bs, err := log.Read(ctx, session, turn, cursor, 50*time.Millisecond); err != nil || len(bs) != 0 {
				t.Errorf("Read after the last batch = %+v, %v; want nothing once the block passed", bs, err)
			}
			for _, key := range []string{log.logKey(session, turn), log.pointerKey(session)} {
				if ttl, err := f.client.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
					t.Errorf("PTTL %s = %v, %v; want it to expire within the minute given", key, ttl, err)
				}
			}

			// A stop published through one client reaches the subscription of another.
			subCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			stops := make(chan [2]string, 1)
			if err := NewTurnLog(b.dial(t), f.prefix, "").Subscribe(subCtx, func(s, tn string) { stops <- [2]string{s, tn} }); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			if err := log.Stop(ctx, session, "t2"); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case got := <-stops:
				if got != [2]string{session, "t2"} {
					t.Errorf("stop delivered %q, want %q", got, [2]string{session, "t2"})
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the stop was not delivered")
			}
			// Another prefix's stops are not this one's.
			if err := NewTurnLog(f.client, f.prefix+"-other", "").Stop(ctx, session, "t3"); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-stops:
				t.Errorf("a stop under another prefix was delivered: %q", got)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}
