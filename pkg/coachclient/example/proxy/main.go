// Command proxy is an example of a service in front of coachgw. It serves POST /turn with a body
// {"sessionId":"…", "message":"…"} (or "selected", "form", "step", as a coachgw turn takes them)
// and passes the turn's stream on to its client as it arrives: it reads the events with
// coachclient's typed reader and writes each one as an NDJSON line, flushed at once. When its
// client leaves, the upstream turn is cancelled.
//
// Usage:
//
//	COACHGW_URL=http://127.0.0.1:8080 COACHGW_API_KEY=… go run ./pkg/coachclient/example/proxy -addr 127.0.0.1:8081
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/coachgw/coachgw/pkg/coachclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	upstream := fs.String("upstream", getenv("COACHGW_URL"), "coachgw base URL (default $COACHGW_URL, else http://127.0.0.1:8080)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		*upstream = "http://127.0.0.1:8080"
	}
	client := coachclient.New(*upstream, coachclient.WithAPIKey(getenv("COACHGW_API_KEY")))

	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(client), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Printf("proxy: listening on %s, upstream %s", l.Addr(), *upstream)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Streams still open after the grace period are cut; their clients see the stream end
		// without a result line and know the turn did not complete.
		return errors.Join(err, srv.Close())
	}
	return nil
}

// maxBody bounds a turn request; coachgw's own default limit is the same.
const maxBody = 64 << 10

func newHandler(client *coachclient.Client) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /turn", &proxy{client: client})
	return mux
}

type proxy struct {
	client *coachclient.Client
}

// turnRequest is the proxy's request: which session, and the turn itself.
type turnRequest struct {
	SessionID string `json:"sessionId"`
	coachclient.TurnRequest
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Reading the body to its end matters: only then does net/http watch the connection and
	// cancel r.Context() when the client goes away, which is what cancels the upstream turn.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, errorBody{Error: "body_too_large", Message: "the request body is too large"})
		return
	}
	var in turnRequest
	if err := json.Unmarshal(body, &in); err != nil || in.SessionID == "" {
		writeError(w, http.StatusBadRequest, errorBody{Error: "invalid_request", Message: `the body must be a JSON object with a "sessionId"`})
		return
	}

	stream, err := p.client.Turn(r.Context(), in.SessionID, in.TurnRequest)
	if err != nil {
		var apiErr *coachclient.APIError
		switch {
		case errors.As(err, &apiErr):
			// coachgw's own answer (unknown session, session_busy, invalid_input, ...) is the
			// client's business: pass it on.
			if apiErr.RetryAfter > 0 {
				secs := (apiErr.RetryAfter + time.Second - 1) / time.Second
				w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
			}
			writeError(w, apiErr.Status, errorBody{Error: apiErr.Code, Message: apiErr.Message, Field: apiErr.Field})
		case r.Context().Err() != nil:
			// The client left before the stream started; nobody is listening.
		default:
			log.Printf("proxy: turn of session %s: %v", in.SessionID, err)
			writeError(w, http.StatusBadGateway, errorBody{Error: "upstream_unavailable", Message: "the coaching gateway cannot be reached"})
		}
		return
	}
	defer stream.Close()

	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		ev, err := stream.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			// The upstream stream broke off. A stream must end with a result or an error line,
			// so the client gets one.
			log.Printf("proxy: stream of session %s: %v", in.SessionID, err)
			ev = coachclient.Error{Code: "coach_stream_failed", Message: "the coaching gateway's stream broke off"}
		}
		if writeLine(w, rc, ev) != nil || err != nil {
			// A failed write means the client is gone; returning closes the upstream stream.
			return
		}
	}
}

// writeLine writes ev as one NDJSON line and flushes it.
func writeLine(w io.Writer, rc *http.ResponseController, ev coachclient.Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return err
	}
	return rc.Flush()
}

// errorBody is coachgw's error body, which the proxy uses for its own errors too.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, body errorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
