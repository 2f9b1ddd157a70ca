// Package toulmin owns the toulmin coaching contract: the session state of a learner building a
// Toulmin argument step by step (claim, grounds, warrant, groundsBacking, warrantBacking,
// qualifier, rebuttal), the prompt that asks the model for a CoachAIResult, the streaming of
// its assistantText, and the server-side guards of the coach-ai-tool-contract seed that the
// result passes before it is sent and stored. It also owns the turn-less operations on that
// state: SetDraft and Decide (accept or reject the pending proposal).
//
// # Guards
//
// The result of every turn passes these rules, in this order (Outcome.Rules names those that
// changed it): confidence_out_of_range, step_coercion, empty_value_removal, first_turn_bias,
// should_advance_guard, is_complete_guard, next_step_correction, schema_validation,
// question_appending. Before them, members the schema does not define are dropped
// (unknown_fields_dropped).
//
// # Step heuristics
//
// should_advance_guard and is_complete_guard only let a step be left when its text (the
// proposal's value, else the draft) passes the step's heuristic. Text is normalised first
// (lowercase, accents folded, punctuation as spaces); words and markers are whole words, in
// English or Spanish. The heuristics are lenient on purpose: a reasonable sentence passes.
//
//	| step           | words | also needs                                                          |
//	|----------------|-------|---------------------------------------------------------------------|
//	| claim          | ≥ 4   | not a question (no trailing "?", no leading "¿")                   |
//	| grounds        | ≥ 5   |                                                                     |
//	| warrant        | ≥ 5   | a linking word: because, since, therefore, so, means, if, which,   |
//	|                |       | shows, thus, hence, implies, given / porque, ya que, puesto que,    |
//	|                |       | dado que, por lo tanto, así que, por eso, entonces, significa, si,  |
//	|                |       | demuestra, muestra, implica, lo que                                 |
//	| groundsBacking | ≥ 5   |                                                                     |
//	| warrantBacking | ≥ 5   |                                                                     |
//	| qualifier      | ≥ 1   | a hedge: most, usually, probably, likely, often, generally,         |
//	|                |       | typically, in most cases, some, many, rarely, unless, may, might,   |
//	|                |       | could, sometimes, almost, tend(s) / la mayoría, generalmente,       |
//	|                |       | probablemente, normalmente, a menudo, en general, algunos/as,       |
//	|                |       | muchos/as, casi, suele(n), quizás, tal vez, a veces, puede(n)       |
//	| rebuttal       | ≥ 3   | an exception or counter marker: unless, except, however, but,       |
//	|                |       | although, though, if, when, critics, opponents, whereas, despite /  |
//	|                |       | a menos que, excepto, sin embargo, pero, aunque, salvo, si, cuando, |
//	|                |       | críticos, opositores, no obstante, a pesar                          |
//
// The same table, with examples, is in HEURISTICS.md.
//
// # Language cues
//
// The learner's message is checked for an explicit rewrite request ("rewrite", "improve",
// "rephrase", "fix", "help me word", "reescribe", "mejora", "arregla" and their inflections)
// and for a confirmation ("yes", "ok", "that works", "use that", "sí", "me sirve", "está
// bien"...: a short, unnegated message starting with one). Each cue adds its paragraph to the
// prompt; a rewrite request also exempts the turn from first_turn_bias.
package toulmin
