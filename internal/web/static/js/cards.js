// @ts-check
// The cards panel: a drill of training cards (card-types.md). Each card type has its accent,
// icon and input as the seed's visual table says; the card being generated streams its content
// into a pending card, which the result card then replaces. A level_up card arrives before the
// model's card of the same turn; the next card stays hidden until "Continue Training".
// A resumed session is drawn from its transcript: every card with the learner's answer under it,
// and the last card ready for an answer, with any text the learner had typed into it.
// The answer to a crisis (a turn with a safety line) is no card of the drill: it is drawn as the
// coach's supportive words with a box to write back (supportView), never as an insight to
// continue from.

import { clear, frame, h, reveal } from './dom.js';
import { limitCounter, messageLimit } from './limits.js';
import { renderMarkdown } from './markdown.js';
import { Turns, loadDraft, storeDraft, uid } from './turn.js';
import { resumeTurn, stopButton } from './resume.js';

const CONTINUE = '[Continue]';

/**
 * Card is a frontend card (api/schemas/card.json): its type and the members of that type.
 * @typedef {{type: string} & Record<string, any>} Card
 */

/**
 * CardView is a card on screen.
 * @typedef {object} CardView
 * @property {HTMLElement} el
 * @property {Card} card
 * @property {(on: boolean) => void} lock turns its controls off while its answer is sent
 * @property {(summary: string | null) => void} answered closes it, with summary under it
 * @property {() => void} focus
 */

/**
 * CardActions are what a card's controls do.
 * @typedef {object} CardActions
 * @property {() => void} [continue]
 * @property {(text: string) => void} [submit]
 * @property {(option: {id: string, label: string}) => void} [select]
 * @property {() => void} [continueTraining]
 */

// The seed's visual differentiation table.
/** @type {Record<string, string>} */
const ICONS = { scenario: '', prompt: '✏️', multiple_choice: '◉', insight: '💡', reflection: '🪞', level_up: '⬆️', pending: '' };

// The seed's frontend validators.
/** @type {Record<string, (c: any) => boolean>} */
const VALIDATORS = {
  scenario: (c) => typeof c.content === 'string' && c.content.length > 0,
  prompt: (c) => typeof c.content === 'string' && c.content.length > 0 && typeof c.input?.max_length === 'number',
  multiple_choice: (c) => typeof c.content === 'string' && c.content.length > 0 && Array.isArray(c.options) && c.options.length > 0 && c.options.every((/** @type {any} */ o) => o && o.id && o.label),
  insight: (c) => typeof c.content === 'string' && c.content.length > 0,
  reflection: (c) => typeof c.content === 'string' && c.content.length > 0 && typeof c.input?.max_length === 'number',
  level_up: (c) => typeof c.new_level === 'number' && c.new_level > 0,
};

/**
 * validateCard applies the seed's validator of the card's type.
 * @param {any} card
 */
export function validateCard(card) {
  const v = card && VALIDATORS[card.type];
  return Boolean(v && v(card));
}

/**
 * mountCards mounts the cards panel of session in root.
 * @param {import('./turn.js').PanelArgs} args
 */
