// React bindings (@coachgw/client/react): hooks over the client's turn and session state, with
// the same shape as the Vue composables. React is a peer dependency of this entry point only;
// the core of the package needs nothing.

import { useCallback, useEffect, useMemo, useRef, useState } from 'react';

import { CoachChatHolder } from './ai.js';
import { SessionRunner, TurnRunner } from './state.js';

/** @typedef {import('./client.js').CoachClient} CoachClient */
/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').TurnResult} TurnResult */
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
 * @template [R=TurnResult]
 * @typedef {import('./state.js').TurnOptions<R>} TurnOptions
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./state.js').TurnSnapshot<R>} TurnSnapshot
 */
/**
 * @template [S=Record<string, unknown>]
 * @typedef {import('./state.js').SessionSnapshot<S>} SessionSnapshot
 */

/**
 * The latest mount of each runner's component, so that an unmount can tell whether a new mount
 * followed it.
 * @type {WeakMap<object, object>}
 */
const mounts = new WeakMap();

/**
 * What useCoachTurn returns: the turn as the learner should see it (text, blocks, blockTypes,
 * cards, safety, result, status, error), and the functions that drive it.
 * @template [R=TurnResult]
 * @typedef {TurnSnapshot<R> & {
 *   send: (body: TurnRequest) => Promise<ResultEvent<R> | null>,
 *   abort: () => void,
 *   stop: () => Promise<boolean>,
 *   resume: () => Promise<ResultEvent<R> | null>,
 * }} CoachTurn
 */

/**
 * useCoachTurn runs the turns of a session and re-renders as the turn streams. send resolves
 * with the turn's result event, or null when it failed, was aborted, or another turn was
 * running. On mount with a session id it follows the session's running turn, if any (a page
 * reloaded mid-answer shows the answer go on), unless `options.resume` is false. The turn in
 * flight is no longer read when the component unmounts.
 * @template [R=TurnResult]
 * @param {CoachClient} client
 * @param {string | (() => string)} sessionId the session, or a function that returns it when a
 *   turn is sent
 * @param {TurnOptions<R>} [options]
 * @returns {CoachTurn<R>}
 */
export function useCoachTurn(client, sessionId, options) {
  // The latest options, read when a result arrives, so that a new callback every render does
  // not make a new runner.
  const latest = useRef(options);
  latest.current = options;
  /** @type {TurnRunner<R>} */
  const runner = useMemo(() => new TurnRunner(client, (s) => setSnapshot(s), { onResult: (ev) => latest.current?.onResult?.(ev) }), [client]);
  const [snapshot, setSnapshot] = useState(runner.snapshot);
  const id = () => (typeof sessionId === 'function' ? sessionId() : sessionId);
  useEffect(() => {
    const mount = {};
    mounts.set(runner, mount);
    // A second mount under StrictMode finds the first one's resume running: resume does nothing.
    if (latest.current?.resume !== false) void runner.resume(id());
    // StrictMode unmounts and mounts again at once, in one flush; only a real unmount, after
    // which no new mount follows, aborts the turn in flight.
    return () => queueMicrotask(() => {
      if (mounts.get(runner) === mount) runner.abort();
    });
  }, [runner]);
  const send = useCallback(
    (/** @type {TurnRequest} */ body) => runner.send(typeof sessionId === 'function' ? sessionId() : sessionId, body),
    [runner, sessionId],
  );
  const abort = useCallback(() => runner.abort(), [runner]);
  const stop = useCallback(() => runner.stop(typeof sessionId === 'function' ? sessionId() : sessionId), [runner, sessionId]);
  const resume = useCallback(() => runner.resume(typeof sessionId === 'function' ? sessionId() : sessionId), [runner, sessionId]);
  return { ...snapshot, send, abort, stop, resume };
}

/**
 * What useCoachSession returns: the session, its status and error, the calls that change it,
 * and the turn hook of that session (whose results update the session).
 * @template [S=Record<string, unknown>]
 * @template [R=TurnResult]
 * @typedef {SessionSnapshot<S> & {
 *   create: (body: CreateSessionRequest) => Promise<Session<S> | null>,
 *   load: (id: string) => Promise<Session<S> | null>,
 *   refresh: () => Promise<Session<S> | null>,
 *   setDraft: (field: ToulminStep, value: string) => Promise<Session<S> | null>,
 *   decideProposal: (action: 'accept' | 'reject') => Promise<Session<S> | null>,
 *   remove: () => Promise<boolean>,
 *   turn: CoachTurn<R>,
 * }} CoachSession
 */

