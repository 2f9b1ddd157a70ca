package reliability_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore"
)

// TestShortLock runs the gateway with a lock of 1 s (renewed every third of it, so a renewal
// may come 600 ms late on a loaded machine). A turn that streams for several times that keeps
// its lock (renewed all along: a second turn meanwhile is 409) and commits; a lock
// left by a gateway that died mid-turn (claimed here and never renewed) blocks the session for
// no longer than its TTL.
func TestShortLock(t *testing.T) {
	const ttl = time.Second
	g := apptest.StartWith(t, apptest.Options{
		Config: func(c *config.Config) { c.LockTTL = ttl },
		LLM:    fakellm.Options{DelayMin: 150 * time.Millisecond, DelayMax: 150 * time.Millisecond, ChunkMin: 4, ChunkMax: 4},
	})
	rdb := redisClient(t, g.Config.RedisURL)

	t.Run("renewed during a long turn", func(t *testing.T) {
		s := g.Create("toulmin", nil)
		// About 30 chunks 150 ms apart: a turn of some four lock TTLs.
		g.LLM.Enqueue(fakellm.Reply{Content: answer("Tell me more about the cities you mean, and why cars matter there.")})
		st := g.OpenTurn(s.ID, apptest.Msg("Cities should ban cars."))
		time.Sleep(3 * ttl)
		if n, err := rdb.Exists(context.Background(), lockKey(g.Config.RedisPrefix, s.ID)).Result(); err != nil || n != 1 {
			t.Errorf("the lock is gone %v into the turn (%v): it was not renewed", 3*ttl, err)
		}
		if tr := g.Turn(s.ID, apptest.Msg("again")); tr.Status != http.StatusConflict {
			t.Errorf("a second turn meanwhile: status %d, want 409", tr.Status)
		}
		tr, err := st.Rest()
		if err != nil {
			t.Fatal(err)
		}
		if last := tr.Last(); last.Type != "result" || last.Session.Version != s.Version+1 {
			t.Errorf("last line %s, want the result of version %d", last.Raw, s.Version+1)
		}
	})
	t.Run("a dead holder's lock expires", func(t *testing.T) {
		s := g.Create("toulmin", nil)
		store := redisstore.New(rdb, redisstore.Options{Prefix: g.Config.RedisPrefix})
		if _, _, err := store.Claim(context.Background(), "", s.ID, ttl); err != nil {
			t.Fatal(err)
		}
		if tr := g.Turn(s.ID, apptest.Msg("hi")); tr.Status != http.StatusConflict {
			t.Errorf("turn on a session a dead gateway holds: status %d, want 409", tr.Status)
		}
		g.LLM.Enqueue(fakellm.Reply{Content: answer("Hi.")})
		took := waitFor(t, "the session takes a turn again", 5*time.Second, func() bool {
			return rdb.Exists(context.Background(), lockKey(g.Config.RedisPrefix, s.ID)).Val() == 0
		})
		if tr := g.Turn(s.ID, apptest.Msg("hi")); tr.Status != http.StatusOK || tr.Last().Type != "result" {
			t.Errorf("turn after the lock expired: status %d, last %s", tr.Status, tr.Last().Raw)
		}
		t.Logf("the session was free again %v after the 409", took.Round(time.Millisecond))
	})
}
