// The one error type of the client: an HTTP error answered before a stream started, a turn that
// ended with an error line, a stream that could not be read, or a request that never got an answer.

/**
 * What failed:
 * - `http`: the gateway (or a proxy in front) answered a status other than 2xx; `status`, `code`,
 *   `message` and `field` come from its JSON error body `{"error","message","field"}`.
 * - `turn`: the turn's stream ended with an error line (`coach_stream_failed`, …); `status` is 0.
 * - `read`: the stream could not be read: `stream_truncated` (it stopped before its result or
 *   error line), `line_too_long`, `malformed_line`, `not_a_stream`.
 * - `network`: the request got no answer at all (`network_error`).
 * @typedef {'http' | 'turn' | 'read' | 'network'} CoachErrorKind
 */

/** Status codes after which the same request may succeed later. */
const RETRYABLE_STATUS = [408, 409, 429, 500, 502, 503, 504];
/** Codes of those statuses that sending the same request again cannot fix. */
const FINAL_CODES = ['no_pending_proposal', 'session_complete'];

/** CoachError is every failure the client reports, besides an aborted signal's own reason. */
export class CoachError extends Error {
  /**
   * @param {CoachErrorKind} kind
   * @param {string} code the gateway's stable error code, or the client's own for `read` and `network`
   * @param {string} message
   * @param {{ status?: number, field?: string, retryAfter?: number, cause?: unknown }} [details]
   */
  constructor(kind, code, message, details = {}) {
    super(message || code, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'CoachError';
    /** @type {CoachErrorKind} */
    this.kind = kind;
    /** The stable error code, e.g. `session_busy`, `invalid_input`, `coach_stream_failed`. */
    this.code = code;
    /** The HTTP status of an `http` error; 0 otherwise. */
    this.status = details.status ?? 0;
    /** The offending input of an `invalid_input` error; "" otherwise. */
    this.field = details.field ?? '';
    /** The seconds the answer's Retry-After header advises (429, 503); 0 without one. */
    this.retryAfter = details.retryAfter ?? 0;
  }

  /** retryable says whether sending the same request again may succeed. */
  get retryable() {
    switch (this.kind) {
      case 'turn':
      case 'network':
        return true;
      case 'read':
        return this.code === 'stream_truncated';
      default:
        return RETRYABLE_STATUS.includes(this.status) && !FINAL_CODES.includes(this.code);
    }
  }
}

/**
 * errorFromResponse reads a non-2xx answer into a CoachError of kind `http`. A body that is not
 * the gateway's (a proxy's error page) leaves the code `http_<status>`.
 * @param {Response} res
 * @returns {Promise<CoachError>}
 */
export async function errorFromResponse(res) {
  /** @type {unknown} */
  let body = null;
  try {
    body = JSON.parse(await res.text());
  } catch {
    // Not JSON, or the connection broke: the status says enough.
  }
  const b = /** @type {{ error?: unknown, message?: unknown, field?: unknown }} */ (body !== null && typeof body === 'object' ? body : {});
  const code = typeof b.error === 'string' && b.error ? b.error : `http_${res.status}`;
  const message = typeof b.message === 'string' && b.message ? b.message : res.statusText || code;
  return new CoachError('http', code, message, {
    status: res.status,
    field: typeof b.field === 'string' ? b.field : '',
    retryAfter: retryAfterSeconds(res.headers.get('Retry-After'), Date.now()),
  });
}

/**
 * retryAfterSeconds parses a Retry-After value (delay-seconds or an HTTP date), capped at a day.
 * @param {string | null} value
 * @param {number} now milliseconds since the epoch
 * @returns {number}
 */
export function retryAfterSeconds(value, now) {
  const v = (value || '').trim();
  if (v === '') return 0;
  const day = 24 * 60 * 60;
  if (/^\d+$/.test(v)) return Math.min(Number(v), day);
  const at = Date.parse(v);
  if (Number.isNaN(at) || at <= now) return 0;
  return Math.min(Math.ceil((at - now) / 1000), day);
}

/**
 * networkError wraps what fetch threw; an abort is passed on as it is, so callers can tell a
 * cancelled turn from a failed one.
 * @param {unknown} err
 * @param {AbortSignal | undefined} signal
 * @returns {unknown}
 */
export function networkError(err, signal) {
  if (err instanceof CoachError) return err;
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof Error && err.name === 'AbortError') return err;
  return toCoachError(err);
}

/**
 * toCoachError returns err if it is a CoachError, and otherwise a CoachError of kind `network`
 * that wraps it.
 * @param {unknown} err
 * @returns {CoachError}
 */
export function toCoachError(err) {
  if (err instanceof CoachError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new CoachError('network', 'network_error', message || 'network error', { cause: err });
}
