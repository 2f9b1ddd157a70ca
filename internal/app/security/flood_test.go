package security_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// clientFrom returns an HTTP client whose connections come from the loopback address local
// (any of 127.0.0.0/8 on Linux), so that one test can play several client addresses. It skips
// the test where local is not an address of this machine (macOS has only 127.0.0.1).
func clientFrom(t *testing.T, local string) *http.Client {
	t.Helper()
	ln, err := net.Listen("tcp", local+":0")
	if err != nil {
		t.Skipf("%s is not an address of this machine: %v", local, err)
	}
	_ = ln.Close()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// createAs posts a new session with client c (and key as bearer token when set) and returns the
// status and the error code of the answer.
func createAs(t *testing.T, c *http.Client, g *apptest.Gateway, key string) (int, string, http.Header) {
	t.Helper()
	return createFor(t, c, g, key, "")
}

// createFor is createAs for a session of learner reference learner ("" for none).
func createFor(t *testing.T, c *http.Client, g *apptest.Gateway, key, learner string) (int, string, http.Header) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"contract": "toulmin", "learner": learner})
	if learner == "" {
		body = []byte(`{"contract":"toulmin"}`)
	}
	req, err := http.NewRequest("POST", g.URL+"/v1/sessions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var b struct{ Error string }
	_ = json.Unmarshal(raw, &b)
	return resp.StatusCode, b.Error, resp.Header
}

// TestSessionFloodBounded floods session creation from one client, as the attacker who made
// 100k sessions in 21 s did: past the limit it gets 429 session_rate_limited with Retry-After,
// while another client (another address without API keys; with them another tenant, another
// key of the same tenant, or another learner reference under the same key) still creates its
// sessions, and the flooder's turns are not what is limited.
func TestSessionFloodBounded(t *testing.T) {
	const limit = 5
	tests := []struct {
		name                     string
		keys                     bool
		flooder, other           string // local addresses
		flooderKey, oKey         string
		flooderLearner, oLearner string
	}{
		{name: "per address without API keys", flooder: "127.0.0.2", other: "127.0.0.3"},
		{name: "per tenant with API keys, from one address", keys: true, flooder: "127.0.0.2", other: "127.0.0.2", flooderKey: keyAcme, oKey: keyBeta},
		{name: "per key within a tenant", keys: true, flooder: "127.0.0.2", other: "127.0.0.2", flooderKey: keyAcme, oKey: keyAcme2},
		{name: "per learner reference within a key", keys: true, flooder: "127.0.0.2", other: "127.0.0.2",
			flooderKey: keyAcme, oKey: keyAcme, flooderLearner: "learner-flood", oLearner: "learner-calm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := apptest.Start(t, func(c *config.Config) {
				c.SessionRateLimit = limit
				if tt.keys {
					withKeys(c)
				}
			})
			flooder, other := clientFrom(t, tt.flooder), clientFrom(t, tt.other)
			created, refused := 0, 0
			for range 4 * limit {
				status, code, h := createFor(t, flooder, g, tt.flooderKey, tt.flooderLearner)
				switch status {
				case http.StatusCreated:
					created++
				case http.StatusTooManyRequests:
					refused++
					if secs, err := strconv.Atoi(h.Get("Retry-After")); code != "session_rate_limited" || err != nil || secs < 1 || secs > 60 {
						t.Fatalf("429 with code %q and Retry-After %q; want session_rate_limited and 1..60 s", code, h.Get("Retry-After"))
					}
				default:
					t.Fatalf("flooder's session: status %d (%s)", status, code)
				}
			}
			// A burst of the limit goes through; a new one comes back every 60/limit s, which
			// a slow machine may reach once during the burst.
			if created < limit || created > limit+1 || refused == 0 {
				t.Errorf("flooder: %d created, %d refused; want about %d created and the rest refused", created, refused, limit)
			}
			for i := range limit {
				if status, code, _ := createFor(t, other, g, tt.oKey, tt.oLearner); status != http.StatusCreated {
					t.Fatalf("the other client's session %d: status %d (%s), want 201", i, status, code)
				}
			}
		})
	}
}

