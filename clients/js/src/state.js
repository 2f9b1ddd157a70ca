// The state machines behind the Vue and React bindings, free of either framework: a turn (its
// visible text, cards, result, status and error as the stream goes) and a session (loading,
// changing, the session itself). Each change hands a new, immutable snapshot to a listener, which
// the bindings copy into refs (Vue) or state (React).

import { CoachError, toCoachError } from './errors.js';
import { TurnText } from './stream.js';

/** @typedef {import('./client.js').CoachClient} CoachClient */
/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./types.js').CardEvent} CardEvent */
/** @typedef {import('./types.js').SafetyEvent} SafetyEvent */
/** @typedef {import('./types.js').CreateSessionRequest} CreateSessionRequest */
/** @typedef {import('./types.js').ToulminStep} ToulminStep */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').ResultEvent<R>} ResultEvent
 */
/**
 * @template [S=Record<string, unknown>]
 * @typedef {import('./types.js').Session<S>} Session
 */

/**
 * Where a turn is: `idle` (none yet), `streaming`, `retrying` (after a reset, until new text
 * arrives), `done` (the result is in), `error` (see the error), `aborted`.
 * @typedef {'idle' | 'streaming' | 'retrying' | 'done' | 'error' | 'aborted'} TurnStatus
 */

/**
 * A turn as the learner should see it.
 * @template [R=TurnResult]
 * @typedef {object} TurnSnapshot
 * @property {string} text the visible text so far (resets applied)
 * @property {string[]} blocks module turns: the visible text of each text block
 * @property {string[]} blockTypes module turns: each block's type (paragraph, heading, …)
 * @property {CardEvent['card'][]} cards the cards sent besides the result (an injected level_up card)
 * @property {SafetyEvent | null} safety a crisis turn's safety event (v1.3): its message and
 *   crisis resources, to show prominently; null for every other turn
 * @property {ResultEvent<R> | null} result the result event, once the turn is done
 * @property {TurnStatus} status
 * @property {CoachError | null} error what failed: an HTTP error before the stream, the stream's
 *   error line (kind `turn`; `turn_cancelled` after a stop), a broken stream or no answer
 * @property {string} turn the turn's id once its stream started ("" before, or from a gateway
 *   older than v1.2)
 */

/**
 * @template [R=TurnResult]
 * @typedef {object} TurnOptions
 * @property {(result: ResultEvent<R>) => void} [onResult] called with the result event of every
 *   turn that succeeds
 * @property {boolean} [resume] the bindings: follow the session's running turn on mount (and
 *   after useCoachSession's load), through GET …/turns/current (default true)
 */

/**
 * @template R
 * @returns {TurnSnapshot<R>}
 */
function idleTurn() {
  return { text: '', blocks: [], blockTypes: [], cards: [], safety: null, result: null, status: 'idle', error: null, turn: '' };
}

/**
 * TurnRunner runs the turns of one session, one at a time, and reports every change.
 * @template [R=TurnResult]
 */
export class TurnRunner {
  /**
   * @param {CoachClient} client
   * @param {(snapshot: TurnSnapshot<R>) => void} onChange
   * @param {TurnOptions<R>} [options]
   */
  constructor(client, onChange, options = {}) {
    this.client = client;
    this.onChange = onChange;
    this.options = options;
    /** @type {TurnSnapshot<R>} */
    this.snapshot = idleTurn();
    /** @type {AbortController | null} */
    this.controller = null;
  }

  /** busy says whether a turn is running. */
  get busy() {
    return this.controller !== null;
  }

  /**
   * send takes a turn of session sessionId and resolves with its result event, or null when it
   * failed or was aborted (the snapshot says which). While a turn runs, send does nothing and
   * resolves null.
   * @param {string} sessionId
   * @param {TurnRequest} body
   * @returns {Promise<ResultEvent<R> | null>}
   */
  send(sessionId, body) {
    return this.follow((options) => this.client.streamTurn(sessionId, body, options), true);
  }

  /**
   * resume follows the session's running turn from its first line (GET …/turns/current, v1.2),
   * as send follows a turn it sent, e.g. when a page that was reloaded mid-answer mounts. It
   * resolves null at once, the snapshot left as it was, when the session has no running or just
   * ended turn (204), when a turn is running here already, or when the gateway has no such route.
   * @param {string} sessionId
   * @returns {Promise<ResultEvent<R> | null>}
   */
  async resume(sessionId) {
    if (this.controller || !sessionId) return null;
    const before = this.snapshot;
    let started = false;
    const result = await this.follow((options) => {
      const events = this.client.resumeTurn(sessionId, { after: 0 }, { ...options, onTurn: (turn) => { started = true; options.onTurn(turn); } });
      return events;
    }, false);
    // Nothing to resume (204), or a gateway without the route (404/405): as if resume was never called.
    if (!started && (this.snapshot.status === 'idle' || this.snapshot.error?.kind === 'http')) this.set(before);
    return result;
  }

