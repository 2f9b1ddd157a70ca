package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

// fuzzStates are session states each turn is tried against, by contract: a fresh session and
// the states where the input checks differ (a card or a form to answer, a finished argument).
var fuzzStates = map[string][]string{
	"toulmin": {
		`{"step":"claim","draft":{},"turns":{},"pendingProposal":null,"isComplete":false}`,
		`{"step":"grounds","draft":{"claim":"Cars should be banned\nfrom centres."},"turns":{"claim":2},"pendingProposal":{"field":"grounds","value":"x","rationale":"r"},"isComplete":false}`,
		`{"step":"rebuttal","draft":{},"turns":{},"pendingProposal":null,"isComplete":true}`,
	},
	"cards": {
		`{"level":1}`,
		`{"level":1,"lastCard":{"type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]},"cycles":0}`,
		`{"level":2,"lastCard":{"type":"prompt","content":"Say it.","input":{"type":"text","max_length":40,"placeholder":""}},"cycles":2}`,
		`{"level":5,"lastCard":{"type":"reflection","content":"Reflect.","input":{"type":"text","max_length":1000,"placeholder":""}},"cycles":9}`,
		`{"level":1,"lastCard":{"type":"insight","content":"Well done."},"cycles":1}`,
	},
	"module": {
		`{"module":"anxiety-basics","coveredTopics":[],"percentage":0,"milestones":[],"forms":{}}`,
		`{"module":"anxiety-basics","coveredTopics":["stress"],"percentage":5,"milestones":[],"forms":{"f1":{"id":"f1","fields":[` +
			`{"id":"mood","type":"radio","label":"Mood","required":true,"options":[{"value":"ok","label":"OK"},{"value":"bad","label":"Bad"}]},` +
			`{"id":"tags","type":"checkbox","label":"Tags","options":[{"value":"x","label":"X"},{"value":"y","label":"Y"}]},` +
			`{"id":"level","type":"number","label":"Level","min":0,"max":10},` +
			`{"id":"notes","type":"textarea","label":"Notes"}]}}}`,
	},
}

// FuzzDecodeTurn feeds raw request bodies through what a turn request goes through before the
// stream starts: the handler's decode, its one check of learner text (cleanTurn) and the contract's Begin against each
// state of fuzzStates, then the model request Begin prepared. Nothing may panic; every refusal
// must be a client error (4xx), except coach_step_mismatch, which the seed sends as the stream's
// one error line; and no input may add or change a line of the prompt's session facts.
func FuzzDecodeTurn(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzDecodeTurn")
	s := New(Deps{})
	byName := map[string]coach.Contract{}
	var all []coach.Contract
	for _, c := range contracts(f) {
		byName[c.Name()] = c
		all = append(all, c)
	}
	f.Fuzz(func(t *testing.T, body []byte, contract string) {
		c := byName[contract]
		if c == nil {
			c = all[len(contract)%len(all)]
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/sessions/x/turns", bytes.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		var in coach.TurnInput
		if err := s.decode(s.echo.NewContext(req, httptest.NewRecorder()), &in); err != nil {
			wantClientError(t, s, "decode", err)
			return
		}
		if err := s.cleanTurn(&in); err != nil {
			wantClientError(t, s, "cleanTurn", err)
			return
		}
		for _, state := range fuzzStates[c.Name()] {
			sess := &coach.Session{ID: coach.NewID(), Contract: c.Name(), Locale: "en", Version: 3,
				State: json.RawMessage(state), CreatedAt: time.Unix(0, 0), UpdatedAt: time.Unix(0, 0)}
			turn, err := c.Begin(sess, in)
			if err != nil {
				if e := coach.AsError(err); e.Kind == coach.KindStream && e.Code == coach.CodeStepMismatch {
					continue
				}
				wantClientError(t, s, c.Name()+" Begin", err)
				continue
			}
			turn.Prelude()
			checkRequest(t, c.Name(), turn.Request())
		}
	})
}

// wantClientError fails unless err is answered with a 4xx status and a domain or transport code.
func wantClientError(t *testing.T, s *Server, what string, err error) {
	t.Helper()
	var ce *coach.Error
	var he *httpError
	if !errors.As(err, &ce) && !errors.As(err, &he) {
		t.Fatalf("%s: error %v (%T) is neither a *coach.Error nor a transport error", what, err, err)
	}
	if status, body := s.errorResponse(err); status < 400 || status > 499 || body.Error == "" {
		t.Fatalf("%s: error %v answers %d %+v, want a 4xx with a code", what, err, status, body)
	}
}

// checkRequest checks the model request of a turn: a system prompt first, the learner's message
// last, and a session facts section whose lines are still one known key each.
func checkRequest(t *testing.T, contract string, req coach.ModelRequest) {
	t.Helper()
	msgs := req.Messages
	if len(msgs) < 2 || msgs[0].Role != coach.RoleSystem || msgs[len(msgs)-1].Role != coach.RoleUser {
		t.Fatalf("%s request messages %+v: want system first and the user's message last", contract, msgs)
	}
	sys := msgs[0].Content
	i := strings.LastIndex(sys, "## Session facts\n")
	if i < 0 {
		t.Fatalf("%s system prompt has no session facts", contract)
	}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(sys[i+len("## Session facts\n"):]), "\n") {
		key, _, ok := strings.Cut(line, ": ")
		if !ok || !sessionFactKeys[key] || seen[key] {
			t.Fatalf("%s session facts line %q: want one line per known key, each once\n%s", contract, line, sys[i:])
		}
		seen[key] = true
	}
	if !seen["contract"] {
		t.Fatalf("%s session facts lack the contract:\n%s", contract, sys[i:])
	}
}

// sessionFactKeys are the keys of every contract's session facts (see the design notes).
var sessionFactKeys = map[string]bool{
	"contract": true, "locale": true,
	"step": true, "first_turn_for_step": true, "draft_for_step": true, "rewrite_request": true,
	"confirmation": true, "is_complete": true, "opening_turn": true,
	"level": true, "max_level": true, "last_card": true, "cycles_at_level": true,
	"module": true, "percentage": true, "covered_topics": true, "remaining_topics": true,
	"milestones_reached": true, "pending_milestone": true,
}
