// @ts-check
// What the three panels share to go on with a turn after a reload and to stop one: the Stop
// button, and the view a resumed turn is drawn in. Turns (turn.js) reads the turn; each panel
// says how to draw it from the meta it kept with the turn when it sent it.

import { h } from './dom.js';

/** @typedef {import('./turn.js').Turns} Turns */
/** @typedef {import('./turn.js').TurnView} TurnView */
/** @typedef {ReturnType<typeof import('./turn.js').composer>} Composer */

/**
 * stopButton returns a panel's Stop button, hidden until the panel shows it while a turn
 * streams. Pressing it calls onStop, which moves the focus where the learner goes on (the button
 * goes once the turn has ended) and stops the turn (Turns.stop): the stream then ends with
 * turn_cancelled and the gateway stores nothing.
 * @param {import('./i18n.js').Translator} t
 * @param {{testid: string, class: string, onStop: () => void}} options
 * @returns {HTMLButtonElement}
 */
export function stopButton(t, { testid, class: cls, onStop }) {
  return h('button', { type: 'button', class: `btn btn-ghost ${cls}`, testid, hidden: true, 'aria-keyshortcuts': 'Escape', onclick: () => onStop() }, t('stop'));
}

/**
 * composerStop puts a Stop button in box, in the place of Send while a turn streams (Send could
 * not send then anyway). It returns what the panel calls when its turn starts or ends; a turn
 * another tab sent (following) is only shown here: no Stop, and Send stays in place, off.
 * @param {import('./i18n.js').Translator} t
 * @param {Composer} box
 * @param {() => void} stopTurn stops the turn (the panel's Turns.stop)
 * @returns {(busy: boolean, following?: boolean) => void}
 */
export function composerStop(t, box, stopTurn) {
  const stop = stopButton(t, { testid: 'composer-stop', class: 'composer-stop', onStop: () => { box.focus(); stopTurn(); } });
  box.el.insertBefore(stop, box.el.querySelector('.composer-meta'));
  const send = box.el.querySelector('[data-testid="composer-send"]');
  return (busy, following = false) => {
    stop.hidden = !busy || following;
    if (send instanceof HTMLElement) send.hidden = busy && !following;
  };
}

/**
 * resumeTurn goes on with the session's turn that a reload (or a switch of session) left
 * running, once the panel has drawn its transcript: make(meta) returns the view of the turn, drawn
 * as the panel's send drew it, from the meta kept with the turn (null when none was kept); it is
 * called when the turn begins, before the lines kept and then the rest are shown.
 *
 * box, for a panel with a message box, is kept in step with the learner's message (meta.message):
 * the message leaves the box as its turn goes on (it was sent), comes back when the turn fails (to
 * edit or send again), and a kept copy of a message that the transcript shows as the last one
 * sent (a turn the gateway took just before the page went, before its id arrived) leaves it.
 * It resolves true when an answer was shown to its end. A turn this tab follows (another tab sent
 * it) is drawn from meta, as that tab described it, and never touches the box.
 * @param {Turns} turns
 * @param {(meta: any) => TurnView} make
 * @param {{known: number, box?: Composer, transcript?: HTMLElement, meta?: any}} options known:
 *   the session version the transcript was drawn at; transcript: where the learner's messages
 *   are drawn
 * @returns {Promise<boolean>}
 */
export async function resumeTurn(turns, make, { known, box: own, transcript, meta: followed = null }) {
  const box = turns.following ? undefined : own;
  /** @type {TurnView | null} */
  let v = null;
  /** @type {string | null} */
  let message = null;
  const shown = await turns.resume({
    begin(meta) {
      message = meta && typeof meta.message === 'string' ? meta.message : null;
      v = make(meta);
      if (box && message !== null && box.input.value.trim() === message.trim()) box.setText('');
      v.begin?.();
    },
    delta: (line) => v?.delta?.(line),
    card: (line) => v?.card?.(line),
    reset: (line) => v?.reset?.(line),
    safety: (line) => v?.safety?.(line),
    result: (line) => v?.result?.(line),
    fail(err) {
      v?.fail?.(err);
      if (box && message && box.input.value.trim() === '') box.setText(message);
    },
    discard: () => v?.discard?.(),
  }, { known, meta: followed });
  if (box && transcript) {
    const sent = [...transcript.querySelectorAll('[data-testid="msg-user"] .msg-body')].pop();
    const kept = box.input.value.trim();
    if (kept && sent && sent.textContent?.trim() === kept) box.setText('');
  }
  return shown;
}
