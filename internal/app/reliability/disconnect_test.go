package reliability_test

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
)

// contracts are the three contracts with a session body and a first message each accepts.
var contracts = []struct {
	name  string
	extra map[string]string
	first string
}{
	{"toulmin", nil, "Cities should ban private cars from their centres."},
	{"cards", nil, "Begin training."},
	{"module", map[string]string{"module": "anxiety-basics"}, "I get anxious before I speak in meetings."},
}

// stalling answers like the replay model, but streams only the first three quarters of the
// answer and then stalls for a minute, so a turn is caught mid-answer with text sent.
func stalling() fakellm.Responder {
	r := replay.Responder()
	return fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
		rep := r.Respond(req)
		text, stallAfter := rep.Content, 1
		if rep.ToolCall != nil {
			text, stallAfter = rep.ToolCall.Arguments, 2 // event 0 opens the call
		}
		cut := len(text) * 3 / 4
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		rep.Chunks = []string{text[:cut], text[cut:]}
		rep.Fault = fakellm.Fault{StallAfter: stallAfter, Stall: time.Minute}
		return rep
	})
}

// TestClientDisconnect closes the client's connection while a turn streams and proves, for
// every contract, with COACH_TURN_ON_DISCONNECT=cancel (v1's behaviour; by default the turn
// runs on, see TestResumeOnAnotherInstance), that the upstream request is cancelled long
// before the stalled answer would end (fakellm sees no open request), that the session's lock is
// released and that nothing is written.
func TestClientDisconnect(t *testing.T) {
	// within is how soon after the client leaves the upstream request must be cancelled. It is
	// immediate on an idle machine; the bound leaves room for a loaded one (-race, a browser
	// beside this test) and is still far from the answer's natural end: the upstream stalls for
	// a minute (or sends its first byte after a minute) and the gateway's own deadlines are a
	// minute or more away, so a gateway that never cancels the request fails.
	const within = 10 * time.Second
	// The lock is released when the turn ends; left alone, it would expire only after the
	// default COACH_LOCK_TTL (15 s), which this bound still tells apart.
	const released = 10 * time.Second
	tests := []struct {
		contract int
		when     string
		// fault, when set, replaces the mid-answer stall.
		fault *fakellm.Fault
	}{
		{contract: 0, when: "mid-answer"},
		{contract: 1, when: "mid-answer"},
		{contract: 2, when: "mid-answer"},
		{contract: 0, when: "before the first byte", fault: &fakellm.Fault{FirstByteDelay: time.Minute}},
	}
	for _, tt := range tests {
		c := contracts[tt.contract]
		t.Run(c.name+"/"+tt.when, func(t *testing.T) {
			t.Parallel()
			responder := stalling()
			if tt.fault != nil {
				r, f := replay.Responder(), *tt.fault
				responder = fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
					rep := r.Respond(req)
					rep.Fault = f
					return rep
				})
			}
			g := apptest.StartWith(t, apptest.Options{
				LLM: fakellm.Options{Responder: responder},
				// Deadlines far away: only the client's leaving may end the upstream call.
				Config: func(c *config.Config) {
					c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = time.Minute, time.Minute, 2*time.Minute
					c.TurnOnDisconnect = "cancel"
				},
			})
			rdb := redisClient(t, g.Config.RedisURL)
			s := g.Create(c.name, c.extra)
			before := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID)

			st := g.OpenTurn(s.ID, apptest.Msg(c.first))
			if tt.fault == nil {
				for {
					l, err := st.Next()
					if err != nil {
						t.Fatalf("stream ended before any delta: %v (lines %+v)", err, st.Lines)
					}
					if l.Type == "delta" {
						break
					}
				}
			}
			// Open counts a request from its first byte, Requests only once its body is read: a
			// client that left in between would cancel a request the endpoint never recorded.
			waitFor(t, "the upstream request is open", 5*time.Second, func() bool { return g.LLM.Open() == 1 && len(g.LLM.Requests()) == 1 })

			st.Close()
			took := waitFor(t, "the upstream request is cancelled", within, func() bool { return g.LLM.Open() == 0 })
			t.Logf("upstream request cancelled %v after the client closed its connection", took.Round(100*time.Microsecond))
			waitFor(t, "the session lock is released", released, func() bool {
				n, err := rdb.Exists(context.Background(), lockKey(g.Config.RedisPrefix, s.ID)).Result()
				return err == nil && n == 0
			})
			if after := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID); after != before {
				t.Errorf("the session document changed:\nbefore %s\nafter  %s", before, after)
			}
			if n := len(g.LLM.Requests()); n != 1 {
				t.Errorf("model calls = %d, want 1: a cancelled turn must not retry", n)
			}

			if c.name == "toulmin" {
				// The session takes the next turn at once.
				g.LLM.Enqueue(fakellm.Reply{Content: answer("Again.")})
				tr := g.Turn(s.ID, apptest.Msg("again"))
				tr.CheckEnding(t)
				if tr.Last().Type != "result" || tr.Last().Session.Version != 2 {
					t.Errorf("next turn: %q, want a result stored as version 2", tr.Kinds())
				}
			}
		})
	}
}
