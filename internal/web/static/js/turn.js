// @ts-check
// What the three panels share: running a streamed turn (busy state, the "retrying…" note of a
// reset line, the error box with its Retry button) and the free-text composer.

import { CoachError, TRANSCRIPT_PAGE, apiKey, asCoachError, canRetry, client } from './coach.js';
import { autosize, clear, h, reveal } from './dom.js';
import { limitCounter } from './limits.js';
import { SafetyRegion } from './safety.js';

/** @typedef {import('./i18n.js').Translator} Translator */
/** @typedef {import('./coach.js').CoachErrorType} CoachErrorType */

/**
 * PanelArgs is what app.js gives the panel of a session's contract when it mounts it.
 * @typedef {object} PanelArgs
 * @property {HTMLElement} root where the panel goes
 * @property {any} session the session as the gateway answered it
 * @property {Translator} t
 * @property {boolean} resumed whether the session existed before this page (restore it)
 * @property {(text: string, options?: {kind?: string}) => void} toast
 * @property {() => void} [touched] the learner did something: date the session in the list
 * @property {(draft?: string) => void} [newSession] start a session like this one, with draft in its box
 * @property {import('./sync.js').SessionSync} [sync] keeps the session in step with other tabs and devices
 */

/**
 * TurnView is what a panel shows of a turn as its stream arrives.
 * @typedef {object} TurnView
 * @property {(meta?: any) => void} [begin] before each attempt; a resumed turn's gets the meta sent with it
 * @property {() => void} [discard] a resumed turn is not to be shown after all (it is in the transcript already, or was never this tab's)
 * @property {() => void} [accepted] the gateway took the turn (its id arrived): it runs to its end even if this page goes
 * @property {(line: any) => void} [delta]
 * @property {(line: any) => void} [card]
 * @property {(line: any) => void} [reset]
 * @property {(line: any) => void} [safety] a crisis turn's safety line (Turns shows its resources itself)
 * @property {(line: any) => void} [result]
 * @property {(err: CoachErrorType) => void} [fail]
 */

/**
 * Turns runs the turns of one session, one at a time. The panel's root element carries
 * data-busy ("true" while a turn streams) and data-turns (turns completed), which the browser
 * test waits on.
 */
export class Turns {
  /**
   * @param {object} o
   * @param {() => string} o.sessionId
   * @param {Translator} o.t
   * @param {HTMLElement} o.root the panel
   * @param {HTMLElement} o.status where the retry note and errors show
   * @param {(busy: boolean, following: boolean) => void} [o.onBusy] following: the turn is another
   *   tab's, shown read-only (no Stop, Send off)
   * @param {(() => void) | null} [o.newSession] offered when the session is gone
   * @param {import('./sync.js').SessionSync} [o.sync]
   * @param {any} [o.session] the session the panel was drawn from: its safety hold shows at once
   * @param {(meta: any) => Promise<unknown>} [o.follow] shows the session's running turn, begun
   *   elsewhere, with meta as the tab that sent it described it (the panel's resume)
   */
  constructor({ sessionId, t, root, status, onBusy, newSession, sync, session, follow }) {
    this.sync = sync;
    this.follow = follow;
    /** whether the turn shown is another tab's, followed read-only */
    this.following = false;
    /** whether the turn shown was found by a resume with nothing kept in this tab */
    this.unkept = false;
    /** @type {{meta: any} | null} a turn begun elsewhere while this tab was busy: followed next */
    this.pendingFollow = null;
    // Another tab of this session started a turn, or this tab came back to the front: the turn
    // running, if any, is shown here as it streams, and nothing is sent meanwhile.
    if (sync && follow) sync.onTurn = (meta) => this.followTurn(meta);
    // Escape stops this tab's running turn, wherever the focus is (a field that uses Escape
    // itself, such as a draft being edited, takes it first).
    this.onKey = (/** @type {KeyboardEvent} */ e) => {
      if (e.key === 'Escape' && !e.defaultPrevented && this.busy && !this.following) {
        e.preventDefault();
        this.stop();
      }
    };
    document.addEventListener('keydown', this.onKey);
    // One polite live region per panel: a finished answer is announced once, never delta by
    // delta (the transcript itself is not live), and so is a proposal or a card that follows.
    this.announcer = h('p', { class: 'sr-only', role: 'status', testid: 'announcer' });
    root.append(this.announcer);
    // The crisis resources of a safety line (v1.3), above the status and the message box: where
    // the learner looks when the answer comes. Its own assertive live region is in the page from
    // the start, so that the first words put in it are read.
    // Without an access key the page can only be talking to an open gateway (a keyed one
    // refuses every route), where the operator's clear is everyone's: the region offers it.
    const onClear = apiKey() ? undefined : async () => {
      const cleared = await client.call('POST', `/v1/sessions/${encodeURIComponent(sessionId())}/safety`, { action: 'clear' });
      this.sync?.changed(cleared);
      this.safety.hold(root, false);
    };
    this.safety = new SafetyRegion(t, { onClear });
    status.before(this.safety.el);
    root.append(this.safety.live);
    this.safety.hold(root, Boolean(session && session.safety && session.safety.hold));
    /** @type {number} when the "retrying…" note appeared (0: not shown) */
    this.noteShown = 0;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.noteTimer = undefined;
    this.sessionId = sessionId;
    this.t = t;
    this.root = root;
    this.status = status;
    this.onBusy = onBusy;
    this.newSession = newSession || undefined;
    this.busy = false;
    this.count = 0;
    /** @type {AbortController | null} */
    this.controller = null;
    /** the id of the turn under way, once the gateway has said it */
    this.turnId = '';
    /** whether Stop was asked for before the turn had an id */
    this.stopWanted = false;
    root.dataset.busy = 'false';
    root.dataset.turns = '0';
  }

