package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// redisMetric is the gateway's histogram of Redis round trips, by command label: a hook on its
// Redis client observes every command once and every pipeline once.
const redisMetric = `coachgw_redis_command_duration_seconds_count{command="`

// scrapeRedis reads the gateway's Redis round trips so far, by label, from its /metrics.
func scrapeRedis(ctx context.Context, hc *http.Client, base string) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	counts := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), redisMetric)
		if !ok {
			continue
		}
		name, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		counts[name] = int64(n)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return counts, nil
}

// notRoundTrips are the labels that do not serve a turn: the hook's dial and handshake (and the
// HELLO go-redis may send alone on a new connection), learner
// safety's audit writes (one batch for all turns every 200 ms, whatever the traffic), the
// commands of a handshake as the relay sees them, and the circuit breaker's background reads of
// the circuits other instances opened (a PTTL per model endpoint about once a second, whatever
// the traffic; see redisstore.Store.OpenCircuits).
var notRoundTrips = map[string]bool{
	"dial": true, "handshake": true, "hello": true, "audit": true,
	"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "READONLY": true,
	"pttl": true, "PTTL": true,
}

// roundTrips sums the counts that are a turn's round trips.
func roundTrips(counts map[string]int64) int64 {
	var n int64
	for _, v := range turnRoundTrips(counts) {
		n += v
	}
	return n
}

// addDiff adds after-before, label by label, to acc (allocating it on first use).
func addDiff(acc, after, before map[string]int64) map[string]int64 {
	if acc == nil {
		acc = map[string]int64{}
	}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			acc[k] += d
		}
	}
	return acc
}

// turnRoundTrips returns the counts that are a turn's round trips, the ones RedisPerTurn sums:
// what the report breaks that figure down into.
func turnRoundTrips(counts map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(counts))
	for k, v := range counts {
		if !notRoundTrips[k] {
			out[k] = v
		}
	}
	return out
}
