export type CoachClient = import('./client.js').CoachClient;
export type TurnRequest = import('./types.js').TurnRequest;
export type TurnResult = import('./types.js').TurnResult;
export type CreateSessionRequest = import('./types.js').CreateSessionRequest;
export type ToulminStep = import('./types.js').ToulminStep;
export type CoachError = import('./errors.js').CoachError;
export type TurnStatus = import('./state.js').TurnStatus;
export type SessionStatus = import('./state.js').SessionStatus;
export type ResultEvent<R = TurnResult> = import('./types.js').ResultEvent<R>;
export type Session<S = Record<string, unknown>> = import('./types.js').Session<S>;
export type TurnOptions<R = TurnResult> = import('./state.js').TurnOptions<R>;
export type Ref<T> = import('vue').Ref<T>;
export type MaybeRefOrGetter<T> = import('vue').MaybeRefOrGetter<T>;
export type CoachTurn<R = TurnResult> = {
    /**
     * the visible text so far (resets applied)
     */
    text: Readonly<Ref<string>>;
    /**
     * module turns: the visible text of each text block
     */
    blocks: Readonly<Ref<string[]>>;
    /**
     * module turns: each block's type
     */
    blockTypes: Readonly<Ref<string[]>>;
    /**
     * cards sent besides the result
     */
    cards: Readonly<Ref<import('./types.js').FrontendCard[]>>;
    /**
     * a crisis turn's
     * message and crisis resources (v1.3), to show prominently; null for every other turn
     */
    safety: Readonly<Ref<import('./types.js').SafetyEvent | null>>;
    /**
     * the result event once the turn is done
     */
    result: Readonly<Ref<ResultEvent<R> | null>>;
    status: Readonly<Ref<TurnStatus>>;
    error: Readonly<Ref<CoachError | null>>;
    /**
     * takes a turn; resolves
     * with its result, or null when it failed, was aborted, or another turn was running
     */
    send: (body: TurnRequest) => Promise<ResultEvent<R> | null>;
    /**
     * stops reading the turn in flight (see TurnRunner.abort)
     */
    abort: () => void;
    /**
     * stops the session's running turn on the gateway
     */
    stop: () => Promise<boolean>;
    /**
     * follows the session's running turn
     */
    resume: () => Promise<ResultEvent<R> | null>;
    /**
     * the turn's id ("" before its stream starts)
     */
    turn: Readonly<Ref<string>>;
};
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
export declare function useCoachTurn<R = TurnResult>(client: CoachClient, sessionId: MaybeRefOrGetter<string>, options?: TurnOptions<R>): CoachTurn<R>;
export type CoachSession<S = Record<string, unknown>, R = TurnResult> = {
    session: Readonly<Ref<Session<S> | null>>;
    status: Readonly<Ref<SessionStatus>>;
    error: Readonly<Ref<CoachError | null>>;
    create: (body: CreateSessionRequest) => Promise<Session<S> | null>;
    load: (id: string) => Promise<Session<S> | null>;
    refresh: () => Promise<Session<S> | null>;
    setDraft: (field: ToulminStep, value: string) => Promise<Session<S> | null>;
    decideProposal: (action: 'accept' | 'reject') => Promise<Session<S> | null>;
    /**
     * deletes the session; resolves whether it was deleted
     */
    remove: () => Promise<boolean>;
    /**
     * the session's turns
     */
    turn: CoachTurn<R>;
};
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
export declare function useCoachSession<S = Record<string, unknown>, R = TurnResult>(client: CoachClient, options?: TurnOptions<R>): CoachSession<S, R>;
export type CoachUIMessage = import('./ai.js').CoachUIMessage;
export type CoachChatError = import('./ai.js').CoachChatError;
export type CoachChatStatus = import('./ai.js').CoachChatStatus;
export type OpenOptions = import('./ai.js').OpenOptions;
export type UseCoachChatOptions<T extends import('ai').AbstractChat<CoachUIMessage>> = import('./ai.js').UseCoachChatOptions<T>;
export type CoachChat<T extends import('ai').AbstractChat<CoachUIMessage>> = import('./ai.js').CoachChat<T>;
export type CoachChatRefs<T extends import('ai').AbstractChat<CoachUIMessage>> = {
    /**
     * the SDK's Chat, once a session is opened (Vue's
     * Chat: its `messages` and `status` are reactive)
     */
    chat: Readonly<Ref<T | undefined>>;
    /**
     * the session as of its last turn
     */
    session: Readonly<Ref<Session | undefined>>;
    status: Readonly<Ref<CoachChatStatus>>;
    /**
     * the last error as the gateway's
     * {error, message}
     */
    error: Readonly<Ref<CoachChatError | undefined>>;
    /**
     * the resets heard since the session was opened
     */
    resets: Readonly<Ref<number>>;
    /**
     *   opens a session's chat: restored and resumed by default
     */
    open: (sessionId: string, how?: OpenOptions) => Promise<CoachChat<T> | undefined>;
    /**
     * stops the running turn, on the gateway too
     */
    stop: () => Promise<boolean>;
    /**
     * reads the session again
     */
    refresh: () => Promise<Session | undefined>;
    clearError: () => void;
};
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
export declare function useCoachChat<T extends import('ai').AbstractChat<CoachUIMessage>>(client: CoachClient, options: UseCoachChatOptions<T>): CoachChatRefs<T>;
