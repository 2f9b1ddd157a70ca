package coach_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// fakeBreaker allows every upstream but those in open, names panicTo for panic mode, and
// records every verdict ("name:verdict", with "!panic" for a visit Panic sent). With failOpens,
// a failed visit opens its upstream's circuit, as a failed half-open probe does.
type fakeBreaker struct {
	mu        sync.Mutex
	open      map[string]bool
	failOpens bool
	panicTo   string
	asked     []string
	reports   []string
	// allowed counts the visits allowed or sent by Panic, each of which must be reported.
	allowed int
}

func (b *fakeBreaker) Panic() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.panicTo != "" {
		b.allowed++
	}
	return b.panicTo
}

func (b *fakeBreaker) Allow(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, name)
	if b.open[name] {
		return false
	}
	b.allowed++
	return true
}

// unreported returns how many allowed attempts were never reported: a half-open circuit would
// keep its probe out for ever.
func (b *fakeBreaker) unreported() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.allowed - len(b.reports)
}

func (b *fakeBreaker) Report(name string, v coach.Verdict, panicked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := name + ":" + [...]string{"healthy", "failed", "inconclusive"}[v]
	if panicked {
		r += "!panic"
	}
	b.reports = append(b.reports, r)
	if b.failOpens && v == coach.Failed {
		b.open[name] = true
	}
}

// fallbackObserver records fallbacks.
type fallbackObserver struct {
	coach.NopObserver
	mu        sync.Mutex
	fallbacks []string
	attempts  []string
	unusable  []string
}

func (o *fallbackObserver) UnusableOutput(_, up string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unusable = append(o.unusable, up)
}

func (o *fallbackObserver) FellBack(_, from, to string, after bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	when := "before"
	if after {
		when = "after"
	}
	o.fallbacks = append(o.fallbacks, from+">"+to+":"+when)
}

func (o *fallbackObserver) Attempted(_, up string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts = append(o.attempts, up)
}

