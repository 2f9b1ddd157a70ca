package redisstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/redis/go-redis/v9"
)

// parsed is what a test compares of a target.
type parsed struct {
	kind       string // single, failover or cluster
	addrs      []string
	master     string
	db         int
	user, pass string
	tls        bool
}

func summarize(t target) parsed {
	switch {
	case t.single != nil:
		o := t.single
		return parsed{kind: "single", addrs: []string{o.Addr}, db: o.DB, user: o.Username, pass: o.Password, tls: o.TLSConfig != nil}
	case t.failover != nil:
		o := t.failover
		return parsed{kind: "failover", addrs: o.SentinelAddrs, master: o.MasterName, db: o.DB, user: o.Username, pass: o.Password, tls: o.TLSConfig != nil}
	case t.cluster != nil:
		o := t.cluster
		return parsed{kind: "cluster", addrs: o.Addrs, user: o.Username, pass: o.Password, tls: o.TLSConfig != nil}
	}
	return parsed{}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url  string
		want parsed
	}{
		{"redis://localhost:6379/2", parsed{kind: "single", addrs: []string{"localhost:6379"}, db: 2}},
		{"redis://:s3cret@10.0.0.1:6380", parsed{kind: "single", addrs: []string{"10.0.0.1:6380"}, pass: "s3cret"}},
		{"rediss://app:pw@cache.example.com:6380/1", parsed{kind: "single", addrs: []string{"cache.example.com:6380"}, db: 1, user: "app", pass: "pw", tls: true}},
		{"redis+sentinel://:pw@s1:26379,s2:26380/mymaster/3", parsed{kind: "failover", addrs: []string{"s1:26379", "s2:26380"}, master: "mymaster", db: 3, pass: "pw"}},
		{"redis+sentinel://s1,s2,[::1]/mymaster", parsed{kind: "failover", addrs: []string{"s1:26379", "s2:26379", "[::1]:26379"}, master: "mymaster"}},
		{"redis+sentinel://app:p%40ss@s1:5000/m/", parsed{kind: "failover", addrs: []string{"s1:5000"}, master: "m", user: "app", pass: "p@ss"}},
		{"redis+cluster://:pw@n1:7000,n2:7001,n3", parsed{kind: "cluster", addrs: []string{"n1:7000", "n2:7001", "n3:6379"}, pass: "pw"}},
		{"redis+cluster://app:p%40ss@n1:7000", parsed{kind: "cluster", addrs: []string{"n1:7000"}, user: "app", pass: "p@ss"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			tg, err := parseURL(tt.url)
			if err != nil {
				t.Fatalf("parseURL: %v", err)
			}
			got := summarize(tg)
			if got.kind != tt.want.kind || !slices.Equal(got.addrs, tt.want.addrs) || got.master != tt.want.master ||
				got.db != tt.want.db || got.user != tt.want.user || got.pass != tt.want.pass || got.tls != tt.want.tls {
				t.Errorf("parsed = %+v, want %+v", got, tt.want)
			}
			if tg.failover != nil && (tg.failover.SentinelUsername != "" || tg.failover.SentinelPassword != "") {
				t.Errorf("sentinel credentials = %q, %q, want none", tg.failover.SentinelUsername, tg.failover.SentinelPassword)
			}
			// Construction makes no connection.
			c := tg.client()
			defer c.Close()
			_, isCluster := c.(*redis.ClusterClient)
			if isCluster != (tt.want.kind == "cluster") {
				t.Errorf("client is %T for a %s URL", c, tt.want.kind)
			}
		})
	}
}

