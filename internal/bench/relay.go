package bench

import (
	"io"
	"net"
	"strings"
	"sync"
)

// relay is a TCP relay between the gateway and Redis that counts the commands the gateway
// sends. It runs in the bench process, so its work is not charged to the gateway; what it does
// cost is one extra loopback hop each way on every Redis round trip of a coachgw turn (the
// bench measures and reports that hop).
//
// It counts commands, not round trips: a pipeline of n commands counts n. A turn's commit
// pipelines its usage settlement with it, so a turn is 3 commands in 2 round trips; the round
// trips themselves are the gateway's own count (its Redis hook), which the relay cross-checks
// from below: no more commands than the store means to send.
// The commands a client sends to set up a new connection are not round trips of a turn (see
// notRoundTrips).
type relay struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	counts map[string]int64
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, counts: map[string]int64{}, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

// byName returns the commands counted so far, by name.
func (r *relay) byName() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

func (r *relay) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c) {
			return
		}
		r.wg.Add(1)
		go r.pipe(c)
	}
}

func (r *relay) pipe(c net.Conn) {
	defer r.wg.Done()
	defer c.Close()
	s, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	if !r.track(s) {
		return
	}
	defer s.Close()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_, _ = io.Copy(c, s)
		_ = c.Close()
	}()
	p := respCounter{on: r.count}
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.feed(buf[:n])
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *relay) count(name string) {
	name = strings.ToUpper(name)
	r.mu.Lock()
	r.counts[name]++
	r.mu.Unlock()
}

// respCounter follows the RESP request stream of one connection, in whatever pieces it
// arrives, and reports the name of each complete command: an array of bulk strings
// ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") or an inline command line.
type respCounter struct {
	on func(name string)

	state respState
	num   int  // the length being read
	neg   bool // the length is negative (a null bulk string)
	args  int  // bulk strings left in the current array
	skip  int  // bytes of the current bulk string left, its CRLF included
	first bool // the current bulk string is the command name
	name  []byte
}

type respState uint8

const (
	respStart     respState = iota // between commands
	respArrayLen                   // the array length after '*'
	respArrayLF                    // the '\n' ending the array header
	respBulkStart                  // expecting '$'
	respBulkLen                    // the bulk length after '$'
	respBulkLF                     // the '\n' ending the bulk header
	respBulkBody                   // inside a bulk string
	respInline                     // inside an inline command line
)

// maxName bounds the bytes kept of a command name.
const maxName = 32

func (p *respCounter) feed(b []byte) {
	for len(b) > 0 {
		c := b[0]
		switch p.state {
		case respStart:
			b = b[1:]
			switch c {
			case '*':
				p.state, p.num, p.neg = respArrayLen, 0, false
			case '\r', '\n':
			default:
				p.state, p.name = respInline, append(p.name[:0], c)
			}
		case respArrayLen, respBulkLen:
			b = b[1:]
			switch {
			case c >= '0' && c <= '9':
				p.num = p.num*10 + int(c-'0')
			case c == '-':
				p.neg = true
			case c == '\r':
				p.state++ // to the matching LF state
			}
		case respArrayLF:
			b = b[1:]
			if p.num <= 0 || p.neg {
				p.state = respStart
				continue
			}
			p.args, p.first, p.name, p.state = p.num, true, p.name[:0], respBulkStart
		case respBulkStart:
			b = b[1:]
			if c == '$' {
				p.state, p.num, p.neg = respBulkLen, 0, false
			}
		case respBulkLF:
			b = b[1:]
			if p.neg {
				p.argDone()
				continue
			}
			p.skip, p.state = p.num+2, respBulkBody
		case respBulkBody:
			n := min(p.skip, len(b))
			if p.first {
				body := min(n, max(p.skip-2, 0)) // leave out the CRLF
				p.name = append(p.name, b[:min(body, max(maxName-len(p.name), 0))]...)
			}
			p.skip -= n
			b = b[n:]
			if p.skip == 0 {
				p.argDone()
			}
		case respInline:
			i := 0
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if room := maxName - len(p.name); room > 0 {
				p.name = append(p.name, b[:min(i, room)]...)
			}
			if i == len(b) {
				b = nil
				continue
			}
			b = b[i+1:]
			if fields := strings.Fields(string(p.name)); len(fields) > 0 {
				p.on(fields[0])
			}
			p.state, p.name = respStart, p.name[:0]
		}
	}
}

// argDone ends one bulk string of the current array.
func (p *respCounter) argDone() {
	p.first = false
	p.args--
	if p.args > 0 {
		p.state = respBulkStart
		return
	}
	p.on(string(p.name))
	p.state, p.name = respStart, p.name[:0]
}
