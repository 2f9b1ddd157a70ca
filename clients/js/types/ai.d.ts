export type Contract = import('./types.js').Contract;
export type Session = import('./types.js').Session;
export type Usage = import('./types.js').Usage;
export type TurnResult = import('./types.js').TurnResult;
export type FrontendCard = import('./schemas.js').FrontendCard;
export type ToulminStep = import('./schemas.js').ToulminStep;
export type ContractResults = import('./schemas.js').ContractResults;
export type SafetyNotice = import('./schemas.js').SafetyNotice;
export type ResetReason = import('./types.js').ResetReason;
export type CoachResultData<R = TurnResult> = {
    /**
     * the guarded result of the session's contract
     */
    result: R;
    /**
     * the session after the turn; absent from a restored message
     */
    session?: Session;
    fallback?: boolean;
    upstream?: string;
    usage?: Usage;
    /**
     * the turn's id (v1.2)
     */
    turn?: string;
};
export type CoachDataParts<R = TurnResult> = {
    'coach-safety': SafetyNotice;
    'coach-card': {
        card: FrontendCard;
    };
    'coach-result': CoachResultData<R>;
    'coach-reset': {
        reason: ResetReason;
    };
    'coach-error': {
        error: string;
        message: string;
        turn?: string;
    };
    'coach-select': {
        selected: string;
    };
    'coach-form': {
        id: string;
        values: Record<string, unknown>;
    };
    'coach-continue': {
        step?: ToulminStep;
    };
    'coach-decision': {
        action: 'accept' | 'reject';
    };
};
export type CoachUIMessage<C extends Contract = Contract> = import('ai').UIMessage<unknown, CoachDataParts<ContractResults[C]>>;
export type CoachChatError = {
    /**
     * the stable code: `session_not_found`, `invalid_input`,
     * `coach_validation_failed`, `turn_cancelled`, … ; `network_error` when no gateway answered
     */
    error: string;
    message: string;
    field?: string;
};
/** @typedef {import('./types.js').Contract} Contract */
/** @typedef {import('./types.js').Session} Session */
/** @typedef {import('./types.js').Usage} Usage */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./schemas.js').FrontendCard} FrontendCard */
/** @typedef {import('./schemas.js').ToulminStep} ToulminStep */
/** @typedef {import('./schemas.js').ContractResults} ContractResults */
/** @typedef {import('./schemas.js').SafetyNotice} SafetyNotice */
/** @typedef {import('./types.js').ResetReason} ResetReason */
/**
 * The data of the data-coach-result part: the NDJSON result line without its `type`. A message
 * restored from `GET …/chat/messages` has no `session` (the transcript keeps the result; `GET
 * /v1/sessions/{id}` has the session); a streamed one always has it.
 * @template [R=TurnResult]
 * @typedef {object} CoachResultData
 * @property {R} result the guarded result of the session's contract
 * @property {Session} [session] the session after the turn; absent from a restored message
 * @property {boolean} [fallback]
 * @property {string} [upstream]
 * @property {Usage} [usage]
 * @property {string} [turn] the turn's id (v1.2)
 */
/**
 * coachgw's data parts, named without their "data-" prefix as the SDK's UIMessage wants them:
 * what the chat route streams (safety, card, result, reset, error) and what a learner's message
 * may carry instead of text (select, form, continue). `coach-safety` (v1.3) is a crisis turn's
 * message and crisis resources, first in its assistant message and kept there: show it
 * prominently. `coach-decision` is only in a restored conversation (`GET …/chat/messages`): the
 * learner's decision on a toulmin proposal, made through `POST …/proposal`; a restored
 * `coach-continue` may name the step it opened (send it as `{}`).
 * @template [R=TurnResult]
 * @typedef {{ 'coach-safety': SafetyNotice, 'coach-card': { card: FrontendCard }, 'coach-result': CoachResultData<R>, 'coach-reset': { reason: ResetReason }, 'coach-error': { error: string, message: string, turn?: string }, 'coach-select': { selected: string }, 'coach-form': { id: string, values: Record<string, unknown> }, 'coach-continue': { step?: ToulminStep }, 'coach-decision': { action: 'accept' | 'reject' } }} CoachDataParts
 */
