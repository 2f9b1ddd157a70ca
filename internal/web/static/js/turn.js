// What the three panels share: running a streamed turn (busy state, the "retrying…" note of a
// reset line, the error box with its Retry button) and the free-text composer.

import { streamTurn } from './api.js';
import { autosize, clear, h } from './dom.js';

/**
 * Turns runs the turns of one session, one at a time. The panel's root element carries
 * data-busy ("true" while a turn streams) and data-turns (turns completed), which the browser
 * test waits on.
 */
export class Turns {
  /**
   * @param {object} o
   * @param {() => string} o.sessionId
   * @param {Function} o.t translator
   * @param {HTMLElement} o.root the panel
   * @param {HTMLElement} o.status where the retry note and errors show
   * @param {(busy: boolean) => void} [o.onBusy]
   */
  constructor({ sessionId, t, root, status, onBusy }) {
    Object.assign(this, { sessionId, t, root, status, onBusy });
    this.busy = false;
    this.count = 0;
    this.controller = null;
    root.dataset.busy = 'false';
    root.dataset.turns = '0';
  }

  setBusy(busy) {
    this.busy = busy;
    this.root.dataset.busy = String(busy);
    this.root.setAttribute('aria-busy', String(busy));
    this.onBusy?.(busy);
  }

  /**
   * send runs one turn. body is the request body, or a function returning it (called again on a
   * retry, so that it can pick up state that changed). view receives the stream:
   * begin() before each attempt, delta(line), card(line), reset(line), result(line) and fail(err).
   * It resolves true when the turn completed.
   */
  async send(body, view) {
    if (this.busy) return false;
    this.setBusy(true);
    this.clearStatus();
    view.begin?.();
    const controller = new AbortController();
    this.controller = controller;
    let end;
    try {
      end = await streamTurn(this.sessionId(), typeof body === 'function' ? body() : body, (line) => {
        switch (line.type) {
          case 'delta':
            this.hideNote();
            view.delta?.(line);
            break;
          case 'card':
            view.card?.(line);
            break;
          case 'reset':
            this.showNote();
            view.reset?.(line);
            break;
          default:
            // result and error end the stream and are handled below; unknown types are for newer clients.
        }
      }, { signal: controller.signal });
    } catch (err) {
      if (controller.signal.aborted) return false;
      this.setBusy(false);
      this.hideNote();
      view.fail?.(err);
      this.showError(err, err.retryable ? () => this.send(body, view) : null);
      return false;
    } finally {
      if (this.controller === controller) this.controller = null;
    }
    this.hideNote();
    this.setBusy(false);
    view.result?.(end);
    this.root.dataset.turns = String(++this.count);
    return true;
  }

  /** abort cancels the turn in flight, if any; the gateway then stores nothing of it. */
  abort() {
    this.controller?.abort();
  }

  clearStatus() {
    clear(this.status);
  }

  showNote() {
    if (this.status.querySelector('[data-testid="retry-note"]')) return;
    this.status.append(h('p', { class: 'retry-note', testid: 'retry-note', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), this.t('retrying')));
  }

  hideNote() {
    this.status.querySelector('[data-testid="retry-note"]')?.remove();
  }

  /** showError shows err; retry, when given, is offered as a Retry button. */
  showError(err, retry) {
    this.clearStatus();
    this.status.append(errorBox(this.t, err, retry, () => this.clearStatus()));
  }
}

/** errorBox renders an API error: a friendly sentence, the gateway's message and the offending field. */
export function errorBox(t, err, retry, dismiss) {
  const known = t(`errors.${err.code}`);
  const friendly = known === `errors.${err.code}` ? t('errors.fallback') : known;
  const box = h('div', { class: 'alert alert-error', role: 'alert', testid: 'turn-error', dataset: { errorCode: err.code || '' } },
    h('div', { class: 'alert-body' },
      h('strong', null, friendly),
      err.message && err.message !== friendly ? h('span', { class: 'alert-detail', testid: 'error-message' }, ` ${err.message}`) : null,
      h('span', { class: 'alert-code' }, ` (${err.code}${err.status ? `, HTTP ${err.status}` : ''})`),
      err.field ? h('span', { class: 'alert-field', testid: 'error-field' }, ` — ${t('field', err.field)}`) : null),
    h('div', { class: 'alert-actions' },
      retry ? h('button', { type: 'button', class: 'btn btn-small btn-primary', testid: 'retry-button', onclick: () => retry() }, t('retry')) : null,
      dismiss ? h('button', { type: 'button', class: 'btn btn-small btn-ghost', onclick: () => dismiss() }, t('dismiss')) : null));
  return box;
}

/**
 * composer returns the free-text box: Enter sends, Shift+Enter breaks the line. onSend gets the
 * trimmed text and returns a promise of whether it was sent; the box keeps the text otherwise.
 */
export function composer(t, onSend, { placeholder = '', maxLength = 8000 } = {}) {
  const input = h('textarea', { class: 'composer-input', testid: 'composer-input', rows: 1, placeholder, maxLength, 'aria-label': t('composerLabel') });
  const button = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'composer-send', disabled: true }, t('send'));
  const fit = autosize(input);
  let locked = false;
  const sync = () => {
    button.disabled = locked || input.value.trim() === '';
  };
  const submit = async () => {
    const text = input.value.trim();
    if (!text || locked) return;
    input.value = '';
    fit();
    sync();
    if ((await onSend(text)) === false && input.value === '') {
      input.value = text;
      fit();
      sync();
    }
  };
  input.addEventListener('input', sync);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  const el = h('form', { class: 'composer', testid: 'composer', onsubmit: (e) => { e.preventDefault(); submit(); } },
    input, button, h('p', { class: 'composer-hint' }, t('composerHint')));
  return {
    el,
    input,
    /** setLocked blocks sending (while a turn streams) but lets the learner type ahead. */
    setLocked(v) {
      locked = v;
      sync();
    },
    /** setDisabled turns the box off altogether (a finished session). */
    setDisabled(v) {
      input.disabled = v;
      locked = v;
      sync();
    },
    focus() {
      if (!input.disabled) input.focus();
    },
  };
}

/** bubble renders one chat message; content is a node or text. */
export function bubble(role, label, content, extra = {}) {
  return h('article', { class: `msg msg-${role}${extra.class ? ` ${extra.class}` : ''}`, testid: extra.testid || `msg-${role}` },
    h('header', { class: 'msg-who' }, label),
    h('div', { class: 'msg-body' }, content));
}
