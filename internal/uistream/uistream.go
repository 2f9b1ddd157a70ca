// Package uistream speaks the Vercel AI SDK's UI message stream (version 1) for a turn: it reads
// the request body that the SDK's chat transport (useChat, the Chat classes) sends and turns it
// into the turn's input, and it encodes the turn's events as the server-sent events the SDK
// reads. It is an adapter over the same turn pipeline as the NDJSON stream, not a second one: the
// engine emits the same coach.Event values, and a Writer is just another coach.Sink.
//
// How the events map (see docs/frontend.md, "AI SDK (useChat)"):
//
//   - the stream opens with {"type":"start","messageId":…};
//   - visible text is a text part: text-start, text-delta…, text-end. Toulmin and cards turns
//     have one text part; a module turn has one per text block, whose text-start carries
//     providerMetadata {"coachgw":{"block":i,"blockType":"paragraph"}}. The parts of an attempt
//     stay open until it ends;
//   - every other NDJSON line becomes a data part named data-coach-<line type> whose data is that
//     line's object without its "type": data-coach-card {card}, data-coach-result {result,
//     session, fallback?…}, data-coach-reset {reason} (transient), data-coach-error {error,
//     message}, data-coach-safety {kind, locale, message, resources} (a crisis turn's
//     resources, before its text; kept in the message, so that a client shows them for as long
//     as it shows the turn);
//   - a reset first ends the open text parts with "discarded":true in their coachgw provider
//     metadata; the text that follows is a new part with a new id;
//   - an error line is data-coach-error followed by the SDK's own {"type":"error","errorText"};
//   - the stream ends with {"type":"finish"} and data: [DONE].
package uistream

import (
	"io"
	"net/http"
	"strconv"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// HeaderName and HeaderValue mark a response as a UI message stream; the SDK's transport
// requires them.
const (
	HeaderName  = "x-vercel-ai-ui-message-stream"
	HeaderValue = "v1"
)

// SetHeaders sets the response headers of a UI message stream: server-sent events, the protocol
// marker, and no caching or buffering on the way.
func SetHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(HeaderName, HeaderValue)
}

// Writer is the coach.Sink of a UI message stream: Emit appends a turn's event as one or more
// server-sent events to w, Flush calls the flush function given to NewWriter. It is not safe for
// concurrent use (the engine calls it from one goroutine).
type Writer struct {
	w     io.Writer
	flush func() error
	buf   []byte
	// texts counts the text parts opened so far, which names the next one. open holds the
	// parts of the current attempt, which stay open until it ends (a module turn has one per
	// text block, and a reset must mark every one of them); the last one takes the deltas.
	texts int
	open  []openText
	done  bool
}

// openText is an open text part: its number and the module text block it shows (block -1
// outside modules).
type openText struct {
	n         int
	block     int
	blockType string
}

// NewWriter returns a Writer that writes to w, and calls flush on Flush (nil: Flush does
// nothing). It writes the stream's start event, with messageId, at once.
func NewWriter(w io.Writer, flush func() error, messageID string) (*Writer, error) {
	wr := &Writer{w: w, flush: flush, buf: make([]byte, 0, 512)}
	wr.buf = append(wr.buf, `data: {"type":"start","messageId":`...)
	wr.buf = ndjson.AppendString(wr.buf, messageID)
	wr.buf = append(wr.buf, "}\n\n"...)
	return wr, wr.write()
}

// Emit writes e. A result or an error event ends the stream: finish and [DONE] follow it, and
// nothing more is written after them.
func (wr *Writer) Emit(e coach.Event) error {
	if wr.done {
		return nil
	}
	wr.buf = wr.buf[:0]
	switch e.Type {
	case coach.EventDelta:
		if len(wr.open) == 0 || wr.open[len(wr.open)-1].block != e.Block {
			wr.startText(e)
		}
		wr.buf = append(wr.buf, `data: {"type":"text-delta","id":"`...)
		wr.buf = appendTextID(wr.buf, wr.open[len(wr.open)-1].n)
		wr.buf = append(wr.buf, `","delta":`...)
		wr.buf = ndjson.AppendString(wr.buf, e.Text)
		wr.buf = append(wr.buf, "}\n\n"...)
	case coach.EventReset:
		wr.endTexts(true)
		if err := wr.appendData(e, true); err != nil {
			return err
		}
	case coach.EventResult:
		wr.endTexts(false)
		if err := wr.appendData(e, false); err != nil {
			return err
		}
		wr.appendFinish("stop")
	case coach.EventError:
		wr.endTexts(false)
		if err := wr.appendData(e, false); err != nil {
			return err
		}
		// errorText is what the SDK shows as the chat's error; the code is in the data part
		// before it, which the SDK keeps in the message (it stops reading at the error).
		wr.buf = append(wr.buf, `data: {"type":"error","errorText":`...)
		wr.buf = ndjson.AppendString(wr.buf, e.Message)
		wr.buf = append(wr.buf, "}\n\n"...)
		wr.appendFinish("error")
	default:
		if err := wr.appendData(e, false); err != nil {
			return err
		}
	}
	return wr.write()
}

