package reliability_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// TestKilledInstanceTurnIsLost runs two gateways on one Redis: instance 1, a process of its own,
// runs a turn whose model stalls, and a reader follows the turn through instance 2, which
// finds nothing wrong with it for twice COACH_TURN_LOST_AFTER while instance 1 lives. Instance 1
// is then killed with SIGKILL, so nothing of it runs to say goodbye. The reader gets the turn's
// lines, then one turn_lost error line, within COACH_TURN_LOST_AFTER (plus a generous slack for
// a shared machine); a resume after those lines gets the same last line; the turn cannot be
// stopped (404 no_running_turn) and chat/stream has nothing to replay (204), nor for lost turns
// that no reader followed, whose learner message chat/messages no longer shows pending; and once the
// session's lock has expired (COACH_LOCK_TTL, no longer than the bound) a new turn of the
// session through instance 2 is answered.
func TestKilledInstanceTurnIsLost(t *testing.T) {
	const lostAfter, lockTTL = 3 * time.Second, 3 * time.Second
	const slack = 10 * time.Second
	url := redistest.URL(t)
	if url == "" {
		t.Skip("two gateway processes share state only through a real Redis")
	}
	prefix := redistest.Prefix(t, url)
	// A turn whose message says "stall" sends its first text and stalls for good; any other
	// is answered at once.
	responder := fakellm.ResponderFunc(func(req *fakellm.Request) fakellm.Reply {
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "stall") {
			return textFirst("Hello there.", fakellm.Fault{StallAfter: 1, Stall: time.Hour})
		}
		return ok("Noted, go on.")
	})
	_, base := apptest.StartLLM(t, fakellm.Options{Responder: responder})

	addr := closedPort(t)
	one := "http://" + addr
	logs := &apptest.SyncBuffer{}
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{
		gatewayEnv + "=1",
		"PATH=" + os.Getenv("PATH"),
		"COACH_ADDR=" + addr,
		"OPENAI_BASE_URL=" + base,
		"REDIS_URL=" + url,
		"COACH_REDIS_PREFIX=" + prefix,
		"COACH_DATA_DIR=" + t.TempDir(),
		"COACH_TURN_LOST_AFTER=" + lostAfter.String(),
		"COACH_LOCK_TTL=" + lockTTL.String(),
		"COACH_FIRST_BYTE_TIMEOUT=1m", "COACH_IDLE_TIMEOUT=1m", "COACH_TURN_TIMEOUT=2m",
		// The first text must go out before the stall, not wait for its clause's end.
		"COACH_SAFETY_HOLDBACK_CHARS=0",
		"COACH_SAFETY_JUDGE=off",
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() || os.Getenv("SHOWLOG") != "" {
			t.Logf("instance 1's log:\n%s", logs.String())
		}
	})
	waitFor(t, "instance 1 is ready", 20*time.Second, func() bool { return get(one+"/readyz") == http.StatusOK })

	two := apptest.StartWith(t, apptest.Options{
		Prefix: prefix,
		LLM:    fakellm.Options{Responder: responder},
		Config: func(c *config.Config) {
			c.TurnLostAfter, c.LockTTL = lostAfter, lockTTL
			c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = time.Minute, time.Minute, 2*time.Minute
		},
	})
	// Three sessions run a turn on instance 1: id's is followed through instance 2; nobody
	// follows the others', which instance 2 finds lost when asked for chat/stream (replay) and
	// chat/messages (pending) of their sessions.
	id, replayed, pending := two.Create("toulmin", nil).ID, two.Create("toulmin", nil).ID, two.Create("toulmin", nil).ID
	for _, s := range []string{id, replayed, pending} {
		turn, err := apptest.OpenStream(turnURL(one, s), apptest.Msg("Cities should ban cars; stall now."))
		if err != nil {
			t.Fatal(err)
		}
		defer turn.Close()
		if l, err := turn.Next(); err != nil || l.Type != "delta" {
			t.Fatalf("instance 1's turn of %s: first line %+v, %v; want a delta", s, l, err)
		}
	}
	waitFor(t, "chat/messages on instance 2 shows the pending message of a turn on instance 1", 10*time.Second, func() bool {
		return chatMessages(t, two, pending) == 1
	})

	// The turn's log is written in the background: its first line can reach its client before
	// the log names the turn, and a resume finds no turn (204) until it does.
	var reader *readStream
	waitFor(t, "the turn's log names the turn", 10*time.Second, func() bool {
		reader = openRead(t, two.URL+"/v1/sessions/"+id+"/turns/current")
		return reader != nil
	})
	defer reader.Close()
	if l, err := reader.next(); err != nil || l.Type != "delta" {
		t.Fatalf("the reader on instance 2: first line %+v, %v; want a delta", l, err)
	}

	lines := make(chan apptest.Line, 16)
	go func() {
		defer close(lines)
		for {
			l, err := reader.next()
			if err != nil {
				return
			}
			lines <- l
		}
	}()

	// A turn of a live instance is never lost, however long it is silent: the reader checks
	// its instance every quarter of the bound and finds it alive.
	select {
	case l, ok := <-lines:
		t.Fatalf("the reader of a silent turn of a live instance got %q (open: %v), want nothing", l.Raw, ok)
	case <-time.After(2 * lostAfter):
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	killed := time.Now()

	// The reader's stream ends with turn_lost within the bound. A reader of the old gateway got
	// nothing and was closed at the turn's timeout: the stream is closed here at the bound plus
	// the slack, so that such a reader fails the test instead of holding it.
	var rest []apptest.Line
	timeout := time.After(lostAfter + slack)
read:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break read
			}
			rest = append(rest, l)
		case <-timeout:
			reader.Close()
		}
	}
	took := time.Since(killed)
	if len(rest) == 0 || rest[len(rest)-1].Type != "error" || rest[len(rest)-1].Error != coach.CodeTurnLost {
		t.Fatalf("after the kill the reader got %v and its stream ended %v after the kill; want its last line to be an error turn_lost", kinds(rest), took.Round(time.Millisecond))
	}
	if took > lostAfter+slack {
		t.Errorf("the reader got turn_lost %v after the kill, want within COACH_TURN_LOST_AFTER (%v) and %v of slack", took, lostAfter, slack)
	}
	lost := rest[len(rest)-1]
	t.Logf("the reader got turn_lost %v after the kill (COACH_TURN_LOST_AFTER=%v): %s", took.Round(time.Millisecond), lostAfter, lost.Raw)

	// The lost line is numbered after the turn's lines: a resume after them gets it alone.
	n := len(rest) // the delta read before the kill, and the lines after it but the last
	var resumed []apptest.Line
	if again := openRead(t, fmt.Sprintf("%s/v1/sessions/%s/turns/current?after=%d", two.URL, id, n)); again != nil {
		resumed = again.all()
	}
	if len(resumed) != 1 || resumed[0].Raw != lost.Raw {
		t.Errorf("a resume after %d lines got %v, want the turn_lost line alone", n, kinds(resumed))
	}

	var body struct{ Error string }
	if code := two.Call(http.MethodDelete, "/v1/sessions/"+id+"/turns/current", nil, &body); code != http.StatusNotFound || body.Error != "no_running_turn" {
		t.Errorf("DELETE …/turns/current of the lost turn = %d %q, want 404 no_running_turn", code, body.Error)
	}
	if code := get(two.URL + "/v1/sessions/" + id + "/chat/stream"); code != http.StatusNoContent {
		t.Errorf("GET …/chat/stream of the lost turn = %d, want 204", code)
	}
	// The turns nobody followed are found lost as they are asked for.
	if code := get(two.URL + "/v1/sessions/" + replayed + "/chat/stream"); code != http.StatusNoContent {
		t.Errorf("GET …/chat/stream of a lost turn nobody followed = %d, want 204", code)
	}
	if n := chatMessages(t, two, pending); n != 0 {
		t.Errorf("GET …/chat/messages of a session whose turn was lost shows %d messages, want none pending", n)
	}

	// The lock of the dead instance's turn expires LockTTL after its last renewal, which was
	// before the kill; until then a new turn is 409 session_busy.
	var next apptest.TurnResponse
	for {
		next = two.Turn(id, apptest.Msg("Cities should ban private cars to cut air pollution."))
		if next.Status != http.StatusConflict || time.Since(killed) > lockTTL+slack {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if next.Status != http.StatusOK || next.Last().Type != "result" {
		t.Fatalf("a new turn %v after the kill: %d %s %s; want its result", time.Since(killed).Round(time.Millisecond), next.Status, next.Kinds(), next.Body)
	}
	t.Logf("a new turn of the session was answered %v after the kill (COACH_LOCK_TTL=%v)", time.Since(killed).Round(time.Millisecond), lockTTL)
}

// chatMessages returns how many messages GET …/chat/messages of session id shows.
func chatMessages(t *testing.T, g *apptest.Gateway, id string) int {
	t.Helper()
	var page struct{ Messages []json.RawMessage }
	if code := g.Call(http.MethodGet, "/v1/sessions/"+id+"/chat/messages", nil, &page); code != http.StatusOK {
		t.Fatalf("GET …/chat/messages: %d", code)
	}
	return len(page.Messages)
}

// readStream is an NDJSON answer to a GET, read line by line.
type readStream struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
}

