package fakellm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
)

// Recording makes a Server a recording proxy. Every chat-completion request is sent on to
// Upstream with the client's Authorization (or APIKey when the client sent none), and the
// response streams back to the client unchanged, flushed as it arrives. Each exchange that
// completes with status 200 is saved in Dir as <time>-<n>.request.json (the request body as
// received) and <time>-<n>.sse (the response body), ready to be replayed as a fixture. Scripts,
// the Responder, faults and OnChunk do not apply while recording.
type Recording struct {
	// Upstream is the base URL of the endpoint, e.g. "https://api.openai.com/v1".
	Upstream string
	// Dir receives the recordings; it must exist.
	Dir string
	// APIKey is sent as bearer token when the client sent no Authorization.
	APIKey string
	// Client sends the upstream requests (default: a client that opens a connection for each,
	// see recordClient).
	Client *http.Client
}

// recordClient sends a recording proxy's upstream requests over a new connection each. A
// chat completion is a POST, which Go's transport does not resend when a kept-alive
// connection turns out to be closed by the server (llama-server closes idle ones): reusing
// connections would answer such calls 502 and make the caller retry calls the endpoint never
// saw. A recording proxy makes a few calls a second, so a connection each costs nothing.
var recordClient = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr}
}()

// Record returns a Recording of upstream into dir, for Options.Record.
func Record(upstream, dir string) *Recording {
	return &Recording{Upstream: upstream, Dir: dir}
}

// forwarded lists the request headers passed upstream.
var forwarded = []string{"Authorization", "Content-Type", "Accept", "OpenAI-Organization", "OpenAI-Project", "OpenAI-Beta", "User-Agent"}

// hopByHop lists the response headers that describe the upstream connection, not the response.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Content-Length": true,
	"Trailer": true, "Upgrade": true, "Proxy-Connection": true,
}

// proxy relays req upstream and its response back, and reports whether it was relayed in full.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, req *Request, seq uint64, log zerolog.Logger) bool {
	rec := s.opts.Record
	url := strings.TrimRight(rec.Upstream, "/") + "/chat/completions"
	up, err := http.NewRequestWithContext(r.Context(), http.MethodPost, url, bytes.NewReader(req.Raw))
	if err != nil {
		writeError(w, http.StatusBadGateway, "fakellm: upstream request: "+err.Error())
		return true
	}
	for _, h := range forwarded {
		if v := r.Header.Values(h); len(v) > 0 {
			up.Header[h] = v
		}
	}
	if up.Header.Get("Authorization") == "" && rec.APIKey != "" {
		up.Header.Set("Authorization", "Bearer "+rec.APIKey)
	}
	if up.Header.Get("Content-Type") == "" {
		up.Header.Set("Content-Type", "application/json")
	}
	client := rec.Client
	if client == nil {
		client = recordClient
	}
	resp, err := client.Do(up)
	if err != nil {
		if r.Context().Err() != nil {
			return false
		}
		log.Warn().Err(err).Msg("fakellm: upstream")
		writeError(w, http.StatusBadGateway, "fakellm: upstream: "+err.Error())
		return true
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		if !hopByHop[k] {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	if flush(w) != nil {
		return false
	}

	var body bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			body.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil || flush(w) != nil {
				return false
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			log.Warn().Err(err).Msg("fakellm: upstream response broke off; not recorded")
			hangUp(w)
			return false
		}
	}
	if resp.StatusCode != http.StatusOK {
		log.Info().Int("status", resp.StatusCode).Msg("fakellm: upstream error relayed; not recorded")
		return true
	}
	name := filepath.Join(rec.Dir, fmt.Sprintf("%s-%d", s.opts.Now().UTC().Format("20060102T150405.000Z"), seq))
	if err := writeNew(name+".request.json", req.Raw); err != nil {
		log.Error().Err(err).Msg("fakellm: saving a recording")
		return true
	}
	if err := writeNew(name+".sse", body.Bytes()); err != nil {
		log.Error().Err(err).Msg("fakellm: saving a recording")
		return true
	}
	log.Info().Str("file", name+".sse").Msg("fakellm: recorded")
	return true
}

// writeNew writes a file that must not exist yet, so a recording never overwrites another.
func writeNew(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
