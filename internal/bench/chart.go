package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// chart layout, in SVG user units.
const (
	chartLabelW = 90
	chartPanelW = 300
	chartGapW   = 36
	chartRowH   = 118 // with three paths; each further path adds chartBoxH+12
	chartTop    = 58
	chartBoxH   = 16
	chartBottom = 30
)

var (
	chartMetrics = []struct {
		title string
		get   func(*ModeResult) Summary
	}{
		{"TTFD overhead", func(m *ModeResult) Summary { return m.TTFD }},
		{"TTLL overhead", func(m *ModeResult) Summary { return m.TTLL }},
		{"per-delta latency", func(m *ModeResult) Summary { return m.Delta }},
	}
	chartColors = map[string]string{"direct": "#8c8c8c", "proxy": "#3b75af", "coachgw": "#e8762b", "coachgw+log": "#b3452c", "coachgw/safety-off": "#6a9f58", "coachgw@baseline": "#8e6bb8"}
)

// SVG draws, per level and per metric, one box plot per path on a logarithmic axis, so that
// direct, proxy and coachgw can be compared at a glance.
func (r *Report) SVG() string {
	levels := r.levels()
	paths := 3
	for _, l := range levels {
		paths = max(paths, len(l.Modes))
	}
	chartRowH := chartRowH + (paths-3)*(chartBoxH+12)
	width := chartLabelW + len(chartMetrics)*(chartPanelW+chartGapW)
	height := chartTop + len(levels)*chartRowH + chartBottom
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%d" y="18" font-size="14" font-weight="bold">coachgw vs proxy vs direct: what each path adds (log scales, one per panel)</text>`+"\n", chartLabelW)
	lx := chartLabelW
	legend := []string{"direct", "proxy", "coachgw"}
	for _, name := range []string{CoachgwLog.String(), CoachgwSafetyOff.String(), CoachgwBaseline.String()} {
		for _, l := range levels {
			if l.mode(name) != nil {
				legend = append(legend, name)
				break
			}
		}
	}
	for _, name := range legend {
		w(`<rect x="%d" y="28" width="12" height="12" fill="%s"/><text x="%d" y="38">%s</text>`+"\n", lx, chartColors[name], lx+16, name)
		lx += max(90, 26+7*len(name)) // about 7 px a character at 11 px
	}
	w(`<text x="%d" y="38" fill="#555">box p25-p75, line p50, whiskers p1-p99, dot max</text>`+"\n", lx+10)

	for col, metric := range chartMetrics {
		x0 := float64(chartLabelW + col*(chartPanelW+chartGapW))
		w(`<text x="%.1f" y="%d" font-weight="bold">%s</text>`+"\n", x0, chartTop-6, html.EscapeString(metric.title))
		for li := range levels {
			modes := levels[li].Modes
			// Each panel has its own decades, so that the paths of one level can be compared
			// however far apart the levels are.
			lo, hi := math.Inf(1), math.Inf(-1)
			for mi := range modes {
				if s := metric.get(&modes[mi]); s.N > 0 {
					lo = math.Min(lo, math.Max(s.P1, 1e-3))
					hi = math.Max(hi, s.Max)
				}
			}
			if math.IsInf(lo, 1) {
				continue
			}
			lo = math.Pow(10, math.Floor(math.Log10(lo)))
			hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
			scale := func(v float64) float64 {
				v = math.Min(math.Max(v, lo), hi)
				return x0 + (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*chartPanelW
			}
			y0 := float64(chartTop + li*chartRowH)
			w(`<rect x="%.1f" y="%.1f" width="%d" height="%d" fill="#f6f6f6" stroke="#ddd"/>`+"\n", x0, y0, chartPanelW, chartRowH-22)
			// Label every decade, or every other one when they would run into each other.
			every := 1
			if decades := math.Log10(hi / lo); chartPanelW/decades < 70 {
				every = 2
			}
			for i, d := 0, lo; d <= hi*1.0001; i, d = i+1, d*10 {
				x := scale(d)
				w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", x, y0, x, y0+float64(chartRowH-22))
				if i%every != 0 {
					continue
				}
				// The end labels stay inside the panel, clear of the neighbours'.
				anchor := "middle"
				switch {
				case d == lo:
					anchor = "start"
				case d*10 > hi*1.0001:
					anchor = "end"
				}
				w(`<text x="%.1f" y="%.1f" text-anchor="%s" fill="#555">%s</text>`+"\n", x, y0+float64(chartRowH-10), anchor, tickLabel(d))
			}
			for mi := range modes {
				m := &modes[mi]
				s := metric.get(m)
				if s.N == 0 {
					continue
				}
				y := y0 + 10 + float64(mi)*(chartBoxH+12)
				mid := y + chartBoxH/2
				color := chartColors[m.Mode]
				w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", scale(s.P1), mid, scale(s.P99), mid, color)
				for _, v := range []float64{s.P1, s.P99} {
					w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", scale(v), y+3, scale(v), y+chartBoxH-3, color)
				}
				w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.75" stroke="%s"><title>%s p25 %s, p50 %s, p75 %s, p99 %s, max %s ms</title></rect>`+"\n",
					scale(s.P25), y, math.Max(scale(s.P75)-scale(s.P25), 1), chartBoxH, color, color, m.Mode,
					fmtMs(s.P25), fmtMs(s.P50), fmtMs(s.P75), fmtMs(s.P99), fmtMs(s.Max))
				w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", scale(s.P50), y, scale(s.P50), y+chartBoxH)
				w(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", scale(s.Max), mid, color)
			}
			if col == 0 {
				w(`<text x="8" y="%.1f" font-weight="bold">c = %d</text>`+"\n", y0+float64(chartRowH)/2-8, levels[li].Concurrency)
			}
		}
	}
	w("</svg>\n")
	return b.String()
}

// tickLabel renders a power of ten of milliseconds.
func tickLabel(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.0f s", ms/1000)
	case ms >= 1:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return strings.TrimRight(fmt.Sprintf("%.3f", ms), "0") + " ms"
}
