export type CoachAIResult = {
    /**
     * The tutor's response message (2-3 sentences max).
     */
    assistantText: string;
    step: ToulminStep;
    /**
     * Confidence 0-1 that the current step is complete.
     */
    confidence?: number;
    /**
     * Proposed text for the current step; shown in the ProposedUpdateCard.
     */
    proposedUpdate?: {
        field: ToulminStep;
        value: string;
        rationale: string;
    };
    /**
     * A guiding question for the user.
     */
    nextQuestion?: string;
    /**
     * Whether to advance to the next step.
     */
    shouldAdvance?: boolean;
    nextStep?: ToulminStep;
    /**
     * True when all 7 steps are complete.
     */
    isComplete?: boolean;
};
export type ToulminStep = "claim" | "grounds" | "warrant" | "groundsBacking" | "warrantBacking" | "qualifier" | "rebuttal";
export type ScenarioOrInsightCard = {
    type: "scenario" | "insight";
    content: string;
    /**
     * The drill the card belongs to, when the model named one.
     */
    drill_phase?: string;
};
export type PromptOrReflectionCard = {
    type: "prompt" | "reflection";
    content: string;
    input: {
        type: "text";
        max_length: number;
        placeholder: string;
    };
    /**
     * The drill the card belongs to, when the model named one.
     */
    drill_phase?: string;
    /**
     * A required second attempt at the same question.
     */
    is_iteration?: boolean;
};
export type MultipleChoiceCard = {
    type: "multiple_choice";
    content: string;
    options: Array<{
        id: string;
        label: string;
    }>;
    /**
     * The drill the card belongs to, when the model named one.
     */
    drill_phase?: string;
};
export type LevelUpCard = {
    type: "level_up";
    new_level: number;
    message: string;
};
export type FrontendCard = ScenarioOrInsightCard | PromptOrReflectionCard | MultipleChoiceCard | LevelUpCard;
export type StructuredResponse = {
    /**
     * All displayable content
     */
    content: {
        text_blocks: Array<{
            type: "paragraph" | "heading" | "list" | "quote" | "info" | "warning" | "success" | "tip";
            content: string;
            level?: number;
        }>;
        forms?: Array<ModuleForm>;
        media?: Array<{
            type: "image" | "video" | "audio";
            src: string;
            alt?: string;
            caption?: string;
        }>;
        next_step?: {
            prompt?: string;
            suggestions?: Array<string>;
            can_skip?: boolean;
        };
    };
    /**
     * Metadata about the response
     */
    meta: {
        response_type: "educational" | "conversational" | "assessment" | "summary" | "error";
        progress?: {
            percentage?: number;
            covered_topics?: Array<string>;
            newly_covered?: Array<string>;
            remaining_topics?: number;
            milestone?: "25%" | "50%" | "75%" | "100%";
        };
        module_state?: {
            current_phase?: string;
            current_section?: string;
            sections_completed?: number;
            total_sections?: number;
        };
        emotion?: "neutral" | "encouraging" | "celebratory" | "supportive" | "informative";
    };
};
export type ModuleForm = {
    /**
     * Unique form identifier
     */
    id: string;
    title?: string;
    description?: string;
    fields: Array<ModuleFormField>;
    submit_label?: string;
    /**
     * Whether the user can skip this form
     */
    optional?: boolean;
};
export type ModuleFormField = {
    /**
     * Field identifier (snake_case)
     */
    id: string;
    type: "radio" | "checkbox" | "select" | "text" | "textarea" | "number";
    label: string;
    required?: boolean;
    /**
     * Required for radio, checkbox, select types
     */
    options?: Array<{
        value: string;
        label: string;
    }>;
    placeholder?: string;
    help_text?: string;
    min?: number;
    max?: number;
};
export type Module = {
    id: ModuleId;
    title: ModuleLabel;
    /**
     * What the learner gets from the module; shown to the model.
     */
    description: string;
    /**
     * The language of title, description and section titles; en when absent.
     */
    locale?: "en" | "es";
    sections: Array<ModuleSection>;
};
export type ModuleId = string;
export type ModuleLabel = string;
export type ModuleSection = {
    id: ModuleId;
    title: ModuleLabel;
    topics: Array<ModuleTopic>;
};
export type ModuleTopic = {
    id: ModuleId;
    name: {
        en: ModuleLabel;
        es: ModuleLabel;
    };
    keywords: {
        en: ModuleKeywords;
        es: ModuleKeywords;
    };
};
export type ModuleKeywords = Array<string>;
export type SafetyNotice = {
    /**
     * What was detected: a crisis (self-harm, suicide, abuse, immediate danger).
     */
    kind: "crisis";
    /**
     * A BCP 47 tag: the session's (es-US) when these are national resources, else the session's language (es, en).
     */
    locale: string;
    /**
     * A short message in the locale's language, shown above the resources.
     */
    message: string;
    /**
     * Where the learner can reach someone, most important first.
     */
    resources: Array<{
        name: string;
        phone?: string;
        text?: string;
        url?: string;
    }>;
};
export type ContractResults = {
    toulmin: CoachAIResult;
    cards: FrontendCard;
    module: StructuredResponse;
};
/**
 * The Toulmin coach's answer for one turn (coach-ai-tool-contract).
 * @typedef {object} CoachAIResult
 * @property {string} assistantText The tutor's response message (2-3 sentences max).
 * @property {ToulminStep} step
 * @property {number} [confidence] Confidence 0-1 that the current step is complete.
 * @property {{ field: ToulminStep, value: string, rationale: string }} [proposedUpdate] Proposed text for the current step; shown in the ProposedUpdateCard.
 * @property {string} [nextQuestion] A guiding question for the user.
 * @property {boolean} [shouldAdvance] Whether to advance to the next step.
 * @property {ToulminStep} [nextStep]
 * @property {boolean} [isComplete] True when all 7 steps are complete.
 */
