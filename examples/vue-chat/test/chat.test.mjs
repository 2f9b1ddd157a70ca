// The chat route read by the AI SDK's own code: the SDK's chat transport (the request useChat
// sends, its SSE parser and chunk schema), its message reader (readUIMessageStream), and
// @ai-sdk/vue's Chat made by @coachgw/client's createCoachChat, as the example app makes it.
//
//   COACHGW_URL=http://127.0.0.1:8080 FAKELLM_URL=http://127.0.0.1:9000 node --test test/
//
// The gateway's model is the replay model behind a fakellm that a test scripts
// (POST /_fakellm/enqueue) to cut a stream or send unusable output. e2e_test.go starts both.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Chat } from '@ai-sdk/vue';
import { CoachClient, createCoachChat, isCardResult as isCard, isModuleResult as isModule, isToulminResult as isToulmin, restoreMessages, resultOf, textBlock as textMetadata, visibleParts } from '@coachgw/client';
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const GATEWAY = (process.env.COACHGW_URL ?? '').replace(/\/+$/, '');
const FAKELLM = (process.env.FAKELLM_URL ?? '').replace(/\/+$/, '');
if (!GATEWAY || !FAKELLM) throw new Error('set COACHGW_URL and FAKELLM_URL (e2e_test.go does)');
const client = new CoachClient({ baseURL: GATEWAY });

/** createSession creates a session and returns its id. */
const createSession = async (_gateway, body) => (await client.createSession(body)).id;

/**
 * createChat returns the Vue Chat of a session as createCoachChat makes it; restore and resume
 * are off unless asked for. It resolves once the conversation is restored.
 */
async function createChat({ sessionId, restore = false, resume = false, onReset, onError }) {
  const coach = await createCoachChat(client, sessionId, { Chat, DefaultChatTransport, restore, resume, onReset, onError });
  return Object.assign(coach.chat, { coach });
}

/** enqueue scripts the model's next answers. */
async function enqueue(...replies) {
  const res = await fetch(`${FAKELLM}/_fakellm/enqueue`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(replies),
  });
  assert.equal(res.status, 200, `enqueue: ${await res.text()}`);
}

/** A toulmin answer cut after two chunks: the text is streamed, then the connection breaks. */
const cutToulmin = { chunks: ['{"assistantText":"This text will ', 'be discarded ', 'by the reset.","step":"claim"}'], fault: { cut_after: 2 } };

/**
 * readTurn sends one learner message through the SDK's transport and reads the chunks with the
 * SDK's reader; it returns every chunk and the last message state.
 */
async function readTurn(sessionId, parts) {
  const transport = new DefaultChatTransport({ api: `${GATEWAY}/v1/sessions/${sessionId}/chat` });
  const stream = await transport.sendMessages({
    chatId: 'node-test', trigger: 'submit-message', messageId: undefined, abortSignal: undefined,
    messages: [{ id: 'u1', role: 'user', parts }],
  });
  const chunks = [];
  const errors = [];
  let message;
  const tapped = stream.pipeThrough(new TransformStream({ transform(c, ctl) { chunks.push(c); ctl.enqueue(c); } }));
  for await (const m of readUIMessageStream({ stream: tapped, onError: (e) => errors.push(e) })) message = m;
  return { chunks, message, errors };
}

test('the SDK reads a toulmin turn: one text part, then the result', async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const { chunks, message, errors } = await readTurn(id, [{ type: 'text', text: 'Cities should ban private cars from their centres.' }]);
  assert.deepEqual(errors, []);
  assert.equal(chunks[0].type, 'start');
  assert.equal(message.id, chunks[0].messageId);
  assert.deepEqual(message.parts.map((p) => p.type), ['text', 'data-coach-result']);
  const { result, session } = resultOf(message);
  const [text] = message.parts;
  assert.equal(text.state, 'done');
  // v1.2: the text is the whole assistantText, the appended question streamed as its last delta.
  assert.equal(text.text, result.assistantText);
  assert.equal(session.id, id);
  assert.equal(session.version, 2);
});

