package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/coach/storetest"
)

// storeFake is the engine tests' store: coachtest.MemStore, which the conformance suite holds to
// the rules of the real stores, behind the coach.Store port alone (so a Service over it finds
// no learner index, budget counters or learner holds), with what these tests need beyond those
// rules: a switch that makes it unavailable, counts of commits and renewals, the tenant usage
// the commits carried, and the lock of a session ended or taken over as by another instance.
type storeFake struct {
	mem *coachtest.MemStore

	mu      sync.Mutex
	down    bool
	commits int
	renews  int
	// slack holds, for each renewal, how long its context gave the store to answer.
	slack []time.Duration
	// usage holds the tenant usage of every commit that carried one.
	usage []coach.TenantUsage
	// tokens holds the token of each session's latest claim.
	tokens map[string]string
}

var _ coach.Store = (*storeFake)(nil)

func newStoreFake() *storeFake {
	return &storeFake{mem: coachtest.NewMemStore(), tokens: map[string]string{}}
}

// unavailable reports whether the store is switched off.
func (f *storeFake) unavailable() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

// setDown switches the store off (down) or back on: Create, Claim, Commit, Renew and Release
// then fail with coach.ErrUnavailable.
func (f *storeFake) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *storeFake) Create(ctx context.Context, s *coach.Session) error {
	if f.unavailable() {
		return coach.ErrUnavailable
	}
	return f.mem.Create(ctx, s)
}

func (f *storeFake) Get(ctx context.Context, tenant, id string) (*coach.Session, error) {
	return f.mem.Get(ctx, tenant, id)
}

func (f *storeFake) Delete(ctx context.Context, tenant, id string) error {
	return f.mem.Delete(ctx, tenant, id)
}

func (f *storeFake) Claim(ctx context.Context, tenant, id string, ttl time.Duration) (*coach.Session, string, error) {
	if f.unavailable() {
		return nil, "", coach.ErrUnavailable
	}
	s, token, err := f.mem.Claim(ctx, tenant, id, ttl)
	if err == nil {
		f.mu.Lock()
		f.tokens[id] = token
		f.mu.Unlock()
	}
	return s, token, err
}

func (f *storeFake) Commit(ctx context.Context, s *coach.Session, token string, extra coach.CommitExtra) error {
	if f.unavailable() {
		return coach.ErrUnavailable
	}
	if err := f.mem.Commit(ctx, s, token, extra); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits++
	if extra.Usage != nil {
		f.usage = append(f.usage, *extra.Usage)
	}
	return nil
}

func (f *storeFake) Transcript(ctx context.Context, tenant, id string, before int64, limit int) (coach.TranscriptPage, error) {
	return f.mem.Transcript(ctx, tenant, id, before, limit)
}

func (f *storeFake) Renew(ctx context.Context, id, token string, ttl time.Duration) error {
	if f.unavailable() {
		return coach.ErrUnavailable
	}
	f.mu.Lock()
	f.renews++
	if d, ok := ctx.Deadline(); ok {
		f.slack = append(f.slack, time.Until(d))
	}
	f.mu.Unlock()
	return f.mem.Renew(ctx, id, token, ttl)
}

func (f *storeFake) Release(ctx context.Context, id, token string) error {
	if f.unavailable() {
		return coach.ErrUnavailable
	}
	return f.mem.Release(ctx, id, token)
}

func (f *storeFake) Ping(ctx context.Context) error { return f.mem.Ping(ctx) }

// commitCount returns how many commits succeeded.
func (f *storeFake) commitCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits
}

// renewals returns how many renewals were asked for while the store was up.
func (f *storeFake) renewals() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renews
}

// renewalSlack returns how long each renewal's context gave the store to answer.
func (f *storeFake) renewalSlack() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.slack)
}

// usages returns the tenant usage the commits carried, in order.
func (f *storeFake) usages() []coach.TenantUsage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.usage)
}

// locked reports whether session id is locked.
func (f *storeFake) locked(id string) bool { return f.mem.Locked(id) }

// stored returns the stored session id, whatever its tenant, failing t when there is none.
func (f *storeFake) stored(t *testing.T, id string) coach.Session {
	t.Helper()
	s, ok := f.mem.Session(id)
	if !ok {
		t.Fatalf("session %s is not stored", id)
	}
	return s
}

// expire ends the lock of session id's latest claim, as its TTL does when the holder stalls.
func (f *storeFake) expire(t *testing.T, id string) {
	t.Helper()
	f.mu.Lock()
	token := f.tokens[id]
	f.mu.Unlock()
	if err := f.mem.Release(context.Background(), id, token); err != nil {
		t.Fatal(err)
	}
}

// takeOver ends the lock of session id's latest claim and claims the session as another
// writer, returning that writer's token.
func (f *storeFake) takeOver(t *testing.T, id string) string {
	t.Helper()
	f.expire(t, id)
	s := f.stored(t, id)
	_, token, err := f.mem.Claim(context.Background(), s.Tenant, id, time.Minute)
	if err != nil {
		t.Fatalf("the other writer's claim: %v", err)
	}
	return token
}

// holds reports whether the lock of session id is still token's, without counting a renewal.
func (f *storeFake) holds(id, token string) bool {
	return f.mem.Renew(context.Background(), id, token, time.Minute) == nil
}

// TestStoreFakeConformance holds the wrapper to the rules of the store it wraps: what it adds
// must change nothing the engine relies on while the store is up.
func TestStoreFakeConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) coach.Store { return newStoreFake() })
}

