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
