export { cardsOf, chatError, chatRoutes, chatTransportOptions, CoachChatHolder, createCoachChat, errorOf, isCardResult, isModuleResult, isToulminResult, messageText, moduleBlocks, restoreMessages, resultOf, safetyOf, textBlock, visibleParts } from './ai.js';
export { CoachClient } from './client.js';
export { CoachError } from './errors.js';
export { DEFAULT_MAX_LINE_BYTES, LineBuffer, readNDJSON } from './ndjson.js';
export { SessionRunner, TurnRunner } from './state.js';
export { coachTurn, collectTurn, parseEvent, readEvents, resumeTurn, stopTurn, streamTurn, TurnText } from './stream.js';
export type Contract = import('./types.js').Contract;
export type Locale = import('./types.js').Locale;
export type CreateSessionRequest = import('./types.js').CreateSessionRequest;
export type TurnRequest = import('./types.js').TurnRequest;
export type ToulminState = import('./types.js').ToulminState;
export type CardsState = import('./types.js').CardsState;
export type ModuleState = import('./types.js').ModuleState;
export type ModuleSummary = import('./types.js').ModuleSummary;
export type DeltaEvent = import('./types.js').DeltaEvent;
export type CardEvent = import('./types.js').CardEvent;
export type ResetEvent = import('./types.js').ResetEvent;
export type ResetReason = import('./types.js').ResetReason;
export type SafetyEvent = import('./types.js').SafetyEvent;
export type SafetyHold = import('./types.js').SafetyHold;
export type SafetyResource = import('./types.js').SafetyResource;
export type ErrorEvent = import('./types.js').ErrorEvent;
export type Usage = import('./types.js').Usage;
export type Limits = import('./types.js').Limits;
export type TurnResult = import('./types.js').TurnResult;
export type TranscriptEntry = import('./types.js').TranscriptEntry;
export type LearnerEntry = import('./types.js').LearnerEntry;
export type CoachResultEntry = import('./types.js').CoachResultEntry;
export type CoachCardEntry = import('./types.js').CoachCardEntry;
export type MessagesPage = import('./types.js').MessagesPage;
export type ToulminStep = import('./schemas.js').ToulminStep;
export type CoachAIResult = import('./schemas.js').CoachAIResult;
export type FrontendCard = import('./schemas.js').FrontendCard;
export type ScenarioOrInsightCard = import('./schemas.js').ScenarioOrInsightCard;
export type PromptOrReflectionCard = import('./schemas.js').PromptOrReflectionCard;
export type MultipleChoiceCard = import('./schemas.js').MultipleChoiceCard;
export type LevelUpCard = import('./schemas.js').LevelUpCard;
export type StructuredResponse = import('./schemas.js').StructuredResponse;
export type ModuleForm = import('./schemas.js').ModuleForm;
export type ModuleFormField = import('./schemas.js').ModuleFormField;
export type Module = import('./schemas.js').Module;
export type ContractResults = import('./schemas.js').ContractResults;
export type SafetyNotice = import('./schemas.js').SafetyNotice;
export type StreamCallbacks = import('./stream.js').StreamCallbacks;
export type ResumeRequest = import('./stream.js').ResumeRequest;
export type CoachChatError = import('./ai.js').CoachChatError;
export type CoachUIMessage<C extends Contract = Contract> = import('./ai.js').CoachUIMessage<C>;
export type CoachDataParts<R = TurnResult> = import('./ai.js').CoachDataParts<R>;
export type CoachChatStatus = import('./ai.js').CoachChatStatus;
export type ModuleBlock = import('./ai.js').ModuleBlock;
export type TextBlock = import('./ai.js').TextBlock;
export type ClientOptions = import('./request.js').ClientOptions;
export type CallOptions = import('./request.js').CallOptions;
export type CoachErrorKind = import('./errors.js').CoachErrorKind;
export type TurnStatus = import('./state.js').TurnStatus;
export type SessionStatus = import('./state.js').SessionStatus;
export type Session<S = Record<string, unknown>> = import('./types.js').Session<S>;
export type TurnEvent<R = TurnResult> = import('./types.js').TurnEvent<R>;
export type ResultEvent<R = TurnResult> = import('./types.js').ResultEvent<R>;
export type CollectedTurn<R = TurnResult> = import('./stream.js').CollectedTurn<R>;
/** @typedef {import('./types.js').Contract} Contract */
/** @typedef {import('./types.js').Locale} Locale */
/** @typedef {import('./types.js').CreateSessionRequest} CreateSessionRequest */
/** @typedef {import('./types.js').TurnRequest} TurnRequest */
/** @typedef {import('./types.js').ToulminState} ToulminState */
/** @typedef {import('./types.js').CardsState} CardsState */
/** @typedef {import('./types.js').ModuleState} ModuleState */
/** @typedef {import('./types.js').ModuleSummary} ModuleSummary */
/** @typedef {import('./types.js').DeltaEvent} DeltaEvent */
/** @typedef {import('./types.js').CardEvent} CardEvent */
/** @typedef {import('./types.js').ResetEvent} ResetEvent */
/** @typedef {import('./types.js').ResetReason} ResetReason */
/** @typedef {import('./types.js').SafetyEvent} SafetyEvent */
/** @typedef {import('./types.js').SafetyHold} SafetyHold */
/** @typedef {import('./types.js').SafetyResource} SafetyResource */
/** @typedef {import('./types.js').ErrorEvent} ErrorEvent */
/** @typedef {import('./types.js').Usage} Usage */
/** @typedef {import('./types.js').Limits} Limits */
/** @typedef {import('./types.js').TurnResult} TurnResult */
/** @typedef {import('./types.js').TranscriptEntry} TranscriptEntry */
/** @typedef {import('./types.js').LearnerEntry} LearnerEntry */
/** @typedef {import('./types.js').CoachResultEntry} CoachResultEntry */
/** @typedef {import('./types.js').CoachCardEntry} CoachCardEntry */
/** @typedef {import('./types.js').MessagesPage} MessagesPage */
/** @typedef {import('./schemas.js').ToulminStep} ToulminStep */
/** @typedef {import('./schemas.js').CoachAIResult} CoachAIResult */
/** @typedef {import('./schemas.js').FrontendCard} FrontendCard */
/** @typedef {import('./schemas.js').ScenarioOrInsightCard} ScenarioOrInsightCard */
/** @typedef {import('./schemas.js').PromptOrReflectionCard} PromptOrReflectionCard */
/** @typedef {import('./schemas.js').MultipleChoiceCard} MultipleChoiceCard */
/** @typedef {import('./schemas.js').LevelUpCard} LevelUpCard */
/** @typedef {import('./schemas.js').StructuredResponse} StructuredResponse */
/** @typedef {import('./schemas.js').ModuleForm} ModuleForm */
/** @typedef {import('./schemas.js').ModuleFormField} ModuleFormField */
/** @typedef {import('./schemas.js').Module} Module */
/** @typedef {import('./schemas.js').ContractResults} ContractResults */
/** @typedef {import('./schemas.js').SafetyNotice} SafetyNotice */
/** @typedef {import('./stream.js').StreamCallbacks} StreamCallbacks */
/** @typedef {import('./stream.js').ResumeRequest} ResumeRequest */
/** @typedef {import('./ai.js').CoachChatError} CoachChatError */
/**
 * @template {Contract} [C=Contract]
 * @typedef {import('./ai.js').CoachUIMessage<C>} CoachUIMessage
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./ai.js').CoachDataParts<R>} CoachDataParts
 */
/** @typedef {import('./ai.js').CoachChatStatus} CoachChatStatus */
/** @typedef {import('./ai.js').ModuleBlock} ModuleBlock */
/** @typedef {import('./ai.js').TextBlock} TextBlock */
/** @typedef {import('./request.js').ClientOptions} ClientOptions */
/** @typedef {import('./request.js').CallOptions} CallOptions */
/** @typedef {import('./errors.js').CoachErrorKind} CoachErrorKind */
/** @typedef {import('./state.js').TurnStatus} TurnStatus */
/** @typedef {import('./state.js').SessionStatus} SessionStatus */
/**
 * @template [S=Record<string, unknown>]
 * @typedef {import('./types.js').Session<S>} Session
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').TurnEvent<R>} TurnEvent
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./types.js').ResultEvent<R>} ResultEvent
 */
/**
 * @template [R=TurnResult]
 * @typedef {import('./stream.js').CollectedTurn<R>} CollectedTurn
 */
