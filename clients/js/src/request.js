// Sending requests to the gateway: the base URL, the API key, the fetch in use, and the mapping of
// answers other than 2xx to CoachError. Shared by the session calls and the turn stream.

import { errorFromResponse, networkError } from './errors.js';

/**
 * @typedef {object} ClientOptions
 * @property {string} [baseURL] the gateway's base URL, e.g. "http://127.0.0.1:8080" (a path
 *   prefix, as behind a reverse proxy, is kept); "" (the default) sends requests to the page's
 *   own origin
 * @property {string | (() => string)} [apiKey] sent as "Authorization: Bearer <key>"; a function
 *   is asked again for every request, so a key that changes is picked up
 * @property {typeof fetch} [fetch] the fetch to use (default: the global one)
 * @property {Record<string, string>} [headers] more headers for every request
 * @property {number} [maxLineBytes] the longest stream line, and the largest JSON answer, accepted
 *   (default 1 MiB). The result line is sent after the turn was stored: when it is the line over
 *   the limit, the turn is stored all the same (read the session again)
 */

/**
 * @typedef {object} CallOptions
 * @property {AbortSignal} [signal] aborting it cancels the request (and a turn's stream)
 */

/**
 * send makes a request with body (when not undefined) as JSON and returns the answer when it is
 * 2xx; otherwise it throws a CoachError of kind `http`, or `network` when there was no answer.
 * @param {ClientOptions} config
 * @param {string} method
 * @param {string} path
 * @param {unknown} body
 * @param {string} accept
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<Response>}
 */
export async function send(config, method, path, body, accept, signal) {
  /** @type {Record<string, string>} */
  const headers = { ...config.headers, Accept: accept };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const key = typeof config.apiKey === 'function' ? config.apiKey() : config.apiKey;
  if (key) headers.Authorization = `Bearer ${key}`;
  const doFetch = config.fetch ?? globalThis.fetch;
  let res;
  try {
    res = await doFetch(joinURL(config.baseURL, path), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    throw networkError(err, signal);
  }
  if (!res.ok) throw await errorFromResponse(res);
  return res;
}

/**
 * joinURL puts path after base without doubling the slash between them.
 * @param {string | undefined} base
 * @param {string} path
 * @returns {string}
 */
export function joinURL(base, path) {
  return (base || '').replace(/\/+$/, '') + path;
}

/**
 * sessionPath returns the path of session id.
 * @param {string} id
 * @returns {string}
 */
export function sessionPath(id) {
  return `/v1/sessions/${encodeURIComponent(id)}`;
}
