// @ts-check
// The crisis resources of a safety line (gateway v1.3), as every panel shows them: a region with
// a heading, the gateway's message and each resource with its links (tel:, sms:, https), placed
// just above the panel's status and message box, where the learner is looking when the line
// arrives. It stays while the session is on a safety hold, after a reload too (the transcript
// keeps the notice). Screen readers hear it once, assertively, when it arrives in the turn of
// this page that starts the hold; drawing it again (a later held turn, a reload, a resumed turn,
// a redraw from another tab) is silent.
// The focus is never moved: the learner may be typing, and the region is scrolled into view.
// While the session holds, every lesson control of the panel (a proposal's buttons, the draft's
// Edit, a card's Continue or options, a form, a suggestion) is disabled and described by the
// region's note that the lesson is paused; the message box, Stop, the error box and the supportive
// answer's reply stay: writing to the coach is what the learner can still do.

import { clear, h, reveal, stickyEdges } from './dom.js';

/** @typedef {import('./i18n.js').Translator} Translator */

/**
 * Notice is the content of a safety line (api/schemas/safety-notice.json).
 * @typedef {{kind: string, locale: string, message: string, resources: {name: string, phone?: string, text?: string, url?: string}[]}} Notice
 */

let count = 0;

// PLACE_GAP is the room left between a placed region and the sticky bars, in px.
const PLACE_GAP = 12;

// HOLD_KEEPS are the parts of a panel whose controls work during a hold.
const HOLD_KEEPS = '.safety, .composer, .turn-status, .support, [data-testid$="-stop"]';

/**
 * isControl tells whether el is a form control a hold can disable.
 * @param {Element} el
 * @returns {el is HTMLButtonElement | HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement}
 */
function isControl(el) {
  return el instanceof HTMLButtonElement || el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement;
}

export class SafetyRegion {
  /**
   * @param {Translator} t
   * @param {{onClear?: () => Promise<void>}} [options] onClear ends the session's hold; given on
   *   an open gateway (no access keys), where every caller may use the operator's clear, so that
   *   a false positive on a fresh install never holds a session for ever.
   */
  constructor(t, { onClear } = {}) {
    this.t = t;
    this.onClear = onClear;
    count += 1;
    const titleId = `safety-title-${count}`;
    // The note that the lesson is paused describes every control the hold disables.
    this.holdId = `safety-hold-${count}`;
    this.body = h('div', { class: 'safety-body' });
    this.el = h('section', { class: 'safety', testid: 'safety-notice', 'aria-labelledby': titleId, hidden: true },
      h('h2', { class: 'safety-title', id: titleId }, t('safetyTitle')),
      this.body);
    // The region itself is not live (a redraw would be read again); this is, and only a safety
    // line that arrives in a turn of this page writes to it.
    this.live = h('p', { class: 'sr-only', testid: 'safety-announcer', 'aria-live': 'assertive', 'aria-atomic': 'true' });
    /** @type {Notice | null} the notice shown */
    this.notice = null;
    this.held = false;
    // A notice that arrived in this page's turn is scrolled into view once the turn's answer,
    // which streams in just above it, is complete (see reveal).
    this.revealPending = false;
    /** @type {HTMLElement | null} the panel whose lesson controls a hold pauses */
    this.root = null;
    // Controls drawn while the session holds (a redraw of the draft, a restored card) are paused
    // as they arrive, and so is one that its panel turns on again (a card unlocked after a turn).
    this.watcher = new MutationObserver(() => { if (this.held) this.pause(); });
  }

  /**
   * place scrolls a held session's region into view, clear of the sticky bars: after a reload the
   * panel has scrolled to where its lesson was (the last message, the active card), but on a
   * phone the resources are what the learner must find first. The region ends just above the
   * message box when it fits between the bars, else it begins just under the top ones. The
   * scroll is immediate and to a place computed from the page as it is now, so that it ends
   * any smooth scroll the panel began and lands where it should.
   */
  place() {
    if (!this.held || this.el.hidden) return;
    const { top, bottom } = stickyEdges();
    const r = this.el.getBoundingClientRect();
    const dy = r.height <= bottom - top - 2 * PLACE_GAP ? r.bottom - (bottom - PLACE_GAP) : r.top - (top + PLACE_GAP);
    window.scrollTo({ top: window.scrollY + dy, behavior: 'instant' });
  }

  /** pause disables the panel's lesson controls during a hold (see HOLD_KEEPS). */
  pause() {
    if (!this.root) return;
    for (const el of this.root.querySelectorAll('button, input, textarea, select')) {
      if (!isControl(el) || el.closest(HOLD_KEEPS)) continue;
      if (el.dataset.holdPaused !== 'true') {
        el.dataset.holdPaused = 'true';
        el.dataset.holdWas = String(el.disabled);
        el.setAttribute('aria-describedby', [el.getAttribute('aria-describedby'), this.holdId].filter(Boolean).join(' '));
      }
      if (!el.disabled) el.disabled = true;
    }
  }

  /** resume gives the controls a hold paused back, as they were. */
  resume() {
    if (!this.root) return;
    for (const el of this.root.querySelectorAll('[data-hold-paused="true"]')) {
      if (!isControl(el)) continue;
      el.disabled = el.dataset.holdWas === 'true';
      delete el.dataset.holdPaused;
      delete el.dataset.holdWas;
      const rest = (el.getAttribute('aria-describedby') || '').split(' ').filter((id) => id && id !== this.holdId);
      if (rest.length) el.setAttribute('aria-describedby', rest.join(' '));
      else el.removeAttribute('aria-describedby');
    }
  }

