// @ts-check
// The ChatPanel's entry point: the start screen (with the sessions this browser can return to),
// and the panel of the session's contract. The session id is kept in the URL (#/s/<id>) so that a
// reload picks the session up again: its state and its transcript come from the gateway.

import { apiKey, asCoachError, client, setApiKey } from './coach.js';
import { append, clear, h } from './dom.js';
import { LOCALES, sessionLocale, translator } from './i18n.js';
import { errorBox, forgetDrafts, forgetStoredDrafts, forgetTurn, loadDraft, storeDraft } from './turn.js';
import { forgetSession, listSessions, rememberSession, sessionTitle, touchSession } from './sessions.js';
import { SessionSync } from './sync.js';

/** @typedef {import('./coach.js').CoachErrorType} CoachErrorType */
import { mountToulmin } from './toulmin.js';
import { mountCards } from './cards.js';
import { mountModule } from './module.js';

// The page's fixed elements (index.html).
const main = /** @type {HTMLElement} */ (document.getElementById('main'));
const info = /** @type {HTMLElement} */ (document.querySelector('[data-testid="session-info"]'));
const newButton = /** @type {HTMLButtonElement} */ (document.querySelector('[data-testid="new-session"]'));
const toasts = /** @type {HTMLElement} */ (document.querySelector('.toast-region'));

/** @type {Record<string, (args: import('./turn.js').PanelArgs) => {unmount(): void}>} */
const PANELS = { toulmin: mountToulmin, cards: mountCards, module: mountModule };
const SESSION_HASH = /^#\/s\/([0-9a-f]{32})$/;

/** @type {{unmount(): void} | null} */
let panel = null; // the mounted panel
/** @type {SessionSync | null} */
let sync = null; // keeps the mounted panel's session in step with other tabs and devices
const choice = { contract: 'toulmin', module: '', locale: preferredLocale() };
/** @type {{id: string, title: string, sections: number, topics: number}[] | null} */
let modules = null; // GET /v1/modules, once

function preferredLocale() {
  return (navigator.language || 'en').toLowerCase().startsWith('es') ? 'es' : 'en';
}

/**
 * toast shows a short message at the top of the page, away from the message box and its Send
 * button, and under the bars stuck to the top (the progress a milestone toast announces stays in
 * view); it goes away by itself after a few seconds, when dismissed, or on Escape.
 * @param {string} text
 * @param {{kind?: string}} [options]
 */
function toast(text, { kind = 'info' } = {}) {
  const close = h('button', { type: 'button', class: 'toast-close', testid: 'toast-close', 'aria-label': translator(document.documentElement.lang)('dismiss'), 'aria-keyshortcuts': 'Escape' }, '×');
  const el = h('div', { class: `toast toast-${kind}`, testid: 'toast', role: 'status' }, h('span', null, text), close);
  const leave = () => {
    el.classList.add('toast-leave');
    setTimeout(() => el.remove(), 400);
  };
  close.addEventListener('click', leave);
  let below = 0;
  for (const bar of document.querySelectorAll('[data-sticky="top"]')) {
    const r = bar.getBoundingClientRect();
    if (r.height > 0 && r.bottom > 0 && r.top < window.innerHeight / 2) below = Math.max(below, r.bottom);
  }
  // Through the CSSOM: the Content-Security-Policy refuses style attributes.
  toasts.style.top = below ? `${Math.round(below + 8)}px` : '';
  toasts.append(el);
  setTimeout(leave, 3500);
}

// Escape dismisses the newest toast; with none on screen it is left to the panel (a draft being
// edited, a turn running).
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || e.defaultPrevented) return;
  const last = [...toasts.querySelectorAll('[data-testid="toast"]:not(.toast-leave)')].pop();
  if (!last) return;
  e.preventDefault();
  /** @type {HTMLElement | null} */ (last.querySelector('[data-testid="toast-close"]'))?.click();
}, { capture: true });