  /** @param {boolean} busy */
  setBusy(busy) {
    this.busy = busy;
    if (!busy) this.following = this.unkept = false;
    this.root.dataset.busy = String(busy);
    this.root.dataset.following = String(this.following);
    this.root.setAttribute('aria-busy', String(busy));
    this.onBusy?.(busy, this.following);
  }

  /**
   * followTurn shows the session's running turn, begun in another tab (or on another device),
   * read-only as it streams: Stop is not offered and Send stays off, with a note saying why,
   * until the turn ends and its new state is drawn. meta is what the sending tab kept with the
   * turn (its learner's message, say); null when this tab only looks whether a turn runs.
   * @param {any} meta
   */
  async followTurn(meta) {
    if (!this.follow) return;
    if (this.busy) {
      if (this.following) return;
      if (this.unkept) {
        // The turn a resume found with nothing kept here is the one another tab just began.
        this.following = true;
        storeTurn(this.sessionId(), null); // the other tab's to keep
        this.setBusy(true);
        this.showFollowing();
      } else {
        this.pendingFollow = { meta };
      }
      return;
    }
    // A turn kept in this tab is its own, sent before a reload: resumed with its Stop.
    this.following = !loadTurn(this.sessionId());
    await this.follow(meta);
    if (!this.busy) this.following = false;
  }

  /** followPending follows a turn begun elsewhere while this tab's own turn was running. */
  followPending() {
    const p = this.pendingFollow;
    this.pendingFollow = null;
    if (p && !this.busy) this.followTurn(p.meta);
  }

  /**
   * send runs one turn. body is the request body, or a function returning it (called again on a
   * retry, so that it can pick up state that changed). view receives the stream:
   * begin() before each attempt, delta(line), card(line), reset(line), result(line) and fail(err).
   * retry, when given, is what the Retry button of a failure does instead of sending body again
   * (a message that went back into the box is sent from there). meta is kept with the turn for a
   * reload that resumes it (resume hands it back). It resolves true when the turn completed.
   * @param {object | (() => object)} body
   * @param {TurnView} view
   * @param {{retry?: (() => unknown) | null, meta?: any}} [options]
   * @returns {Promise<boolean>}
   */
  async send(body, view, { retry = null, meta = null } = {}) {
    if (this.busy) return false;
    this.setBusy(true);
    this.clearStatus();
    // Another tab or device may have moved the session on: then the panel is drawn again, and
    // nothing is sent under a step or a card the learner has not seen.
    if (this.sync && !(await this.sync.fresh())) {
      this.setBusy(false);
      return false;
    }
    view.begin?.();
    const req = typeof body === 'function' ? body() : body;
    const again = () => this.send(body, view, { retry, meta });
    const done = await this.run((o) => client.streamTurn(this.sessionId(), /** @type {any} */ (req), o), view, {
      meta,
      retry: retry || again,
      // Without a retry of the panel's own, the input is not back in the box to send again.
      again: retry ? undefined : again,
    });
    this.followPending();
    return done;
  }