export function mountCards({ root, session, t, resumed, touched = () => {}, newSession, sync }) {
  let sess = session;
  /** @type {CardView | null} */
  let active = null; // the card the learner answers next

  const levelEl = h('span', { class: 'level-badge', testid: 'cards-level' });
  const phaseEl = h('span', { class: 'cards-phase', testid: 'cards-phase' });
  // Not a live region: Turns announces each new card once, not every streamed delta.
  const feed = h('div', { class: 'card-feed', testid: 'card-feed' });
  const status = h('div', { class: 'turn-status', testid: 'turn-status' });
  // Stop, while the coach writes the next card: under the feed, where that card appears, and
  // after the card just answered in the Tab order. The turn ends with nothing stored, and the
  // answered card takes the focus back.
  const stop = stopButton(t, { testid: 'cards-stop', class: 'cards-stop', onStop: () => turns.stop() });
  const panel = h('section', { class: 'panel panel-cards', testid: 'cards-panel' },
    h('header', { class: 'cards-head' }, levelEl, phaseEl), feed, stop, status);
  root.append(panel);
  const turns = new Turns({
    sessionId: () => sess.id, t, root: panel, status, sync, session, newSession: newSession && (() => newSession()),
    follow: (meta) => resume(meta),
    // A turn another tab sent is only shown here: it has no Stop.
    onBusy: (busy, following) => { stop.hidden = !busy || following; },
  });
  // The text typed into the active card survives a reload under this key.
  const draftKey = `${sess.id}.card`;

  /** @param {number} level */
  function showLevel(level) {
    levelEl.textContent = t('level', level);
    levelEl.dataset.level = String(level);
  }

  /** @param {Card | null} card */
  function showPhase(card) {
    if (card && card.drill_phase) phaseEl.textContent = card.drill_phase;
  }

  // act sends the learner's answer to prev (null for the first turn); summary describes the
  // answer under prev once the next card is there.
  /**
   * @param {object} body
   * @param {CardView | null} prev
   * @param {string | null} summary
   */
  async function act(body, prev, summary) {
    await turns.send(body, turnView(prev, summary), { meta: { summary } });
  }

  // resume goes on with the turn a reload left running: the answer to the active card (the
  // last one drawn from the transcript, or none for the opening turn), the card streamed so
  // far, then the rest.
  /** @param {any} [followed] what the tab that sent the turn kept with it, when this tab follows it */
  async function resume(followed = null) {
    await resumeTurn(turns, (meta) => turnView(active, meta && typeof meta.summary === 'string' ? meta.summary : null),
      { known: Number(sess.version) || 0, meta: followed });
  }

  // turnView shows the turn that answers prev: the card being generated, with its content as it
  // streams and a level_up card before it, then the result card in its place.
  /**
   * @param {CardView | null} prev
   * @param {string | null} summary
   * @returns {import('./turn.js').TurnView}
   */
  function turnView(prev, summary) {
    // The card that shows the streamed content, made by begin() before anything else uses it.
    let pending = /** @type {HTMLElement} */ (/** @type {unknown} */ (null));
    let content = pending;
    let text = '';
    let live = false;
    /** @type {CardView | null} */
    let levelCard = null;
    let acknowledged = true; // false while a level_up card waits for "Continue Training"
    let crisis = false; // the turn carries a safety line: its answer is supportive, not a card
    /** @type {CardView | null} */
    let next = null;
    const render = frame(() => {
      if (!live) return;
      clear(content).append(text ? renderMarkdown(text) : typing(t));
    });
    const revealNext = () => {
      acknowledged = true;
      if (next) {
        next.el.hidden = false;
        showPhase(next.card);
        reveal(next.el);
        next.focus();
      }
    };
    // drop takes the turn off the screen (it failed, or is in the transcript already): prev is
    // the active card again, with the focus.
    const drop = () => {
      live = false;
      pending?.remove();
      levelCard?.el.remove();
      levelCard = null;
      acknowledged = true;
      showLevel(sess.state.level);
      prev?.lock(false);
      prev?.focus();
    };
    return {
      begin() {
        prev?.lock(true);
        text = '';
        crisis = false;
        live = true;
        pending?.remove();
        levelCard?.el.remove();
        levelCard = null;
        content = h('div', { class: 'card-content', testid: 'card-content' }, typing(t));
        pending = cardFrame('pending', t, content, { testid: 'card-pending' });
        pending.dataset.streaming = 'true';
        feed.append(pending);
        reveal(pending);
      },
      delta(line) {
        text += line.text;
        render();
      },
      reset() {
        text = '';
        render();
      },
      safety() {
        crisis = true;
      },
      card(line) {
        if (!line.card || line.card.type !== 'level_up') return;
        acknowledged = false;
        const view = renderCard(line.card, t, { continueTraining: () => { view.answered(null); revealNext(); } });
        levelCard = view;
        feed.insertBefore(view.el, pending);
        pending.hidden = true;
        showLevel(line.card.new_level);
        reveal(view.el);
        view.focus();
      },
      result(line) {
        live = false;
        sess = line.session;
        pending.remove();
        prev?.answered(summary);
        next = show(line.result, !acknowledged, true, crisis);
        showLevel(sess.state.level);
        turns.announce([levelCard ? levelCard.el.textContent : '', next.el.querySelector('.card-content')?.textContent || ''].filter(Boolean).join(' '));
        if (acknowledged) revealNext();
      },
      fail: drop,
      discard: drop,
    };
  }

  // show renders card as the active card; withDraft gives it the text kept for the active card
  // (a restored card that was answered already must not take it); support draws it as the
  // answer to a crisis.
  /**
   * @param {Card} card
   * @param {boolean} hidden
   * @param {boolean} [withDraft]
   * @param {boolean} [support]
   * @returns {CardView}
   */
  function show(card, hidden, withDraft = true, support = false) {
    if (support) {
      const view = supportView(card, t, (text) => {
        touched();
        return act({ message: text }, view, text);
      }, { draftKey: withDraft ? draftKey : '', limit: messageLimit(sess) });
      view.el.hidden = Boolean(hidden);
      feed.append(view.el);
      active = view;
      return view;
    }
    let c = card;
    if (!validateCard(c)) {
      // The seed's fallback handling: log, and keep the session alive with an insight card.
      console.error('cards: invalid card from the gateway', card);
      c = { type: 'insight', content: t('cardFallback') };
    }
    if (!hidden) showPhase(c);
    const view = renderCard(c, t, {
      continue: () => act({ message: CONTINUE }, view, t('youContinued')),
      submit: (text) => {
        touched();
        return act({ message: text }, view, text);
      },
      select: (option) => act({ selected: option.id }, view, t('youSelected', option.label)),
    }, { draftKey: withDraft ? draftKey : '', limit: messageLimit(sess) });
    view.el.hidden = Boolean(hidden);
    feed.append(view.el);
    active = view;
    return view;
  }

  // restore draws the transcript of a resumed session: each card with the learner's answer to
  // it; the last card stays active.
  async function restore() {
    panel.dataset.restored = 'false';
    const entries = await turns.transcript();
    let prev = null;
    const lastResult = entries.map((e) => e.role === 'coach' && Boolean(e.result)).lastIndexOf(true);
    for (const [i, e] of entries.entries()) {
      const input = e.input || {};
      if (e.role === 'coach' && e.card) {
        const view = renderCard(e.card, t, {});
        view.answered(null);
        feed.append(view.el);
      } else if (e.role === 'coach' && e.result) {
        prev = show(e.result, false, i === lastResult, Boolean(e.safety));
      } else if (e.role === 'learner' && prev) {
        prev.answered(answerSummary(prev.card, input));
        prev = null;
      }
    }
    // A session whose transcript is gone (or older than transcripts) still has its last card.
    if (!active && sess.state.lastCard) show(sess.state.lastCard, false);
    if (active) {
      reveal(active.el, { align: 'top' });
      active.focus();
    }
    turns.safety.place();
    panel.dataset.restored = 'true';
    await resume();
    // A session without any card yet (its first turn failed, or there is none to go on with)
    // begins now.
    if (!active && !turns.busy) act({ message: t('beginMessage') }, null, null);
  }

  // answerSummary says under card what the learner answered with input.
  /**
   * @param {Card} card
   * @param {{selected?: unknown, message?: unknown}} input
   * @returns {string | null}
   */
  function answerSummary(card, input) {
    if (typeof input.selected === 'string') {
      const option = (card.options || []).find((/** @type {{id: string}} */ o) => o.id === input.selected);
      return t('youSelected', option ? option.label : input.selected);
    }
    if (input.message === CONTINUE) return t('youContinued');
    return typeof input.message === 'string' ? input.message : null;
  }

  showLevel(sess.state.level || 1);
  if (resumed || sess.state.lastCard) restore();
  else act({ message: t('beginMessage') }, null, null);

  return {
    unmount() {
      turns.abort();
    },
    get active() {
      return active;
    },
  };
}