/**
 * A UI message of the chat route: the AI SDK's UIMessage with coachgw's data parts typed. C
 * narrows the result to one contract's: `CoachUIMessage<'toulmin'>`.
 * @template {Contract} [C=Contract]
 * @typedef {import('ai').UIMessage<unknown, CoachDataParts<ContractResults[C]>>} CoachUIMessage
 */
/**
 * An error as the gateway reports it: its stable code and message, and the offending input of
 * an `invalid_input`.
 * @typedef {object} CoachChatError
 * @property {string} error the stable code: `session_not_found`, `invalid_input`,
 *   `coach_validation_failed`, `turn_cancelled`, … ; `network_error` when no gateway answered
 * @property {string} message
 * @property {string} [field]
 */
/**
 * chatError turns the error the AI SDK reports (`chat.error`, `onError`'s argument) into the
 * gateway's {error, message}. The SDK passes an error answered before the stream as the raw
 * JSON body in `message`; an error line in the stream gives only its message, its code being in
 * the message's data-coach-error part: pass the chat's last message to read it from there.
 * @param {unknown} err
 * @param {{ parts: ReadonlyArray<{ type: string, data?: unknown }> }} [lastMessage]
 * @returns {CoachChatError}
 */
export declare function chatError(err: unknown, lastMessage?: {
    parts: ReadonlyArray<{
        type: string;
        data?: unknown;
    }>;
}): CoachChatError;
/**
 * chatRoutes returns the gateway's chat routes of a session (v1.2): `api` for the transport,
 * `stream` for prepareReconnectToStreamRequest (useChat's `resume: true`), `messages` to restore
 * a conversation (`{messages, next}`), and `stop` (DELETE) to stop the running turn.
 * @param {string} baseURL the gateway's base URL ("" for the page's own origin)
 * @param {string} sessionId
 */
export declare function chatRoutes(baseURL: string, sessionId: string): {
    api: string;
    stream: string;
    messages: string;
    stop: string;
};
export type CoachClient = import('./client.js').CoachClient;
export type CoachAIResult = import('./types.js').CoachAIResult;
export type StructuredResponse = import('./schemas.js').StructuredResponse;
export type CoachPart = CoachUIMessage['parts'][number];
export type CoachChatInit = import('ai').ChatInit<CoachUIMessage>;
export type CoachTransportOptions = import('ai').HttpChatTransportInitOptions<CoachUIMessage>;
/** @typedef {import('./client.js').CoachClient} CoachClient */
/** @typedef {import('./types.js').CoachAIResult} CoachAIResult */
/** @typedef {import('./schemas.js').StructuredResponse} StructuredResponse */
/** @typedef {CoachUIMessage['parts'][number]} CoachPart */
/** @typedef {import('ai').ChatInit<CoachUIMessage>} CoachChatInit */
/** @typedef {import('ai').HttpChatTransportInitOptions<CoachUIMessage>} CoachTransportOptions */
/**
 * chatTransportOptions returns the options of the AI SDK's DefaultChatTransport for a session's
 * chat: `api` is `POST …/chat`, the client's API key and headers go with every request (a key
 * given as a function is asked again each time, through the transport's resolvable headers), only the newest message is sent (the gateway
 * keeps the conversation, and a long chat would pass its body limit), and a resume reads `GET
 * …/chat/stream` (the SDK's own default, `{api}/{chatId}/stream`, is not a gateway route).
 * @param {CoachClient} client
 * @param {string} sessionId
 * @returns {CoachTransportOptions}
 */
