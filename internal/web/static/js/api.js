// @ts-check
// The gateway's API on the same origin (see api/openapi.yaml). A turn's stream is read by the
// JavaScript client (clients/js, @coachgw/client), whose modules the gateway serves at /client/:
// one implementation of the NDJSON reading for the panel and every other front end.

// @ts-ignore -- the path is the gateway's (/client/), not the repository's; the type below is read
// from the client's source.
import * as served from '../../client/stream.js';

/** @type {typeof import('../../../../clients/js/src/stream.js')} */
const client = served;
const { CoachError, streamTurn: clientStreamTurn } = client;

// The API key, for gateways configured with COACH_API_KEYS. It lives in sessionStorage: it
// survives a reload of the tab (the session belongs to the key's tenant) but not the browser.
const KEY_STORAGE = 'coachgw.apiKey';

/** apiKey returns the API key in use, or "". */
export function apiKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE) || '';
  } catch {
    return '';
  }
}

/**
 * setApiKey sets the API key sent as "Authorization: Bearer"; "" sends none.
 * @param {string} key
 */
export function setApiKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    else sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    // Storage is off (a privacy mode): requests go without a key.
  }
}

/**
 * @param {Record<string, string>} extra
 * @returns {Record<string, string>}
 */
function headers(extra) {
  const key = apiKey();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

// FINAL are the codes of answers that sending the same request again cannot change (today's
// token budget is spent until tomorrow).
const FINAL = ['no_pending_proposal', 'session_complete', 'budget_exceeded'];

/** ApiError is a failed request: an HTTP error body {"error","message","field"}, a stream's error line, or a transport problem. */
export class ApiError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{status?: number, field?: string, stream?: boolean}} [details]
   */
  constructor(code, message, { status = 0, field = '', stream = false } = {}) {
    super(message || code);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.field = field;
    // stream is true for the error line of a started stream.
    this.stream = stream;
  }

  /** retryable says whether sending the same request again may succeed. */
  get retryable() {
    // The seed's stream errors all allow a retry (after a step mismatch the panel resends with the session's step).
    if (this.stream) return true;
    return [0, 408, 409, 429, 500, 502, 503, 504].includes(this.status) && !FINAL.includes(this.code);
  }
}

/**
 * @param {Response} res
 * @returns {Promise<ApiError>}
 */
async function errorFrom(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON: a proxy's error page, for instance. The status says enough.
  }
  const code = (body && typeof body.error === 'string' && body.error) || `http_${res.status}`;
  const message = (body && typeof body.message === 'string' && body.message) || res.statusText || code;
  return new ApiError(code, message, { status: res.status, field: (body && body.field) || '' });
}

/**
 * transportError returns err as an ApiError, unless it is one or an abort (passed on as it is).
 * @param {unknown} err
 */
function transportError(err) {
  if (err instanceof ApiError || (err instanceof Error && err.name === 'AbortError')) return err;
  return new ApiError('network_error', (err instanceof Error && err.message) || 'network error', { status: 0 });
}

/**
 * request sends a JSON request and returns the parsed JSON answer (null for 204).
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {{signal?: AbortSignal}} [options]
 * @returns {Promise<any>}
 */
export async function request(method, path, body, { signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      signal,
      headers: headers(body === undefined ? { Accept: 'application/json' } : { 'Content-Type': 'application/json', Accept: 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw transportError(err);
  }
  if (!res.ok) throw await errorFrom(res);
  if (res.status === 204) return null;
  return res.json();
}

export const listModules = () => request('GET', '/v1/modules');
/** @param {string} id */
export const getModule = (id) => request('GET', `/v1/modules/${encodeURIComponent(id)}`);
/** @param {{contract: string, locale?: string, module?: string}} body */
export const createSession = (body) => request('POST', '/v1/sessions', body);
/** @param {string} id */
export const getSession = (id) => request('GET', `/v1/sessions/${encodeURIComponent(id)}`);
/** @param {string} id @param {string} field @param {string} value */
export const putDraft = (id, field, value) => request('PUT', `/v1/sessions/${encodeURIComponent(id)}/draft`, { field, value });
/** @param {string} id @param {{limit?: number, before?: number}} [page] */
export const getTranscriptPage = (id, { limit = 200, before = 0 } = {}) => request('GET',
  `/v1/sessions/${encodeURIComponent(id)}/messages?limit=${limit}${before ? `&before=${before}` : ''}`);

// TRANSCRIPT_MAX bounds what a restore reads: the gateway bounds a transcript too, and a panel
// that shows thousands of entries has stopped being readable anyway.
const TRANSCRIPT_MAX = 5000;

/**
 * getTranscript reads session id's transcript, paging back from the newest page until there is
 * none older, and returns its entries oldest first.
 */
/**
 * @param {string} id
 * @returns {Promise<any[]>}
 */
export async function getTranscript(id) {
  /** @type {any[][]} */
  const pages = [];
  let count = 0;
  let before = 0;
  for (;;) {
    const page = await getTranscriptPage(id, { before });
    const entries = Array.isArray(page && page.messages) ? page.messages : [];
    pages.unshift(entries);
    count += entries.length;
    if (!page || typeof page.next !== 'number' || page.next <= 0 || !entries.length || count >= TRANSCRIPT_MAX) break;
    before = page.next;
  }
  return pages.flat();
}
/** @param {string} id @param {'accept' | 'reject'} action */
export const decideProposal = (id, action) => request('POST', `/v1/sessions/${encodeURIComponent(id)}/proposal`, { action });

/**
 * streamTurn posts a turn and calls onLine with every line of the NDJSON answer as it arrives.
 * It resolves with the result line, and rejects with an ApiError for an HTTP error, the stream's
 * error line, or a stream that ended without either (or that could not be read).
 */
/**
 * @param {string} sessionId
 * @param {object} body
 * @param {(line: any) => void} onLine
 * @param {{signal?: AbortSignal}} [options]
 * @returns {Promise<any>}
 */
export async function streamTurn(sessionId, body, onLine, { signal } = {}) {
  try {
    for await (const ev of clientStreamTurn(sessionId, body, { apiKey, signal })) {
      onLine(ev);
      if (ev.type === 'result') return ev;
      if (ev.type === 'error') throw new ApiError(ev.error || 'coach_stream_failed', ev.message, { stream: true });
    }
  } catch (err) {
    if (err instanceof CoachError) {
      const code = err.kind === 'read' && err.code === 'stream_truncated' ? 'stream_incomplete' : err.code;
      throw new ApiError(code, err.message, { status: err.status, field: err.field, stream: err.kind === 'read' || err.kind === 'turn' });
    }
    throw transportError(err);
  }
  throw new ApiError('stream_incomplete', 'the connection closed before the turn finished', { stream: true });
}
