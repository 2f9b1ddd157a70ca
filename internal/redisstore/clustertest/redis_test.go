package clustertest_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTools returns the paths of redis-server and redis-cli. Without them the test is skipped,
// except under CI, which must prove the real thing.
func redisTools(t *testing.T) (server, cli string) {
	t.Helper()
	var missing []string
	find := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		return p
	}
	server, cli = find("redis-server"), find("redis-cli")
	if len(missing) > 0 {
		msg := strings.Join(missing, " and ") + " not found (apt-get install redis-server)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("under CI: %s", msg)
		}
		t.Skip(msg)
	}
	return server, cli
}

// busOffset is how far above its client port a cluster node listens for the cluster bus.
const busOffset = 10000

// freePorts returns n distinct loopback ports that are free now; with bus, port+busOffset is free
// too. Another process may still take one before the server binds it; the server then fails to
// start and says so.
func freePorts(t *testing.T, n int, bus bool) []int {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 200 {
			t.Fatalf("found only %d of %d free loopback ports", len(ports), n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen on a loopback port: %v", err)
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if bus {
			if p+busOffset > 65535 {
				continue
			}
			b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+busOffset))
			if err != nil {
				continue
			}
			held = append(held, b)
		}
		ports = append(ports, p)
	}
	return ports
}

// lockedBuffer collects a server's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRedis runs redis-server (bin) with args, serving on 127.0.0.1:port, until t ends, and
// returns its address once it answers PING. The server's output is logged if t fails.
func startRedis(t *testing.T, bin string, port int, args ...string) string {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := &lockedBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("redis-server %s output:\n%s", addr, out.String())
		}
	})

	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	poll(t, "redis-server on "+addr+" answers PING", 10*time.Second, func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("redis-server %s exited:\n%s", strings.Join(args, " "), out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := c.Ping(ctx).Err()
		return err == nil, fmt.Sprint(err)
	})
	return addr
}

// poll calls cond until it reports true, for at most timeout; last describes the latest state
// for the failure message.
func poll(t *testing.T, what string, timeout time.Duration, cond func() (ok bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s; last: %s", timeout, what, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cluster is a running Redis Cluster.
type cluster struct {
	// addrs are the masters' addresses.
	addrs []string
	// url is the REDIS_URL of the cluster.
	url string
}

// startCluster starts a Redis Cluster of three masters without replicas, its files in a
// temporary directory, and returns once every node reports cluster_state:ok with all slots
// served. Everything stops and goes away when t ends.
func startCluster(t *testing.T) cluster {
	t.Helper()
	server, cli := redisTools(t)
	dir := t.TempDir()
	var addrs []string
	for _, p := range freePorts(t, 3, true) {
		addrs = append(addrs, startRedis(t, server, p,
			"--port", strconv.Itoa(p), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", p)),
			"--save", "", "--appendonly", "no", "--dir", dir))
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		poll(t, addr+" reports a healthy cluster of 3", 30*time.Second, func() (bool, string) {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") &&
				strings.Contains(info, "cluster_known_nodes:3"), info
		})
		_ = c.Close()
	}
	return cluster{addrs: addrs, url: "redis+cluster://" + strings.Join(addrs, ",")}
}

// sentinelSetup is a master watched by one Sentinel.
type sentinelSetup struct {
	master string
	// url is the REDIS_URL that reaches the master through the Sentinel.
	url string
}

// startSentinel starts a master and one Sentinel monitoring it as "mymaster" (quorum 1) and
// returns once the Sentinel reports the master's address.
func startSentinel(t *testing.T) sentinelSetup {
	t.Helper()
	server, _ := redisTools(t)
	dir := t.TempDir()
	ports := freePorts(t, 2, false)
	master := startRedis(t, server, ports[0],
		"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	// A Sentinel rewrites its configuration file, so it must be a writable file of its own.
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %q\nsentinel monitor mymaster 127.0.0.1 %d 1\n", ports[1], dir, ports[0])
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	sentinel := startRedis(t, server, ports[1], conf, "--sentinel")
	c := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer c.Close()
	poll(t, "the sentinel knows mymaster", 10*time.Second, func() (bool, string) {
		addr, err := c.GetMasterAddrByName(context.Background(), "mymaster").Result()
		if err != nil {
			return false, err.Error()
		}
		return len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == master, strings.Join(addr, ":")
	})
	return sentinelSetup{master: master, url: "redis+sentinel://" + sentinel + "/mymaster"}
}
