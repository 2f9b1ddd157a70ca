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
