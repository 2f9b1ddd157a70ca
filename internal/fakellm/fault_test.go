package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

const faultText = "The fault tests stream this sentence in small pieces."

func TestFaults(t *testing.T) {
	type check func(t *testing.T, x exchange, s *Server, log *chunkLog)
	wantComplete := func(t *testing.T, x exchange) decoded {
		t.Helper()
		if x.err != nil || x.readErr != nil {
			t.Fatalf("request: %v, body: %v", x.err, x.readErr)
		}
		d := decode(x.events)
		if d.content != faultText || !d.done {
			t.Errorf("content = %q (done %v), want %q then [DONE]", d.content, d.done, faultText)
		}
		return d
	}
	wantAbandoned := func(t *testing.T, s *Server) {
		t.Helper()
		waitFor(t, "Open() to drop to 0", func() bool { return s.Open() == 0 })
		if got := s.Served(); got != 0 {
			t.Errorf("Served() = %d, want 0", got)
		}
	}
	wantError := func(status int, retryAfter, typ string) check {
		return func(t *testing.T, x exchange, s *Server, _ *chunkLog) {
			if x.err != nil {
				t.Fatal(x.err)
			}
			var body struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if err := json.Unmarshal(x.body, &body); err != nil || body.Error.Message == "" {
				t.Errorf("body %s is not an OpenAI error (%v)", x.body, err)
			}
			if x.resp.StatusCode != status || x.resp.Header.Get("Retry-After") != retryAfter || body.Error.Type != typ {
				t.Errorf("got %d, Retry-After %q, type %q; want %d, %q, %q",
					x.resp.StatusCode, x.resp.Header.Get("Retry-After"), body.Error.Type, status, retryAfter, typ)
			}
			waitFor(t, "the error reply to count as served", func() bool { return s.Served() == 1 })
		}
	}

	tests := []struct {
		name    string
		fault   Fault
		timeout time.Duration
		check   check
	}{
		{name: "429 with Retry-After", fault: Fault{Status: 429, RetryAfter: "2"}, check: wantError(429, "2", "requests")},
		{name: "503", fault: Fault{Status: 503}, check: wantError(503, "", "server_error")},
		{name: "refuse", fault: Fault{Refuse: true}, check: func(t *testing.T, x exchange, s *Server, _ *chunkLog) {
			if x.err == nil {
				t.Fatalf("got %s, want a connection error", x.resp.Status)
			}
			wantAbandoned(t, s)
		}},
		{name: "first byte delay past the client timeout", fault: Fault{FirstByteDelay: time.Hour}, timeout: 100 * time.Millisecond,
			check: func(t *testing.T, x exchange, s *Server, _ *chunkLog) {
				var ne net.Error
				if !errors.As(x.err, &ne) || !ne.Timeout() {
					t.Fatalf("err = %v, want a client timeout", x.err)
				}
				wantAbandoned(t, s)
			}},
		{name: "first byte delay within the client timeout", fault: Fault{FirstByteDelay: 40 * time.Millisecond}, timeout: time.Minute,
			check: func(t *testing.T, x exchange, _ *Server, _ *chunkLog) {
				wantComplete(t, x)
				if x.elapsed < 40*time.Millisecond {
					t.Errorf("answered after %v, want at least 40ms", x.elapsed)
				}
			}},
		{name: "cut right after the headers", fault: Fault{Cut: true}, check: func(t *testing.T, x exchange, s *Server, _ *chunkLog) {
			if x.err != nil || x.resp.StatusCode != http.StatusOK {
				t.Fatalf("request: %v, want 200 headers", x.err)
			}
			if x.readErr == nil || len(x.events) != 0 {
				t.Errorf("read error %v and %d events, want a broken body and no events", x.readErr, len(x.events))
			}
			wantAbandoned(t, s)
		}},
		{name: "cut after two events", fault: Fault{Cut: true, CutAfter: 2}, check: func(t *testing.T, x exchange, s *Server, _ *chunkLog) {
			if x.err != nil {
				t.Fatal(x.err)
			}
			d := decode(x.events)
			if x.readErr == nil || len(x.events) != 2 || d.done || !strings.HasPrefix(faultText, d.content) {
				t.Errorf("read error %v, events %q; want a broken body after two chunks and no [DONE]", x.readErr, x.events)
			}
			wantAbandoned(t, s)
		}},
		{name: "stall", fault: Fault{StallAfter: 2, Stall: 60 * time.Millisecond}, check: func(t *testing.T, x exchange, _ *Server, log *chunkLog) {
			wantComplete(t, x)
			_, _, times := log.snapshot()
			if len(times) < 3 {
				t.Fatalf("%d chunks, want at least 3", len(times))
			}
			if gap := times[2].Sub(times[1]); gap < 60*time.Millisecond {
				t.Errorf("gap before the third chunk = %v, want the 60ms stall", gap)
			}
		}},
		{name: "malformed line", fault: Fault{MalformedSSE: true}, check: func(t *testing.T, x exchange, _ *Server, _ *chunkLog) {
			d := wantComplete(t, x)
			if len(d.bad) != 1 || json.Valid([]byte(d.bad[0])) {
				t.Errorf("undecodable events %q, want exactly one invalid JSON line", d.bad)
			}
		}},
		{name: "long line", fault: Fault{LongLine: 70000}, check: func(t *testing.T, x exchange, _ *Server, _ *chunkLog) {
			d := wantComplete(t, x)
			if len(d.bad) != 0 {
				t.Errorf("undecodable events %q, want none", d.bad)
			}
			long := 0
			for line := range bytes.Lines(x.body) {
				if len(line) > 1000 {
					long++
					if got := len(bytes.TrimSuffix(line, []byte("\n"))); got != 70000 {
						t.Errorf("long line is %d bytes, want 70000", got)
					}
				}
			}
			if long != 1 {
				t.Errorf("%d long lines, want 1", long)
			}
		}},
	}
	for _, tt := range tests {
		for _, via := range []string{"enqueued", "header"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				var log chunkLog
				s, url := start(t, Options{ChunkMin: 4, ChunkMax: 6, OnChunk: log.record})
				rep := Reply{Content: faultText}
				var h http.Header
				if via == "header" {
					h = http.Header{FaultHeader: {tt.fault.String()}}
				} else {
					rep.Fault = tt.fault
				}
				s.Enqueue(rep)
				tt.check(t, do(t, &http.Client{Timeout: tt.timeout}, url, chatBody(true), h), s, &log)
			})
		}
	}
}

