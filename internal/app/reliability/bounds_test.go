package reliability_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// endlessUpstream is an OpenAI-compatible endpoint whose every answer opens a toulmin result's
// assistantText and then streams valid chunks of text without end, as fast as the connection
// takes them, until the client goes away. It counts the bytes it managed to write.
func endlessUpstream(t *testing.T) (url string, written *atomic.Int64) {
	written = &atomic.Int64{}
	chunk := func(text string) []byte {
		return fmt.Appendf(nil, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","+
			"\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", text)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		first, rest := chunk(`{"step":"claim","assistantText":"`), chunk(strings.Repeat("la ", 10_000))
		if _, err := w.Write(first); err != nil {
			return
		}
		for r.Context().Err() == nil {
			n, err := w.Write(rest)
			written.Add(int64(n))
			if err != nil || rc.Flush() != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", written
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestEndlessUpstreamHeapBounded runs a turn against an endpoint that streams valid output
// without end. Each attempt stops reading at COACH_MAX_OUTPUT_BYTES, so the turn ends with its
// error line long before its deadline, the gateway's live heap (sampled after a collection all
// through the turn) stays within 64 MB of where it started, and the session is not written.
// Without the bound the gateway kept every byte until the turn deadline.
func TestEndlessUpstreamHeapBounded(t *testing.T) {
	url, written := endlessUpstream(t)
	g := apptest.Start(t, func(c *config.Config) {
		c.OpenAIBaseURL = url
		c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 5*time.Second, 5*time.Second, 60*time.Second
	})
	s := g.Create("toulmin", nil)
	base := liveHeap()

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), liveHeap()))
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	st := g.OpenTurn(s.ID, apptest.Msg("Cities should ban cars from their centres."))
	// A gateway without the bound reads until the turn deadline; the test gives up on it once
	// it has taken 1 GB.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil && written.Load() < 1<<30 {
			time.Sleep(10 * time.Millisecond)
		}
		st.Close()
	}()
	tr, err := st.Rest()
	cancel()
	close(stop)
	<-sampled
	grown := int64(peak.Load()) - int64(base)
	t.Logf("upstream wrote %d MB; live heap grew by at most %.1f MB", written.Load()>>20, float64(grown)/(1<<20))
	if err != nil {
		t.Fatalf("reading the stream: %.200v", err)
	}
	if last := tr.Last(); last.Type != "error" || last.Error != "coach_validation_failed" {
		t.Errorf("last line %s, want error coach_validation_failed", last.Raw)
	}
	if grown > 64<<20 {
		t.Errorf("live heap grew by %d MB during the turn, want under 64 MB", grown>>20)
	}
	// Two attempts of 256 KiB each, plus whatever the socket buffers held when reading stopped.
	if w := written.Load(); w > 64<<20 {
		t.Errorf("the upstream wrote %d MB: the gateway kept reading past its bound", w>>20)
	}
	if after := g.Get(s.ID); after.Version != s.Version {
		t.Errorf("session version %d after a failed turn, want %d", after.Version, s.Version)
	}
}

// TestOversizedOutputRefused scripts answers far over the output bound: an 8 MB assistantText
// (toulmin) and a 10 MB display_card argument (cards). Both are unusable output: the toulmin
// turn ends with its error line, the cards turn with the fallback card, and the stored session
// stays small either way.
func TestOversizedOutputRefused(t *testing.T) {
	pieces := func(prefix string, n int, suffix string) []string {
		out := []string{prefix}
		for range n / (64 << 10) {
			out = append(out, strings.Repeat("a", 64<<10))
		}
		return append(out, suffix)
	}
	// Deadlines far from anything a loaded machine might hit: the test is about sizes.
	g := apptest.Start(t, func(c *config.Config) {
		c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 20*time.Second, 20*time.Second, 60*time.Second
	})
	rdb := redisClient(t, g.Config.RedisURL)
	// relayed counts the text of every delta line, resets or not.
	relayed := func(tr apptest.TurnResponse) int {
		n := 0
		for _, l := range tr.Lines {
			if l.Type == "delta" {
				n += len(l.Text)
			}
		}
		return n
	}

	t.Run("8 MB assistantText", func(t *testing.T) {
		s := g.Create("toulmin", nil)
		huge := fakellm.Reply{Chunks: pieces(`{"step":"claim","assistantText":"`, 8<<20, `"}`)}
		g.LLM.Enqueue(huge, huge)
		tr := g.Turn(s.ID, apptest.Msg("Cities should ban cars."))
		if last := tr.Last(); last.Type != "error" || last.Error != "coach_validation_failed" {
			t.Errorf("last line %.300s, want error coach_validation_failed", last.Raw)
		}
		if n := relayed(tr); n > 2*(256<<10) {
			t.Errorf("relayed %d bytes of text, want at most two attempts' bound", n)
		}
		if doc := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID); len(doc) > 16<<10 {
			t.Errorf("stored session of %d bytes, want a small one", len(doc))
		}
	})
	t.Run("10 MB display_card argument", func(t *testing.T) {
		s := g.Create("cards", nil)
		huge := fakellm.Reply{ToolCall: &fakellm.ToolCall{Name: "display_card"}, Chunks: pieces(`{"card_type":"insight","content":"`, 10<<20, `"}`)}
		g.LLM.Enqueue(huge, huge)
		tr := g.Turn(s.ID, apptest.Msg("Begin training."))
		if last := tr.Last(); last.Type != "result" || !last.Fallback {
			t.Errorf("last line %.300s, want the fallback card", last.Raw)
		}
		if n := relayed(tr); n > 2*(256<<10) {
			t.Errorf("relayed %d bytes of text, want at most two attempts' bound", n)
		}
		if doc := rawDoc(t, rdb, g.Config.RedisPrefix, s.ID); len(doc) > 16<<10 {
			t.Errorf("stored session of %d bytes, want a small one", len(doc))
		}
	})
}