/** @param {import('./i18n.js').Translator} t */
function typing(t) {
  return h('p', { class: 'typing' }, h('span', { class: 'dots', 'aria-hidden': 'true' }, h('i'), h('i'), h('i')), ' ', t('thinking'));
}

/**
 * cardFrame is the outer card: accent, icon and kind label, then body.
 * @param {string} type
 * @param {import('./i18n.js').Translator} t
 * @param {import('./dom.js').Child} body
 * @param {{testid?: string, phase?: string, badge?: HTMLElement | null}} [options]
 */
function cardFrame(type, t, body, { testid = 'card', phase = '', badge = null } = {}) {
  const icon = ICONS[type] || '';
  return h('article', { class: `card card-${type}`, testid, dataset: { cardType: type }, 'aria-label': t(`cardTypes.${type}`) },
    h('header', { class: 'card-head' },
      icon ? h('span', { class: 'card-icon', 'aria-hidden': 'true' }, icon) : null,
      h('span', { class: 'card-kind' }, t(`cardTypes.${type}`)),
      badge,
      phase ? h('span', { class: 'card-phase' }, phase) : null),
    body);
}

/**
 * supportView renders the coach's answer to a crisis: its words, and a box to write back with
 * (reply(text)); no card type, no Continue, nothing that scores. draftKey and limit as for a
 * prompt card.
 * @param {Card} card
 * @param {import('./i18n.js').Translator} t
 * @param {(text: string) => void} reply
 * @param {{draftKey?: string, limit?: number}} [options]
 * @returns {CardView}
 */
