// createCoachChat (src/ai.js) against a real gateway, with the AI SDK's own AbstractChat and
// DefaultChatTransport: the conversation restored page by page, the running turn resumed, Stop,
// resets, and the session kept current; and the render helpers on messages as the route sends them.

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import { cardsOf, createCoachChat, errorOf, isCardResult, isModuleResult, isToulminResult, messageText, moduleBlocks, resultOf, safetyOf, visibleParts } from '../src/ai.js';
import { client, drainQueue, enqueue, eventually, modelStats, optional, skip, toulminChunks } from './gateway.js';

const ai = await optional(() => import('ai'));

/**
 * ChatState keeps the messages as React's state does: every write stores a copy, so nothing the
 * tests see works only because a framework shares the message being built.
 */
class CopyingState {
  /** @param {any[]} [messages] */
  constructor(messages = []) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
  }
  pushMessage(m) {
    this.messages = [...this.messages, structuredClone(m)];
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(i, m) {
    this.messages = this.messages.map((old, j) => (j === i ? structuredClone(m) : old));
  }
  snapshot = (v) => structuredClone(v);
}

/** Chat is a framework-free Chat: the SDK's AbstractChat over CopyingState. */
const Chat = ai
  ? class extends ai.AbstractChat {
      constructor({ messages, ...init }) {
        super({ ...init, state: new CopyingState(messages) });
      }
    }
  : null;

/** open calls createCoachChat with the SDK's classes and records what its callbacks hear. */
async function open(id, options = {}) {
  const heard = { resets: [], errors: [], sessions: [] };
  const coach = await createCoachChat(client, id, {
    Chat,
    DefaultChatTransport: ai.DefaultChatTransport,
    onReset: (r) => heard.resets.push(r),
    onError: (e) => heard.errors.push(e),
    onSession: (s) => heard.sessions.push(s.version),
    ...options,
  });
  return { coach, chat: coach.chat, heard };
}

/** shown renders a chat's messages compactly: role and visible text of each. */
const shown = (messages) => messages.map((m) => `${m.role}: ${messageText(m) || m.parts.map((p) => p.type).join(',')}`);

const CLAIM = 'Cities should ban private cars from their centres.';

afterEach(drainQueue);

