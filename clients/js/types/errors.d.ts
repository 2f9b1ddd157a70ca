export type CoachErrorKind = 'http' | 'turn' | 'read' | 'network';
/** CoachError is every failure the client reports, besides an aborted signal's own reason. */
export declare class CoachError extends Error {
    /** @type {CoachErrorKind} */
    kind: CoachErrorKind;
    /** The stable error code, e.g. `session_busy`, `invalid_input`, `coach_stream_failed`. */
    code: string;
    /** The HTTP status of an `http` error; 0 otherwise. */
    status: number;
    /** The offending input of an `invalid_input` error; "" otherwise. */
    field: string;
    /** The seconds the answer's Retry-After header advises (429, 503); 0 without one. */
    retryAfter: number;
    /**
     * @param {CoachErrorKind} kind
     * @param {string} code the gateway's stable error code, or the client's own for `read` and `network`
     * @param {string} message
     * @param {{ status?: number, field?: string, retryAfter?: number, cause?: unknown }} [details]
     */
    constructor(kind: CoachErrorKind, code: string, message: string, details?: {
        status?: number;
        field?: string;
        retryAfter?: number;
        cause?: unknown;
    });
    /** retryable says whether sending the same request again may succeed. */
    get retryable(): boolean;
}
/**
 * errorFromResponse reads a non-2xx answer into a CoachError of kind `http`. A body that is not
 * the gateway's (a proxy's error page) leaves the code `http_<status>`.
 * @param {Response} res
 * @returns {Promise<CoachError>}
 */
export declare function errorFromResponse(res: Response): Promise<CoachError>;
/**
 * retryAfterSeconds parses a Retry-After value (delay-seconds or an HTTP date), capped at a day.
 * @param {string | null} value
 * @param {number} now milliseconds since the epoch
 * @returns {number}
 */
export declare function retryAfterSeconds(value: string | null, now: number): number;
/**
 * networkError wraps what fetch threw; an abort is passed on as it is, so callers can tell a
 * cancelled turn from a failed one.
 * @param {unknown} err
 * @param {AbortSignal | undefined} signal
 * @returns {unknown}
 */
export declare function networkError(err: unknown, signal: AbortSignal | undefined): unknown;
/**
 * toCoachError returns err if it is a CoachError, and otherwise a CoachError of kind `network`
 * that wraps it.
 * @param {unknown} err
 * @returns {CoachError}
 */
export declare function toCoachError(err: unknown): CoachError;