// TestHeaderBombsBounded sends what took a gateway from 28 to 492 MB: 400 connections each
// sending 1 MB of a header that never ends. Each is cut off (431 or a closed connection) once
// past COACH_MAX_HEADER_BYTES, and the process's heap grows by a fraction of what the bombs
// sent; a request of another client after them is served.
func TestHeaderBombsBounded(t *testing.T) {
	const (
		bombs    = 400
		bombSize = 1 << 20
		// 400 × (64 KiB + net/http's 4 KiB slack) is 27 MiB; the bound is generous, and still
		// far below the 400 MiB that 1 MB headers held.
		maxGrowth = 150 << 20
	)
	g := apptest.Start(t, nil)
	addr := g.URL[len("http://"):]
	payload := bytes.Repeat([]byte("a"), bombSize)

	runtime.GC()
	base := heapInUse()
	peak := base
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				peak = max(peak, heapInUse())
			}
		}
	}()

	var wg sync.WaitGroup
	cut := make(chan string, bombs)
	for range bombs {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				cut <- "dial: " + err.Error()
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bomb: "))
			_, werr := c.Write(payload) // fails once the server has had enough and closed
			// The server's answer, if it got one out before closing: 431.
			line, rerr := bufio.NewReader(c).ReadString('\n')
			switch {
			case strings.Contains(line, "431"):
				cut <- ""
			case rerr != nil && !errors.Is(rerr, os.ErrDeadlineExceeded):
				cut <- "" // closed by the server
			default:
				cut <- fmt.Sprintf("not cut off: write %v, read %q %v", werr, line, rerr)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(cut)
	for msg := range cut {
		if msg != "" {
			t.Error(msg)
			break
		}
	}
	if growth := peak - base; growth > maxGrowth {
		t.Errorf("heap grew by %d MiB under %d header bombs of 1 MiB, want at most %d MiB", growth>>20, bombs, maxGrowth>>20)
	} else {
		t.Logf("heap grew by %.1f MiB under %d header bombs of 1 MiB", float64(growth)/(1<<20), bombs)
	}
	// From another address: the bombs' own address may still be at COACH_MAX_CONNS_PER_CLIENT
	// while net/http lingers half a second on each connection it answered 431.
	resp, err := clientFrom(t, "127.0.0.3").Get(g.URL + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz after the bombs: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz after the bombs: %d", resp.StatusCode)
	}
}

// heapInUse returns the bytes of heap spans in use and of goroutine stacks.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// TestConnectionCap checks COACH_MAX_CONNS: with the cap's connections held open by clients
// that never finish a request, another client waits rather than adding one more connection to
// serve, and is served as soon as one of them goes.
func TestConnectionCap(t *testing.T) {
	const maxConns = 3
	g := apptest.Start(t, func(c *config.Config) { c.MaxConns = maxConns })
	addr := g.URL[len("http://"):]
	held := make([]net.Conn, maxConns)
	for i := range held {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil { // unfinished
			t.Fatal(err)
		}
		held[i] = c
	}
	served := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(g.URL + "/healthz")
		if err != nil {
			served <- -1
			return
		}
		resp.Body.Close()
		served <- resp.StatusCode
	}()
	select {
	case status := <-served:
		t.Fatalf("a request past the cap was answered (%d) while %d connections were held", status, maxConns)
	case <-time.After(300 * time.Millisecond):
	}
	_ = held[0].Close()
	select {
	case status := <-served:
		if status != http.StatusOK {
			t.Errorf("the waiting request got %d, want 200", status)
		}
	case <-time.After(15 * time.Second):
		t.Error("the waiting request was not served after a held connection closed")
	}
}