// script is one scripted model call: its fragments, then err (nil: a clean end). openErr fails
// the call before it streams; block makes Next wait for the context after the fragments. With
// batch > 0 the stream plays one that reads batch fragments at a time and calls Wait before
// each read, as the OpenAI adapter does.
type script struct {
	openErr error
	frags   []string
	err     error
	block   bool
	batch   int
	// pause is a wait before every fragment: a model that takes its time.
	pause time.Duration
	// usage, when set, is reported in a fragment of its own after frags.
	usage *coach.Usage
	// finish, when set, is the finish reason, carried by the last fragment of frags.
	finish string
	// running, when set, is carried by every fragment of frags: an endpoint that reports its
	// running totals on each chunk (vLLM's continuous usage stats).
	running []coach.Usage
	// before, when set, is called before fragment i is returned, and may wait for an event;
	// it returns false when ctx ended meanwhile.
	before func(ctx context.Context, i int) bool
}

// fakeModel plays scripts in order and records the requests.
type fakeModel struct {
	mu       sync.Mutex
	scripts  []script
	requests []coach.ModelRequest
}

func (f *fakeModel) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if len(f.scripts) == 0 {
		return nil, &coach.ModelError{Class: "client", Err: errors.New("no script left")}
	}
	s := f.scripts[0]
	f.scripts = f.scripts[1:]
	if s.openErr != nil {
		return nil, s.openErr
	}
	return &fakeStream{ctx: ctx, s: s, wait: hooks.Wait}, nil
}

func (f *fakeModel) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

type fakeStream struct {
	ctx       context.Context
	s         script
	i         int
	wait      func()
	usageSent bool
}

func (f *fakeStream) Next() (coach.Fragment, error) {
	if err := f.ctx.Err(); err != nil {
		return coach.Fragment{}, err
	}
	if f.s.batch > 0 && f.i%f.s.batch == 0 && f.wait != nil {
		f.wait()
	}
	if f.i < len(f.s.frags) {
		if f.s.pause > 0 {
			select {
			case <-f.ctx.Done():
				return coach.Fragment{}, f.ctx.Err()
			case <-time.After(f.s.pause):
			}
		}
		if f.s.before != nil && !f.s.before(f.ctx, f.i) {
			return coach.Fragment{}, f.ctx.Err()
		}
		f.i++
		fr := coach.Fragment{Content: f.s.frags[f.i-1]}
		if f.i == len(f.s.frags) {
			fr.FinishReason = f.s.finish
		}
		if f.i <= len(f.s.running) {
			fr.Usage = &f.s.running[f.i-1]
		}
		return fr, nil
	}
	if f.s.usage != nil && !f.usageSent {
		f.usageSent = true
		return coach.Fragment{Usage: f.s.usage}, nil
	}
	if f.s.block {
		<-f.ctx.Done()
		return coach.Fragment{}, f.ctx.Err()
	}
	if f.s.err != nil {
		return coach.Fragment{}, f.s.err
	}
	return coach.Fragment{}, io.EOF
}

func (f *fakeStream) Close() error { return nil }

func (f *fakeStream) NotifiesWait() bool { return f.s.batch > 0 }

// echoContract streams every fragment as a delta and accepts output that ends with "." as its
// result; "EMPTY" finishes with coach_empty_response, anything else with coach_validation_failed.
type echoContract struct{ prelude []coach.Event }

func (echoContract) Name() string { return "echo" }

func (echoContract) NewState(coach.NewSession) (json.RawMessage, error) {
	return json.RawMessage(`{"turns":0}`), nil
}

func (c echoContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	if in.Message == nil {
		return nil, coach.FieldError("message", "message is required")
	}
	var st struct{ Turns int }
	if err := json.Unmarshal(s.State, &st); err != nil {
		return nil, err
	}
	return &echoTurn{msg: *in.Message, turns: st.Turns, prelude: c.prelude}, nil
}

type echoTurn struct {
	msg     string
	turns   int
	out     strings.Builder
	prelude []coach.Event
}

func (t *echoTurn) Prelude() []coach.Event { return t.prelude }

func (t *echoTurn) Request() coach.ModelRequest {
	return coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: t.msg}}}
}

func (t *echoTurn) Feed(f coach.Fragment, emit func(coach.Event)) error {
	t.out.WriteString(f.Content)
	emit(coach.Delta(f.Content))
	return nil
}

func (t *echoTurn) Reset() { t.out.Reset() }

func (t *echoTurn) Finish() (*coach.Outcome, error) {
	text := t.out.String()
	switch {
	case text == "EMPTY":
		return nil, coach.Errorf(coach.KindStream, coach.CodeEmptyResponse, "empty")
	case !strings.HasSuffix(text, "."):
		return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "no final period")
	}
	res, _ := json.Marshal(map[string]string{"text": text})
	st, _ := json.Marshal(map[string]int{"turns": t.turns + 1})
	return &coach.Outcome{Result: res, State: st, History: []coach.Message{{Role: coach.RoleUser, Content: t.msg}, {Role: coach.RoleAssistant, Content: text}}}, nil
}

// fallbackContract is echoContract whose turns fall back to a fixed answer.
type fallbackContract struct{ echoContract }

func (c fallbackContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.echoContract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return &fallbackTurn{t.(*echoTurn)}, nil
}

type fallbackTurn struct{ *echoTurn }

func (t *fallbackTurn) Fallback(cause error) (*coach.Outcome, error) {
	return &coach.Outcome{Result: json.RawMessage(`{"text":"fallback"}`), State: json.RawMessage(`{"turns":1}`), Fallback: true, Diagnostic: cause.Error()}, nil
}

// SafeReply answers with the gateway's text and the state unchanged.
func (t *echoTurn) SafeReply(text string) (*coach.Outcome, error) {
	res, _ := json.Marshal(map[string]any{"text": text, "safe": true})
	st, _ := json.Marshal(map[string]int{"turns": t.turns})
	return &coach.Outcome{Result: res, State: st, Tail: text}, nil
}
