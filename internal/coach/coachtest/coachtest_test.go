package coachtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

// newSession stores a version-1 session of tenant and returns its id.
func newSession(t *testing.T, m *coachtest.MemStore, tenant string) string {
	t.Helper()
	s := &coach.Session{ID: coach.NewID(), Contract: "c", Version: 1, State: json.RawMessage(`{}`), Tenant: tenant}
	if err := m.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// claim claims id for tenant, failing t on error.
func claim(t *testing.T, m *coachtest.MemStore, tenant, id string) (*coach.Session, string) {
	t.Helper()
	s, token, err := m.Claim(context.Background(), tenant, id, 0)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return s, token
}

func TestMemStoreRules(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// run acts on a fresh store holding session id of tenant "a" and returns the error to check.
		run        func(t *testing.T, m *coachtest.MemStore, id string) error
		want       error
		wantLocked bool
	}{
		{"get of another tenant", func(_ *testing.T, m *coachtest.MemStore, id string) error {
			_, err := m.Get(ctx, "b", id)
			return err
		}, coach.ErrNotFound, false},
		{"get of a missing session", func(_ *testing.T, m *coachtest.MemStore, _ string) error {
			_, err := m.Get(ctx, "a", coach.NewID())
			return err
		}, coach.ErrNotFound, false},
		{"claim of another tenant", func(_ *testing.T, m *coachtest.MemStore, id string) error {
			_, _, err := m.Claim(ctx, "b", id, 0)
			return err
		}, coach.ErrNotFound, false},
		{"claim of another tenant's busy session", func(t *testing.T, m *coachtest.MemStore, id string) error {
			claim(t, m, "a", id)
			_, _, err := m.Claim(ctx, "b", id, 0)
			return err
		}, coach.ErrNotFound, true},
		{"second claim", func(t *testing.T, m *coachtest.MemStore, id string) error {
			claim(t, m, "a", id)
			_, _, err := m.Claim(ctx, "a", id, 0)
			return err
		}, coach.ErrBusy, true},
		{"commit", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			s.Version++
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, nil, false},
		{"commit repeated after success", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			s.Version++
			if err := m.Commit(ctx, s, token, coach.CommitExtra{}); err != nil {
				t.Fatal(err)
			}
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, nil, false},
		{"commit with another token", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, _ := claim(t, m, "a", id)
			s.Version++
			return m.Commit(ctx, s, "not-the-token", coach.CommitExtra{})
		}, coach.ErrConflict, true},
		{"commit without a lock", func(_ *testing.T, m *coachtest.MemStore, id string) error {
			s, _ := m.Session(id)
			s.Version++
			return m.Commit(ctx, &s, "", coach.CommitExtra{})
		}, coach.ErrConflict, false},
		{"commit of the same version", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, coach.ErrConflict, true},
		{"commit skipping a version", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			s.Version += 2
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, coach.ErrConflict, true},
		{"commit moving the session to another tenant", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			s.Version++
			s.Tenant = "b"
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, coach.ErrConflict, true},
		{"commit after release", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			if err := m.Release(ctx, id, token); err != nil {
				t.Fatal(err)
			}
			s.Version++
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, coach.ErrConflict, false},
		{"commit after delete", func(t *testing.T, m *coachtest.MemStore, id string) error {
			s, token := claim(t, m, "a", id)
			if err := m.Delete(ctx, "a", id); err != nil {
				t.Fatal(err)
			}
			s.Version++
			return m.Commit(ctx, s, token, coach.CommitExtra{})
		}, coach.ErrConflict, false},
		{"release with another token", func(t *testing.T, m *coachtest.MemStore, id string) error {
			claim(t, m, "a", id)
			return m.Release(ctx, id, "not-the-token")
		}, nil, true},
		{"release with an empty token", func(t *testing.T, m *coachtest.MemStore, id string) error {
			claim(t, m, "a", id)
			return m.Release(ctx, id, "")
		}, nil, true},
		{"delete by another tenant", func(t *testing.T, m *coachtest.MemStore, id string) error {
			claim(t, m, "a", id)
			if err := m.Delete(ctx, "b", id); err != nil {
				t.Fatal(err)
			}
			_, err := m.Get(ctx, "a", id)
			return err
		}, nil, true},
		{"delete", func(t *testing.T, m *coachtest.MemStore, id string) error {
			claim(t, m, "a", id)
			if err := m.Delete(ctx, "a", id); err != nil {
				t.Fatal(err)
			}
			_, err := m.Get(ctx, "a", id)
			return err
		}, coach.ErrNotFound, false},
		{"create of a taken id", func(_ *testing.T, m *coachtest.MemStore, id string) error {
			if err := m.Create(ctx, &coach.Session{ID: id, Version: 1, Tenant: "b"}); err == nil {
				return errors.New("created")
			}
			_, err := m.Get(ctx, "a", id)
			return err
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := coachtest.NewMemStore()
			id := newSession(t, m, "a")
			if err := tt.run(t, m, id); !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if got := m.Locked(id); got != tt.wantLocked {
				t.Errorf("Locked = %v, want %v", got, tt.wantLocked)
			}
		})
	}
}

