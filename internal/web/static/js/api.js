// The gateway's API on the same origin (see api/openapi.yaml).

import { readLines } from './ndjson.js';

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

/** setApiKey sets the API key sent as "Authorization: Bearer"; "" sends none. */
export function setApiKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    else sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    // Storage is off (a privacy mode): requests go without a key.
  }
}

function headers(extra) {
  const key = apiKey();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

/** ApiError is a failed request: an HTTP error body {"error","message","field"}, a stream's error line, or a transport problem. */
export class ApiError extends Error {
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
    return [0, 408, 409, 429, 500, 502, 503, 504].includes(this.status) && this.code !== 'no_pending_proposal' && this.code !== 'session_complete';
  }
}

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

function transportError(err) {
  if (err instanceof ApiError || err.name === 'AbortError') return err;
  return new ApiError('network_error', err.message || 'network error', { status: 0 });
}

/** request sends a JSON request and returns the parsed JSON answer (null for 204). */
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
export const getModule = (id) => request('GET', `/v1/modules/${encodeURIComponent(id)}`);
export const createSession = (body) => request('POST', '/v1/sessions', body);
export const getSession = (id) => request('GET', `/v1/sessions/${encodeURIComponent(id)}`);
export const putDraft = (id, field, value) => request('PUT', `/v1/sessions/${encodeURIComponent(id)}/draft`, { field, value });
export const getTranscriptPage = (id, { limit = 200, before = 0 } = {}) => request('GET',
  `/v1/sessions/${encodeURIComponent(id)}/messages?limit=${limit}${before ? `&before=${before}` : ''}`);

// TRANSCRIPT_MAX bounds what a restore reads: the gateway bounds a transcript too, and a panel
// that shows thousands of entries has stopped being readable anyway.
const TRANSCRIPT_MAX = 5000;

/**
 * getTranscript reads session id's transcript, paging back from the newest page until there is
 * none older, and returns its entries oldest first.
 */
export async function getTranscript(id) {
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
export const decideProposal = (id, action) => request('POST', `/v1/sessions/${encodeURIComponent(id)}/proposal`, { action });

/**
 * streamTurn posts a turn and calls onLine with every line of the NDJSON answer as it arrives.
 * It resolves with the result line, and rejects with an ApiError for an HTTP error, the stream's
 * error line, or a stream that ended without either.
 */
export async function streamTurn(sessionId, body, onLine, { signal } = {}) {
  let res;
  try {
    res = await fetch(`/v1/sessions/${encodeURIComponent(sessionId)}/turns`, {
      method: 'POST',
      signal,
      headers: headers({ 'Content-Type': 'application/json', Accept: 'application/x-ndjson' }),
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw transportError(err);
  }
  if (!res.ok) throw await errorFrom(res);
  if (!res.body) throw new ApiError('stream_unsupported', 'this browser cannot read streamed responses');

  let end = null;
  try {
    await readLines(res.body, (line) => {
      if (end) return; // nothing follows the last line
      if (line.type === 'result' || line.type === 'error') end = line;
      onLine(line);
    });
  } catch (err) {
    if (err instanceof SyntaxError) throw new ApiError('bad_stream', `unreadable stream line: ${err.message}`, { stream: true });
    throw transportError(err);
  }
  if (!end) throw new ApiError('stream_incomplete', 'the connection closed before the turn finished', { stream: true });
  if (end.type === 'error') throw new ApiError(end.error || 'coach_stream_failed', end.message, { stream: true });
  return end;
}
