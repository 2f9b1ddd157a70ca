package module

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/extract"
)

// Block types of the response schema.
var blockTypes = []string{"paragraph", "heading", "list", "quote", "info", "warning", "success", "tip"}

// What the streamer does with the output, decided by its first non-space bytes.
const (
	modeStart    uint8 = iota // only white space so far
	modeFence                 // inside the opening ``` line, which is skipped
	modeJSON                  // feeding the extractor
	modeMarkdown              // not JSON: relaying the raw text as block 0
	modeDone                  // nothing more is streamed
)

var fence = []byte("```")

// streamer turns the model's output into delta events as it arrives, and keeps all of it for
// Finish.
//
// JSON output (starting with "{", or with a ``` fence line, which is skipped) goes through an
// extract.Extractor that streams every content.text_blocks[i].content and captures the sibling
// type: each piece of a block's content becomes a delta with Block i and BlockType its type.
// JSON does not order members, so a block's content may come before its type. That block's text
// is then buffered until its type is captured, or until the block is known to have ended (a
// string value of a later block or outside text_blocks begins, or the document ends), and sent
// in one delta; a block that ends without a (known) type is sent as "paragraph", which the
// schema check at Finish then judges. Fenced JSON is fed to the extractor up to the closing
// fence. An extractor error stops streaming without failing the turn: Finish decides from the
// whole output.
//
// Output that starts with anything else is not JSON, and Finish will turn it into one markdown
// paragraph: it is relayed raw, as it arrives, as block 0 "paragraph" deltas, holding back a
// UTF-8 sequence a fragment cuts short.
type streamer struct {
	out  []byte
	mode uint8
	// head holds the leading bytes until the mode is known.
	head []byte
	// fenced and lineStart look for the closing fence of fenced JSON: a backtick at the start
	// of a line (after white space) can only be that, since JSON strings hold no raw newlines.
	fenced, lineStart bool
	ex                *extract.Extractor
	// blocks are the text blocks whose end has not been seen, by index.
	blocks map[int]*block
	// queue collects the events of one feed call, merging consecutive pieces of one block.
	queue []coach.Event
	// tail is an incomplete UTF-8 sequence at the end of markdown output.
	tail []byte
}

// block is a text block being streamed.
type block struct {
	typ string
	// typed says typ is known; until then the block's text collects in buf.
	typed bool
	buf   []byte
}

func (s *streamer) init() {
	s.ex = extract.New(s)
	s.blocks = make(map[int]*block)
}

func (s *streamer) reset() {
	s.out = s.out[:0]
	s.mode = modeStart
	s.head, s.tail, s.queue = nil, nil, nil
	s.fenced, s.lineStart = false, false
	s.ex.Reset()
	clear(s.blocks)
}

// feed takes the next piece of output and returns the delta events it completes. The returned
// slice is only valid until the next call.
func (s *streamer) feed(b []byte) []coach.Event {
	s.out = append(s.out, b...)
	s.queue = s.queue[:0]
	switch s.mode {
	case modeStart:
		s.head = append(s.head, b...)
		t := bytes.TrimLeft(s.head, " \t\r\n")
		switch {
		case len(t) == 0:
		case t[0] == '{':
			s.mode = modeJSON
			s.json(t)
		case bytes.HasPrefix(t, fence):
			s.mode = modeFence
			s.fenceLine(t[len(fence):])
		case len(t) < len(fence) && bytes.Count(t, fence[:1]) == len(t):
			// One or two backticks: wait to see whether a fence follows.
		default:
			s.mode = modeMarkdown
			s.markdown(t)
		}
		if s.mode != modeStart {
			s.head = nil
		}
	case modeFence:
		s.fenceLine(b)
	case modeJSON:
		s.json(b)
	case modeMarkdown:
		s.markdown(b)
	}
	return s.queue
}

// fenceLine skips the rest of the opening fence line ("```json") and feeds what follows it.
func (s *streamer) fenceLine(b []byte) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return
	}
	s.mode, s.fenced, s.lineStart = modeJSON, true, true
	s.json(b[nl+1:])
}

