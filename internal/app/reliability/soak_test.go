package reliability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
	"github.com/coachgw/coachgw/internal/replay"
)

var soak = flag.Duration("soak", 5*time.Second, "how long TestSoak drives traffic, e.g. -soak=2m")

// faults are what the soak injects into 5% of the model's answers: every fault of the matrix
// that a single answer can carry. The drip is scaled down so that a turn still fits its deadline.
var faults = []struct {
	name  string
	apply func(rep *fakellm.Reply, rng *rand.Rand)
}{
	{"429", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{Status: 429, RetryAfter: "0.05"} }},
	{"500", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{Status: 500} }},
	{"502", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{Status: 502} }},
	{"503", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{Status: 503} }},
	{"refuse", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{Refuse: true} }},
	{"first_byte", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{FirstByteDelay: 5 * time.Second} }},
	{"stall", func(r *fakellm.Reply, rng *rand.Rand) {
		r.Fault = fakellm.Fault{StallAfter: rng.IntN(8), Stall: 5 * time.Second}
	}},
	{"cut", func(r *fakellm.Reply, rng *rand.Rand) { r.Fault = fakellm.Fault{Cut: true, CutAfter: rng.IntN(12)} }},
	{"malformed", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{MalformedSSE: true} }},
	{"long_line_70k", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{LongLine: 70000} }},
	{"long_line_2m", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{LongLine: 2 << 20} }},
	{"drip", func(r *fakellm.Reply, _ *rand.Rand) { r.Fault = fakellm.Fault{Drip: 20 * time.Microsecond} }},
	{"truncated_json", func(r *fakellm.Reply, _ *rand.Rand) {
		if r.ToolCall != nil {
			r.ToolCall.Arguments = r.ToolCall.Arguments[:len(r.ToolCall.Arguments)/2]
		} else {
			r.Content = r.Content[:len(r.Content)/2]
		}
	}},
	{"schema_invalid", func(r *fakellm.Reply, _ *rand.Rand) {
		if r.ToolCall != nil {
			r.ToolCall.Arguments = `{"card_type":"nonsense"}`
		} else {
			r.Content = `{"unexpected":true}`
		}
	}},
}

// faulty wraps a Responder and spoils a share of its answers with a random fault.
type faulty struct {
	next fakellm.Responder
	rate float64

	mu       sync.Mutex
	rng      *rand.Rand
	answers  int
	injected map[string]int
}

func (f *faulty) Respond(req *fakellm.Request) fakellm.Reply {
	rep := f.next.Respond(req)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers++
	if f.rng.Float64() >= f.rate {
		return rep
	}
	if rep.ToolCall != nil {
		tc := *rep.ToolCall
		rep.ToolCall = &tc
	}
	fault := faults[f.rng.IntN(len(faults))]
	fault.apply(&rep, f.rng)
	f.injected[fault.name]++
	return rep
}

