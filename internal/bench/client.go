package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Mode is a path from the client to the model.
type Mode int

// The three paths of the bench.
const (
	// Direct: the client reads fakellm's SSE stream itself (the model alone).
	Direct Mode = iota
	// Proxy: through a plain httputil.ReverseProxy (the floor for any gateway).
	Proxy
	// Coachgw: a real toulmin turn through the gateway, its NDJSON stream read by the client.
	Coachgw
	// CoachgwLog: the same turn through a second gateway that keeps its resumable-turn line
	// log (Config.TurnLogAB), so that the cost of the log is measured in the same rounds.
	CoachgwLog
	// CoachgwSafetyOff: the same turn through a second gateway with its learner-safety checks
	// off (COACH_SAFETY_MODE=off; Config.SafetyAB), so that what enforcing them costs is
	// measured in the same rounds as coachgw, which runs the default, enforce.
	CoachgwSafetyOff
	// CoachgwBaseline: the same turn through a gateway built from other code (Config.Baseline,
	// e.g. a commit from before a round of features), configured alike, so that CPU and latency
	// are compared with it in the same rounds.
	CoachgwBaseline
)

func (m Mode) String() string {
	switch m {
	case Direct:
		return "direct"
	case Proxy:
		return "proxy"
	case CoachgwLog:
		return "coachgw+log"
	case CoachgwSafetyOff:
		return "coachgw/safety-off"
	case CoachgwBaseline:
		return "coachgw@baseline"
	default:
		return "coachgw"
	}
}

// gateway reports whether m runs turns through a coachgw gateway.
func (m Mode) gateway() bool {
	return m == Coachgw || m == CoachgwLog || m == CoachgwSafetyOff || m == CoachgwBaseline
}

// isGateway is gateway for a mode's name in a result.
func isGateway(name string) bool {
	return name == Coachgw.String() || name == CoachgwLog.String() || name == CoachgwSafetyOff.String() ||
		name == CoachgwBaseline.String()
}

// userMessage is the learner's message of every turn; the tag follows it.
const userMessage = "I think cities should close their centres to private cars by 2030, because cars make streets unsafe."

// systemPrompt stands in for a coaching prompt in the requests the client sends the model
// directly or through the proxy, so that their requests are about as large as the gateway's
// (7.7 KB on a session's first turn: the toulmin prompt and the strict JSON schema).
var systemPrompt = strings.Repeat("You are a writing coach who helps a learner build a Toulmin argument one element at a time. ", 80)

// client plays the learner (or, for direct and proxy, an application calling the model). It
// timestamps every line it reads on the run's clock.
type client struct {
	clk clock
	hc  *http.Client
	// chatHead and chatTail surround the tag in a direct or proxied chat request.
	chatHead, chatTail []byte
}

func newClient(clk clock) *client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 1 << 16,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
	}
	const mark = "\x00TAG\x00"
	body, _ := json.Marshal(map[string]any{
		"model": "bench", "stream": true,
		"response_format": map[string]string{"type": "json_object"},
		"messages": []map[string]string{
			{"role": "system", "content": systemPrompt},
			{"role": "user", "content": userMessage + " " + mark},
		},
	})
	mk, _ := json.Marshal(mark)
	head, tail, _ := bytes.Cut(body, mk[1:len(mk)-1])
	return &client{clk: clk, hc: &http.Client{Transport: tr}, chatHead: head, chatTail: tail}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// sseTurn asks for a chat completion at base (fakellm or the proxy) and reads its SSE stream.