test('the SDK keeps a reset-discarded part marked, and visibleParts leaves it out', async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  await enqueue(cutToulmin);
  const { chunks, message } = await readTurn(id, [{ type: 'text', text: 'I think cars in cities are a problem.' }]);
  assert.ok(chunks.some((c) => c.type === 'data-coach-reset' && c.transient && c.data.reason === 'stream_interrupted'), 'a transient data-coach-reset');
  const texts = message.parts.filter((p) => p.type === 'text');
  assert.equal(texts.length, 2);
  assert.equal(textMetadata(texts[0]).discarded, true);
  assert.ok(texts[0].text.startsWith('This text will'));
  assert.equal(textMetadata(texts[1]).discarded, undefined);
  const visible = visibleParts(message).filter((p) => p.type === 'text');
  assert.deepEqual(visible.map((p) => p.text), [texts[1].text]);
  assert.ok(!message.parts.some((p) => p.type === 'data-coach-reset'), 'a transient part is not kept in the message');
  assert.equal(resultOf(message).session.version, 2);
});

test("Vue's Chat: a toulmin turn", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const chat = await createChat({ sessionId: id });
  await chat.sendMessage({ text: 'Cities should ban private cars from their centres.' });
  assert.equal(chat.status, 'ready');
  assert.equal(chat.error, undefined);
  assert.deepEqual(chat.messages.map((m) => m.role), ['user', 'assistant']);
  const reply = chat.lastMessage;
  assert.deepEqual(reply.parts.map((p) => p.type), ['text', 'data-coach-result']);
  assert.equal(resultOf(reply).result.step, 'claim');

  await chat.sendMessage({ text: 'Private cars should be banned from city centres to cut pollution.' });
  assert.equal(chat.status, 'ready');
  assert.equal(chat.messages.length, 4);
  assert.equal(resultOf(chat.lastMessage).session.version, 3);
});

test("Vue's Chat: a reset is heard, and visibleParts leaves out the text it discarded", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const reasons = [];
  const chat = await createChat({ sessionId: id, onReset: (r) => reasons.push(r) });
  await enqueue(cutToulmin);
  await chat.sendMessage({ text: 'I think cars in cities are a problem.' });
  assert.equal(chat.status, 'ready');
  assert.deepEqual(reasons, ['stream_interrupted']);
  const reply = chat.lastMessage;
  const visible = visibleParts(reply);
  assert.deepEqual(visible.map((p) => p.type), ['text', 'data-coach-result']);
  assert.ok(!visible[0].text.includes('discarded'), `the discarded text is left out: ${visible[0].text}`);
  assert.ok(resultOf(reply).result.assistantText.startsWith(visible[0].text));
});

test("Vue's Chat: a cards drill, a level_up card and a selection", async () => {
  const id = await createSession(GATEWAY, { contract: 'cards' });
  const chat = await createChat({ sessionId: id });
  const turn = async (message, want) => {
    await chat.sendMessage(message);
    assert.equal(chat.status, 'ready', `${want}: ${chat.error}`);
    const reply = chat.lastMessage;
    const card = resultOf(reply).result;
    assert.equal(card.type, want);
    const text = reply.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    assert.equal(text, card.content, `${want}: the text part is the card's content`);
    return reply;
  };
  await turn({ text: 'Begin training.' }, 'scenario');
  await turn({ text: '[Continue]' }, 'prompt');
  await turn({ text: 'I would ask them what is getting in the way, and offer to help.' }, 'insight');
  // One completed cycle per level here: the next turn opens with the level_up card.
  const levelUp = await turn({ text: '[Continue]' }, 'multiple_choice');
  assert.equal(levelUp.parts[0].type, 'data-coach-card');
  assert.equal(levelUp.parts[0].data.card.type, 'level_up');
  assert.equal(levelUp.parts[0].data.card.new_level, 2);
  const option = resultOf(levelUp).result.options[1].id;
  await turn({ parts: [{ type: 'data-coach-select', data: { selected: option } }] }, 'reflection');
});

