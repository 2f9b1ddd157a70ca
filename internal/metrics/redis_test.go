package metrics

import (
	"context"
	"net"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestRedisHook(t *testing.T) {
	mr := miniredis.RunT(t)
	m := New()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), PoolSize: 1})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(m.RedisHook())
	ctx := context.Background()
	// Open the connections first (go-redis keeps one pool for commands and one for pipelines),
	// so that their handshakes do not blur the counts below.
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil }); err != nil {
		t.Fatal(err)
	}
	// miniredis refuses the handshake's CLIENT SETINFO, as Redis before 7.2 does.
	t.Run("a refused handshake probe is not a failure", func(t *testing.T) {
		if got := value(t, m, "coachgw_redis_command_duration_seconds", "command", "handshake"); got < 1 {
			t.Errorf("handshakes timed = %v, want at least 1", got)
		}
		for _, c := range []string{"handshake", "hello", "client"} {
			if got := value(t, m, "coachgw_redis_errors_total", "command", c); got != -1 {
				t.Errorf("%s failures = %v, want none", c, got)
			}
		}
	})
	// A connection to a database other than 0 selects it in its set-up pipeline: that is a
	// handshake too, not a round trip of the caller's.
	t.Run("a database's SELECT is part of the handshake", func(t *testing.T) {
		db1 := redis.NewClient(&redis.Options{Addr: mr.Addr(), DB: 1, PoolSize: 1})
		t.Cleanup(func() { db1.Close() })
		db1.AddHook(m.RedisHook())
		pipelines := value(t, m, "coachgw_redis_command_duration_seconds", "command", "pipeline")
		handshakes := value(t, m, "coachgw_redis_command_duration_seconds", "command", "handshake")
		if err := db1.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if got := value(t, m, "coachgw_redis_command_duration_seconds", "command", "pipeline"); got != pipelines {
			t.Errorf("pipelines timed by a new connection to db 1: got %v, want %v", got, pipelines)
		}
		if got := value(t, m, "coachgw_redis_command_duration_seconds", "command", "handshake"); got <= handshakes {
			t.Errorf("handshakes timed by a new connection to db 1: got %v, want more than %v", got, handshakes)
		}
	})
	mr.Set("word", "not a number")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name    string
		run     func() error
		command string
		errors  float64 // how many failures the call adds
		wantErr bool
	}{
		{"a command", func() error { return rdb.Set(ctx, "k", "v", 0).Err() }, "set", 0, false},
		{"a missing key is an answer", func() error { return rdb.Get(ctx, "missing").Err() }, "get", 0, true},
		{"an error reply fails", func() error { return rdb.Incr(ctx, "word").Err() }, "incr", 1, true},
		{"a cancelled caller is not a Redis failure", func() error { return rdb.Get(cancelled, "k").Err() }, "get", 0, true},
		{"a pipeline is one round trip", func() error {
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "a", "1", 0)
				p.Get(ctx, "missing")
				return nil
			})
			return err
		}, "pipeline", 0, true},
		{"a pipeline with a failed command fails", func() error {
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, "missing")
				p.Incr(ctx, "word")
				return nil
			})
			return err
		}, "pipeline", 1, true},
		{"the audit's records, written by a script, are the audit's round trip", func() error {
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Eval(ctx, "return redis.call('XADD', KEYS[1], '*', 'r', ARGV[1])", []string{"coachgw:{audit:acme}"}, "{}")
				p.XTrimMinIDApprox(ctx, "coachgw:{audit:acme}", "0", 0)
				return nil
			})
			return err
		}, "audit", 0, false},
		{"a transaction is one round trip", func() error {
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "n")
				return nil
			})
			return err
		}, "pipeline", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timed := value(t, m, "coachgw_redis_command_duration_seconds", "command", tt.command)
			failed := max(0, value(t, m, "coachgw_redis_errors_total", "command", tt.command))
			err := tt.run()
			if (err != nil) != tt.wantErr {
				t.Fatalf("call error = %v, want error: %t", err, tt.wantErr)
			}
			if got := value(t, m, "coachgw_redis_command_duration_seconds", "command", tt.command); got != max(0, timed)+1 {
				t.Errorf("%s round trips = %v, want %v", tt.command, got, max(0, timed)+1)
			}
			if got := max(0, value(t, m, "coachgw_redis_errors_total", "command", tt.command)); got != failed+tt.errors {
				t.Errorf("%s failures = %v, want %v", tt.command, got, failed+tt.errors)
			}
		})
	}
}

func TestRedisHookDialFailure(t *testing.T) {
	// An address that refuses connections: a port that was just free.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	m := New()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(m.RedisHook())
	if err := rdb.Get(context.Background(), "k").Err(); err == nil {
		t.Fatal("Get on a closed port succeeded")
	}
	if got := value(t, m, "coachgw_redis_errors_total", "command", "dial"); got < 1 {
		t.Errorf("dial failures = %v, want at least 1", got)
	}
	if got := value(t, m, "coachgw_redis_command_duration_seconds", "command", "dial"); got < 1 {
		t.Errorf("dials timed = %v, want at least 1", got)
	}
}