export declare function chatTransportOptions(client: CoachClient, sessionId: string): CoachTransportOptions;
export type ChatMaker<T extends import('ai').AbstractChat<CoachUIMessage>> = (new (init: CoachChatInit) => T) | ((init: CoachChatInit) => T);
export type TransportMaker = (new (options: CoachTransportOptions) => import('ai').ChatTransport<CoachUIMessage>) | ((options: CoachTransportOptions) => import('ai').ChatTransport<CoachUIMessage>);
export type CoachChatOptions<T extends import('ai').AbstractChat<CoachUIMessage>> = {
    /**
     * the SDK's Chat class; passed in so that `ai` stays an optional
     * peer dependency and the framework's own Chat (reactive in Vue, React, Svelte) is the one made
     */
    Chat: ChatMaker<T>;
    /**
     * the SDK's DefaultChatTransport, given
     * chatTransportOptions
     */
    DefaultChatTransport: TransportMaker;
    /**
     * read the conversation so far first (`GET …/chat/messages`,
     * every page, oldest first); default true, false for a session just created
     */
    restore?: boolean;
    /**
     * follow the session's running turn, as `useChat({resume: true})`
     * does: a page reloaded mid-answer shows the same answer go on; default true
     */
    resume?: boolean;
    /**
     * messages per page of the restore (the gateway bounds it); 200
     */
    pageSize?: number;
    /**
     * the session, when the caller has it (one just created): it is
     * then not read before the first turn
     */
    session?: Session;
    /**
     * hears every reset: the gateway retries the
     * turn and the text of the attempt so far is void (the render helpers leave it out)
     */
    onReset?: (reason: ResetReason) => void;
    /**
     * hears the chat's errors as the gateway's
     * {error, message} (chatError), and a failed read of the session
     */
    onError?: (error: CoachChatError) => void;
    /**
     * hears the session after every turn, and
     * the one read at the start
     */
    onSession?: (session: Session) => void;
    /**
     * more of the SDK's Chat options (generateId, onToolCall, …)
     */
    init?: Omit<CoachChatInit, 'id' | 'messages' | 'transport' | 'onError' | 'onData' | 'onFinish'>;
};
export type CoachChat<T extends import('ai').AbstractChat<CoachUIMessage>> = {
    /**
     * the SDK's Chat: `messages`, `status`, `sendMessage`, …
     */
    chat: T;
    sessionId: string;
    /**
     * the session as of the last turn
     */
    session: () => Session | undefined;
    /**
     * settles when the resume of the running turn, if any, has
     * ended (at once without `resume`)
     */
    resumed: Promise<void>;
    /**
     * stops the running turn: the SDK stops reading, and
     * `DELETE …/turns/current` stops the turn on the gateway, which otherwise runs to its end and is
     * stored (a turn outlives its connection); false when no turn was running there
     */
    stop: () => Promise<boolean>;
    /**
     * reads the session again
     * (`GET /v1/sessions/{id}`); undefined when that failed (onError heard why)
     */
    refresh: () => Promise<Session | undefined>;
};
/**
 * The AI SDK's Chat: a class (the `Chat` of `@ai-sdk/vue`, `@ai-sdk/react` or `@ai-sdk/svelte`, or your
 * own subclass of `AbstractChat` from `ai`) or a function that makes one from its init.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {(new (init: CoachChatInit) => T) | ((init: CoachChatInit) => T)} ChatMaker
 */
/**
 * The AI SDK's DefaultChatTransport (from `ai`), or a function that makes a transport from its
 * options.
 * @typedef {(new (options: CoachTransportOptions) => import('ai').ChatTransport<CoachUIMessage>) | ((options: CoachTransportOptions) => import('ai').ChatTransport<CoachUIMessage>)} TransportMaker
 */
