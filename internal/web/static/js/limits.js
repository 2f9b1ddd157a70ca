// @ts-check
// Length limits of what the learner types, and the counter that shows them.
//
// The gateway refuses a message over its limit with 422 invalid_input. The panel counts as the
// gateway does (Unicode code points, which is what Go's utf8.RuneCountInString counts), never cuts
// what the learner typed or pasted, and says how much is over instead; Send stays off until the
// text fits.

import { h } from './dom.js';

// The gateway reports a session's limits with the session (its `limits`: messageChars, and
// draftChars on toulmin), as it enforces them: COACH_MAX_MESSAGE_CHARS, lowered to 4000 on a
// toulmin session. A gateway older than that field sends none; the panel then assumes the
// defaults api/openapi.yaml documents for it (TurnRequest.message): 4000 on toulmin
// (internal/toulmin.MaxMessage and MaxDraft), else 8000, the default of COACH_MAX_MESSAGE_CHARS.
const DEFAULT_LIMITS = { toulmin: 4000 };
const DEFAULT_MESSAGE_LIMIT = 8000;

/**
 * Limits are the limits a session reports.
 * @typedef {{messageChars?: unknown, draftChars?: unknown}} Limits
 */

/**
 * reported returns n when it is a usable limit (a positive whole number), else 0.
 * @param {unknown} n
 */
function reported(n) {
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

/**
 * defaultLimit returns the documented limit of session's contract, for a gateway that reports none.
 * @param {{contract?: string}} session
 */
function defaultLimit(session) {
  return DEFAULT_LIMITS[/** @type {'toulmin'} */ (session && session.contract)] || DEFAULT_MESSAGE_LIMIT;
}

/**
 * messageLimit returns the longest message, in characters, that session accepts.
 * @param {{contract?: string, limits?: Limits}} session
 * @returns {number}
 */
export function messageLimit(session) {
  return reported(session?.limits?.messageChars) || defaultLimit(session);
}

/**
 * draftLimit returns the longest draft value, in characters, that a toulmin session accepts.
 * @param {{contract?: string, limits?: Limits}} session
 * @returns {number}
 */
export function draftLimit(session) {
  return reported(session?.limits?.draftChars) || defaultLimit(session);
}

/**
 * charCount counts text as the gateway does: in Unicode code points.
 * @param {string} text
 */
export function charCount(text) {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

// NEAR is the share of the limit from which the counter shows (when it is not always shown) and
// the first threshold that is announced.
const NEAR = 0.8;

/**
 * limitCounter watches input against max characters. The visible counter is not a live region:
 * screen readers hear about the length only when it crosses a threshold (near the limit, at the
 * limit, over it, and back within it), never on every keystroke.
 * @param {(key: string, ...args: any[]) => string} t
 * @param {HTMLTextAreaElement | HTMLInputElement} input
 * @param {number} max
 * @param {{always?: boolean, onChange?: (over: boolean) => void}} [options] always: show the
 *   counter at any length (cards show it, as the seed asks); onChange: told after every update.
 */
export function limitCounter(t, input, max, { always = false, onChange } = {}) {
  const counter = h('span', { class: 'counter', testid: 'counter', 'aria-hidden': 'true' });
  const note = h('p', { class: 'limit-note', testid: 'limit-note', hidden: true });
  const live = h('span', { class: 'sr-only', testid: 'counter-live', role: 'status' });
  // level: 0 well within, 1 near, 2 exactly at the limit, 3 over it.
  let level = 0;
  const update = () => {
    const n = charCount(input.value);
    const next = n > max ? 3 : n === max ? 2 : n >= NEAR * max ? 1 : 0;
    counter.textContent = t('chars', n, max);
    counter.hidden = !always && next === 0;
    counter.classList.toggle('counter-near', next >= 1);
    counter.classList.toggle('counter-full', next >= 2);
    note.hidden = next < 3;
    note.textContent = next === 3 ? t('overLimit', n - max, max) : '';
    input.setAttribute('aria-invalid', String(next === 3));
    if (next !== level) {
      const rising = next > level;
      if (next === 3) live.textContent = t('overLimit', n - max, max);
      else if (next === 2 && rising) live.textContent = t('atLimit', max);
      else if (next === 1 && rising) live.textContent = t('nearLimit', max - n, max);
      else if (level === 3) live.textContent = t('withinLimit', max);
      level = next;
    }
    onChange?.(next === 3);
  };
  input.addEventListener('input', update);
  update();
  return {
    counter,
    note,
    live,
    update,
    /** over reports whether the text is longer than the limit. */
    over: () => level === 3,
  };
}