async function boot() {
  // The panels scroll to what matters after a reload (the pending proposal, the active card);
  // the browser's own restoring of the old offset would fight them.
  history.scrollRestoration = 'manual';
  forgetStoredDrafts();
  newButton.addEventListener('click', () => {
    history.replaceState(null, '', location.pathname + location.search);
    showStart();
  });
  window.addEventListener('hashchange', () => {
    const m = SESSION_HASH.exec(location.hash);
    if (m) openById(m[1]);
  });
  const m = SESSION_HASH.exec(location.hash);
  if (m) {
    await openById(m[1]);
    return;
  }
  showStart();
}

/**
 * openById opens session id, or says that it is gone and offers a new one.
 * @param {string} id
 */
async function openById(id) {
  let session;
  try {
    session = await client.getSession(id);
  } catch (thrown) {
    const err = asCoachError(thrown);
    if (err.code === 'session_not_found') {
      showGone(id);
      return;
    }
    showStart(err);
    return;
  }
  open(session, true);
}

/**
 * showGone tells the learner that session id no longer exists (expired, deleted, or lost with a
 * gateway's in-memory store) and offers to start a new one of the same kind, keeping any text
 * the learner had not sent yet.
 * @param {string} id
 */
function showGone(id) {
  unmount();
  const entry = listSessions().find((e) => e.id === id);
  const t = translator(entry?.locale || choice.locale);
  history.replaceState(null, '', location.pathname + location.search);
  info.hidden = true;
  newButton.hidden = true;
  const again = entry ? { contract: entry.contract, locale: entry.locale, module: entry.module, draft: loadDraft(id) } : null;
  forgetEverything(id);
  clear(main).append(h('section', { class: 'start', testid: 'session-gone', 'aria-labelledby': 'gone-title' },
    h('h2', { id: 'gone-title' }, t('goneTitle')),
    h('p', { class: 'lead' }, t('goneLead')),
    h('div', { class: 'gone-actions' },
      h('button', { type: 'button', class: 'btn btn-primary', testid: 'start-new-session', onclick: () => (again ? startNew(again) : showStart()) }, t('startNewSession')),
      h('button', { type: 'button', class: 'btn btn-ghost', testid: 'show-start', onclick: () => showStart() }, t('allSessions')))));
}

/**
 * startNew creates a session like one that is gone and opens it; draft is the text the learner
 * had not sent, put back in the new session's box.
 * @param {{contract: string, locale: string, module?: string, draft?: string}} like
 */
async function startNew({ contract, locale, module = '', draft = '' }) {
  /** @type {{contract: string, locale: string, module?: string}} */
  const body = { contract, locale };
  if (contract === 'module') {
    try {
      modules ||= await client.listModules();
    } catch {
      // The gateway picks nothing for us: the start screen will say what went wrong.
    }
    body.module = module || modules?.[0]?.id || '';
  }
  try {
    const session = await client.createSession(/** @type {any} */ (body));
    if (draft) storeDraft(session.id, draft);
    open(session, false);
  } catch (err) {
    showStart(asCoachError(err));
  }
}

/**
 * forgetEverything drops all this browser keeps of session id: its entry in the list, the text
 * not sent yet and the turn kept for a reload. A session removed from the list, or gone from the
 * gateway, leaves nothing behind on what may be a shared computer.
 * @param {string} id
 */
function forgetEverything(id) {
  forgetSession(id);
  forgetDrafts(id);
  forgetTurn(id);
}

function unmount() {
  sync?.close();
  sync = null;
  panel?.unmount();
  panel = null;
}

/**
 * showStart shows the start page: the sessions to return to, and a new session's choices.
 * @param {CoachErrorType | null} [startError] why the page is shown instead of a session
 */
