// Package bench owns coachbench, the end-to-end benchmark of the gateway: it runs the same
// scripted model stream three ways side by side (direct from fakellm, through a plain reverse
// proxy, and as a real toulmin turn through coachgw), measures what each path adds, and
// renders the results as a markdown table, a JSON file and an SVG chart.
//
// # Processes
//
// The bench process owns fakellm and the client, timed on one monotonic clock, an embedded
// miniredis when REDIS_URL is unset and, when asked, a counting relay in front of Redis. The
// gateway and the reverse proxy each run in a child process: the bench re-executes its own
// binary with RoleEnv set, so that the CPU time, memory and allocations a child reports are its
// own and nothing else's.
//
// # What is measured
//
// Every turn is tagged (a "#bt<n>#" marker in the user message, which reaches the model
// request whichever path it took), so fakellm's side of the turn is known: when the request
// arrived and when each event was flushed. From that:
//
//   - time to first delta (TTFD) and to the last line (TTLL) are reported as overheads: the
//     client's time minus the model's own time for the same milestone (request arrival to the
//     flush of the piece completing the first text byte, or of the last event). The scripted
//     random pauses cancel out; what remains is what the path adds. "vs proxy" subtracts the
//     proxy's percentile from coachgw's.
//   - per-delta latency: for each text-carrying line, its arrival at the client minus the flush
//     of the piece that completed it. For coachgw a delta's piece is found from its text: the
//     deltas concatenate to assistantText, so the cumulative decoded length after a delta names
//     its last byte, and the script knows which piece completed every decoded byte (escapes
//     and multi-byte characters complete with their last raw byte).
//   - gateway CPU and allocations are differences of the child's own figures between the start
//     and the end of each phase, and Redis round trips those of the gateway's count (the hook on
//     its Redis client, exposed on /metrics).
//   - memory per open stream: with the proxy and then the gateway rid of idle connections, N
//     streams are opened through it and paused mid-text, once the gateway's output window has
//     released their first text, and its RSS is compared with its RSS before them.
package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/outbound"
	"github.com/coachgw/coachgw/internal/safety"
)

// Config is one run of the bench.
type Config struct {
	// Levels are the concurrency levels, run in order.
	Levels []int
	// Turns is the number of turns per mode and level; 0 picks by level (see turnsFor).
	Turns int
	// Rounds interleaves the modes: each round runs every mode once, in the order roundOrder
	// gives; 0 picks by level.
	Rounds int
	Shape  Shape
	// Seed makes the scripts and fakellm's pauses reproducible.
	Seed uint64
	// Scripts is how many distinct scripted answers the turns cycle through.
	Scripts int
	// RedisURL is the Redis of the gateway; empty runs a miniredis in the bench process.
	RedisURL string
	// RedisRelay also routes the gateway's Redis connections through a counting relay, a
	// cross-check of the gateway's own count that costs a loopback hop per round trip.
	RedisRelay bool
	// TurnLog keeps the gateway's resumable-turn line log on (COACH_RESUME_TTL of 5m, the
	// gateway's default, which is why coachbench's -turn-log is on unless turned off). Off, the
	// gateway's Redis round trips per turn are the turn's own two (claim and commit); on, they
	// include the log's batched appends, which run beside the turn, never in its path. With
	// TurnLogAB it is ignored (see there).
	TurnLog bool
	// TurnLogAB runs, besides the gateway, a second gateway with the line log on as the mode
	// coachgw+log, in the same interleaved rounds: on a shared machine, the cost of the log is
	// then measured under the same noise as the gateway without it. For the pair to differ in
	// the log alone, the gateway of the mode coachgw (and those configured like it) then runs
	// with the log off, whatever TurnLog says.
	TurnLogAB bool
	// SafetyAB runs, besides the gateway (whose learner-safety checks run in their default
	// mode, enforce), a second gateway with them off (COACH_SAFETY_MODE=off) as the mode
	// coachgw/safety-off, in the same interleaved rounds: the difference is what the input
	// screen and the output window cost a turn, measured under the same noise.
	SafetyAB bool
	// SafetyMode is the learner-safety mode (COACH_SAFETY_MODE) of the gateway of the mode
	// coachgw; empty means the default, enforce. "off" measures every other default with the
	// safety window out of the way.
	SafetyMode string
	// Baseline, when set, is a second bench executable (cmd/coachbench built from other code,
	// such as an earlier commit) whose gateway role runs as the mode coachgw@baseline, configured
	// like coachgw, in the same interleaved rounds: CPU per line and latency against that code,
	// under the same noise.
	Baseline string
	// Upstreams, when positive, configures the gateway with COACH_UPSTREAMS of that many
	// endpoints instead of OPENAI_BASE_URL: fakellm first, then fallback endpoints on loopback
	// ports where nothing listens. With a healthy first endpoint the others are never asked, so
	// comparing 1 with 3 shows what configuring fallbacks costs a turn.
	Upstreams int
	// Hold opens this many streams at once to measure memory per open stream; 0 uses the
	// level's concurrency, negative skips the measurement.
	Hold int
	// Self is the command that runs this bench's binary (re-executed for the child roles).
	Self []string
	// ProfileDir, when set, receives per level a CPU profile of the gateway (and of the
	// baseline gateway, with Baseline) during its first phase and its allocation profiles
	// before and after that phase, an execution trace during its warm-up, and heap and
	// goroutine profiles of the proxy and the gateway while streams are held.
	ProfileDir string
	// TurnTimeout bounds one turn at the client.
	TurnTimeout time.Duration
	// Progress receives a line per step; Stderr receives the children's logs.
	Progress, Stderr io.Writer
	// Command is the command line reported with the results.
	Command string
}

