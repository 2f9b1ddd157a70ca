package metrics

import (
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// The helpers below read the registry the way prometheus/testutil's ToFloat64 and
// CollectAndCount do. testutil itself needs github.com/kylelemons/godebug, which go.sum does not
// list.

// family returns the gathered metric family called name, or nil.
func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// series returns the series of metric name whose labels are exactly the name/value pairs given.
func series(t *testing.T, m *Metrics, name string, labels ...string) *dto.Metric {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("labels of %s must come in name/value pairs: %q", name, labels)
	}
	mf := family(t, m, name)
	if mf == nil {
		return nil
	}
	for _, s := range mf.GetMetric() {
		var got []string
		for _, lp := range s.GetLabel() {
			got = append(got, lp.GetName(), lp.GetValue())
		}
		if sameLabels(got, labels) {
			return s
		}
	}
	return nil
}

func sameLabels(a, b []string) bool {
	pairs := func(l []string) []string {
		var out []string
		for i := 0; i+1 < len(l); i += 2 {
			out = append(out, l[i]+"="+l[i+1])
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(pairs(a), pairs(b))
}

// value returns a counter's or gauge's value, or a histogram's sample count, of one series; a
// missing series reads as -1 so that a test can tell it from zero.
func value(t *testing.T, m *Metrics, name string, labels ...string) float64 {
	t.Helper()
	s := series(t, m, name, labels...)
	switch {
	case s == nil:
		return -1
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	}
	t.Fatalf("%s%q is neither a counter, a gauge nor a histogram", name, labels)
	return 0
}

// count returns how many series metric name has.
func count(t *testing.T, m *Metrics, name string) int {
	t.Helper()
	if mf := family(t, m, name); mf != nil {
		return len(mf.GetMetric())
	}
	return 0
}
