// The wire types of the gateway (api/openapi.yaml) that are not results: sessions, requests and
// the lines of a turn's stream. The results themselves are generated from api/schemas into
// schemas.js. This module has no code; it is imported for its types only.

/** @typedef {import('./schemas.js').ToulminStep} ToulminStep */
/** @typedef {import('./schemas.js').CoachAIResult} CoachAIResult */
/** @typedef {import('./schemas.js').StructuredResponse} StructuredResponse */
/** @typedef {import('./schemas.js').FrontendCard} FrontendCard */
/** @typedef {import('./schemas.js').SafetyNotice} SafetyNotice */

/**
 * One place a learner in crisis can reach: at least one of `phone` (to call), `text` (how to
 * reach it by text message) and `url` (https) is set.
 * @typedef {SafetyNotice['resources'][number]} SafetyResource
 */

/** @typedef {'toulmin' | 'cards' | 'module'} Contract */

/**
 * The state of a toulmin session.
 * @typedef {object} ToulminState
 * @property {ToulminStep} step the current step
 * @property {Partial<Record<ToulminStep, string>>} draft the accepted text of each step
 * @property {Partial<Record<ToulminStep, number>>} turns the learner's messages so far per step
 * @property {{ field: ToulminStep, value: string, rationale: string } | null} pendingProposal the
 *   last surviving proposedUpdate, waiting for accept or reject
 * @property {boolean} isComplete
 */

/**
 * The state of a cards session.
 * @typedef {object} CardsState
 * @property {number} level
 * @property {FrontendCard | null} [lastCard] the last card sent
 * @property {number} [cycles]
 */

/**
 * The state of a module session.
 * @typedef {object} ModuleState
 * @property {string} module the learning module's id
 * @property {string[]} coveredTopics topic ids
 * @property {number} percentage
 * @property {string[]} milestones reached so far ("25%", …)
 */

/**
 * A session as the gateway reports it. State depends on the contract.
 * @template [S=Record<string, unknown>]
 * @typedef {object} Session
 * @property {string} id
 * @property {Contract} contract
 * @property {string} [locale]
 * @property {number} version
 * @property {S} state
 * @property {string} [createdAt] RFC 3339
 * @property {string} [updatedAt] RFC 3339
 * @property {Limits} [limits] the longest texts the session accepts; absent from an older gateway
 * @property {string} [learner] the learner reference given at creation (v1.3)
 * @property {SafetyHold} [safety] present once a crisis was detected in the session (v1.3)
 */

/**
 * A session's safety hold (v1.3): while `hold` is true every turn gets the supportive answer
 * (no lesson, no proposal, no form), until an operator clears it. Keep the crisis resources on
 * screen and the lesson's controls away while it holds.
 * @typedef {object} SafetyHold
 * @property {boolean} hold
 * @property {string} since RFC 3339: when the crisis was detected
 * @property {string} [episode] the crisis episode the hold belongs to
 */

/**
 * The longest texts a session accepts, in characters (Unicode code points); one more is
 * `422 invalid_input`.
 * @typedef {object} Limits
 * @property {number} messageChars a turn's message
 * @property {number} [draftChars] a draft value (toulmin only)
 */

/**
 * A session's language, optionally with a region (v1.3): the language (`en` or `es`) chooses the
 * prompts, the region (`es-MX`, `en-US`, …) the crisis resources of a safety line. The gateway
 * takes a region of two letters; a type cannot say that, so any suffix type-checks and the
 * gateway answers `400 invalid_request` for one it does not take.
 * @typedef {'en' | 'es' | `${'en' | 'es'}-${string}`} Locale
 */

/**
 * @typedef {object} CreateSessionRequest
 * @property {Contract} contract
 * @property {string} [module] the learning module of a module session
 * @property {Locale} [locale] default `en`
 * @property {string} [learner] an opaque reference of your own to the learner (v1.3; 1 to 128
 *   printable ASCII characters without spaces or `/`), by which an operator exports or erases
 *   everything of that learner; never a name or an e-mail address
 */

/**
 * A learner's turn. toulmin: `message` and optionally `step` (the step the UI believes is
 * current), or `continue: true` (the coach opens the current step); cards: `message` or
 * `selected`; module: `message` or `form`.
 * @typedef {object} TurnRequest
 * @property {string} [message]
 * @property {ToulminStep} [step]
 * @property {boolean} [continue]
 * @property {string} [selected]
 * @property {{ id: string, values: Record<string, unknown> }} [form]
 */