/**
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {object} CoachChatOptions
 * @property {ChatMaker<T>} Chat the SDK's Chat class; passed in so that `ai` stays an optional
 *   peer dependency and the framework's own Chat (reactive in Vue, React, Svelte) is the one made
 * @property {TransportMaker} DefaultChatTransport the SDK's DefaultChatTransport, given
 *   chatTransportOptions
 * @property {boolean} [restore] read the conversation so far first (`GET …/chat/messages`,
 *   every page, oldest first); default true, false for a session just created
 * @property {boolean} [resume] follow the session's running turn, as `useChat({resume: true})`
 *   does: a page reloaded mid-answer shows the same answer go on; default true
 * @property {number} [pageSize] messages per page of the restore (the gateway bounds it); 200
 * @property {Session} [session] the session, when the caller has it (one just created): it is
 *   then not read before the first turn
 * @property {(reason: ResetReason) => void} [onReset] hears every reset: the gateway retries the
 *   turn and the text of the attempt so far is void (the render helpers leave it out)
 * @property {(error: CoachChatError) => void} [onError] hears the chat's errors as the gateway's
 *   {error, message} (chatError), and a failed read of the session
 * @property {(session: Session) => void} [onSession] hears the session after every turn, and
 *   the one read at the start
 * @property {Omit<CoachChatInit, 'id' | 'messages' | 'transport' | 'onError' | 'onData' | 'onFinish'>} [init]
 *   more of the SDK's Chat options (generateId, onToolCall, …)
 */
/**
 * What createCoachChat returns: the SDK's chat of one session and what the gateway adds to it.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {object} CoachChat
 * @property {T} chat the SDK's Chat: `messages`, `status`, `sendMessage`, …
 * @property {string} sessionId
 * @property {() => Session | undefined} session the session as of the last turn
 * @property {Promise<void>} resumed settles when the resume of the running turn, if any, has
 *   ended (at once without `resume`)
 * @property {() => Promise<boolean>} stop stops the running turn: the SDK stops reading, and
 *   `DELETE …/turns/current` stops the turn on the gateway, which otherwise runs to its end and is
 *   stored (a turn outlives its connection); false when no turn was running there
 * @property {() => Promise<Session | undefined>} refresh reads the session again
 *   (`GET /v1/sessions/{id}`); undefined when that failed (onError heard why)
 */
/**
 * createCoachChat makes the AI SDK's Chat for one coachgw session, with what the gateway's chat
 * route needs around it: the conversation restored from `GET …/chat/messages` (every page), the
 * transport of chatTransportOptions, the running turn resumed (`GET …/chat/stream`), resets
 * reported (the text they discard is marked in its part's provider metadata, which
 * visibleParts and messageText read), a Stop that stops the turn on the gateway too, and the
 * session kept current after every turn: from the result's `session`, or, when the turn has
 * none (a restored or replayed answer, an error, a stop), read again.
 *
 * When a resume finishes a turn whose learner message the restored conversation lacks (a
 * gateway that stores it only with the answer), the conversation is read again, so that the
 * learner's message shows before its answer.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @param {CoachClient} client the gateway's client (base URL, API key, fetch)
 * @param {string} sessionId
 * @param {CoachChatOptions<T>} options
 * @returns {Promise<CoachChat<T>>} once the conversation is restored; the resume goes on
 *   (`resumed`)
 */
export declare function createCoachChat<T extends import('ai').AbstractChat<CoachUIMessage>>(client: CoachClient, sessionId: string, options: CoachChatOptions<T>): Promise<CoachChat<T>>;
/**
 * restoreMessages reads a session's conversation as UI messages, every page, oldest first.
 * @param {CoachClient} client
 * @param {string} sessionId
 * @param {number} pageSize
 * @returns {Promise<CoachUIMessage[]>}
 */
export declare function restoreMessages(client: CoachClient, sessionId: string, pageSize?: number): Promise<CoachUIMessage[]>;
export type TextBlock = {
    /**
     * a module turn's text block: its index in `content.text_blocks`
     */
    block?: number;
    /**
     * that block's type: `heading`, `paragraph`, `info`, …
     */
    blockType?: string;
    /**
     * a reset voided this text: do not show it
     */
    discarded?: boolean;
};
/**
 * The coachgw metadata of a text part.
 * @typedef {object} TextBlock
 * @property {number} [block] a module turn's text block: its index in `content.text_blocks`
 * @property {string} [blockType] that block's type: `heading`, `paragraph`, `info`, …
 * @property {boolean} [discarded] a reset voided this text: do not show it
 */
/**
 * textBlock reads coachgw's metadata of a text part (its provider metadata): the module block it
 * shows, and whether a reset discarded it. {} for other parts.
 * @param {CoachPart} part
 * @returns {TextBlock}
 */
