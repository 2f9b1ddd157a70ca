// Package reliability_test proves, by injecting each fault, that coachgw survives what breaks
// other gateways: a model endpoint that fails, stalls, cuts or garbles its stream; clients that
// leave; a Redis that goes away and comes back; gateways that die holding a lock or race each
// other on one Redis; a SIGTERM with streams open; and hours of mixed traffic (TestSoak).
package reliability_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// quiet drops go-redis's own log lines: the tests that stop Redis on purpose would fill the
// output with its dial errors.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// answer is the toulmin model output of a successful attempt; its assistantText is text.
func answer(text string) string { return apptest.Obj("assistantText", text, "step", "claim") }

// textFirst scripts answer(text) so that its first event already carries visible text ("Hel…"),
// and plays f from the second event on: the fault lands after a delta went out.
func textFirst(text string, f fakellm.Fault) fakellm.Reply {
	return fakellm.Reply{Chunks: []string{`{"assistantText":"` + text[:3], text[3:] + `",`, `"step":"claim"}`}, Fault: f}
}

// textLast scripts answer(text) so that three events without visible text come first, and
// plays f from the second event on: the fault lands before any delta.
func textLast(text string, f fakellm.Fault) fakellm.Reply {
	return fakellm.Reply{Chunks: []string{`{"step":`, `"claim",`, `"confidence":0.5,`, `"assistantText":"` + text + `"}`}, Fault: f}
}

// ok is a plain successful answer.
func ok(text string) fakellm.Reply { return fakellm.Reply{Content: answer(text)} }

// waitFor polls cond every millisecond until it holds or within passes, and returns how long
// it took; it fails the test on timeout.
func waitFor(t testing.TB, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("timed out after %v waiting until %s", within, what)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// redisClient returns a client of the gateway's Redis, or skips when it runs on the embedded one.
func redisClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	if url == "" {
		t.Skip("no real Redis reachable; the gateway runs on its embedded one")
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// docKey and lockKey are the Redis keys of session id (see internal/redisstore).
func docKey(prefix, id string) string  { return prefix + ":{" + id + "}:s" }
func lockKey(prefix, id string) string { return prefix + ":{" + id + "}:lock" }

// rawDoc returns the stored session document of id exactly as Redis holds it.
func rawDoc(t testing.TB, c *redis.Client, prefix, id string) string {
	t.Helper()
	doc, err := c.Get(context.Background(), docKey(prefix, id)).Result()
	if err != nil {
		t.Fatalf("reading the session document: %v", err)
	}
	return doc
}

// errorBody reads the code of a JSON error answer.
func errorCode(body string) string {
	const key = `"error":"`
	i := strings.Index(body, key)
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	return rest[:max(strings.IndexByte(rest, '"'), 0)]
}

// turnURL is the turn route of session id on the gateway at base.
func turnURL(base, id string) string { return base + "/v1/sessions/" + id + "/turns" }

// get answers GET url with its status, or 0 when the connection failed.
func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
