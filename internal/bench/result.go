package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"time"
)

// Result is one run of the bench, as written to the JSON file.
type Result struct {
	Command string    `json:"command"`
	Date    time.Time `json:"date"`
	Machine Machine   `json:"machine"`
	Shape   ShapeInfo `json:"shape"`
	// Redis describes the gateway's Redis and how its round trips were counted.
	Redis string `json:"redis"`
	// RelayHopMs is the median time the counting relay (when used) adds to a Redis round trip.
	RelayHopMs *float64 `json:"relayHopMs,omitempty"`
	// Upstreams is how many model endpoints the gateway was configured with through
	// COACH_UPSTREAMS; 0 for OPENAI_BASE_URL alone.
	Upstreams int `json:"upstreams,omitempty"`
	// TurnLog is whether the gateway of the mode coachgw (and those configured like it) kept
	// its resumable-turn line log (Config.turnLog), whose appends add to its Redis round trips
	// per turn. False, or absent from the JSON, means it ran without the log.
	TurnLog bool `json:"turnLog,omitempty"`
	// PrivateChildren says that every child ran from a private copy of its executable and the
	// rounds ran the paths in a balanced order (see roundOrder); runs without it ran their
	// children from the bench's own binary, in rotating order.
	PrivateChildren bool    `json:"privateChildren,omitempty"`
	Levels          []Level `json:"levels"`
}

// Machine is where the bench ran.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpuModel"`
	GoVersion  string `json:"goVersion"`
	OS         string `json:"os"`
	Kernel     string `json:"kernel,omitempty"`
	MemTotal   string `json:"memTotal,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg at the start and the end: the machine may be
	// shared.
	LoadStart string `json:"loadStart,omitempty"`
	LoadEnd   string `json:"loadEnd,omitempty"`
}

// ShapeInfo is the scripted stream as run.
type ShapeInfo struct {
	Chunks     int     `json:"chunks"`
	ChunkMin   int     `json:"chunkMin"`
	ChunkMax   int     `json:"chunkMax"`
	DelayMinMs float64 `json:"delayMinMs"`
	DelayMaxMs float64 `json:"delayMaxMs"`
	// AnswerBytes and TextBytes are the mean sizes of the scripted answer and of its
	// assistantText; FirstPiece is the mean index of the piece completing the first text byte.
	AnswerBytes float64 `json:"answerBytes"`
	TextBytes   float64 `json:"textBytes"`
	FirstPiece  float64 `json:"firstPiece"`
}

// Level is one concurrency level.
type Level struct {
	Concurrency    int          `json:"concurrency"`
	TurnsPerMode   int          `json:"turnsPerMode"`
	Rounds         int          `json:"rounds"`
	TurnsPerWorker int          `json:"turnsPerWorkerPerRound"`
	Modes          []ModeResult `json:"modes"`
	// Hold is the gateway's memory with many streams open; ProxyHold the proxy's, the floor.
	Hold      *Hold `json:"hold,omitempty"`
	ProxyHold *Hold `json:"proxyHold,omitempty"`
}

// mode returns the figures of mode name, or nil.
func (l *Level) mode(name string) *ModeResult {
	for i := range l.Modes {
		if l.Modes[i].Mode == name {
			return &l.Modes[i]
		}
	}
	return nil
}

// ModeResult is one path at one level. Latencies are in milliseconds.
type ModeResult struct {
	Mode         string   `json:"mode"`
	Turns        int      `json:"turns"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	// TTFD and TTLL are the path's overheads (see the package comment); TTFDAbs and TTLLAbs
	// the client's own times from sending the request.
	TTFD    Summary `json:"ttfdOverhead"`
	TTLL    Summary `json:"ttllOverhead"`
	TTFDAbs Summary `json:"ttfd"`
	TTLLAbs Summary `json:"ttll"`
	// ToModel and FromModel split the TTFD overhead: the request's way to the model (for
	// coachgw: HTTP, claim, prompt, model request) and the first text's way back.
	ToModel   Summary `json:"toModel"`
	FromModel Summary `json:"fromModel"`
	// Held is the part of FromModel spent waiting for the model: its own time from the first
	// text to the piece completing the first line the path sent (see samples.held).
	Held Summary `json:"firstLineHeld"`
	// Delta is the per-line latency: arrival minus fakellm's flush of the completing piece.
	Delta Summary `json:"perDelta"`
	// Deltas counts text-carrying lines: SSE events for direct and proxy, delta lines for
	// coachgw.
	Deltas       int     `json:"deltas"`
	WallSeconds  float64 `json:"wallSeconds"`
	TurnsPerSec  float64 `json:"turnsPerSec"`
	DeltasPerSec float64 `json:"deltasPerSec"`
	// MachineBusy is the share of all the machine's CPU time that was busy during the phases
	// (steal included); BenchCPUPerTurnUs the bench process's own CPU (fakellm and client).
	MachineBusy       float64 `json:"machineBusy"`
	BenchCPUPerTurnUs float64 `json:"benchCpuPerTurnUs"`
	// ModelDialsPerTurn is the connections fakellm accepted per turn: a path that keeps too
	// few idle connections to the model dials anew for most turns.
	ModelDialsPerTurn float64 `json:"modelDialsPerTurn"`
	// CPU and allocations of the proxy or gateway process (none for direct).
	CPUPerTurnUs float64 `json:"cpuPerTurnUs,omitempty"`
	// CPUPerTurnUsByRound is CPUPerTurnUs of each round's phase, in the order of the rounds:
	// two paths' figures of the same round ran within a minute of each other, so their ratio,
	// round by round, shows how much of a difference between the paths is the machine's noise.
	CPUPerTurnUsByRound []float64 `json:"cpuPerTurnUsByRound,omitempty"`
	CPUPerDeltaUs       float64   `json:"cpuPerDeltaUs,omitempty"`
	AllocPerTurn        float64   `json:"allocBytesPerTurn,omitempty"`
	MallocsPerTurn      float64   `json:"allocsPerTurn,omitempty"`
	// RedisPerTurn is the gateway's Redis round trips per turn, connection set-up excluded, as
	// counted by the hook on its own Redis client (RedisRoundTrips, by label).
	RedisPerTurn    float64          `json:"redisPerTurn,omitempty"`
	RedisRoundTrips map[string]int64 `json:"redisRoundTrips,omitempty"`
	// RelayPerTurn and RelayCommands are the same as seen on the wire by the relay, when used.
	RelayPerTurn  float64          `json:"relayPerTurn,omitempty"`
	RelayCommands map[string]int64 `json:"relayCommands,omitempty"`
}

