// Vue bindings (@coachgw/client/vue): composables over the client's turn and session state.
// Vue is a peer dependency of this entry point only; the core of the package needs nothing.

import { getCurrentInstance, getCurrentScope, onMounted, onScopeDispose, ref, shallowRef, toValue } from 'vue';

import { CoachChatHolder } from './ai.js';
import { SessionRunner, TurnRunner } from './state.js';

/** @typedef {import('./client.js').CoachClient} CoachClient */
/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./types.js').CreateSessionRequest} CreateSessionRequest */
/** @typedef {import('./types.js').ToulminStep} ToulminStep */
/** @typedef {import('./errors.js').CoachError} CoachError */
/** @typedef {import('./state.js').TurnStatus} TurnStatus */
/** @typedef {import('./state.js').SessionStatus} SessionStatus */
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
 * @template T
 * @typedef {import('vue').Ref<T>} Ref
 */
/**
 * @template T
 * @typedef {import('vue').MaybeRefOrGetter<T>} MaybeRefOrGetter
 */

/**
 * What useCoachTurn returns: refs that follow the turn, and the functions that drive it.
 * @template [R=TurnResult]
 * @typedef {object} CoachTurn
 * @property {Readonly<Ref<string>>} text the visible text so far (resets applied)
 * @property {Readonly<Ref<string[]>>} blocks module turns: the visible text of each text block
 * @property {Readonly<Ref<string[]>>} blockTypes module turns: each block's type
 * @property {Readonly<Ref<import('./types.js').FrontendCard[]>>} cards cards sent besides the result
 * @property {Readonly<Ref<import('./types.js').SafetyEvent | null>>} safety a crisis turn's
 *   message and crisis resources (v1.3), to show prominently; null for every other turn
 * @property {Readonly<Ref<ResultEvent<R> | null>>} result the result event once the turn is done
 * @property {Readonly<Ref<TurnStatus>>} status
 * @property {Readonly<Ref<CoachError | null>>} error
 * @property {(body: TurnRequest) => Promise<ResultEvent<R> | null>} send takes a turn; resolves
 *   with its result, or null when it failed, was aborted, or another turn was running
 * @property {() => void} abort stops reading the turn in flight (see TurnRunner.abort)
 * @property {() => Promise<boolean>} stop stops the session's running turn on the gateway
 * @property {() => Promise<ResultEvent<R> | null>} resume follows the session's running turn
 * @property {Readonly<Ref<string>>} turn the turn's id ("" before its stream starts)
 */

/**
 * useCoachTurn runs the turns of a session and keeps refs of what the learner should see. When
 * the calling component mounts with a session id, it follows the session's running turn, if any
 * (a page reloaded mid-answer shows the answer go on), unless `options.resume` is false. The
 * turn in flight is no longer read when the component (or effect scope) goes away.
 * @template [R=TurnResult]
 * @param {CoachClient} client
 * @param {MaybeRefOrGetter<string>} sessionId read when a turn is sent
 * @param {TurnOptions<R>} [options]
 * @returns {CoachTurn<R>}
 */
export function useCoachTurn(client, sessionId, options) {
  const text = ref('');
  /** @type {Ref<string[]>} */
  const blocks = shallowRef([]);
  /** @type {Ref<string[]>} */
  const blockTypes = shallowRef([]);
  /** @type {Ref<import('./types.js').FrontendCard[]>} */
  const cards = shallowRef([]);
  /** @type {Ref<import('./types.js').SafetyEvent | null>} */
  const safety = shallowRef(null);
  /** @type {Ref<ResultEvent<R> | null>} */
  const result = shallowRef(null);
  /** @type {Ref<TurnStatus>} */
  const status = ref('idle');
  /** @type {Ref<CoachError | null>} */
  const error = shallowRef(null);
  const turn = ref('');
  /** @type {TurnRunner<R>} */
  const runner = new TurnRunner(client, (s) => {
    text.value = s.text;
    blocks.value = s.blocks;
    blockTypes.value = s.blockTypes;
    cards.value = s.cards;
    safety.value = s.safety;
    result.value = s.result;
    status.value = s.status;
    error.value = s.error;
    turn.value = s.turn;
  }, options);
  if (getCurrentScope()) onScopeDispose(() => runner.abort());
  if (options?.resume !== false && getCurrentInstance()) onMounted(() => void runner.resume(toValue(sessionId)));
  return {
    text,
    blocks,
    blockTypes,
    cards,
    safety,
    result,
    status,
    error,
    turn,
    send: (body) => runner.send(toValue(sessionId), body),
    abort: () => runner.abort(),
    stop: () => runner.stop(toValue(sessionId)),
    resume: () => runner.resume(toValue(sessionId)),
  };
}

/**
 * What useCoachSession returns: refs of the session, the calls that change it, and the turn
 * composable of that session (whose results update the session).
 * @template [S=Record<string, unknown>]
 * @template [R=TurnResult]
 * @typedef {object} CoachSession
 * @property {Readonly<Ref<Session<S> | null>>} session
 * @property {Readonly<Ref<SessionStatus>>} status
 * @property {Readonly<Ref<CoachError | null>>} error
 * @property {(body: CreateSessionRequest) => Promise<Session<S> | null>} create
 * @property {(id: string) => Promise<Session<S> | null>} load
 * @property {() => Promise<Session<S> | null>} refresh
 * @property {(field: ToulminStep, value: string) => Promise<Session<S> | null>} setDraft
 * @property {(action: 'accept' | 'reject') => Promise<Session<S> | null>} decideProposal
 * @property {() => Promise<boolean>} remove deletes the session; resolves whether it was deleted
 * @property {CoachTurn<R>} turn the session's turns
 */

