package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
			if err := appendWrite(ctx, log, session, turn, turns.Write{Lines: []byte("{\"type\":\"delta\",\"text\":\"a\"}\n{\"type\":\"delta\",\"text\":\"b\"}\n"), State: turns.Running, TTL: time.Minute}); err != nil {
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
			if err := appendWrite(ctx, log, session, turn, turns.Write{First: 2, Lines: []byte("{\"type\":\"result\",\"turn\":\"t1\"}\n"), State: turns.Ended, TTL: time.Minute}); err != nil {
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

			// A stop, and a follow, published through one client reach the subscription of
			// another, each as what it is.
			subCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			stops, follows := make(chan [2]string, 1), make(chan [2]string, 1)
			if err := NewTurnLog(b.dial(t), f.prefix, "").Subscribe(subCtx,
				func(s, tn string) { stops <- [2]string{s, tn} },
				func(s, tn string) { follows <- [2]string{s, tn} }); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			if err := log.Stop(ctx, session, "t2"); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if err := log.Follow(ctx, session, "t4"); err != nil {
				t.Fatalf("Follow: %v", err)
			}
			for _, want := range []struct {
				what string
				ch   chan [2]string
				turn string
			}{{"stop", stops, "t2"}, {"follow", follows, "t4"}} {
				select {
				case got := <-want.ch:
					if got != [2]string{session, want.turn} {
						t.Errorf("%s delivered %q, want %q", want.what, got, [2]string{session, want.turn})
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("the %s was not delivered", want.what)
				}
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

// TestTurnLogReadsOnTheirOwnConnections attacks the store's pool from the readers' side: with
// the store's client and the readers' each of one connection, two blocking reads at once never
// take the store's connection (Current answers while they block), and the second read waits
// for the readers' one connection rather than failing: both get their batch.
func TestTurnLogReadsOnTheirOwnConnections(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			store, err := PoolOf(f.client, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			readers, err := PoolOf(f.client, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer readers.Close()
			log := NewTurnLog(store, f.prefix, "i1").WithReaders(readers)
			ctx := context.Background()
			const session = "0123456789abcdef0123456789abcdef"

			type read struct {
				batches []turns.Batch
				err     error
			}
			done := make(chan read, 2)
			for _, turn := range []string{"t1", "t2"} {
				go func() {
					got, err := log.Read(ctx, session, turn, "", 5*time.Second)
					done <- read{got, err}
				}()
			}
			time.Sleep(100 * time.Millisecond) // the reads block
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, _, _, err = log.Current(cctx, session)
			cancel()
			if err != nil {
				t.Errorf("Current while two reads block: %v, want an answer on the store's own connection", err)
			}
			for _, turn := range []string{"t1", "t2"} {
				if err := appendWrite(ctx, log, session, turn, turns.Write{Lines: []byte("{\"type\":\"delta\",\"text\":\"" + turn + "\"}\n"), State: turns.Running, TTL: time.Minute}); err != nil {
					t.Fatalf("Append: %v", err)
				}
			}
			for range 2 {
				r := <-done
				if r.err != nil || len(r.batches) != 1 {
					t.Errorf("a read sharing the readers' one connection = %+v, %v; want its batch", r.batches, r.err)
				}
			}
		})
	}
}

// TestOpenPool checks that a second pool's client keeps the URL's options but its pool size.
func TestOpenPool(t *testing.T) {
	tests := []struct {
		name, url string
		// options describes the client's pool size and, where it has one, its database.
		options func(redis.UniversalClient) string
		want    string
	}{
		{"redis", "redis://127.0.0.1:6379/11?pool_size=20", func(c redis.UniversalClient) string {
			o := c.(*redis.Client).Options()
			return fmt.Sprintf("pool %d, db %d", o.PoolSize, o.DB)
		}, "pool 3, db 11"},
		{"cluster", "redis+cluster://127.0.0.1:7000,127.0.0.1:7001?pool_size=20", func(c redis.UniversalClient) string {
			return fmt.Sprintf("pool %d", c.(*redis.ClusterClient).Options().PoolSize)
		}, "pool 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := OpenPool(tt.url, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := tt.options(c); got != tt.want {
				t.Errorf("OpenPool(%q, 3): got %s, want %s", tt.url, got, tt.want)
			}
		})
	}
}

// commandCounter is a go-redis hook that counts round trips (a pipeline once) and the commands
// sent in them, as the gateway's metrics hook does.
type commandCounter struct {
	mu         sync.Mutex
	roundTrips int
	commands   []string
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds)
		return next(ctx, cmds)
	}
}