/**
 * useCoachSession holds one session: create or load it, change its draft or proposal, delete
 * it, and take its turns through `turn`; every turn's result line updates `session`.
 * @template [S=Record<string, unknown>]
 * @template [R=TurnResult]
 * @param {CoachClient} client
 * @param {TurnOptions<R>} [options] for the session's turns
 * @returns {CoachSession<S, R>}
 */
export function useCoachSession(client, options) {
  /** @type {SessionRunner<S>} */
  const runner = useMemo(() => new SessionRunner(client, (s) => setSnapshot(s)), [client]);
  const [snapshot, setSnapshot] = useState(runner.snapshot);
  const latest = useRef(options);
  latest.current = options;
  // The id is read when a turn is sent, so a turn sent right after create() finds its session.
  const id = useCallback(() => runner.id, [runner]);
  /** @type {CoachTurn<R>} */
  const turn = useCoachTurn(client, id, {
    // No session at mount: load() resumes instead.
    resume: false,
    onResult: (ev) => {
      runner.hold(ev.session);
      latest.current?.onResult?.(ev);
    },
  });
  const calls = useMemo(() => ({
    create: (/** @type {CreateSessionRequest} */ body) => runner.create(body),
    load: async (/** @type {string} */ id) => {
      const s = await runner.load(id);
      // A session loaded (e.g. after a reload) may have a turn running: follow it.
      if (s && latest.current?.resume !== false) void turn.resume();
      return s;
    },
    refresh: () => runner.refresh(),
    setDraft: (/** @type {ToulminStep} */ field, /** @type {string} */ value) => runner.setDraft(field, value),
    decideProposal: (/** @type {'accept' | 'reject'} */ action) => runner.decideProposal(action),
    remove: () => runner.remove(),
  }), [runner]);
  return { ...snapshot, ...calls, turn };
}

/** @typedef {import('./ai.js').CoachUIMessage} CoachUIMessage */
/** @typedef {import('./ai.js').OpenOptions} OpenOptions */
/**
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {import('./ai.js').UseCoachChatOptions<T>} UseCoachChatOptions
 */
/**
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {import('./ai.js').CoachChatSnapshot<T>} CoachChatSnapshot
 */
/**
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {import('./ai.js').CoachChat<T>} CoachChat
 */

/**
 * What useCoachChat returns: the chat of the session opened last (chat, session, status, error,
 * resets), and what drives it.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {CoachChatSnapshot<T> & {
 *   open: (sessionId: string, how?: OpenOptions) => Promise<CoachChat<T> | undefined>,
 *   stop: () => Promise<boolean>,
 *   refresh: () => Promise<Session | undefined>,
 *   clearError: () => void,
 * }} CoachChatState
 */

/**
 * useCoachChat holds the AI SDK chat of one session at a time (createCoachChat): `open(id)`
 * restores its conversation, follows its running turn and keeps `session` current; `stop()`
 * stops a turn on the gateway too. Pass the `Chat` of `@ai-sdk/react` and ai's `DefaultChatTransport`
 * (the package imports neither), and render the messages with `useChat({ chat })` in a component
 * mounted once `chat` is there. When the component unmounts the chat stops reading; its turn
 * goes on and is stored.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @param {CoachClient} client
 * @param {UseCoachChatOptions<T>} options read when a session is opened
 * @returns {CoachChatState<T>}
 */
export function useCoachChat(client, options) {
  const latest = useRef(options);
  latest.current = options;
  /** @type {CoachChatHolder<T>} */
  const holder = useMemo(
    () =>
      new CoachChatHolder(
        client,
        {
          ...latest.current,
          onReset: (r) => latest.current.onReset?.(r),
          onError: (e) => latest.current.onError?.(e),
          onSession: (s) => latest.current.onSession?.(s),
        },
        (s) => setSnapshot(s),
      ),
    [client],
  );
  const [snapshot, setSnapshot] = useState(holder.snapshot);
  useEffect(() => () => holder.close(), [holder]);
  const open = useCallback((/** @type {string} */ id, /** @type {OpenOptions | undefined} */ how) => holder.open(id, how), [holder]);
  const stop = useCallback(() => holder.stop(), [holder]);
  const refresh = useCallback(() => holder.refresh(), [holder]);
  const clearError = useCallback(() => holder.clearError(), [holder]);
  return { ...snapshot, open, stop, refresh, clearError };
}