/**
 * useCoachSession holds one session: create or load it, change its draft or proposal, delete
 * it, and take its turns through `turn`; every turn's result line updates `session`. A loaded
 * session's running turn is followed (unless `options.resume` is false).
 * @template [S=Record<string, unknown>]
 * @template [R=TurnResult]
 * @param {CoachClient} client
 * @param {TurnOptions<R>} [options] for the session's turns
 * @returns {CoachSession<S, R>}
 */
export function useCoachSession(client, options = {}) {
  /** @type {Ref<Session<S> | null>} */
  const session = shallowRef(null);
  /** @type {Ref<SessionStatus>} */
  const status = ref('idle');
  /** @type {Ref<CoachError | null>} */
  const error = shallowRef(null);
  /** @type {SessionRunner<S>} */
  const runner = new SessionRunner(client, (s) => {
    session.value = s.session;
    status.value = s.status;
    error.value = s.error;
  });
  /** @type {CoachTurn<R>} */
  const turn = useCoachTurn(client, () => runner.id, {
    ...options,
    // No session at mount: load() resumes instead.
    resume: false,
    onResult: (ev) => {
      runner.hold(ev.session);
      options.onResult?.(ev);
    },
  });
  return {
    session,
    status,
    error,
    create: (body) => runner.create(body),
    load: async (id) => {
      const s = await runner.load(id);
      // A session loaded (e.g. after a reload) may have a turn running: follow it.
      if (s && options.resume !== false) void turn.resume();
      return s;
    },
    refresh: () => runner.refresh(),
    setDraft: (field, value) => runner.setDraft(field, value),
    decideProposal: (action) => runner.decideProposal(action),
    remove: () => runner.remove(),
    turn,
  };
}

/** @typedef {import('./ai.js').CoachUIMessage} CoachUIMessage */
/** @typedef {import('./ai.js').CoachChatError} CoachChatError */
/** @typedef {import('./ai.js').CoachChatStatus} CoachChatStatus */
/** @typedef {import('./ai.js').OpenOptions} OpenOptions */
/**
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {import('./ai.js').UseCoachChatOptions<T>} UseCoachChatOptions
 */
/**
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {import('./ai.js').CoachChat<T>} CoachChat
 */

/**
 * What useCoachChat returns: refs of the chat of the session opened last, and what drives it.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {object} CoachChatRefs
 * @property {Readonly<Ref<T | undefined>>} chat the SDK's Chat, once a session is opened (Vue's
 *   Chat: its `messages` and `status` are reactive)
 * @property {Readonly<Ref<Session | undefined>>} session the session as of its last turn
 * @property {Readonly<Ref<CoachChatStatus>>} status
 * @property {Readonly<Ref<CoachChatError | undefined>>} error the last error as the gateway's
 *   {error, message}
 * @property {Readonly<Ref<number>>} resets the resets heard since the session was opened
 * @property {(sessionId: string, how?: OpenOptions) => Promise<CoachChat<T> | undefined>} open
 *   opens a session's chat: restored and resumed by default
 * @property {() => Promise<boolean>} stop stops the running turn, on the gateway too
 * @property {() => Promise<Session | undefined>} refresh reads the session again
 * @property {() => void} clearError
 */

/**
 * useCoachChat holds the AI SDK chat of one session at a time (createCoachChat): `open(id)`
 * restores its conversation, follows its running turn and keeps `session` current; `stop()`
 * stops a turn on the gateway too. Pass the `Chat` of `@ai-sdk/vue` and ai's `DefaultChatTransport`
 * (the package imports neither). When the component (or effect scope) goes away the chat stops
 * reading; its turn goes on and is stored.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @param {CoachClient} client
 * @param {UseCoachChatOptions<T>} options
 * @returns {CoachChatRefs<T>}
 */
export function useCoachChat(client, options) {
  /** @type {Ref<T | undefined>} */
  const chat = shallowRef();
  /** @type {Ref<Session | undefined>} */
  const session = shallowRef();
  /** @type {Ref<CoachChatStatus>} */
  const status = ref('idle');
  /** @type {Ref<CoachChatError | undefined>} */
  const error = shallowRef();
  const resets = ref(0);
  /** @type {CoachChatHolder<T>} */
  const holder = new CoachChatHolder(client, options, (s) => {
    chat.value = s.chat;
    session.value = s.session;
    status.value = s.status;
    error.value = s.error;
    resets.value = s.resets;
  });
  if (getCurrentScope()) onScopeDispose(() => holder.close());
  return {
    chat,
    session,
    status,
    error,
    resets,
    open: (id, how) => holder.open(id, how),
    stop: () => holder.stop(),
    refresh: () => holder.refresh(),
    clearError: () => holder.clearError(),
  };
}
