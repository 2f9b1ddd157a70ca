export type CoachClient = import('./client.js').CoachClient;
export type TurnRequest = import('./types.js').TurnRequest;
export type TurnResult = import('./types.js').TurnResult;
export type CreateSessionRequest = import('./types.js').CreateSessionRequest;
export type ToulminStep = import('./types.js').ToulminStep;
export type ResultEvent<R = TurnResult> = import('./types.js').ResultEvent<R>;
export type Session<S = Record<string, unknown>> = import('./types.js').Session<S>;
export type TurnOptions<R = TurnResult> = import('./state.js').TurnOptions<R>;
export type TurnSnapshot<R = TurnResult> = import('./state.js').TurnSnapshot<R>;
export type SessionSnapshot<S = Record<string, unknown>> = import('./state.js').SessionSnapshot<S>;
export type CoachTurn<R = TurnResult> = TurnSnapshot<R> & {
    send: (body: TurnRequest) => Promise<ResultEvent<R> | null>;
    abort: () => void;
    stop: () => Promise<boolean>;
    resume: () => Promise<ResultEvent<R> | null>;
};
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
export declare function useCoachTurn<R = TurnResult>(client: CoachClient, sessionId: string | (() => string), options?: TurnOptions<R>): CoachTurn<R>;
export type CoachSession<S = Record<string, unknown>, R = TurnResult> = SessionSnapshot<S> & {
    create: (body: CreateSessionRequest) => Promise<Session<S> | null>;
    load: (id: string) => Promise<Session<S> | null>;
    refresh: () => Promise<Session<S> | null>;
    setDraft: (field: ToulminStep, value: string) => Promise<Session<S> | null>;
    decideProposal: (action: 'accept' | 'reject') => Promise<Session<S> | null>;
    remove: () => Promise<boolean>;
    turn: CoachTurn<R>;
};
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
export declare function useCoachSession<S = Record<string, unknown>, R = TurnResult>(client: CoachClient, options?: TurnOptions<R>): CoachSession<S, R>;
export type CoachUIMessage = import('./ai.js').CoachUIMessage;
export type OpenOptions = import('./ai.js').OpenOptions;
export type UseCoachChatOptions<T extends import('ai').AbstractChat<CoachUIMessage>> = import('./ai.js').UseCoachChatOptions<T>;
export type CoachChatSnapshot<T extends import('ai').AbstractChat<CoachUIMessage>> = import('./ai.js').CoachChatSnapshot<T>;
export type CoachChat<T extends import('ai').AbstractChat<CoachUIMessage>> = import('./ai.js').CoachChat<T>;
export type CoachChatState<T extends import('ai').AbstractChat<CoachUIMessage>> = CoachChatSnapshot<T> & {
    open: (sessionId: string, how?: OpenOptions) => Promise<CoachChat<T> | undefined>;
    stop: () => Promise<boolean>;
    refresh: () => Promise<Session | undefined>;
    clearError: () => void;
};
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
export declare function useCoachChat<T extends import('ai').AbstractChat<CoachUIMessage>>(client: CoachClient, options: UseCoachChatOptions<T>): CoachChatState<T>;
