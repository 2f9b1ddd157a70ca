package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// TestTwoInstancesOneRedis runs two gateways on one Redis and key prefix and has 40 clients
// hammer 4 sessions through both: every turn is either stored exactly once (a result line,
// its message once in the history, versions without gaps or repeats) or refused with 409
// session_busy, and nothing else happens.
func TestTwoInstancesOneRedis(t *testing.T) {
	const clients, sessions, turnsPerClient = 40, 4, 10
	url := redistest.URL(t)
	if url == "" {
		t.Skip("two gateways share state only through a real Redis")
	}
	prefix := redistest.Prefix(t, url)
	start := func() *apptest.Gateway {
		return apptest.StartWith(t, apptest.Options{
			Prefix: prefix,
			LLM: fakellm.Options{DelayMin: time.Millisecond, DelayMax: 4 * time.Millisecond,
				Responder: fakellm.ResponderFunc(func(*fakellm.Request) fakellm.Reply { return ok("Noted, go on.") })},
			Config: func(c *config.Config) { c.HistoryLimit = 10 * clients * turnsPerClient },
		})
	}
	gws := []*apptest.Gateway{start(), start()}
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = gws[i%2].Create("toulmin", nil).ID
	}

	type outcome struct {
		session, message string
		status           int
		kinds            string
		version          int64
		err              error
	}
	results := make([][]outcome, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, id := gws[c%2], ids[c%sessions]
			for n := range turnsPerClient {
				o := outcome{session: id, message: fmt.Sprintf("Client %d, turn %d: cities should ban cars.", c, n)}
				st, err := apptest.OpenStream(turnURL(g.URL, id), apptest.Msg(o.message))
				if err == nil {
					var tr apptest.TurnResponse
					tr, err = st.Rest()
					o.status, o.kinds, o.version = tr.Status, tr.Kinds(), tr.Last().Session.Version
					if tr.Status == http.StatusOK {
						o.kinds = shape(tr)
					} else {
						o.kinds = errorCode(tr.Body)
					}
				}
				o.err = err
				results[c] = append(results[c], o)
			}
		}()
	}
	wg.Wait()

	accepted := map[string]map[string]bool{} // session → messages stored
	versions := map[string]map[int64]int{}   // session → result versions seen
	busy := 0
	for _, rs := range results {
		for _, o := range rs {
			switch {
			case o.err != nil:
				t.Errorf("%s: %v", o.message, o.err)
			case o.status == http.StatusOK && o.kinds == "delta result":
				if accepted[o.session] == nil {
					accepted[o.session], versions[o.session] = map[string]bool{}, map[int64]int{}
				}
				accepted[o.session][o.message] = true
				versions[o.session][o.version]++
			case o.status == http.StatusConflict && o.kinds == coach.CodeSessionBusy:
				busy++
			default:
				t.Errorf("%s: status %d, %q; want a stored result or 409 session_busy", o.message, o.status, o.kinds)
			}
		}
	}

	rdb := redisClient(t, url)
	store := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	total := 0
	for _, id := range ids {
		n := len(accepted[id])
		total += n
		sess, err := store.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if sess.Version != int64(1+n) {
			t.Errorf("session %s: version %d, want 1 + %d accepted turns", id, sess.Version, n)
		}
		for v := int64(2); v <= int64(1+n); v++ {
			if versions[id][v] != 1 {
				t.Errorf("session %s: %d results reported version %d, want exactly 1", id, versions[id][v], v)
			}
		}
		stored := map[string]int{}
		for _, m := range sess.History {
			if m.Role == coach.RoleUser {
				stored[m.Content]++
			}
		}
		for m := range accepted[id] {
			if stored[m] != 1 {
				t.Errorf("session %s: accepted turn %q is stored %d times, want once", id, m, stored[m])
			}
		}
		if len(stored) != n || len(sess.History) != 2*n {
			t.Errorf("session %s: history has %d user messages (%d messages), want %d accepted turns (%d messages)", id, len(stored), len(sess.History), n, 2*n)
		}
		var st struct{ Turns map[string]int }
		if err := json.Unmarshal(sess.State, &st); err != nil || st.Turns["claim"] != n {
			t.Errorf("session %s: state turn counter %v (%v), want %d", id, st.Turns, err, n)
		}
	}
	t.Logf("%d turns on %d sessions through 2 gateways: %d stored, %d refused with 409", clients*turnsPerClient, sessions, total, busy)
	if total+busy != clients*turnsPerClient || total == 0 || busy == 0 {
		t.Errorf("stored %d + refused %d of %d turns; want both outcomes and nothing else", total, busy, clients*turnsPerClient)
	}
}