function supportView(card, t, reply, { draftKey = '', limit = Infinity } = {}) {
  const titleId = uid('support-title');
  const id = uid('support-input');
  const send = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'support-send', disabled: true }, t('send'));
  const input = h('textarea', {
    id, class: 'card-input', testid: 'support-input', dir: 'auto', rows: 3,
    oninput: () => storeDraft(draftKey, input.value),
    onkeydown: (/** @type {KeyboardEvent} */ e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        if (!send.disabled) reply(input.value.trim());
      }
    },
  });
  const count = limitCounter(t, input, limit, { onChange: (over) => { send.disabled = over || input.value.trim() === ''; } });
  count.note.id = uid('support-note');
  input.setAttribute('aria-describedby', count.note.id);
  const saved = loadDraft(draftKey);
  if (saved) {
    input.value = saved;
    count.update();
  }
  const form = h('form', { class: 'card-form support-form', onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); if (!send.disabled) reply(input.value.trim()); } },
    h('label', { for: id }, t('supportReply')),
    input,
    count.note,
    h('div', { class: 'card-form-row' }, h('span', { class: 'card-form-end' }, count.counter, send)),
    count.live);
  const content = typeof card.content === 'string' && card.content ? card.content : '';
  const el = h('section', { class: 'support', testid: 'support-answer', 'aria-labelledby': titleId, dataset: { active: 'true' } },
    h('h2', { class: 'support-title', id: titleId }, t('supportTitle')),
    h('div', { class: 'card-content support-content', dir: 'auto' }, content ? renderMarkdown(content) : null),
    form);
  return {
    el,
    card,
    /** @param {boolean} on */
    lock(on) {
      input.readOnly = on;
      send.disabled = on || count.over() || input.value.trim() === '';
    },
    /** @param {string | null} summary */
    answered(summary) {
      storeDraft(draftKey, '');
      form.remove();
      el.dataset.active = 'false';
      if (summary) el.append(h('p', { class: 'card-answer', testid: 'card-answer', dir: 'auto' }, summary));
    },
    focus() {
      if (!el.hidden) input.focus({ preventScroll: true });
    },
  };
}

/**
 * renderCard renders a frontend card with its controls. actions: continue(), submit(text),
 * select(option), continueTraining(). draftKey, when given, keeps the text typed into a prompt or
 * reflection until it is sent.
 * @param {Card} card
 * @param {import('./i18n.js').Translator} t
 * @param {CardActions} actions
 * @param {{draftKey?: string, limit?: number}} [options] limit: the gateway's message limit, when
 *   lower than the card's own max_length
 * @returns {CardView}
 */