func TestDrip(t *testing.T) {
	const text = "Drip, drip."
	const drip = 100 * time.Microsecond
	get := func(t *testing.T, rep Reply, h http.Header) exchange {
		s, url := start(t, Options{ChunkMin: 100, ChunkMax: 100})
		s.Enqueue(rep)
		x := do(t, nil, url, chatBody(true), h)
		if x.err != nil || x.readErr != nil {
			t.Fatalf("request: %v, body: %v", x.err, x.readErr)
		}
		return x
	}
	tests := []struct {
		name   string
		reply  Reply
		header http.Header
	}{
		{"enqueued", Reply{Content: text, Fault: Fault{Drip: drip}}, nil},
		{"header", Reply{Content: text}, http.Header{FaultHeader: {"drip=100us"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := get(t, Reply{Content: text}, nil).body
			x := get(t, tt.reply, tt.header)
			if !bytes.Equal(x.body, want) {
				t.Errorf("dripped body:\n%s\nwant the undripped body:\n%s", x.body, want)
			}
			if least := time.Duration(len(x.body)) * drip; x.elapsed < least {
				t.Errorf("%d bytes dripped in %v, want at least %v", len(x.body), x.elapsed, least)
			}
		})
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		in      string
		want    Fault
		wantErr string
	}{
		{in: "status=429;retry_after=2", want: Fault{Status: 429, RetryAfter: "2"}},
		{in: "cut_after=5", want: Fault{Cut: true, CutAfter: 5}},
		{in: "cut_after=0", want: Fault{Cut: true}},
		{in: "stall_after=3;stall=2s", want: Fault{StallAfter: 3, Stall: 2 * time.Second}},
		{in: "refuse", want: Fault{Refuse: true}},
		{in: "refuse=false", want: Fault{}},
		{in: "first_byte_delay=3s", want: Fault{FirstByteDelay: 3 * time.Second}},
		{in: "first_byte_delay=1.5", want: Fault{FirstByteDelay: 1500 * time.Millisecond}},
		{in: "malformed", want: Fault{MalformedSSE: true}},
		{in: " long_line=70000 ; drip=100ms ", want: Fault{LongLine: 70000, Drip: 100 * time.Millisecond}},
		{in: "", want: Fault{}},
		{in: "explode", wantErr: `"explode": unknown fault`},
		{in: "status=abc", wantErr: `"status=abc": want a count`},
		{in: "status=200", wantErr: "not an error status"},
		{in: "cut_after=-1", wantErr: "want a count"},
		{in: "stall=soon", wantErr: "want a duration"},
		{in: "refuse=maybe", wantErr: "want true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFault(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseFault = %+v, %v; want %+v", got, err, tt.want)
			}
			if back, err := ParseFault(got.String()); err != nil || back != got {
				t.Errorf("ParseFault(%q) = %+v, %v; want the fault back", got.String(), back, err)
			}
		})
	}
}

func TestFaultJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Fault
		want string
	}{
		{"zero", Fault{}, `{}`},
		{"status", Fault{Status: 429, RetryAfter: "2"}, `{"status":429,"retry_after":"2"}`},
		{"cut at zero", Fault{Cut: true}, `{"cut_after":0}`},
		{"durations", Fault{FirstByteDelay: time.Second, StallAfter: 1, Stall: 1500 * time.Millisecond, Drip: time.Millisecond},
			`{"first_byte_delay":"1s","stall_after":1,"stall":"1.5s","drip":"1ms"}`},
		{"lines", Fault{MalformedSSE: true, LongLine: 9, Refuse: true}, `{"refuse":true,"malformed":true,"long_line":9}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil || string(b) != tt.want {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tt.want)
			}
			var back Fault
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tt.in) {
				t.Errorf("Unmarshal = %+v, %v; want %+v", back, err, tt.in)
			}
		})
	}
	var f Fault
	if err := json.Unmarshal([]byte(`{"stall":2}`), &f); err != nil || f.Stall != 2*time.Second {
		t.Errorf("a number of seconds gives %v, %v; want 2s", f.Stall, err)
	}
}