export declare function textBlock(part: CoachPart): TextBlock;
/**
 * visibleParts returns the parts of a message to show: all but the text a reset discarded. It
 * reads the marks the gateway sets, so it works whatever a framework's state does with the
 * parts.
 * @param {CoachUIMessage} message
 * @returns {CoachPart[]}
 */
export declare function visibleParts(message: CoachUIMessage): CoachPart[];
/**
 * messageText returns the visible text of a message: its text parts that no reset discarded,
 * a module turn's blocks separated by a blank line.
 * @param {CoachUIMessage | undefined} message
 * @returns {string}
 */
export declare function messageText(message: CoachUIMessage | undefined): string;
export type ModuleBlock = {
    /**
     * its index in the result's `content.text_blocks`
     */
    index: number;
    /**
     * `heading`, `paragraph`, `info`, … ("paragraph" when the part says none)
     */
    type: string;
    text: string;
};
/**
 * A module turn's text block as a message shows it.
 * @typedef {object} ModuleBlock
 * @property {number} index its index in the result's `content.text_blocks`
 * @property {string} type `heading`, `paragraph`, `info`, … ("paragraph" when the part says none)
 * @property {string} text
 */
/**
 * moduleBlocks returns the visible text blocks of a module turn's message, with their types, so
 * that no app digs in provider metadata; [] for a message without text.
 * @param {CoachUIMessage | undefined} message
 * @returns {ModuleBlock[]}
 */
export declare function moduleBlocks(message: CoachUIMessage | undefined): ModuleBlock[];
/**
 * resultOf returns the data of the message's data-coach-result part: the result, and the
 * session after the turn when it was streamed (a restored answer has no session).
 * @param {CoachUIMessage | undefined} message
 * @returns {CoachResultData | undefined}
 */
export declare function resultOf(message: CoachUIMessage | undefined): CoachResultData | undefined;
/**
 * safetyOf returns a crisis turn's safety notice (data-coach-safety: its message and crisis
 * resources), to show prominently above everything else; undefined for every other message.
 * @param {CoachUIMessage | undefined} message
 * @returns {SafetyNotice | undefined}
 */
export declare function safetyOf(message: CoachUIMessage | undefined): SafetyNotice | undefined;
/**
 * cardsOf returns the cards a message carries besides its result (data-coach-card: e.g. an
 * injected level_up card), in order.
 * @param {CoachUIMessage | undefined} message
 * @returns {FrontendCard[]}
 */
export declare function cardsOf(message: CoachUIMessage | undefined): FrontendCard[];
/**
 * errorOf returns the error line of a failed turn's message (data-coach-error), if it has one.
 * @param {CoachUIMessage | undefined} message
 * @returns {{ error: string, message: string, turn?: string } | undefined}
 */
export declare function errorOf(message: CoachUIMessage | undefined): {
    error: string;
    message: string;
    turn?: string;
} | undefined;
/**
 * isToulminResult says whether result is a toulmin session's CoachAIResult.
 * @param {TurnResult} result
 * @returns {result is CoachAIResult}
 */
export declare function isToulminResult(result: TurnResult): result is CoachAIResult;
/**
 * isCardResult says whether result is a cards session's frontend card.
 * @param {TurnResult} result
 * @returns {result is FrontendCard}
 */
export declare function isCardResult(result: TurnResult): result is FrontendCard;
/**
 * isModuleResult says whether result is a module session's structured response.
 * @param {TurnResult} result
 * @returns {result is StructuredResponse}
 */