describe('createCoachChat', { skip: skip || (!ai && 'needs `npm ci` in clients/js (ai)') }, () => {
  test('restores the conversation page by page and reads the session a restored result lacks', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const { chat: before } = await open(s.id, { restore: false, resume: false, session: s });
    for (const text of [CLAIM, 'Private cars should be banned from city centres to cut pollution.', 'Cars make the air worse.']) {
      await before.sendMessage({ text });
      assert.equal(before.status, 'ready', `${text}: ${before.error}`);
    }
    for (const pageSize of [1, 2, 200]) {
      const { coach, chat, heard } = await open(s.id, { pageSize, resume: false });
      assert.deepEqual(shown(chat.messages), shown(before.messages), `pageSize ${pageSize}`);
      assert.deepEqual(chat.messages.map((m) => m.id).filter((_, i) => i % 2), before.messages.map((m) => m.id).filter((_, i) => i % 2), `pageSize ${pageSize}: answers keep their ids`);
      assert.equal(resultOf(chat.lastMessage).session, undefined, 'a restored result has no session');
      await eventually(() => assert.equal(coach.session()?.version, 4, `pageSize ${pageSize}: the session read`));
      assert.deepEqual(heard.sessions, [4]);
    }
  });

  test('a reload mid-answer: the restored messages once, then the same answer with its learner message', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const { chat: before } = await open(s.id, { restore: false, resume: false, session: s });
    await before.sendMessage({ text: CLAIM });
    await enqueue({ chunks: toulminChunks(['Slow ', 'to come.']), fault: { stall_after: 2, stall: '500ms' } });
    void before.sendMessage({ text: 'Cars make the air worse.' });
    await eventually(() => assert.match(messageText(before.lastMessage), /Slow/));
    await before.stop(); // the page goes; the turn goes on

    const { coach, chat, heard } = await open(s.id);
    await coach.resumed;
    assert.equal(chat.status, 'ready');
    const got = shown(chat.messages);
    assert.equal(got.length, 4, got.join('\n'));
    assert.deepEqual(got.slice(0, 2), shown(before.messages.slice(0, 2)), 'the earlier messages, once');
    assert.equal(got[2], 'user: Cars make the air worse.', "the resumed turn's learner message");
    assert.equal(messageText(chat.lastMessage), resultOf(chat.lastMessage).result.assistantText);
    assert.ok(messageText(chat.lastMessage).startsWith('Slow to come.'));
    assert.equal(coach.session()?.version, 3, 'the session of the resumed result');
    assert.ok(heard.sessions.includes(3));
    assert.deepEqual(heard.errors, []);
  });

  test('a reload after the answer: the replay takes the restored answer\'s place', async () => {
    const s = await client.createSession({ contract: 'cards' });
    const { chat: before } = await open(s.id, { restore: false, resume: false, session: s });
    await before.sendMessage({ text: 'Begin training.' });
    const { coach, chat } = await open(s.id);
    await coach.resumed;
    assert.deepEqual(shown(chat.messages), shown(before.messages));
    assert.ok(resultOf(chat.lastMessage)?.session, 'the replayed result, with its session');
  });

  test('stop: the SDK stops reading and the gateway stops the turn; nothing is stored', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const { coach, chat } = await open(s.id, { restore: false, resume: false, session: s });
    await enqueue({ chunks: toulminChunks(['A long answer ', 'that stalls here.']), fault: { stall_after: 2, stall: '60s' } });
    const sent = chat.sendMessage({ text: 'hi' });
    await eventually(() => assert.match(messageText(chat.lastMessage), /A long answer/));
    assert.equal(await coach.stop(), true, 'a turn was running');
    await sent;
    assert.equal(chat.status, 'ready');
    await eventually(async () => assert.equal((await modelStats()).open, 0, 'the model call is cancelled'));
    assert.equal((await client.getSession(s.id)).version, 1, 'a stopped turn stores nothing');
    assert.equal(await coach.stop(), false, 'no turn runs any more');
    await eventually(() => assert.equal(coach.session()?.version, 1, 'the session read after the stop'));
  });

  test('a reset: onReset hears it and the discarded text is not shown, with state that copies', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const { chat, heard } = await open(s.id, { restore: false, resume: false, session: s });
    await enqueue({ chunks: ['{"assistantText":"This text will ', 'be discarded ', 'by the reset.","step":"claim"}'], fault: { cut_after: 2 } });
    await chat.sendMessage({ text: 'I think cars in cities are a problem.' });
    assert.equal(chat.status, 'ready');
    assert.deepEqual(heard.resets, ['stream_interrupted']);
    const reply = chat.lastMessage;
    assert.ok(reply.parts.some((p) => p.type === 'text' && p.text.includes('discarded')), 'the part stays, marked');
    assert.equal(messageText(reply), resultOf(reply).result.assistantText);
    assert.equal(visibleParts(reply).filter((p) => p.type === 'text').length, 1);
  });

  test('the session after each turn: from the result, or read again after an error', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    // A factory instead of the class works the same.
    const { coach, chat, heard } = await open(s.id, { restore: false, resume: false, Chat: (init) => new Chat(init) });
    await eventually(() => assert.deepEqual(heard.sessions, [1], 'read at the start'));
    await chat.sendMessage({ text: CLAIM });
    assert.deepEqual(heard.sessions, [1, 2], 'from the result line');
    await enqueue({ content: 'not json' }, { content: 'still not json' });
    await chat.sendMessage({ text: 'hi' });
    assert.equal(chat.status, 'error');
    assert.deepEqual(heard.errors.map((e) => e.error), ['coach_validation_failed']);
    assert.equal(errorOf(chat.lastMessage)?.error, 'coach_validation_failed');
    await eventually(() => assert.deepEqual(heard.sessions, [1, 2, 2], 'read again: a failed turn has no session'));
    assert.equal(coach.session()?.version, 2);
  });

  test('an unknown session: the restore fails with the gateway\'s error', async () => {
    await assert.rejects(open('0'.repeat(32)), (err) => err.code === 'session_not_found');
  });
});

test('the render helpers', () => {
  const text = (t, coachgw) => ({ type: 'text', text: t, state: 'done', ...(coachgw ? { providerMetadata: { coachgw } } : {}) });
  const safety = { kind: 'crisis', locale: 'en-GB', message: 'You are not alone.', resources: [{ name: 'Samaritans', phone: '116 123' }] };
  const levelUp = { type: 'level_up', new_level: 2, message: 'Level up', content: '' };
  const cases = [
    { name: 'toulmin after a reset', message: { parts: [text('void', { discarded: true }), text('Kept.'), { type: 'data-coach-result', data: { result: { assistantText: 'Kept.', step: 'claim' } } }] },
      want: { text: 'Kept.', blocks: [{ index: 0, type: 'paragraph', text: 'Kept.' }], safety: undefined, cards: [], kind: 'toulmin' } },
    { name: 'a module turn', message: { parts: [text('Anxiety', { block: 0, blockType: 'heading' }), text('is normal.', { block: 1, blockType: 'paragraph' }), { type: 'data-coach-result', data: { result: { meta: {}, content: { text_blocks: [] } } } }] },
      want: { text: 'Anxiety\n\nis normal.', blocks: [{ index: 0, type: 'heading', text: 'Anxiety' }, { index: 1, type: 'paragraph', text: 'is normal.' }], safety: undefined, cards: [], kind: 'module' } },
    { name: 'a crisis turn', message: { parts: [{ type: 'data-coach-safety', data: safety }, text('I am glad you told me.')] },
      want: { text: 'I am glad you told me.', blocks: [{ index: 0, type: 'paragraph', text: 'I am glad you told me.' }], safety, cards: [], kind: '' } },
    { name: 'a level_up card, then a card result', message: { parts: [{ type: 'data-coach-card', data: { card: levelUp } }, text('Pick one.'), { type: 'data-coach-result', data: { result: { type: 'multiple_choice', content: 'Pick one.' } } }] },
      want: { text: 'Pick one.', blocks: [{ index: 0, type: 'paragraph', text: 'Pick one.' }], safety: undefined, cards: [levelUp], kind: 'cards' } },
    { name: 'no message', message: undefined, want: { text: '', blocks: [], safety: undefined, cards: [], kind: '' } },
  ];
  for (const c of cases) {
    const r = resultOf(c.message)?.result;
    const kind = !r ? '' : isToulminResult(r) ? 'toulmin' : isCardResult(r) ? 'cards' : isModuleResult(r) ? 'module' : '?';
    const got = { text: messageText(c.message), blocks: moduleBlocks(c.message), safety: safetyOf(c.message), cards: cardsOf(c.message), kind };
    assert.deepEqual(got, c.want, c.name);
  }
});

