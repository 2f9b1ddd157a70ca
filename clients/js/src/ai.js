// The AI SDK side of the gateway's chat route (@coachgw/client/ai): the type of its UI messages
// with coachgw's data-coach-* parts typed from the gateway's schemas, and the helpers a useChat
// app needs (the chat's error as the gateway's {error, message}, the routes to resume and stop a
// turn). `ai` is an optional peer dependency for the types only; nothing here imports it at run
// time, and the supported majors are those CI tests (see README.md).

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
export function chatError(err, lastMessage) {
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : String(err ?? '');
  for (const p of [...(lastMessage?.parts ?? [])].reverse()) {
    if (p.type !== 'data-coach-error') continue;
    const d = /** @type {{ error?: unknown, message?: unknown }} */ (p.data ?? {});
    if (typeof d.error === 'string') return { error: d.error, message: typeof d.message === 'string' ? d.message : message };
  }
  try {
    const body = JSON.parse(message);
    if (body && typeof body === 'object' && typeof body.error === 'string') {
      /** @type {CoachChatError} */
      const out = { error: body.error, message: typeof body.message === 'string' ? body.message : body.error };
      if (typeof body.field === 'string' && body.field) out.field = body.field;
      return out;
    }
  } catch {
    // Not the gateway's JSON: a network failure, or a proxy's page.
  }
  return { error: 'network_error', message: message || 'network error' };
}

/**
 * chatRoutes returns the gateway's chat routes of a session (v1.2): `api` for the transport,
 * `stream` for prepareReconnectToStreamRequest (useChat's `resume: true`), `messages` to restore
 * a conversation (`{messages, next}`), and `stop` (DELETE) to stop the running turn.
 * @param {string} baseURL the gateway's base URL ("" for the page's own origin)
 * @param {string} sessionId
 */
export function chatRoutes(baseURL, sessionId) {
  const session = `${(baseURL || '').replace(/\/+$/, '')}/v1/sessions/${encodeURIComponent(sessionId)}`;
  return {
    api: `${session}/chat`,
    stream: `${session}/chat/stream`,
    messages: `${session}/chat/messages`,
    stop: `${session}/turns/current`,
  };
}

// createCoachChat and the render helpers: the glue every useChat app of the gateway needs, once.

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
export function chatTransportOptions(client, sessionId) {
  const routes = chatRoutes(client.options.baseURL ?? '', sessionId);
  const { fetch } = client.options;
  return {
    api: routes.api,
    headers: typeof client.options.apiKey === 'function' ? () => authHeaders(client) : authHeaders(client),
    ...(fetch ? { fetch } : {}),
    prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
      body: { id, trigger, messageId, messages: messages.slice(-1) },
    }),
    prepareReconnectToStreamRequest: () => ({ api: routes.stream }),
  };
}

/**
 * authHeaders returns the client's own headers and its API key's Authorization header.
 * @param {CoachClient} client
 * @returns {Record<string, string>}
 */
function authHeaders(client) {
  const { apiKey, headers } = client.options;
  const key = typeof apiKey === 'function' ? apiKey() : apiKey;
  return { ...headers, ...(key ? { Authorization: `Bearer ${key}` } : {}) };
}

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
export async function createCoachChat(client, sessionId, options) {
  const { restore = true, resume = true, pageSize = 200 } = options;
  /** @type {Session | undefined} */
  let session = options.session;
  const failed = (/** @type {unknown} */ err) => options.onError?.(toChatError(err));
  const setSession = (/** @type {Session} */ s) => {
    session = s;
    options.onSession?.(s);
  };
  const refresh = async () => {
    try {
      setSession(await client.getSession(sessionId));
      return session;
    } catch (err) {
      failed(err);
      return undefined;
    }
  };

  const messages = restore ? await restoreMessages(client, sessionId, pageSize) : [];
  const transport = make(options.DefaultChatTransport, chatTransportOptions(client, sessionId));
  /** @type {T} */
  const chat = make(options.Chat, {
    ...options.init,
    id: sessionId,
    messages,
    transport,
    onError: (err) => options.onError?.(chatError(err, chat.lastMessage)),
    onData: (part) => {
      if (part.type === 'data-coach-reset') options.onReset?.(part.data.reason);
    },
    onFinish: () => {
      const data = resultOf(chat.lastMessage);
      if (data?.session) setSession(data.session);
      else void refresh();
    },
  });
  if (session) options.onSession?.(session);
  else void refresh();

  const resumed = resume ? followRunningTurn(client, sessionId, chat, messages, pageSize).catch(failed) : Promise.resolve();
  return {
    chat,
    sessionId,
    session: () => session,
    resumed,
    refresh,
    async stop() {
      await chat.stop();
      try {
        return await client.stopTurn(sessionId);
      } catch (err) {
        failed(err);
        return false;
      }
    },
  };
}