test("Vue's Chat: a module turn, one text part per block", async () => {
  const id = await createSession(GATEWAY, { contract: 'module', module: 'anxiety-basics' });
  const chat = await createChat({ sessionId: id });
  await chat.sendMessage({ text: 'Hi, what is anxiety?' });
  assert.equal(chat.status, 'ready');
  const reply = chat.lastMessage;
  const texts = reply.parts.filter((p) => p.type === 'text');
  const { result, session } = resultOf(reply);
  assert.equal(texts.length, result.content.text_blocks.length);
  texts.forEach((p, i) => {
    assert.deepEqual(textMetadata(p), { block: i, blockType: result.content.text_blocks[i].type });
    assert.equal(p.text, result.content.text_blocks[i].content);
  });
  assert.equal(typeof session.state.percentage, 'number');
});

/** stats returns the fakellm's counters: requests, open streams, served, queued. */
async function stats() {
  return (await fetch(`${FAKELLM}/_fakellm/stats`)).json();
}

/** until polls cond every 20 ms for at most 5 s. */
async function until(what, cond) {
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    if (await cond()) return;
  }
  throw new Error(`timed out waiting for ${what}`);
}

test("Vue's Chat: the coach's stop() mid-stream cancels the turn upstream and stores nothing", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const chat = await createChat({ sessionId: id });
  await enqueue({ chunks: ['{"assistantText":"A long answer ', 'that stalls here.","step":"claim"}'], fault: { stall_after: 1, stall: '60s' } });
  const sent = chat.sendMessage({ text: 'hi' });
  await until('text to stream', () => chat.lastMessage?.role === 'assistant' && chat.lastMessage.parts.some((p) => p.type === 'text' && p.text));
  assert.equal((await stats()).open, 1);
  // chat.stop() alone only stops reading (v1.2: the turn outlives its connection); the coach's
  // stop() also sends the DELETE route, which stops the turn itself.
  assert.equal(await chat.coach.stop(), true);
  await sent;
  assert.equal(chat.status, 'ready');
  await until('the upstream stream to close', async () => (await stats()).open === 0);
  const session = await (await fetch(`${GATEWAY}/v1/sessions/${id}`)).json();
  assert.equal(session.version, 1, 'a cancelled turn stores nothing');
  assert.equal(await client.stopTurn(id), false, 'no turn runs: 404');
  // The session is free again: the next turn goes through.
  await until('the session lock to go', async () => {
    const next = await createChat({ sessionId: id });
    await next.sendMessage({ text: 'Cities should ban private cars.' });
    return next.status === 'ready' && resultOf(next.lastMessage)?.session.version === 2;
  });
});

test("Vue's Chat: an error line reaches onError as the gateway's {error, message}", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const errors = [];
  const chat = await createChat({ sessionId: id, onError: (e) => errors.push(e) });
  await enqueue({ content: 'not json' }, { content: 'still not json' });
  await chat.sendMessage({ text: 'hi' });
  assert.equal(chat.status, 'error');
  const coachError = chat.lastMessage.parts.find((p) => p.type === 'data-coach-error');
  assert.deepEqual(errors, [{ error: 'coach_validation_failed', message: coachError?.data.message }]);
  assert.equal(resultOf(chat.lastMessage), undefined);
});

