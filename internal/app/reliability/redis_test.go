package reliability_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore"
)

// TestRedisDownAtStart starts the gateway while its Redis is down: it stays up but unready,
// answers sessions and turns with 503 store_unavailable, and serves normally as soon as Redis
// comes up, without a restart.
func TestRedisDownAtStart(t *testing.T) {
	t.Parallel() // mostly waits for go-redis to give up dialing
	rs := apptest.NewRedisServer(t)
	g := apptest.Start(t, func(c *config.Config) { c.RedisURL = rs.URL })

	if got := get(g.URL + "/healthz"); got != http.StatusOK {
		t.Errorf("/healthz = %d, want 200: the process is up", got)
	}
	if got := get(g.URL + "/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d, want 503 while Redis is down", got)
	}
	unavailable := []struct {
		name string
		do   func() apptest.TurnResponse
	}{
		{"create a session", func() apptest.TurnResponse { return g.Post("/v1/sessions", map[string]string{"contract": "toulmin"}) }},
		{"take a turn", func() apptest.TurnResponse { return g.Turn(coach.NewID(), apptest.Msg("hi")) }},
		{"the seed's route", func() apptest.TurnResponse {
			return g.Post("/api/coach", map[string]string{"sessionId": coach.NewID(), "message": "hi"})
		}},
	}
	for _, u := range unavailable {
		t.Run(u.name, func(t *testing.T) {
			tr := u.do()
			if tr.Status != http.StatusServiceUnavailable || errorCode(tr.Body) != coach.CodeStoreUnavailable {
				t.Errorf("status %d body %s, want 503 store_unavailable", tr.Status, tr.Body)
			}
		})
	}
	if n := len(g.LLM.Requests()); n != 0 {
		t.Errorf("model calls = %d while Redis is down, want 0", n)
	}

	rs.Start()
	// Redis starting and the gateway's next probe of it take well under a second on an idle
	// machine; a gateway that never reconnects stays unready however long this waits.
	waitFor(t, "/readyz answers 200", 15*time.Second, func() bool { return get(g.URL+"/readyz") == http.StatusOK })
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(ok("Welcome back."))
	tr := g.Turn(s.ID, apptest.Msg("hi"))
	tr.CheckEnding(t)
	if tr.Last().Type != "result" || g.Get(s.ID).Version != 2 {
		t.Errorf("turn after Redis came up: %q, stored version %d; want a result stored as version 2", tr.Kinds(), g.Get(s.ID).Version)
	}
}

// TestRedisDiesMidTurn kills Redis while a turn streams: the turn ends with one error line
// (store_unavailable) and, once Redis is back (with its data: it writes every command to an
// append-only file), the session is exactly as it was before the turn.
func TestRedisDiesMidTurn(t *testing.T) {
	rs := apptest.StartRedisServer(t, "--dir", t.TempDir(), "--appendonly", "yes", "--appendfsync", "always")
	// The first answer is cut after its first text; the gateway resets and asks again, and
	// that answer waits until Redis is dead.
	asked, proceed := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	g := apptest.StartWith(t, apptest.Options{
		Config: func(c *config.Config) { c.RedisURL, c.FirstByteTimeout = rs.URL, time.Minute },
		LLM: fakellm.Options{Responder: fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply {
			if calls.Add(1) == 1 {
				return textFirst("Hello there.", fakellm.Fault{Cut: true, CutAfter: 1})
			}
			close(asked)
			select {
			case <-proceed:
			case <-time.After(10 * time.Second):
			}
			return ok("Hello again.")
		})},
	})
	rdb := redisClient(t, rs.URL)
	s := g.Create("toulmin", nil)
	before := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID)

	st := g.OpenTurn(s.ID, apptest.Msg("hi"))
	for l := (apptest.Line{}); l.Type != "reset"; {
		var err error
		if l, err = st.Next(); err != nil {
			t.Fatalf("stream %+v ended before its reset line: %v", st.Lines, err)
		}
	}
	<-asked
	rs.Kill()
	close(proceed)
	tr, err := st.Rest()
	if err != nil {
		t.Fatal(err)
	}
	tr.CheckEnding(t)
	if got, want := shape(tr), "delta reset delta error:"+coach.CodeStoreUnavailable; got != want {
		t.Errorf("stream shape = %q, want %q", got, want)
	}

	rs.Start()
	// Redis starting and the gateway's next probe of it take well under a second on an idle
	// machine; a gateway that never reconnects stays unready however long this waits.
	waitFor(t, "/readyz answers 200", 15*time.Second, func() bool { return get(g.URL+"/readyz") == http.StatusOK })
	if after := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID); after != before {
		t.Errorf("the session changed although its turn failed:\nbefore %s\nafter  %s", before, after)
	}
	if got := g.Get(s.ID).Version; got != 1 {
		t.Errorf("version = %d, want 1", got)
	}
	// The lock could not be released while Redis was down; it must still expire on its own.
	ttl, err := rdb.PTTL(context.Background(), lockKey(g.Config.RedisPrefix, s.ID)).Result()
	if err != nil || ttl == -1 {
		t.Errorf("lock PTTL = %v, %v: a lock without expiry would block the session forever", ttl, err)
	}
}

