package turns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestStopFindsOnlyItsTurn attacks the registry from a learner's side: a stop that names
// another turn of the session, or a session of its own, must not cancel the running turn.
func TestStopFindsOnlyItsTurn(t *testing.T) {
	tests := []struct {
		name          string
		session, turn string
		want          bool
	}{
		{"the running turn", "s1", "t1", true},
		{"whichever runs", "s1", "", true},
		{"an older turn of the session", "s1", "t0", false},
		{"another session's id for the turn", "s2", "t1", false},
		{"another session", "s2", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := New(Config{})
			tr := ts.Start(context.Background(), context.Background(), "s1", "t1")
			defer tr.End()
			ts.StopLocal(tt.session, tt.turn)
			got := context.Cause(tr.Context()) == coach.ErrTurnCancelled
			if got != tt.want {
				t.Errorf("StopLocal(%q, %q) cancelled the turn: got %v, want %v", tt.session, tt.turn, got, tt.want)
			}
		})
	}
}

// TestTurnOutlivesItsClient checks what a client's leaving does to a turn: nothing, unless
// turns are cancelled on disconnect; a drain ends it either way.
func TestTurnOutlivesItsClient(t *testing.T) {
	tests := []struct {
		name               string
		cancelOnDisconnect bool
		drain              bool
		want               error
	}{
		{"client leaves", false, false, nil},
		{"client leaves, cancel on disconnect", true, false, context.Canceled},
		{"drain", false, true, coach.ErrShuttingDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, leave := context.WithCancel(context.Background())
			drain, drained := context.WithCancel(context.Background())
			defer drained()
			tr := New(Config{CancelOnDisconnect: tt.cancelOnDisconnect}).Start(req, drain, "s1", "t1")
			defer tr.End()
			leave()
			if tt.drain {
				drained()
			}
			if tt.want != nil {
				<-tr.Context().Done()
			}
			if got := context.Cause(tr.Context()); !errors.Is(got, tt.want) {
				t.Errorf("the turn's context ended with %v, want %v", got, tt.want)
			}
		})
	}
}

// failingSink is a client whose writes fail: one that is gone.
type failingSink struct{ emits int }

var errGone = errors.New("gone")

func (f *failingSink) Emit(coach.Event) error { f.emits++; return errGone }
func (f *failingSink) Flush() error           { return errGone }

// memLog is a Log in memory that keeps every write.
type memLog struct {
	mu     sync.Mutex
	lines  []byte
	state  string
	writes []Write
	// appends are the entries of each Append.
	appends [][]Entry
	follows []string
}

func (m *memLog) Append(_ context.Context, es []Entry) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := make([]Entry, 0, len(es))
	for _, e := range es {
		m.lines = append(m.lines, e.Lines...)
		if e.State != "" {
			m.state = e.State
		}
		// The writer reuses its buffers once Append returns.
		e.Lines = bytes.Clone(e.Lines)
		m.writes = append(m.writes, e.Write)
		kept = append(kept, e)
	}
	m.appends = append(m.appends, kept)
	return nil
}

// taken returns the writes so far.
func (m *memLog) taken() []Write {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.writes)
}
func (m *memLog) Current(context.Context, string) (string, bool, string, error) {
	return "", false, "", nil
}
func (m *memLog) Read(context.Context, string, string, string, time.Duration) ([]Batch, error) {
	return nil, nil
}
func (m *memLog) Stop(context.Context, string, string) error { return nil }

// Follow counts the turns followed through the log, that is, run by another instance.
func (m *memLog) Follow(_ context.Context, _, turn string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.follows = append(m.follows, turn)
	return nil
}
func (m *memLog) EndLost(context.Context, string, string, string, []byte, time.Duration) (bool, error) {
	return false, nil
}

// TestGoneClientKeepsTheLog checks that a client that is gone neither ends the turn (its
// errors do not reach the engine) nor costs the log a line, and that with cancel on disconnect
// its error does reach the engine.
func TestGoneClientKeepsTheLog(t *testing.T) {
	tests := []struct {
		name               string
		cancelOnDisconnect bool
		wantErr            bool
	}{
		{"run to the end", false, false},
		{"cancel on disconnect", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &memLog{}
			nop := zerolog.Nop()
			tr := New(Config{Log: log, ResumeTTL: time.Minute, CancelOnDisconnect: tt.cancelOnDisconnect}).
				Start(context.Background(), context.Background(), "s1", "t1")
			client := &failingSink{}
			sink := tr.Sink(client, time.Minute, nil, &nop)
			var errs []error
			for _, e := range []coach.Event{coach.Delta("a"), coach.Delta("b"), {Type: coach.EventResult, Result: json.RawMessage(`{}`), Turn: "t1"}} {
				errs = append(errs, sink.Emit(e))
			}
			errs = append(errs, sink.Flush())
			<-tr.End()
			if got := errors.Join(errs...) != nil; got != tt.wantErr {
				t.Errorf("the sink's errors = %v, want any: %v", errs, tt.wantErr)
			}
			if !tt.wantErr && client.emits != 1 {
				t.Errorf("a gone client was written %d times, want 1 (the write that failed)", client.emits)
			}
			want := `{"type":"delta","text":"a"}` + "\n" + `{"type":"delta","text":"b"}` + "\n" + `{"type":"result","result":{},"turn":"t1"}` + "\n"
			if got := string(log.lines); got != want || log.state != Ended {
				t.Errorf("log = %q (state %q), want %q (state %q)", got, log.state, want, Ended)
			}
		})
	}
}
