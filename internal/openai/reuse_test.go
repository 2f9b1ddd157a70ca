package openai

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestConnectionIsReusedAfterDone checks that consecutive streams share one connection: go-openai
// stops reading at [DONE], and a body closed unread would make net/http dial every turn anew.
func TestConnectionIsReusedAfterDone(t *testing.T) {
	// The end of the chunked body follows [DONE] a moment later, as it does from real servers
	// and from fakellm under load.
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		serve(chunkRole, chunkHel, chunkStop, done)(w, r)
		time.Sleep(10 * time.Millisecond)
	})
	var conns atomic.Int32
	u.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	c := u.client(Config{})
	for i := 0; i < 3; i++ {
		st, err := c.Stream(context.Background(), coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}}})
		if err != nil {
			t.Fatalf("Stream %d: %v", i, err)
		}
		for {
			if _, err := st.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("Next: %v", err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		u.request(t)
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("3 streams used %d connections, want 1", got)
	}
}