// warnings keeps the first warning and error lines of the gateway's log and drops the rest, so
// that a long soak holds no log in memory.
type warnings struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *warnings) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"error"`)) || bytes.Contains(p, []byte(`"level":"warn"`)) {
		w.mu.Lock()
		if w.b.Len() < 256<<10 {
			w.b.Write(p)
		}
		w.mu.Unlock()
	}
	return len(p), nil
}

// soakSession is one client's session and what happened to its turns.
type soakSession struct {
	contract string
	id       string
	// state is the session's state after its last stored turn.
	state   json.RawMessage
	results int
	// problems lists streams that did not end with exactly one result or error line, and
	// answers that were not streams.
	problems []string
	errors   map[string]int
	resets   int
	times    []time.Duration
}

// input returns the next turn's body: what the session's last card asks for (cards), or a
// message.
func (s *soakSession) input(n int) map[string]string {
	switch s.contract {
	case "cards":
		var st struct {
			LastCard *struct {
				Type    string `json:"type"`
				Options []struct {
					ID string `json:"id"`
				} `json:"options"`
			} `json:"lastCard"`
		}
		_ = json.Unmarshal(s.state, &st)
		switch {
		case st.LastCard == nil:
			return apptest.Msg("Begin training.")
		case st.LastCard.Type == "multiple_choice" && len(st.LastCard.Options) > 0:
			return map[string]string{"selected": st.LastCard.Options[n%len(st.LastCard.Options)].ID}
		case st.LastCard.Type == "prompt" || st.LastCard.Type == "reflection":
			return apptest.Msg("I would listen first, then agree on one next step together.")
		default:
			return apptest.Msg("[Continue]")
		}
	case "module":
		return apptest.Msg([]string{"I get anxious before I speak in meetings.", "My heart races and I breathe fast.", "What can I do right before a talk?"}[n%3])
	default:
		return apptest.Msg([]string{"Cities should ban private cars from their centres.", "Because traffic pollutes the air people breathe.", "Why does that matter?"}[n%3])
	}
}

// turn takes one turn and records how it ended.
func (s *soakSession) turn(base string, n int) {
	start := time.Now()
	st, err := apptest.OpenStream(turnURL(base, s.id), s.input(n))
	if err != nil {
		s.problems = append(s.problems, err.Error())
		return
	}
	tr, err := st.Rest()
	s.times = append(s.times, time.Since(start))
	switch {
	case err != nil:
		s.problems = append(s.problems, err.Error())
		return
	case tr.Status != http.StatusOK:
		s.problems = append(s.problems, fmt.Sprintf("status %d: %s", tr.Status, tr.Body))
		return
	}
	ends := 0
	for _, l := range tr.Lines {
		switch l.Type {
		case "result", "error":
			ends++
		case "reset":
			s.resets++
		}
	}
	last := tr.Last()
	if ends != 1 || last.Type != "result" && last.Type != "error" {
		s.problems = append(s.problems, "stream "+tr.Kinds())
		return
	}
	if last.Type == "error" {
		s.errors[last.Error]++
		return
	}
	s.results++
	s.state = last.Session.State
}

// TestSoak runs 200 sessions of all three contracts concurrently for -soak (5 s by default)
// against the replay model with 5% of its answers spoilt by a random fault, then checks that
// every stream ended with exactly one result or error line, that every session's stored version
// counts exactly its results, and that goroutines and heap are back to their baseline. Run a
// long one with
//
//	go test -run Soak -v ./internal/app/reliability -soak=2m
//
// (the flag after the package) and read its figures in the log.
func TestSoak(t *testing.T) {
	const sessions, faultRate = 200, 0.05
	rdb := redisClient(t, redistest.URL(t))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	baseGoroutines := runtime.NumGoroutine()

	inject := &faulty{next: replay.Responder(), rate: faultRate, rng: rand.New(rand.NewPCG(1, 2)), injected: map[string]int{}}
	logs := &warnings{}
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{Responder: inject, RequestLog: -1, ChunkMin: 8, ChunkMax: 48, DelayMax: 2 * time.Millisecond},
		Log: logs,
		Config: func(c *config.Config) {
			// Generous for a loaded machine (CI runs this with -race): only injected faults
			// should trip them.
			c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 2*time.Second, 2*time.Second, 20*time.Second
			c.RetryAfterCap, c.MaxAttempts = 200*time.Millisecond, 3
			// Its sessions are all created at once, from one address.
			c.SessionRateLimit = 0
			// 200 sessions at once on a loaded machine can keep a Redis reply waiting for
			// its goroutine past the 1 s default: a bound for a Redis that stopped answering
			// (tested in TestPausedRedisAnswered), not for a busy test.
			c.RedisTimeout = 10 * time.Second
		},
	})
	prefix := g.Config.RedisPrefix

	// One kept-alive connection per client, as real clients keep them: dialing anew for each
	// turn would measure the test's connection churn rather than the gateway.
	tr := http.DefaultTransport.(*http.Transport)
	idle := tr.MaxIdleConnsPerHost
	tr.MaxIdleConnsPerHost = sessions
	defer func() { tr.MaxIdleConnsPerHost = idle }()

	ss := make([]*soakSession, sessions)
	for i := range ss {
		c := contracts[i%len(contracts)]
		ss[i] = &soakSession{contract: c.name, id: g.Create(c.name, c.extra).ID, errors: map[string]int{}}
	}
	start := time.Now()
	deadline := start.Add(*soak)
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				s.turn(g.URL, n)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	turns, results, resets := 0, 0, 0
	errs := map[string]int{}
	var times []time.Duration
	store := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	for _, s := range ss {
		for _, p := range s.problems {
			t.Errorf("%s session %s: %s", s.contract, s.id, p)
		}
		turns += len(s.times)
		results += s.results
		resets += s.resets
		times = append(times, s.times...)
		for code, n := range s.errors {
			errs[code] += n
		}
		sess, err := store.Get(context.Background(), "", s.id)
		if err != nil {
			t.Fatalf("reading session %s: %v", s.id, err)
		}
		if sess.Version != int64(1+s.results) {
			t.Errorf("%s session %s: stored version %d, want 1 + %d results", s.contract, s.id, sess.Version, s.results)
		}
	}

	// Closing the clients' connections first lets the gateway stop at once: net/http waits up
	// to 5 s for a connection that never carried a request.
	stopping := time.Now()
	tr.CloseIdleConnections()
	g.Stop()
	var afterGoroutines int
	settled := waitUntil(10*time.Second, func() bool {
		afterGoroutines = runtime.NumGoroutine()
		return afterGoroutines <= baseGoroutines+2
	})
	if !settled {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, still %d after the soak\n%s", baseGoroutines, afterGoroutines, buf[:runtime.Stack(buf, true)])
	}
	settle := time.Since(stopping)
	runtime.GC()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	const heapSlack = 16 << 20
	if after.HeapAlloc > before.HeapAlloc+heapSlack {
		t.Errorf("heap: %d MiB before, %d MiB after the soak, want within %d MiB", before.HeapAlloc>>20, after.HeapAlloc>>20, heapSlack>>20)
	}

	slices.Sort(times)
	pct := func(p float64) time.Duration {
		if len(times) == 0 {
			return 0
		}
		return times[min(len(times)-1, int(p*float64(len(times))))].Round(time.Millisecond)
	}
	inject.mu.Lock()
	injected := 0
	for _, n := range inject.injected {
		injected += n
	}
	t.Logf("soak %v: %d sessions (toulmin, cards, module), %d turns (%.0f/s), %d results, %d errors %s, %d resets",
		elapsed.Round(time.Millisecond), sessions, turns, float64(turns)/elapsed.Seconds(), results, turns-results, counts(errs), resets)
	t.Logf("model answers %d, faults injected %d (%.1f%%): %s", inject.answers, injected, 100*float64(injected)/float64(max(inject.answers, 1)), counts(inject.injected))
	inject.mu.Unlock()
	t.Logf("turn time p50 %v, p99 %v, max %v", pct(0.50), pct(0.99), pct(1))
	t.Logf("goroutines %d before, %d after (%v after the gateway stopped); heap %.1f MiB before, %.1f MiB after",
		baseGoroutines, afterGoroutines, settle.Round(time.Millisecond), float64(before.HeapAlloc)/(1<<20), float64(after.HeapAlloc)/(1<<20))
	if t.Failed() {
		t.Logf("gateway warnings:\n%s", logs.b.String())
	}
}

// waitUntil polls cond every 10 ms for up to d and reports whether it came to hold.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// counts renders a map of counts as "a=1 b=2", sorted by key.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m[k])
	}
	return "{" + strings.TrimSpace(b.String()) + "}"
}
