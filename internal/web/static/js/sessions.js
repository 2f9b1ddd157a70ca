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
 */

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
 * @param {{id: string, contract: string, locale?: string, updatedAt?: string}} session
 * @param {string} [title]
 */
export function rememberSession(session, title = '') {
  const list = listSessions();
  const old = list.find((e) => e.id === session.id);
  const entry = {
    id: session.id,
    contract: session.contract,
    locale: session.locale || 'en',
    title: (old && old.title) || oneLine(title),
    updated: session.updatedAt || new Date().toISOString(),
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
