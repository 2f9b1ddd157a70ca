import { CoachError } from './errors.js';
export type CoachClient = import('./client.js').CoachClient;
export type TurnRequest = import('./types.js').TurnRequest;
export type TurnResult = import('./types.js').TurnResult;
export type CardEvent = import('./types.js').CardEvent;
export type SafetyEvent = import('./types.js').SafetyEvent;
export type CreateSessionRequest = import('./types.js').CreateSessionRequest;
export type ToulminStep = import('./types.js').ToulminStep;
export type ResultEvent<R = TurnResult> = import('./types.js').ResultEvent<R>;
export type Session<S = Record<string, unknown>> = import('./types.js').Session<S>;
export type TurnStatus = 'idle' | 'streaming' | 'retrying' | 'done' | 'error' | 'aborted';
export type TurnSnapshot<R = TurnResult> = {
    /**
     * the visible text so far (resets applied)
     */
    text: string;
    /**
     * module turns: the visible text of each text block
     */
    blocks: string[];
    /**
     * module turns: each block's type (paragraph, heading, …)
     */
    blockTypes: string[];
    /**
     * the cards sent besides the result (an injected level_up card)
     */
    cards: CardEvent['card'][];
    /**
     * a crisis turn's safety event (v1.3): its message and
     * crisis resources, to show prominently; null for every other turn
     */
    safety: SafetyEvent | null;
    /**
     * the result event, once the turn is done
     */
    result: ResultEvent<R> | null;
    status: TurnStatus;
    /**
     * what failed: an HTTP error before the stream, the stream's
     * error line (kind `turn`; `turn_cancelled` after a stop), a broken stream or no answer
     */
    error: CoachError | null;
    /**
     * the turn's id once its stream started ("" before, or from a gateway
     * older than v1.2)
     */
    turn: string;
};
export type TurnOptions<R = TurnResult> = {
    /**
     * called with the result event of every
     * turn that succeeds
     */
    onResult?: (result: ResultEvent<R>) => void;
    /**
     * the bindings: follow the session's running turn on mount (and
     * after useCoachSession's load), through GET …/turns/current (default true)
     */
    resume?: boolean;
};
/**
 * TurnRunner runs the turns of one session, one at a time, and reports every change.
 * @template [R=TurnResult]
 */
export declare class TurnRunner<R = TurnResult> {
    client: import("./client.js").CoachClient;
    onChange: (snapshot: TurnSnapshot<R>) => void;
    options: TurnOptions<R>;
    /** @type {TurnSnapshot<R>} */
    snapshot: TurnSnapshot<R>;
    /** @type {AbortController | null} */
    controller: AbortController | null;
    /**
     * @param {CoachClient} client
     * @param {(snapshot: TurnSnapshot<R>) => void} onChange
     * @param {TurnOptions<R>} [options]
     */
    constructor(client: CoachClient, onChange: (snapshot: TurnSnapshot<R>) => void, options?: TurnOptions<R>);
    /** busy says whether a turn is running. */
    get busy(): boolean;
    /**
     * send takes a turn of session sessionId and resolves with its result event, or null when it
     * failed or was aborted (the snapshot says which). While a turn runs, send does nothing and
     * resolves null.
     * @param {string} sessionId
     * @param {TurnRequest} body
     * @returns {Promise<ResultEvent<R> | null>}
     */
    send(sessionId: string, body: TurnRequest): Promise<ResultEvent<R> | null>;
    /**
     * resume follows the session's running turn from its first line (GET …/turns/current, v1.2),
     * as send follows a turn it sent, e.g. when a page that was reloaded mid-answer mounts. It
     * resolves null at once, the snapshot left as it was, when the session has no running or just
     * ended turn (204), when a turn is running here already, or when the gateway has no such route.
     * @param {string} sessionId
     * @returns {Promise<ResultEvent<R> | null>}
     */
    resume(sessionId: string): Promise<ResultEvent<R> | null>;
    /**
     * follow reads the events of a turn's stream and keeps the snapshot.
     * @param {(options: { signal: AbortSignal, onTurn: (turn: string) => void }) => AsyncIterable<import('./types.js').TurnEvent<unknown>>} open
     * @param {boolean} streaming whether the turn shows as streaming before its first line
     * @returns {Promise<ResultEvent<R> | null>}
     */
    follow(open: (options: {
        signal: AbortSignal;
        onTurn: (turn: string) => void;
    }) => AsyncIterable<import('./types.js').TurnEvent<unknown>>, streaming: boolean): Promise<ResultEvent<R> | null>;
    /**
     * abort stops reading the turn in flight, if any. A gateway older than v1.2 (or one with
     * COACH_TURN_ON_DISCONNECT=cancel) then stops the turn and stores nothing of it; a v1.2 gateway
     * lets it run to its end: stop it with stop().
     */
    abort(): void;
    /**
     * stop stops the session's running turn on the gateway (DELETE …/turns/current, v1.2): nothing
     * is stored and the stream being read ends with the error `turn_cancelled`. Resolves whether a
     * turn was running; a failure shows in the snapshot's error.
     * @param {string} sessionId
     * @returns {Promise<boolean>}
     */
    stop(sessionId: string): Promise<boolean>;
    /** @param {TurnSnapshot<R>} snapshot */
    set(snapshot: TurnSnapshot<R>): void;
}
export type SessionStatus = 'idle' | 'loading' | 'ready' | 'error';
export type SessionSnapshot<S = Record<string, unknown>> = {
    session: Session<S> | null;
    status: SessionStatus;
    error: CoachError | null;
};
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
export declare class SessionRunner<S = Record<string, unknown>> {
    client: import("./client.js").CoachClient;
    onChange: (snapshot: SessionSnapshot<S>) => void;
    /** @type {SessionSnapshot<S>} */
    snapshot: SessionSnapshot<S>;
    /**
     * @param {CoachClient} client
     * @param {(snapshot: SessionSnapshot<S>) => void} onChange
     */
    constructor(client: CoachClient, onChange: (snapshot: SessionSnapshot<S>) => void);
    /** The current session's id, or "". */
    get id(): string;
    /**
     * create starts a new session and holds it.
     * @param {CreateSessionRequest} body
     */
    create(body: CreateSessionRequest): Promise<Session<S> | null>;
    /**
     * load reads session id and holds it.
     * @param {string} id
     */
    load(id: string): Promise<Session<S> | null>;
    /** refresh reads the held session again. */
    refresh(): Promise<Session<S> | null>;
    /**
     * setDraft sets the draft of a step of the held toulmin session.
     * @param {ToulminStep} field
     * @param {string} value
     */
    setDraft(field: ToulminStep, value: string): Promise<Session<S> | null>;
    /**
     * decideProposal accepts or rejects the held toulmin session's pending proposal.
     * @param {'accept' | 'reject'} action
     */
    decideProposal(action: 'accept' | 'reject'): Promise<Session<S> | null>;
    /**
     * remove deletes the held session and lets go of it.
     * @returns {Promise<boolean>} whether it was deleted
     */
    remove(): Promise<boolean>;
    /**
     * hold sets the held session, e.g. the session a turn's result line carries.
     * @param {Session<S> | Session} session
     */
    hold(session: Session<S> | Session): void;
    /**
     * @param {() => Promise<Session<S> | Session | null>} call
     * @returns {Promise<Session<S> | null>}
     */
    run(call: () => Promise<Session<S> | Session | null>): Promise<Session<S> | null>;
    /** @param {SessionSnapshot<S>} snapshot */
    set(snapshot: SessionSnapshot<S>): void;
}
