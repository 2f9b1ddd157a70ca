package apptest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// RedisServer is a redis-server child process on a loopback port of its own, for tests that
// start a gateway before Redis, or kill and restart Redis under it. Its URL stays the same
// across restarts.
type RedisServer struct {
	t testing.TB
	// URL is the server's redis:// URL.
	URL  string
	addr string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// NewRedisServer prepares a redis-server on a free loopback port without starting it; args
// are added to its command line (e.g. "--appendonly", "yes" with a "--dir" to keep data across
// a restart; by default it keeps nothing). Without a redis-server binary the test is skipped,
// or fails under CI (CI=true), which must run everything. The server is killed when the test ends.
func NewRedisServer(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not installed under CI: %v", err)
		}
		t.Skipf("redis-server is not installed: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &RedisServer{
		t:    t,
		URL:  "redis://" + addr + "/0",
		addr: addr,
		args: append([]string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...),
	}
	t.Cleanup(r.Kill)
	return r
}

// StartRedisServer is NewRedisServer followed by Start.
func StartRedisServer(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	r := NewRedisServer(t, args...)
	r.Start()
	return r
}

// Start starts the server and waits until it answers PING.
func (r *RedisServer) Start() {
	r.t.Helper()
	if r.cmd != nil {
		r.t.Fatal("redis-server is already running")
	}
	cmd := exec.Command(r.args[0], r.args[1:]...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(r.done)
	deadline := time.Now().Add(5 * time.Second)
	for !r.answers() {
		select {
		case <-r.done:
			r.cmd = nil
			r.t.Fatal("redis-server exited at start")
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatal("redis-server does not answer PING 5s after its start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits until it has exited; it does
// nothing when the server is not running.
func (r *RedisServer) Kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// answers reports whether the server answers PING.
func (r *RedisServer) answers() bool {
	conn, err := net.DialTimeout("tcp", r.addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// Pause stops the server with SIGSTOP, as a hung host would: connections stay open and
// nothing answers. Resume continues it.
func (r *RedisServer) Pause() { r.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (r *RedisServer) Resume() { r.signal(syscall.SIGCONT) }

func (r *RedisServer) signal(sig syscall.Signal) {
	r.t.Helper()
	if r.cmd == nil {
		r.t.Fatal("redis-server is not running")
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signalling redis-server: %v", err)
	}
}
