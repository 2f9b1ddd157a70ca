package coachclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
)

// transcriptServer serves a transcript of n entries, paged as the gateway pages it, and records
// the query of every request.
func transcriptServer(t *testing.T, n int64, queries *[]string) *Client {
	t.Helper()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		*queries = append(*queries, r.URL.RawQuery)
		if r.URL.Path != "/v1/sessions/s1/messages" || r.Method != http.MethodGet {
			http.Error(w, "wrong route", http.StatusNotFound)
			return
		}
		limit, before := int64(50), n+1
		if v := r.URL.Query().Get("limit"); v != "" {
			limit, _ = strconv.ParseInt(v, 10, 64)
		}
		if v := r.URL.Query().Get("before"); v != "" {
			before, _ = strconv.ParseInt(v, 10, 64)
		}
		start := max(1, before-limit)
		page := map[string]any{"messages": []any{}, "next": nil}
		var msgs []any
		for seq := start; seq < before && seq <= n; seq++ {
			msgs = append(msgs, map[string]any{"seq": seq, "at": "2026-01-02T03:04:05Z", "role": "learner", "input": map[string]string{"message": fmt.Sprint("m", seq)}})
		}
		if msgs != nil {
			page["messages"] = msgs
		}
		if start > 1 {
			page["next"] = start
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	})
}

func TestMessages(t *testing.T) {
	var queries []string
	c := transcriptServer(t, 7, &queries)
	p, err := c.Messages(context.Background(), "s1", MessagesOptions{Limit: 3, Before: 6})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 3 || p.Messages[0].Seq != 3 || p.Messages[2].Seq != 5 || p.Next == nil || *p.Next != 3 {
		t.Errorf("page = %+v, want seqs 3..5 and next 3", p)
	}
	if e := p.Messages[0]; e.Role != RoleLearner || string(e.Input) != `{"message":"m3"}` || e.At.IsZero() {
		t.Errorf("entry = %+v", e)
	}
	if _, err := c.Messages(context.Background(), "s1", MessagesOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"before=6&limit=3", ""}; fmt.Sprint(queries) != fmt.Sprint(want) {
		t.Errorf("queries = %q, want %q", queries, want)
	}
}

func TestTranscript(t *testing.T) {
	for _, tt := range []struct {
		n        int64
		pageSize int
		requests int
	}{
		{0, 0, 1},
		{7, 0, 1},
		{7, 3, 3},
		{6, 3, 2},
		{120, 50, 3},
	} {
		t.Run(fmt.Sprintf("%d entries by %d", tt.n, tt.pageSize), func(t *testing.T) {
			var queries []string
			all, err := transcriptServer(t, tt.n, &queries).Transcript(context.Background(), "s1", tt.pageSize)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(all)) != tt.n || len(queries) != tt.requests {
				t.Fatalf("%d entries in %d requests, want %d in %d", len(all), len(queries), tt.n, tt.requests)
			}
			for i, e := range all {
				if e.Seq != int64(i+1) {
					t.Fatalf("entry %d has seq %d, want oldest first without gaps", i, e.Seq)
				}
			}
		})
	}
}

// TestTranscriptStopsOnAServerThatGoesNowhere checks that a server whose next never moves back
// cannot keep Transcript asking for ever.
func TestTranscriptStopsOnAServerThatGoesNowhere(t *testing.T) {
	calls := 0
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"messages":[{"seq":5,"at":"2026-01-02T03:04:05Z","role":"coach","result":{},"fallback":true}],"next":5}`))
	})
	all, err := c.Transcript(context.Background(), "s1", 1)
	if err != nil || calls != 2 || len(all) != 2 || !all[0].Fallback {
		t.Errorf("Transcript = %d entries, %v after %d calls; want it to stop after the second page", len(all), err, calls)
	}
}

func TestContinueTurn(t *testing.T) {
	b, _ := json.Marshal(Continue())
	if string(b) != `{"continue":true}` {
		t.Errorf("Continue() = %s, want {\"continue\":true}", b)
	}
}