// count counts cmds, one round trip, unless they are a new connection's handshake.
func (c *commandCounter) count(cmds []redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, cmd := range cmds {
		switch name := strings.ToUpper(cmd.Name()); name {
		case "HELLO", "SELECT", "CLIENT", "AUTH":
		default:
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		c.roundTrips++
		c.commands = append(c.commands, names...)
	}
}

// take returns the round trips and commands counted since the last take.
func (c *commandCounter) take() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, cmds := c.roundTrips, strings.Join(c.commands, " ")
	c.roundTrips, c.commands = 0, nil
	return n, cmds
}

// TestTurnLogAppendShapes writes a turn's log as its writer does, on the real Redis and the
// embedded one, and checks what each write costs and what it leaves: the first batch is one
// round trip that creates the log (even without lines), points the session at the turn, keeps
// the input in the pointer, and sets the expiry of both for the turn's whole life; a batch
// between is a bare XADD that leaves the expiry alone (a write of nothing costs nothing); the
// last batch adds its entry and marks the pointer ended, the expiry still the one set first:
// one expiry per turn.
func TestTurnLogAppendShapes(t *testing.T) {
	const life = time.Hour
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f, counter, log := countedTurnLog(t, b)
			ctx := context.Background()
			const session, turn = "0123456789abcdef0123456789abcdef", "t1"
			keys := map[string]string{"log": log.logKey(session, turn), "pointer": log.pointerKey(session)}
			line := []byte(`{"type":"delta","text":"a"}` + "\n")
			steps := []struct {
				name       string
				w          turns.Write
				wantTrips  int
				wantCmds   string
				wantTTLMin map[string]time.Duration // keys whose TTL must be above this
				wantTTLMax map[string]time.Duration // keys whose TTL must be at most this
			}{
				{"first, no lines yet", turns.Write{State: turns.Running, TTL: life, Input: []byte(`{"message":"hi"}`)},
					1, "XADD HSET PEXPIRE PEXPIRE",
					map[string]time.Duration{"log": life - time.Minute, "pointer": life - time.Minute}, nil},
				{"between", turns.Write{First: 0, Lines: line}, 1, "XADD",
					map[string]time.Duration{"log": life - time.Minute, "pointer": life - time.Minute}, nil},
				{"between, nothing", turns.Write{First: 1}, 0, "",
					map[string]time.Duration{"log": life - time.Minute}, nil},
				{"between again", turns.Write{First: 1, Lines: append(line, line...)}, 1, "XADD",
					map[string]time.Duration{"log": life - time.Minute}, nil},
				{"last", turns.Write{First: 3, Lines: line, State: turns.Ended}, 1, "EVALSHA",
					map[string]time.Duration{"log": life - time.Minute, "pointer": life - time.Minute}, nil},
			}
			counter.take() // the fixture's own commands
			for _, st := range steps {
				if err := appendWrite(ctx, log, session, turn, st.w); err != nil {
					t.Fatalf("%s: Append: %v", st.name, err)
				}
				if trips, cmds := counter.take(); trips != st.wantTrips || cmds != st.wantCmds {
					t.Errorf("%s: %d round trips (%s), want %d (%s)", st.name, trips, cmds, st.wantTrips, st.wantCmds)
				}
				for k, min := range st.wantTTLMin {
					if got := f.client.PTTL(ctx, keys[k]).Val(); got <= min {
						t.Errorf("%s: the %s's TTL = %v, want above %v", st.name, k, got, min)
					}
				}
				for k, max := range st.wantTTLMax {
					if got := f.client.PTTL(ctx, keys[k]).Val(); got <= 0 || got > max {
						t.Errorf("%s: the %s's TTL = %v, want within %v", st.name, k, got, max)
					}
				}
				counter.take()
			}
			got, err := log.Read(ctx, session, turn, "", time.Millisecond)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var firsts []int64
			var lines int
			for _, b := range got {
				firsts = append(firsts, b.First)
				lines += strings.Count(string(b.Lines), "\n")
			}
			if want := []int64{0, 0, 1, 3}; !slices.Equal(firsts, want) || lines != 4 || !got[len(got)-1].End {
				t.Errorf("the log reads %d batches from lines %v with %d lines (end %v), want from %v with 4, the last marked End",
					len(got), firsts, lines, len(got) > 0 && got[len(got)-1].End, want)
			}
		})
	}
}

// appendWrite appends w alone to the log of turn of session, as the writer's round trip of one
// turn's batch.
func appendWrite(ctx context.Context, log *TurnLog, session, turn string, w turns.Write) error {
	return errors.Join(log.Append(ctx, []turns.Entry{{Session: session, Turn: turn, Write: w}})...)
}

