// @ts-check
// The Toulmin panel: the seven steps as a progress bar, the chat with the coach's streamed text,
// the ProposedUpdateCard, the draft of every step (editable) and the completion banner.
//
// Seed rules (coach-ai-tool-contract.md, "UI Handling"): a proposedUpdate is shown only when its
// field is the session's current step; Confirm saves it to the draft, advances the step and
// triggers the next coach turn ({"continue":true}: the coach opens the new step, and the learner's
// next message is still the step's first turn); Reject clears it and the conversation goes on,
// with the rejected text kept in view.
//
// A resumed session is drawn from the gateway: the state (step, draft, pending proposal) and the
// transcript of every message, answer and decision so far.

import { asCoachError, canRetry, client } from './coach.js';
import { clear, frame, h, reveal } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { Turns, bubble, composer, uid } from './turn.js';
import { composerStop, resumeTurn } from './resume.js';
import { draftLimit, limitCounter, messageLimit } from './limits.js';

/**
 * Proposal is a CoachAIResult's proposedUpdate.
 * @typedef {{field: string, value: string, rationale?: string}} Proposal
 */

export const STEPS = ['claim', 'grounds', 'warrant', 'groundsBacking', 'warrantBacking', 'qualifier', 'rebuttal'];

/**
 * mountToulmin mounts the Toulmin panel of session in root.
 * @param {import('./turn.js').PanelArgs} args
 */
