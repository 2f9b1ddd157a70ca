export type ClientOptions = import('./request.js').ClientOptions;
export type CallOptions = import('./request.js').CallOptions;
export type CreateSessionRequest = import('./types.js').CreateSessionRequest;
export type TurnRequest = import('./types.js').TurnRequest;
export type TurnResult = import('./types.js').TurnResult;
export type ToulminStep = import('./types.js').ToulminStep;
export type ModuleSummary = import('./types.js').ModuleSummary;
export type MessagesPage = import('./types.js').MessagesPage;
export type TranscriptEntry = import('./types.js').TranscriptEntry;
export type Module = import('./schemas.js').Module;
export type StreamCallbacks = import('./stream.js').StreamCallbacks;
export type ResumeRequest = import('./stream.js').ResumeRequest;
export type Session<S = Record<string, unknown>> = import('./types.js').Session<S>;
export type TurnEvent<R = TurnResult> = import('./types.js').TurnEvent<R>;
export type MessagesOptions = {
    /**
     * entries per page (the gateway bounds it)
     */
    limit?: number;
    /**
     * a page's `next`: entries older than this seq
     */
    before?: number;
    signal?: AbortSignal;
};
/** @typedef {import('./request.js').ClientOptions} ClientOptions */
/** @typedef {import('./request.js').CallOptions} CallOptions */
/** @typedef {import('./types.js').CreateSessionRequest} CreateSessionRequest */
/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./types.js').ToulminStep} ToulminStep */
/** @typedef {import('./types.js').ModuleSummary} ModuleSummary */
/** @typedef {import('./types.js').MessagesPage} MessagesPage */
/** @typedef {import('./types.js').TranscriptEntry} TranscriptEntry */
/** @typedef {import('./schemas.js').Module} Module */
/** @typedef {import('./stream.js').StreamCallbacks} StreamCallbacks */
/** @typedef {import('./stream.js').ResumeRequest} ResumeRequest */
/**
 * @template [S=Record<string, unknown>]
 * @typedef {import('./types.js').Session<S>} Session
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').TurnEvent<R>} TurnEvent
 */
/**
 * @typedef {object} MessagesOptions
 * @property {number} [limit] entries per page (the gateway bounds it)
 * @property {number} [before] a page's `next`: entries older than this seq
 * @property {AbortSignal} [signal]
 */
/** CoachClient calls one coachgw gateway. */
export declare class CoachClient {
    /** @type {ClientOptions} */
    options: ClientOptions;
    /** @param {ClientOptions} [options] */
    constructor(options?: ClientOptions);
    /**
     * createSession starts a session.
     * @param {CreateSessionRequest} body
     * @param {CallOptions} [options]
     * @returns {Promise<Session>}
     */
    createSession(body: CreateSessionRequest, options?: CallOptions): Promise<Session>;
    /**
     * getSession reads session id; an unknown one is a CoachError 404 `session_not_found`.
     * @param {string} id
     * @param {CallOptions} [options]
     * @returns {Promise<Session>}
     */
    getSession(id: string, options?: CallOptions): Promise<Session>;
    /**
     * deleteSession removes session id; removing one that does not exist is not an error.
     * @param {string} id
     * @param {CallOptions} [options]
     * @returns {Promise<void>}
     */
    deleteSession(id: string, options?: CallOptions): Promise<void>;
    /**
     * setDraft sets the draft of one step of a toulmin session and returns the session after it.
     * @param {string} id
     * @param {ToulminStep} field
     * @param {string} value
     * @param {CallOptions} [options]
     * @returns {Promise<Session>}
     */
    setDraft(id: string, field: ToulminStep, value: string, options?: CallOptions): Promise<Session>;
    /**
     * decideProposal accepts or rejects the pending proposal of a toulmin session and returns the
     * session after the decision; without one it is a CoachError 409 `no_pending_proposal`.
     * @param {string} id
     * @param {'accept' | 'reject'} action
     * @param {CallOptions} [options]
     * @returns {Promise<Session>}
     */
    decideProposal(id: string, action: 'accept' | 'reject', options?: CallOptions): Promise<Session>;
    /**
     * listModules lists the loaded learning modules.
     * @param {CallOptions} [options]
     * @returns {Promise<ModuleSummary[]>}
     */
    listModules(options?: CallOptions): Promise<ModuleSummary[]>;
    /**
     * getModule returns a learning module's definition; an unknown one is a CoachError 404
     * `module_not_found`.
     * @param {string} id
     * @param {CallOptions} [options]
     * @returns {Promise<Module>}
     */
    getModule(id: string, options?: CallOptions): Promise<Module>;
    /**
     * messages reads one page of a session's transcript: the newest page without `before`, older
     * ones with the previous page's `next`. Within a page the entries are oldest first.
     * @param {string} id
     * @param {MessagesOptions} [options]
     * @returns {Promise<MessagesPage>}
     */
    messages(id: string, options?: MessagesOptions): Promise<MessagesPage>;
    /**
     * transcript returns a session's whole transcript, oldest entry first, reading its pages from
     * the newest back.
     * @param {string} id
     * @param {Omit<MessagesOptions, 'before'>} [options]
     * @returns {Promise<TranscriptEntry[]>}
     */
    transcript(id: string, options?: Omit<MessagesOptions, 'before'>): Promise<TranscriptEntry[]>;
    /**
     * streamTurn takes a turn of session sessionId and yields its events; see the function
     * streamTurn in stream.js for what it yields and throws.
     * @template [R=TurnResult]
     * @param {string} sessionId
     * @param {TurnRequest} body
     * @param {StreamCallbacks} [options]
     * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
     */
    streamTurn<R = TurnResult>(sessionId: string, body: TurnRequest, options?: StreamCallbacks): AsyncGenerator<TurnEvent<R>, void, undefined>;
    /**
     * resumeTurn reads the session's running (or just ended) turn from line `after` on; see the
     * function resumeTurn in stream.js. It yields nothing when there is no such turn.
     * @template [R=TurnResult]
     * @param {string} sessionId
     * @param {ResumeRequest} [from]
     * @param {StreamCallbacks} [options]
     * @returns {AsyncGenerator<TurnEvent<R>, void, undefined>}
     */
    resumeTurn<R = TurnResult>(sessionId: string, from?: ResumeRequest, options?: StreamCallbacks): AsyncGenerator<TurnEvent<R>, void, undefined>;
    /**
     * stopTurn stops the session's running turn wherever it runs; it resolves false when none was
     * running. See the function stopTurn in stream.js.
     * @param {string} sessionId
     * @param {CallOptions} [options]
     * @returns {Promise<boolean>}
     */
    stopTurn(sessionId: string, options?: CallOptions): Promise<boolean>;
    /**
     * coachTurn takes a turn on the seed's route POST /api/coach (toulmin sessions).
     * @param {{ sessionId: string, message: string, step?: ToulminStep }} body
     * @param {CallOptions} [options]
     * @returns {AsyncGenerator<TurnEvent<import('./types.js').CoachAIResult>, void, undefined>}
     */
    coachTurn(body: {
        sessionId: string;
        message: string;
        step?: ToulminStep;
    }, options?: CallOptions): AsyncGenerator<TurnEvent<import('./types.js').CoachAIResult>, void, undefined>;
    /**
     * call sends a JSON request and returns the parsed JSON answer (undefined for 204).
     * @param {string} method
     * @param {string} path
     * @param {unknown} body
     * @param {CallOptions} [options]
     * @returns {Promise<any>}
     */
    call(method: string, path: string, body: unknown, options?: CallOptions): Promise<any>;
}
