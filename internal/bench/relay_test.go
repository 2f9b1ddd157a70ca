package bench

import (
	"context"
	"reflect"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestRespCounter(t *testing.T) {
	stream := "*1\r\n$4\r\nPING\r\n" +
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nxy\r\n" + // a value holding CRLF
		"*2\r\n$3\r\nGET\r\n$-1\r\n" + // a null bulk string
		"*4\r\n$7\r\nevalsha\r\n$40\r\n0123456789012345678901234567890123456789\r\n$1\r\n0\r\n$0\r\n\r\n" +
		"PING inline\r\n"
	want := []string{"PING", "SET", "GET", "evalsha", "PING"}
	for size := 1; size <= len(stream); size++ {
		var got []string
		p := respCounter{on: func(name string) { got = append(got, name) }}
		for i := 0; i < len(stream); i += size {
			p.feed([]byte(stream[i:min(i+size, len(stream))]))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fed %d bytes at a time: commands %q, want %q", size, got, want)
		}
	}
}

// TestRelayCounts runs a go-redis client through the relay: its handshake is counted apart,
// a script is one command, and a pipeline counts once per command.
func TestRelayCounts(t *testing.T) {
	m := miniredis.RunT(t)
	rl, err := startRelay(m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer rl.close()
	c := redis.NewClient(&redis.Options{Addr: rl.addr()})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := rl.byName()
	if err := c.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"k"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Get(ctx, "k")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := addDiff(nil, rl.byName(), before)
	for name := range got {
		if notRoundTrips[name] {
			delete(got, name) // a new connection's handshake, whenever go-redis opens one
		}
	}
	want := map[string]int64{"EVAL": 1, "GET": 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands %v, want %v", got, want)
	}
	if n := roundTrips(rl.byName()); n != 4 {
		t.Errorf("roundTrips = %d, want 4 (SET, EVAL, GET, GET; the handshake apart): %v", n, rl.byName())
	}
}
