package safety

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkScreenInput measures one check of a learner's turn, the work added before the first
// delta (the budget is 300 ms p95 there; this is microseconds).
func BenchmarkScreenInput(b *testing.B) {
	s := newScreen(b)
	inputs := map[string]string{
		"short_benign": "I feel like I'm dying when I panic, what can I do?",
		"long_benign": strings.Repeat("When I have to present in class my heart races, I get dizzy and I avoid raising my hand. ", 6) +
			"Me muero de nervios antes del examen y no sé cómo calmarme.",
		"crisis": "Ya no aguanto más. No quiero seguir viviendo, todos estarían mejor sin mí.",
	}
	for name, in := range inputs {
		b.Run(name, func(b *testing.B) {
			t := Text{Stage: StageInput, Locale: "es-MX", Content: in}
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Check(context.Background(), t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWindow measures the output side: one check of a full holdback window, and a whole
// 600-character answer streamed in 4-character deltas through a window of the default holdback.
func BenchmarkWindow(b *testing.B) {
	s := newScreen(b)
	answer := strings.Repeat("Let's try a breathing exercise: breathe in for four, hold for seven, and breathe out for eight. ", 6)
	b.Run("check_one_window", func(b *testing.B) {
		window := answer[:DefaultHoldback]
		b.ReportAllocs()
		for b.Loop() {
			if v := s.check(StageOutput, window); v.Crisis {
				b.Fatal("hit")
			}
		}
	})
	b.Run("stream_answer_4char_deltas", func(b *testing.B) {
		b.SetBytes(int64(len(answer)))
		b.ReportAllocs()
		for b.Loop() {
			w := NewWindow(s, DefaultHoldback)
			for i := 0; i < len(answer); i += 4 {
				if _, v := w.Push(answer[i:min(i+4, len(answer))]); v.Crisis {
					b.Fatal("hit")
				}
			}
			if _, v := w.Flush(); v.Crisis {
				b.Fatal("hit")
			}
		}
	})
}
