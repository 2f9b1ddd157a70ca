package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// TestSIGTERMDrainsOpenStreams runs the real binary with 100 streams open and sends it SIGTERM:
// readiness fails and new turns are refused at once, the streams whose answer completes within
// the drain window end with their result, the others with one shutting_down error line by the
// deadline, nothing half-done is stored, and the process exits 0.
func TestSIGTERMDrainsOpenStreams(t *testing.T) {
	const streams = 100
	// shutdown is the drain window the gateway is configured with; the odd streams' pause (below)
	// ends well inside it, so that their answers complete and are stored even when a loaded
	// machine is slow to relay and store them.
	const shutdown = 6 * time.Second
	// slack is how much later than the drain window the streams may end and the process may
	// exit. What follows the deadline (an error line to each stream still open, closing the
	// store, exiting) takes milliseconds on an idle machine and may take seconds on a loaded one
	// running -race and a browser beside this test; the even streams stall for an hour, so a
	// gateway that waited for them, or never enforced its deadline, still fails.
	const slack = 10 * time.Second
	bin := filepath.Join(t.TempDir(), "coachgw")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/coachgw/coachgw/cmd/coachgw").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// Odd streams pause after their first text and complete while the gateway drains (the pause
	// outlasts the opening of the other streams on a loaded machine, so that they are still
	// open at SIGTERM); even ones stall until the gateway gives up on them.
	_, base, stopLLM, err := fakellm.Start(fakellm.Options{Responder: fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
		stall := time.Hour
		if strings.HasSuffix(req.Messages[len(req.Messages)-1].Content, "odd") {
			stall = 2 * time.Second
		}
		return textFirst("Hello there.", fakellm.Fault{StallAfter: 1, Stall: stall})
	})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopLLM)

	redisURL := redistest.URL(t)
	if redisURL == "" {
		t.Skip("the check that nothing was stored reads a real Redis")
	}
	prefix := redistest.Prefix(t, redisURL)
	addr := closedPort(t)
	url := "http://" + addr
	logs := &apptest.SyncBuffer{}
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"COACH_ADDR=" + addr,
		"OPENAI_BASE_URL=" + base,
		"REDIS_URL=" + redisURL,
		"COACH_REDIS_PREFIX=" + prefix,
		"COACH_SHUTDOWN_TIMEOUT=" + shutdown.String(),
		"COACH_FIRST_BYTE_TIMEOUT=1m", "COACH_IDLE_TIMEOUT=1m", "COACH_TURN_TIMEOUT=2m",
		// The streams stall mid-clause after their first text, which the safety window would
		// hold back (it waits for a clause end); the drain is about streams with text out.
		"COACH_SAFETY_HOLDBACK_CHARS=0",
		// 100 streams from one address, more than its default share of connections.
		"COACH_MAX_CONNS_PER_CLIENT=0",
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() || os.Getenv("SHOWLOG") != "" {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	waitFor(t, "the gateway is ready", 10*time.Second, func() bool { return get(url+"/readyz") == http.StatusOK })

	create := func() string {
		st, err := apptest.OpenStream(url+"/v1/sessions", map[string]string{"contract": "toulmin"})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := st.Rest()
		if err != nil || tr.Status != http.StatusCreated {
			t.Fatalf("creating a session: %d %s %v", tr.Status, tr.Body, err)
		}
		var s apptest.Session
		if err := json.Unmarshal([]byte(tr.Body), &s); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	ids := make([]string, streams)
	for i := range ids {
		ids[i] = create()
	}
	spare := create()

	// Open every stream and wait for its first delta.
	open := make([]*apptest.Stream, streams)
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kind := "even"
			if i%2 == 1 {
				kind = "odd"
			}
			st, err := apptest.OpenStream(turnURL(url, ids[i]), apptest.Msg(fmt.Sprintf("stream %d %s", i, kind)))
			if err != nil {
				errs <- err
				return
			}
			open[i] = st
			if l, err := st.Next(); err != nil || l.Type != "delta" {
				errs <- fmt.Errorf("stream %d: first line %+v, %v; want a delta", i, l, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	// Not ready: 503, or no connection at all once the listener is closed. Within half the drain
	// window: a gateway that stayed ready until it exited would stop answering only at the end.
	waitFor(t, "/readyz stops answering 200", shutdown/2, func() bool { return get(url+"/readyz") != http.StatusOK })
	if st, err := apptest.OpenStream(turnURL(url, spare), apptest.Msg("too late")); err == nil {
		tr, _ := st.Rest()
		if tr.Status != http.StatusServiceUnavailable || errorCode(tr.Body) != coach.CodeShuttingDown {
			t.Errorf("a new turn during the drain: %d %s, want 503 shutting_down or a refused connection", tr.Status, tr.Body)
		}
	}

	ends := map[string]int{}
	var ended sync.WaitGroup
	var mu sync.Mutex
	for i, st := range open {
		ended.Add(1)
		go func() {
			defer ended.Done()
			tr, err := st.Rest()
			took := time.Since(signalled)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			tr.CheckEnding(t)
			last := tr.Last()
			end := last.Type
			if end == "error" {
				end += ":" + last.Error
			}
			ends[end]++
			want := "error:" + coach.CodeShuttingDown
			if i%2 == 1 {
				want = "result"
			}
			if end != want {
				t.Errorf("stream %d ends with %s, want %s", i, last.Raw, want)
			}
			if took > shutdown+slack {
				t.Errorf("stream %d ended %v after SIGTERM, want within the %v shutdown timeout and %v of slack", i, took, shutdown, slack)
			}
		}()
	}
	ended.Wait()

	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the gateway exited with %v, want status 0", err)
		}
		if took := time.Since(signalled); took > shutdown+slack {
			t.Errorf("the gateway exited %v after SIGTERM, want within its %v shutdown timeout and %v of slack", took, shutdown, slack)
		}
		t.Logf("%d streams ended %v; the process exited %v after SIGTERM", streams, ends, time.Since(signalled).Round(time.Millisecond))
	case <-time.After(shutdown + slack):
		t.Fatalf("the gateway still runs %v after SIGTERM, want it gone within its %v shutdown timeout and %v of slack", time.Since(signalled), shutdown, slack)
	}

	// A turn cut off by the drain stored nothing; one that completed is stored whole.
	store := redisstore.New(redisClient(t, redisURL), redisstore.Options{Prefix: prefix})
	for i, id := range ids {
		sess, err := store.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if want := i % 2; sess.Version != int64(1+want) || len(sess.History) != 2*want {
			t.Errorf("session of stream %d: version %d with %d history messages, want version %d with %d", i, sess.Version, len(sess.History), 1+want, 2*want)
		}
	}
}