test("Vue's Chat: an error before the stream reaches onError as the gateway's {error, message, field}", async () => {
  const errors = [];
  const chat = await createChat({ sessionId: '0'.repeat(32), onError: (e) => errors.push(e) });
  await chat.sendMessage({ text: 'hi' });
  assert.equal(chat.status, 'error');
  // The turn's error, and the read of the session createCoachChat makes at the start, which
  // may end after the turn's.
  // Under load the SDK has been seen to report the turn's error a second time; every report
  // must still be the gateway's.
  for (let i = 0; i < 100 && errors.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(errors.length >= 2, `errors heard: ${JSON.stringify(errors)}`);
  assert.deepEqual([...new Set(errors.map((e) => e.error))], ['session_not_found']);
  for (const e of errors) assert.doesNotMatch(e.message, /^\{/, 'the message, not the JSON body');

  const id = await createSession(GATEWAY, { contract: 'cards' });
  const cards = await createChat({ sessionId: id, onError: (e) => errors.push(e) });
  await cards.sendMessage({ parts: [{ type: 'data-coach-select', data: { selected: 'z' } }] });
  assert.equal(cards.status, 'error');
  assert.equal(errors.at(-1).error, 'invalid_input');
  assert.equal(errors.at(-1).field, 'selected');
});

test("the SDK's DefaultChatTransport resumes a turn its reader left (reconnectToStream → GET …/chat/stream)", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const api = `${GATEWAY}/v1/sessions/${id}/chat`;
  // Nothing to resume on a new session: 204, which the SDK reads as null.
  const idle = new DefaultChatTransport({ api, prepareReconnectToStreamRequest: () => ({ api: `${api}/stream` }) });
  assert.equal(await idle.reconnectToStream({ chatId: 'node-test' }), null);

  await enqueue({ chunks: ['{"assistantText":"A first piece, ', 'then a pause, ', 'then the rest.","step":"claim","confidence":0.3,"shouldAdvance":false}'], fault: { stall_after: 2, stall: '400ms' } });
  const abort = new AbortController();
  const first = await new DefaultChatTransport({ api }).sendMessages({
    chatId: 'node-test', trigger: 'submit-message', messageId: undefined, abortSignal: abort.signal,
    messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Cities should ban private cars from their centres.' }] }],
  });
  const reader = first.getReader();
  for (let c = await reader.read(); !c.done && c.value.type !== 'text-delta'; c = await reader.read());
  abort.abort(); // the page goes away mid-answer
  await reader.cancel().catch(() => {});

  // A page loaded again: the SDK's own transport, pointed at the gateway's stream route.
  const transport = new DefaultChatTransport({ api, prepareReconnectToStreamRequest: () => ({ api: `${api}/stream` }) });
  const stream = await transport.reconnectToStream({ chatId: 'node-test' });
  assert.ok(stream, 'the running turn was found');
  let message;
  for await (const m of readUIMessageStream({ stream })) message = m;
  assert.deepEqual(message.parts.map((p) => p.type), ['text', 'data-coach-result']);
  const { result, session } = resultOf(message);
  assert.equal(message.parts[0].text, result.assistantText, 'the whole answer, replayed from its start');
  assert.equal(session.version, 2, 'the turn outlived its connection and was stored');
});

test("Vue's Chat with resume follows the running turn (what a reload does)", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  await enqueue({ chunks: ['{"assistantText":"Slow ', 'to come.","step":"claim","confidence":0.3,"shouldAdvance":false}'], fault: { stall_after: 1, stall: '400ms' } });
  const before = await createChat({ sessionId: id });
  void before.sendMessage({ text: 'hi' });
  await until('text to stream', () => before.lastMessage?.role === 'assistant' && before.lastMessage.parts.some((p) => p.type === 'text' && p.text));
  await before.stop(); // stops reading only

  const chat = await createChat({ sessionId: id, resume: true });
  await until('the resumed turn to end', () => resultOf(chat.lastMessage) !== undefined && chat.status === 'ready');
  await chat.coach.resumed;
  const reply = chat.lastMessage;
  assert.equal(reply.role, 'assistant');
  assert.equal(reply.parts.find((p) => p.type === 'text')?.text, resultOf(reply).result.assistantText);
  assert.deepEqual(chat.messages.map((m) => m.role), ['user', 'assistant'], 'with its learner message, read back');
  assert.equal(chat.coach.session()?.version, 2);
});

/** shown renders a chat's messages compactly: role, id and visible text of each. */
const shown = (chat) => chat.messages.map((m) => `${m.role} ${m.id} ${visibleParts(m).filter((p) => p.type === 'text').map((p) => p.text).join('|')}`);

