package clustertest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// turnOutcome is what one turn request came back with.
type turnOutcome struct {
	session string
	status  int
	// version is the stored version the result line reports (accepted turns).
	version int64
	// problem describes an answer that is neither a stored result nor a 409 session_busy.
	problem string
}

// takeTurn posts a toulmin turn and classifies the answer. It reports problems instead of failing
// t, because it runs on goroutines of its own.
func takeTurn(base, id, message string) turnOutcome {
	out := turnOutcome{session: id}
	body, _ := json.Marshal(apptest.Msg(message))
	resp, err := http.Post(base+"/v1/sessions/"+id+"/turns", "application/json", bytes.NewReader(body))
	if err != nil {
		out.problem = err.Error()
		return out
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		out.problem = "reading the answer: " + err.Error()
		return out
	}
	out.status = resp.StatusCode
	switch resp.StatusCode {
	case http.StatusConflict:
		var e struct{ Error string }
		if json.Unmarshal(raw, &e) != nil || e.Error != "session_busy" {
			out.problem = "409 with body " + string(raw) + ", want error session_busy"
		}
	case http.StatusOK:
		var last struct {
			Type    string
			Session struct{ Version int64 }
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			last.Type = ""
			if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
				out.problem = fmt.Sprintf("line %q is not JSON", sc.Text())
				return out
			}
		}
		if last.Type != "result" {
			out.problem = "stream did not end with a result: " + string(raw)
		}
		out.version = last.Session.Version
	default:
		out.problem = fmt.Sprintf("status %d, body %s", resp.StatusCode, raw)
	}
	return out
}

// TestClusterGatewayConcurrentTurns runs the real gateway on the cluster and has many clients
// take turns on a few sessions at once, each client until it got a given number accepted. Every
// turn is either accepted and stored exactly once (its result reports a version no other turn
// got, and the session counts it) or rejected with 409 session_busy, changing nothing.
func TestClusterGatewayConcurrentTurns(t *testing.T) {
	c := startCluster(t)
	g := apptest.Start(t, func(cfg *config.Config) { cfg.RedisURL = c.url })

	const sessions, clients, turns = 3, 6, 4
	const accepted = sessions * clients * turns
	// A pause inside every answer keeps turns in flight long enough for others to collide.
	reply := fakellm.Reply{
		Chunks: []string{`{"assistantText":"Noted, `, `go on.","step":"claim"}`},
		Fault:  fakellm.Fault{StallAfter: 1, Stall: 20 * time.Millisecond},
	}
	for range accepted {
		g.LLM.Enqueue(reply)
	}
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = g.Create("toulmin", nil).ID
	}

	var mu sync.Mutex
	var outcomes []turnOutcome
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range ids {
		for cl := range clients {
			wg.Go(func() {
				<-start
				deadline := time.Now().Add(30 * time.Second)
				for n := 0; n < turns; {
					o := takeTurn(g.URL, id, fmt.Sprintf("client %d turn %d", cl, n))
					if time.Now().After(deadline) {
						o.problem = fmt.Sprintf("client %d: turn %d not accepted within 30s", cl, n)
					}
					mu.Lock()
					outcomes = append(outcomes, o)
					mu.Unlock()
					switch {
					case o.problem != "":
						return
					case o.status == http.StatusOK:
						n++
					default:
						time.Sleep(time.Millisecond) // back off before trying again
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()

	versions := map[string][]int64{}
	rejected := 0
	for _, o := range outcomes {
		switch {
		case o.problem != "":
			t.Errorf("session %s: %s", o.session, o.problem)
		case o.status == http.StatusOK:
			versions[o.session] = append(versions[o.session], o.version)
		default:
			rejected++
		}
	}
	for _, id := range ids {
		got := versions[id]
		slices.Sort(got)
		var want []int64
		for v := range int64(clients * turns) {
			want = append(want, v+2)
		}
		if !slices.Equal(got, want) {
			t.Errorf("session %s: accepted turns stored versions %v, want each of %v once", id, got, want)
		}
		s := g.Get(id)
		var state struct{ Turns map[string]int }
		if err := json.Unmarshal(s.State, &state); err != nil {
			t.Fatalf("session %s state %s: %v", id, s.State, err)
		}
		if s.Version != int64(len(got))+1 || state.Turns["claim"] != len(got) {
			t.Errorf("session %s: version %d with %d turns counted, want version %d with %d turns",
				id, s.Version, state.Turns["claim"], len(got)+1, len(got))
		}
	}
	if rejected == 0 {
		t.Errorf("no turn was rejected: %d clients per session never collided", clients)
	}
	if n := len(g.LLM.Requests()); n != accepted {
		t.Errorf("model calls = %d, want one per accepted turn (%d): a rejected turn must not reach the model", n, accepted)
	}
	t.Logf("%d turns accepted, %d rejected with 409 session_busy", accepted, rejected)
}
