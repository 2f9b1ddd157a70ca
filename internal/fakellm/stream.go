package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/outbound"
)

// plan is a response laid out as the events it is written in. Faults count events: an event is
// one SSE message ("data: …\n\n"), or the whole body of a non-streamed answer.
type plan struct {
	events [][]byte
	// texts holds the text each event carries, "" for events without any.
	texts []string
}

func (p *plan) add(ev []byte, text string) {
	p.events = append(p.events, ev)
	p.texts = append(p.texts, text)
}

func (p *plan) insert(i int, ev []byte) {
	i = min(max(i, 0), len(p.events))
	p.events = append(p.events[:i], append([][]byte{ev}, p.events[i:]...)...)
	p.texts = append(p.texts[:i], append([]string{""}, p.texts[i:]...)...)
}

var doneEvent = []byte("data: [DONE]\n\n")

// sse frames v as one SSE data event.
func sse(v any) []byte {
	b := append([]byte("data: "), encode(v)...)
	return append(b, "\n\n"...)
}

// streamPlan lays out the streamed answer rep as OpenAI would: the first event carries the
// assistant role (with the first content piece, or with the tool call's id and name), then one
// event per piece, a final event with the finish reason, the usage chunk when asked for, and
// [DONE].
func (s *Server) streamPlan(req *Request, rep Reply, m meta, rng *rand.Rand) *plan {
	content, args := replyTexts(rep)
	contentPieces := split(content, s.opts.ChunkMin, s.opts.ChunkMax, rng)
	argPieces := split(args, s.opts.ChunkMin, s.opts.ChunkMax, rng)
	if rep.Chunks != nil {
		if rep.ToolCall != nil {
			argPieces = rep.Chunks
		} else {
			contentPieces = rep.Chunks
		}
	}
	if rep.ToolCall == nil && len(contentPieces) == 0 {
		contentPieces = []string{""}
	}

	p := &plan{}
	role := "assistant"
	for _, piece := range contentPieces {
		p.add(sse(m.chunk(deltaJSON{Role: role, Content: &piece}, nil)), piece)
		role = ""
	}
	finish := "stop"
	if tc := rep.ToolCall; tc != nil {
		finish = "tool_calls"
		open := toolCallDelta{ID: toolCallID(tc, m), Type: "function", Function: functionDelta{Name: tc.Name}}
		p.add(sse(m.chunk(deltaJSON{Role: role, ToolCalls: []toolCallDelta{open}}, nil)), "")
		for _, piece := range argPieces {
			frag := toolCallDelta{Function: functionDelta{Arguments: piece}}
			p.add(sse(m.chunk(deltaJSON{ToolCalls: []toolCallDelta{frag}}, nil)), piece)
		}
	}
	p.add(sse(m.chunk(deltaJSON{}, &finish)), "")
	if req.IncludeUsage {
		u := usage(req, content+args)
		c := m.chunk(deltaJSON{}, nil)
		c.Choices, c.Usage = []choiceDelta{}, &u
		p.add(sse(c), "")
	}
	p.add(doneEvent, "")
	return p
}

