package connlimit

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// harness is a Listener on loopback and the server side of each connection it accepted.
type harness struct {
	t  *testing.T
	l  *Listener
	in chan net.Conn
}

func start(t *testing.T, max, perClient int) *harness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, l: New(ln, max, perClient), in: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := h.l.Accept()
			if err != nil {
				return
			}
			h.l.ConnState(c, http.StateNew)
			h.in <- c
		}
	}()
	t.Cleanup(func() { _ = h.l.Close() })
	return h
}

// dial connects from the loopback address local and returns the client's side and the
// server's, or a nil server side when the listener closed the connection or has not accepted
// it within wait.
func (h *harness) dial(local string, wait time.Duration) (client, server net.Conn) {
	h.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", h.l.Addr().String())
	if err != nil {
		h.t.Skipf("dial from %s: %v", local, err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	select {
	case s := <-h.in:
		return c, s
	case <-time.After(wait):
		return c, nil
	}
}

// closedByServer reports whether the server closed c: a read ends with an error other than
// its deadline.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestIdleMakeRoom fills the cap: a new connection closes the longest-idle one, a connection
// serving a request is never closed, and with every connection busy a new one waits,
// unaccepted, until one goes idle.
func TestIdleMakeRoom(t *testing.T) {
	h := start(t, 2, 0)
	c1, s1 := h.dial("127.0.0.1", time.Second)
	c2, s2 := h.dial("127.0.0.1", time.Second)
	if s1 == nil || s2 == nil {
		t.Fatal("the first two connections were not accepted")
	}
	h.l.ConnState(s1, http.StateIdle)
	h.l.ConnState(s2, http.StateActive)
	_, s3 := h.dial("127.0.0.1", time.Second)
	if s3 == nil {
		t.Fatal("a connection at the cap with one idle was not accepted")
	}
	h.l.ConnState(s3, http.StateActive)
	if !closedByServer(c1) {
		t.Error("the idle connection is open, want it closed for the new one")
	}
	_, s4 := h.dial("127.0.0.1", 200*time.Millisecond)
	if s4 != nil {
		t.Fatal("a connection was accepted with every slot busy, want it to wait")
	}
	h.l.ConnState(s2, http.StateIdle)
	select {
	case <-h.in:
	case <-time.After(2 * time.Second):
		t.Fatal("the waiting connection was not accepted once a connection went idle")
	}
	if !closedByServer(c2) {
		t.Error("the connection gone idle is open, want it closed for the waiting one")
	}
}

// TestPerClientShare holds a client address to its share: its next connection takes the place
// of its own longest-idle one, or is closed at once when all of its connections are busy, and
// another address is accepted either way.
func TestPerClientShare(t *testing.T) {
	h := start(t, 0, 2)
	c1, s1 := h.dial("127.0.0.2", time.Second)
	_, s2 := h.dial("127.0.0.2", time.Second)
	if s1 == nil || s2 == nil {
		t.Fatal("the address's first two connections were not accepted")
	}
	h.l.ConnState(s1, http.StateIdle)
	h.l.ConnState(s2, http.StateActive)
	if _, s3 := h.dial("127.0.0.2", time.Second); s3 == nil {
		t.Fatal("a third connection with one of the address's idle was not accepted")
	} else {
		h.l.ConnState(s3, http.StateActive)
	}
	if !closedByServer(c1) {
		t.Error("the address's idle connection is open, want it closed for its third")
	}
	c4, s4 := h.dial("127.0.0.2", 200*time.Millisecond)
	if s4 != nil || !closedByServer(c4) {
		t.Error("a connection beyond the address's share, all of it busy, was not closed at once")
	}
	if _, s := h.dial("127.0.0.3", time.Second); s == nil {
		t.Error("another address's connection was not accepted")
	}
}

// TestSilentConnectionsMakeRoom fills the cap with connections that never send a request: a
// new connection waits for them no longer than their grace, then one of them is closed for it.
func TestSilentConnectionsMakeRoom(t *testing.T) {
	h := start(t, 1, 0)
	c1, s1 := h.dial("127.0.0.1", time.Second)
	if s1 == nil {
		t.Fatal("the first connection was not accepted")
	}
	began := time.Now()
	if _, s2 := h.dial("127.0.0.1", newGrace+2*time.Second); s2 == nil {
		t.Fatalf("a connection was not accepted %v after a silent one took the only slot", time.Since(began))
	}
	if !closedByServer(c1) {
		t.Error("the silent connection is open, want it closed for the new one")
	}
}
