// @ts-check
// The sessions this browser has opened, to return to: kept in localStorage (the gateway knows
// sessions only by id, and an id is all it takes to read one back), newest first. Nothing the
// learner wrote is kept here: the browser may be a shared one (a school's), and the list is named
// by the contract, the module and the time the session began (see sessionTitle).

const STORAGE = 'coachgw.sessions';
const MAX = 30;

/**
 * @typedef {object} SessionEntry
 * @property {string} id
 * @property {string} contract
 * @property {string} locale
 * @property {string} [module] the module's id (module sessions)
 * @property {string} [created] ISO time the session began (or was first seen here)
 * @property {string} updated ISO time of the last change seen here
 * @property {Progress} [progress] how far the session was when last seen here
 */

/**
 * Progress is how far a session is: steps done of total (toulmin), its level (cards) or the
 * share of the module covered (module), and whether it is complete.
 * @typedef {{done?: number, total?: number, level?: number, percentage?: number, complete?: boolean}} Progress
 */

// STEPS are the toulmin steps in order, to count the steps done.
const STEPS = ['claim', 'grounds', 'warrant', 'groundsBacking', 'warrantBacking', 'qualifier', 'rebuttal'];

/**
 * progressOf reads a session's progress from its state; null when the state says nothing.
 * @param {{contract?: string, state?: any}} session
 * @returns {Progress | null}
 */
export function progressOf(session) {
  const st = session && session.state;
  if (!st || typeof st !== 'object') return null;
  if (session.contract === 'toulmin') {
    const complete = Boolean(st.isComplete);
    return { done: complete ? STEPS.length : Math.max(0, STEPS.indexOf(st.step)), total: STEPS.length, complete };
  }
  if (session.contract === 'cards' && typeof st.level === 'number') return { level: st.level };
  if (session.contract === 'module' && typeof st.percentage === 'number') {
    const percentage = Math.max(0, Math.min(100, Math.round(st.percentage)));
    return { percentage, complete: percentage >= 100 };
  }
  return null;
}

/**
 * listSessions returns the remembered sessions, most recently updated first.
 * @returns {SessionEntry[]}
 */
export function listSessions() {
  try {
    const list = JSON.parse(localStorage.getItem(STORAGE) || '[]');
    if (!Array.isArray(list)) return [];
    const entries = list.filter((e) => e && typeof e.id === 'string' && typeof e.contract === 'string')
      .sort((a, b) => String(b.updated).localeCompare(String(a.updated)));
    // A list kept before titles were neutral may name a session by the learner's first message:
    // that goes at the first read.
    if (entries.some((e) => 'title' in e)) {
      for (const e of entries) delete e.title;
      save(entries);
    }
    return entries;
  } catch {
    return [];
  }
}

/** @param {SessionEntry[]} list */
function save(list) {
  try {
    localStorage.setItem(STORAGE, JSON.stringify(list.slice(0, MAX)));
  } catch {
    // Storage is off or full: the list is a convenience; the session itself is on the gateway.
  }
}

/**
 * rememberSession records session (or refreshes its entry).
 * @param {{id: string, contract: string, locale?: string, createdAt?: string, updatedAt?: string, state?: any}} session
 */
export function rememberSession(session) {
  const list = listSessions();
  const old = list.find((e) => e.id === session.id);
  const module = session.contract === 'module' && typeof session.state?.module === 'string' ? session.state.module : undefined;
  /** @type {SessionEntry} */
  const entry = {
    id: session.id,
    contract: session.contract,
    locale: session.locale || 'en',
    module: module || (old && old.module) || undefined,
    created: (old && old.created) || session.createdAt || new Date().toISOString(),
    updated: session.updatedAt || new Date().toISOString(),
    progress: progressOf(session) || (old && old.progress) || undefined,
  };
  save([entry, ...list.filter((e) => e.id !== session.id)]);
}

/**
 * touchSession marks session id as changed now.
 * @param {string} id
 */
export function touchSession(id) {
  const list = listSessions();
  const entry = list.find((e) => e.id === id);
  if (!entry) return;
  entry.updated = new Date().toISOString();
  save([entry, ...list.filter((e) => e.id !== id)]);
}

/**
 * forgetSession removes session id from the list.
 * @param {string} id
 */
export function forgetSession(id) {
  save(listSessions().filter((e) => e.id !== id));
}

/**
 * sessionTitle names a listed session as the learner will recognise it without anything they
 * wrote: the contract (or the module's title, when moduleTitle knows it) and when it began, such
 * as "Toulmin argument · Nov 29, 10:42 AM", in the translator's language.
 * @param {import('./i18n.js').Translator} t
 * @param {SessionEntry} e
 * @param {(id: string) => string | undefined} [moduleTitle]
 */
export function sessionTitle(t, e, moduleTitle = () => undefined) {
  const kind = (e.module && moduleTitle(e.module)) || t(e.contract);
  const began = new Date(e.created || e.updated);
  if (Number.isNaN(began.getTime())) return kind;
  const when = new Intl.DateTimeFormat(t.locale, { day: 'numeric', month: 'short', hour: 'numeric', minute: '2-digit' });
  return t('sessionTitle', kind, when.format(began));
}