async function showStart(startError = null) {
  unmount();
  info.hidden = true;
  newButton.hidden = true;
  const t = translator(choice.locale);
  document.documentElement.lang = t.locale;
  document.title = 'coachgw · ChatPanel';

  /** @param {string} name */
  const contractOption = (name) => h('label', { class: 'choice' },
    h('input', {
      type: 'radio', name: 'contract', value: name, testid: `contract-${name}`, checked: choice.contract === name,
      onchange: () => { choice.contract = name; moduleRow.hidden = name !== 'module'; },
    }),
    h('span', { class: 'choice-body' },
      h('span', { class: 'choice-title' }, t(name)),
      h('span', { class: 'choice-desc' }, t(`${name}Desc`))));

  const moduleSelect = h('select', { id: 'module-select', testid: 'module-select', onchange: () => { choice.module = moduleSelect.value; } });
  const moduleNote = h('p', { class: 'field-note', testid: 'module-note' });
  const moduleRow = h('div', { class: 'field', hidden: choice.contract !== 'module' },
    h('label', { for: 'module-select' }, t('moduleLabel')), moduleSelect, moduleNote);

  const localeSelect = h('select', {
    id: 'locale-select', testid: 'locale-select',
    onchange: () => { choice.locale = localeSelect.value; showStart(); },
  }, LOCALES.map(([code, name]) => h('option', { value: code, selected: code === choice.locale }, name)));

  const keyInput = h('input', {
    type: 'password', id: 'api-key', testid: 'api-key', autocomplete: 'off', spellcheck: 'false', value: apiKey(),
    'aria-describedby': 'api-key-help',
    onchange: () => {
      setApiKey(keyInput.value.trim());
      // The module list may have been refused for want of a key.
      if (!modules) showStart();
    },
  });
  const access = h('details', { class: 'access', open: Boolean(apiKey()) },
    h('summary', null, t('advanced')),
    h('div', { class: 'field' }, h('label', { for: 'api-key' }, t('apiKey')), keyInput,
      h('p', { class: 'field-note', id: 'api-key-help' }, t('apiKeyHelp'))));

  const errorArea = h('div', { testid: 'start-error' });
  if (startError) errorArea.append(errorBox(t, startError, null, () => clear(errorArea)));
  const startButton = h('button', { type: 'submit', class: 'btn btn-primary btn-large', testid: 'start-button' }, t('start'));

  const form = h('form', {
    class: 'start-form', onsubmit: async (/** @type {Event} */ e) => {
      e.preventDefault();
      clear(errorArea);
      startButton.disabled = true;
      startButton.textContent = t('starting');
      /** @type {{contract: string, locale: string, module?: string}} */
      const body = { contract: choice.contract, locale: sessionLocale(choice.locale, navigator.languages || [navigator.language]) };
      if (choice.contract === 'module') body.module = moduleSelect.value;
      setApiKey(keyInput.value.trim());
      try {
        open(await client.createSession(/** @type {any} */ (body)), false);
      } catch (thrown) {
        const err = asCoachError(thrown);
        if (err.status === 401) {
          access.open = true;
          keyInput.focus();
        }
        errorArea.append(errorBox(t, err, null, () => clear(errorArea)));
        startButton.disabled = false;
        startButton.textContent = t('start');
      }
    },
  },
  h('fieldset', { class: 'choices' }, h('legend', null, t('contract')), ['toulmin', 'cards', 'module'].map(contractOption)),
  moduleRow,
  h('div', { class: 'field' }, h('label', { for: 'locale-select' }, t('locale')), localeSelect),
  access,
  errorArea,
  startButton);

  append(clear(main), [sessionList(t), h('section', { class: 'start', testid: 'start-screen', 'aria-labelledby': 'start-title' },
    h('h2', { id: 'start-title' }, t('startTitle')),
    h('p', { class: 'lead' }, t('startLead')),
    form)]);

  let list;
  try {
    list = modules ||= await client.listModules();
  } catch (thrown) {
    const err = /** @type {CoachErrorType} */ (thrown);
    if (err.status === 401) access.open = true;
    moduleNote.append(errorBox(t, err, null, null));
    return;
  }
  if (!list.length) moduleNote.textContent = t('noModules');
  for (const m of list) moduleSelect.append(h('option', { value: m.id, selected: m.id === choice.module }, `${m.title} (${m.topics})`));
  choice.module = moduleSelect.value;
}

/**
 * sessionList renders the sessions this browser can return to, each with Open and Remove; null
 * when there are none.
 * @param {import('./i18n.js').Translator} t
 */
