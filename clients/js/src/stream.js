// A turn's stream: posting a turn and reading its NDJSON answer as typed events, and the text the
// learner should see so far. This module is served by the gateway at /client/stream.js, so a page
// without a build step can import it.

import { CoachError } from './errors.js';
import { DEFAULT_MAX_LINE_BYTES, readNDJSON } from './ndjson.js';
import { send, sessionPath } from './request.js';

export { CoachError } from './errors.js';
export { DEFAULT_MAX_LINE_BYTES, readNDJSON } from './ndjson.js';

/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./types.js').DeltaEvent} DeltaEvent */
/** @typedef {import('./types.js').ResetEvent} ResetEvent */
/** @typedef {import('./types.js').ErrorEvent} ErrorEvent */
/** @typedef {import('./types.js').ResetReason} ResetReason */
/** @typedef {import('./types.js').SafetyEvent} SafetyEvent */
/** @typedef {import('./types.js').Session} Session */
/** @typedef {import('./request.js').ClientOptions} ClientOptions */
/** @typedef {import('./ndjson.js').ReadOptions} ReadOptions */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').TurnEvent<R>} TurnEvent
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').ResultEvent<R>} ResultEvent
 */

/**
 * @typedef {object} StreamCallbacks
 * @property {AbortSignal} [signal]
 * @property {(turn: string) => void} [onTurn] called with the turn's id (the X-Coach-Turn header)
 *   as soon as the stream starts, when the gateway sends one (v1.2); resumeTurn takes it
 * @property {(lines: number) => void} [onLine] called with the number of lines read so far,
 *   lines of types this client skips included, before each event is yielded: the `after` of a
 *   resumeTurn that goes on where this stream stopped
 */

/**
 * @typedef {ClientOptions & StreamCallbacks} StreamOptions
 */

/**
 * @typedef {object} ResumeRequest
 * @property {number} [after] how many lines of the turn the client already has (default 0: all)
 * @property {string} [turn] the turn's id: when the session's current turn is another one, the
 *   gateway answers 404 `turn_not_found`
 */

const NDJSON = 'application/x-ndjson';

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
export function streamTurn(sessionId, body, options = {}) {
  return streamPost(`${sessionPath(sessionId)}/turns`, body, options);
}

/**
 * coachTurn takes a turn on the seed's route POST /api/coach (toulmin sessions); otherwise it is
 * streamTurn.
 * @param {{ sessionId: string, message: string, step?: import('./types.js').ToulminStep }} body
 * @param {StreamOptions} [options]
 * @returns {AsyncGenerator<TurnEvent<import('./types.js').CoachAIResult>, void, undefined>}
 */
export function coachTurn(body, options = {}) {
  return streamPost('/api/coach', body, options);
}

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
export async function* resumeTurn(sessionId, from = {}, options = {}) {
  const q = new URLSearchParams({ after: String(from.after ?? 0) });
  if (from.turn) q.set('turn', from.turn);
  const path = `${sessionPath(sessionId)}/turns/current?${q}`;
  const res = await send(options, 'GET', path, undefined, NDJSON, options.signal);
  if (res.status === 204) return;
  const after = from.after ?? 0;
  yield* readStream(res, 'GET', path, { ...options, onLine: options.onLine && ((n) => options.onLine?.(after + n)) });
}

/**
 * stopTurn stops the session's running turn, wherever it runs (v1.2): the model call is
 * cancelled, nothing is stored, and every reader's stream ends with an error event
 * `turn_cancelled`. It resolves true when a turn was stopped and false when none was running
 * (404 `no_running_turn`: it may just have ended); other failures throw a CoachError.
 * @param {string} sessionId
 * @param {ClientOptions & { signal?: AbortSignal }} [options]
 * @returns {Promise<boolean>}
 */
export async function stopTurn(sessionId, options = {}) {
  try {
    await send(options, 'DELETE', `${sessionPath(sessionId)}/turns/current`, undefined, 'application/json', options.signal);
    return true;
  } catch (err) {
    if (err instanceof CoachError && err.status === 404 && err.code === 'no_running_turn') return false;
    throw err;
  }
}

/**
 * @template R
 * @param {string} path
 * @param {unknown} body
 * @param {StreamOptions} options
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
async function* streamPost(path, body, options) {
  const res = await send(options, 'POST', path, body, NDJSON, options.signal);
  yield* readStream(res, 'POST', path, options);
}

/**
 * readStream checks that res is an NDJSON stream, reports its turn id, and yields its events.
 * @template R
 * @param {Response} res
 * @param {string} method
 * @param {string} path
 * @param {StreamOptions} options
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
async function* readStream(res, method, path, options) {
  const ctype = res.headers.get('Content-Type') || '';
  const media = ctype.split(';')[0].trim().toLowerCase();
  if (media !== '' && media !== NDJSON && media !== 'application/ndjson') {
    res.body?.cancel().catch(() => {});
    throw new CoachError('read', 'not_a_stream', `${method} ${path}: the answer is ${ctype}, not an NDJSON stream`);
  }
  if (!res.body) throw new CoachError('read', 'not_a_stream', 'this runtime cannot read streamed responses');
  const turn = res.headers.get('X-Coach-Turn');
  if (turn) options.onTurn?.(turn);
  yield* readEvents(res.body, options);
}

/**
 * readEvents reads a turn's NDJSON body (e.g. a fetch Response's body) as typed events; see
 * streamTurn for what it yields and throws. It stops after the result or error event, and throws
 * a CoachError `stream_truncated` when the body ends before either.
 * @template [R=TurnResult]
 * @param {ReadableStream<Uint8Array>} body
 * @param {ReadOptions & { onLine?: (lines: number) => void }} [options]
 * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
 */
