// @ts-check
// The module panel: structured responses (structured-response-schema.md) rendered block by block
// as they stream, optional forms, next-step suggestions as quick replies, and the module's
// progress with a toast for every milestone. Forms are optional guidance: the free-text box is
// always there. A resumed session is drawn from its transcript: every message and answer, the
// forms already answered filled in and closed, the quick replies of the last answer.

import { client } from './coach.js';
import { append, clear, frame, h, reveal } from './dom.js';
import { renderInline, renderMarkdown } from './markdown.js';
import { Turns, bubble, composer, uid } from './turn.js';
import { composerStop, resumeTurn } from './resume.js';
import { messageLimit } from './limits.js';

/**
 * Field is a form field of a structured response (structured-response-schema.md).
 * @typedef {{id: string, type: string, label: string, required?: boolean, options?: {value: string, label: string}[], placeholder?: string, help_text?: string, min?: number, max?: number}} Field
 */
/**
 * Form is a form of a structured response.
 * @typedef {{id: string, title?: string, description?: string, fields?: Field[], submit_label?: string, optional?: boolean}} Form
 */
/**
 * FieldView is a field on screen: its node, read() (its value, undefined when empty) and write(v).
 * @typedef {{node: HTMLElement, read: () => any, write: (v: any) => void}} FieldView
 */

/** @type {Record<string, string>} */
const CALLOUT_ICONS = { info: 'ℹ️', warning: '⚠️', success: '✅', tip: '💡' };
const BLOCK_TYPES = new Set(['paragraph', 'heading', 'list', 'quote', 'info', 'warning', 'success', 'tip']);

/**
 * mountModule mounts the module panel of session in root.
 * @param {import('./turn.js').PanelArgs} args
 */
