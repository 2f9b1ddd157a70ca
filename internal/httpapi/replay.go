package httpapi

import (
	"bytes"
	"context"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
	"github.com/coachgw/coachgw/internal/turns"
)

// chatReplay is what GET …/chat/stream knows of its turn from the lines logged before it
// answers. The chat route shows a turn as the AI SDK keeps it, one message per answer, so it
// replays less than the NDJSON resume, which gives a client every line it asks for:
//
//   - a turn that ended without being stored (stopped, or failed with an error line) is not
//     replayed at all: the client restored what the transcript has, and a replay would end the
//     chat in an error for a turn that is over;
//   - what earlier attempts streamed before the last reset logged so far, and those resets, are
//     left out: the SDK would build the text only to discard it, and fire the resets, which a
//     client that restored the answer from chat/messages has no text for, again.
type chatReplay struct {
	// ended is set when the log holds the turn's last line; unstored when that line is an error
	// (a turn that stores its answer ends with its result), or when the turn no longer runs
	// and its log is gone or incomplete, so that there is no answer to replay.
	ended, unstored bool
	// settled is the number of the line of the last reset logged so far (0: none).
	settled int64
}

// planChatReplay reads what turn of session has logged so far. The pointer is read before the
// log: a turn that ends in between is then found ended in its log, whereas a log read first
// could miss the last batch of a turn that the pointer then says has ended.
func (s *Server) planChatReplay(ctx context.Context, session, turn string) (chatReplay, error) {
	log := s.deps.Turns.Log()
	cur, running, _, err := log.Current(ctx, session)
	if err != nil {
		return chatReplay{}, err
	}
	var p chatReplay
	for cursor := ""; ; {
		batches, err := log.Read(ctx, session, turn, cursor, time.Millisecond)
		if err != nil {
			return chatReplay{}, err
		}
		if len(batches) == 0 {
			break
		}
		for _, b := range batches {
			cursor = b.Cursor
			p.add(b)
		}
		if p.ended {
			break
		}
	}
	if !p.ended && (cur != turn || !running) {
		p.unstored = true
	}
	return p, nil
}

// add takes the lines of batch b into p.
func (p *chatReplay) add(b turns.Batch) {
	n := b.First
	last := ""
	for lines := b.Lines; len(lines) > 0; {
		line := lines
		if i := bytes.IndexByte(lines, '\n'); i >= 0 {
			line, lines = lines[:i], lines[i+1:]
		} else {
			lines = nil
		}
		n++
		last = lineType(line)
		if last == coach.EventReset {
			p.settled = n
		}
	}
	if b.End {
		p.ended = true
		p.unstored = last == coach.EventError
	}
}

// decoder returns the decode function of follow for the chat route's replay: it decodes each
// line, from the turn's first, and leaves out the deltas and resets up to p.settled.
func (p chatReplay) decoder() func([]byte) (coach.Event, bool) {
	var n int64
	return func(line []byte) (coach.Event, bool) {
		n++
		if n <= p.settled {
			if t := lineType(line); t == coach.EventDelta || t == coach.EventReset {
				return coach.Event{}, false
			}
		}
		e, err := ndjson.Parse(line)
		return e, err == nil
	}
}

// lineType returns the type of a logged line, which ndjson.Append writes first: {"type":"…",….
func lineType(line []byte) string {
	const prefix = `{"type":"`
	rest, ok := bytes.CutPrefix(line, []byte(prefix))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(rest, '"'); i >= 0 {
		return string(rest[:i])
	}
	return ""
}
