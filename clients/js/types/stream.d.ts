export { CoachError } from './errors.js';
export { DEFAULT_MAX_LINE_BYTES, readNDJSON } from './ndjson.js';
export type TurnRequest = import('./types.js').TurnRequest;
export type TurnResult = import('./types.js').TurnResult;
export type DeltaEvent = import('./types.js').DeltaEvent;
export type ResetEvent = import('./types.js').ResetEvent;
export type ErrorEvent = import('./types.js').ErrorEvent;
export type Session = import('./types.js').Session;
export type ClientOptions = import('./request.js').ClientOptions;
export type ReadOptions = import('./ndjson.js').ReadOptions;
export type TurnEvent<R = TurnResult> = import('./types.js').TurnEvent<R>;
export type ResultEvent<R = TurnResult> = import('./types.js').ResultEvent<R>;
export type StreamOptions = ClientOptions & {
    signal?: AbortSignal;
};
/**
 * streamTurn posts a turn of session `sessionId` and yields the events of its stream as they
 * arrive: `delta`, `card`, `reset`, and last one `result` or one `error` event, after which the
 * iteration ends. Lines of types this client does not know are skipped (newer gateways may add
 * some). Nothing is sent before the iteration starts.
 *
 * It throws a CoachError: kind `http` for a problem the gateway found before the stream started
 * (404 session_not_found, 409 session_busy, 422 invalid_input with its `field`, …), `read` for a
 * stream it cannot read (`stream_truncated`, `line_too_long`, `malformed_line`, `not_a_stream`),
 * `network` when no answer came. The stream's own error line is an event, not a throw.
 * Aborting `options.signal` throws the signal's reason and cancels the request: the gateway then
 * stops the turn and stores nothing of it. Leaving the loop early does the same.
 *
 * @template [R=TurnResult]
 * @param {string} sessionId
 * @param {TurnRequest} body
 * @param {StreamOptions} [options]
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
export declare function streamTurn<R = TurnResult>(sessionId: string, body: TurnRequest, options?: StreamOptions): AsyncGenerator<TurnEvent<R>, void, undefined>;
/**
 * coachTurn takes a turn on the seed's route POST /api/coach (toulmin sessions); otherwise it is
 * streamTurn.
 * @param {{ sessionId: string, message: string, step?: import('./types.js').ToulminStep }} body
 * @param {StreamOptions} [options]
 * @returns {AsyncGenerator<TurnEvent<import('./types.js').CoachAIResult>, void, undefined>}
 */
export declare function coachTurn(body: {
    sessionId: string;
    message: string;
    step?: import('./types.js').ToulminStep;
}, options?: StreamOptions): AsyncGenerator<TurnEvent<import('./types.js').CoachAIResult>, void, undefined>;
/**
 * readEvents reads a turn's NDJSON body (e.g. a fetch Response's body) as typed events; see
 * streamTurn for what it yields and throws. It stops after the result or error event, and throws
 * a CoachError `stream_truncated` when the body ends before either.
 * @template [R=TurnResult]
 * @param {ReadableStream<Uint8Array>} body
 * @param {ReadOptions} [options]
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
export declare function readEvents<R = TurnResult>(body: ReadableStream<Uint8Array>, options?: ReadOptions): AsyncGenerator<TurnEvent<R>, void, undefined>;
/**
 * parseEvent checks one parsed line against the contract and returns its event, or null for a
 * line of a type this client does not know. A line of a known type without the members its type
 * requires throws a CoachError `malformed_line`; the gateway never sends one.
 * @param {Record<string, unknown>} line
 * @param {number} [lineNo]
 * @returns {TurnEvent | null}
 */
export declare function parseEvent(line: Record<string, unknown>, lineNo?: number): TurnEvent | null;
/**
 * TurnText keeps the text of a turn that the learner should see: the deltas' texts, discarded
 * when a reset arrives. For module turns it keeps each text block apart as well.
 */
export declare class TurnText {
    /** The visible text so far: every delta's text since the last reset, in order. */
    text: string;
    /**
     * The text of each block of a module turn, by block index (empty for other contracts).
     * @type {string[]}
     */
    blocks: string[];
    /**
     * The type of each block of a module turn (paragraph, heading, …), by block index.
     * @type {string[]}
     */
    blockTypes: string[];
    /** How many resets this turn has had. */
    resets: number;
    constructor();
    /**
     * apply takes the next event and reports whether the visible text changed.
     * @param {TurnEvent<unknown>} ev
     * @returns {boolean}
     */
    apply(ev: TurnEvent<unknown>): boolean;
}
export type CollectedTurn<R = TurnResult> = {
    /**
     * the visible text: the deltas after the last reset
     */
    text: string;
    /**
     * the result event
     */
    result: ResultEvent<R>;
    /**
     * the card events (injected cards)
     */
    cards: import('./types.js').CardEvent[];
};
/**
 * @template [R=TurnResult]
 * @typedef {object} CollectedTurn
 * @property {string} text the visible text: the deltas after the last reset
 * @property {ResultEvent<R>} result the result event
 * @property {import('./types.js').CardEvent[]} cards the card events (injected cards)
 */
/**
 * collectTurn reads a turn's events to the end and returns its visible text, its card events
 * and its result event. A turn that ends with an error line throws a CoachError of kind `turn`
 * with the line's code and message; any other failure of the stream is thrown as it is.
 * onEvent, when given, sees every event as it arrives, after the text was updated.
 * @template [R=TurnResult]
 * @param {AsyncIterable<TurnEvent<R>>} events
 * @param {(ev: TurnEvent<R>, text: TurnText) => void} [onEvent]
 * @returns {Promise<CollectedTurn<R>>}
 */
export declare function collectTurn<R = TurnResult>(events: AsyncIterable<TurnEvent<R>>, onEvent?: (ev: TurnEvent<R>, text: TurnText) => void): Promise<CollectedTurn<R>>;
