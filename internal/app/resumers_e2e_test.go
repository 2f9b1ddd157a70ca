package app_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// Keys of the resumers test: one for each of two tenants.
const (
	resumerKeyA = "sk-resumers-a-41d7"
	resumerKeyB = "sk-resumers-b-9e02"
)

// keyed sends a request with key and returns the answer, its body read whole.
func keyed(key, method, url string, body any) (int, string, http.Header, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}

// lastLine returns the last NDJSON line of body, decoded.
func lastLine(body string) apptest.Line {
	var last apptest.Line
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		last = apptest.Line{}
		_ = json.Unmarshal(sc.Bytes(), &last)
		last.Raw = sc.Text()
	}
	return last
}

// TestResumersOfOneTurnCannotStarveOthers is the attack of a crowd of resumers on one slow turn,
// with the store's Redis pool as small as 20 connections: tenant A runs a turn of several
// seconds and 50 resumers of it connect at once. At most COACH_MAX_READERS_PER_TURN (8) are
// served, all fed by the turn's one reader on connections of its own, and the rest get 429
// too_many_readers. Meanwhile tenant B creates sessions, reads them and runs turns, and
// /readyz answers 200 throughout; A's turn ends with its result, and every served resumer gets
// the very lines of the turn's own stream. When every resumer held a blocking read of the
// store's pool, 20 of them took every connection: B got 503, /readyz 503, and A's turn lost its
// lock (version_conflict).
func TestResumersOfOneTurnCannotStarveOthers(t *testing.T) {
	const (
		resumers = 50
		maxRead  = 8
		// The model pauses delay before each chunk: A's turn of words words takes about
		// words*delay, each read of its log blocks most of a delay, and B's turns (three
		// chunks each) a few delays.
		words = 8
		delay = time.Second
	)
	g := apptest.StartWith(t, apptest.Options{
		LLM: fakellm.Options{DelayMin: delay, DelayMax: delay},
		Config: func(c *config.Config) {
			if c.RedisURL != "" {
				sep := "?"
				if strings.Contains(c.RedisURL, "?") {
					sep = "&"
				}
				c.RedisURL += sep + "pool_size=20"
			}
			c.APIKeys = []config.APIKey{
				{Tenant: "acme", Hash: sha256.Sum256([]byte(resumerKeyA))},
				{Tenant: "beta", Hash: sha256.Sum256([]byte(resumerKeyB))},
			}
			c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 30*time.Second, 30*time.Second, time.Minute
			if c.MaxReadersPerTurn != maxRead {
				t.Fatalf("COACH_MAX_READERS_PER_TURN defaults to %d, this test is about %d", c.MaxReadersPerTurn, maxRead)
			}
		},
	})
	create := func(key string) (string, error) {
		code, body, _, err := keyed(key, "POST", g.URL+"/v1/sessions", map[string]string{"contract": "toulmin"})
		if err != nil {
			return "", err
		}
		if code != http.StatusCreated {
			return "", fmt.Errorf("creating a session: %d %s", code, body)
		}
		var s apptest.Session
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			return "", err
		}
		return s.ID, nil
	}
	sessionA, err := create(resumerKeyA)
	if err != nil {
		t.Fatal(err)
	}
	g.LLM.Enqueue(slowReply(strings.Repeat("slowly ", words)))
	const turnsB = 2
	for range turnsB {
		g.LLM.Enqueue(slowReply("Agreed."))
	}

	// A's turn, read whole by its own client.
	type turnResult struct {
		status int
		body   string
		turn   string
		err    error
	}
	turnA := make(chan turnResult, 1)
	go func() {
		code, body, h, err := keyed(resumerKeyA, "POST", g.URL+"/v1/sessions/"+sessionA+"/turns", apptest.Msg("Cities should ban cars."))
		turnA <- turnResult{code, body, h.Get("X-Coach-Turn"), err}
	}()
	apptest.Eventually(t, "A's turn is running", func() bool { return g.LLM.Open() == 1 })
	// Its first lines out, as a crowd would find it.
	time.Sleep(delay + delay/2)
	started := time.Now()

	// The crowd: 50 resumers of A's turn at once, from the turn's first line.
	type resumed struct {
		status int
		body   string
		header http.Header
		err    error
	}
	crowd := make(chan resumed, resumers)
	var gate sync.WaitGroup
	gate.Add(1)
	for range resumers {
		go func() {
			gate.Wait()
			code, body, h, err := keyed(resumerKeyA, "GET", g.URL+"/v1/sessions/"+sessionA+"/turns/current", nil)
			crowd <- resumed{code, body, h, err}
		}()
	}
	gate.Done()

	// Meanwhile, tenant B and the load balancer.
	var readyChecks, readyFailures atomic.Int64
	stopReady := make(chan struct{})
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		for {
			select {
			case <-stopReady:
				return
			case <-time.After(100 * time.Millisecond):
			}
			resp, err := http.Get(g.URL + "/readyz")
			readyChecks.Add(1)
			if err != nil {
				readyFailures.Add(1)
				continue
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				readyFailures.Add(1)
			}
		}
	}()
	var slowestB time.Duration
	for i := range turnsB {
		t0 := time.Now()
		id, err := create(resumerKeyB)
		if err != nil {
			t.Errorf("tenant B's session %d while A's turn is resumed: %v", i+1, err)
			continue
		}
		if code, body, _, err := keyed(resumerKeyB, "GET", g.URL+"/v1/sessions/"+id, nil); err != nil || code != http.StatusOK {
			t.Errorf("tenant B's read of its session %d: %d %s %v, want 200", i+1, code, body, err)
		}
		code, body, _, err := keyed(resumerKeyB, "POST", g.URL+"/v1/sessions/"+id+"/turns", apptest.Msg("Cities should ban cars."))
		if l := lastLine(body); err != nil || code != http.StatusOK || l.Type != "result" {
			t.Errorf("tenant B's turn %d: %d, last line %s, %v; want 200 and its result", i+1, code, l.Raw, err)
		}
		slowestB = max(slowestB, time.Since(t0))
	}
	bDone := time.Since(started)

	a := <-turnA
	close(stopReady)
	<-readyDone
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("A's turn: %d %v", a.status, a.err)
	}
	if l := lastLine(a.body); l.Type != "result" {
		t.Errorf("A's turn ended with %s, want its result (a starved lock renewal ends it with version_conflict)", l.Raw)
	}
	served, refused := 0, 0
	for range resumers {
		r := <-crowd
		switch {
		case r.err != nil:
			t.Errorf("a resumer: %v", r.err)
		case r.status == http.StatusOK:
			served++
			if r.body != a.body {
				t.Errorf("a served resumer got\n%s\nwant the turn's own lines\n%s", r.body, a.body)
			}
		case r.status == http.StatusTooManyRequests && strings.Contains(r.body, `"error":"too_many_readers"`):
			refused++
			if got := r.header.Get("Retry-After"); got != "5" {
				t.Errorf("a refused resumer's Retry-After = %q, want 5", got)
			}
		default:
			t.Errorf("a resumer got %d %s, want 200 or 429 too_many_readers", r.status, r.body)
		}
	}
	t.Logf("%d resumers of one turn: %d served, %d refused 429; tenant B's %d sessions and turns done %v into it (slowest create+read+turn %v); /readyz %d/%d failed",
		resumers, served, refused, turnsB, bDone.Round(time.Millisecond), slowestB.Round(time.Millisecond), readyFailures.Load(), readyChecks.Load())
	if served == 0 || served > maxRead {
		t.Errorf("%d resumers served at once, want between 1 and %d", served, maxRead)
	}
	if served+refused != resumers {
		t.Errorf("%d served and %d refused of %d resumers", served, refused, resumers)
	}
	if n := readyFailures.Load(); n > 0 {
		t.Errorf("/readyz failed %d of %d times while the turn was resumed, want never", n, readyChecks.Load())
	}
}

// slowReply is a toulmin answer of text streamed a word per chunk.
func slowReply(text string) fakellm.Reply {
	chunks := []string{`{"assistantText":"`}
	for _, w := range strings.SplitAfter(text, " ") {
		if w != "" {
			chunks = append(chunks, w)
		}
	}
	chunks = append(chunks, `","step":"claim"}`)
	return fakellm.Reply{Chunks: chunks}
}