// split cuts text into pieces of lo to hi bytes (the last may be shorter). A cut never falls
// inside a UTF-8 sequence: it moves back to the character's start, or forward past its end when
// moving back would leave fewer than lo bytes.
func split(text string, lo, hi int, rng *rand.Rand) []string {
	var out []string
	for text != "" {
		n := lo + rng.IntN(hi-lo+1)
		if n >= len(text) {
			return append(out, text)
		}
		cut := n
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut < lo {
			for cut = n; cut < len(text) && !utf8.RuneStart(text[cut]); cut++ {
			}
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return out
}

// insertFaults adds the extra events of the stream faults: the long line right after the first
// event, the malformed line halfway through.
func (p *plan) insertFaults(f Fault, m meta) {
	if f.LongLine > 0 {
		p.insert(1, longLine(f.LongLine, m))
	}
	if f.MalformedSSE {
		p.insert(max(1, len(p.events)/2), malformedEvent(m))
	}
}

// longLine returns a valid chunk without text whose data line (without its newline) is n bytes
// long, or as short as such a chunk can be.
func longLine(n int, m meta) []byte {
	empty := ""
	c := m.chunk(deltaJSON{Content: &empty}, nil)
	c.Obfuscation = "x"
	base := len("data: ") + len(encode(c)) - 1
	c.Obfuscation = strings.Repeat("x", max(n-base, 1))
	return sse(c)
}

// malformedEvent is a data line whose JSON breaks off, as a proxy that truncated a line would
// leave it.
func malformedEvent(m meta) []byte {
	return []byte(`data: {"id":"` + m.id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + "\n\n")
}

// write plays p with fault f and reports whether every event was written.
func (s *Server) write(ctx context.Context, w http.ResponseWriter, p *plan, f Fault, rng *rand.Rand) bool {
	seq := 0
	for i, ev := range p.events {
		if f.Stall > 0 && i == f.StallAfter && !outbound.Sleep(ctx, f.Stall) {
			return false
		}
		if f.Cut && i == f.CutAfter {
			hangUp(w)
			return false
		}
		if i > 0 && !outbound.Sleep(ctx, s.delay(rng)) {
			return false
		}
		if err := writeEvent(ctx, w, ev, f.Drip); err != nil {
			return false
		}
		if s.opts.OnChunk != nil && p.texts[i] != "" {
			s.opts.OnChunk(seq, p.texts[i], time.Now())
			seq++
		}
	}
	if f.Cut {
		// CutAfter is past the last event: the body is all there but never properly ended.
		hangUp(w)
		return false
	}
	return true
}

func (s *Server) delay(rng *rand.Rand) time.Duration {
	d := s.opts.DelayMin
	if span := s.opts.DelayMax - s.opts.DelayMin; span > 0 {
		d += time.Duration(rng.Int64N(int64(span) + 1))
	}
	return d
}

// writeEvent writes and flushes ev, or with drip > 0 trickles it one flushed byte per drip.
func writeEvent(ctx context.Context, w http.ResponseWriter, ev []byte, drip time.Duration) error {
	if drip <= 0 {
		if _, err := w.Write(ev); err != nil {
			return err
		}
		return flush(w)
	}
	for i := range ev {
		if !outbound.Sleep(ctx, drip) {
			return ctx.Err()
		}
		if _, err := w.Write(ev[i : i+1]); err != nil {
			return err
		}
		if err := flush(w); err != nil {
			return err
		}
	}
	return nil
}

// fixture reads the recorded response name from Options.Fixtures.
func (s *Server) fixture(name string) ([]byte, error) {
	if !strings.HasSuffix(name, ".sse") {
		name += ".sse"
	}
	if s.opts.Fixtures == nil {
		return nil, errors.New("no fixtures configured to replay " + name)
	}
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("invalid fixture name %q", name)
	}
	return fs.ReadFile(s.opts.Fixtures, name)
}

// fixturePlan splits a recorded SSE body into its events, each keeping its blank-line
// terminator, so that writing them back reproduces b exactly. withText extracts each event's
// text for OnChunk.
func fixturePlan(b []byte, withText bool) *plan {
	p := &plan{}
	for len(b) > 0 {
		n := bytes.Index(b, []byte("\n\n"))
		if n < 0 {
			n = len(b)
		} else {
			n += 2
		}
		text := ""
		if withText {
			text = eventText(b[:n])
		}
		p.add(b[:n:n], text)
		b = b[n:]
	}
	return p
}

// eventText returns the content and tool-call argument text of one SSE event.
func eventText(ev []byte) string {
	var text strings.Builder
	for line := range bytes.Lines(ev) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(bytes.TrimSpace(data), &c) != nil {
			continue
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				text.WriteString(tc.Function.Arguments)
			}
		}
	}
	return text.String()
}
