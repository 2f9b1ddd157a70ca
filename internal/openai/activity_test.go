package openai

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestActivityReportsBodyBytes checks that the stream tells the engine of every read that brought
// bytes of the body, so that a stream trickling one byte at a time counts as alive although
// whole fragments come slowly; the response headers do not count.
func TestActivityReportsBodyBytes(t *testing.T) {
	body := "data: " + chunkRole + "\n\ndata: " + chunkStop + "\n\ndata: [DONE]\n\n"
	u := newUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := range len(body) {
			_, _ = io.WriteString(w, body[i:i+1])
			w.(http.Flusher).Flush()
		}
	})
	var reads atomic.Int64
	s, err := u.client(Config{}).Stream(context.Background(), hello, coach.StreamHooks{Activity: func() { reads.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := reads.Load(); n != 0 {
		t.Errorf("activity reported %d times before the body was read, want 0", n)
	}
	for {
		if _, err := s.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	// Flushed bytes may arrive together, but a body read one byte per flush takes many reads.
	if n := reads.Load(); n < 2 {
		t.Errorf("activity reported %d times for a body of %d separately flushed bytes, want one per read that brought bytes", n, len(body))
	}
}