export function mountModule({ root, session, t, resumed, toast, touched = () => {}, newSession, sync }) {
  let sess = session;
  /** @type {any} */
  let def = null; // the module definition, for titles and topic names
  /** @type {any} */
  let lastProgress = null;

  const title = h('h2', { class: 'module-title', testid: 'module-title' }, sess.state.module);
  const meterFill = h('div', { class: 'meter-fill' });
  const meter = h('div', { class: 'meter', role: 'progressbar', testid: 'module-progress', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-label': t('progress') }, meterFill);
  const progressText = h('p', { class: 'meter-text', testid: 'module-progress-text' });
  const topicList = h('ul', { class: 'topic-list', testid: 'covered-topics' });
  const topics = h('details', { class: 'topics' }, h('summary', null, t('coveredTopics')), topicList);
  // Not a live region: Turns announces each finished answer once, not every streamed delta.
  const transcript = h('div', { class: 'transcript', testid: 'transcript' });
  const status = h('div', { class: 'turn-status', testid: 'turn-status' });
  const box = composer(t, (text) => send({ message: text }, text, true), { limit: messageLimit(session), draftKey: session.id });
  const panel = h('section', { class: 'panel panel-module', testid: 'module-panel' },
    h('header', { class: 'module-head', dataset: { sticky: 'top' } }, title, meter, progressText, topics),
    h('div', { class: 'chat' }, transcript, status, box.el));
  root.append(panel);

  // The forms rendered so far by id (the latest with each id), to mark the answered ones.
  /** @type {Map<string, {el: HTMLFormElement, answered: (values: object) => void, reopen: () => void, title: string, form: any}>} */
  const forms = new Map();
  // Stop, while the coach answers: the turn ends with nothing stored, wherever it runs.
  const showStop = composerStop(t, box, () => turns.stop());
  const turns = new Turns({
    sessionId: () => sess.id, t, root: panel, status, sync, session, follow: (meta) => resume(meta),
    newSession: newSession && (() => newSession(box.input.value)),
    onBusy: (busy, following) => {
      showStop(busy, following);
      box.setLocked(busy);
      transcript.querySelectorAll('.suggestions button').forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = busy; });
    },
  });

  /** @param {string} id */
  const topicName = (id) => {
    for (const s of def?.sections || []) {
      for (const tp of s.topics || []) {
        if (tp.id === id) return (tp.name && (tp.name[t.locale] || tp.name.en)) || id;
      }
    }
    return id;
  };
  const topicTotal = () => (def?.sections || []).reduce((/** @type {number} */ n, /** @type {any} */ s) => n + (s.topics || []).length, 0);

  // showProgress draws meta.progress, or the session state's figures when p is null.
  /** @param {any} p */
  function showProgress(p) {
    const st = sess.state;
    const pct = Math.max(0, Math.min(100, Math.round(Number(p?.percentage ?? st.percentage ?? 0))));
    const covered = p?.covered_topics || st.coveredTopics || [];
    const remaining = typeof p?.remaining_topics === 'number' ? p.remaining_topics : def ? Math.max(0, topicTotal() - covered.length) : null;
    meter.setAttribute('aria-valuenow', String(pct));
    meter.dataset.percentage = String(pct);
    meterFill.style.width = `${pct}%`;
    progressText.textContent = [`${pct}%`, t('covered', covered.length), remaining === null ? null : t('remaining', remaining)].filter(Boolean).join(' · ');
    append(clear(topicList), covered.map((/** @type {string} */ id) => h('li', null, topicName(id))));
    topics.hidden = covered.length === 0;
  }

  client.getModule(sess.state.module).then((/** @type {any} */ d) => {
    def = d;
    title.textContent = d.title || sess.state.module;
    showProgress(lastProgress);
  }).catch(() => {
    // The title stays the module id; the progress still shows from the session.
  });

  // send runs one turn; shown is what the learner's bubble says. fromBox marks a message typed in
  // the box: when its turn fails it goes back there (to edit, or to send again with Retry);
  // other inputs (a form, a quick reply) stay in the transcript marked as failed, with Retry.
  /**
   * @param {Record<string, any>} body
   * @param {string} shown
   * @param {boolean} [fromBox]
   * @returns {Promise<boolean>}
   */
  async function send(body, shown, fromBox = false) {
    if (turns.busy) return false;
    const auto = Boolean(body.auto);
    if (!auto && typeof body.message === 'string') touched();
    delete body.auto;
    // What a reload needs to draw the turn again: the learner's bubble, the message (back in the
    // box should the turn fail then), the form answered.
    const meta = { shown, auto, message: auto ? undefined : body.message, form: body.form };
    const v = turnView(meta, { fromBox });
    const ok = await turns.send(body, v, { retry: fromBox ? () => box.submit() : null, meta });
    return ok || !v.failedHard();
  }

  // resume goes on with the turn a reload left running: the learner's bubble (and the form as it
  // was answered), the blocks streamed so far in their places, then the rest.
  /** @param {any} [followed] what the tab that sent the turn kept with it, when this tab follows it */
  async function resume(followed = null) {
    await resumeTurn(turns, (meta) => turnView(meta || {}, { resumed: true }), { known: Number(sess.version) || 0, box, transcript, meta: followed });
  }

  // turnView shows one turn: the learner's bubble (meta.shown; none for a resumed turn whose meta
  // was not kept), the coach's message with its blocks as they stream, then the response.
  /**
   * @param {{shown?: unknown, auto?: unknown, form?: any}} meta
   * @param {{fromBox?: boolean, resumed?: boolean}} options resumed: the turn is resumed after a
   *   reload (a failure takes the bubble away; Retry is not offered)
   */
  function turnView(meta, { fromBox = false, resumed = false }) {
    const userMsg = typeof meta.shown === 'string'
      ? bubble('user', t('you'), meta.shown, meta.auto ? { class: 'msg-auto', testid: 'msg-auto' } : {})
      : null;
    if (userMsg) {
      transcript.append(userMsg);
      reveal(userMsg);
    }
    const answered = resumed && meta.form && typeof meta.form.id === 'string' ? forms.get(meta.form.id) : undefined;
    answered?.answered(meta.form.values || {});
    // Older quick replies answer an older question: hidden while the turn runs, gone with its
    // response, back if it fails or turns out to be in the transcript already.
    const older = [.../** @type {NodeListOf<HTMLElement>} */ (transcript.querySelectorAll('.suggestions'))];
    older.forEach((el) => { el.hidden = true; });
    const putBack = () => older.forEach((el) => { el.hidden = false; });

    // The coach's message and its blocks, made by begin() before anything else uses them.
    let resp = /** @type {HTMLElement} */ (/** @type {unknown} */ (null));
    let blocksEl = resp;
    let streamed = new Map(); // block index → {type, text, el}
    let live = false;
    let hardFailure = false;
    const render = frame(() => {
      if (!live) return;
      for (const b of streamed.values()) {
        if (!b.dirty) continue;
        b.dirty = false;
        const fresh = renderBlock({ type: b.type, content: b.text, level: 2 });
        b.el.replaceWith(fresh);
        fresh.dataset.index = String(b.index);
        b.el = fresh;
      }
      reveal(resp);
    });
    const drop = () => {
      live = false;
      resp?.remove();
      putBack();
    };
    return {
      /** failedHard says whether the learner's input is gone from the transcript (it failed for good, or back in the box). */
      failedHard: () => hardFailure,
      begin() {
        userMsg?.classList.remove('msg-failed');
        streamed = new Map();
        live = true;
        resp?.remove();
        blocksEl = h('div', { class: 'blocks' }, typingLine(t));
        resp = h('article', { class: 'msg msg-assistant module-response', testid: 'module-response', dataset: { streaming: 'true' } },
          h('header', { class: 'msg-who' }, t('coach')), blocksEl);
        transcript.append(resp);
        reveal(resp);
      },
      /** @param {any} line */
      delta(line) {
        blocksEl.querySelector('.typing')?.remove();
        const index = Number.isInteger(line.block) ? line.block : 0;
        let b = streamed.get(index);
        if (!b) {
          b = { index, type: line.blockType || 'paragraph', text: '', el: h('div') };
          b.el.dataset.index = String(index);
          streamed.set(index, b);
          // Keep blocks in index order whatever order they start in.
          const after = [...blocksEl.children].find((c) => Number(/** @type {HTMLElement} */ (c).dataset.index) > index);
          blocksEl.insertBefore(b.el, after || null);
        }
        if (line.blockType) b.type = line.blockType;
        b.text += line.text;
        b.dirty = true;
        render();
      },
      reset() {
        streamed = new Map();
        clear(blocksEl).append(typingLine(t));
      },
      /** @param {any} line */
      result(line) {
        live = false;
        sess = line.session;
        older.forEach((el) => el.remove());
        const r = line.result || {};
        const done = responseEl(r, Boolean(line.fallback));
        resp.replaceWith(done);
        resp = done;
        lastProgress = r.meta?.progress || null;
        showProgress(lastProgress);
        turns.announce([done.querySelector('.blocks')?.textContent || '', done.querySelector('.next-prompt')?.textContent || ''].filter(Boolean).join(' '));
        const milestone = lastProgress?.milestone;
        if (milestone) {
          toast(t('milestone', milestone), { kind: 'celebrate' });
          meter.classList.remove('meter-celebrate');
          void meter.offsetWidth; // restart the animation
          meter.classList.add('meter-celebrate');
        }
        reveal(resp);
      },
      /** @param {import('./coach.js').CoachErrorType} err */
      fail(err) {
        drop();
        answered?.reopen();
        userMsg?.classList.add('msg-failed');
        hardFailure = resumed || fromBox || !err.retryable;
        if (hardFailure) userMsg?.remove();
      },
      discard() {
        drop();
        userMsg?.remove();
      },
      accepted() {
        // The gateway took the turn: a reload resumes it rather than finding the text in the box.
        if (fromBox) box.sent();
      },
    };
  }

  // responseEl renders a finished response as the coach's message.
  /**
   * @param {any} r
   * @param {boolean} fallback
   */
  function responseEl(r, fallback) {
    return h('article', {
      class: 'msg msg-assistant module-response', testid: 'module-response',
      dataset: { streaming: 'false', responseType: r.meta?.response_type || '', emotion: r.meta?.emotion || '' },
    }, h('header', { class: 'msg-who' }, t('coach')), renderResponse(r, fallback));
  }

  // renderResponse renders a structured response: blocks, media, forms, next step.
  /**
   * @param {any} r
   * @param {boolean} fallback
   * @returns {DocumentFragment}
   */
  function renderResponse(r, fallback) {
    const frag = document.createDocumentFragment();
    const content = r.content || {};
    const section = r.meta?.module_state?.current_section;
    if (section) frag.append(h('p', { class: 'response-section' }, [r.meta.module_state.current_phase, section].filter(Boolean).join(' · ')));
    const blocks = h('div', { class: 'blocks' });
    for (const [i, b] of (content.text_blocks || []).entries()) {
      const el = renderBlock(b);
      el.dataset.index = String(i);
      blocks.append(el);
    }
    frag.append(blocks);
    if (fallback) frag.append(h('p', { class: 'fallback-note', testid: 'fallback-note' }, t('fallbackNote')));
    const media = (content.media || []).map(renderMedia).filter(Boolean);
    if (media.length) frag.append(h('div', { class: 'media' }, media));
    const forms = content.forms || [];
    if (forms.length) {
      // The gateway accepts only the forms of the latest response that offered any.
      transcript.querySelectorAll('form.module-form:not([data-sent])').forEach((f) => {
        /** @type {HTMLFormElement} */ (f).dataset.superseded = 'true';
        /** @type {HTMLFieldSetElement} */ (f.querySelector('fieldset')).disabled = true;
      });
      for (const f of forms) frag.append(renderForm(f));
    }
    const next = content.next_step;
    if (next && (next.prompt || (next.suggestions || []).length)) {
      if (next.prompt) frag.append(h('p', { class: 'next-prompt', testid: 'next-prompt', dir: 'auto' }, renderInline(next.prompt)));
      /** @type {string[]} */
      const suggestions = (next.suggestions || []).filter((/** @type {unknown} */ s) => typeof s === 'string' && s.trim());
      if (suggestions.length) {
        frag.append(h('div', { class: 'suggestions', role: 'group', 'aria-label': t('suggestions') },
          suggestions.map((s) => h('button', { type: 'button', class: 'chip', testid: 'suggestion', dir: 'auto', onclick: () => send({ message: s }, s) }, s))));
      }
    }
    return frag;
  }

  /**
   * @param {Form} form
   * @returns {HTMLFormElement}
   */
  function renderForm(form) {
    const fields = h('fieldset', { class: 'form-fields' });
    const formTitle = form.title || form.id;
    const el = h('form', { class: 'module-form', testid: 'module-form', dataset: { formId: form.id } }, fields);
    const hintId = uid('form-hint');
    append(fields, [
      h('legend', { class: 'form-title' }, formTitle),
      form.description ? h('p', { class: 'form-desc' }, renderInline(form.description)) : null,
      form.optional === false ? null : h('p', { class: 'form-optional', testid: 'form-optional-note' }, t('formOptional'))]);
    /** @type {(FieldView & {field: Field})[]} */
    const readers = [];
    for (const field of form.fields || []) {
      const view = renderField(field, form.id, hintId);
      fields.append(view.node);
      readers.push({ field, ...view });
    }
    const hasTextarea = (form.fields || []).some((f) => f.type === 'textarea');
    fields.append(h('div', { class: 'form-actions' },
      hasTextarea ? h('span', { class: 'input-hint', id: hintId, testid: 'form-hint' }, t('formHint')) : null,
      h('button', { type: 'submit', class: 'btn btn-primary', testid: 'form-submit' }, form.submit_label || t('submit'))));
    // Enter in a textarea breaks the line; Ctrl+Enter (Cmd+Enter) submits, as in the cards.
    el.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && e.target instanceof HTMLTextAreaElement) {
        e.preventDefault();
        el.requestSubmit();
      }
    });
    el.addEventListener('submit', async (e) => {
      e.preventDefault();
      for (const { field, read } of readers) {
        // A required checkbox group has no native check; the first box carries the message.
        if (field.type === 'checkbox' && field.required) {
          const first = el.querySelector(`input[name="${CSS.escape(field.id)}"]`);
          if (!(first instanceof HTMLInputElement)) continue;
          first.setCustomValidity(read() === undefined ? t('formRequiredMark') : '');
        }
      }
      if (!el.reportValidity()) return;
      /** @type {Record<string, any>} */
      const values = {};
      for (const { field, read } of readers) {
        const v = read();
        if (v !== undefined) values[field.id] = v;
      }
      fields.disabled = true;
      const ok = await send({ form: { id: form.id, values } }, describeAnswer(form, values));
      if (ok) {
        el.dataset.sent = 'true';
      } else if (!el.dataset.superseded) {
        fields.disabled = false;
      }
    });
    forms.set(form.id, {
      el,
      form,
      title: formTitle,
      // answered shows the form as the learner sent it: filled in, closed.
      /** @param {Record<string, any>} values */
      answered(values) {
        for (const { field, write } of readers) write(values[field.id]);
        fields.disabled = true;
        el.dataset.sent = 'true';
      },
      // reopen takes the answer back (its resumed turn failed), unless a later response superseded the form.
      reopen() {
        delete el.dataset.sent;
        if (!el.dataset.superseded) fields.disabled = false;
      },
    });
    return el;
  }

  // describeAnswer is what the learner's bubble says for a form answer: the form's title, then
  // each answered field with its option labels.
  /**
   * @param {Form} form
   * @param {Record<string, any>} values
   */
  function describeAnswer(form, values) {
    const lines = [];
    for (const field of form.fields || []) {
      if (values[field.id] !== undefined) lines.push(`${field.label}: ${describe(field, values[field.id])}`);
    }
    return `${t('formSent', form.title || form.id)}\n${lines.join('\n')}`;
  }

  /**
   * renderField renders a form field.
   * @param {Field} field
   * @param {string} formId
   * @param {string} hintId the id of the form's Ctrl+Enter hint, for its text areas
   * @returns {FieldView}
   */
  function renderField(field, formId, hintId) {
    const id = `f-${formId}-${field.id}`.replace(/[^A-Za-z0-9_-]/g, '_');
    const label = [field.label, field.required ? h('span', { class: 'req', title: t('formRequiredMark') }, ' *') : null];
    const help = field.help_text ? h('p', { class: 'field-help', id: `${id}-help` }, field.help_text) : null;
    const describedBy = help ? `${id}-help` : null;
    const options = field.options || [];
    switch (field.type) {
      case 'radio':
      case 'checkbox': {
        const inputs = options.map((o, i) => h('input', {
          type: field.type, name: field.id, value: o.value, id: `${id}-${i}`, required: field.type === 'radio' && field.required,
        }));
        inputs.forEach((x) => x.addEventListener('change', () => x.setCustomValidity('')));
        const node = h('fieldset', { class: `field field-${field.type}`, testid: 'form-field', dataset: { fieldId: field.id }, 'aria-describedby': describedBy },
          h('legend', null, label),
          options.map((o, i) => h('label', { class: 'check', for: `${id}-${i}` }, inputs[i], h('span', null, o.label))),
          help);
        const read = field.type === 'radio'
          ? () => inputs.find((x) => x.checked)?.value
          : () => {
            const vs = inputs.filter((x) => x.checked).map((x) => x.value);
            return vs.length ? vs : undefined;
          };
        const write = (/** @type {any} */ v) => inputs.forEach((x) => { x.checked = Array.isArray(v) ? v.includes(x.value) : x.value === v; });
        return { node, read, write };
      }
      case 'select': {
        const select = h('select', { id, name: field.id, required: field.required, 'aria-describedby': describedBy },
          h('option', { value: '' }, t('choose')), options.map((o) => h('option', { value: o.value }, o.label)));
        return {
          node: h('div', { class: 'field', testid: 'form-field', dataset: { fieldId: field.id } }, h('label', { for: id }, label), select, help),
          read: () => select.value || undefined,
          write: (/** @type {any} */ v) => { select.value = v === undefined ? '' : String(v); },
        };
      }
      case 'number': {
        const input = h('input', { id, name: field.id, type: 'number', step: 'any', required: field.required, placeholder: field.placeholder || '', 'aria-describedby': describedBy });
        if (typeof field.min === 'number') input.min = String(field.min);
        if (typeof field.max === 'number') input.max = String(field.max);
        return {
          node: h('div', { class: 'field', testid: 'form-field', dataset: { fieldId: field.id } }, h('label', { for: id }, label), input, help),
          read: () => (input.value === '' ? undefined : Number(input.value)),
          write: (v) => { input.value = v === undefined ? '' : String(v); },
        };
      }
      case 'textarea':
      case 'text':
      default: {
        const input = field.type === 'textarea'
          ? h('textarea', { id, name: field.id, rows: 3, required: field.required, placeholder: field.placeholder || '', 'aria-describedby': [describedBy, hintId].filter(Boolean).join(' ') })
          : h('input', { id, name: field.id, type: 'text', required: field.required, placeholder: field.placeholder || '', 'aria-describedby': describedBy });
        return {
          node: h('div', { class: 'field', testid: 'form-field', dataset: { fieldId: field.id } }, h('label', { for: id }, label), input, help),
          read: () => input.value.trim() || undefined,
          write: (v) => { input.value = v === undefined ? '' : String(v); },
        };
      }
    }
  }

  // restore draws a resumed session's transcript.
  async function restore() {
    panel.dataset.restored = 'false';
    box.setLocked(true);
    const entries = await turns.transcript();
    let last = null;
    for (const [i, e] of entries.entries()) {
      const input = e.input || {};
      if (e.role === 'learner' && input.form && typeof input.form.id === 'string') {
        const f = forms.get(input.form.id);
        const values = input.form.values || {};
        f?.answered(values);
        transcript.append(bubble('user', t('you'), f ? describeAnswer(f.form, values) : t('formSent', input.form.id)));
      } else if (e.role === 'learner' && typeof input.message === 'string') {
        const auto = i === 0 && input.message === t('moduleStart');
        transcript.append(bubble('user', t('you'), input.message, auto ? { class: 'msg-auto', testid: 'msg-auto' } : {}));
      } else if (e.role === 'coach' && e.result) {
        last = responseEl(e.result, Boolean(e.fallback));
        transcript.append(last);
        lastProgress = e.result.meta?.progress || lastProgress;
      }
    }
    // Only the last answer's quick replies still answer the open question.
    transcript.querySelectorAll('.suggestions').forEach((el) => {
      if (!last || !last.contains(el)) el.remove();
    });
    showProgress(lastProgress);
    transcript.append(h('p', { class: 'msg-note', testid: 'msg-resumed' }, progressText.textContent));
    reveal(transcript.lastElementChild);
    turns.safety.place();
    box.setLocked(false);
    box.focus();
    panel.dataset.restored = 'true';
    await resume();
  }

  showProgress(null);
  if (resumed) {
    restore();
  } else {
    send({ message: t('moduleStart'), auto: true }, t('moduleStart'));
    // The learner may type while the coach opens the lesson.
    box.focus();
  }

  return {
    unmount() {
      turns.abort();
    },
  };
}