  /** reveal scrolls a notice that has just arrived into view, once. */
  reveal() {
    if (!this.revealPending) return;
    this.revealPending = false;
    reveal(this.el);
  }

  /**
   * show draws notice. announce: it arrived just now in a turn this page sent, so screen readers
   * are told and the region is to be scrolled into view when the turn ends; but only when it
   * starts a hold. Every turn of a held session carries the notice again, and hearing the
   * resources read out assertively after each message would drown the coach's answer.
   * @param {Notice} notice
   * @param {{announce?: boolean}} [options]
   */
  show(notice, { announce = false } = {}) {
    this.notice = notice;
    this.draw();
    if (announce && !this.held) {
      this.live.textContent = [notice.message, ...notice.resources.map((r) => [r.name, r.phone, r.text].filter(Boolean).join(', '))].join('. ');
      this.revealPending = true;
    }
  }

  /**
   * hold sets whether the session is on a safety hold: the region stays (with a note that the
   * lesson is paused), the panel root gets data-safety-hold, which hides the lesson's own
   * controls (app.css), and the lesson controls still shown are paused. A hold without a notice to show (the transcript no longer has it) still
   * says where to turn.
   * @param {HTMLElement} root the panel
   * @param {boolean} held
   */
  hold(root, held) {
    this.held = held;
    root.dataset.safetyHold = String(held);
    if (this.root !== root) {
      this.watcher.disconnect();
      this.root = root;
      this.watcher.observe(root, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled'] });
    }
    if (held) this.pause();
    else this.resume();
    if (!held) {
      // The hold was cleared: the notice of an earlier turn goes with it.
      this.notice = null;
      this.live.textContent = '';
    }
    this.draw();
  }

  draw() {
    const t = this.t;
    clear(this.body);
    this.el.hidden = !this.notice && !this.held;
    if (this.el.hidden) return;
    const notice = this.notice;
    // The notice's locale is a BCP 47 tag: its language is the text's.
    const lang = notice ? notice.locale.split('-')[0] : '';
    if (/^[a-z]{2,3}$/i.test(lang)) this.el.lang = lang;
    else this.el.removeAttribute('lang');
    this.body.append(h('p', { class: 'safety-message', testid: 'safety-message', dir: 'auto' }, notice ? notice.message : t('safetyNoResources')));
    if (notice && notice.resources.length) {
      this.body.append(h('ul', { class: 'safety-resources', testid: 'safety-resources' }, notice.resources.map((r) => resourceItem(t, r))));
    }
    if (this.held) this.body.append(h('p', { class: 'safety-hold', testid: 'safety-hold', id: this.holdId }, t('safetyHold')));
    if (this.held && this.onClear) this.body.append(this.clearControl());
  }

  /** clearControl is the staff's way out of a hold on an open gateway: a note and a button. */
  clearControl() {
    const t = this.t;
    const onClear = /** @type {() => Promise<void>} */ (this.onClear);
    const failed = h('p', { class: 'safety-clear-failed', testid: 'safety-clear-failed', role: 'alert', hidden: true }, t('safetyClearFailed'));
    const button = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', class: 'btn btn-safety btn-safety-alt', testid: 'safety-clear' }, t('safetyClear')));
    button.addEventListener('click', async () => {
      button.disabled = true;
      failed.hidden = true;
      try {
        await onClear();
      } catch {
        failed.hidden = false;
        button.disabled = false;
      }
    });
    return h('div', { class: 'safety-clear', testid: 'safety-clear-region' },
      h('p', { class: 'safety-clear-note' }, t('safetyClearNote')), button, failed);
  }
}

/**
 * resourceItem renders one resource: its name, and a link for each way to reach it.
 * @param {Translator} t
 * @param {Notice['resources'][number]} r
 */
function resourceItem(t, r) {
  const links = [];
  const phone = dialable(r.phone || '');
  if (phone) links.push(h('a', { class: 'btn btn-safety', testid: 'safety-call', href: `tel:${phone}` }, t('safetyCall', r.phone)));
  if (r.text) {
    // "Envía AYUDA al 988", "Text HOME to 741741": the number is the last run of digits.
    const digits = /(\+?\d[\d ().-]*\d|\d)(?!.*\d)/.exec(r.text);
    const to = digits ? dialable(digits[1]) : '';
    links.push(to
      ? h('a', { class: 'btn btn-safety btn-safety-alt', testid: 'safety-sms', href: `sms:${to}` }, t('safetyText', r.text))
      : h('span', { class: 'safety-text' }, t('safetyText', r.text)));
  }
  const url = httpsURL(r.url || '');
  if (url) {
    links.push(h('a', { class: 'safety-link', testid: 'safety-url', href: url.href, target: '_blank', rel: 'noopener noreferrer' },
      t('safetyVisit', url.hostname.replace(/^www\./, '')), h('span', { class: 'sr-only' }, ` (${t('opensNewTab')})`)));
  }
  return h('li', { class: 'safety-resource', testid: 'safety-resource' },
    h('p', { class: 'safety-name', dir: 'auto' }, r.name),
    h('div', { class: 'safety-actions' }, links));
}

/**
 * dialable returns phone as a tel:/sms: target (digits and a leading +), or "" when it is none.
 * @param {string} phone
 */
function dialable(phone) {
  const d = phone.replace(/[\s().-]/g, '');
  return /^\+?\d{2,20}$/.test(d) ? d : '';
}

/**
 * httpsURL returns s as a URL when it is an https address, else null: nothing else becomes a link.
 * @param {string} s
 */
function httpsURL(s) {
  try {
    const u = new URL(s);
    return u.protocol === 'https:' && u.hostname ? u : null;
  } catch {
    return null;
  }
}