// TestLockExpiry plays a gateway that died holding a session's lock: turns get 409 until the
// lock expires and then go through; and its late writes never overwrite a newer version,
// whether its lock has expired or it holds a lock but read an older version.
func TestLockExpiry(t *testing.T) {
	g := apptest.Start(t, nil)
	rdb := redisClient(t, g.Config.RedisURL)
	store := redisstore.New(rdb, redisstore.Options{Prefix: g.Config.RedisPrefix})
	ctx := context.Background()
	s := g.Create("toulmin", nil)

	const ttl = 500 * time.Millisecond
	dead, deadToken, err := store.Claim(ctx, "", s.ID, ttl)
	if err != nil {
		t.Fatal(err)
	}
	claimed := time.Now()
	busy := g.Turn(s.ID, apptest.Msg("hi"))
	if busy.Status != http.StatusConflict || errorCode(busy.Body) != coach.CodeSessionBusy {
		t.Fatalf("turn while a dead gateway holds the lock: %d %s, want 409 session_busy", busy.Status, busy.Body)
	}
	g.LLM.Enqueue(ok("Now it works."))
	var tr apptest.TurnResponse
	waitFor(t, "the lock expires and a turn goes through", 5*time.Second, func() bool {
		tr = g.Turn(s.ID, apptest.Msg("hi"))
		if tr.Status == http.StatusConflict {
			return false
		}
		if tr.Status != http.StatusOK {
			t.Fatalf("turn: %d %s, want 409 until the lock expires, then 200", tr.Status, tr.Body)
		}
		return true
	})
	if took := time.Since(claimed); took < ttl {
		t.Errorf("a turn went through %v after the claim, before the lock's %v TTL", took, ttl)
	}
	tr.CheckEnding(t)
	if tr.Last().Type != "result" || tr.Last().Session.Version != 2 {
		t.Fatalf("turn after the lock expired: %q, want a result stored as version 2", tr.Kinds())
	}

	writes := []struct {
		name  string
		write func() error
	}{
		{"the dead gateway commits with its expired lock", func() error {
			next := *dead
			next.Version, next.State = dead.Version+1, json.RawMessage(`{"late":true}`)
			return store.Commit(ctx, &next, deadToken, coach.CommitExtra{})
		}},
		{"a writer holding the lock commits an older version", func() error {
			cur, token, err := store.Claim(ctx, "", s.ID, time.Minute)
			if err != nil {
				return err
			}
			defer store.Release(ctx, s.ID, token)
			next := *cur
			next.Version, next.State = dead.Version+1, json.RawMessage(`{"late":true}`)
			return store.Commit(ctx, &next, token, coach.CommitExtra{})
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			before := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID)
			if err := w.write(); !errors.Is(err, coach.ErrConflict) {
				t.Errorf("late write: %v, want coach.ErrConflict", err)
			}
			if after := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID); after != before {
				t.Errorf("a late write changed the session:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	if got := g.Get(s.ID).Version; got != 2 {
		t.Errorf("version = %d, want 2", got)
	}
}