// turnsPerSession bounds the turns a session takes, so that a session's stored history (which
// every turn reads and writes) stays as long as a real conversation's.
const turnsPerSession = 8

// turnsFor returns the turns per mode and the rounds at concurrency c: enough for stable
// percentiles without running for long at the slow levels.
func (cfg Config) turnsFor(c int) (turns, rounds, perWorker int) {
	turns, rounds = cfg.Turns, cfg.Rounds
	switch {
	case c == 1:
		turns, rounds = or(turns, 30), or(rounds, 3)
	case c <= 1000:
		turns, rounds = or(turns, 6*c), or(rounds, 2)
	default:
		turns, rounds = or(turns, c), or(rounds, 1)
	}
	perWorker = max(1, (turns+c*rounds-1)/(c*rounds))
	return c * rounds * perWorker, rounds, perWorker
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// runner holds what the levels of a run share.
type runner struct {
	cfg      Config
	clk      clock
	up       *upstream
	cl       *client
	relay    *relay
	redisURL string
	prefix   string
	scripts  []*script
	seq      atomic.Uint64
	// files is this process's open-file limit.
	files uint64
	// exeDir holds the private copies of the executables the children run (see
	// runner.startChild).
	exeDir string
}

// startChild starts cmd in role with env, as the package's startChild does, from a private
// copy of its executable named name, made on first use. Every child runs from a copy of its
// own: a child run from the bench's own file shares its code pages, and so the CPU caches, with
// the bench's client and fakellm (the same runtime, net/http and bufio code), and a gateway run
// that way needed some 5 % less CPU per turn at c=50 than the same binary run from another file
// (docs/bench/notes.md). Copies share nothing, so every path, the baseline's included, starts
// alike.
func (r *runner) startChild(ctx context.Context, name string, cmd []string, role string, env []string) (*child, error) {
	dst := filepath.Join(r.exeDir, name)
	if _, err := os.Stat(dst); err != nil {
		if err := copyFile(dst, cmd[0]); err != nil {
			return nil, fmt.Errorf("copying the executable %s: %w", cmd[0], err)
		}
	}
	return startChild(ctx, append([]string{dst}, cmd[1:]...), role, env, r.cfg.Stderr)
}

// copyFile copies the executable src to dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Run runs the bench.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Levels) == 0 {
		return nil, errors.New("no concurrency levels")
	}
	if len(cfg.Self) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Self = []string{exe}
	}
	cfg.Scripts = or(cfg.Scripts, 64)
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = 3 * time.Minute
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	files, err := raiseFileLimit()
	if err != nil {
		return nil, fmt.Errorf("raising the open-file limit: %w", err)
	}
	exeDir, err := os.MkdirTemp("", "coachbench-exe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(exeDir)
	r := &runner{cfg: cfg, clk: clock{base: time.Now()}, files: files, exeDir: exeDir}
	screen, err := safety.NewScreen()
	if err != nil {
		return nil, err
	}
	for i := range cfg.Scripts {
		sc, err := newScript(cfg.Shape, cfg.Seed+uint64(i), screen)
		if err != nil {
			return nil, err
		}
		if cfg.Hold >= 0 && sc.holdAfter() < 0 {
			return nil, fmt.Errorf("a %d-chunk answer (script %d) reaches the learner only at its end, so its stream cannot be held with text out: give the answers more chunks, or skip the memory measurement (hold -1)",
				cfg.Shape.Chunks, i)
		}
		r.scripts = append(r.scripts, sc)
	}
	res := &Result{
		Command: cfg.Command, Date: time.Now().UTC(), Machine: readMachine(),
		Shape: shapeJSON(cfg.Shape, r.scripts), Upstreams: cfg.Upstreams, TurnLog: cfg.turnLog(),
		PrivateChildren: true,
	}

	up, err := startUpstream(r.clk, cfg.Shape, cfg.Seed)
	if err != nil {
		return nil, err
	}
	defer up.close()
	r.up = up
	r.cl = newClient(r.clk)
	defer r.cl.close()

	stopRedis, err := r.startRedis(res)
	if err != nil {
		return nil, err
	}
	defer stopRedis()

	for _, c := range cfg.Levels {
		fmt.Fprintf(cfg.Progress, "level %d: starting\n", c)
		lvl, err := r.level(ctx, c)
		if err != nil {
			return res, fmt.Errorf("concurrency %d: %w", c, err)
		}
		res.Levels = append(res.Levels, lvl)
	}
	res.Machine.LoadEnd = loadAverage()
	return res, nil
}

