// The ChatPanel's entry point: the start screen, and the panel of the session's contract. The
// session id is kept in the URL (#/s/<id>) so that a reload picks the session up again from its
// stored state.

import * as api from './api.js';
import { clear, h } from './dom.js';
import { LOCALES, translator } from './i18n.js';
import { errorBox } from './turn.js';
import { mountToulmin } from './toulmin.js';
import { mountCards } from './cards.js';
import { mountModule } from './module.js';

const main = document.getElementById('main');
const info = document.querySelector('[data-testid="session-info"]');
const newButton = document.querySelector('[data-testid="new-session"]');
const toasts = document.querySelector('.toast-region');

const PANELS = { toulmin: mountToulmin, cards: mountCards, module: mountModule };
const SESSION_HASH = /^#\/s\/([0-9a-f]{32})$/;

let panel = null; // the mounted panel: {unmount()}
const choice = { contract: 'toulmin', module: '', locale: preferredLocale() };
let modules = null; // GET /v1/modules, once

function preferredLocale() {
  return (navigator.language || 'en').toLowerCase().startsWith('es') ? 'es' : 'en';
}

/** toast shows a short message that goes away by itself. */
function toast(text, { kind = 'info' } = {}) {
  const el = h('div', { class: `toast toast-${kind}`, testid: 'toast', role: 'status' }, text);
  toasts.append(el);
  setTimeout(() => el.classList.add('toast-leave'), 4500);
  setTimeout(() => el.remove(), 5000);
}

async function boot() {
  newButton.addEventListener('click', () => {
    history.replaceState(null, '', location.pathname + location.search);
    showStart();
  });
  const m = SESSION_HASH.exec(location.hash);
  if (m) {
    try {
      open(await api.getSession(m[1]), true);
      return;
    } catch {
      history.replaceState(null, '', location.pathname + location.search);
    }
  }
  showStart();
}

function unmount() {
  panel?.unmount();
  panel = null;
}

async function showStart() {
  unmount();
  info.hidden = true;
  newButton.hidden = true;
  const t = translator(choice.locale);
  document.documentElement.lang = t.locale;
  document.title = 'coachgw · ChatPanel';

  const contractOption = (name) => h('label', { class: 'choice' },
    h('input', {
      type: 'radio', name: 'contract', value: name, testid: `contract-${name}`, checked: choice.contract === name,
      onchange: () => { choice.contract = name; moduleRow.hidden = name !== 'module'; },
    }),
    h('span', { class: 'choice-body' },
      h('span', { class: 'choice-title' }, t(name)),
      h('span', { class: 'choice-desc' }, t(`${name}Desc`))));

  const moduleSelect = h('select', { id: 'module-select', testid: 'module-select', onchange: (e) => { choice.module = e.target.value; } });
  const moduleNote = h('p', { class: 'field-note', testid: 'module-note' });
  const moduleRow = h('div', { class: 'field', hidden: choice.contract !== 'module' },
    h('label', { for: 'module-select' }, t('moduleLabel')), moduleSelect, moduleNote);

  const localeSelect = h('select', {
    id: 'locale-select', testid: 'locale-select',
    onchange: (e) => { choice.locale = e.target.value; showStart(); },
  }, LOCALES.map(([code, name]) => h('option', { value: code, selected: code === choice.locale }, name)));

  const keyInput = h('input', {
    type: 'password', id: 'api-key', testid: 'api-key', autocomplete: 'off', spellcheck: 'false', value: api.apiKey(),
    'aria-describedby': 'api-key-help',
    onchange: (e) => {
      api.setApiKey(e.target.value.trim());
      // The module list may have been refused for want of a key.
      if (!modules) showStart();
    },
  });
  const access = h('details', { class: 'access', open: Boolean(api.apiKey()) },
    h('summary', null, t('advanced')),
    h('div', { class: 'field' }, h('label', { for: 'api-key' }, t('apiKey')), keyInput,
      h('p', { class: 'field-note', id: 'api-key-help' }, t('apiKeyHelp'))));

  const errorArea = h('div', { testid: 'start-error' });
  const startButton = h('button', { type: 'submit', class: 'btn btn-primary btn-large', testid: 'start-button' }, t('start'));

  const form = h('form', {
    class: 'start-form', onsubmit: async (e) => {
      e.preventDefault();
      clear(errorArea);
      startButton.disabled = true;
      startButton.textContent = t('starting');
      const body = { contract: choice.contract, locale: choice.locale };
      if (choice.contract === 'module') body.module = moduleSelect.value;
      api.setApiKey(keyInput.value.trim());
      try {
        open(await api.createSession(body), false);
      } catch (err) {
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

  clear(main).append(h('section', { class: 'start', testid: 'start-screen', 'aria-labelledby': 'start-title' },
    h('h2', { id: 'start-title' }, t('startTitle')),
    h('p', { class: 'lead' }, t('startLead')),
    form));

  try {
    modules ||= await api.listModules();
  } catch (err) {
    if (err.status === 401) access.open = true;
    moduleNote.append(errorBox(t, err, null, null));
    return;
  }
  if (!modules.length) moduleNote.textContent = t('noModules');
  for (const m of modules) moduleSelect.append(h('option', { value: m.id, selected: m.id === choice.module }, `${m.title} (${m.topics})`));
  choice.module = moduleSelect.value;
}

function open(session, resumed) {
  unmount();
  const t = translator(session.locale);
  document.documentElement.lang = t.locale;
  history.replaceState(null, '', `#/s/${session.id}`);
  clear(info).append(
    h('span', { class: 'pill' }, t(session.contract)),
    h('span', { class: 'pill pill-muted' }, session.locale || 'en'),
    h('code', { class: 'session-id', title: session.id }, session.id.slice(0, 8)));
  info.hidden = false;
  newButton.textContent = t('newSession');
  newButton.hidden = false;
  document.title = `${t(session.contract)} · coachgw`;
  const mount = PANELS[session.contract];
  clear(main);
  panel = mount({ root: main, session, t, resumed, toast });
  main.focus({ preventScroll: true });
}

boot();