export async function* readEvents(body, options = {}) {
  const lines = readNDJSON(body, { maxLineBytes: options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, signal: options.signal });
  let n = 0;
  for await (const line of lines) {
    n++;
    const ev = /** @type {TurnEvent<R> | null} */ (parseEvent(line, n));
    options.onLine?.(n);
    if (!ev) continue;
    yield ev;
    // The turn is over: whatever might follow is not part of it. Returning cancels the body.
    if (ev.type === 'result' || ev.type === 'error') return;
  }
  throw new CoachError('read', 'stream_truncated', 'the stream ended before its result or error line');
}

/**
 * parseEvent checks one parsed line against the contract and returns its event, or null for a
 * line of a type this client does not know. A line of a known type without the members its type
 * requires throws a CoachError `malformed_line`; the gateway never sends one.
 * @param {Record<string, unknown>} line
 * @param {number} [lineNo]
 * @returns {TurnEvent | null}
 */
export function parseEvent(line, lineNo = 0) {
  /** @param {string} what */
  const bad = (what) => new CoachError('read', 'malformed_line', `stream line ${lineNo}: ${what}`);
  /** @param {string} name */
  const str = (name) => {
    const v = line[name];
    if (typeof v !== 'string') throw bad(`${name} is not a string`);
    return v;
  };
  /** @param {unknown} v */
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const type = line.type;
  if (typeof type !== 'string' || type === '') throw bad('no type');
  switch (type) {
    case 'delta': {
      /** @type {DeltaEvent} */
      const ev = { type, text: str('text') };
      if (line.block != null) {
        if (typeof line.block !== 'number' || !Number.isInteger(line.block) || line.block < 0) throw bad('block is not a block index');
        ev.block = line.block;
      }
      if (line.blockType != null) ev.blockType = str('blockType');
      return ev;
    }
    case 'card':
      if (!isObject(line.card)) throw bad('card line without a card object');
      return /** @type {TurnEvent} */ (line);
    case 'reset':
      // A reason this client does not know is passed on as it is: the text is void all the same.
      return { type, reason: /** @type {ResetReason} */ (str('reason')) };
    case 'safety': {
      if (!Array.isArray(line.resources)) throw bad('safety line without resources');
      /** @type {SafetyEvent['resources']} */
      const resources = line.resources.map((/** @type {unknown} */ item, i) => {
        const r = /** @type {Record<string, unknown>} */ (item);
        if (!isObject(r) || typeof r.name !== 'string') throw bad(`safety resource ${i} without a name`);
        /** @type {SafetyEvent['resources'][number]} */
        const out = { name: r.name };
        for (const k of /** @type {const} */ (['phone', 'text', 'url'])) {
          const v = r[k];
          if (v == null) continue;
          if (typeof v !== 'string') throw bad(`safety resource ${i}: ${k} is not a string`);
          out[k] = v;
        }
        return out;
      });
      return { type, kind: /** @type {'crisis'} */ (str('kind')), locale: str('locale'), message: str('message'), resources };
    }
    case 'result': {
      if (!isObject(line.result)) throw bad('result line without a result object');
      const session = /** @type {Partial<Session>} */ (line.session);
      if (!isObject(session) || typeof session.id !== 'string' || session.id === '') throw bad('result line without a session');
      if (line.fallback != null && typeof line.fallback !== 'boolean') throw bad('fallback is not a boolean');
      return /** @type {TurnEvent} */ (line);
    }
    case 'error': {
      const code = str('error');
      if (code === '') throw bad('error line with an empty code');
      /** @type {ErrorEvent} */
      const ev = { type, error: code, message: str('message') };
      if (line.turn != null) ev.turn = str('turn');
      return ev;
    }
    default:
      return null;
  }
}

/**
 * TurnText keeps the text of a turn that the learner should see: the deltas' texts, discarded
 * when a reset arrives. For module turns it keeps each text block apart as well.
 */
export class TurnText {
  constructor() {
    /** The visible text so far: every delta's text since the last reset, in order. */
    this.text = '';
    /**
     * The text of each block of a module turn, by block index (empty for other contracts).
     * @type {string[]}
     */
    this.blocks = [];
    /**
     * The type of each block of a module turn (paragraph, heading, …), by block index.
     * @type {string[]}
     */
    this.blockTypes = [];
    /** How many resets this turn has had. */
    this.resets = 0;
  }

  /**
   * apply takes the next event and reports whether the visible text changed.
   * @param {TurnEvent<unknown>} ev
   * @returns {boolean}
   */
  apply(ev) {
    switch (ev.type) {
      case 'delta':
        this.text += ev.text;
        if (ev.block !== undefined) {
          this.blocks[ev.block] = (this.blocks[ev.block] ?? '') + ev.text;
          if (ev.blockType) this.blockTypes[ev.block] = ev.blockType;
        }
        return ev.text !== '';
      case 'reset': {
        this.resets++;
        const had = this.text !== '';
        this.text = '';
        this.blocks = [];
        this.blockTypes = [];
        return had;
      }
      default:
        return false;
    }
  }
}

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
export async function collectTurn(events, onEvent) {
  const text = new TurnText();
  /** @type {import('./types.js').CardEvent[]} */
  const cards = [];
  /** @type {SafetyEvent | null} */
  let safety = null;
  for await (const ev of events) {
    text.apply(ev);
    onEvent?.(ev, text);
    switch (ev.type) {
      case 'card':
        cards.push(ev);
        break;
      case 'safety':
        safety = ev;
        break;
      case 'result':
        return { text: text.text, result: ev, cards, safety };
      case 'error':
        throw new CoachError('turn', ev.error, ev.message);
      default:
    }
  }
  throw new CoachError('read', 'stream_truncated', 'the stream ended before its result or error line');
}