func TestFallback(t *testing.T) {
	server := &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503")}
	cut := &coach.ModelError{Class: "stream", Retryable: true, Err: io.ErrUnexpectedEOF}
	refused := &coach.ModelError{Class: coach.ClassRefused, Err: errors.New("400 context_length_exceeded")}
	unauthorized := &coach.ModelError{Class: "client", Err: errors.New("401")}
	invalid := &coach.ModelError{Class: coach.ClassInvalid, Err: errors.New("400 messages: unknown role")}
	limited := func(after time.Duration) *coach.ModelError {
		return &coach.ModelError{Class: coach.ClassRateLimited, Retryable: true, RetryAfter: after, Err: errors.New("429")}
	}
	tests := []struct {
		name    string
		scripts map[string][]script
		open    []string
		// panicTo is the upstream the breaker names when every circuit is open.
		panicTo string
		// failOpens makes a failed attempt open its circuit (see fakeBreaker).
		failOpens bool
		opts      func(*coach.Options)
		// fallback uses the contract with a fallback answer.
		fallback bool
		want     string
		// upstream is the result's upstream; calls the model calls per upstream, a,b,c.
		upstream  string
		calls     [3]int
		fallbacks []string
		reports   []string
		// unusable lists the upstreams of the attempts whose output was unusable.
		unusable []string
	}{
		{name: "healthy primary answers alone",
			scripts: map[string][]script{"a": {{frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "a", calls: [3]int{1, 0, 0}, reports: []string{"a:healthy"}},
		{name: "5xx before text moves on silently",
			scripts: map[string][]script{"a": {{openErr: server}}, "b": {{frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "b", calls: [3]int{1, 1, 0},
			fallbacks: []string{"a>b:before"}, reports: []string{"a:failed", "b:healthy"}},
		{name: "cut after text: reset, then the next endpoint's deltas",
			scripts: map[string][]script{"a": {{frags: []string{"Hel"}, err: cut}}, "b": {{frags: []string{"Hello."}}}},
			want:    "delta:Hel reset:stream_interrupted delta:Hello. result", upstream: "b", calls: [3]int{1, 1, 0},
			fallbacks: []string{"a>b:after"}, reports: []string{"a:failed", "b:healthy"}},
		{name: "stall after text moves on with a reset",
			scripts: map[string][]script{"a": {{frags: []string{"a"}, block: true}}, "b": {{frags: []string{"b."}}}},
			// The idle deadline also runs between b's fragments: long enough that no loaded
			// machine takes it between two of them, short enough that a's stall is quick.
			opts: func(o *coach.Options) { o.IdleTimeout = 200 * time.Millisecond },
			want: "delta:a reset:stalled delta:b. result", upstream: "b", calls: [3]int{1, 1, 0},
			fallbacks: []string{"a>b:after"}},
		{name: "three endpoints: the first two fail",
			scripts: map[string][]script{"a": {{openErr: server}}, "b": {{frags: []string{"x"}, err: cut}}, "c": {{frags: []string{"c."}}}},
			want:    "delta:x reset:stream_interrupted delta:c. result", upstream: "c", calls: [3]int{1, 1, 1},
			fallbacks: []string{"a>b:before", "b>c:after"}, reports: []string{"a:failed", "b:failed", "c:healthy"}},
		{name: "an open circuit is skipped",
			scripts: map[string][]script{"b": {{frags: []string{"ok."}}}}, open: []string{"a"},
			want: "delta:ok. result", upstream: "b", calls: [3]int{0, 1, 0}, reports: []string{"b:healthy"}},
		{name: "every circuit open and no endpoint to panic to",
			open: []string{"a", "b", "c"},
			want: "error:coach_stream_failed", calls: [3]int{0, 0, 0}},
		{name: "every circuit open: panic mode tries the endpoint the breaker names",
			scripts: map[string][]script{"b": {{frags: []string{"ok."}}}}, open: []string{"a", "b", "c"}, panicTo: "b",
			want: "delta:ok. result", upstream: "b", calls: [3]int{0, 1, 0}, reports: []string{"b:healthy!panic"}},
		{name: "a failed panic visit moves on only to allowed endpoints",
			scripts: map[string][]script{"a": {{openErr: server}, {openErr: server}, {openErr: server}}}, open: []string{"a", "b", "c"}, panicTo: "a",
			want: "error:coach_stream_failed", calls: [3]int{3, 0, 0}, reports: []string{"a:failed!panic"}},
		{name: "unusable output moves on after the corrective retry, and is no fault of the endpoint",
			scripts: map[string][]script{"a": {{frags: []string{"x"}}, {frags: []string{"y"}}}, "b": {{frags: []string{"z."}}}},
			want:    "delta:x reset:invalid_output delta:y reset:invalid_output delta:z. result", upstream: "b", calls: [3]int{2, 1, 0},
			fallbacks: []string{"a>b:after"}, reports: []string{"a:healthy", "b:healthy"}, unusable: []string{"a", "a"}},
		{name: "unusable output on the last endpoint opens nothing",
			scripts: map[string][]script{"a": {{frags: []string{"x"}}, {frags: []string{"y"}}}}, open: []string{"b", "c"}, failOpens: true,
			want: "delta:x reset:invalid_output delta:y error:coach_validation_failed", calls: [3]int{2, 0, 0},
			reports: []string{"a:healthy"}, unusable: []string{"a", "a"}},
		{name: "the fallback answer comes only after the last endpoint",
			fallback: true,
			scripts:  map[string][]script{"a": {{frags: []string{"x"}}, {frags: []string{"y"}}}, "b": {{frags: []string{"v"}}, {frags: []string{"w"}}}, "c": {{frags: []string{"s"}}, {frags: []string{"t"}}}},
			want:     "delta:x reset:invalid_output delta:y reset:invalid_output delta:v reset:invalid_output delta:w reset:invalid_output delta:s reset:invalid_output delta:t reset:invalid_output result",
			upstream: "c", calls: [3]int{2, 2, 2}, fallbacks: []string{"a>b:after", "b>c:after"}},
		{name: "a refused request does not move on",
			scripts: map[string][]script{"a": {{openErr: refused}}},
			want:    "error:coach_stream_failed", calls: [3]int{1, 0, 0}, reports: []string{"a:healthy"}},
		{name: "an endpoint that refuses our key moves on",
			scripts: map[string][]script{"a": {{openErr: unauthorized}}, "b": {{frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "b", calls: [3]int{1, 1, 0}, fallbacks: []string{"a>b:before"}},
		{name: "a request the endpoint rejects moves on, not counted against the endpoint",
			scripts: map[string][]script{"a": {{openErr: invalid}}, "b": {{frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "b", calls: [3]int{1, 1, 0},
			fallbacks: []string{"a>b:before"}, reports: []string{"a:inconclusive", "b:healthy"}},
		{name: "a request every endpoint rejects opens no circuit",
			scripts: map[string][]script{"a": {{openErr: invalid}}, "b": {{openErr: invalid}}, "c": {{openErr: invalid}}},
			want:    "error:coach_stream_failed", calls: [3]int{1, 1, 1},
			fallbacks: []string{"a>b:before", "b>c:before"}, reports: []string{"a:inconclusive", "b:inconclusive", "c:inconclusive"}},
		{name: "429 within the Retry-After cap waits for the same endpoint",
			scripts: map[string][]script{"a": {{openErr: limited(time.Millisecond)}, {frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "a", calls: [3]int{2, 0, 0}, reports: []string{"a:healthy"}},
		{name: "429 within the Retry-After cap to the end says nothing of the endpoint",
			scripts: map[string][]script{"a": {{openErr: limited(time.Millisecond)}, {openErr: limited(time.Millisecond)}, {openErr: limited(time.Millisecond)}}},
			open:    []string{"b", "c"},
			want:    "error:coach_stream_failed", calls: [3]int{3, 0, 0}, reports: []string{"a:inconclusive"}},
		{name: "429 beyond the Retry-After cap moves on",
			scripts: map[string][]script{"a": {{openErr: limited(time.Hour)}}, "b": {{frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "b", calls: [3]int{1, 1, 0}, fallbacks: []string{"a>b:before"},
			reports: []string{"a:failed", "b:healthy"}},
		{name: "the last endpoint keeps the retries",
			scripts: map[string][]script{"a": {{openErr: server}}, "b": {{openErr: server}}, "c": {{openErr: server}, {openErr: server}, {frags: []string{"ok."}}}},
			want:    "delta:ok. result", upstream: "c", calls: [3]int{1, 1, 3}, fallbacks: []string{"a>b:before", "b>c:before"}},
		{name: "one turn's retries on one endpoint are one sample",
			scripts: map[string][]script{"a": {{openErr: server}, {openErr: server}, {openErr: server}}}, open: []string{"b", "c"}, failOpens: true,
			want: "error:coach_stream_failed", calls: [3]int{3, 0, 0}, reports: []string{"a:failed"}},
		{name: "a retry that answers makes the visit healthy",
			scripts: map[string][]script{"a": {{openErr: server}, {frags: []string{"ok."}}}}, open: []string{"b", "c"}, failOpens: true,
			want: "delta:ok. result", upstream: "a", calls: [3]int{2, 0, 0}, reports: []string{"a:healthy"}},
		{name: "a cut and its recovery are one sample",
			scripts: map[string][]script{"a": {{frags: []string{"x"}, err: cut}, {frags: []string{"ok."}}}}, open: []string{"b", "c"}, failOpens: true,
			want: "delta:x reset:stream_interrupted delta:ok. result", upstream: "a", calls: [3]int{2, 0, 0}, reports: []string{"a:healthy"}},
		{name: "all fail",
			scripts: map[string][]script{"a": {{openErr: server}}, "b": {{openErr: server}}, "c": {{openErr: server}, {openErr: server}, {openErr: server}}},
			want:    "error:coach_stream_failed", calls: [3]int{1, 1, 3}, fallbacks: []string{"a>b:before", "b>c:before"},
			reports: []string{"a:failed", "b:failed", "c:failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			names := []string{"a", "b", "c"}
			models := make([]*fakeModel, 3)
			var ups []coach.Upstream
			for i, n := range names {
				models[i] = &fakeModel{scripts: tt.scripts[n]}
				ups = append(ups, coach.Upstream{Name: n, Model: models[i]})
			}
			br := &fakeBreaker{open: map[string]bool{}, failOpens: tt.failOpens, panicTo: tt.panicTo}
			for _, n := range tt.open {
				br.open[n] = true
			}
			obs := &fallbackObserver{}
			var c coach.Contract = echoContract{}
			if tt.fallback {
				c = fallbackContract{}
			}
			st := newStoreFake()
			svc := coach.New(coach.Deps{Store: st, Upstreams: ups, Breaker: br, Contracts: []coach.Contract{c}, Options: opts, Observer: obs})
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatal(err)
			}
			got, rep := runTurn(t, svc, sess.ID)
			if g := lines(got); g != tt.want {
				t.Errorf("lines = %q, want %q", g, tt.want)
			}
			if last := got[len(got)-1]; last.Type == coach.EventResult && last.Upstream != tt.upstream {
				t.Errorf("result upstream = %q, want %q", last.Upstream, tt.upstream)
			}
			if tt.upstream != "" && rep.Upstream != tt.upstream {
				t.Errorf("report upstream = %q, want %q", rep.Upstream, tt.upstream)
			}
			for i, m := range models {
				if m.calls() != tt.calls[i] {
					t.Errorf("calls to %s = %d, want %d", names[i], m.calls(), tt.calls[i])
				}
			}
			if !slices.Equal(obs.fallbacks, tt.fallbacks) {
				t.Errorf("fallbacks = %q, want %q", obs.fallbacks, tt.fallbacks)
			}
			if tt.reports != nil && !slices.Equal(br.reports, tt.reports) {
				t.Errorf("breaker reports = %q, want %q", br.reports, tt.reports)
			}
			if n := br.unreported(); n != 0 {
				t.Errorf("%d allowed visits were never reported to the breaker", n)
			}
			if tt.unusable != nil && !slices.Equal(obs.unusable, tt.unusable) {
				t.Errorf("unusable outputs counted on %q, want %q", obs.unusable, tt.unusable)
			}
			if sum := tt.calls[0] + tt.calls[1] + tt.calls[2]; len(obs.attempts) != sum || rep.Attempts != sum {
				t.Errorf("attempts observed %v, reported %d; want %d", obs.attempts, rep.Attempts, sum)
			}
			// A request moved to another endpoint carries no correction meant for the last one.
			for i, m := range models {
				if len(m.requests) > 0 && strings.Contains(lastMessage(m.requests[0]), "could not be used") {
					t.Errorf("the first request to %s carries the previous endpoint's correction", names[i])
				}
			}
		})
	}
}

func lastMessage(r coach.ModelRequest) string { return r.Messages[len(r.Messages)-1].Content }

// TestFallbackCancelled checks that a client that leaves does not count against an endpoint.
func TestFallbackCancelled(t *testing.T) {
	a := &fakeModel{scripts: []script{{frags: []string{"a"}, block: true}}}
	br := &fakeBreaker{}
	svc := coach.New(coach.Deps{Store: newStoreFake(), Upstreams: []coach.Upstream{{Name: "a", Model: a}, {Name: "b", Model: &fakeModel{}}},
		Breaker: br, Contracts: []coach.Contract{echoContract{}}, Options: testOptions()})
	sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rep := run.Run(ctx, coach.EmitFunc(func(e coach.Event) error {
		if e.Type == coach.EventDelta {
			cancel()
		}
		return nil
	}))
	if rep.Outcome != "cancelled" || !slices.Equal(br.reports, []string{"a:inconclusive"}) {
		t.Errorf("outcome %q, breaker reports %q; want cancelled and [a:inconclusive]", rep.Outcome, br.reports)
	}
}

// TestUsageOfEveryAttempt checks that the tokens of attempts that did not answer (unusable
// output, a fallback to another endpoint, the fallback answer) count in the tenant's usage
// committed with the turn and in the report, while the result line carries the answering
// attempt's.
func TestUsageOfEveryAttempt(t *testing.T) {
	u := func(p, c int) *coach.Usage { return &coach.Usage{PromptTokens: p, CompletionTokens: c} }
	tests := []struct {
		name     string
		scripts  map[string][]script
		fallback bool
		// result is the result line's usage; committed the tenant usage of the commit; spent
		// the report's upstreams of Spent.
		result, committed *coach.Usage
		spent             []string
	}{
		{name: "running totals on every chunk count once, as the last one says",
			scripts: map[string][]script{"a": {{frags: []string{"o", "k."}, running: []coach.Usage{{PromptTokens: 10, CompletionTokens: 1}, {PromptTokens: 10, CompletionTokens: 2}}}}},
			result:  u(10, 2), committed: u(10, 2), spent: []string{"a"}},
		{name: "the corrective retry's tokens count too",
			scripts: map[string][]script{"a": {{frags: []string{"x"}, usage: u(10, 2)}, {frags: []string{"ok."}, usage: u(12, 3)}}},
			result:  u(12, 3), committed: u(22, 5), spent: []string{"a", "a"}},
		{name: "tokens of the endpoint fallen back from count too",
			scripts: map[string][]script{"a": {{frags: []string{"x"}, usage: u(10, 1)}, {frags: []string{"y"}, usage: u(10, 1)}}, "b": {{frags: []string{"ok."}, usage: u(5, 5)}}},
			result:  u(5, 5), committed: u(25, 7), spent: []string{"a", "a", "b"}},
		{name: "a fallback answer commits the tokens its attempts used",
			fallback:  true,
			scripts:   map[string][]script{"a": {{frags: []string{"x"}, usage: u(4, 1)}, {frags: []string{"y"}, usage: u(4, 1)}}},
			committed: u(8, 2), spent: []string{"a", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ups []coach.Upstream
			for _, n := range []string{"a", "b"} {
				if tt.scripts[n] != nil {
					ups = append(ups, coach.Upstream{Name: n, ModelName: "m-" + n, Model: &fakeModel{scripts: tt.scripts[n]}})
				}
			}
			var c coach.Contract = echoContract{}
			if tt.fallback {
				c = fallbackContract{}
			}
			st := newStoreFake()
			svc := coach.New(coach.Deps{Store: st, Upstreams: ups, Contracts: []coach.Contract{c}, Options: testOptions()})
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatal(err)
			}
			got, rep := runTurn(t, svc, sess.ID)
			last := got[len(got)-1]
			if last.Type != coach.EventResult {
				t.Fatalf("turn ended with %q, want a result", lines(got))
			}
			if !reflect.DeepEqual(last.Usage, tt.result) {
				t.Errorf("result usage = %+v, want %+v", last.Usage, tt.result)
			}
			if usage := st.usages(); len(usage) != 1 || usage[0].Usage != *tt.committed {
				t.Errorf("committed usage = %+v, want one commit with %+v", usage, *tt.committed)
			}
			var spent []string
			for _, s := range rep.Spent {
				spent = append(spent, s.Upstream)
				if s.Model != "m-"+s.Upstream {
					t.Errorf("spent on %s with model %q, want %q", s.Upstream, s.Model, "m-"+s.Upstream)
				}
			}
			if !slices.Equal(spent, tt.spent) {
				t.Errorf("spent on %q, want %q", spent, tt.spent)
			}
		})
	}
}

// cancelOnRetry cancels the turn when it is about to wait before a retry.
type cancelOnRetry struct {
	coach.NopObserver
	cancel context.CancelFunc
}

func (o cancelOnRetry) Retried(string, string) { o.cancel() }

// TestCancelledDuringBackoff checks that a turn that ends while it waits to retry an endpoint
// reports its visit, with what the failed attempt said: a half-open circuit whose probe was
// never reported would let nothing through again.
func TestCancelledDuringBackoff(t *testing.T) {
	server := &coach.ModelError{Class: "server", Retryable: true, Err: errors.New("503")}
	a := &fakeModel{scripts: []script{{openErr: server}, {frags: []string{"ok."}}}}
	br := &fakeBreaker{open: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := testOptions()
	opts.BackoffBase, opts.BackoffMax = time.Minute, time.Minute
	svc := coach.New(coach.Deps{Store: newStoreFake(), Upstreams: []coach.Upstream{{Name: "a", Model: a}}, Breaker: br,
		Contracts: []coach.Contract{echoContract{}}, Options: opts, Observer: cancelOnRetry{cancel: cancel}})
	sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := svc.StartTurn(context.Background(), "", sess.ID, coach.TurnInput{Message: ptr("hi")})
	if err != nil {
		t.Fatal(err)
	}
	rep := run.Run(ctx, coach.EmitFunc(func(coach.Event) error { return nil }))
	if rep.Outcome != "cancelled" || a.calls() != 1 {
		t.Errorf("outcome %q after %d calls, want cancelled after 1", rep.Outcome, a.calls())
	}
	if n := br.unreported(); n != 0 || !slices.Equal(br.reports, []string{"a:failed"}) {
		t.Errorf("%d allowed visits were never reported to the breaker (reports %q, want [a:failed])", n, br.reports)
	}
}