/**
 * @typedef {object} ModuleSummary
 * @property {string} id
 * @property {string} title
 * @property {number} sections
 * @property {number} topics
 */

/**
 * A piece of the user-visible text of the turn. Module deltas place it in text block `block` of
 * type `blockType`.
 * @typedef {object} DeltaEvent
 * @property {'delta'} type
 * @property {string} text
 * @property {number} [block]
 * @property {string} [blockType]
 */

/**
 * A complete frontend card that is not the turn's result (cards sessions), e.g. an injected
 * level_up card.
 * @typedef {object} CardEvent
 * @property {'card'} type
 * @property {FrontendCard} card
 */

/**
 * Why a turn's text so far is void: the stream broke off (`stream_interrupted`), stalled, the
 * output was unusable (`invalid_output`), or text already shown failed a later safety check
 * (`unsafe_output`, v1.3).
 * @typedef {'stream_interrupted' | 'stalled' | 'invalid_output' | 'unsafe_output'} ResetReason
 */

/**
 * The gateway is retrying the turn: discard the text of this turn received so far.
 * @typedef {object} ResetEvent
 * @property {'reset'} type
 * @property {ResetReason} reason
 */

/**
 * The learner's input showed a crisis (v1.3): show `message` and the `resources` prominently.
 * It comes first; the turn's text and result that follow are supportive and continue no
 * exercise, and the result's session carries the hold (`session.safety`).
 * @typedef {{ type: 'safety' } & SafetyNotice} SafetyEvent
 */

/**
 * Token counts an upstream reported.
 * @typedef {object} Usage
 * @property {number} promptTokens
 * @property {number} completionTokens
 */

/**
 * The last line of a turn that succeeded.
 * @template [R=TurnResult]
 * @typedef {object} ResultEvent
 * @property {'result'} type
 * @property {R} result the guarded result: toulmin CoachAIResult, cards FrontendCard, module StructuredResponse
 * @property {Session} session the session after the turn
 * @property {boolean} [fallback] the gateway substituted the result for unusable model output
 * @property {string} [upstream] which model endpoint answered
 * @property {Usage} [usage]
 * @property {string} [turn] the turn's id (v1.2), as in the X-Coach-Turn header
 */

/**
 * The last line of a turn that failed after its stream started.
 * @typedef {object} ErrorEvent
 * @property {'error'} type
 * @property {string} error the stable code, e.g. `coach_stream_failed`, or `turn_cancelled` after a stop
 * @property {string} message
 * @property {string} [turn] the turn's id (v1.2), as in the X-Coach-Turn header
 */

/** @typedef {CoachAIResult | FrontendCard | StructuredResponse} TurnResult */

/**
 * One line of a turn's stream.
 * @template [R=TurnResult]
 * @typedef {DeltaEvent | CardEvent | ResetEvent | SafetyEvent | ResultEvent<R> | ErrorEvent} TurnEvent
 */

/**
 * One entry of a session's transcript.
 * @typedef {LearnerEntry | CoachResultEntry | CoachCardEntry} TranscriptEntry
 */

/**
 * @typedef {object} LearnerEntry
 * @property {number} seq
 * @property {string} at RFC 3339
 * @property {'learner'} role
 * @property {TurnRequest | { action: 'accept' | 'reject' }} input the turn's body, or a proposal decision
 */

/**
 * @typedef {object} CoachResultEntry
 * @property {number} seq
 * @property {string} at
 * @property {'coach'} role
 * @property {TurnResult} result as the result line sent it
 * @property {boolean} [fallback]
 * @property {SafetyNotice} [safety] the notice of the turn's safety line, when it sent one (v1.3)
 */

/**
 * @typedef {object} CoachCardEntry
 * @property {number} seq
 * @property {string} at
 * @property {'coach'} role
 * @property {FrontendCard} card an injected card
 */

/**
 * A page of a transcript: oldest first within the page; `next` is the `before` of the page of
 * older entries, null on the oldest page.
 * @typedef {object} MessagesPage
 * @property {TranscriptEntry[]} messages
 * @property {number | null} next
 */

export {};
