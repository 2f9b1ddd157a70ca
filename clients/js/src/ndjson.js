// NDJSON reading: a turn's answer is one JSON object per line, and network chunks may end
// anywhere, inside a line or inside a multi-byte character. Lines are cut on bytes and decoded
// whole, so a character split across chunks stays whole, and a line's length is known in bytes
// before it is decoded: an over-long line ends the stream as soon as the limit is passed, without
// the rest of it being held in memory.

import { CoachError } from './errors.js';

/** DEFAULT_MAX_LINE_BYTES is the default bound of one stream line (1 MiB), as in the Go client. */
export const DEFAULT_MAX_LINE_BYTES = 1 << 20;

const NEWLINE = 0x0a;

/**
 * @typedef {object} ReadOptions
 * @property {number} [maxLineBytes] the longest line accepted, in bytes without the newline
 *   (default DEFAULT_MAX_LINE_BYTES); a longer one throws a CoachError `line_too_long`
 * @property {AbortSignal} [signal] aborting it stops the reading and throws the signal's reason
 */

/**
 * LineBuffer collects the bytes of one stream and hands out its complete lines.
 */
export class LineBuffer {
  /** @param {number} maxLineBytes */
  constructor(maxLineBytes) {
    this.maxLineBytes = maxLineBytes;
    /** @type {Uint8Array[]} the pieces of the line being read */
    this.pieces = [];
    this.length = 0;
    /** lineNo counts the lines completed so far. */
    this.lineNo = 0;
  }

  /**
   * push takes the next chunk and returns the lines it completed, without their newlines.
   * @param {Uint8Array} chunk
   * @returns {Uint8Array[]}
   */
  push(chunk) {
    /** @type {Uint8Array[]} */
    const lines = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl < 0 ? chunk.length : nl;
      this.add(chunk.subarray(start, end));
      if (nl < 0) return lines;
      lines.push(this.take());
      start = nl + 1;
    }
  }

  /**
   * flush returns what is left after the last newline: the stream's last line when it did not
   * end with a newline, or an empty array.
   * @returns {Uint8Array}
   */
  flush() {
    return this.take();
  }

  /** @param {Uint8Array} piece */
  add(piece) {
    if (piece.length === 0) return;
    this.length += piece.length;
    if (this.length > this.maxLineBytes) {
      throw new CoachError('read', 'line_too_long', `stream line ${this.lineNo + 1} is over ${this.maxLineBytes} bytes`);
    }
    this.pieces.push(piece);
  }

  /** @returns {Uint8Array} */
  take() {
    let line;
    if (this.pieces.length === 1) {
      line = this.pieces[0];
    } else {
      line = new Uint8Array(this.length);
      let at = 0;
      for (const p of this.pieces) {
        line.set(p, at);
        at += p.length;
      }
    }
    this.pieces = [];
    this.length = 0;
    this.lineNo++;
    return line;
  }
}

/**
 * readNDJSON reads an NDJSON body and yields each line's JSON object as it arrives. Blank lines
 * are skipped. It throws a CoachError of kind `read`: `line_too_long` for a line over the limit,
 * `malformed_line` for a line that is not a JSON object, `stream_truncated` for a last line cut
 * short; and the signal's reason once the signal is aborted. Leaving the loop early (break,
 * return, a throw) cancels the body.
 * @param {ReadableStream<Uint8Array>} body
 * @param {ReadOptions} [options]
 * @returns {AsyncGenerator<Record<string, unknown>, void, undefined>}
 */
export async function* readNDJSON(body, options = {}) {
  const { signal } = options;
  const buf = new LineBuffer(options.maxLineBytes && options.maxLineBytes > 0 ? options.maxLineBytes : DEFAULT_MAX_LINE_BYTES);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const reader = body.getReader();
  let finished = false;
  const onAbort = () => {
    reader.cancel(signal?.reason).catch(() => {});
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    signal?.throwIfAborted();
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        signal?.throwIfAborted();
        throw new CoachError('read', 'stream_truncated', `the stream broke off: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      signal?.throwIfAborted();
      if (chunk.done) break;
      for (const line of buf.push(chunk.value)) {
        const obj = parseLine(decoder, line, buf.lineNo, false);
        if (obj) yield obj;
        signal?.throwIfAborted();
      }
    }
    finished = true;
    const obj = parseLine(decoder, buf.flush(), buf.lineNo, true);
    if (obj) yield obj;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (!finished) reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/**
 * parseLine decodes and parses one line; it returns null for a blank one.
 * @param {TextDecoder} decoder
 * @param {Uint8Array} bytes
 * @param {number} lineNo
 * @param {boolean} last whether the line is the body's last, which had no newline
 * @returns {Record<string, unknown> | null}
 */
function parseLine(decoder, bytes, lineNo, last) {
  let text;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw new CoachError('read', last ? 'stream_truncated' : 'malformed_line', `stream line ${lineNo} is not valid UTF-8`);
  }
  text = text.trim();
  if (text === '') return null;
  let obj;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    if (last) throw new CoachError('read', 'stream_truncated', 'the stream ended inside its last line');
    throw new CoachError('read', 'malformed_line', `stream line ${lineNo} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new CoachError('read', 'malformed_line', `stream line ${lineNo} is not a JSON object`);
  }
  return obj;
}