export declare function isModuleResult(result: TurnResult): result is StructuredResponse;
export type CoachChatStatus = 'idle' | 'restoring' | 'ready' | 'error';
export type CoachChatSnapshot<T extends import('ai').AbstractChat<CoachUIMessage>> = {
    /**
     * the SDK's Chat of the session, once opened
     */
    chat: T | undefined;
    /**
     * the session as of its last turn
     */
    session: Session | undefined;
    status: CoachChatStatus;
    /**
     * the last error: the restore's, a turn's (as
     * chatError reads it) or a session read's; cleared when a session is opened and by clearError
     */
    error: CoachChatError | undefined;
    /**
     * the resets heard since the session was opened
     */
    resets: number;
};
export type UseCoachChatOptions<T extends import('ai').AbstractChat<CoachUIMessage>> = Omit<CoachChatOptions<T>, 'restore' | 'resume' | 'session'>;
export type OpenOptions = {
    restore?: boolean;
    resume?: boolean;
    session?: Session;
};
/**
 * How opening a session's chat goes: `idle` before any, `restoring` while its conversation is
 * read, `ready` once the chat is there (a resume may still run), `error` when the restore failed.
 * @typedef {'idle' | 'restoring' | 'ready' | 'error'} CoachChatStatus
 */
/**
 * What the Vue and React useCoachChat hold: the chat of the session opened last.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {object} CoachChatSnapshot
 * @property {T | undefined} chat the SDK's Chat of the session, once opened
 * @property {Session | undefined} session the session as of its last turn
 * @property {CoachChatStatus} status
 * @property {CoachChatError | undefined} error the last error: the restore's, a turn's (as
 *   chatError reads it) or a session read's; cleared when a session is opened and by clearError
 * @property {number} resets the resets heard since the session was opened
 */
/**
 * The options of useCoachChat: createCoachChat's, less what `open` decides per session.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 * @typedef {Omit<CoachChatOptions<T>, 'restore' | 'resume' | 'session'>} UseCoachChatOptions
 */
/**
 * What `open` takes: whether to restore and resume (both default true: a session reopened, e.g.
 * after a reload), and the session when the caller has it (one just created: pass it with
 * `restore: false, resume: false`).
 * @typedef {{ restore?: boolean, resume?: boolean, session?: Session }} OpenOptions
 */
/**
 * CoachChatHolder is the framework-free state behind the Vue and React useCoachChat: it opens a
 * session's chat with createCoachChat, and tells `onChange` every change of its snapshot. Only
 * the session opened last counts: a slower restore of an earlier one is dropped.
 * @template {import('ai').AbstractChat<CoachUIMessage>} T
 */
export declare class CoachChatHolder<T extends import('ai').AbstractChat<CoachUIMessage>> {
    client: import("./client.js").CoachClient;
    options: UseCoachChatOptions<T>;
    onChange: (snapshot: CoachChatSnapshot<T>) => void;
    /** @type {CoachChatSnapshot<T>} */
    snapshot: CoachChatSnapshot<T>;
    /** @type {CoachChat<T> | undefined} */
    coach: CoachChat<T> | undefined;
    opened: number;
    /**
     * @param {CoachClient} client
     * @param {UseCoachChatOptions<T>} options
     * @param {(snapshot: CoachChatSnapshot<T>) => void} onChange
     */
    constructor(client: CoachClient, options: UseCoachChatOptions<T>, onChange: (snapshot: CoachChatSnapshot<T>) => void);
    /**
     * set changes the snapshot and tells onChange.
     * @param {Partial<CoachChatSnapshot<T>>} change
     */
    set(change: Partial<CoachChatSnapshot<T>>): void;
    /**
     * open makes the chat of sessionId (createCoachChat) in place of the one held; the held one
     * stops reading (its turn goes on on the gateway). Resolves with the chat, or undefined when
     * the restore failed or another open came after it.
     * @param {string} sessionId
     * @param {OpenOptions} [how]
     * @returns {Promise<CoachChat<T> | undefined>}
     */
    open(sessionId: string, how?: OpenOptions): Promise<CoachChat<T> | undefined>;
    /** stop stops the running turn of the chat held, on the gateway too (CoachChat.stop). */
    stop(): Promise<boolean>;
    /** refresh reads the held session again. */
    refresh(): Promise<Session | undefined>;
    /** clearError forgets the last error, e.g. when the learner sends again. */
    clearError(): void;
    /** close stops reading the held chat's turn (the turn goes on on the gateway). */
    close(): void;
}