// TestTurnLogAppendsTurnsTogether writes the batches of several turns of several sessions,
// first, between and last, in one Append, as the instance's writer does: one round trip, every
// log and pointer as if each had been written alone. On a Redis that lost its scripts the last
// batches still land, with the script sent whole.
func TestTurnLogAppendsTurnsTogether(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f, counter, log := countedTurnLog(t, b)
			ctx := context.Background()
			sessions := []string{"0123456789abcdef0123456789abcde1", "0123456789abcdef0123456789abcde2", "0123456789abcdef0123456789abcde3"}
			line := func(s string) []byte { return []byte(`{"type":"delta","text":"` + s + `"}` + "\n") }
			var firsts, between, lasts []turns.Entry
			for i, s := range sessions {
				turn := fmt.Sprintf("t%d", i)
				firsts = append(firsts, turns.Entry{Session: s, Turn: turn, Write: turns.Write{Lines: line(s[31:]), State: turns.Running, TTL: time.Hour}})
				between = append(between, turns.Entry{Session: s, Turn: turn, Write: turns.Write{First: 1, Lines: line("b")}})
				lasts = append(lasts, turns.Entry{Session: s, Turn: turn, Write: turns.Write{First: 2, Lines: line("c"), State: turns.Ended}})
			}
			counter.take()
			for _, es := range [][]turns.Entry{firsts, append(slices.Clone(between), lasts[0]), lasts[1:]} {
				if errs := log.Append(ctx, es); errs != nil {
					t.Fatalf("Append: %v", errs)
				}
				if trips, cmds := counter.take(); trips != 1 {
					t.Errorf("Append of %d entries took %d round trips (%s), want 1", len(es), trips, cmds)
				}
			}
			for i, s := range sessions {
				got, err := log.Read(ctx, s, fmt.Sprintf("t%d", i), "", time.Millisecond)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				var lines string
				for _, b := range got {
					lines += string(b.Lines)
				}
				if want := string(line(s[31:])) + string(line("b")) + string(line("c")); lines != want || len(got) != 3 || !got[2].End {
					t.Errorf("session %d reads %q in %d batches, want %q in 3, the last its end", i, lines, len(got), want)
				}
				if id, running, _, err := log.Current(ctx, s); err != nil || id != fmt.Sprintf("t%d", i) || running {
					t.Errorf("session %d's pointer: %q, running %v, %v; want t%d, ended", i, id, running, err, i)
				}
			}
			if b.name != "miniredis" {
				return // flushing the scripts of a shared Redis would disturb other tests
			}
			if err := f.client.ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
			s := sessions[0]
			if errs := log.Append(ctx, []turns.Entry{
				{Session: s, Turn: "t9", Write: turns.Write{State: turns.Running, TTL: time.Hour}},
				{Session: s, Turn: "t9", Write: turns.Write{Lines: line("z"), State: turns.Ended}},
			}); errs != nil {
				t.Fatalf("Append after SCRIPT FLUSH: %v", errs)
			}
			if id, running, _, err := log.Current(ctx, s); err != nil || id != "t9" || running {
				t.Errorf("after SCRIPT FLUSH the pointer is %q, running %v, %v; want t9, ended", id, running, err)
			}
		})
	}
}

// TestTurnLogLastBatchKeepsTheNextTurn writes a session's next turn's first batch before the
// last batch of the turn before it, as two instances, or one whose writer is behind, can: the
// old turn's log ends, and the pointer still names the new turn, running.
func TestTurnLogLastBatchKeepsTheNextTurn(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			log := NewTurnLog(f.client, f.prefix, "i1")
			const session = "0123456789abcdef0123456789abcdef"
			steps := []struct {
				turn string
				w    turns.Write
			}{
				{"old", turns.Write{State: turns.Running, TTL: time.Hour}},
				{"new", turns.Write{State: turns.Running, TTL: time.Hour}},
				{"old", turns.Write{Lines: []byte(`{"type":"result"}` + "\n"), State: turns.Ended}},
			}
			for _, st := range steps {
				if err := appendWrite(ctx, log, session, st.turn, st.w); err != nil {
					t.Fatalf("Append %s: %v", st.turn, err)
				}
			}
			if id, running, _, err := log.Current(ctx, session); err != nil || id != "new" || !running {
				t.Errorf("the pointer names %q, running %v (%v); want the new turn, running", id, running, err)
			}
			got, err := log.Read(ctx, session, "old", "", time.Millisecond)
			if err != nil || len(got) != 2 || !got[1].End {
				t.Errorf("the old turn's log reads %+v (%v), want its first batch and its end", got, err)
			}
		})
	}
}

// countedTurnLog returns a fixture on b, the counter of the round trips of its client, and a
// TurnLog of instance i1 on it whose end script Redis already has, so that a last write is
// one round trip.
func countedTurnLog(t *testing.T, b backend) (*fixture, *commandCounter, *TurnLog) {
	t.Helper()
	f := newFixture(t, b)
	counter := &commandCounter{}
	f.client.AddHook(counter)
	if err := endScript.Load(context.Background(), f.client).Err(); err != nil {
		t.Fatalf("loading the end script: %v", err)
	}
	return f, counter, NewTurnLog(f.client, f.prefix, "i1")
}