// startRedis provides the gateway's Redis, behind the relay when asked, and describes it.
func (r *runner) startRedis(res *Result) (stop func(), err error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	r.prefix = "coachbench-" + hex.EncodeToString(b[:])
	stops := []func(){}
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	target, childURL := "", r.cfg.RedisURL
	if r.cfg.RedisURL == "" {
		m, err := miniredis.Run()
		if err != nil {
			return nil, err
		}
		stops = append(stops, m.Close)
		target, childURL = m.Addr(), "redis://"+m.Addr()
		res.Redis = "embedded miniredis in the bench process (REDIS_URL is unset; the gateway alone would embed it in its own process)"
	} else {
		u, err := url.Parse(r.cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		res.Redis = "real Redis at " + u.Host
		if u.Scheme == "redis" {
			target = u.Host
			if u.Port() == "" {
				target = net.JoinHostPort(u.Hostname(), "6379")
			}
		}
		// The bench's keys go once it is done, whatever the session TTL.
		stops = append(stops, func() { r.cleanRedis() })
	}
	if r.cfg.RedisRelay && target != "" {
		rl, err := startRelay(target)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, rl.close)
		r.relay = rl
		u, _ := url.Parse(childURL)
		u.Host = rl.addr()
		childURL = u.String()
		hop, err := measureHop(target, rl.addr())
		if err == nil {
			res.RelayHopMs = &hop
		}
		res.Redis += "; the gateway's Redis connections pass through a counting relay in the bench process"
	} else if r.cfg.RedisRelay {
		res.Redis += "; no relay (it only speaks redis://)"
	}
	r.redisURL = childURL
	return stop, nil
}

// cleanRedis deletes the keys of this run from a real Redis.
func (r *runner) cleanRedis() {
	opts, err := redis.ParseURL(r.cfg.RedisURL)
	if err != nil {
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, r.prefix+":*", 1000).Iterator()
	var keys []string
	flush := func() {
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 500 {
			flush()
		}
	}
	flush()
}

// measureHop returns the median extra time a PING takes through the relay, in milliseconds.
func measureHop(direct, relayed string) (float64, error) {
	median := func(addr string) (int64, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		buf := make([]byte, 64)
		var rtts []int64
		for range 300 {
			start := time.Now()
			if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
				return 0, err
			}
			if _, err := c.Read(buf); err != nil {
				return 0, err
			}
			rtts = append(rtts, int64(time.Since(start)))
		}
		return int64(summarize(rtts).P50 * float64(time.Millisecond)), nil
	}
	d, err := median(direct)
	if err != nil {
		return 0, err
	}
	rl, err := median(relayed)
	if err != nil {
		return 0, err
	}
	return ms(rl - d), nil
}

// turnLog reports whether the gateway of the mode coachgw, and the gateways configured like it
// (coachgw/safety-off, coachgw@baseline), keep the resumable-turn line log: as TurnLog says,
// except with TurnLogAB, whose coachgw+log must differ from coachgw in the log alone.
func (cfg Config) turnLog() bool { return cfg.TurnLog && !cfg.TurnLogAB }

// gatewayEnv is the configuration of the gateway of mode m: the usual environment variables,
// with the resumable-turn line log on for coachgw+log and as Config.turnLog says for the others,
// and the learner-safety checks off for coachgw/safety-off and in Config.SafetyMode for the
// others.
func (r *runner) gatewayEnv(m Mode) ([]string, error) {
	turnLog, safetyMode := r.cfg.turnLog(), cmp.Or(r.cfg.SafetyMode, "enforce")
	switch m {
	case CoachgwLog:
		turnLog = true
	case CoachgwSafetyOff:
		safetyMode = "off"
	}
	ups, err := r.upstreams()
	if err != nil {
		return nil, err
	}
	return childEnv(
		"OPENAI_BASE_URL", r.up.base+"/v1",
		"COACH_UPSTREAMS", ups,
		"OPENAI_API_KEY", "bench",
		"REDIS_URL", r.redisURL,
		"COACH_REDIS_PREFIX", r.prefix,
		"COACH_LOG_LEVEL", "warn",
		"COACH_SESSION_TTL", "30m",
		// Held streams wait for thousands of others to open; the defaults (30s to the first
		// byte, 20s idle) are for real models, not for a pause the bench makes on purpose.
		"COACH_FIRST_BYTE_TIMEOUT", "2m",
		"COACH_IDLE_TIMEOUT", "2m",
		"COACH_TURN_TIMEOUT", "5m",
		"COACH_SHUTDOWN_TIMEOUT", "5s",
		// Measure the default gateway: open, unlimited.
		"COACH_RATE_LIMIT", "0",
		"COACH_SESSION_RATE_LIMIT", "0", // a level's sessions are created at once from one address
		"COACH_MAX_CONNS", "0",
		// The bench is one client address and one tenant, where the caps that share a gateway
		// among many (connections per client address, turns per tenant) would refuse all but
		// their share: above 64 streams, or 256 turns at once.
		"COACH_MAX_CONNS_PER_CLIENT", "0",
		"COACH_MAX_TURNS_PER_TENANT", "0",
		"COACH_API_KEYS", "",
		"COACH_API_KEYS_FILE", "",
		"COACH_RESUME_TTL", map[bool]string{true: "5m", false: "0"}[turnLog],
		// The built-in screen alone, whatever the bench's own environment says: no moderation
		// endpoint, guard model or escalation webhook.
		"COACH_SAFETY_MODE", safetyMode,
		// The window's default holdback, which the hold point is worked out with (script.released).
		"COACH_SAFETY_HOLDBACK_CHARS", strconv.Itoa(safety.DefaultHoldback),
		"COACH_MODERATION_URL", "", "COACH_MODERATION_MODEL", "",
		"COACH_GUARD_URL", "", "COACH_GUARD_MODEL", "",
		"COACH_ESCALATION_URL", "", "COACH_ESCALATION_SECRET", "",
	), nil
}

