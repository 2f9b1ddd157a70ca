package openai

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestConnectionIsReusedAfterDone checks that consecutive streams share one connection: go-openai
// stops reading at [DONE], and a body closed unread would make net/http dial every turn anew.
func TestConnectionIsReusedAfterDone(t *testing.T) {
	// Each request's client address names its connection. The end of the chunked body follows
	// [DONE] a moment later, as it does from real servers and from fakellm under load.
	addrs := make(chan string, 3)
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		addrs <- r.RemoteAddr
		serve(chunkRole, chunkHel, chunkStop, done)(w, r)
		time.Sleep(10 * time.Millisecond)
	})
	c := u.client(Config{})
	conns := map[string]bool{}
	for i := 0; i < 3; i++ {
		st, err := c.Stream(context.Background(), coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}}}, coach.StreamHooks{})
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
		conns[<-addrs] = true
	}
	if len(conns) != 1 {
		t.Errorf("3 streams used %d connections (%v), want 1", len(conns), conns)
	}
}