/**
 * @typedef {"claim" | "grounds" | "warrant" | "groundsBacking" | "warrantBacking" | "qualifier" | "rebuttal"} ToulminStep
 */
/**
 * Scenario or insight card: Text to read; the learner goes on with a Continue button.
 * @typedef {object} ScenarioOrInsightCard
 * @property {"scenario" | "insight"} type
 * @property {string} content
 * @property {string} [drill_phase] The drill the card belongs to, when the model named one.
 */
/**
 * Prompt or reflection card: A question the learner answers in text of at most input.max_length characters, sent as the next turn's message.
 * @typedef {object} PromptOrReflectionCard
 * @property {"prompt" | "reflection"} type
 * @property {string} content
 * @property {{ type: "text", max_length: number, placeholder: string }} input
 * @property {string} [drill_phase] The drill the card belongs to, when the model named one.
 * @property {boolean} [is_iteration] A required second attempt at the same question.
 */
/**
 * Multiple-choice card: A question with options; the learner's choice is the next turn's selected.
 * @typedef {object} MultipleChoiceCard
 * @property {"multiple_choice"} type
 * @property {string} content
 * @property {Array<{ id: string, label: string }>} options
 * @property {string} [drill_phase] The drill the card belongs to, when the model named one.
 */
/**
 * Level-up card: Injected by the gateway, never written by the model: the learner reached new_level. It arrives as a card line before the turn's own card.
 * @typedef {object} LevelUpCard
 * @property {"level_up"} type
 * @property {number} new_level
 * @property {string} message
 */
/**
 * A cards session's frontend card, as the gateway sends it: the result of a cards turn, the card of a card line (an injected level_up card) and the session state's lastCard. It is the seed's Frontend Format, not display_card's arguments (display-card.json), which the gateway normalizes into it. Exactly one of the six shapes, chosen by type; a shape has no members but its own.
 * @typedef {ScenarioOrInsightCard | PromptOrReflectionCard | MultipleChoiceCard | LevelUpCard} FrontendCard
 */
