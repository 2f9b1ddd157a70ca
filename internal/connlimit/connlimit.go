// Package connlimit shares a server's connections fairly between its clients: at most Max at
// once, at most PerClient of them from one client address, and an idle keep-alive connection
// (or one that has sent nothing for a second) closed to make room for a new one when all Max are held.
//
// netutil.LimitListener caps the connections too, but it cannot tell an idle connection from a
// busy one: a single client that opened Max keep-alive connections and sent nothing more held
// every slot, and every new client, health probes included, waited unaccepted until one timed
// out. Here a new connection waits only while every slot is busy with a request; requests end
// (a header must arrive within the server's ReadHeaderTimeout), so a health probe is served
// within that time under any flood, and at once while some connection is idle.
//
// The server tells the Listener what each connection is doing through ConnState, which goes
// into http.Server.ConnState.
package connlimit

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Listener is a net.Listener that accepts connections within its limits (see the package
// comment). Its ConnState must be the http.Server's ConnState.
type Listener struct {
	net.Listener
	max, perClient int
	now            func() time.Time

	mu sync.Mutex
	// freed is signalled when a connection closes or becomes idle: a waiting Accept may go on.
	freed *sync.Cond
	// held counts slots taken: accepted connections not yet closed, and an Accept in progress.
	held     int
	conns    map[*conn]struct{}
	byClient map[string]int
	closed   bool
}

// New returns ln limited to max connections at once (0: no cap) and perClient connections per
// client address (0: no cap), where a client address is what Client returns.
func New(ln net.Listener, max, perClient int) *Listener {
	l := &Listener{Listener: ln, max: max, perClient: perClient, now: time.Now,
		conns: map[*conn]struct{}{}, byClient: map[string]int{}}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// conn is a connection the Listener accepted.
type conn struct {
	net.Conn
	l      *Listener
	client string
	once   sync.Once
	// idleSince is when the connection last became idle (or was accepted), zero while it
	// serves a request; fresh marks one that has sent no request yet. Guarded by l.mu.
	idleSince time.Time
	fresh     bool
}

// Close closes the connection and gives its slot back.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		delete(l.conns, c)
		l.held--
		if l.byClient[c.client]--; l.byClient[c.client] <= 0 {
			delete(l.byClient, c.client)
		}
		l.mu.Unlock()
		l.freed.Broadcast()
	})
	return err
}

// CloseWrite shuts down the writing side of a TCP connection, as net/http does before it closes
// a connection whose request it refused (431), so that the client reads the answer rather than
// a reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Accept waits for a slot, then accepts a connection; when that puts it over Max it closes the
// longest-idle connection for the new one. A connection from a client address that holds
// PerClient connections takes the place of that address's longest-idle one, or is closed at
// once when all of them are busy; Accept then goes on to the next connection.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		if err := l.reserve(); err != nil {
			return nil, err
		}
		nc, err := l.Listener.Accept()
		if err != nil {
			l.unreserve()
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
		_ = nc.Close()
	}
}

// reserve takes a slot for the next Accept: at once below Max, or at Max when some connection
// is idle (admit closes one when the new connection arrives), else when one closes or goes idle.
// So the connections number at most Max, and Max+1 for a moment when the idle connection that
// admit was to close became busy first.
func (l *Listener) reserve() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.max > 0 && l.held >= l.max && l.longestIdle("") == nil && !l.closed {
		// A connection that has sent nothing becomes closable when its grace ends, which
		// nothing signals: look again then.
		wake := time.AfterFunc(newGrace, l.freed.Broadcast)
		l.freed.Wait()
		wake.Stop()
	}
	if l.closed {
		return net.ErrClosed
	}
	l.held++
	return nil
}

// unreserve gives back the slot of an Accept that accepted nothing.
func (l *Listener) unreserve() {
	l.mu.Lock()
	l.held--
	l.mu.Unlock()
	l.freed.Broadcast()
}

// admit counts nc, whose slot reserve took, against its client address and closes an idle
// connection to make room for it when there is too little; it refuses nc (nil, with its slot
// given back) when its address holds PerClient connections none of which is idle.
func (l *Listener) admit(nc net.Conn) *conn {
	now := l.now()
	c := &conn{Conn: nc, l: l, client: Client(nc.RemoteAddr().String()), idleSince: now, fresh: true}
	var victim *conn
	l.mu.Lock()
	if l.perClient > 0 && l.byClient[c.client] >= l.perClient {
		if victim = l.longestIdle(c.client); victim == nil {
			l.held--
			l.mu.Unlock()
			l.freed.Broadcast()
			return nil
		}
	} else if l.max > 0 && l.held > l.max {
		victim = l.longestIdle("")
	}
	if victim != nil {
		l.forget(victim)
	}
	l.conns[c] = struct{}{}
	l.byClient[c.client]++
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close()
	}
	return c
}

// forget stops counting c, whose slot passes to a new connection; l.mu is held.
func (l *Listener) forget(c *conn) {
	c.once.Do(func() {
		delete(l.conns, c)
		l.held--
		if l.byClient[c.client]--; l.byClient[c.client] <= 0 {
			delete(l.byClient, c.client)
		}
	})
}

// newGrace is how long a connection that has sent nothing yet is spared: it was just accepted
// and its request is on its way. After that it is as idle as a keep-alive connection.
const newGrace = time.Second

// longestIdle returns the connection idle the longest, of client when it is not "", or nil
// when none is idle; l.mu is held. A scan of at most Max connections, only when at a cap.
func (l *Listener) longestIdle(client string) *conn {
	var oldest *conn
	now := l.now()
	for c := range l.conns {
		if c.idleSince.IsZero() || client != "" && c.client != client || c.fresh && now.Sub(c.idleSince) < newGrace {
			continue
		}
		if oldest == nil || c.idleSince.Before(oldest.idleSince) {
			oldest = c
		}
	}
	return oldest
}

// ConnState is the http.Server's ConnState: it marks a connection idle between requests, which
// makes it the first to close when a new connection needs its slot, and busy while it serves a
// request or is hijacked. One that has sent nothing a second after it was accepted counts as
// idle too.
func (l *Listener) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	switch state {
	case http.StateIdle:
		c.idleSince, c.fresh = l.now(), false
	case http.StateActive, http.StateHijacked:
		c.idleSince, c.fresh = time.Time{}, false
	}
	l.mu.Unlock()
	if state == http.StateIdle {
		l.freed.Broadcast()
	}
}

// Close closes the listener; an Accept waiting for a slot returns net.ErrClosed.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.freed.Broadcast()
	return l.Listener.Close()
}

// Client returns the client address of a peer at remoteAddr (host:port), which its connections
// and new sessions are counted against: an IPv4 address as it is, an IPv6 address's /64 prefix
// (a single host usually holds a whole /64, so rotating within it evades nothing; an
// IPv4-mapped one as IPv4), and anything else as it is.
func Client(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.WithZone("").Prefix(64)
	return p.String()
}