function sessionList(t) {
  const list = listSessions();
  if (!list.length) return null;
  const when = new Intl.DateTimeFormat(t.locale, { dateStyle: 'medium', timeStyle: 'short' });
  const items = h('ul', { class: 'session-list' });
  const section = h('section', { class: 'start sessions', testid: 'session-list', 'aria-labelledby': 'sessions-title' },
    h('h2', { id: 'sessions-title' }, t('yourSessions')), items);
  /** @param {string} id */
  const moduleTitle = (id) => modules?.find((m) => m.id === id)?.title;
  for (const e of list) {
    const title = sessionTitle(t, e, moduleTitle);
    const item = h('li', { class: 'session-item', testid: 'session-item', dataset: { sessionId: e.id } },
      h('a', { class: 'session-open', href: `#/s/${e.id}`, testid: 'session-open' },
        h('span', { class: 'session-title', dir: 'auto' }, title),
        h('span', { class: 'session-meta' }, `${t(e.contract)} · ${e.locale} · ${when.format(new Date(e.updated))}`),
        e.progress ? sessionProgress(t, e.progress) : null),
      h('button', {
        type: 'button', class: 'btn btn-small btn-ghost', testid: 'session-remove', 'aria-label': t('removeSession', title),
        onclick: () => {
          forgetEverything(e.id);
          item.remove();
          if (!items.children.length) section.remove();
        },
      }, t('remove')));
    items.append(item);
  }
  return section;
}

/**
 * sessionProgress shows how far a listed session is: a small meter and its words, or "Complete".
 * @param {import('./i18n.js').Translator} t
 * @param {import('./sessions.js').Progress} p
 */
function sessionProgress(t, p) {
  const text = p.complete ? t('sessionComplete')
    : p.level !== undefined ? t('level', p.level)
      : p.percentage !== undefined ? t('percentDone', p.percentage)
        : t('progressOf', p.done || 0, p.total || 0);
  const share = p.complete ? 100 : p.percentage !== undefined ? p.percentage : p.total ? Math.round((100 * (p.done || 0)) / p.total) : null;
  let meter = null;
  if (share !== null) {
    const fill = h('span', { class: 'meter-fill' });
    fill.style.width = `${share}%`; // through the CSSOM: the Content-Security-Policy refuses style attributes
    meter = h('span', { class: 'meter meter-small', 'aria-hidden': 'true' }, fill);
  }
  return h('span', { class: `session-progress${p.complete ? ' session-complete' : ''}`, testid: 'session-progress', dataset: { complete: String(Boolean(p.complete)) } },
    meter, h('span', null, p.complete ? `✓ ${text}` : text));
}

/**
 * open mounts the panel of session's contract.
 * @param {any} session the session as the gateway answered it
 * @param {boolean} resumed whether it existed before this page
 */
function open(session, resumed) {
  unmount();
  const t = translator(session.locale);
  document.documentElement.lang = t.locale;
  history.replaceState(null, '', `#/s/${session.id}`);
  rememberSession(session);
  // What kind of session this is; its id and locale are for whoever runs the gateway, not for
  // the learner, and are not shown.
  clear(info).append(h('span', { class: 'pill' }, t(session.contract)));
  info.hidden = false;
  newButton.textContent = t('newSession');
  newButton.hidden = false;
  document.title = `${t(session.contract)} · coachgw`;
  const mount = PANELS[session.contract];
  clear(main);
  sync = new SessionSync(session, {
    // The session moved on in another tab or on another device: draw it again from the gateway
    // (the text in the box is kept by the composer).
    reload: (fresh) => open(fresh, true),
    busy: () => Boolean(main.querySelector('[data-busy="true"]')),
    // The list of sessions shows how far each one is.
    changed: (s) => rememberSession(s),
  });
  panel = mount({
    root: main, session, t, resumed, toast, sync,
    // The panel tells when the learner did something, to date the session in the list.
    touched: () => touchSession(session.id),
    newSession: (draft = '') => startNew({ contract: session.contract, locale: session.locale, module: session.state?.module, draft }),
  });
  // The panel puts the focus where the learner acts first (the message box, the first card);
  // only when it did not does the page's main region take it.
  if (!main.contains(document.activeElement) || document.activeElement === main) main.focus({ preventScroll: true });
}

boot();
