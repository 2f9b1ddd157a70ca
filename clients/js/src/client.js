// CoachClient: the gateway's session calls and turns, with one configuration (base URL, API key,
// fetch, line limit).

import { CoachError } from './errors.js';
import { DEFAULT_MAX_LINE_BYTES } from './ndjson.js';
import { send, sessionPath } from './request.js';
import { coachTurn, resumeTurn, stopTurn, streamTurn } from './stream.js';

/** @typedef {import('./request.js').ClientOptions} ClientOptions */
/** @typedef {import('./request.js').CallOptions} CallOptions */
/** @typedef {import('./types.js').CreateSessionRequest} CreateSessionRequest */
/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./types.js').ToulminStep} ToulminStep */
/** @typedef {import('./types.js').ModuleSummary} ModuleSummary */
/** @typedef {import('./types.js').MessagesPage} MessagesPage */
/** @typedef {import('./types.js').TranscriptEntry} TranscriptEntry */
/** @typedef {import('./schemas.js').Module} Module */
/** @typedef {import('./stream.js').StreamCallbacks} StreamCallbacks */
/** @typedef {import('./stream.js').ResumeRequest} ResumeRequest */
/**
 * @template [S=Record<string, unknown>]
 * @typedef {import('./types.js').Session<S>} Session
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').TurnEvent<R>} TurnEvent
 */

/**
 * @typedef {object} MessagesOptions
 * @property {number} [limit] entries per page (the gateway bounds it)
 * @property {number} [before] a page's `next`: entries older than this seq
 * @property {AbortSignal} [signal]
 */

/** CoachClient calls one coachgw gateway. */
export class CoachClient {
  /** @param {ClientOptions} [options] */
  constructor(options = {}) {
    /** @type {ClientOptions} */
    this.options = { ...options, maxLineBytes: options.maxLineBytes && options.maxLineBytes > 0 ? options.maxLineBytes : DEFAULT_MAX_LINE_BYTES };
  }

  /**
   * createSession starts a session.
   * @param {CreateSessionRequest} body
   * @param {CallOptions} [options]
   * @returns {Promise<Session>}
   */
  createSession(body, options) {
    return this.call('POST', '/v1/sessions', body, options);
  }

  /**
   * getSession reads session id; an unknown one is a CoachError 404 `session_not_found`.
   * @param {string} id
   * @param {CallOptions} [options]
   * @returns {Promise<Session>}
   */
  getSession(id, options) {
    return this.call('GET', sessionPath(id), undefined, options);
  }

  /**
   * deleteSession removes session id; removing one that does not exist is not an error.
   * @param {string} id
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  async deleteSession(id, options) {
    await this.call('DELETE', sessionPath(id), undefined, options);
  }

  /**
   * setDraft sets the draft of one step of a toulmin session and returns the session after it.
   * @param {string} id
   * @param {ToulminStep} field
   * @param {string} value
   * @param {CallOptions} [options]
   * @returns {Promise<Session>}
   */
  setDraft(id, field, value, options) {
    return this.call('PUT', `${sessionPath(id)}/draft`, { field, value }, options);
  }

  /**
   * decideProposal accepts or rejects the pending proposal of a toulmin session and returns the
   * session after the decision; without one it is a CoachError 409 `no_pending_proposal`.
   * @param {string} id
   * @param {'accept' | 'reject'} action
   * @param {CallOptions} [options]
   * @returns {Promise<Session>}
   */
  decideProposal(id, action, options) {
    return this.call('POST', `${sessionPath(id)}/proposal`, { action }, options);
  }

  /**
   * listModules lists the loaded learning modules.
   * @param {CallOptions} [options]
   * @returns {Promise<ModuleSummary[]>}
   */
  listModules(options) {
    return this.call('GET', '/v1/modules', undefined, options);
  }

  /**
   * getModule returns a learning module's definition; an unknown one is a CoachError 404
   * `module_not_found`.
   * @param {string} id
   * @param {CallOptions} [options]
   * @returns {Promise<Module>}
   */
  getModule(id, options) {
    return this.call('GET', `/v1/modules/${encodeURIComponent(id)}`, undefined, options);
  }