  /**
   * resume goes on with the session's turn that a reload (or a switch of session) left running:
   * the lines kept in sessionStorage are shown again, then the rest is read from the gateway
   * (GET …/turns/current?after=N). With nothing kept it reads the session's current turn from its
   * start. A turn that is over and already in the transcript drawn (its result's session version
   * is not newer than known), or one that ended in an error this tab never saw, is not shown.
   * view.begin gets the meta kept with the turn (null when none was). It resolves true when an
   * answer was shown to its end.
   * A turn this tab follows (followTurn) is drawn from meta, what the tab that sent it described.
   * @param {TurnView} view
   * @param {{known: number, meta?: any}} options
   * @returns {Promise<boolean>}
   */
  async resume(view, { known, meta = null }) {
    if (this.busy) return false;
    const kept = loadTurn(this.sessionId());
    this.unkept = !kept;
    this.setBusy(true);
    let begun = false;
    const begin = () => {
      if (begun) return;
      begun = true;
      if (this.following) this.showFollowing();
      view.begin?.(kept ? kept.meta : meta);
    };
    if (kept) {
      begin();
      for (const ev of kept.events) this.dispatch(ev, view);
    }
    const done = await this.run((o) => client.resumeTurn(this.sessionId(), { after: kept ? kept.after : 0, turn: kept ? kept.turn : undefined }, o), view, {
      meta: kept ? kept.meta : meta,
      kept,
      begin,
      known,
    });
    this.followPending();
    return done;
  }

  /**
   * run reads one turn's stream (opened by open) into view: the shared part of send and resume.
   * Every line is kept in sessionStorage as it arrives (the turn id, the number of lines read,
   * the events shown), for a reload to resume the turn where it was.
   * @param {(o: {signal: AbortSignal, onTurn: (turn: string) => void, onLine: (n: number) => void}) => AsyncIterable<any>} open
   * @param {TurnView} view
   * again, for a turn stopped, is offered as "Send again" (the input is not in the box).
   * @param {{meta?: any, retry?: (() => unknown), again?: (() => unknown), kept?: KeptTurn | null, begin?: () => void, known?: number}} options
   * @returns {Promise<boolean>}
   */
  async run(open, view, { meta = null, retry, again, kept, begin, known }) {
    const resuming = kept !== undefined;
    const controller = new AbortController();
    this.controller = controller;
    const id = this.sessionId();
    /** @type {KeptTurn | null} */
    let record = kept || null;
    let lines = record ? record.after : 0;
    let opened = false;
    this.stopWanted = false;
    /** @type {any} */
    let end = null;
    try {
      const events = open({
        signal: controller.signal,
        onTurn: (turn) => {
          opened = true;
          this.turnId = turn;
          view.accepted?.();
          // A turn another tab sent is that tab's to keep and to resume.
          if (this.following) return;
          if (!record || record.turn !== turn) record = { turn, after: 0, events: [], meta };
          storeTurn(id, record);
          // The other tabs of this session follow the turn as it streams.
          if (!resuming) this.sync?.turnStarted(meta);
          if (this.stopWanted) this.stop();
        },
        onLine: (n) => { lines = n; },
      });
      for await (const line of events) {
        const ev = /** @type {any} */ (line);
        begin?.();
        if (ev.type === 'error') throw new CoachError('turn', ev.error || 'coach_stream_failed', ev.message || '');
        if (ev.type === 'result') {
          end = ev;
          break;
        }
        this.dispatch(ev, view, !resuming);
        if (record && !this.following && (ev.type === 'delta' || ev.type === 'card' || ev.type === 'reset' || ev.type === 'safety')) {
          record.events.push(ev);
          record.after = lines;
          storeTurn(id, record);
        }
      }
      if (!end && resuming && !opened) {
        // 204: the session has no turn to resume (any more).
        if (this.following) this.hideFollowing();
        else storeTurn(id, null);
        this.setBusy(false);
        if (kept) view.discard?.();
        return false;
      }
      if (!end) throw new CoachError('read', 'stream_truncated', 'the stream ended before its result line');
    } catch (thrown) {
      if (controller.signal.aborted) return false;
      const err = asCoachError(thrown);
      const followed = this.following;
      this.setBusy(false);
      this.hideNote(true);
      // A stream cut off (the page unloading, the network gone) leaves the turn running on the
      // gateway: it stays kept for the next resume. An error line or an HTTP error ends it.
      if (!followed && err.kind !== 'network' && err.kind !== 'read') storeTurn(id, null);
      // A kept turn the gateway no longer has, or an old failure this tab never showed: nothing
      // to say.
      if (resuming && (!kept || err.code === 'turn_not_found')) {
        view.discard?.();
        if (followed) this.hideFollowing();
        return false;
      }
      view.fail?.(err);
      if (err.code === 'session_busy' && !resuming) {
        // Another tab (or device) has a turn of this session under way: it is shown here as it
        // streams, and what the learner wrote waits in the box until it has ended.
        this.clearStatus();
        this.followTurn(null);
        return false;
      }
      // Stop is what the learner asked for: a neutral note, not an error to retry.
      if (err.code === 'turn_cancelled') this.showStopped(again || null);
      else this.showError(err, retry && canRetry(err) ? retry : null);
      return false;
    } finally {
      if (this.controller === controller) this.controller = null;
      this.turnId = '';
    }
    if (this.following) this.hideFollowing();
    else storeTurn(id, null);
    this.hideNote();
    this.setBusy(false);
    if (resuming && known !== undefined && !(Number(end.session && end.session.version) > known)) {
      // The turn ended before this page read the transcript, which shows its answer already.
      view.discard?.();
      return false;
    }
    this.sync?.changed(end.session);
    if (end.session) this.safety.hold(this.root, Boolean(end.session.safety && end.session.safety.hold));
    view.result?.(end);
    this.safety.reveal();
    this.root.dataset.turns = String(++this.count);
    return true;
  }

