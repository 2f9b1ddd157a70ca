package bench

import (
	"math"
	"slices"
	"time"
)

// Summary describes a latency distribution in milliseconds.
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P1   float64 `json:"p1"`
	P25  float64 `json:"p25"`
	P50  float64 `json:"p50"`
	P75  float64 `json:"p75"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// summarize sorts samples (nanoseconds) in place and describes them in milliseconds.
// Percentiles are nearest-rank: the p-th percentile is the smallest sample that at least p% of
// the samples do not exceed, so p99 of 100 samples is the 99th smallest, never an interpolation.
func summarize(samples []int64) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum float64
	for _, v := range samples {
		sum += float64(v)
	}
	return Summary{
		N:    len(samples),
		Min:  ms(samples[0]),
		P1:   ms(percentile(samples, 1)),
		P25:  ms(percentile(samples, 25)),
		P50:  ms(percentile(samples, 50)),
		P75:  ms(percentile(samples, 75)),
		P90:  ms(percentile(samples, 90)),
		P95:  ms(percentile(samples, 95)),
		P99:  ms(percentile(samples, 99)),
		Max:  ms(samples[len(samples)-1]),
		Mean: sum / float64(len(samples)) / float64(time.Millisecond),
	}
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []int64, p float64) int64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func ms(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }

// samples collects one mode's measurements over the rounds of a level, in nanoseconds.
type samples struct {
	// ttfd and ttll are what the path added to the model's own time to first text and to the
	// end of the stream (see turnRec.overheads); ttfdAbs and ttllAbs are the client's times.
	ttfd, ttll       []int64
	ttfdAbs, ttllAbs []int64
	// toModel and fromModel split ttfd: from sending the request to its arrival at fakellm,
	// and from fakellm's flush of the first text to its arrival at the client.
	toModel, fromModel []int64
	// held is, per turn, the model's own time from the flush of the first text to the flush of
	// the piece that completed the first text-carrying line: zero for a path that relays text
	// as it comes, the wait for a clause end (or the holdback) for a gateway whose output
	// window holds text until it is checked.
	held []int64
	// delta holds, per text-carrying line, the time it reached the client minus the time
	// fakellm flushed the chunk that completed it.
	delta  []int64
	turns  int
	deltas int
	errs   int
	// errSamples keeps the first few error messages.
	errSamples []string
}

const maxErrSamples = 5

func (s *samples) addErr(msg string) {
	s.errs++
	if len(s.errSamples) < maxErrSamples {
		s.errSamples = append(s.errSamples, msg)
	}
}

func (s *samples) merge(o *samples) {
	s.ttfd = append(s.ttfd, o.ttfd...)
	s.ttll = append(s.ttll, o.ttll...)
	s.ttfdAbs = append(s.ttfdAbs, o.ttfdAbs...)
	s.ttllAbs = append(s.ttllAbs, o.ttllAbs...)
	s.toModel = append(s.toModel, o.toModel...)
	s.fromModel = append(s.fromModel, o.fromModel...)
	s.held = append(s.held, o.held...)
	s.delta = append(s.delta, o.delta...)
	s.turns += o.turns
	s.deltas += o.deltas
	for _, e := range o.errSamples {
		if len(s.errSamples) < maxErrSamples {
			s.errSamples = append(s.errSamples, e)
		}
	}
	s.errs += o.errs
}
