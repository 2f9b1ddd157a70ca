// The few lines an app needs to drive coachgw's chat route with the AI SDK: the message type with
// coachgw's data parts, a Chat bound to one session (restored from the gateway's transcript), and
// the filter that leaves out text a reset discarded. Plain JavaScript with types in JSDoc
// (checked by `npm run check`), so that the node test (test/chat.test.mjs) runs this very module.
// The gateway's routes and its errors' shape come from @coachgw/client (clients/js).
import { Chat } from '@ai-sdk/vue';
import { chatError, chatRoutes } from '@coachgw/client';
import { DefaultChatTransport } from 'ai';

/** @typedef {import('@coachgw/client').CoachChatError} CoachChatError */
/** @typedef {import('@coachgw/client').CreateSessionRequest} CreateSessionRequest */
/** @typedef {import('@coachgw/client').Session} Session */
/** @typedef {import('@coachgw/client').TurnResult} TurnResult */
/** @typedef {import('@coachgw/client').CoachAIResult} CoachAIResult */
/** @typedef {import('@coachgw/client').FrontendCard} FrontendCard */
/** @typedef {import('@coachgw/client').StructuredResponse} StructuredResponse */

/**
 * A UI message of the chat route: the AI SDK's UIMessage with coachgw's data parts typed
 * (data-coach-result, -card, -safety, -reset, -error, and the learner's -select, -form,
 * -continue and, restored, -decision), from @coachgw/client.
 * @typedef {import('@coachgw/client').CoachUIMessage} CoachMessage
 */
/** @typedef {CoachMessage['parts'][number]} CoachPart */
/**
 * The data of a data-coach-result part: the result, and the session after the turn, which a
 * message restored from GET …/chat/messages does not have (the transcript keeps the result).
 * @typedef {import('@coachgw/client').CoachDataParts['coach-result']} CoachResult
 */
/** @typedef {{ block?: number, blockType?: string, discarded?: boolean }} TextMetadata */

/**
 * textMetadata returns coachgw's metadata of a text part: the module block it shows, and
 * whether a reset discarded it.
 * @param {CoachPart} part
 * @returns {TextMetadata}
 */
export function textMetadata(part) {
  const meta = part.type === 'text' ? part.providerMetadata?.coachgw : undefined;
  if (!meta) return {};
  /** @type {TextMetadata} */
  const out = {};
  if (typeof meta.block === 'number') out.block = meta.block;
  if (typeof meta.blockType === 'string') out.blockType = meta.blockType;
  if (meta.discarded === true) out.discarded = true;
  return out;
}

/**
 * visibleParts returns the parts of message to show: all but the text a reset made void. It
 * works whatever a framework's state does with the parts (shares or copies them).
 * @param {CoachMessage} message
 * @returns {CoachPart[]}
 */
export function visibleParts(message) {
  return message.parts.filter((p) => !(p.type === 'text' && textMetadata(p).discarded));
}

/**
 * resultOf returns the data of the message's data-coach-result part, if it has one.
 * @param {CoachMessage | undefined} message
 * @returns {CoachResult | undefined}
 */
export function resultOf(message) {
  for (const p of message?.parts ?? []) if (p.type === 'data-coach-result') return p.data;
  return undefined;
}

// Which contract's result a data-coach-result part holds: each contract's result has a member the
// others lack (toulmin's CoachAIResult its assistantText, a cards session's frontend card its
// type, a module session's structured response its meta), so the result narrows by its shape,
// without a cast.

/**
 * isToulmin says whether result is a toulmin CoachAIResult.
 * @param {TurnResult} result
 * @returns {result is CoachAIResult}
 */
export function isToulmin(result) {
  return 'assistantText' in result;
}

/**
 * isCard says whether result is a cards session's frontend card.
 * @param {TurnResult} result
 * @returns {result is FrontendCard}
 */
export function isCard(result) {
  return 'type' in result;
}

/**
 * isModule says whether result is a module session's structured response.
 * @param {TurnResult} result
 * @returns {result is StructuredResponse}
 */
export function isModule(result) {
  return 'meta' in result;
}

/**
 * loadMessages reads the session's conversation as the AI SDK's UI messages (GET
 * …/chat/messages, every page, oldest first), for `new Chat({messages})`. An answer's id is the
 * id of its turn, as on the chat routes' streams, so that a resume of that turn (GET
 * …/chat/stream, within COACH_RESUME_TTL of its end) replaces it rather than showing it twice.
 * A turn still running is not in it (it is stored when it ends): the resume streams its answer.
 * @param {{ gateway: string, sessionId: string, apiKey?: string }} options
 * @returns {Promise<CoachMessage[]>}
 */
