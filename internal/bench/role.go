package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/app"
	"github.com/coachgw/coachgw/internal/config"
)

// RoleEnv, when set in the environment, makes the bench's executable play a child role
// instead of running the bench: "gateway" serves internal/app as configured by the usual
// environment variables, "proxy" serves an httputil.ReverseProxy in front of UpstreamEnv. Both
// print one JSON line with their addresses on stdout, serve their own resource figures on a
// control address, and exit when stdin closes.
const RoleEnv = "COACHBENCH_ROLE"

// UpstreamEnv is the URL the proxy role forwards to.
const UpstreamEnv = "COACHBENCH_UPSTREAM"

// Role names.
const (
	roleGateway = "gateway"
	roleProxy   = "proxy"
)

// hello is the line a child prints once it serves.
type hello struct {
	Addr    string `json:"addr"`
	Control string `json:"control"`
	PID     int    `json:"pid"`
}

// procStats are a child's resource figures at one moment.
type procStats struct {
	CPUUser    int64  `json:"cpuUserNs"`
	CPUSys     int64  `json:"cpuSysNs"`
	RSS        int64  `json:"rss"`
	TotalAlloc uint64 `json:"totalAlloc"`
	Mallocs    uint64 `json:"mallocs"`
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	NumGC      uint32 `json:"numGC"`
	Goroutines int    `json:"goroutines"`
}

func (s procStats) cpu() int64 { return s.CPUUser + s.CPUSys }

func readStats() procStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u, s := cpuTime()
	return procStats{
		CPUUser: int64(u), CPUSys: int64(s), RSS: rss(),
		TotalAlloc: m.TotalAlloc, Mallocs: m.Mallocs, HeapInuse: m.HeapInuse, StackInuse: m.StackInuse,
		NumGC: m.NumGC, Goroutines: runtime.NumGoroutine(),
	}
}