  /**
   * follow reads the events of a turn's stream and keeps the snapshot.
   * @param {(options: { signal: AbortSignal, onTurn: (turn: string) => void }) => AsyncIterable<import('./types.js').TurnEvent<unknown>>} open
   * @param {boolean} streaming whether the turn shows as streaming before its first line
   * @returns {Promise<ResultEvent<R> | null>}
   */
  async follow(open, streaming) {
    if (this.controller) return null;
    const controller = new AbortController();
    this.controller = controller;
    const text = new TurnText();
    /** @type {CardEvent['card'][]} */
    let cards = [];
    if (streaming) this.set({ ...idleTurn(), status: 'streaming' });
    const onTurn = (/** @type {string} */ turn) => this.set({ ...(streaming ? this.snapshot : idleTurn()), status: 'streaming', turn });
    try {
      for await (const ev of open({ signal: controller.signal, onTurn })) {
        text.apply(ev);
        const visible = { text: text.text, blocks: [...text.blocks], blockTypes: [...text.blockTypes] };
        switch (ev.type) {
          case 'delta':
            this.set({ ...this.snapshot, ...visible, status: 'streaming' });
            break;
          case 'reset':
            this.set({ ...this.snapshot, ...visible, status: 'retrying' });
            break;
          case 'card':
            cards = [...cards, ev.card];
            this.set({ ...this.snapshot, cards });
            break;
          case 'safety':
            this.set({ ...this.snapshot, safety: ev });
            break;
          case 'result': {
            const result = /** @type {ResultEvent<R>} */ (ev);
            this.set({ ...this.snapshot, ...visible, result, status: 'done' });
            this.options.onResult?.(result);
            return result;
          }
          case 'error':
            this.set({ ...this.snapshot, status: 'error', error: new CoachError('turn', ev.error, ev.message) });
            return null;
          default:
        }
      }
      return null;
    } catch (err) {
      if (controller.signal.aborted) {
        this.set({ ...this.snapshot, status: 'aborted' });
      } else {
        this.set({ ...this.snapshot, status: 'error', error: toCoachError(err) });
      }
      return null;
    } finally {
      if (this.controller === controller) this.controller = null;
    }
  }

  /**
   * abort stops reading the turn in flight, if any. A gateway older than v1.2 (or one with
   * COACH_TURN_ON_DISCONNECT=cancel) then stops the turn and stores nothing of it; a v1.2 gateway
   * lets it run to its end: stop it with stop().
   */
  abort() {
    this.controller?.abort();
  }

  /**
   * stop stops the session's running turn on the gateway (DELETE …/turns/current, v1.2): nothing
   * is stored and the stream being read ends with the error `turn_cancelled`. Resolves whether a
   * turn was running; a failure shows in the snapshot's error.
   * @param {string} sessionId
   * @returns {Promise<boolean>}
   */
  async stop(sessionId) {
    try {
      return await this.client.stopTurn(sessionId);
    } catch (err) {
      this.set({ ...this.snapshot, error: toCoachError(err) });
      return false;
    }
  }

  /** @param {TurnSnapshot<R>} snapshot */
  set(snapshot) {
    this.snapshot = snapshot;
    this.onChange(snapshot);
  }
}

/**
 * Where a session is: `idle` (none yet, or deleted), `loading` (a call is under way), `ready`,
 * `error` (the last call failed; the session, if any, is as it was).
 * @typedef {'idle' | 'loading' | 'ready' | 'error'} SessionStatus
 */

/**
 * @template [S=Record<string, unknown>]
 * @typedef {object} SessionSnapshot
 * @property {Session<S> | null} session
 * @property {SessionStatus} status
 * @property {CoachError | null} error
 */

/**
 * SessionRunner holds one session and runs the calls that change it, reporting every change.
 * Each call resolves with the session after it, or null when it failed (the snapshot's error
 * says why).
 * @template [S=Record<string, unknown>]
 */
export class SessionRunner {
  /**
   * @param {CoachClient} client
   * @param {(snapshot: SessionSnapshot<S>) => void} onChange
   */
  constructor(client, onChange) {
    this.client = client;
    this.onChange = onChange;
    /** @type {SessionSnapshot<S>} */
    this.snapshot = { session: null, status: 'idle', error: null };
  }

  /** The current session's id, or "". */
  get id() {
    return this.snapshot.session?.id ?? '';
  }

  /**
   * create starts a new session and holds it.
   * @param {CreateSessionRequest} body
   */
  create(body) {
    return this.run(() => this.client.createSession(body));
  }

  /**
   * load reads session id and holds it.
   * @param {string} id
   */
  load(id) {
    return this.run(() => this.client.getSession(id));
  }

  /** refresh reads the held session again. */
  refresh() {
    return this.run(() => this.client.getSession(this.id));
  }

  /**
   * setDraft sets the draft of a step of the held toulmin session.
   * @param {ToulminStep} field
   * @param {string} value
   */
  setDraft(field, value) {
    return this.run(() => this.client.setDraft(this.id, field, value));
  }

  /**
   * decideProposal accepts or rejects the held toulmin session's pending proposal.
   * @param {'accept' | 'reject'} action
   */
  decideProposal(action) {
    return this.run(() => this.client.decideProposal(this.id, action));
  }

  /**
   * remove deletes the held session and lets go of it.
   * @returns {Promise<boolean>} whether it was deleted
   */
  async remove() {
    await this.run(async () => {
      await this.client.deleteSession(this.id);
      return null;
    });
    return this.snapshot.status === 'idle';
  }

  /**
   * hold sets the held session, e.g. the session a turn's result line carries.
   * @param {Session<S> | Session} session
   */
  hold(session) {
    this.set({ session: /** @type {Session<S>} */ (session), status: 'ready', error: null });
  }

  /**
   * @param {() => Promise<Session<S> | Session | null>} call
   * @returns {Promise<Session<S> | null>}
   */
  async run(call) {
    this.set({ ...this.snapshot, status: 'loading', error: null });
    try {
      const session = /** @type {Session<S> | null} */ (await call());
      this.set({ session, status: session ? 'ready' : 'idle', error: null });
      return session;
    } catch (err) {
      this.set({ ...this.snapshot, status: 'error', error: toCoachError(err) });
      return null;
    }
  }

  /** @param {SessionSnapshot<S>} snapshot */
  set(snapshot) {
    this.snapshot = snapshot;
    this.onChange(snapshot);
  }
}