export async function loadMessages({ gateway, sessionId, apiKey }) {
  const { messages: route } = chatRoutes(gateway, sessionId);
  /** @type {CoachMessage[]} */
  let messages = [];
  for (let before = ''; ; ) {
    const res = await fetch(`${route}?limit=200${before}`, { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined });
    if (!res.ok) throw new Error(`restoring the conversation: ${res.status} ${await res.text()}`);
    const page = /** @type {{ messages: CoachMessage[], next: number | null }} */ (await res.json());
    messages = [...page.messages, ...messages];
    if (page.next === null) return messages;
    before = `&before=${page.next}`;
  }
}

/**
 * createChat returns an @ai-sdk/vue Chat whose turns go to one coachgw session.
 * @param {{ gateway: string, sessionId: string, apiKey?: string, messages?: CoachMessage[], onReset?: (reason: string) => void, onError?: (error: CoachChatError) => void, resume?: boolean }} options
 *   gateway is the gateway's base URL ("" for the page's own origin); apiKey is needed when the
 *   gateway has COACH_API_KEYS; messages are the conversation so far (loadMessages); onReset
 *   hears the reason of every reset; onError hears the chat's errors as the gateway's {error,
 *   message} (chatError), whether answered before the stream (the SDK passes the JSON body as
 *   the message) or as the stream's error line (its code is in the data-coach-error part). With
 *   resume (what useChat's `resume: true` does) the chat follows the session's running turn at
 *   once, e.g. on a page reloaded mid-answer: the turn outlived its connection (v1.2), and GET
 *   …/chat/stream replays it from its start, then follows it live.
 * @returns {Chat<CoachMessage>}
 */
export function createChat({ gateway, sessionId, apiKey, messages, onReset, onError, resume }) {
  const routes = chatRoutes(gateway, sessionId);
  /** @type {Chat<CoachMessage>} */
  const chat = new Chat({
    messages,
    transport: new DefaultChatTransport({
      api: routes.api,
      headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined,
      // The SDK's default is {api}/{chatId}/stream; the gateway's is per session.
      prepareReconnectToStreamRequest: () => ({ api: routes.stream }),
      // The gateway keeps the conversation: send only the new message, so that long chats stay
      // under its body limit.
      prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
        body: { id, trigger, messageId, messages: messages.slice(-1) },
      }),
    }),
    onError(err) {
      onError?.(chatError(err, chat.lastMessage));
    },
    onData(part) {
      if (part.type !== 'data-coach-reset') return;
      // The gateway retries the turn: the text received so far is void. Vue's Chat shares the
      // parts array of the message it is building, so the text parts can go in place.
      const last = chat.lastMessage;
      const parts = last?.role === 'assistant' ? last.parts : [];
      for (let i = parts.length - 1; i >= 0; i--) if (parts[i].type === 'text') parts.splice(i, 1);
      onReset?.(part.data.reason);
    },
  });
  if (resume) void chat.resumeStream();
  return chat;
}

/**
 * stopTurn stops the session's running turn on the gateway (DELETE …/turns/current, v1.2): its
 * model call is cancelled and nothing is stored. Since v1.2 a turn outlives its connection, so
 * the SDK's own `chat.stop()` (which only stops reading) is called first and this after it.
 * Resolves true when a turn was stopped, false when none was running.
 * @param {{ gateway: string, sessionId: string, apiKey?: string }} options
 * @returns {Promise<boolean>}
 */
export async function stopTurn({ gateway, sessionId, apiKey }) {
  const res = await fetch(chatRoutes(gateway, sessionId).stop, {
    method: 'DELETE',
    headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined,
  });
  if (res.status === 204) return true;
  if (res.status === 404) return false;
  throw new Error(`stopping the turn: ${res.status} ${await res.text()}`);
}

/**
 * createSession creates a session on the gateway and returns its id.
 * @param {string} gateway
 * @param {CreateSessionRequest} body
 * @param {string} [apiKey]
 * @returns {Promise<string>}
 */
export async function createSession(gateway, body, apiKey) {
  const res = await fetch(`${gateway}/v1/sessions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`creating a ${body.contract} session: ${res.status} ${await res.text()}`);
  const session = /** @type {Session} */ (await res.json());
  return session.id;
}

/**
 * getSession reads a session (GET /v1/sessions/{id}): a reloaded page's toulmin step is in its
 * state, which a restored conversation does not carry.
 * @param {{ gateway: string, sessionId: string, apiKey?: string }} options
 * @returns {Promise<Session>}
 */
export async function getSession({ gateway, sessionId, apiKey }) {
  const res = await fetch(`${gateway}/v1/sessions/${encodeURIComponent(sessionId)}`, { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : undefined });
  if (!res.ok) throw new Error(`reading the session: ${res.status} ${await res.text()}`);
  return /** @type {Session} */ (await res.json());
}

/**
 * toulminStep returns the current step of a toulmin session, '' for another contract's.
 * @param {Session} session
 * @returns {string}
 */
export function toulminStep(session) {
  const step = session.contract === 'toulmin' ? session.state.step : undefined;
  return typeof step === 'string' ? step : '';
}