// upstreams returns the gateway's COACH_UPSTREAMS for Config.Upstreams, or "" for none.
func (r *runner) upstreams() (string, error) {
	type entry struct {
		Name      string `json:"name"`
		BaseURL   string `json:"baseURL"`
		APIKeyEnv string `json:"apiKeyEnv"`
		Profile   string `json:"profile"`
	}
	var list []entry
	for i := range r.cfg.Upstreams {
		e := entry{Name: "primary", BaseURL: r.up.base + "/v1", APIKeyEnv: "OPENAI_API_KEY", Profile: "openai"}
		if i > 0 {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "", err
			}
			e.Name, e.BaseURL = fmt.Sprintf("fallback-%d", i), "http://"+ln.Addr().String()+"/v1"
			ln.Close() // a port where nothing listens: the fallback is never needed
		}
		list = append(list, e)
	}
	if len(list) == 0 {
		return "", nil
	}
	b, err := json.Marshal(list)
	return string(b), err
}

// modeAcc accumulates one mode's phases of a level.
type modeAcc struct {
	s       samples
	wall    int64
	cpu     int64
	alloc   uint64
	mallocs uint64
	// self is the bench process's own CPU time (fakellm and the client); busy and ticks the
	// machine's busy and total CPU ticks.
	self        int64
	busy, ticks uint64
	// roundCPU is the process's CPU per turn (µs) of each measured phase, one per round, so
	// that a comparison between paths can be made round by round (see ModeResult).
	roundCPU []float64
	// dials counts the connections fakellm accepted.
	dials int64
	// redis counts the gateway's round trips by label, from its own metrics; relay counts
	// the commands the relay saw. Nil maps are not counted.
	redis map[string]int64
	relay map[string]int64
}

// level runs one concurrency level with a fresh gateway and proxy.
func (r *runner) level(ctx context.Context, c int) (Level, error) {
	turns, rounds, perWorker := r.cfg.turnsFor(c)
	lvl := Level{Concurrency: c, TurnsPerMode: turns, Rounds: rounds, TurnsPerWorker: perWorker}
	env, err := r.gatewayEnv(Coachgw)
	if err != nil {
		return lvl, err
	}
	gw, err := r.startChild(ctx, "coachgw", r.cfg.Self, roleGateway, env)
	if err != nil {
		return lvl, err
	}
	defer gw.stop()
	var gwBase *child
	if r.cfg.Baseline != "" {
		if gwBase, err = r.startChild(ctx, "coachgw-baseline", []string{r.cfg.Baseline}, roleGateway, env); err != nil {
			return lvl, fmt.Errorf("the baseline: %w", err)
		}
		defer gwBase.stop()
	}
	var gwLog *child
	if r.cfg.TurnLogAB {
		env, err := r.gatewayEnv(CoachgwLog)
		if err != nil {
			return lvl, err
		}
		if gwLog, err = r.startChild(ctx, "coachgw-log", r.cfg.Self, roleGateway, env); err != nil {
			return lvl, err
		}
		defer gwLog.stop()
	}
	var gwOff *child
	if r.cfg.SafetyAB {
		env, err := r.gatewayEnv(CoachgwSafetyOff)
		if err != nil {
			return lvl, err
		}
		if gwOff, err = r.startChild(ctx, "coachgw-safety-off", r.cfg.Self, roleGateway, env); err != nil {
			return lvl, err
		}
		defer gwOff.stop()
	}
	px, err := r.startChild(ctx, "proxy", r.cfg.Self, roleProxy, childEnv(UpstreamEnv, r.up.base))
	if err != nil {
		return lvl, err
	}
	defer px.stop()
	targets := map[Mode]string{Direct: r.up.base, Proxy: px.url(), Coachgw: gw.url()}
	procs := map[Mode]*child{Proxy: px, Coachgw: gw}
	if gwLog != nil {
		targets[CoachgwLog], procs[CoachgwLog] = gwLog.url(), gwLog
	}
	if gwOff != nil {
		targets[CoachgwSafetyOff], procs[CoachgwSafetyOff] = gwOff.url(), gwOff
	}
	if gwBase != nil {
		targets[CoachgwBaseline], procs[CoachgwBaseline] = gwBase.url(), gwBase
	}
	modes := r.modes()

	// Warm up every path, unmeasured: lazily built schemas and templates first, then, after
	// the memory is measured, connection pools as large as the level needs.
	if err := r.warmUp(ctx, c, min(c, 16), targets, gw); err != nil {
		return lvl, err
	}
	if n := r.holdCount(c); n > 0 {
		for _, m := range []Mode{Proxy, Coachgw} {
			fmt.Fprintf(r.cfg.Progress, "level %d: holding %d open streams through %s\n", c, n, m)
			h, err := r.hold(ctx, m, procs[m], n)
			if err != nil {
				return lvl, err
			}
			if m == Proxy {
				lvl.ProxyHold = h
			} else {
				lvl.Hold = h
			}
		}
	}
	if err := r.warmUp(ctx, c, c, targets, nil); err != nil {
		return lvl, err
	}

	accs := map[Mode]*modeAcc{}
	for _, m := range modes {
		accs[m] = &modeAcc{}
	}
	for round := range rounds {
		for _, i := range roundOrder(len(modes), round) {
			m := modes[i]
			fmt.Fprintf(r.cfg.Progress, "level %d: round %d/%d: %s, %d workers x %d turns\n", c, round+1, rounds, m, c, perWorker)
			profile := r.cfg.ProfileDir != "" && (m == Coachgw || m == CoachgwBaseline) && round == 0
			if err := r.phase(ctx, m, c, perWorker, targets[m], procs[m], accs[m], profile); err != nil {
				return lvl, err
			}
			r.tidy(c)
		}
	}
	for _, m := range modes {
		lvl.Modes = append(lvl.Modes, accs[m].result(m))
	}
	return lvl, nil
}