// Event k of the stream carries piece k of the script. opened, when set, is called when the
// event with the first text arrives.
func (c *client) sseTurn(ctx context.Context, base string, r *turnRec, opened func()) error {
	body := make([]byte, 0, len(c.chatHead)+len(c.chatTail)+24)
	body = append(append(append(body, c.chatHead...), tag(r.seq)...), c.chatTail...)
	resp, err := c.post(ctx, base+"/v1/chat/completions", body, http.StatusOK, &r.send)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	ev := 0
	for {
		line, err := readLine(br)
		t := c.clk.now()
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			if bytes.HasPrefix(data, []byte("[DONE]")) {
				r.last = t
				break
			}
			if ev < len(r.sc.pieces) {
				r.recv = append(r.recv, t)
				r.recvChunk = append(r.recvChunk, int32(ev))
				if ev == r.sc.first {
					r.first = t
					if opened != nil {
						opened()
					}
				}
			}
			ev++
		}
		if err != nil {
			if err == io.EOF {
				return errors.New("the stream ended without [DONE]")
			}
			return err
		}
	}
	if ev < len(r.sc.pieces) {
		return fmt.Errorf("%d text events, want %d", ev, len(r.sc.pieces))
	}
	_, _ = io.Copy(io.Discard, br)
	return nil
}

// post sends body as JSON to url and returns the response, which must have status want (a
// failure quotes the start of the body). sent, when set, receives the clock time the request left.
func (c *client) post(ctx context.Context, url string, body []byte, want int, sent *int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if sent != nil {
		*sent = c.clk.now()
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp, nil
}

// createSession creates a toulmin session at the gateway.
func (c *client) createSession(ctx context.Context, base string) (string, error) {
	resp, err := c.post(ctx, base+"/v1/sessions", []byte(`{"contract":"toulmin"}`), http.StatusCreated, nil)
	if err != nil {
		return "", fmt.Errorf("creating a session: %w", err)
	}
	defer resp.Body.Close()
	var s struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.ID == "" {
		return "", fmt.Errorf("creating a session: unreadable answer (%v)", err)
	}
	return s.ID, nil
}

// gatewayTurn runs a toulmin turn of session at the gateway and reads its NDJSON stream. Each
// delta line is checked against the script's assistantText and mapped to the piece that
// completed its last byte. opened, when set, is called when the first delta arrives.
func (c *client) gatewayTurn(ctx context.Context, base, session string, r *turnRec, opened func()) error {
	msg, _ := json.Marshal(map[string]string{"message": userMessage + " " + tag(r.seq)})
	resp, err := c.post(ctx, base+"/v1/sessions/"+session+"/turns", msg, http.StatusOK, &r.send)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 32<<10)
	text := r.sc.text
	at := 0
	question := false
	for {
		line, err := readLine(br)
		t := c.clk.now()
		if len(line) > 0 {
			switch {
			case bytes.HasPrefix(line, []byte(`{"type":"delta"`)):
				var d struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal(line, &d); err != nil {
					return fmt.Errorf("unreadable delta line: %v", err)
				}
				if at == len(text) && d.Text == questionDelta && !question {
					// The appended question is the gateway's, not the model's: it has no
					// chunk, so it is checked but not timed.
					question = true
					break
				}
				end := at + len(d.Text)
				if end > len(text) || text[at:end] != d.Text {
					return fmt.Errorf("delta %q does not continue assistantText at byte %d", d.Text, at)
				}
				at = end
				r.recv = append(r.recv, t)
				r.recvChunk = append(r.recvChunk, int32(r.sc.chunkOfDelta(end)))
				if r.first == 0 {
					r.first = t
					if opened != nil {
						opened()
					}
				}
			case bytes.HasPrefix(line, []byte(`{"type":"result"`)):
				r.last = t
			default:
				var e struct {
					Type    string `json:"type"`
					Error   string `json:"error"`
					Reason  string `json:"reason"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal(line, &e)
				return fmt.Errorf("%s line: %s%s %s", e.Type, e.Error, e.Reason, e.Message)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	switch {
	case r.last == 0:
		return errors.New("the stream ended without a result line")
	case at != len(text):
		return fmt.Errorf("the deltas hold %d of assistantText's %d bytes", at, len(text))
	case !question && r.mode != CoachgwBaseline:
		// A baseline built from code older than the appended question sends none.
		return errors.New("the stream has no delta with the appended question")
	}
	return nil
}

// readLine returns the next line without its newline. A line longer than the reader's buffer
// (a result line with a long session) is assembled from its pieces.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	return bytes.TrimRight(line, "\r\n"), err
}