  /**
   * dispatch hands one streamed event to view. live: the event arrived just now in a turn this
   * page sent (not a kept event shown again, nor a resumed turn): a safety line is announced.
   * @param {any} ev
   * @param {TurnView} view
   * @param {boolean} [live]
   */
  dispatch(ev, view, live = false) {
    if (ev.type === 'safety') {
      this.safety.show(ev, { announce: live });
      view.safety?.(ev);
    } else if (ev.type === 'delta') {
      this.hideNote();
      view.delta?.(ev);
    } else if (ev.type === 'card') {
      view.card?.(ev);
    } else if (ev.type === 'reset') {
      this.showNote();
      view.reset?.(ev);
    }
  }

  /**
   * stop stops the turn under way wherever it runs (DELETE …/turns/current): its stream then ends
   * with turn_cancelled, and the gateway stores nothing of it. Before the turn has an id, the
   * stop waits for it.
   */
  async stop() {
    if (!this.busy) return;
    this.stopWanted = true;
    if (!this.turnId) return;
    try {
      await client.stopTurn(this.sessionId());
    } catch (err) {
      this.showError(asCoachError(err), null);
    }
  }

  /**
   * announce tells screen readers text, once (the panel's polite live region).
   * @param {string} text
   */
  announce(text) {
    // A change of text is what a live region announces: clear first, so the same words twice are
    // read twice.
    this.announcer.textContent = '';
    requestAnimationFrame(() => { this.announcer.textContent = text; });
  }

  /**
   * transcript reads the session's transcript, oldest entry first, to restore the panel; when it
   * cannot be read it shows why (with "Start a new session" when the session is gone) and
   * returns no entries.
   * @returns {Promise<any[]>}
   */
  async transcript() {
    try {
      const entries = await client.transcript(this.sessionId(), { limit: TRANSCRIPT_PAGE });
      // While the session holds, the resources stay on screen: the transcript keeps the notice
      // the crisis turn showed (on its coach entry). Drawn again, never announced again.
      if (this.safety.held) {
        /** @type {any} */
        const last = [...entries].reverse().find((e) => e.role === 'coach' && 'safety' in e && e.safety);
        if (last) this.safety.show(last.safety);
      }
      return entries;
    } catch (err) {
      this.showError(asCoachError(err), null);
      return [];
    }
  }

  /**
   * abort stops reading the turn in flight, if any, and listening for Escape (the panel goes
   * away). The gateway goes on with the turn, and it is kept for resume when the session is
   * opened again.
   */
  abort() {
    this.controller?.abort();
    document.removeEventListener('keydown', this.onKey);
  }

  clearStatus() {
    clearTimeout(this.noteTimer);
    this.noteShown = 0;
    clear(this.status);
  }