// roundOrder returns the order, as indexes, in which round runs n modes: a Williams design,
// in which over every n rounds (2n when n is odd) each mode runs in each place equally often
// and follows each other mode equally often. A phase pays for what the phase before it left
// behind (the last turns' writes of a gateway, a busier Redis, colder caches), and with a
// plain rotation mode i+1 would follow mode i in all but one round of n.
func roundOrder(n, round int) []int {
	order := make([]int, n)
	// The first row zigzags 0, 1, n-1, 2, n-2, …; row r adds r to it.
	for k := range n {
		v := (k + 1) / 2
		if k%2 == 0 && k > 0 {
			v = n - k/2
		}
		order[k] = (v + round) % n
	}
	if n%2 == 1 && (round/n)%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// warmUp runs one unmeasured turn per worker on every path of the level with c workers. With
// gw set and profiles asked for, it also records an execution trace of the gateway meanwhile.
func (r *runner) warmUp(ctx context.Context, level, c int, targets map[Mode]string, gw *child) error {
	for _, m := range r.modes() {
		fmt.Fprintf(r.cfg.Progress, "level %d: warming up %s with %d workers\n", level, m, c)
		var trace sync.WaitGroup
		if r.cfg.ProfileDir != "" && m == Coachgw && gw != nil {
			// An execution trace shows where a turn waits, which a CPU profile cannot; it is
			// taken here, unmeasured, as tracing slows the gateway down.
			trace.Go(func() { r.saveProfile(ctx, gw, "trace?seconds=3", fmt.Sprintf("gateway-c%d.trace", level)) })
		}
		var acc modeAcc
		err := r.phase(ctx, m, c, 1, targets[m], nil, &acc, false)
		trace.Wait()
		if err != nil {
			return err
		}
		if acc.s.errs > 0 {
			return fmt.Errorf("warm-up of %s failed: %s", m, acc.s.errSamples[0])
		}
		r.tidy(c)
	}
	return nil
}

// modes returns the paths the run measures, in the order of its first round.
func (r *runner) modes() []Mode {
	modes := []Mode{Direct, Proxy, Coachgw}
	if r.cfg.TurnLogAB {
		modes = append(modes, CoachgwLog)
	}
	if r.cfg.SafetyAB {
		modes = append(modes, CoachgwSafetyOff)
	}
	if r.cfg.Baseline != "" {
		modes = append(modes, CoachgwBaseline)
	}
	return modes
}

// closeIdle closes the idle connections on both sides of fakellm and the client, and with
// them those of the proxy and the gateway (fakellm closes its side of theirs).
func (r *runner) closeIdle() {
	r.cl.hc.CloseIdleConnections()
	r.up.closeIdle()
}

// tidy closes the idle connections a phase of c streams leaves behind, on both sides of
// fakellm and the client, when the next phase could otherwise run out of file descriptors: the
// bench process holds two per stream, and the proxy and the gateway keep their own idle
// connections to fakellm open (those are closed from fakellm's side).
func (r *runner) tidy(c int) {
	if r.files == 0 || uint64(4*c) <= r.files/2 {
		return
	}
	r.closeIdle()
}

func (r *runner) holdCount(c int) int {
	switch {
	case r.cfg.Hold < 0:
		return 0
	case r.cfg.Hold > 0:
		return r.cfg.Hold
	}
	return c
}

// newTurn registers a new turn of mode m.
func (r *runner) newTurn(m Mode) *turnRec {
	seq := r.seq.Add(1)
	rec := &turnRec{seq: seq, mode: m, sc: r.scripts[seq%uint64(len(r.scripts))]}
	return rec
}

// turn runs rec at base and waits until fakellm's side of it is complete.
func (r *runner) turn(ctx context.Context, base, session string, rec *turnRec, opened func()) error {
	r.up.register(rec)
	defer r.up.forget(rec.seq)
	ctx, cancel := context.WithTimeout(ctx, r.cfg.TurnTimeout)
	defer cancel()
	var err error
	if rec.mode.gateway() {
		err = r.cl.gatewayTurn(ctx, base, session, rec, opened)
	} else {
		err = r.cl.sseTurn(ctx, base, rec, opened)
	}
	if err != nil {
		return err
	}
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-rec.done:
	case <-timer.C:
		return errors.New("fakellm's handler did not finish after the client did")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch {
	case rec.requests != 1:
		return fmt.Errorf("the model was called %d times", rec.requests)
	case len(rec.flushes) < len(rec.sc.pieces):
		return fmt.Errorf("fakellm flushed %d events for %d pieces", len(rec.flushes), len(rec.sc.pieces))
	}
	return nil
}

// record adds a finished turn's measurements to s.
func record(s *samples, rec *turnRec, err error) {
	s.turns++
	if err != nil {
		s.addErr(fmt.Sprintf("%s turn: %v", rec.mode, err))
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ttfd, ttll, ok := rec.overheads()
	if !ok {
		s.addErr(fmt.Sprintf("%s turn: no first text or no last line", rec.mode))
		return
	}
	d, derr := rec.deltaLatencies(s.delta)
	if derr != nil {
		s.addErr(fmt.Sprintf("%s turn: %v", rec.mode, derr))
		return
	}
	s.delta = d
	s.ttfd = append(s.ttfd, ttfd)
	s.ttll = append(s.ttll, ttll)
	s.ttfdAbs = append(s.ttfdAbs, rec.first-rec.send)
	s.ttllAbs = append(s.ttllAbs, rec.last-rec.send)
	s.toModel = append(s.toModel, rec.arrive-rec.send)
	s.fromModel = append(s.fromModel, rec.first-rec.flushes[rec.sc.first])
	s.held = append(s.held, rec.flushes[rec.recvChunk[0]]-rec.flushes[rec.sc.first])
	s.deltas += len(rec.recv)
}

// createSessions creates n toulmin sessions at the gateway.
func (r *runner) createSessions(ctx context.Context, base string, n int) ([]string, error) {
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(n, 32) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ids[i], errs[i] = r.cl.createSession(ctx, base)
			}
		})
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

