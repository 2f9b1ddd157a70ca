export { CoachError } from './errors.js';
export { DEFAULT_MAX_LINE_BYTES, readNDJSON } from './ndjson.js';
export type TurnRequest = import('./types.js').TurnRequest;
export type TurnResult = import('./types.js').TurnResult;
export type DeltaEvent = import('./types.js').DeltaEvent;
export type ResetEvent = import('./types.js').ResetEvent;
export type ErrorEvent = import('./types.js').ErrorEvent;
export type ResetReason = import('./types.js').ResetReason;
export type SafetyEvent = import('./types.js').SafetyEvent;
export type Session = import('./types.js').Session;
export type ClientOptions = import('./request.js').ClientOptions;
export type ReadOptions = import('./ndjson.js').ReadOptions;
export type TurnEvent<R = TurnResult> = import('./types.js').TurnEvent<R>;
export type ResultEvent<R = TurnResult> = import('./types.js').ResultEvent<R>;
export type StreamCallbacks = {
    signal?: AbortSignal;
    /**
     * called with the turn's id (the X-Coach-Turn header)
     * as soon as the stream starts, when the gateway sends one (v1.2); resumeTurn takes it
     */
    onTurn?: (turn: string) => void;
    /**
     * called with the number of lines read so far,
     * lines of types this client skips included, before each event is yielded: the `after` of a
     * resumeTurn that goes on where this stream stopped
     */
    onLine?: (lines: number) => void;
};
export type StreamOptions = ClientOptions & StreamCallbacks;
export type ResumeRequest = {
    /**
     * how many lines of the turn the client already has (default 0: all)
     */
    after?: number;
    /**
     * the turn's id: when the session's current turn is another one, the
     * gateway answers 404 `turn_not_found`
     */
    turn?: string;
};
/**
 * streamTurn posts a turn of session `sessionId` and yields the events of its stream as they
 * arrive: `safety` (a crisis turn's resources, first; v1.3), `delta`, `card`, `reset`, and last
 * one `result` or one `error` event, after which the iteration ends. Lines of types this client does not know are skipped (newer gateways may add
 * some). Nothing is sent before the iteration starts.
 *
 * It throws a CoachError: kind `http` for a problem the gateway found before the stream started
 * (404 session_not_found, 409 session_busy, 422 invalid_input with its `field`, …), `read` for a
 * stream it cannot read (`stream_truncated`, `line_too_long`, `malformed_line`, `not_a_stream`),
 * `network` when no answer came. The stream's own error line is an event, not a throw.
 * Aborting `options.signal` throws the signal's reason and cancels the request; leaving the loop
 * early does the same. A v1.2 gateway lets the turn run to its end all the same (resume it with
 * resumeTurn, stop it with stopTurn) unless it runs with COACH_TURN_ON_DISCONNECT=cancel; an
 * older one stops the turn and stores nothing of it. `options.onTurn` hears the turn's id.
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
 * resumeTurn reads the session's running turn (or its last one, if it ended a short while ago:
 * COACH_RESUME_TTL) from line `after` on, then each new line as it is written, and yields its
 * events as streamTurn does, up to its result or error line. With `after` 0 it yields the whole
 * turn. It yields nothing when the session has no such turn (204). A turn stopped with stopTurn
 * ends with an error event `turn_cancelled`. It throws as streamTurn does; a `turn` that is not
 * the session's current turn is a CoachError 404 `turn_not_found`. Leaving the loop or aborting
 * the signal stops reading; the turn goes on (v1.2: turns outlive their connection).
 * @template [R=TurnResult]
 * @param {string} sessionId
 * @param {ResumeRequest} [from]
 * @param {StreamOptions} [options]
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
export declare function resumeTurn<R = TurnResult>(sessionId: string, from?: ResumeRequest, options?: StreamOptions): AsyncGenerator<TurnEvent<R>, void, undefined>;
/**
 * stopTurn stops the session's running turn, wherever it runs (v1.2): the model call is
 * cancelled, nothing is stored, and every reader's stream ends with an error event
 * `turn_cancelled`. It resolves true when a turn was stopped and false when none was running
 * (404 `no_running_turn`: it may just have ended); other failures throw a CoachError.
 * @param {string} sessionId
 * @param {ClientOptions & { signal?: AbortSignal }} [options]
 * @returns {Promise<boolean>}
 */
export declare function stopTurn(sessionId: string, options?: ClientOptions & {
    signal?: AbortSignal;
}): Promise<boolean>;
/**
 * readEvents reads a turn's NDJSON body (e.g. a fetch Response's body) as typed events; see
 * streamTurn for what it yields and throws. It stops after the result or error event, and throws
 * a CoachError `stream_truncated` when the body ends before either.
 * @template [R=TurnResult]
 * @param {ReadableStream<Uint8Array>} body
 * @param {ReadOptions & { onLine?: (lines: number) => void }} [options]
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
export declare function readEvents<R = TurnResult>(body: ReadableStream<Uint8Array>, options?: ReadOptions & {
    onLine?: (lines: number) => void;
}): AsyncGenerator<TurnEvent<R>, void, undefined>;
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
    /**
     * the safety event of a crisis turn (v1.3), else null
     */
    safety: SafetyEvent | null;
};
/**
 * @template [R=TurnResult]
 * @typedef {object} CollectedTurn
 * @property {string} text the visible text: the deltas after the last reset
 * @property {ResultEvent<R>} result the result event
 * @property {import('./types.js').CardEvent[]} cards the card events (injected cards)
 * @property {SafetyEvent | null} safety the safety event of a crisis turn (v1.3), else null
 */
/**
 * collectTurn reads a turn's events to the end and returns its visible text, its card events,
 * its safety event (a crisis turn's) and its result event. A turn that ends with an error line throws a CoachError of kind `turn`
 * with the line's code and message; any other failure of the stream is thrown as it is.
 * onEvent, when given, sees every event as it arrives, after the text was updated.
 * @template [R=TurnResult]
 * @param {AsyncIterable<TurnEvent<R>>} events
 * @param {(ev: TurnEvent<R>, text: TurnText) => void} [onEvent]
 * @returns {Promise<CollectedTurn<R>>}
 */
export declare function collectTurn<R = TurnResult>(events: AsyncIterable<TurnEvent<R>>, onEvent?: (ev: TurnEvent<R>, text: TurnText) => void): Promise<CollectedTurn<R>>;