// Hold is the memory of the gateway with many streams open at once.
type Hold struct {
	Streams int `json:"streams"`
	// Opened streams delivered their first delta; Paused ones reached the hold point.
	Opened       int      `json:"opened"`
	Paused       int      `json:"paused"`
	Errors       int      `json:"errors"`
	ErrorSamples []string `json:"errorSamples,omitempty"`
	OpenSeconds  float64  `json:"openSeconds"`
	// RSS before the streams (after a forced GC), with all streams paused, and after a forced
	// GC with all streams still paused.
	RSSBefore      int64 `json:"rssBefore"`
	RSSHeld        int64 `json:"rssHeld"`
	RSSHeldAfterGC int64 `json:"rssHeldAfterGC"`
	// Go heap in use and goroutine stacks, before and with the streams (both after a GC).
	HeapBefore  uint64 `json:"heapBefore"`
	HeapHeld    uint64 `json:"heapHeld"`
	StackBefore uint64 `json:"stackBefore"`
	StackHeld   uint64 `json:"stackHeld"`
	// Per opened stream, in bytes.
	RSSPerStream        float64 `json:"rssPerStream"`
	RSSPerStreamAfterGC float64 `json:"rssPerStreamAfterGC"`
	HeapPerStream       float64 `json:"heapPerStream"`
	StackPerStream      float64 `json:"stackPerStream"`
	GoroutinesBefore    int     `json:"goroutinesBefore"`
	GoroutinesHeld      int     `json:"goroutinesHeld"`
}

func shapeJSON(s Shape, scripts []*script) ShapeInfo {
	info := ShapeInfo{
		Chunks: s.Chunks, ChunkMin: s.ChunkMin, ChunkMax: s.ChunkMax,
		DelayMinMs: ms(int64(s.DelayMin)), DelayMaxMs: ms(int64(s.DelayMax)),
	}
	for _, sc := range scripts {
		info.AnswerBytes += float64(len(sc.raw))
		info.TextBytes += float64(len(sc.text))
		info.FirstPiece += float64(sc.first)
	}
	if n := float64(len(scripts)); n > 0 {
		info.AnswerBytes /= n
		info.TextBytes /= n
		info.FirstPiece /= n
	}
	return info
}

func readMachine() Machine {
	m := Machine{
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, LoadStart: loadAverage(),
	}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