// phase runs c workers of k back-to-back turns of mode m. Workers start spread over one mean
// turn, as independent users would arrive, rather than all at once. proc, when set, is the
// child whose figures the phase accounts.
func (r *runner) phase(ctx context.Context, m Mode, c, k int, base string, proc *child, acc *modeAcc, profile bool) error {
	slots := (k + turnsPerSession - 1) / turnsPerSession
	var sessions []string
	if m.gateway() {
		var err error
		if sessions, err = r.createSessions(ctx, base, c*slots); err != nil {
			return err
		}
	}
	// The counts are read outside the CPU window, so that reading them is not charged to the
	// turns.
	count := m.gateway() && proc != nil && acc != nil
	var redisBefore, relayBefore map[string]int64
	if count {
		redisBefore, _ = scrapeRedis(ctx, r.cl.hc, base)
		if r.relay != nil {
			relayBefore = r.relay.byName()
		}
	}
	var before procStats
	if proc != nil {
		var err error
		if before, err = proc.stats(ctx); err != nil {
			return err
		}
	}
	var profWG sync.WaitGroup
	// The gateway of mode m (coachgw or its baseline) is profiled in the first round: its CPU
	// during the phase, and its allocations before and after it, whose difference
	// (go tool pprof -diff_base before after) is the phase's own.
	name := "gateway"
	if m == CoachgwBaseline {
		name = "baseline"
	}
	if profile && proc != nil {
		secs := max(1, int((time.Duration(k) * r.cfg.Shape.meanTurn()).Seconds()))
		r.saveProfile(ctx, proc, "allocs", fmt.Sprintf("%s-allocs-before-c%d.pprof", name, c))
		profWG.Go(func() {
			r.saveProfile(ctx, proc, fmt.Sprintf("profile?seconds=%d", secs), fmt.Sprintf("%s-cpu-c%d.pprof", name, c))
		})
	}

	stagger := r.cfg.Shape.meanTurn() / time.Duration(c)
	per := make([]samples, c)
	busy0, ticks0 := cpuTicks()
	user0, sys0 := cpuTime()
	dials0 := r.up.conns.Load()
	start := r.clk.now()
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			if !outbound.Sleep(ctx, time.Duration(w)*stagger) {
				return
			}
			for j := range k {
				rec := r.newTurn(m)
				session := ""
				if sessions != nil {
					session = sessions[w*slots+j/turnsPerSession]
				}
				err := r.turn(ctx, base, session, rec, nil)
				record(&per[w], rec, err)
			}
		})
	}
	wg.Wait()
	end := r.clk.now()
	busy1, ticks1 := cpuTicks()
	user1, sys1 := cpuTime()
	if err := ctx.Err(); err != nil {
		return err
	}
	acc.self += int64(user1 + sys1 - user0 - sys0)
	acc.dials += r.up.conns.Load() - dials0
	acc.busy += busy1 - busy0
	acc.ticks += ticks1 - ticks0
	phaseTurns := 0
	for i := range per {
		phaseTurns += per[i].turns
		acc.s.merge(&per[i])
	}
	acc.wall += end - start
	if proc != nil {
		after, err := proc.stats(ctx)
		if err != nil {
			return err
		}
		acc.cpu += after.cpu() - before.cpu()
		if phaseTurns > 0 {
			acc.roundCPU = append(acc.roundCPU, float64(after.cpu()-before.cpu())/float64(phaseTurns)/1e3)
		}
		acc.alloc += after.TotalAlloc - before.TotalAlloc
		acc.mallocs += after.Mallocs - before.Mallocs
	}
	if count {
		if after, err := scrapeRedis(ctx, r.cl.hc, base); err == nil && redisBefore != nil {
			acc.redis = addDiff(acc.redis, after, redisBefore)
		}
		if r.relay != nil {
			acc.relay = addDiff(acc.relay, r.relay.byName(), relayBefore)
		}
	}
	profWG.Wait()
	if profile && proc != nil {
		r.saveProfile(ctx, proc, "allocs", fmt.Sprintf("%s-allocs-c%d.pprof", name, c))
	}
	return nil
}