func TestMemStoreCommitWrites(t *testing.T) {
	ctx := context.Background()
	m := coachtest.NewMemStore()
	id := newSession(t, m, "a")
	s, token := claim(t, m, "a", id)
	s.Version++
	s.State = json.RawMessage(`{"n":2}`)
	s.History = []coach.Message{{Role: coach.RoleUser, Content: "hi"}}
	if err := m.Commit(ctx, s, token, coach.CommitExtra{}); err != nil {
		t.Fatal(err)
	}
	s.State[1] = 'X' // the store must hold its own copy
	s.History[0].Content = "changed"
	got, err := m.Get(ctx, "a", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || string(got.State) != `{"n":2}` || len(got.History) != 1 || got.History[0].Content != "hi" {
		t.Errorf("stored session %+v, want version 2, state {\"n\":2}, history [hi]", got)
	}
	if _, token2 := claim(t, m, "a", id); token2 == token {
		t.Errorf("two claims got the same token %q", token)
	}
}

func TestMemStoreAsked(t *testing.T) {
	ctx := context.Background()
	m := coachtest.NewMemStore()
	id := newSession(t, m, "a")
	if _, ok := m.Session(id); !ok {
		t.Fatal("Session does not find a stored session")
	}
	_, _ = m.Get(ctx, "b", "x")
	_ = m.Delete(ctx, "a", "y")
	_, _, _ = m.Claim(ctx, "a", "z", 0)
	_ = m.Release(ctx, "w", "t")
	if got, want := m.Asked(), []string{id, "x", "y", "z", "w"}; !slices.Equal(got, want) {
		t.Errorf("Asked = %q, want %q", got, want)
	}
}

// collect plays a whole stream of m.
func collect(ctx context.Context, m *coachtest.Model) ([]coach.Fragment, error) {
	st, err := m.Stream(ctx, coach.ModelRequest{}, coach.StreamHooks{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var frags []coach.Fragment
	for {
		f, err := st.Next()
		if err == io.EOF {
			return frags, nil
		}
		if err != nil {
			return frags, err
		}
		frags = append(frags, f)
	}
}

func TestModelReplies(t *testing.T) {
	boom := &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("boom")}
	tool := []coach.Fragment{{ToolCallID: "c", ToolName: "f"}, {ToolArgs: `{"a"`}, {ToolArgs: `:1}`, FinishReason: "tool_calls"}}
	tests := []struct {
		name    string
		reply   coachtest.Reply
		want    []coach.Fragment
		wantErr error
	}{
		{"content in chunks", coachtest.Content("héllo!", 2), []coach.Fragment{{Content: "h\xc3"}, {Content: "\xa9l"}, {Content: "lo"}, {Content: "!"}}, nil},
		{"content whole", coachtest.Content("hello", 0), []coach.Fragment{{Content: "hello"}}, nil},
		{"content exactly one chunk", coachtest.Content("abc", 3), []coach.Fragment{{Content: "abc"}}, nil},
		{"empty content", coachtest.Content("", 4), nil, nil},
		{"fragments", coachtest.Fragments(tool...), tool, nil},
		{"failure", coachtest.Fail(boom), nil, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(context.Background(), coachtest.NewModel(tt.reply))
			if !errors.Is(err, tt.wantErr) || !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestModelQueueAndRequests(t *testing.T) {
	m := coachtest.NewModel(coachtest.Content("one", 0))
	m.Enqueue(coachtest.Content("two", 0))
	msgs := []coach.Message{{Role: coach.RoleUser, Content: "a"}, {Role: coach.RoleUser, Content: "b"}}
	for i, want := range []string{"one", "two"} {
		st, err := m.Stream(context.Background(), coach.ModelRequest{Messages: msgs[:i+1]}, coach.StreamHooks{})
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := st.Next(); f.Content != want {
			t.Errorf("call %d streamed %q, want %q", i+1, f.Content, want)
		}
	}
	msgs[0].Content = "changed" // the recorded requests must not follow
	_, err := m.Stream(context.Background(), coach.ModelRequest{}, coach.StreamHooks{})
	var me *coach.ModelError
	if !errors.As(err, &me) || me.Retryable {
		t.Errorf("call past the script: %v, want a non-retryable *coach.ModelError", err)
	}
	reqs := m.Requests()
	if m.Calls() != 3 || len(reqs) != 3 || len(reqs[1].Messages) != 2 || reqs[0].Messages[0].Content != "a" {
		t.Errorf("%d calls, requests %+v; want 3 with the messages as sent", m.Calls(), reqs)
	}
}

func TestModelStreamEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := coachtest.NewModel(coachtest.Content("abcdef", 1))
	st, err := m.Stream(ctx, coach.ModelRequest{}, coach.StreamHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := st.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel: %v, want context.Canceled", err)
	}
}

func TestModelConcurrentCalls(t *testing.T) {
	const n = 50
	m := coachtest.NewModel()
	for i := range n {
		m.Enqueue(coachtest.Content(fmt.Sprint(i), 0))
	}
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			frags, err := collect(context.Background(), m)
			if err != nil || len(frags) != 1 {
				t.Errorf("call: %+v, %v", frags, err)
				return
			}
			got[i] = frags[0].Content
		})
	}
	wg.Wait()
	slices.Sort(got)
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprint(i)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) || m.Calls() != n {
		t.Errorf("%d calls got %q, want each reply once", m.Calls(), got)
	}
}

func TestDeltaText(t *testing.T) {
	d := coach.Delta
	tests := []struct {
		name   string
		events []coach.Event
		want   string
	}{
		{"none", nil, ""},
		{"deltas", []coach.Event{d("a"), d("b"), {Type: coach.EventResult}}, "ab"},
		{"after the last reset", []coach.Event{d("a"), {Type: coach.EventReset}, d("b"), {Type: coach.EventReset}, d("c"), d("d")}, "cd"},
		{"reset last", []coach.Event{d("a"), {Type: coach.EventReset}}, ""},
		{"other events", []coach.Event{{Type: coach.EventCard, Text: "x"}, d("a"), {Type: coach.EventError, Message: "m"}}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := coachtest.DeltaText(tt.events); got != tt.want {
				t.Errorf("DeltaText = %q, want %q", got, tt.want)
			}
		})
	}
}