/**
 * @typedef {object} StructuredResponse
 * @property {{ text_blocks: Array<{ type: "paragraph" | "heading" | "list" | "quote" | "info" | "warning" | "success" | "tip", content: string, level?: number }>, forms?: Array<ModuleForm>, media?: Array<{ type: "image" | "video" | "audio", src: string, alt?: string, caption?: string }>, next_step?: { prompt?: string, suggestions?: Array<string>, can_skip?: boolean } }} content All displayable content
 * @property {{ response_type: "educational" | "conversational" | "assessment" | "summary" | "error", progress?: { percentage?: number, covered_topics?: Array<string>, newly_covered?: Array<string>, remaining_topics?: number, milestone?: "25%" | "50%" | "75%" | "100%" }, module_state?: { current_phase?: string, current_section?: string, sections_completed?: number, total_sections?: number }, emotion?: "neutral" | "encouraging" | "celebratory" | "supportive" | "informative" }} meta Metadata about the response
 */
/**
 * @typedef {object} ModuleForm
 * @property {string} id Unique form identifier
 * @property {string} [title]
 * @property {string} [description]
 * @property {Array<ModuleFormField>} fields
 * @property {string} [submit_label]
 * @property {boolean} [optional] Whether the user can skip this form
 */
/**
 * @typedef {object} ModuleFormField
 * @property {string} id Field identifier (snake_case)
 * @property {"radio" | "checkbox" | "select" | "text" | "textarea" | "number"} type
 * @property {string} label
 * @property {boolean} [required]
 * @property {Array<{ value: string, label: string }>} [options] Required for radio, checkbox, select types
 * @property {string} [placeholder]
 * @property {string} [help_text]
 * @property {number} [min]
 * @property {number} [max]
 */
/**
 * A learning module file: sections of topics, each topic with a name and detection keywords in English and Spanish. Keywords match whole words, case- and accent-insensitively; a keyword may be several words ("fight or flight"), and a trailing * makes its last word a prefix ("avoid*" matches avoid, avoids, avoidance) when at least three letters or digits precede it.
 * @typedef {object} Module
 * @property {ModuleId} id
 * @property {ModuleLabel} title
 * @property {string} description What the learner gets from the module; shown to the model.
 * @property {"en" | "es"} [locale] The language of title, description and section titles; en when absent.
 * @property {Array<ModuleSection>} sections
 */
/**
 * A module, section or topic id, unique within its module.
 * @typedef {string} ModuleId
 */
/**
 * @typedef {string} ModuleLabel
 */
/**
 * @typedef {object} ModuleSection
 * @property {ModuleId} id
 * @property {ModuleLabel} title
 * @property {Array<ModuleTopic>} topics
 */
/**
 * @typedef {object} ModuleTopic
 * @property {ModuleId} id
 * @property {{ en: ModuleLabel, es: ModuleLabel }} name
 * @property {{ en: ModuleKeywords, es: ModuleKeywords }} keywords
 */
/**
 * @typedef {Array<string>} ModuleKeywords
 */
/**
 * The content of a safety line (v1.3): the crisis resources for the session's locale, sent before the result of a turn whose learner input showed a crisis. The NDJSON line is this object with "type":"safety"; the AI SDK route's data-coach-safety part has it as its data; a transcript's coach entry of that turn carries it as "safety".
 * @typedef {object} SafetyNotice
 * @property {"crisis"} kind What was detected: a crisis (self-harm, suicide, abuse, immediate danger).
 * @property {string} locale A BCP 47 tag: the session's (es-US) when these are national resources, else the session's language (es, en).
 * @property {string} message A short message in the locale's language, shown above the resources.
 * @property {Array<{ name: string, phone?: string, text?: string, url?: string }>} resources Where the learner can reach someone, most important first.
 */
/**
 * The result type of each contract: the `result` of its result line and data-coach-result part.
 * @typedef {{ toulmin: CoachAIResult, cards: FrontendCard, module: StructuredResponse }} ContractResults
 */
export {};