// saveProfile writes the child's profile name into the profile directory.
func (r *runner) saveProfile(ctx context.Context, proc *child, name, file string) {
	if err := os.MkdirAll(r.cfg.ProfileDir, 0o755); err != nil {
		fmt.Fprintf(r.cfg.Progress, "profile: %v\n", err)
		return
	}
	f, err := os.Create(filepath.Join(r.cfg.ProfileDir, file))
	if err != nil {
		fmt.Fprintf(r.cfg.Progress, "profile: %v\n", err)
		return
	}
	defer f.Close()
	if err := proc.profile(ctx, name, f); err != nil {
		fmt.Fprintf(r.cfg.Progress, "profile: %v\n", err)
	}
}

// hold opens n streams of mode m through proc (the gateway or the proxy), pauses each once its
// first text has reached the client (see script.holdAfter), and measures proc's memory with
// all of them open.
func (r *runner) hold(ctx context.Context, m Mode, proc *child, n int) (*Hold, error) {
	base := proc.url()
	var sessions []string
	if m == Coachgw {
		var err error
		if sessions, err = r.createSessions(ctx, base, n); err != nil {
			return nil, err
		}
	}
	// Measure from a gateway without idle connections, so that a stream is charged for its
	// connections too, and leave none behind.
	r.closeIdle()
	defer r.closeIdle()
	if err := settle(ctx, proc); err != nil {
		return nil, err
	}
	if r.cfg.ProfileDir != "" {
		// Sample the held streams' allocations finely, so that the heap profile attributes a
		// stream's memory precisely; back to the default once they are measured.
		if err := proc.memProfileRate(ctx, 4096); err != nil {
			return nil, err
		}
		defer func() { _ = proc.memProfileRate(context.WithoutCancel(ctx), 512*1024) }()
	}
	s0, err := proc.gc(ctx)
	if err != nil {
		return nil, err
	}
	gate := make(chan struct{})
	r.up.held.Store(0)
	var opened, settled atomic.Int64
	allSettled := make(chan struct{})
	settle := func() {
		if settled.Add(1) == int64(n) {
			close(allSettled)
		}
	}
	// Open at most this many streams at once, as a burst of thousands would only measure the
	// listen backlog.
	sem := make(chan struct{}, 256)
	per := make([]samples, n)
	start := r.clk.now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				settle()
				return
			}
			rec := r.newTurn(m)
			rec.hold, rec.gate, rec.holdAfter = true, gate, rec.sc.holdAfter()
			var once sync.Once
			release := func(ok bool) {
				once.Do(func() {
					if ok {
						opened.Add(1)
					}
					<-sem
					settle()
				})
			}
			session := ""
			if sessions != nil {
				session = sessions[i]
			}
			err := r.turn(ctx, base, session, rec, func() { release(true) })
			release(false)
			record(&per[i], rec, err)
		})
	}
	h := &Hold{Streams: n, RSSBefore: s0.RSS, HeapBefore: s0.HeapInuse, StackBefore: s0.StackInuse, GoroutinesBefore: s0.Goroutines}
	timeout := time.NewTimer(max(2*time.Minute, time.Duration(n)*20*time.Millisecond))
	defer timeout.Stop()
	select {
	case <-allSettled:
	case <-timeout.C:
	case <-ctx.Done():
	}
	h.OpenSeconds = float64(r.clk.now()-start) / float64(time.Second)
	// The client may have a stream's first delta before fakellm reaches the hold point a few
	// pieces later; wait (briefly) until every opened stream is paused there.
	for deadline := time.Now().Add(30 * time.Second); r.up.held.Load() < opened.Load() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	h.Opened, h.Paused = int(opened.Load()), int(r.up.held.Load())
	held, err := proc.stats(ctx)
	if err == nil {
		h.RSSHeld, h.GoroutinesHeld = held.RSS, held.Goroutines
		if r.cfg.ProfileDir != "" {
			r.saveProfile(ctx, proc, "heap?gc=1", fmt.Sprintf("%s-heap-hold%d.pprof", proc.role, n))
			r.saveProfile(ctx, proc, "goroutine", fmt.Sprintf("%s-goroutine-hold%d.pprof", proc.role, n))
		}
		var afterGC procStats
		if afterGC, err = proc.gc(ctx); err == nil {
			h.RSSHeldAfterGC, h.HeapHeld, h.StackHeld = afterGC.RSS, afterGC.HeapInuse, afterGC.StackInuse
		}
	}
	close(gate)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	var s samples
	for i := range per {
		s.merge(&per[i])
	}
	h.Errors, h.ErrorSamples = s.errs, s.errSamples
	if h.Opened > 0 {
		h.RSSPerStream = float64(h.RSSHeld-h.RSSBefore) / float64(h.Opened)
		h.RSSPerStreamAfterGC = float64(h.RSSHeldAfterGC-h.RSSBefore) / float64(h.Opened)
		h.HeapPerStream = (float64(h.HeapHeld) - float64(h.HeapBefore)) / float64(h.Opened)
		h.StackPerStream = (float64(h.StackHeld) - float64(h.StackBefore)) / float64(h.Opened)
	}
	return h, nil
}

