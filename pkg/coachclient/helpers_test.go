package coachclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// wait bounds how long a test waits for something that should happen at once; it only decides
// how long a broken test takes to fail.
const wait = 5 * time.Second

func timeout() <-chan time.Time { return time.After(wait) }

// serve returns a Client of a test server that answers every request with h.
func serve(t *testing.T, h http.HandlerFunc, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(srv.URL, opts...)
}

// streamOf returns a handler that answers with an NDJSON stream of chunks, each written and
// flushed on its own, so the client sees them arrive apart.
func streamOf(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		rc := http.NewResponseController(w)
		for _, c := range chunks {
			if _, err := w.Write([]byte(c)); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// bytewise splits s into chunks of one byte.
func bytewise(s string) []string {
	out := make([]string, len(s))
	for i := range len(s) {
		out[i] = s[i : i+1]
	}
	return out
}

// show renders an event as its Go type and wire line, for comparisons and messages.
func show(ev Event) string {
	if ev == nil {
		return "<nil>"
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Sprintf("%T (unmarshalable: %v)", ev, err)
	}
	return fmt.Sprintf("%T %s", ev, b)
}

// readAll reads s to its end and returns the events shown and the error that ended it.
func readAll(s *Stream) ([]string, error) {
	var got []string
	for {
		ev, err := s.Next()
		if err != nil {
			return got, err
		}
		got = append(got, show(ev))
	}
}
