package fakellm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fault is how an answer misbehaves. The zero Fault answers normally. Counts refer to events
// (see the package comment); the faults that insert events (MalformedSSE, LongLine) act on SSE
// answers only. Steps happen in this order: FirstByteDelay, Refuse, Status, then the events.
type Fault struct {
	// Status, when non-zero (400 to 599), answers with this HTTP status and an OpenAI-style
	// error body, with a Retry-After header when RetryAfter is set.
	Status     int
	RetryAfter string
	// Refuse closes the connection without any response.
	Refuse bool
	// FirstByteDelay is a wait before anything is written, headers included.
	FirstByteDelay time.Duration
	// Stall, when positive, is a pause after StallAfter events (0: right after the headers).
	StallAfter int
	Stall      time.Duration
	// Cut closes the connection abruptly after CutAfter events (0: right after the headers), so
	// the client sees neither [DONE] nor the end of the body.
	Cut      bool
	CutAfter int
	// MalformedSSE inserts, halfway through the stream, a data line whose JSON breaks off.
	MalformedSSE bool
	// LongLine, when positive, inserts after the first event a valid chunk without text whose
	// data line is LongLine bytes long.
	LongLine int
	// Drip writes the response one flushed byte at a time, with this pause before each byte.
	Drip time.Duration
}

// ParseFault reads the X-Fakellm-Fault syntax: key[=value] items separated by ";", e.g.
// "status=429;retry_after=2" or "stall_after=3;stall=2s". Durations are Go durations or a
// number of seconds.
func ParseFault(s string) (Fault, error) {
	var f Fault
	for item := range strings.SplitSeq(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, hasVal := strings.Cut(item, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		var err error
		switch key {
		case "status":
			f.Status, err = count(val)
		case "retry_after":
			f.RetryAfter = val
		case "refuse":
			f.Refuse, err = flag(val, hasVal)
		case "first_byte_delay":
			f.FirstByteDelay, err = duration(val)
		case "stall_after":
			f.StallAfter, err = count(val)
		case "stall":
			f.Stall, err = duration(val)
		case "cut_after":
			f.Cut = true
			f.CutAfter, err = count(val)
		case "malformed", "malformed_sse":
			f.MalformedSSE, err = flag(val, hasVal)
		case "long_line":
			f.LongLine, err = count(val)
		case "drip":
			f.Drip, err = duration(val)
		default:
			err = errors.New("unknown fault")
		}
		if err != nil {
			return Fault{}, fmt.Errorf("%q: %w", item, err)
		}
	}
	return f, f.validate()
}

func count(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("want a count")
	}
	return n, nil
}

func flag(s string, hasVal bool) (bool, error) {
	if !hasVal {
		return true, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, errors.New("want true or false")
	}
	return b, nil
}

func duration(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("want a duration such as 2s or 150ms")
	}
	return d, nil
}

func (f Fault) validate() error {
	switch {
	case f.Status != 0 && (f.Status < 400 || f.Status > 599):
		return fmt.Errorf("fault status %d is not an error status (400-599)", f.Status)
	case f.StallAfter < 0 || f.CutAfter < 0 || f.LongLine < 0:
		return errors.New("fault counts must not be negative")
	case f.FirstByteDelay < 0 || f.Stall < 0 || f.Drip < 0:
		return errors.New("fault durations must not be negative")
	}
	return nil
}

// String renders f in the X-Fakellm-Fault syntax.
func (f Fault) String() string {
	var items []string
	add := func(cond bool, item string) {
		if cond {
			items = append(items, item)
		}
	}
	add(f.Status != 0, "status="+strconv.Itoa(f.Status))
	add(f.RetryAfter != "", "retry_after="+f.RetryAfter)
	add(f.Refuse, "refuse")
	add(f.FirstByteDelay > 0, "first_byte_delay="+f.FirstByteDelay.String())
	add(f.Stall > 0, "stall_after="+strconv.Itoa(f.StallAfter)+";stall="+f.Stall.String())
	add(f.Cut, "cut_after="+strconv.Itoa(f.CutAfter))
	add(f.MalformedSSE, "malformed")
	add(f.LongLine > 0, "long_line="+strconv.Itoa(f.LongLine))
	add(f.Drip > 0, "drip="+f.Drip.String())
	return strings.Join(items, ";")
}

// faultJSON is Fault on the control endpoint: snake_case keys like the header's, durations as
// strings ("2s"), and cut_after present exactly when the fault cuts.
type faultJSON struct {
	Status         int          `json:"status,omitempty"`
	RetryAfter     string       `json:"retry_after,omitempty"`
	Refuse         bool         `json:"refuse,omitempty"`
	FirstByteDelay jsonDuration `json:"first_byte_delay,omitzero"`
	StallAfter     int          `json:"stall_after,omitempty"`
	Stall          jsonDuration `json:"stall,omitzero"`
	CutAfter       *int         `json:"cut_after,omitempty"`
	MalformedSSE   bool         `json:"malformed,omitempty"`
	LongLine       int          `json:"long_line,omitempty"`
	Drip           jsonDuration `json:"drip,omitzero"`
}

// MarshalJSON writes f as the control endpoint reads it.
func (f Fault) MarshalJSON() ([]byte, error) {
	j := faultJSON{
		Status: f.Status, RetryAfter: f.RetryAfter, Refuse: f.Refuse,
		FirstByteDelay: jsonDuration(f.FirstByteDelay), StallAfter: f.StallAfter,
		Stall: jsonDuration(f.Stall), MalformedSSE: f.MalformedSSE, LongLine: f.LongLine,
		Drip: jsonDuration(f.Drip),
	}
	if f.Cut {
		j.CutAfter = &f.CutAfter
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads f from keys named like the header's items; durations are strings such as
// "2s" or numbers of seconds.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Fault{
		Status: j.Status, RetryAfter: j.RetryAfter, Refuse: j.Refuse,
		FirstByteDelay: time.Duration(j.FirstByteDelay), StallAfter: j.StallAfter,
		Stall: time.Duration(j.Stall), Cut: j.CutAfter != nil, MalformedSSE: j.MalformedSSE,
		LongLine: j.LongLine, Drip: time.Duration(j.Drip),
	}
	if f.Cut {
		f.CutAfter = *j.CutAfter
	}
	return nil
}

// jsonDuration is a duration written as a Go duration string.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err error
	var t time.Duration
	switch v := v.(type) {
	case string:
		t, err = duration(v)
	case float64:
		t, err = duration(strconv.FormatFloat(v, 'f', -1, 64))
	default:
		err = errors.New("want a duration such as \"2s\"")
	}
	*d = jsonDuration(t)
	return err
}
