export type ClientOptions = {
    /**
     * the gateway's base URL, e.g. "http://127.0.0.1:8080" (a path
     * prefix, as behind a reverse proxy, is kept); "" (the default) sends requests to the page's
     * own origin
     */
    baseURL?: string;
    /**
     * sent as "Authorization: Bearer <key>"; a function
     * is asked again for every request, so a key that changes is picked up
     */
    apiKey?: string | (() => string);
    /**
     * the fetch to use (default: the global one)
     */
    fetch?: typeof fetch;
    /**
     * more headers for every request
     */
    headers?: Record<string, string>;
    /**
     * the longest stream line, and the largest JSON answer, accepted
     * (default 1 MiB). The result line is sent after the turn was stored: when it is the line over
     * the limit, the turn is stored all the same (read the session again)
     */
    maxLineBytes?: number;
};
export type CallOptions = {
    /**
     * aborting it cancels the request (and a turn's stream)
     */
    signal?: AbortSignal;
};
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
export declare function send(config: ClientOptions, method: string, path: string, body: unknown, accept: string, signal: AbortSignal | undefined): Promise<Response>;
/**
 * joinURL puts path after base without doubling the slash between them.
 * @param {string | undefined} base
 * @param {string} path
 * @returns {string}
 */
export declare function joinURL(base: string | undefined, path: string): string;
/**
 * sessionPath returns the path of session id.
 * @param {string} id
 * @returns {string}
 */
export declare function sessionPath(id: string): string;