// json feeds b to the extractor, up to the closing fence of fenced output.
func (s *streamer) json(b []byte) {
	if s.fenced {
		for i, c := range b {
			switch {
			case c == '\n':
				s.lineStart = true
			case s.lineStart && (c == ' ' || c == '\t' || c == '\r'):
			case s.lineStart && c == '`':
				s.write(b[:i])
				s.mode = modeDone
				return
			default:
				s.lineStart = false
			}
		}
	}
	s.write(b)
}

func (s *streamer) write(b []byte) {
	if len(b) == 0 || s.mode == modeDone {
		return
	}
	if err := s.ex.Write(b); err != nil {
		s.mode = modeDone
		return
	}
	if s.ex.Close() == nil {
		// The document is complete: no later value can end the open blocks, so end them now.
		s.endBlocks(math.MaxInt)
		s.mode = modeDone
	}
}

// Match streams the content and captures the type of every content.text_blocks[i]. Any string
// value that begins shows the blocks before it have ended.
func (s *streamer) Match(p extract.Path) (int, extract.Action) {
	if len(p) >= 3 && p[0].Is("content") && p[1].Is("text_blocks") && p[2].Key == nil && p[2].Index >= 0 {
		i := p[2].Index
		s.endBlocks(i)
		if len(p) == 4 {
			switch {
			case p[3].Is("content"):
				return i, extract.Stream
			case p[3].Is("type"):
				return i, extract.Capture
			}
		}
		return 0, extract.Skip
	}
	s.endBlocks(math.MaxInt)
	return 0, extract.Skip
}

// Text relays a piece of block id's content, or buffers it while the block's type is unknown.
func (s *streamer) Text(id int, _ extract.Path, text []byte) {
	b := s.block(id)
	if b.typed {
		s.emit(id, b.typ, string(text))
		return
	}
	b.buf = append(b.buf, text...)
}

// End takes a captured block type and sends the text buffered while it was unknown.
func (s *streamer) End(id int, p extract.Path, value []byte) {
	if !p[len(p)-1].Is("type") {
		return
	}
	b := s.block(id)
	if b.typed {
		return
	}
	b.typ, b.typed = blockType(value), true
	if len(b.buf) > 0 {
		s.emit(id, b.typ, string(b.buf))
		b.buf = nil
	}
}

func (s *streamer) block(i int) *block {
	b, ok := s.blocks[i]
	if !ok {
		b = &block{}
		s.blocks[i] = b
	}
	return b
}

// endBlocks ends every open block before index limit, sending the text of those whose type never
// came as "paragraph".
func (s *streamer) endBlocks(limit int) {
	if len(s.blocks) == 0 {
		return
	}
	var ended []int
	for i := range s.blocks {
		if i < limit {
			ended = append(ended, i)
		}
	}
	slices.Sort(ended)
	for _, i := range ended {
		if b := s.blocks[i]; !b.typed && len(b.buf) > 0 {
			s.emit(i, "paragraph", string(b.buf))
		}
		delete(s.blocks, i)
	}
}

// blockType returns a captured block type, or "paragraph" for one the schema does not know.
func blockType(v []byte) string {
	if i := slices.Index(blockTypes, string(v)); i >= 0 {
		return blockTypes[i]
	}
	return "paragraph"
}

// markdown relays raw output as block 0, never splitting a UTF-8 sequence.
func (s *streamer) markdown(b []byte) {
	s.tail = append(s.tail, b...)
	n := completeUTF8(s.tail)
	if n == 0 {
		return
	}
	s.emit(0, "paragraph", strings.ToValidUTF8(string(s.tail[:n]), "\uFFFD"))
	s.tail = append(s.tail[:0], s.tail[n:]...)
}

// completeUTF8 returns the length of b without a UTF-8 sequence cut short at its end.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// emit queues a delta, appending to the previous one when it is of the same block.
func (s *streamer) emit(block int, typ, text string) {
	if n := len(s.queue); n > 0 && s.queue[n-1].Block == block && s.queue[n-1].BlockType == typ {
		s.queue[n-1].Text += text
		return
	}
	s.queue = append(s.queue, coach.Event{Type: coach.EventDelta, Text: text, Block: block, BlockType: typ})
}
