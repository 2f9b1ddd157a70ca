package module

import (
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// BenchmarkFeed measures relaying a structured response that arrives in small fragments, as
// model streams deliver it.
func BenchmarkFeed(b *testing.B) {
	out := richResponse
	var frags []coach.Fragment
	for i := 0; i < len(out); i += 6 {
		frags = append(frags, coach.Fragment{Content: out[i:min(i+6, len(out))]})
	}
	c := newContract(b)
	s := newSession(b, c, "quarters", "en")
	tn, err := c.Begin(s, message("hi"))
	if err != nil {
		b.Fatal(err)
	}
	emit := func(coach.Event) {}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		tn.Reset()
		for _, f := range frags {
			_ = tn.Feed(f, emit)
		}
	}
}

// BenchmarkDetect measures keyword detection on a learner message against the shipped module.
func BenchmarkDetect(b *testing.B) {
	m := Builtin()[0]
	text := "Cuando tengo que hablar en público siento el corazón acelerado, evito las reuniones " +
		"y pienso lo peor. I think it is my fight-or-flight response; my mother has anxiety too, " +
		"so maybe it is genetic. What can I do? Breathing exercises never worked for me."
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		m.Detect(text)
	}
}