// useCoachChat in Vue (an effect scope) and React (rendered on happy-dom): only the session opened
// last is held, and a turn's session reaches the state.
const bindings = await optional(async () => ({
  dom: await import('./dom.js'),
  vue: await import('vue'),
  vueChat: (await import('../src/vue.js')).useCoachChat,
  react: await import('react'),
  reactDOM: await import('react-dom/client'),
  reactChat: (await import('../src/react.js')).useCoachChat,
}));

describe('useCoachChat', { skip: skip || ((!ai || !bindings) && 'needs `npm ci` in clients/js') }, () => {
  test('Vue: the session opened last wins, a turn updates session, and the scope stops reading', async () => {
    const [a, b] = [await client.createSession({ contract: 'toulmin' }), await client.createSession({ contract: 'cards' })];
    const scope = bindings.vue.effectScope();
    const coach = scope.run(() => bindings.vueChat(client, { Chat, DefaultChatTransport: ai.DefaultChatTransport }));
    assert.equal(coach.status.value, 'idle');
    const first = coach.open(a.id);
    const second = coach.open(b.id);
    assert.equal(await first, undefined, 'an open overtaken by another resolves empty');
    assert.ok(await second);
    assert.equal(coach.status.value, 'ready');
    assert.equal(coach.chat.value?.id, b.id, "the later session's chat");
    await eventually(() => assert.equal(coach.session.value?.id, b.id, "the later session's session"));

    await coach.open(a.id);
    await coach.chat.value.sendMessage({ text: CLAIM });
    assert.equal(coach.session.value?.version, 2, "the turn's session");
    await enqueue({ chunks: toulminChunks(['A long answer ', 'that stalls.']), fault: { stall_after: 2, stall: '60s' } });
    const chat = coach.chat.value;
    const sent = chat.sendMessage({ text: 'hi' });
    await eventually(() => assert.match(messageText(chat.lastMessage), /A long answer/));
    assert.equal(await coach.stop(), true);
    await sent;
    assert.equal((await client.getSession(a.id)).version, 2, 'the stopped turn stored nothing');
    scope.stop();
  });

  test('Vue: an unknown session: status error with the gateway\'s code', async () => {
    const scope = bindings.vue.effectScope();
    const coach = scope.run(() => bindings.vueChat(client, { Chat, DefaultChatTransport: ai.DefaultChatTransport }));
    assert.equal(await coach.open('0'.repeat(32)), undefined);
    assert.equal(coach.status.value, 'error');
    assert.equal(coach.error.value?.error, 'session_not_found');
    scope.stop();
  });

  test('React: open restores a conversation and re-renders with it and its session', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const { chat: before } = await open(s.id, { restore: false, resume: false, session: s });
    await before.sendMessage({ text: CLAIM });
    const { createElement: h } = bindings.react;
    let api;
    function App() {
      api = bindings.reactChat(client, { Chat, DefaultChatTransport: ai.DefaultChatTransport });
      return h('p', { 'data-testid': 'state' }, `${api.status} ${api.session?.version ?? ''} ${api.chat?.messages.length ?? 0}`);
    }
    const root = bindings.dom.mountPoint();
    const reactRoot = bindings.reactDOM.createRoot(root);
    reactRoot.render(h(App));
    await bindings.dom.waitFor(() => bindings.dom.text(root, 'state').startsWith('idle'), 'the first render');
    const coach = await api.open(s.id);
    await coach.resumed;
    await bindings.dom.waitFor(() => bindings.dom.text(root, 'state') === 'ready 2 2', `the restored chat: ${bindings.dom.text(root, 'state')}`);
    reactRoot.unmount();
  });
});