func TestParseURLOptions(t *testing.T) {
	tg, err := parseURL("redis+sentinel://s1/m?dial_timeout=2s&db=9")
	if err != nil {
		t.Fatalf("parseURL: %v", err)
	}
	if tg.failover.DialTimeout != 2*time.Second {
		t.Errorf("sentinel dial timeout = %v, want 2s", tg.failover.DialTimeout)
	}
	tg, err = parseURL("redis+cluster://n1,n2?read_timeout=5s&addr=n3:7000")
	if err != nil {
		t.Fatalf("parseURL: %v", err)
	}
	if want := []string{"n1:6379", "n2:6379", "n3:7000"}; tg.cluster.ReadTimeout != 5*time.Second || !slices.Equal(tg.cluster.Addrs, want) {
		t.Errorf("cluster read timeout, addrs = %v, %v, want 5s, %v", tg.cluster.ReadTimeout, tg.cluster.Addrs, want)
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, url := range []string{
		"localhost:6379",
		"http://localhost",
		"rediss+cluster://n1",
		"redis+sentinel://:hunter2@s1:26379",
		"redis+sentinel://:hunter2@s1/m/notadb",
		"redis+sentinel://s1/m/1/extra",
		"redis+cluster://:hunter2@n1:7000/0",
		"redis+cluster://n1,,n2",
		"redis+cluster://n1:",
		"redis+cluster://:hunter2@n1?bogus=1",
		"redis://:hunter2@host:notaport",
		"redis+sentinel://:hunter2@s1:x/m",
		"redis+cluster://:hunter2%zz@n1",
	} {
		t.Run(url, func(t *testing.T) {
			_, err := parseURL(url)
			if err == nil {
				t.Fatal("parseURL succeeded, want an error")
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q reveals the password", err)
			}
		})
	}
}

// TestUnavailable points a store at a closed port: every operation must say "unavailable" in both
// ways callers test for it.
func TestUnavailable(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer client.Close()
	store := New(client, Options{})
	ctx := context.Background()
	id := coach.NewID()
	ops := []struct {
		name string
		op   func() error
	}{
		{"Prepare", func() error { return store.Prepare(ctx) }},
		{"Create", func() error { return store.Create(ctx, newSession("acme")) }},
		{"Get", func() error { _, err := store.Get(ctx, "acme", id); return err }},
		{"Delete", func() error { return store.Delete(ctx, "acme", id) }},
		{"Claim", func() error { _, _, err := store.Claim(ctx, "acme", id, time.Second); return err }},
		{"Commit", func() error { return store.Commit(ctx, newSession("acme"), "token", coach.CommitExtra{}) }},
		{"Release", func() error { return store.Release(ctx, id, "token") }},
		{"Ping", func() error { return store.Ping(ctx) }},
		{"Connect", func() error {
			c, err := Connect(ctx, "redis://127.0.0.1:1?max_retries=-1")
			if c != nil {
				_ = c.Close()
			}
			return err
		}},
	}
	for _, tt := range ops {
		t.Run(tt.name, func(t *testing.T) {
			wantUnavailable(t, tt.op())
		})
	}
}

func wantUnavailable(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, coach.ErrUnavailable) {
		t.Errorf("errors.Is(%v, coach.ErrUnavailable) = false, want true", err)
	}
	var ce *coach.Error
	if !errors.As(err, &ce) || ce.Kind != coach.KindUnavailable || ce.Code != coach.CodeStoreUnavailable {
		t.Errorf("error %v: want a *coach.Error of KindUnavailable and code %s", err, coach.CodeStoreUnavailable)
	}
}

// TestReplyErrors checks how error replies map: the ones that mean "not now" are unavailable,
// others are internal.
func TestReplyErrors(t *testing.T) {
	m, client, err := startEmbedded()
	if err != nil {
		t.Fatalf("startEmbedded: %v", err)
	}
	defer m.Close()
	defer client.Close()
	ctx := context.Background()
	// Open the connection before the server starts failing every command, handshake included.
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	store := New(redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1}), Options{})
	if err := store.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	tests := []struct {
		reply       string
		unavailable bool
	}{
		{"LOADING Redis is loading the dataset in memory", true},
		{"READONLY You can't write against a read only replica.", true},
		{"MASTERDOWN Link with MASTER is down", true},
		{"CLUSTERDOWN The cluster is down", true},
		{"TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"BUSY Redis is busy running a script.", true},
		{"OOM command not allowed when used memory > 'maxmemory'.", true},
		{"NOAUTH Authentication required.", true},
		{"ERR user_script:1: Script attempted to access nonexistent global variable", false},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false},
	}
	for _, tt := range tests {
		t.Run(tt.reply, func(t *testing.T) {
			m.SetError(tt.reply)
			defer m.SetError("")
			_, _, err := store.Claim(ctx, "acme", coach.NewID(), time.Second)
			if tt.unavailable {
				wantUnavailable(t, err)
				return
			}
			var ce *coach.Error
			if errors.Is(err, coach.ErrUnavailable) || !errors.As(err, &ce) || ce.Kind != coach.KindInternal {
				t.Errorf("error %v: want a KindInternal *coach.Error", err)
			}
		})
	}
}

func TestEmbedded(t *testing.T) {
	client, stop, err := Embedded()
	if err != nil {
		t.Fatalf("Embedded: %v", err)
	}
	ctx := context.Background()
	if err := New(client, Options{}).Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	stop()
	stop()
	if err := client.Ping(ctx).Err(); err == nil {
		t.Error("Ping after stop succeeded")
	}
}

// TestEmbeddedClockTTL checks that the embedded server expires keys as the wall clock moves,
// without FastForward, as a long-running gateway needs: at most embeddedTick late.
func TestEmbeddedClockTTL(t *testing.T) {
	m, client, err := startEmbedded()
	if err != nil {
		t.Fatalf("startEmbedded: %v", err)
	}
	defer m.Close()
	defer client.Close()
	ctx := context.Background()
	if err := client.Set(ctx, "short", "v", 100*time.Millisecond).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := client.Set(ctx, "long", "v", time.Hour).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for client.Exists(ctx, "short").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 100ms TTL still exists after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ttl := client.PTTL(ctx, "long").Val(); ttl <= 59*time.Minute || ttl >= time.Hour {
		t.Errorf("PTTL of the 1h key = %v, want it running down from 1h", ttl)
	}
}