// Flush sends what was written so far.
func (wr *Writer) Flush() error {
	if wr.flush == nil {
		return nil
	}
	return wr.flush()
}

func (wr *Writer) write() error {
	_, err := wr.w.Write(wr.buf)
	return err
}

// appendTextID appends the id of text part n: "text-" and its number.
func appendTextID(buf []byte, n int) []byte {
	return strconv.AppendInt(append(buf, "text-"...), int64(n), 10)
}

// startText opens a new text part for delta e.
func (wr *Writer) startText(e coach.Event) {
	wr.texts++
	t := openText{n: wr.texts, block: e.Block, blockType: e.BlockType}
	wr.open = append(wr.open, t)
	wr.buf = append(wr.buf, `data: {"type":"text-start","id":"`...)
	wr.buf = appendTextID(wr.buf, t.n)
	wr.buf = append(wr.buf, '"')
	wr.appendMetadata(t, false)
	wr.buf = append(wr.buf, "}\n\n"...)
}

// endTexts ends every open text part. After a reset, discarded marks them in their provider
// metadata, which the SDK keeps on the part, so a client can leave them out whatever its
// framework.
func (wr *Writer) endTexts(discarded bool) {
	for _, t := range wr.open {
		wr.buf = append(wr.buf, `data: {"type":"text-end","id":"`...)
		wr.buf = appendTextID(wr.buf, t.n)
		wr.buf = append(wr.buf, '"')
		if discarded {
			wr.appendMetadata(t, true)
		}
		wr.buf = append(wr.buf, "}\n\n"...)
	}
	wr.open = wr.open[:0]
}

// appendMetadata appends the providerMetadata member of text part t, when it has any: a module
// block's number and type, and whether a reset discarded the part. The SDK replaces a part's
// metadata with the one on its text-end, so that repeats the block.
func (wr *Writer) appendMetadata(t openText, discarded bool) {
	if t.block < 0 && !discarded {
		return
	}
	wr.buf = append(wr.buf, `,"providerMetadata":{"coachgw":{`...)
	if t.block >= 0 {
		wr.buf = append(wr.buf, `"block":`...)
		wr.buf = strconv.AppendInt(wr.buf, int64(t.block), 10)
		wr.buf = append(wr.buf, `,"blockType":`...)
		wr.buf = ndjson.AppendString(wr.buf, t.blockType)
		if discarded {
			wr.buf = append(wr.buf, ',')
		}
	}
	if discarded {
		wr.buf = append(wr.buf, `"discarded":true`...)
	}
	wr.buf = append(wr.buf, "}}"...)
}

// appendData appends e as the data part data-coach-<type>, whose data is e's NDJSON line without
// its "type" member. Deriving it from the NDJSON line keeps the two streams' payloads one
// encoding: whatever a line carries, the data part carries too.
func (wr *Writer) appendData(e coach.Event, transient bool) error {
	start := len(wr.buf)
	line, err := ndjson.Append(wr.buf, e)
	if err != nil {
		return err
	}
	// line[start:] is {"type":"<type>",<members>}\n, or {"type":"<type>"}\n for a line with no
	// other member; the members, with the closing brace, are the data object's.
	prefix := len(`{"type":"`) + len(e.Type) + len(`"`)
	members := string(line[start+prefix : len(line)-1])
	wr.buf = line[:start]
	wr.buf = append(wr.buf, `data: {"type":"data-coach-`...)
	wr.buf = append(wr.buf, e.Type...)
	wr.buf = append(wr.buf, '"')
	if transient {
		wr.buf = append(wr.buf, `,"transient":true`...)
	}
	wr.buf = append(wr.buf, `,"data":{`...)
	if members[0] == ',' {
		members = members[1:]
	}
	wr.buf = append(wr.buf, members...)
	wr.buf = append(wr.buf, "}\n\n"...)
	return nil
}

// appendFinish ends the stream: the finish event with reason, then [DONE].
func (wr *Writer) appendFinish(reason string) {
	wr.done = true
	wr.buf = append(wr.buf, `data: {"type":"finish","finishReason":"`...)
	wr.buf = append(wr.buf, reason...)
	wr.buf = append(wr.buf, "\"}\n\ndata: [DONE]\n\n"...)
}