for (const [contract, options, first] of [
  ['toulmin', {}, { text: 'Cities should ban private cars from their centres.' }],
  ['cards', {}, { text: 'Begin training.' }],
  ['module', { module: 'anxiety-basics' }, { text: 'Hi, what is anxiety?' }],
]) {
  test(`Vue's Chat restored from chat/messages, then resumed after the answer: no answer twice (${contract})`, async () => {
    const id = await createSession(GATEWAY, { contract, ...options });
    const before = await createChat({ sessionId: id });
    await before.sendMessage(first);
    assert.equal(before.status, 'ready');

    // The reload: the conversation from GET …/chat/messages, then resume (GET …/chat/stream
    // replays the turn that just ended, under the id its restored answer has).
    const messages = await restoreMessages(client, id);
    assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
    assert.equal(messages[1].id, before.lastMessage.id, "the restored answer has the id it was streamed under (its turn's)");
    // The restored result: the contract's, told apart by its shape; no session (the page reads
    // the session for the toulmin step).
    const restoredResult = resultOf(messages[1]);
    assert.equal(restoredResult?.session, undefined, 'a restored result has no session');
    const kinds = { toulmin: isToulmin, cards: isCard, module: isModule };
    for (const [kind, is] of Object.entries(kinds)) {
      assert.equal(is(restoredResult.result), kind === contract, `${kind}'s guard on a ${contract} result`);
    }
    const chat = await createChat({ sessionId: id, restore: true, resume: true });
    assert.deepEqual(shown(chat), shown({ messages }), 'createCoachChat restores the same messages');
    const restored = shown(chat);
    await chat.coach.resumed;
    assert.equal(chat.coach.session()?.state.step, contract === 'toulmin' ? 'claim' : undefined, "the session, with the toulmin step");
    assert.equal(chat.status, 'ready');
    assert.deepEqual(shown(chat), restored, 'the replay took the restored answer\'s place');
    // The same conversation as the page saw before the reload (a learner message's id is the
    // SDK's own until it is read back).
    const noUserIds = (lines) => lines.map((l) => l.replace(/^user \S+/, 'user'));
    assert.deepEqual(noUserIds(shown(chat)), noUserIds(shown(before)));
    assert.ok(resultOf(chat.lastMessage)?.session, 'the replayed result, with its session');
  });
}

test("Vue's Chat restored from chat/messages mid-answer: the earlier messages once, the running answer once", async () => {
  const id = await createSession(GATEWAY, { contract: 'toulmin' });
  const before = await createChat({ sessionId: id });
  await before.sendMessage({ text: 'Cities should ban private cars from their centres.' });
  await enqueue({ chunks: ['{"assistantText":"Slow ', 'to come.","step":"claim","confidence":0.3,"shouldAdvance":false}'], fault: { stall_after: 1, stall: '600ms' } });
  void before.sendMessage({ text: 'Cars make the air worse.' });
  await until('text to stream', () => before.lastMessage?.role === 'assistant' && before.messages.length === 4 && before.lastMessage.parts.some((p) => p.type === 'text' && p.text));
  await before.stop(); // the page goes; the turn goes on

  const messages = (await restoreMessages(client, id)).slice(0, 2);
  const chat = await createChat({ sessionId: id, restore: true, resume: true });
  await chat.coach.resumed;
  const texts = shown(chat);
  assert.equal(texts.length, 4, texts.join('\n'));
  assert.deepEqual(texts.slice(0, 2), shown({ messages }), 'the restored messages, once');
  assert.match(texts[2], /^user \S+ Cars make the air worse\.$/, "the resumed turn's learner message");
  assert.match(texts[3], /Slow to come\.$/);
  assert.equal(chat.coach.session()?.version, 3, 'the session of the resumed result');

  // Once stored, the turn is in the transcript under the same id: read again, nothing twice.
  const after = await restoreMessages(client, id);
  assert.deepEqual(after.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
  assert.equal(after[3].id, chat.lastMessage.id);
});
