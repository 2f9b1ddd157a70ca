package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// HeaderServerTiming carries where a turn's time went (W3C Server Timing: "name;dur=ms" entries,
// comma-separated). A turn's response has it twice: in its head, with what is known before the
// first line (claim, prompt), and as a trailer after the last line, with the rest (the model's
// first byte, the first line, the overheads). The head leaves before the model is asked, so it
// cannot wait for the rest; the trailer is declared in the head (Trailer: Server-Timing), which
// HTTP/1.1 chunked responses and HTTP/2 carry, and Go's and curl's clients read (browsers show
// the head's entries only).
const HeaderServerTiming = "Server-Timing"

// timingHead sets the head's Server-Timing of a turn from t, and declares the trailer.
func timingHead(h http.Header, t coach.Timing) {
	h.Add("Trailer", HeaderServerTiming)
	b := make([]byte, 0, 48)
	b = appendTiming(b, "claim", t.Claim)
	b = appendTiming(b, "prompt", t.Prompt)
	h.Set(HeaderServerTiming, string(b))
}

// timingTrailer sets the trailer's Server-Timing of a finished turn: model_ttfb, the model's
// time to its first byte (when it sent one); first_line, the time to the first delta line, and
// first_line_overhead, the gateway's part of it (when a delta was sent); model, the time the
// turn waited on the model; turn_overhead, the turn's time minus model; total, the turn's time.
// Every time counts from the turn's start (the claim), like the head's.
func timingTrailer(h http.Header, rep coach.Report) {
	b := make([]byte, 0, 160)
	if rep.Timing.ModelFirstByte > 0 {
		b = appendTiming(b, "model_ttfb", rep.Timing.ModelFirstByte)
	}
	if d, ok := rep.FirstLineOverhead(); ok {
		b = appendTiming(b, "first_line", rep.FirstDelta)
		b = appendTiming(b, "first_line_overhead", d)
	}
	b = appendTiming(b, "model", rep.Timing.Model)
	b = appendTiming(b, "turn_overhead", rep.TurnOverhead())
	b = appendTiming(b, "total", rep.Duration)
	h.Set(HeaderServerTiming, string(b))
}

// appendTiming appends the entry "name;dur=ms" to b, in milliseconds to the microsecond.
func appendTiming(b []byte, name string, d time.Duration) []byte {
	if len(b) > 0 {
		b = append(b, ", "...)
	}
	b = append(b, name...)
	b = append(b, ";dur="...)
	return strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
}