/**
 * followRunningTurn resumes the session's running (or just ended) turn; an answer replayed
 * under the id of a restored one takes its place. When the resumed answer is new and stored and
 * the restored conversation does not end with its learner message, the conversation is read
 * again, unless the learner moved on meanwhile.
 * @param {CoachClient} client
 * @param {string} sessionId
 * @param {import('ai').AbstractChat<CoachUIMessage>} chat
 * @param {CoachUIMessage[]} restored
 * @param {number} pageSize
 */
async function followRunningTurn(client, sessionId, chat, restored, pageSize) {
  await chat.resumeStream();
  const last = chat.lastMessage;
  if (chat.status !== 'ready' || !last || last.role !== 'assistant' || !resultOf(last)) return;
  if (restored.some((m) => m.id === last.id) || restored.at(-1)?.role === 'user') return;
  const now = await restoreMessages(client, sessionId, pageSize);
  if (chat.lastMessage === last && chat.status === 'ready') chat.messages = now;
}

/**
 * restoreMessages reads a session's conversation as UI messages, every page, oldest first.
 * @param {CoachClient} client
 * @param {string} sessionId
 * @param {number} pageSize
 * @returns {Promise<CoachUIMessage[]>}
 */
export async function restoreMessages(client, sessionId, pageSize = 200) {
  const base = `/v1/sessions/${encodeURIComponent(sessionId)}/chat/messages?limit=${pageSize}`;
  /** @type {CoachUIMessage[][]} */
  const pages = [];
  for (let before = ''; ; ) {
    const page = /** @type {{ messages: CoachUIMessage[], next: number | null }} */ (await client.call('GET', base + before, undefined));
    pages.push(page.messages);
    if (page.next === null || page.next === undefined || page.messages.length === 0) return pages.reverse().flat();
    before = `&before=${page.next}`;
  }
}

/**
 * make calls a class with `new` and any other function (an arrow function has no prototype)
 * plainly; `new` on a plain function that returns an object yields that object too.
 * @template A, T
 * @param {(new (arg: A) => T) | ((arg: A) => T)} maker
 * @param {A} arg
 * @returns {T}
 */
function make(maker, arg) {
  if (typeof maker.prototype === 'object') return new (/** @type {new (arg: A) => T} */ (maker))(arg);
  return /** @type {(arg: A) => T} */ (maker)(arg);
}

/**
 * toChatError turns a failed call's error (a CoachError, or anything else) into {error, message}.
 * @param {unknown} err
 * @returns {CoachChatError}
 */
function toChatError(err) {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') {
    /** @type {CoachChatError} */
    const out = { error: err.code, message: err instanceof Error ? err.message : err.code };
    if ('field' in err && typeof err.field === 'string' && err.field) out.field = err.field;
    return out;
  }
  return { error: 'network_error', message: err instanceof Error ? err.message : String(err) };
}

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
export function textBlock(part) {
  const meta = part.type === 'text' ? part.providerMetadata?.coachgw : undefined;
  /** @type {TextBlock} */
  const out = {};
  if (!meta) return out;
  if (typeof meta.block === 'number') out.block = meta.block;
  if (typeof meta.blockType === 'string') out.blockType = meta.blockType;
  if (meta.discarded === true) out.discarded = true;
  return out;
}

/**
 * visibleParts returns the parts of a message to show: all but the text a reset discarded. It
 * reads the marks the gateway sets, so it works whatever a framework's state does with the
 * parts.
 * @param {CoachUIMessage} message
 * @returns {CoachPart[]}
 */
export function visibleParts(message) {
  return message.parts.filter((p) => !(p.type === 'text' && textBlock(p).discarded));
}

/**
 * messageText returns the visible text of a message: its text parts that no reset discarded,
 * a module turn's blocks separated by a blank line.
 * @param {CoachUIMessage | undefined} message
 * @returns {string}
 */
export function messageText(message) {
  if (!message) return '';
  return visibleParts(message)
    .flatMap((p) => (p.type === 'text' ? [p.text] : []))
    .join('\n\n');
}

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
export function moduleBlocks(message) {
  if (!message) return [];
  /** @type {ModuleBlock[]} */
  const out = [];
  for (const p of visibleParts(message)) {
    if (p.type !== 'text') continue;
    const meta = textBlock(p);
    out.push({ index: meta.block ?? out.length, type: meta.blockType ?? 'paragraph', text: p.text });
  }
  return out;
}

/**
 * resultOf returns the data of the message's data-coach-result part: the result, and the
 * session after the turn when it was streamed (a restored answer has no session).
 * @param {CoachUIMessage | undefined} message
 * @returns {CoachResultData | undefined}
 */
export function resultOf(message) {
  for (const p of message?.parts ?? []) if (p.type === 'data-coach-result') return p.data;
  return undefined;
}