  /**
   * messages reads one page of a session's transcript: the newest page without `before`, older
   * ones with the previous page's `next`. Within a page the entries are oldest first.
   * @param {string} id
   * @param {MessagesOptions} [options]
   * @returns {Promise<MessagesPage>}
   */
  messages(id, options = {}) {
    const q = new URLSearchParams();
    if (options.limit !== undefined) q.set('limit', String(options.limit));
    if (options.before !== undefined) q.set('before', String(options.before));
    const query = q.toString() ? `?${q}` : '';
    return this.call('GET', `${sessionPath(id)}/messages${query}`, undefined, options);
  }

  /**
   * transcript returns a session's whole transcript, oldest entry first, reading its pages from
   * the newest back.
   * @param {string} id
   * @param {Omit<MessagesOptions, 'before'>} [options]
   * @returns {Promise<TranscriptEntry[]>}
   */
  async transcript(id, options = {}) {
    /** @type {TranscriptEntry[][]} */
    const pages = [];
    /** @type {number | undefined} */
    let before;
    for (;;) {
      const page = await this.messages(id, { ...options, before });
      pages.push(page.messages);
      if (page.next === null || page.next === undefined || page.messages.length === 0) break;
      before = page.next;
    }
    return pages.reverse().flat();
  }

  /**
   * streamTurn takes a turn of session sessionId and yields its events; see the function
   * streamTurn in stream.js for what it yields and throws.
   * @template [R=TurnResult]
   * @param {string} sessionId
   * @param {TurnRequest} body
   * @param {StreamCallbacks} [options]
   * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
   */
  streamTurn(sessionId, body, options = {}) {
    return streamTurn(sessionId, body, { ...this.options, signal: options.signal, onTurn: options.onTurn, onLine: options.onLine });
  }

  /**
   * resumeTurn reads the session's running (or just ended) turn from line `after` on; see the
   * function resumeTurn in stream.js. It yields nothing when there is no such turn.
   * @template [R=TurnResult]
   * @param {string} sessionId
   * @param {ResumeRequest} [from]
   * @param {StreamCallbacks} [options]
   * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
   */
  resumeTurn(sessionId, from = {}, options = {}) {
    return resumeTurn(sessionId, from, { ...this.options, signal: options.signal, onTurn: options.onTurn, onLine: options.onLine });
  }

  /**
   * stopTurn stops the session's running turn wherever it runs; it resolves false when none was
   * running. See the function stopTurn in stream.js.
   * @param {string} sessionId
   * @param {CallOptions} [options]
   * @returns {Promise<boolean>}
   */
  stopTurn(sessionId, options = {}) {
    return stopTurn(sessionId, { ...this.options, signal: options.signal });
  }

  /**
   * coachTurn takes a turn on the seed's route POST /api/coach (toulmin sessions).
   * @param {{ sessionId: string, message: string, step?: ToulminStep }} body
   * @param {CallOptions} [options]
   * @returns {AsyncGenerator<TurnEvent<import('./types.js').CoachAIResult>, void, undefined>}
   */
  coachTurn(body, options = {}) {
    return coachTurn(body, { ...this.options, signal: options.signal });
  }

  /**
   * call sends a JSON request and returns the parsed JSON answer (undefined for 204).
   * @param {string} method
   * @param {string} path
   * @param {unknown} body
   * @param {CallOptions} [options]
   * @returns {Promise<any>}
   */
  async call(method, path, body, options = {}) {
    const res = await send(this.options, method, path, body, 'application/json', options.signal);
    if (res.status === 204) return undefined;
    const raw = await res.arrayBuffer();
    const max = this.options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    if (raw.byteLength > max) throw new CoachError('read', 'line_too_long', `${method} ${path}: the answer is over ${max} bytes`);
    try {
      return JSON.parse(new TextDecoder().decode(raw));
    } catch (err) {
      throw new CoachError('read', 'malformed_line', `${method} ${path}: the answer is not JSON`, { cause: err });
    }
  }
}
