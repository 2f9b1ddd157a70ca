package security_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestIdleConnectionFlood attacks the connection slots from one client address, as the review
// that found every new client, /healthz and /readyz included, timing out did: 2,048 keep-alive
// connections from one address, each sending one request and then holding its connection idle.
// COACH_MAX_CONNS is smaller than the gateway's default here, so the flood fills it many times
// over. Then another client's /readyz must answer, and its session be created, within two
// seconds each: with the per-client cap, because the one address holds no more than its share;
// without it, because an idle keep-alive connection is closed for a new one at the cap.
func TestIdleConnectionFlood(t *testing.T) {
	const (
		flood    = 2048
		maxConns = 256
	)
	for _, tc := range []struct {
		name      string
		perClient int
	}{
		{"per-client cap", 64},
		{"no per-client cap: idle connections make room", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := apptest.Start(t, func(c *config.Config) {
				c.MaxConns, c.MaxConnsPerClient = maxConns, tc.perClient
				c.SessionRateLimit = 0
			})
			floodFrom(t, "127.0.0.2", g.URL, flood)

			other := clientFrom(t, "127.0.0.3")
			other.Timeout = 2 * time.Second
			start := time.Now()
			resp, err := other.Get(g.URL + "/readyz")
			if err != nil {
				t.Fatalf("/readyz from another client under the flood: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/readyz under the flood: %d, want 200", resp.StatusCode)
			}
			ready := time.Since(start)
			if status, code, _ := createAs(t, other, g, ""); status != http.StatusCreated {
				t.Fatalf("another client's session under the flood: %d (%s), want 201", status, code)
			}
			t.Logf("%d connections from one address (COACH_MAX_CONNS=%d, per client %d): /readyz of another client in %v",
				flood, maxConns, tc.perClient, ready.Round(time.Millisecond))
		})
	}
}

// floodFrom opens n connections to url from the loopback address local, sends one request on
// each without waiting for its answer, and keeps them open until the test ends. Connections the
// gateway refuses or closes are simply gone; the flood does not reconnect.
func floodFrom(t *testing.T, local, url string, n int) {
	t.Helper()
	host := url[len("http://"):]
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 2 * time.Second}
	if ln, err := net.Listen("tcp", local+":0"); err != nil {
		t.Skipf("%s is not an address of this machine: %v", local, err)
	} else {
		_ = ln.Close()
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := d.Dial("tcp", host)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			_ = c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(c, "GET /healthz?flood=%d HTTP/1.1\r\nHost: %s\r\n\r\n", i, host)
			// Read the answer when there is one, so the connection is idle and kept alive.
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}