  showNote() {
    clearTimeout(this.noteTimer);
    this.noteShown = Date.now();
    if (this.status.querySelector('[data-testid="retry-note"]')) return;
    this.status.append(h('p', { class: 'retry-note', testid: 'retry-note', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), this.t('retrying')));
  }

  /**
   * hideNote takes the "retrying…" note away once new text has arrived, but not before it has
   * been up for NOTE_MIN_MS: a note that flashes by leaves the learner watching text vanish
   * without a word. now hides it at once (an error box takes its place).
   * @param {boolean} [now]
   */
  hideNote(now = false) {
    if (!this.noteShown) return;
    const left = NOTE_MIN_MS - (Date.now() - this.noteShown);
    const remove = () => {
      this.noteShown = 0;
      this.status.querySelector('[data-testid="retry-note"]')?.remove();
    };
    clearTimeout(this.noteTimer);
    if (now || left <= 0) remove();
    else this.noteTimer = setTimeout(remove, left);
  }

  /**
   * showStopped says, without alarm, that the answer was stopped as the learner asked; again,
   * when given, is offered as "Send again" (a form or an opening message is not in the box).
   * @param {(() => unknown) | null} again
   */
  showStopped(again) {
    this.clearStatus();
    this.status.append(h('div', { class: 'turn-note', testid: 'turn-stopped' },
      h('p', { role: 'status' }, this.t('stopped')),
      again ? h('button', { type: 'button', class: 'btn btn-small btn-ghost', testid: 'stopped-again', onclick: () => again() }, this.t('sendAgain')) : null));
  }

  /**
   * showFollowing says why Send is off while another tab's turn streams here; what the status
   * says already (this tab's last Stop, say) stays.
   */
  showFollowing() {
    if (this.status.querySelector('[data-testid="turn-following"]')) return;
    this.status.append(h('p', { class: 'turn-note', testid: 'turn-following', role: 'status' }, this.t('followingTurn')));
  }

  /** hideFollowing takes the note of showFollowing away: the followed turn has ended. */
  hideFollowing() {
    this.status.querySelector('[data-testid="turn-following"]')?.remove();
  }

  /**
   * showError shows err; retry, when given, is offered as a Retry button.
   * @param {CoachErrorType} err
   * @param {(() => unknown) | null} retry
   */
  showError(err, retry) {
    this.clearStatus();
    this.status.append(errorBox(this.t, err, retry, () => this.clearStatus(), { newSession: this.newSession }));
    reveal(this.status);
  }
}

/**
 * KeptTurn is what sessionStorage keeps of a turn under way, for a reload to resume it.
 * @typedef {object} KeptTurn
 * @property {string} turn the turn's id (X-Coach-Turn)
 * @property {number} after the number of lines read (resume reads after them)
 * @property {any[]} events the delta, card, reset and safety events shown so far
 * @property {any} meta what the panel keeps with the turn (the learner's message, say)
 */

const TURN_STORAGE = 'coachgw.turn.';

/**
 * loadTurn returns the turn kept for session id, or null.
 * @param {string} id
 * @returns {KeptTurn | null}
 */
export function loadTurn(id) {
  try {
    const v = JSON.parse(sessionStorage.getItem(TURN_STORAGE + id) || 'null');
    return v && typeof v.turn === 'string' && Number.isInteger(v.after) && Array.isArray(v.events) ? v : null;
  } catch {
    return null;
  }
}

/**
 * forgetTurn drops the turn kept for session id.
 * @param {string} id
 */
export function forgetTurn(id) {
  storeTurn(id, null);
}

/**
 * storeTurn keeps rec for session id (null forgets it).
 * @param {string} id
 * @param {KeptTurn | null} rec
 */
function storeTurn(id, rec) {
  try {
    if (rec) sessionStorage.setItem(TURN_STORAGE + id, JSON.stringify(rec));
    else sessionStorage.removeItem(TURN_STORAGE + id);
  } catch {
    // Storage is off or full: a reload then reads the turn from its start.
  }
}

// NOTE_MIN_MS is how long the "retrying…" note stays up at least.
const NOTE_MIN_MS = 1600;

/**
 * friendlyError returns the sentence a learner reads for err: what happened and what to do, in
 * the session's language, without codes (those go to the details line).
 * @param {Translator} t
 * @param {CoachErrorType} err
 * @returns {string}
 */
