// Package ndjson encodes a turn's events as the gateway's NDJSON lines: one JSON object per line,
// as described in api/openapi.yaml. Delta lines are the hot path of every stream, so they are
// appended by hand into a caller-owned buffer without allocating.
package ndjson

import (
	"encoding/json"
	"errors"
	"math/bits"
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
		buf = appendTurn(buf, e.Turn)
	case coach.EventSafety:
		// A safety line is rare (a crisis turn), so it is encoded with encoding/json.
		if e.Safety == nil {
			return buf, errors.New("a safety line needs its notice")
		}
		notice, err := json.Marshal(e.Safety)
		if err != nil {
			return buf, err
		}
		buf = append(buf, `{"type":"safety",`...)
		buf = append(buf, notice[1:len(notice)-1]...)
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
		if e.Upstream != "" {
			buf = append(buf, `,"upstream":`...)
			buf = AppendString(buf, e.Upstream)
		}
		if u := e.Usage; u != nil {
			buf = append(buf, `,"usage":{"promptTokens":`...)
			buf = strconv.AppendInt(buf, int64(u.PromptTokens), 10)
			buf = append(buf, `,"completionTokens":`...)
			buf = strconv.AppendInt(buf, int64(u.CompletionTokens), 10)
			buf = append(buf, '}')
		}
		buf = appendTurn(buf, e.Turn)
	default:
		buf = append(buf, `{"type":`...)
		buf = AppendString(buf, e.Type)
	}
	return append(buf, '}', '\n'), nil
}

// appendTurn appends the "turn" member of a result or error line, when the turn has an id.
func appendTurn(buf []byte, turn string) []byte {
	if turn == "" {
		return buf
	}
	buf = append(buf, `,"turn":`...)
	return AppendString(buf, turn)
}

// htmlSafe marks the ASCII bytes that encoding/json copies into a string as they are when it
// escapes HTML: all but control characters, ", \, <, > and &.
var htmlSafe = func() (safe [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		safe[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return safe
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, byte for byte as encoding/json writes it with HTML
// escaping on: control characters as \n, \r, \t, \b, \f or \u00XX, <, > and & as \u003c,
// \u003e and \u0026 (so a line is safe to embed in HTML or JavaScript), U+2028 and U+2029
// escaped, each byte of invalid UTF-8 as \ufffd. Most text needs none of that, so it is scanned
// eight bytes at a time and copied in runs.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := special(load64(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load64 reads the eight bytes of s from i on, the first in the low byte; the compiler makes
// it one load.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special sets the high bit of the first byte of x that AppendString cannot copy as it is:
// below 0x20, ", \, <, >, & or not ASCII. It may set the high bits of later bytes too (borrows
// carry upwards), never of earlier ones, so the lowest set bit is exact.
func special(x uint64) uint64 {
	// '<' and '>' differ only in the bit 0x02, '"' and '&' only in 0x04: setting that bit
	// turns both of each pair into one byte to look for.
	angle := (x | 0x02*lows) ^ '>'*lows
	quoteAmp := (x | 0x04*lows) ^ '&'*lows
	backslash := x ^ '\\'*lows
	control := x - ' '*lows
	return (x | control | zeroBytes(angle) | zeroBytes(quoteAmp) | zeroBytes(backslash)) & highs
}

// zeroBytes sets the high bit of the first zero byte of x, and perhaps of later bytes, but of
// no byte before it.
func zeroBytes(x uint64) uint64 { return (x - lows) &^ x }