// ServeRole plays role until ctx is done or stdin closes.
func ServeRole(ctx context.Context, role string, getenv func(string) string, stdout io.Writer) error {
	if _, err := raiseFileLimit(); err != nil {
		return fmt.Errorf("raising the open-file limit: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// The parent holds our stdin open; when it goes, so do we.
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()

	var handler http.Handler
	var serve func(ln net.Listener) error
	switch role {
	case roleGateway:
		cfg, err := config.Load(getenv)
		if err != nil {
			return err
		}
		level, _ := zerolog.ParseLevel(cfg.LogLevel)
		a, err := app.New(ctx, cfg, zerolog.New(os.Stderr).Level(level).With().Timestamp().Str("role", role).Logger())
		if err != nil {
			return err
		}
		defer a.Close()
		serve = func(ln net.Listener) error { return a.Serve(ctx, ln) }
	case roleProxy:
		target, err := url.Parse(getenv(UpstreamEnv))
		if err != nil || target.Host == "" {
			return fmt.Errorf("%s=%q: want the upstream's URL", UpstreamEnv, getenv(UpstreamEnv))
		}
		handler = newProxy(target)
	default:
		return fmt.Errorf("%s=%q: want %s or %s", RoleEnv, role, roleGateway, roleProxy)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctlSrv := &http.Server{Handler: controlMux(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ctlSrv.Serve(ctl) }()
	defer ctlSrv.Close()

	if serve == nil {
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		serve = func(ln net.Listener) error {
			go func() {
				<-ctx.Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
	}
	b, _ := json.Marshal(hello{Addr: ln.Addr().String(), Control: ctl.Addr().String(), PID: os.Getpid()})
	if _, err := fmt.Fprintf(stdout, "%s\n", b); err != nil {
		return err
	}
	return serve(ln)
}

// newProxy returns the floor for any gateway: a plain reverse proxy that flushes every write,
// with a connection pool as large as the streams it carries (the default transport keeps only
// two idle connections per host, which would make it redial under load).
func newProxy(target *url.URL) http.Handler {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 1 << 16
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request body is read before it is forwarded. Streamed, it would be read by the
		// transport once more after the server closed it (the server drains and closes a
		// request body when the response headers go out, and the transport checks for bytes
		// past Content-Length), which cuts the upstream connection and with it about one
		// response in a thousand mid-stream (golang/go#40747).
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	})
}

// controlMux serves a child's figures: GET /stats, POST /gc (collect garbage and return freed
// memory to the OS, then report), POST /memprofilerate?rate=N (sample allocations for heap
// profiles every N bytes from now on; the bench lowers it only while it holds streams, since
// fine sampling costs CPU) and the pprof endpoints.
func controlMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(readStats())
	})
	mux.HandleFunc("POST /gc", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		debug.FreeOSMemory()
		_ = json.NewEncoder(w).Encode(readStats())
	})
	mux.HandleFunc("POST /memprofilerate", func(w http.ResponseWriter, r *http.Request) {
		rate, err := strconv.Atoi(r.URL.Query().Get("rate"))
		if err != nil || rate < 0 {
			http.Error(w, "want rate=N, N >= 0", http.StatusBadRequest)
			return
		}
		runtime.MemProfileRate = rate
		_ = json.NewEncoder(w).Encode(readStats())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// child is a running child role, seen from the bench.
type child struct {
	role  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	hello hello
	hc    *http.Client
	done  chan error
}

// startChild starts self in role with env added to this process's environment, and waits for
// its hello line.
func startChild(ctx context.Context, self []string, role string, env []string, stderr io.Writer) (*child, error) {
	cmd := exec.Command(self[0], self[1:]...)
	cmd.Env = append(append(os.Environ(), RoleEnv+"="+role), env...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s: %w", role, err)
	}
	c := &child{role: role, cmd: cmd, stdin: stdin, hc: &http.Client{Timeout: 2 * time.Minute}, done: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { c.done <- cmd.Wait() }()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case line, ok := <-lines:
		if !ok {
			c.stop()
			return nil, fmt.Errorf("the %s exited before serving", role)
		}
		if err := json.Unmarshal([]byte(line), &c.hello); err != nil {
			c.stop()
			return nil, fmt.Errorf("the %s said %q: %w", role, line, err)
		}
	case <-timer.C:
		c.stop()
		return nil, fmt.Errorf("the %s did not start within 30s", role)
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
	return c, nil
}

func (c *child) url() string { return "http://" + c.hello.Addr }

func (c *child) call(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.hello.Control+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s of the %s: %w", method, path, c.role, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s of the %s: status %d", method, path, c.role, resp.StatusCode)
	}
	if w, ok := out.(io.Writer); ok {
		_, err = io.Copy(w, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *child) stats(ctx context.Context) (procStats, error) {
	var s procStats
	return s, c.call(ctx, http.MethodGet, "/stats", &s)
}

// memProfileRate sets the child's runtime.MemProfileRate.
func (c *child) memProfileRate(ctx context.Context, rate int) error {
	var s procStats
	return c.call(ctx, http.MethodPost, "/memprofilerate?rate="+strconv.Itoa(rate), &s)
}

func (c *child) gc(ctx context.Context) (procStats, error) {
	var s procStats
	return s, c.call(ctx, http.MethodPost, "/gc", &s)
}

// profile writes a pprof profile (e.g. "profile?seconds=5" or "heap") of the child to w.
func (c *child) profile(ctx context.Context, name string, w io.Writer) error {
	return c.call(ctx, http.MethodGet, "/debug/pprof/"+name, w)
}

// stop closes the child's stdin, which ends it, and waits; a child that does not end in time
// is killed.
func (c *child) stop() {
	_ = c.stdin.Close()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// childEnv turns settings into KEY=value pairs.
func childEnv(kv ...string) []string {
	var env []string
	for i := 0; i+1 < len(kv); i += 2 {
		env = append(env, kv[i]+"="+kv[i+1])
	}
	return env
}

// quoteArgs renders a command line for the report.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