function renderCard(card, t, actions, { draftKey = '', limit = Infinity } = {}) {
  const type = card.type;
  const controls = h('fieldset', { class: 'card-controls' });
  /** @type {HTMLElement | null} */
  let focusEl = null;
  let body;

  if (type === 'level_up') {
    body = h('div', { class: 'card-content', testid: 'card-content' },
      h('p', { class: 'levelup-level', testid: 'levelup-level' }, t('newLevel', card.new_level)),
      card.message ? h('p', { class: 'levelup-message', dir: 'auto' }, card.message) : null);
    focusEl = h('button', { type: 'button', class: 'btn btn-success btn-large', testid: 'card-continue-training', onclick: () => actions.continueTraining?.() }, t('continueTraining'));
    controls.append(focusEl);
  } else {
    body = h('div', { class: 'card-content', testid: 'card-content', dir: 'auto' }, renderMarkdown(card.content));
    if (type === 'prompt' || type === 'reflection') {
      const max = Math.min(card.input?.max_length || (type === 'prompt' ? 500 : 200), limit);
      const id = uid('card-input');
      const hintId = uid('card-hint');
      const submit = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'card-submit', disabled: true }, t('submit'));
      const input = h('textarea', {
        id, class: `card-input card-input-${type}`, testid: 'card-input', dir: 'auto', rows: type === 'prompt' ? 4 : 2,
        placeholder: card.input?.placeholder || '',
        oninput: () => storeDraft(draftKey, input.value),
        onkeydown: (/** @type {KeyboardEvent} */ e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            if (!submit.disabled) actions.submit?.(input.value.trim());
          }
        },
      });
      // The seed's "Enforce max_length in UI": Submit stays off over the limit, and the learner
      // is told by how much, rather than having a paste cut short without a word.
      const count = limitCounter(t, input, max, {
        always: true,
        onChange: (over) => { submit.disabled = over || input.value.trim() === ''; },
      });
      count.counter.dataset.testid = 'card-counter';
      count.note.id = uid('card-note');
      input.setAttribute('aria-describedby', `${hintId} ${count.note.id}`);
      const saved = loadDraft(draftKey);
      if (saved) {
        input.value = saved;
        count.update();
      }
      focusEl = input;
      controls.append(h('form', { class: 'card-form', onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); if (!submit.disabled) actions.submit?.(input.value.trim()); } },
        h('label', { class: 'sr-only', for: id }, t('answerLabel')),
        input,
        count.note,
        h('div', { class: 'card-form-row' },
          h('span', { class: 'input-hint', id: hintId, testid: 'card-hint' }, t('cardHint')),
          h('span', { class: 'card-form-end' }, count.counter, submit)),
        count.live));
    } else if (type === 'multiple_choice') {
      // A radio group: arrow keys (and Home/End) move the choice, Enter, Space or a click answer
      // with it; only the chosen option is in the tab order.
      const hintId = uid('options-hint');
      const list = h('div', { class: 'options', role: 'radiogroup', 'aria-label': card.content, 'aria-describedby': hintId });
      /** @type {HTMLButtonElement[]} */
      const buttons = [];
      /**
       * @param {number} k
       * @param {boolean} focus
       */
      const choose = (k, focus) => {
        buttons.forEach((b, i) => {
          b.tabIndex = i === k ? 0 : -1;
          b.setAttribute('aria-checked', String(i === k));
        });
        if (focus) buttons[k].focus();
      };
      for (const [i, option] of card.options.entries()) {
        const button = h('button', {
          type: 'button', class: 'option', testid: 'card-option', role: 'radio', 'aria-checked': 'false', tabindex: i === 0 ? '0' : '-1', dataset: { optionId: option.id },
          onclick: () => {
            choose(i, false);
            list.querySelectorAll('.option').forEach((b) => b.classList.remove('option-selected'));
            button.classList.add('option-selected');
            actions.select?.(option);
          },
        }, h('span', { class: 'option-key', 'aria-hidden': 'true' }, option.id.length <= 2 ? option.id.toUpperCase() : String(i + 1)), h('span', { class: 'option-label', dir: 'auto' }, option.label));
        if (i === 0) focusEl = button;
        buttons.push(button);
        list.append(button);
      }
      list.addEventListener('keydown', (e) => {
        const k = buttons.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
        if (k < 0) return;
        const n = buttons.length;
        const to = { ArrowDown: k + 1, ArrowRight: k + 1, ArrowUp: k - 1, ArrowLeft: k - 1, Home: 0, End: n - 1 }[e.key];
        if (to === undefined) return;
        e.preventDefault();
        choose((to + n) % n, true);
      });
      controls.append(list, h('p', { class: 'input-hint', id: hintId, testid: 'options-hint' }, t('optionsHint')));
    } else {
      focusEl = h('button', { type: 'button', class: 'btn btn-primary', testid: 'card-continue', onclick: () => actions.continue?.() }, t('continue'));
      controls.append(focusEl);
    }
  }

  const badge = card.is_iteration ? h('span', { class: 'pill pill-warn', testid: 'card-iteration' }, t('secondAttempt')) : null;
  const el = cardFrame(type, t, [body, controls], { phase: card.drill_phase || '', badge });
  el.dataset.active = 'true';
  return {
    el,
    card,
    /** @param {boolean} on */
    lock(on) {
      controls.disabled = on;
      if (!on) el.querySelectorAll('.option-selected').forEach((b) => b.classList.remove('option-selected'));
    },
    /** @param {string | null} summary */
    answered(summary) {
      storeDraft(draftKey, '');
      controls.remove();
      el.dataset.active = 'false';
      el.classList.add('card-done');
      if (summary) el.append(h('p', { class: 'card-answer', testid: 'card-answer', dir: 'auto' }, summary));
    },
    focus() {
      if (focusEl && !el.hidden) focusEl.focus({ preventScroll: true });
    },
  };
}
