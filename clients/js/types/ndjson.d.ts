/** DEFAULT_MAX_LINE_BYTES is the default bound of one stream line (1 MiB), as in the Go client. */
export declare const DEFAULT_MAX_LINE_BYTES: number;
export type ReadOptions = {
    /**
     * the longest line accepted, in bytes without the newline
     * (default DEFAULT_MAX_LINE_BYTES); a longer one throws a CoachError `line_too_long`
     */
    maxLineBytes?: number;
    /**
     * aborting it stops the reading and throws the signal's reason
     */
    signal?: AbortSignal;
};
/**
 * @typedef {object} ReadOptions
 * @property {number} [maxLineBytes] the longest line accepted, in bytes without the newline
 *   (default DEFAULT_MAX_LINE_BYTES); a longer one throws a CoachError `line_too_long`
 * @property {AbortSignal} [signal] aborting it stops the reading and throws the signal's reason
 */
/**
 * LineBuffer collects the bytes of one stream and hands out its complete lines.
 */
export declare class LineBuffer {
    maxLineBytes: number;
    /** @type {Uint8Array[]} the pieces of the line being read */
    pieces: Uint8Array[];
    length: number;
    /** lineNo counts the lines completed so far. */
    lineNo: number;
    /** @param {number} maxLineBytes */
    constructor(maxLineBytes: number);
    /**
     * push takes the next chunk and returns the lines it completed, without their newlines.
     * @param {Uint8Array} chunk
     * @returns {Uint8Array[]}
     */
    push(chunk: Uint8Array): Uint8Array[];
    /**
     * flush returns what is left after the last newline: the stream's last line when it did not
     * end with a newline, or an empty array.
     * @returns {Uint8Array}
     */
    flush(): Uint8Array;
    /** @param {Uint8Array} piece */
    add(piece: Uint8Array): void;
    /** @returns {Uint8Array} */
    take(): Uint8Array;
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
export declare function readNDJSON(body: ReadableStream<Uint8Array>, options?: ReadOptions): AsyncGenerator<Record<string, unknown>, void, undefined>;