export function friendlyError(t, err) {
  // A 422 says in its message what the gateway found: the length limit, or the kind of
  // character it refuses. The learner is told that, not a guess.
  if (err.code === 'invalid_input' && err.field) {
    const what = t(`fieldNames.${err.field}`);
    const long = /longer than (\d+) characters/.exec(err.message);
    if (long) return t('errors.tooLong', what, Number(long[1]));
    if (/control character/.test(err.message)) return t('errors.controlCharacter', what);
    if (/line or paragraph separator/.test(err.message)) return t('errors.separatorCharacter', what);
  }
  const keys = err.field ? [`errors.${err.code}_${err.field}`, `errors.${err.code}`] : [`errors.${err.code}`];
  for (const key of keys) {
    const text = t(key);
    if (text !== key) return text;
  }
  if (err.status >= 500 || err.status === 0) return t('errors.fallbackServer');
  return t('errors.fallback');
}

/**
 * errorBox renders an API error for a learner: a plain sentence, then one small details line
 * with the code, HTTP status, field and the gateway's own message for whoever debugs it. retry,
 * when given, is offered as a Retry button; newSession as "Start a new session" when the session
 * is gone.
 * @param {Translator} t
 * @param {CoachErrorType} err
 * @param {(() => unknown) | null} retry
 * @param {(() => void) | null} dismiss
 * @param {{newSession?: () => void}} [actions]
 * @returns {HTMLElement}
 */
export function errorBox(t, err, retry, dismiss, { newSession } = {}) {
  const details = [
    h('span', { class: 'alert-code', testid: 'error-code' }, [err.code, err.status ? `HTTP ${err.status}` : ''].filter(Boolean).join(' · ')),
    err.field ? h('span', { class: 'alert-field', testid: 'error-field' }, ` · ${t('field', err.field)}`) : null,
    err.message && err.message !== err.code ? h('span', { class: 'alert-detail', testid: 'error-message' }, ` — ${err.message}`) : null,
  ];
  const gone = err.code === 'session_not_found' && newSession;
  return h('div', { class: 'alert alert-error', role: 'alert', testid: 'turn-error', dataset: { errorCode: err.code || '' } },
    h('div', { class: 'alert-body' },
      h('p', { class: 'alert-text', testid: 'error-text' }, friendlyError(t, err)),
      h('p', { class: 'alert-details' }, h('span', { class: 'sr-only' }, `${t('details')}: `), details)),
    h('div', { class: 'alert-actions' },
      gone ? h('button', { type: 'button', class: 'btn btn-small btn-primary', testid: 'start-new-session', onclick: () => newSession() }, t('startNewSession')) : null,
      retry && !gone ? h('button', { type: 'button', class: 'btn btn-small btn-primary', testid: 'retry-button', onclick: () => retry() }, t('retry')) : null,
      dismiss ? h('button', { type: 'button', class: 'btn btn-small btn-ghost', onclick: () => dismiss() }, t('dismiss')) : null));
}

let uidCount = 0;

/**
 * uid returns an element id unique in the page.
 * @param {string} prefix
 */
export function uid(prefix) {
  uidCount += 1;
  return `${prefix}-${uidCount}`;
}

/**
 * composer returns the free-text box: Enter sends, Shift+Enter breaks the line, as the hint under
 * the box says (and aria-describedby tells screen readers). onSend gets the trimmed text and
 * returns a promise of whether it was sent; when it was not, the text goes back into the box
 * (unless the learner has typed something new meanwhile). limit is the
 * gateway's message limit: a counter shows near it, and Send is off while the text is longer
 * (nothing is cut). draftKey, when given, keeps the unsent text in this tab's sessionStorage so
 * that a reload or a return to the session finds it again (see storeDraft).
 * @param {Translator} t
 * @param {(text: string) => Promise<boolean>} onSend
 * @param {{placeholder?: string, limit?: number, draftKey?: string}} [options]
 */
