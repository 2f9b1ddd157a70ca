// Package ndjson encodes a turn's events as the gateway's NDJSON lines: one JSON object per line,
// as described in api/openapi.yaml. Delta lines are the hot path of every stream, so they are
// appended by hand into a caller-owned buffer without allocating.
package ndjson

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
)

// Append appends e as one NDJSON line (ending in '\n') to buf.
func Append(buf []byte, e coach.Event) ([]byte, error) {
	switch e.Type {
	case coach.EventDelta:
		buf = append(buf, `{"type":"delta","text":`...)
		buf = AppendString(buf, e.Text)
		if e.Block >= 0 {
			buf = append(buf, `,"block":`...)
			buf = strconv.AppendInt(buf, int64(e.Block), 10)
			buf = append(buf, `,"blockType":`...)
			buf = AppendString(buf, e.BlockType)
		}
	case coach.EventReset:
		buf = append(buf, `{"type":"reset","reason":`...)
		buf = AppendString(buf, e.Reason)
	case coach.EventError:
		buf = append(buf, `{"type":"error","error":`...)
		buf = AppendString(buf, e.Code)
		buf = append(buf, `,"message":`...)
		buf = AppendString(buf, e.Message)
	case coach.EventCard:
		buf = append(buf, `{"type":"card","card":`...)
		buf = append(buf, e.Card...)
	case coach.EventResult:
		buf = append(buf, `{"type":"result","result":`...)
		buf = append(buf, e.Result...)
		if e.Session != nil {
			s, err := json.Marshal(e.Session)
			if err != nil {
				return buf, err
			}
			buf = append(buf, `,"session":`...)
			buf = append(buf, s...)
		}
		if e.Fallback {
			buf = append(buf, `,"fallback":true`...)
		}
	default:
		buf = append(buf, `{"type":`...)
		buf = AppendString(buf, e.Type)
	}
	return append(buf, '}', '\n'), nil
}

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string. Besides what JSON requires it escapes <, >, & and
// U+2028/U+2029 the way encoding/json does, so a line is safe to embed in HTML or JavaScript, and
// it replaces invalid UTF-8 with U+FFFD.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
