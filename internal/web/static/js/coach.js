// @ts-check
// The one HTTP layer of the panel is the JavaScript client (clients/js, @coachgw/client), whose
// modules the gateway serves at /client/: this module only configures it for the panel (same
// origin, the API key this tab keeps) and says which of its errors a learner may retry.

// @ts-ignore -- the path is the gateway's (/client/), not the repository's; the type below is read
// from the client's source.
import * as served from '../../client/index.js';

/** @type {typeof import('../../../../clients/js/src/index.js')} */
const coachgw = served;
export const { CoachError } = coachgw;

/** @typedef {import('../../../../clients/js/src/errors.js').CoachError} CoachErrorType */

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

/** client is the panel's CoachClient: the page's own origin, the key asked for on every request. */
export const client = new coachgw.CoachClient({ baseURL: '', apiKey });

// TRANSCRIPT_PAGE is the page size a restore reads the transcript with.
export const TRANSCRIPT_PAGE = 200;

/**
 * asCoachError returns err as a CoachError: an abort is passed on as it is, anything else that is
 * not one becomes a `network` error.
 * @param {unknown} err
 * @returns {CoachErrorType}
 */
export function asCoachError(err) {
  if (err instanceof CoachError) return err;
  if (err instanceof Error && err.name === 'AbortError') throw err;
  return new CoachError('network', 'network_error', (err instanceof Error && err.message) || 'network error');
}

/**
 * canRetry says whether the panel offers Retry for err: the client's own answer, except for a
 * spent daily budget, which a retry cannot refill before tomorrow.
 * @param {CoachErrorType} err
 */
export function canRetry(err) {
  return err.retryable && err.code !== 'budget_exceeded';
}