export function composer(t, onSend, { placeholder = '', limit = 8000, draftKey = '' } = {}) {
  const hintId = uid('composer-hint');
  const noteId = uid('composer-note');
  const input = h('textarea', { class: 'composer-input', testid: 'composer-input', dir: 'auto', rows: 1, placeholder, 'aria-label': t('composerLabel'), 'aria-describedby': `${hintId} ${noteId}` });
  const button = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'composer-send', disabled: true }, t('send'));
  const fit = autosize(input);
  let locked = false;
  const sync = () => {
    button.disabled = locked || input.value.trim() === '' || count.over();
  };
  const count = limitCounter(t, input, limit, { onChange: sync });
  count.note.id = noteId;
  const saveDraft = () => storeDraft(draftKey, input.value);
  /** @param {string} text */
  const setText = (text) => {
    input.value = text;
    fit();
    count.update();
    saveDraft();
  };
  const submit = async () => {
    const text = input.value.trim();
    if (!text || locked || count.over()) return;
    // The box empties at once, but the kept copy goes only once the gateway took the turn (see
    // sent): a reload before that finds the text again.
    input.value = '';
    fit();
    count.update();
    const sent = await onSend(text);
    if (sent === false && input.value === '') setText(text);
    else if (input.value === '') saveDraft();
  };
  // sent drops the kept copy of a message the gateway took: the turn runs to its end on the
  // gateway (v1.2), so a reload resumes it rather than finding the text in the box again.
  const sent = () => {
    if (input.value === '') saveDraft();
  };
  input.addEventListener('input', saveDraft);
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  const el = h('form', { class: 'composer', testid: 'composer', dataset: { sticky: 'bottom' }, onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); submit(); } },
    input, button,
    h('div', { class: 'composer-meta' }, h('p', { class: 'composer-hint', id: hintId, testid: 'composer-hint' }, t('composerHint')), count.counter),
    count.note, count.live);
  const saved = loadDraft(draftKey);
  if (saved) setText(saved);
  return {
    el,
    input,
    /** setLocked blocks sending (while a turn streams) but lets the learner type ahead. */
    /** @param {boolean} v */
    setLocked(v) {
      locked = v;
      sync();
    },
    /** setDisabled turns the box off altogether (a finished session). */
    /** @param {boolean} v */
    setDisabled(v) {
      input.disabled = v;
      locked = v;
      sync();
    },
    /** setText puts text in the box, as if typed. */
    setText,
    /** submit sends what is in the box, as the Send button does. */
    submit,
    /** sent forgets the kept copy of the message just sent, once the gateway took its turn. */
    sent,
    focus() {
      if (!input.disabled) input.focus({ preventScroll: true });
    },
  };
}

// Text not sent yet is kept in sessionStorage, which lives as long as the tab: never in
// localStorage, where it would outlast the tab on what may be a shared computer. It goes once sent.
const DRAFT_STORAGE = 'coachgw.draft.';

/**
 * loadDraft returns the unsent text kept under key, or "".
 * @param {string} key
 */
export function loadDraft(key) {
  if (!key) return '';
  try {
    return sessionStorage.getItem(DRAFT_STORAGE + key) || '';
  } catch {
    return '';
  }
}

/**
 * storeDraft keeps text under key ("" forgets it).
 * @param {string} key
 * @param {string} text
 */
export function storeDraft(key, text) {
  if (!key) return;
  try {
    if (text.trim()) sessionStorage.setItem(DRAFT_STORAGE + key, text);
    else sessionStorage.removeItem(DRAFT_STORAGE + key);
  } catch {
    // Storage is off or full: the text stays in the box, it just does not survive a reload.
  }
}

/**
 * forgetDrafts drops every unsent text kept for session id.
 * @param {string} id
 */
export function forgetDrafts(id) {
  try {
    for (let i = sessionStorage.length - 1; i >= 0; i--) {
      const k = sessionStorage.key(i);
      if (k && k.startsWith(`${DRAFT_STORAGE}${id}`)) sessionStorage.removeItem(k);
    }
  } catch {
    // Nothing kept.
  }
}

/**
 * forgetStoredDrafts drops the unsent texts an earlier version of the panel kept in localStorage,
 * where they outlast the tab.
 */
export function forgetStoredDrafts() {
  try {
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const k = localStorage.key(i);
      if (k && k.startsWith(DRAFT_STORAGE)) localStorage.removeItem(k);
    }
  } catch {
    // Nothing kept.
  }
}

/**
 * bubble renders one chat message; content is a node or text.
 * @param {string} role
 * @param {string} label
 * @param {import('./dom.js').Child} content
 * @param {{class?: string, testid?: string}} [extra]
 */
export function bubble(role, label, content, extra = {}) {
  return h('article', { class: `msg msg-${role}${extra.class ? ` ${extra.class}` : ''}`, testid: extra.testid || `msg-${role}` },
    h('header', { class: 'msg-who' }, label),
    h('div', { class: 'msg-body', dir: 'auto' }, content));
}