/**
 * describe shows a form answer as the learner's bubble says it: option labels, not values.
 * @param {Field} field
 * @param {unknown} v
 * @returns {string}
 */
function describe(field, v) {
  const label = (/** @type {unknown} */ x) => (field.options || []).find((o) => o.value === x)?.label || String(x);
  if (Array.isArray(v)) return v.map(label).join(', ');
  return typeof v === 'string' ? label(v) : String(v);
}

/** @param {import('./i18n.js').Translator} t */
function typingLine(t) {
  return h('p', { class: 'typing' }, h('span', { class: 'dots', 'aria-hidden': 'true' }, h('i'), h('i'), h('i')), ' ', t('thinking'));
}

/**
 * renderBlock renders one text block by its type; the content is markdown.
 * @param {{type?: unknown, content?: unknown, level?: unknown}} b
 * @returns {HTMLElement}
 */
export function renderBlock(b) {
  const type = typeof b.type === 'string' && BLOCK_TYPES.has(b.type) ? b.type : 'paragraph';
  const content = typeof b.content === 'string' ? b.content : '';
  let el;
  if (type === 'heading') {
    const level = Math.max(2, Math.min(6, typeof b.level === 'number' && Number.isInteger(b.level) ? b.level : 2));
    el = h(/** @type {'h2'} */ (`h${level}`), { class: 'block block-heading', dir: 'auto' }, renderInline(content));
  } else if (type === 'quote') {
    el = h('blockquote', { class: 'block block-quote' }, renderMarkdown(content));
  } else if (CALLOUT_ICONS[type]) {
    el = h('div', { class: `block callout callout-${type}`, role: 'note' },
      h('span', { class: 'callout-icon', 'aria-hidden': 'true' }, CALLOUT_ICONS[type]),
      h('div', { class: 'callout-body' }, renderMarkdown(content)));
  } else {
    el = h('div', { class: `block block-${type}` }, renderMarkdown(content));
  }
  el.dataset.testid = 'block';
  el.dataset.blockType = type;
  return el;
}

/**
 * renderMedia renders an image, video or audio item whose source is an http(s) URL or a path on this origin.
 * @param {any} m
 * @returns {HTMLElement | null}
 */
function renderMedia(m) {
  if (!m || typeof m.src !== 'string') return null;
  let url;
  try {
    url = new URL(m.src, location.href);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.origin !== location.origin) return null;
  const src = url.href;
  let el;
  if (m.type === 'image') el = h('img', { src, alt: m.alt || '', loading: 'lazy' });
  else if (m.type === 'video') el = h('video', { src, controls: true, preload: 'metadata' });
  else if (m.type === 'audio') el = h('audio', { src, controls: true, preload: 'none' });
  else return null;
  return h('figure', { class: 'media-item' }, el, m.caption ? h('figcaption', null, m.caption) : null);
}
