package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// transcriptLines renders a page compactly: "1 learner {...}", "2 coach card {...}",
// "3 coach result {...} fallback=false".
func transcriptLines(page coach.TranscriptPage) string {
	var b []string
	for _, e := range page.Entries {
		switch {
		case e.Input != nil:
			b = append(b, fmt.Sprintf("%d %s %s", e.Seq, e.Role, e.Input))
		case e.Card != nil:
			b = append(b, fmt.Sprintf("%d %s card %s", e.Seq, e.Role, e.Card))
		default:
			b = append(b, fmt.Sprintf("%d %s result %s fallback=%v", e.Seq, e.Role, e.Result, e.Fallback != nil && *e.Fallback))
		}
	}
	return strings.Join(b, "\n")
}

func TestTranscript(t *testing.T) {
	prelude := []coach.Event{{Type: coach.EventCard, Card: json.RawMessage(`{"type":"level_up"}`), Block: -1}}
	m := &fakeModel{scripts: []script{
		{frags: []string{"Fine."}},
		{openErr: &coach.ModelError{Class: "client", Err: errors.New("400")}}, // a failed turn
		{frags: []string{"bad"}}, {frags: []string{"worse"}}, // a fallback
	}}
	svc, _, sess := newTestService(t, m, testOptions(), fallbackContract{echoContract{prelude: prelude}})
	ctx := context.Background()
	for i, want := range []string{"result", "error:coach_stream_failed", "reset:invalid_output result"} {
		got, _ := runTurn(t, svc, sess.ID)
		if l := lines(got); !strings.HasSuffix(l, want) {
			t.Fatalf("turn %d lines = %s, want it to end with %s", i+1, l, want)
		}
	}
	if _, err := svc.Update(ctx, "", sess.ID, "echo", json.RawMessage(`{"action":"accept"}`), func(s *coach.Session) (json.RawMessage, error) {
		return s.State, nil
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := svc.Update(ctx, "", sess.ID, "echo", nil, func(s *coach.Session) (json.RawMessage, error) { return s.State, nil }); err != nil {
		t.Fatalf("Update without input: %v", err)
	}
	page, err := svc.Transcript(ctx, "", sess.ID, 0, 0)
	if err != nil {
		t.Fatalf("Transcript: %v", err)
	}
	want := strings.Join([]string{
		`1 learner {"message":"hi"}`,
		`2 coach card {"type":"level_up"}`,
		`3 coach result {"text":"Fine."} fallback=false`,
		`4 learner {"message":"hi"}`,
		`5 coach card {"type":"level_up"}`,
		`6 coach result {"text":"fallback"} fallback=true`,
		`7 learner {"action":"accept"}`,
	}, "\n")
	if got := transcriptLines(page); got != want || page.Next != 0 {
		t.Errorf("transcript =\n%s\nnext %d, want\n%s\nnext 0", got, page.Next, want)
	}
	// A turn's entries name it; a decision is no turn's.
	if e := page.Entries; e[0].Turn == "" || e[1].Turn != e[0].Turn || e[2].Turn != e[0].Turn ||
		e[3].Turn == "" || e[3].Turn == e[0].Turn || e[4].Turn != e[3].Turn || e[5].Turn != e[3].Turn || e[6].Turn != "" {
		t.Errorf("turns of the entries %q %q %q, %q %q %q, %q: want one id per turn, none for the decision",
			e[0].Turn, e[1].Turn, e[2].Turn, e[3].Turn, e[4].Turn, e[5].Turn, e[6].Turn)
	}
	if learner, coach := page.Entries[0].At, page.Entries[2].At; learner.IsZero() || learner.After(coach) {
		t.Errorf("learner entry at %v, coach entry at %v: want the learner's first", learner, coach)
	}
	page, _ = svc.Transcript(ctx, "", sess.ID, 7, 2)
	if got := transcriptLines(page); got != "5 coach card {\"type\":\"level_up\"}\n6 coach result {\"text\":\"fallback\"} fallback=true" || page.Next != 5 {
		t.Errorf("page before 7 of 2 =\n%s\nnext %d, want seqs 5 and 6, next 5", got, page.Next)
	}
	for _, e := range page.Entries {
		if e.At.IsZero() {
			t.Errorf("entry %d has no time", e.Seq)
		}
	}
}

func TestTranscriptArguments(t *testing.T) {
	svc, _, sess := newTestService(t, &fakeModel{}, testOptions(), nil)
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		id     string
		before int64
		limit  int
		field  string
		err    error
	}{
		{"limit too large", sess.ID, 0, coach.MaxTranscriptPage + 1, "limit", nil},
		{"negative limit", sess.ID, 0, -1, "limit", nil},
		{"negative before", sess.ID, -1, 10, "before", nil},
		{"malformed id", "../x", 0, 10, "", coach.ErrNotFound},
		{"unknown id", coach.NewID(), 0, 10, "", coach.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Transcript(ctx, "", tt.id, tt.before, tt.limit)
			if tt.err != nil {
				if err != tt.err {
					t.Errorf("error = %v, want %v", err, tt.err)
				}
				return
			}
			if e := coach.AsError(err); e.Code != coach.CodeInvalidInput || e.Field != tt.field {
				t.Errorf("error = %v (field %q), want invalid_input on %q", err, e.Field, tt.field)
			}
		})
	}
	if _, err := svc.Transcript(ctx, "someone else", sess.ID, 0, 10); err != coach.ErrNotFound {
		t.Errorf("Transcript by another tenant error = %v, want ErrNotFound", err)
	}
}