// settle waits until proc's goroutines stop changing in number (connections closed a moment ago
// take their goroutines with them asynchronously), for at most a few seconds.
func settle(ctx context.Context, proc *child) error {
	last := -1
	for range 100 {
		st, err := proc.stats(ctx)
		if err != nil {
			return err
		}
		if st.Goroutines == last {
			return nil
		}
		last = st.Goroutines
		if !outbound.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// result turns the accumulated phases into the mode's figures.
func (a *modeAcc) result(m Mode) ModeResult {
	s := &a.s
	mr := ModeResult{
		Mode: m.String(), Turns: s.turns, Errors: s.errs, ErrorSamples: s.errSamples, Deltas: s.deltas,
		TTFD: summarize(s.ttfd), TTLL: summarize(s.ttll), Delta: summarize(s.delta),
		TTFDAbs: summarize(s.ttfdAbs), TTLLAbs: summarize(s.ttllAbs),
		ToModel: summarize(s.toModel), FromModel: summarize(s.fromModel), Held: summarize(s.held),
		WallSeconds: float64(a.wall) / float64(time.Second),
	}
	if a.wall > 0 {
		ok := float64(s.turns - s.errs)
		mr.TurnsPerSec = ok / mr.WallSeconds
		mr.DeltasPerSec = float64(s.deltas) / mr.WallSeconds
	}
	if a.ticks > 0 {
		mr.MachineBusy = float64(a.busy) / float64(a.ticks)
	}
	if s.turns > 0 {
		mr.BenchCPUPerTurnUs = float64(a.self) / float64(s.turns) / 1e3
		mr.ModelDialsPerTurn = float64(a.dials) / float64(s.turns)
	}
	if m != Direct && s.turns > 0 {
		mr.CPUPerTurnUs = float64(a.cpu) / float64(s.turns) / 1e3
		mr.CPUPerTurnUsByRound = a.roundCPU
		mr.AllocPerTurn = float64(a.alloc) / float64(s.turns)
		mr.MallocsPerTurn = float64(a.mallocs) / float64(s.turns)
		if s.deltas > 0 {
			mr.CPUPerDeltaUs = float64(a.cpu) / float64(s.deltas) / 1e3
		}
	}
	if m.gateway() && s.turns > 0 {
		if a.redis != nil {
			mr.RedisPerTurn = float64(roundTrips(a.redis)) / float64(s.turns)
			mr.RedisRoundTrips = a.redis
		}
		if a.relay != nil {
			mr.RelayPerTurn = float64(roundTrips(a.relay)) / float64(s.turns)
			mr.RelayCommands = a.relay
		}
	}
	return mr
}
