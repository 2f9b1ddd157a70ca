// @ts-check
// The sessions this browser has opened, to return to: kept in localStorage (the gateway knows
// sessions only by id, and an id is all it takes to read one back), newest first.

const STORAGE = 'coachgw.sessions';
const MAX = 30;

/**
 * @typedef {object} SessionEntry
 * @property {string} id
 * @property {string} contract
 * @property {string} locale
 * @property {string} title what the learner will recognise: the first message, or the module
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
    return list.filter((e) => e && typeof e.id === 'string' && typeof e.contract === 'string')
      .sort((a, b) => String(b.updated).localeCompare(String(a.updated)));
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
 * rememberSession records session (or refreshes its entry). title, when given, replaces an empty
 * title only: the first message names the session for good.
 * @param {{id: string, contract: string, locale?: string, updatedAt?: string, state?: any}} session
 * @param {string} [title]
 */
export function rememberSession(session, title = '') {
  const list = listSessions();
  const old = list.find((e) => e.id === session.id);
  /** @type {SessionEntry} */
  const entry = {
    id: session.id,
    contract: session.contract,
    locale: session.locale || 'en',
    title: (old && old.title) || oneLine(title),
    updated: session.updatedAt || new Date().toISOString(),
    progress: progressOf(session) || (old && old.progress) || undefined,
  };
  save([entry, ...list.filter((e) => e.id !== session.id)]);
}

/**
 * touchSession marks session id as changed now, and names it by title if it has no name yet.
 * @param {string} id
 * @param {string} [title]
 */
export function touchSession(id, title = '') {
  const list = listSessions();
  const entry = list.find((e) => e.id === id);
  if (!entry) return;
  entry.updated = new Date().toISOString();
  if (!entry.title && title) entry.title = oneLine(title);
  save([entry, ...list.filter((e) => e.id !== id)]);
}

/**
 * forgetSession removes session id from the list.
 * @param {string} id
 */
export function forgetSession(id) {
  save(listSessions().filter((e) => e.id !== id));
}

/** @param {string} text */
function oneLine(text) {
  const line = String(text || '').replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
