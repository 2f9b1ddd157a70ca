// @coachgw/client: a typed client of the coachgw gateway without runtime dependencies. The Vue
// and React bindings are the subpath exports "@coachgw/client/vue" and "@coachgw/client/react".

export { cardsOf, chatError, chatRoutes, chatTransportOptions, CoachChatHolder, createCoachChat, errorOf, isCardResult, isModuleResult, isToulminResult, messageText, moduleBlocks, restoreMessages, resultOf, safetyOf, textBlock, visibleParts } from './ai.js';
export { CoachClient } from './client.js';
export { CoachError } from './errors.js';
export { DEFAULT_MAX_LINE_BYTES, LineBuffer, readNDJSON } from './ndjson.js';
export { SessionRunner, TurnRunner } from './state.js';
export { coachTurn, collectTurn, parseEvent, readEvents, resumeTurn, stopTurn, streamTurn, TurnText } from './stream.js';

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