/**
 * safetyOf returns a crisis turn's safety notice (data-coach-safety: its message and crisis
 * resources), to show prominently above everything else; undefined for every other message.
 * @param {CoachUIMessage | undefined} message
 * @returns {SafetyNotice | undefined}
 */
export function safetyOf(message) {
  for (const p of message?.parts ?? []) if (p.type === 'data-coach-safety') return p.data;
  return undefined;
}

/**
 * cardsOf returns the cards a message carries besides its result (data-coach-card: e.g. an
 * injected level_up card), in order.
 * @param {CoachUIMessage | undefined} message
 * @returns {FrontendCard[]}
 */
export function cardsOf(message) {
  return (message?.parts ?? []).flatMap((p) => (p.type === 'data-coach-card' ? [p.data.card] : []));
}

/**
 * errorOf returns the error line of a failed turn's message (data-coach-error), if it has one.
 * @param {CoachUIMessage | undefined} message
 * @returns {{ error: string, message: string, turn?: string } | undefined}
 */
export function errorOf(message) {
  for (const p of message?.parts ?? []) if (p.type === 'data-coach-error') return p.data;
  return undefined;
}

// Which contract's result a data-coach-result holds: each contract's result has a member the
// others lack (toulmin's assistantText, a card's type, a module response's meta), so a result
// narrows by its shape, without a cast.

/**
 * isToulminResult says whether result is a toulmin session's CoachAIResult.
 * @param {TurnResult} result
 * @returns {result is CoachAIResult}
 */
export function isToulminResult(result) {
  return 'assistantText' in result;
}

/**
 * isCardResult says whether result is a cards session's frontend card.
 * @param {TurnResult} result
 * @returns {result is FrontendCard}
 */
export function isCardResult(result) {
  return 'type' in result;
}

/**
 * isModuleResult says whether result is a module session's structured response.
 * @param {TurnResult} result
 * @returns {result is StructuredResponse}
 */
export function isModuleResult(result) {
  return 'meta' in result;
}

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
export class CoachChatHolder {
  /**
   * @param {CoachClient} client
   * @param {UseCoachChatOptions<T>} options
   * @param {(snapshot: CoachChatSnapshot<T>) => void} onChange
   */
  constructor(client, options, onChange) {
    this.client = client;
    this.options = options;
    this.onChange = onChange;
    /** @type {CoachChatSnapshot<T>} */
    this.snapshot = { chat: undefined, session: undefined, status: 'idle', error: undefined, resets: 0 };
    /** @type {CoachChat<T> | undefined} */
    this.coach = undefined;
    this.opened = 0;
  }

  /**
   * set changes the snapshot and tells onChange.
   * @param {Partial<CoachChatSnapshot<T>>} change
   */
  set(change) {
    this.snapshot = { ...this.snapshot, ...change };
    this.onChange(this.snapshot);
  }

  /**
   * open makes the chat of sessionId (createCoachChat) in place of the one held; the held one
   * stops reading (its turn goes on on the gateway). Resolves with the chat, or undefined when
   * the restore failed or another open came after it.
   * @param {string} sessionId
   * @param {OpenOptions} [how]
   * @returns {Promise<CoachChat<T> | undefined>}
   */
  async open(sessionId, how = {}) {
    const n = ++this.opened;
    const current = () => n === this.opened;
    void this.coach?.chat.stop();
    this.coach = undefined;
    this.set({ chat: undefined, session: how.session, status: 'restoring', error: undefined, resets: 0 });
    const { options } = this;
    try {
      const coach = await createCoachChat(this.client, sessionId, {
        ...options,
        ...how,
        onReset: (reason) => {
          if (current()) this.set({ resets: this.snapshot.resets + 1 });
          options.onReset?.(reason);
        },
        onError: (error) => {
          if (current()) this.set({ error });
          options.onError?.(error);
        },
        onSession: (session) => {
          if (current()) this.set({ session });
          options.onSession?.(session);
        },
      });
      if (!current()) {
        void coach.chat.stop();
        return undefined;
      }
      this.coach = coach;
      this.set({ chat: coach.chat, status: 'ready' });
      return coach;
    } catch (err) {
      if (current()) this.set({ status: 'error', error: toChatError(err) });
      return undefined;
    }
  }

  /** stop stops the running turn of the chat held, on the gateway too (CoachChat.stop). */
  async stop() {
    return (await this.coach?.stop()) ?? false;
  }

  /** refresh reads the held session again. */
  async refresh() {
    return this.coach?.refresh();
  }

  /** clearError forgets the last error, e.g. when the learner sends again. */
  clearError() {
    this.set({ error: undefined });
  }

  /** close stops reading the held chat's turn (the turn goes on on the gateway). */
  close() {
    this.opened++;
    void this.coach?.chat.stop();
  }
}