export function mountToulmin({ root, session, t, resumed, touched = () => {}, newSession, sync }) {
  let sess = session;
  /** @type {Proposal | null} */
  let proposal = null; // the proposedUpdate on screen
  /** @type {{step: string, text: string} | null} */
  let editing = null; // the draft being edited
  /** @returns {any} */
  const state = () => sess.state;
  /** @param {string} step */
  const stepName = (step) => t(`steps.${step}`);

  // Progress: one item per step, and a meter of completed steps.
  const stepItems = STEPS.map((step, i) => h('li', { class: 'step', testid: `step-${step}`, dataset: { step } },
    h('span', { class: 'step-dot', 'aria-hidden': 'true' }, String(i + 1)),
    h('span', { class: 'step-name' }, stepName(step))));
  const meterFill = h('div', { class: 'meter-fill' });
  const meter = h('div', { class: 'meter', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': STEPS.length, 'aria-label': t('progress') }, meterFill);
  const progressText = h('p', { class: 'meter-text', testid: 'toulmin-progress-text' });
  const progress = h('nav', { class: 'toulmin-progress', testid: 'toulmin-progress', 'aria-label': t('progress'), dataset: { sticky: 'top' } },
    h('ol', { class: 'steps' }, stepItems), meter, progressText);

  // The transcript is not a live region: the coach's answer streams in delta by delta, and a
  // screen reader would read every one. Turns announces each finished answer once instead.
  const transcript = h('div', { class: 'transcript', testid: 'transcript' });
  const proposalSlot = h('div', { class: 'proposal-slot' });
  const status = h('div', { class: 'turn-status', testid: 'turn-status' });
  const banner = h('section', { class: 'complete-banner', testid: 'complete-banner', role: 'status', hidden: true });
  const box = composer(t, (text) => send(text), { limit: messageLimit(session), draftKey: session.id });
  const draftFields = h('fieldset', { class: 'draft-fields' });
  const aside = h('aside', { class: 'draft-panel', testid: 'draft-panel', 'aria-labelledby': 'draft-title' },
    h('h2', { id: 'draft-title' }, t('draftTitle')), draftFields);
  const panel = h('section', { class: 'panel panel-toulmin', testid: 'toulmin-panel' },
    progress,
    h('div', { class: 'toulmin-grid' },
      h('div', { class: 'chat' }, transcript, proposalSlot, status, banner, box.el),
      aside));
  root.append(panel);

  // Stop, while the coach answers: the turn ends with nothing stored, wherever it runs.
  const showStop = composerStop(t, box, () => turns.stop());
  const turns = new Turns({
    sessionId: () => sess.id, t, root: panel, status, sync, session, follow: (meta) => resume(meta),
    newSession: newSession && (() => newSession(box.input.value)),
    onBusy: (busy, following) => {
      showStop(busy, following);
      box.setLocked(busy || state().isComplete);
      draftFields.disabled = busy;
      proposalSlot.querySelectorAll('button').forEach((b) => { b.disabled = busy; });
    },
  });

  transcript.append(bubble('assistant', t('coach'), renderMarkdown(t('toulminIntro')), { testid: 'msg-intro' }));

  /**
   * @param {string} text
   * @param {string} testid
   */
  function note(text, testid) {
    const el = h('p', { class: 'msg-note', testid }, text);
    transcript.append(el);
    reveal(el);
  }

  // applySession takes the session the gateway answered with and redraws what depends on it.
  /** @param {any} s */
  function applySession(s) {
    sess = s;
    sync?.changed(s);
    const st = state();
    const current = STEPS.indexOf(st.step);
    const done = st.isComplete ? STEPS.length : Math.max(current, 0);
    stepItems.forEach((li, i) => {
      const stepState = i < done ? 'done' : i === current ? 'current' : 'todo';
      li.dataset.state = stepState;
      if (stepState === 'current') li.setAttribute('aria-current', 'step');
      else li.removeAttribute('aria-current');
    });
    progress.dataset.completed = String(done);
    progress.dataset.step = st.isComplete ? 'complete' : st.step;
    meter.setAttribute('aria-valuenow', String(done));
    meterFill.style.width = `${(100 * done) / STEPS.length}%`;
    progressText.textContent = st.isComplete ? t('progressOf', done, STEPS.length) : `${t('progressOf', done, STEPS.length)} · ${stepName(st.step)}`;
    renderDraft();
    renderBanner();
    box.setDisabled(Boolean(st.isComplete));
    box.el.hidden = Boolean(st.isComplete);
    if (!st.isComplete) box.setLocked(turns.busy);
  }

  function renderDraft() {
    const st = state();
    clear(draftFields);
    for (const step of STEPS) {
      const value = (st.draft && st.draft[step]) || '';
      const isCurrent = step === st.step && !st.isComplete;
      const item = h('div', { class: 'draft-item', testid: `draft-item-${step}`, dataset: { state: value ? 'filled' : 'empty', current: String(isCurrent) } });
      const head = h('div', { class: 'draft-head' },
        h('span', { class: 'draft-label', title: t(`stepHelp.${step}`) }, stepName(step)),
        editing?.step === step ? null : h('button', {
          type: 'button', class: 'btn btn-link', testid: `draft-edit-${step}`, 'aria-label': `${t('edit')}: ${stepName(step)}`,
          onclick: () => { editing = { step, text: value }; renderDraft(); draftFields.querySelector('textarea')?.focus(); },
        }, t('edit')));
      item.append(head);
      if (editing?.step === step) {
        const edit = editing;
        const hintId = uid('draft-hint');
        const save = h('button', { type: 'button', class: 'btn btn-small btn-primary', testid: `draft-save-${step}`, onclick: () => saveDraft(step, edit.text) }, t('save'));
        // Cancel (or Escape in the box) leaves the step as saved, and the focus goes back to its
        // Edit button.
        const cancel = () => {
          editing = null;
          renderDraft();
          /** @type {HTMLElement | null} */ (draftFields.querySelector(`[data-testid="draft-edit-${step}"]`))?.focus();
        };
        // As in the cards: Enter breaks the line, Ctrl+Enter (Cmd+Enter) saves.
        const area = h('textarea', {
          class: 'draft-input', testid: `draft-input-${step}`, dir: 'auto', rows: 3, value: edit.text, 'aria-label': stepName(step), 'aria-describedby': hintId,
          oninput: () => { edit.text = area.value; },
          onkeydown: (/** @type {KeyboardEvent} */ e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              if (!save.disabled) saveDraft(step, edit.text);
            } else if (e.key === 'Escape') {
              e.preventDefault();
              cancel();
            }
          },
        });
        const count = limitCounter(t, area, draftLimit(sess), { onChange: (over) => { save.disabled = over; } });
        count.note.id = uid('draft-note');
        area.setAttribute('aria-describedby', `${hintId} ${count.note.id}`);
        item.append(area, count.note, h('div', { class: 'draft-actions' }, save,
          h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: `draft-cancel-${step}`, 'aria-keyshortcuts': 'Escape', onclick: cancel }, t('cancel')),
          h('span', { class: 'input-hint', id: hintId, testid: 'draft-hint' }, t('draftHint')), count.counter), count.live);
      } else {
        item.append(h('p', { class: value ? 'draft-value' : 'draft-value draft-empty', testid: `draft-${step}`, dir: value ? 'auto' : null }, value || t('draftEmpty')));
      }
      draftFields.append(item);
    }
  }

  /**
   * @param {string} step
   * @param {string} value
   */
  async function saveDraft(step, value) {
    try {
      const s = await client.setDraft(sess.id, /** @type {any} */ (step), value);
      editing = null;
      applySession(s);
      // The box that had the focus is gone: the focus goes to the step's Edit button, next to
      // the text just saved, and the saving is announced.
      /** @type {HTMLElement | null} */ (draftFields.querySelector(`[data-testid="draft-edit-${step}"]`))?.focus();
      turns.announce(t('saved', stepName(step)));
    } catch (thrown) {
      const err = asCoachError(thrown);
      turns.showError(err, canRetry(err) ? () => saveDraft(step, value) : null);
    }
  }

  function renderBanner() {
    const st = state();
    banner.hidden = !st.isComplete;
    if (!st.isComplete) return;
    clear(banner).append(
      h('h2', null, h('span', { 'aria-hidden': 'true' }, '🏁 '), t('complete')),
      h('p', null, t('completeLead')),
      h('ol', { class: 'argument', testid: 'argument-summary' }, STEPS.map((step) => h('li', null,
        h('strong', null, `${stepName(step)}: `), h('span', { dir: 'auto' }, (st.draft && st.draft[step]) || '—')))));
  }

  // showProposal shows p when it is for the current step (the seed's rule), and nothing otherwise.
  // fresh marks a proposal that has just arrived: it is announced, and the focus moves to the
  // card when the learner was not busy elsewhere (typing ahead in the box, say), so that
  // Confirm and Reject are the next stops of the Tab key.
  /**
   * @param {Proposal | null | undefined} p
   * @param {{fresh?: boolean}} [options]
   */
  function showProposal(p, { fresh = false } = {}) {
    const st = state();
    proposal = p && p.field === st.step && !st.isComplete && typeof p.value === 'string' && p.value.trim() ? p : null;
    clear(proposalSlot);
    if (!proposal) return;
    const titleId = uid('proposal-title');
    // Confirm and Reject come first, under the card's title: they are the first stops of the Tab
    // key and in view with the card on any screen. A long text scrolls within the card after
    // them (and can be scrolled by keyboard: it is focusable).
    const value = h('blockquote', { class: 'proposal-value', testid: 'proposal-value', dir: 'auto', tabindex: '0', role: 'region', 'aria-label': t('proposalText') }, proposal.value);
    const card = h('section', { class: 'proposal', testid: 'proposal-card', dataset: { field: proposal.field }, 'aria-labelledby': titleId, tabindex: '-1' },
      h('header', { class: 'proposal-head' },
        h('h3', { id: titleId }, h('span', { 'aria-hidden': 'true' }, '✨ '), t('proposalTitle')),
        h('span', { class: 'pill' }, t('proposalFor', stepName(proposal.field)))),
      h('div', { class: 'proposal-actions', role: 'group', 'aria-label': t('proposalTitle') },
        h('button', { type: 'button', class: 'btn btn-primary', testid: 'proposal-confirm', onclick: () => decide('accept') }, t('confirm')),
        h('button', { type: 'button', class: 'btn btn-ghost', testid: 'proposal-reject', onclick: () => decide('reject') }, t('reject'))),
      value,
      proposal.rationale ? h('p', { class: 'proposal-rationale', testid: 'proposal-rationale', dir: 'auto' }, proposal.rationale) : null);
    proposalSlot.append(card);
    reveal(card);
    if (!fresh) return;
    const active = document.activeElement;
    const idle = !active || active === document.body || active === root || (box.el.contains(active) && box.input.value.trim() === '');
    if (idle) card.focus({ preventScroll: true });
  }

  // rejectedNote keeps a rejected proposal's text in the transcript, with a way to take it into
  // the box and rework it.
  /** @param {Proposal | null} p */
  function rejectedNote(p) {
    const el = h('div', { class: 'msg-note msg-rejected', testid: 'msg-rejected' },
      h('p', null, t('rejected')),
      p && p.value ? h('blockquote', { class: 'rejected-value', testid: 'rejected-value', dir: 'auto' }, p.value) : null,
      p && p.value ? h('button', {
        type: 'button', class: 'btn btn-small btn-ghost', testid: 'rejected-edit',
        onclick: () => { box.setText(p.value); box.focus(); },
      }, t('editInBox')) : null);
    return el;
  }

  /** @param {'accept' | 'reject'} action */
  async function decide(action) {
    const decided = proposal;
    const field = decided ? decided.field : state().step;
    proposalSlot.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    turns.clearStatus();
    try {
      applySession(await client.decideProposal(sess.id, action));
    } catch (thrown) {
      const err = asCoachError(thrown);
      if (err.code === 'no_pending_proposal') await refresh();
      else proposalSlot.querySelectorAll('button').forEach((b) => { b.disabled = false; });
      turns.showError(err, canRetry(err) ? () => decide(action) : null);
      return;
    }
    showProposal(null);
    if (action === 'reject') {
      const el = rejectedNote(decided);
      transcript.append(el);
      reveal(el);
      box.focus();
      return;
    }
    note(`✓ ${t('saved', stepName(field))}`, 'msg-saved');
    turns.announce(t('saved', stepName(field)));
    // The card and its buttons are gone: the focus goes back to the message box.
    box.focus();
    // The seed: on confirm, save, advance and trigger the next coach turn, which is the coach's
    // own: it does not count as the learner's first message of the new step.
    if (!state().isComplete) await send(null);
    else reveal(banner);
  }

  async function refresh() {
    try {
      applySession(await client.getSession(sess.id));
      showProposal(state().pendingProposal);
    } catch {
      // The error already on screen says what went wrong.
    }
  }

  // send runs one coach turn with the learner's message, or a continue turn (the coach opens the
  // current step) when message is null.
  /**
   * @param {string | null} message
   * @returns {Promise<boolean>}
   */
  async function send(message) {
    if (state().isComplete || turns.busy) return false;
    const v = turnView(message);
    return turns.send(() => (message === null ? { continue: true } : { message, step: state().step }), v,
      { retry: message === null ? null : () => box.submit(), meta: message === null ? { continue: true } : { message } });
  }

  // resume goes on with the turn a reload left running, or shows the one another tab sent
  // (followed, described by its meta): the learner's message as it was sent, the answer so far,
  // then the rest as the gateway writes it.
  /** @param {any} [followed] */
  async function resume(followed = null) {
    await resumeTurn(turns, (meta) => turnView(meta && typeof meta.message === 'string' ? meta.message : null, true),
      { known: Number(sess.version) || 0, box, transcript, meta: followed });
  }

  // turnView shows one turn of the coach: the learner's message (none for a continue turn), the
  // coach's bubble with its streamed text, then the result.
  /**
   * @param {string | null} message
   * @param {boolean} [resumed] the turn is resumed after a reload: its message is drawn now
   */
  function turnView(message, resumed = false) {
    const userMsg = message === null ? null : bubble('user', t('you'), message);
    if (userMsg) {
      transcript.append(userMsg);
      reveal(userMsg);
      if (!resumed) touched();
    }
    // The proposal on screen, put back if a resumed turn turns out to be in the transcript
    // already (discard).
    const shown = proposal;
    showProposal(null);
    // The coach's bubble and its body, made by begin() before anything else uses them.
    let reply = /** @type {HTMLElement} */ (/** @type {unknown} */ (null));
    let body = reply;
    let text = '';
    let live = false;
    const render = frame(() => {
      if (!live) return;
      clear(body).append(text ? renderMarkdown(text) : h('p', { class: 'typing' }, t('thinking')));
      reveal(reply);
    });
    return {
      begin() {
        userMsg?.classList.remove('msg-failed');
        text = '';
        live = true;
        reply?.remove();
        reply = bubble('assistant', t('coach'), h('p', { class: 'typing' }, t('thinking')), { class: 'msg-streaming' });
        reply.dataset.streaming = 'true';
        body = /** @type {HTMLElement} */ (reply.querySelector('.msg-body'));
        transcript.append(reply);
        reveal(reply);
      },
      /** @param {any} line */
      delta(line) {
        text += line.text;
        render();
      },
      reset() {
        // The gateway retries the turn: what it sent so far is void.
        text = '';
        render();
      },
      /** @param {any} line */
      result(line) {
        live = false;
        const r = line.result || {};
        reply.dataset.streaming = 'false';
        reply.classList.remove('msg-streaming');
        // The result's text is the whole answer (the streamed question included, v1.2): it
        // replaces the streamed text, so the question shows once.
        clear(body).append(assistantContent(r));
        applySession(line.session);
        showProposal(r.proposedUpdate, { fresh: true });
        turns.announce([typeof r.assistantText === 'string' ? r.assistantText : '',
          proposal ? t('proposalAnnounce', stepName(proposal.field), proposal.value) : ''].filter(Boolean).join(' '));
        if (proposal) reveal(proposalSlot.firstElementChild);
        else {
          reveal(reply);
          box.focus();
        }
      },
      /** @param {import('./coach.js').CoachErrorType} err */
      fail(err) {
        live = false;
        reply?.remove();
        // The message goes back into the box (send returns false), to edit or to send again
        // with Retry; it is not shown as sent.
        userMsg?.remove();
        if (err.code === 'coach_step_mismatch' || err.code === 'session_complete') refresh();
      },
      discard() {
        live = false;
        reply?.remove();
        userMsg?.remove();
        if (shown && !proposal) showProposal(shown);
      },
      accepted() {
        if (!resumed) box.sent();
      },
    };
  }

  // assistantContent renders a result's assistantText, setting the appended nextQuestion apart.
  /**
   * @param {{assistantText?: unknown, nextQuestion?: unknown}} r
   * @returns {DocumentFragment}
   */
  function assistantContent(r) {
    const full = typeof r.assistantText === 'string' ? r.assistantText : '';
    const q = typeof r.nextQuestion === 'string' ? r.nextQuestion.trim() : '';
    const frag = document.createDocumentFragment();
    if (q && full.endsWith(q)) {
      frag.append(renderMarkdown(full.slice(0, full.length - q.length).trimEnd()));
      frag.append(h('p', { class: 'msg-question', testid: 'next-question' }, q));
    } else {
      frag.append(renderMarkdown(full));
    }
    return frag;
  }

  // restore draws a resumed session's transcript: the learner's messages and decisions, the
  // coach's answers; then the pending proposal from the state.
  async function restore() {
    panel.dataset.restored = 'false';
    box.setLocked(true);
    const entries = await turns.transcript();
    let last = null; // the last proposedUpdate seen, which an accept or reject decides
    for (const e of entries) {
      const input = e.input || {};
      if (e.role === 'learner' && typeof input.message === 'string') {
        transcript.append(bubble('user', t('you'), input.message));
      } else if (e.role === 'learner' && input.action === 'accept') {
        if (last) transcript.append(h('p', { class: 'msg-note', testid: 'msg-saved' }, `✓ ${t('saved', stepName(last.field))}`));
        last = null;
      } else if (e.role === 'learner' && input.action === 'reject') {
        transcript.append(rejectedNote(last));
        last = null;
      } else if (e.role === 'coach' && e.result) {
        transcript.append(bubble('assistant', t('coach'), assistantContent(e.result)));
        last = e.result.proposedUpdate || last;
      }
      // A continue turn ({"continue":true}) is the coach's own: it shows only as the answer.
    }
    transcript.append(h('p', { class: 'msg-note', testid: 'msg-resumed' },
      `${t('progressOf', Number(progress.dataset.completed), STEPS.length)} · ${state().isComplete ? t('complete') : stepName(state().step)}`));
    showProposal(state().pendingProposal);
    if (!proposal) reveal(transcript.lastElementChild);
    turns.safety.place();
    box.setLocked(turns.busy || Boolean(state().isComplete));
    panel.dataset.restored = 'true';
    if (!state().isComplete) await resume();
  }

  applySession(sess);
  if (resumed) restore();
  box.focus();

  return {
    unmount() {
      turns.abort();
    },
  };
}