// openRead GETs url and expects an NDJSON stream; it returns nil for a 204 (no turn).
func openRead(t *testing.T, url string) *readStream {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s = %d %s, want 200 and a stream", url, resp.StatusCode, b)
	}
	return &readStream{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next line, or io.EOF after the last.
func (r *readStream) next() (apptest.Line, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return apptest.Line{}, err
		}
		return apptest.Line{}, io.EOF
	}
	var l apptest.Line
	if err := json.Unmarshal(r.sc.Bytes(), &l); err != nil {
		return apptest.Line{}, fmt.Errorf("line %q is not JSON: %w", r.sc.Text(), err)
	}
	l.Raw = r.sc.Text()
	return l, nil
}

// all reads the stream to its end.
func (r *readStream) all() []apptest.Line {
	defer r.Close()
	var lines []apptest.Line
	for {
		l, err := r.next()
		if err != nil {
			return lines
		}
		lines = append(lines, l)
	}
}

func (r *readStream) Close() { r.resp.Body.Close() }

// kinds renders lines as apptest.TurnResponse.Kinds does.
func kinds(lines []apptest.Line) string { return apptest.TurnResponse{Lines: lines}.Kinds() }

// TestInstanceLeavesAtShutdown checks an instance's liveness key: one per instance, living two
// thirds of COACH_TURN_LOST_AFTER at a time and kept alive while the instance runs, and gone
// as soon as it has shut down gracefully, so that a turn it could not finish is found lost at
// once rather than at the key's expiry.
func TestInstanceLeavesAtShutdown(t *testing.T) {
	const lostAfter = 3 * time.Second
	url := redistest.URL(t)
	c := redisClient(t, url)
	prefix := redistest.Prefix(t, url)
	ctx := context.Background()
	keys := func() []string {
		t.Helper()
		k, err := c.Keys(ctx, prefix+":inst:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	g := apptest.StartWith(t, apptest.Options{Prefix: prefix, Config: func(c *config.Config) { c.TurnLostAfter = lostAfter }})
	k := keys()
	if len(k) != 1 {
		t.Fatalf("liveness keys of one instance: %v, want one", k)
	}
	// Past its first life, the key is still there: the instance refreshed it.
	time.Sleep(lostAfter)
	if ttl, err := c.PTTL(ctx, k[0]).Result(); err != nil || ttl <= 0 || ttl > lostAfter*2/3 {
		t.Errorf("PTTL %s after %v = %v, %v; want it kept alive, at most %v ahead", k[0], lostAfter, ttl, err, lostAfter*2/3)
	}
	g.Stop()
	if k := keys(); len(k) != 0 {
		t.Errorf("liveness keys after a graceful shutdown: %v, want none", k)
	}
}
