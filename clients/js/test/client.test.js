// The client against a real gateway (started by TestNode in jsclient_test.go) whose model is the
// replay model behind a scriptable fakellm.

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import { CoachClient, CoachError, collectTurn, coachTurn, TurnText } from '../src/index.js';
import { all, BASE, client, drainQueue, enqueue, eventually, kinds, modelStats, rejectsWith, skip, toulminChunks } from './gateway.js';

const CLAIM = 'Cities should make public transit free for all residents by 2030.';

afterEach(drainQueue);

describe('session calls', { skip }, () => {
  test('create, get, draft, proposal, delete', async () => {
    const s = await client.createSession({ contract: 'toulmin', locale: 'en' });
    assert.match(s.id, /^[0-9a-f]{32}$/);
    assert.equal(s.contract, 'toulmin');
    assert.equal(s.state.step, 'claim');
    assert.deepEqual((await client.getSession(s.id)).id, s.id);

    const drafted = await client.setDraft(s.id, 'claim', CLAIM);
    assert.equal(drafted.state.draft.claim, CLAIM);
    assert.ok(drafted.version > s.version, `version ${drafted.version} after ${s.version}`);

    await rejectsWith(client.decideProposal(s.id, 'accept'), { kind: 'http', status: 409, code: 'no_pending_proposal', retryable: false });

    await client.deleteSession(s.id);
    await rejectsWith(client.getSession(s.id), { kind: 'http', status: 404, code: 'session_not_found' });
    await client.deleteSession(s.id); // deleting what is gone is not an error
  });

  test('a locale with a region and a learner reference (v1.3)', async () => {
    const learner = `lrn-${process.pid}-${Date.now()}`;
    const s = await client.createSession({ contract: 'toulmin', locale: 'es-MX', learner });
    assert.equal(s.locale, 'es-MX');
    assert.equal(s.learner, learner);
    const got = await client.getSession(s.id);
    assert.equal(got.locale, 'es-MX', 'the locale is stored');
    assert.equal(got.learner, learner, 'the learner reference is stored');
    // The gateway writes the region in capitals, as the crisis resources name it.
    assert.equal((await client.createSession({ contract: 'cards', locale: 'es-mx' })).locale, 'es-MX');
    const cases = [
      { name: 'a region of three letters', body: { contract: 'toulmin', locale: 'es-MEX' } },
      { name: 'a language the gateway does not speak', body: { contract: 'toulmin', locale: 'fr-FR' } },
      { name: 'a learner reference with a space', body: { contract: 'toulmin', learner: 'a b' } },
      { name: 'a learner reference with a slash', body: { contract: 'toulmin', learner: '../x' } },
      { name: 'a learner reference of 129 characters', body: { contract: 'toulmin', learner: 'x'.repeat(129) } },
    ];
    for (const c of cases) {
      await rejectsWith(client.createSession(c.body), { kind: 'http', status: 400, code: 'invalid_request' }).catch((err) => {
        throw new Error(`${c.name}: ${err.message}`);
      });
    }
    await client.deleteSession(s.id);
  });

  test('modules', async () => {
    const list = await client.listModules();
    const anxiety = list.find((m) => m.id === 'anxiety-basics');
    assert.ok(anxiety, `anxiety-basics not in ${JSON.stringify(list)}`);
    const mod = await client.getModule('anxiety-basics');
    assert.equal(mod.id, 'anxiety-basics');
    assert.equal(mod.sections.length, anxiety.sections);
    assert.equal(mod.sections.reduce((n, sec) => n + sec.topics.length, 0), anxiety.topics);
    await rejectsWith(client.getModule('no-such-module'), { kind: 'http', status: 404, code: 'module_not_found' });
  });

  test('HTTP errors before a stream carry status, code, message and field', async () => {
    const cards = await client.createSession({ contract: 'cards' });
    await collectTurn(client.streamTurn(cards.id, { message: 'Begin training.' }));
    const cases = [
      { name: 'unknown contract', call: () => client.createSession(/** @type {any} */ ({ contract: 'poetry' })), want: { status: 400, code: 'unknown_contract' } },
      { name: 'unknown session', call: () => all(client.streamTurn('0'.repeat(32), { message: 'hi' })), want: { status: 404, code: 'session_not_found' } },
      { name: 'malformed id', call: () => client.getSession('x\r\nFLUSHALL'), want: { status: 404, code: 'session_not_found' } },
      { name: 'an option the card did not offer', call: () => all(client.streamTurn(cards.id, { selected: 'z' })), want: { status: 422, code: 'invalid_input', field: 'selected', retryable: false } },
      { name: 'a message with control characters', call: () => all(client.streamTurn(cards.id, { message: 'a\u0000b' })), want: { status: 422, code: 'invalid_input', field: 'message' } },
    ];
    for (const c of cases) {
      await rejectsWith(c.call(), { kind: 'http', ...c.want }).catch((err) => {
        throw new Error(`${c.name}: ${err.message}`);
      });
    }
    try {
      await all(client.streamTurn(cards.id, { selected: 'z' }));
    } catch (err) {
      assert.ok(err instanceof CoachError);
      assert.ok(err.message.length > 0 && err.message !== err.code, `message ${JSON.stringify(err.message)}`);
    }
  });

  test('a request that gets no answer is a network error', async () => {
    const dead = new CoachClient({ baseURL: 'http://127.0.0.1:9' });
    await rejectsWith(dead.listModules(), { kind: 'network', code: 'network_error', status: 0, retryable: true });
  });

  test('an API key is sent as a bearer token', async () => {
    let auth = '';
    const spy = new CoachClient({
      baseURL: BASE,
      apiKey: () => 'k-123',
      fetch: (url, init) => {
        auth = new Headers(init?.headers).get('Authorization') ?? '';
        return fetch(url, init);
      },
    });
    await spy.listModules();
    assert.equal(auth, 'Bearer k-123');
  });
});

describe('turns', { skip }, () => {
  test('toulmin: deltas then the result; the text is the whole assistantText, question included (v1.2)', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const events = await all(client.streamTurn(s.id, { message: CLAIM }));
    assert.equal(kinds(events), 'delta+ result');
    const text = new TurnText();
    events.forEach((e) => text.apply(e));
    const end = events.at(-1);
    assert.equal(end.type, 'result');
    const r = end.result;
    assert.equal(r.step, 'claim');
    // v1.2: the appended question is streamed as the last delta; nothing is to be appended.
    assert.equal(text.text, r.assistantText);
    assert.equal(end.session.id, s.id);
    assert.equal(end.session.version, s.version + 1);
  });

  test('the seed\'s /api/coach route streams the same', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const got = await collectTurn(coachTurn({ sessionId: s.id, message: CLAIM }, { baseURL: BASE }));
    assert.ok(got.text.length > 0);
    assert.equal(got.result.session.version, s.version + 1);
  });

  test('cards: a card line (the injected level_up card), then the next card as the result', async () => {
    const s = await client.createSession({ contract: 'cards' });
    const first = await collectTurn(client.streamTurn(s.id, { message: 'Begin training.' }));
    assert.equal(first.result.result.type, 'scenario');
    assert.equal(first.text, first.result.result.content);
    const prompt = await collectTurn(client.streamTurn(s.id, { message: '[Continue]' }));
    assert.equal(prompt.result.result.type, 'prompt');
    const insight = await collectTurn(client.streamTurn(s.id, { message: "I'd ask what is in their way, and we'd agree on a plan by Friday." }));
    assert.equal(insight.result.result.type, 'insight');
    const events = await all(client.streamTurn(s.id, { message: '[Continue]' }));
    assert.equal(kinds(events), 'card delta+ result');
    const card = events[0];
    assert.equal(card.type, 'card');
    assert.equal(card.card.type, 'level_up');
    assert.equal(card.card.new_level, 2);
    assert.equal(events.at(-1).session.state.level, 2);
  });

  test('module: deltas placed in text blocks, and the structured response', async () => {
    const s = await client.createSession({ contract: 'module', module: 'anxiety-basics' });
    const text = new TurnText();
    const got = await collectTurn(client.streamTurn(s.id, { message: 'What is anxiety, and why does my heart race?' }), (ev, t) => {
      if (ev.type === 'delta') assert.equal(typeof ev.block, 'number', 'a module delta has its block');
      text.apply(ev);
      assert.equal(t.text, text.text);
    });
    const blocks = got.result.result.content.text_blocks;
    assert.ok(blocks.length > 0);
    assert.deepEqual(text.blocks, blocks.map((b) => b.content));
    assert.deepEqual(text.blockTypes, blocks.map((b) => b.type));
    assert.equal(typeof got.result.result.meta.progress?.percentage, 'number');
  });

  test('reset: the text before it is discarded, the retry\'s text is the turn\'s', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    // The first model call is cut after three events, with text already sent; the retry is the
    // replay model's.
    await enqueue({ chunks: toulminChunks(['Text that ', 'will be ', 'discarded ', 'by the client.']), fault: { cut_after: 3 } });
    const seen = [];
    const got = await collectTurn(client.streamTurn(s.id, { message: CLAIM }), (ev, t) => seen.push([ev.type, t.text]));
    const types = seen.map(([type]) => type);
    const at = types.indexOf('reset');
    assert.ok(at > 0, `no reset after text in ${types.join(' ')}`);
    assert.equal(seen[at - 1][1], 'Text that will be ', 'the text before the reset');
    assert.equal(seen[at][1], '', 'the text right after the reset');
    assert.ok(!got.text.includes('discarded'), got.text);
    assert.equal(got.result.result.assistantText.startsWith(got.text), true);
    assert.equal(got.result.session.version, s.version + 1);
  });

  test('an error line after text: two cut streams end the turn', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const cut = { chunks: toulminChunks(['Going, ', 'going, ', 'gone.']), fault: { cut_after: 2 } };
    await enqueue(cut, cut);
    const events = await all(client.streamTurn(s.id, { message: CLAIM }));
    assert.equal(kinds(events), 'delta+ reset delta+ error:coach_stream_failed');
    await rejectsWith((async () => {
      await enqueue(cut, cut);
      await collectTurn(client.streamTurn(s.id, { message: CLAIM }));
    })(), { kind: 'turn', code: 'coach_stream_failed', status: 0, retryable: true });
    assert.equal((await client.getSession(s.id)).version, s.version, 'a failed turn stores nothing');
  });

  test('an error line as the only line: a step mismatch', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const events = await all(client.streamTurn(s.id, { message: CLAIM, step: 'grounds' }));
    assert.equal(kinds(events), 'error:coach_step_mismatch');
    assert.ok(events[0].message.length > 0);
  });

  test('abort mid-stream: the iteration throws the reason; the turn runs on and is stored (v1.2)', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const ctl = new AbortController();
    // A slow answer, so that the abort surely comes while it streams.
    await enqueue({ chunks: toulminChunks(['One ', 'piece ', 'at ', 'a ', 'time ', 'and ', 'slowly.']), fault: { drip: '1ms' } });
    const reason = new Error('the learner left');
    let deltas = 0;
    await assert.rejects((async () => {
      for await (const ev of client.streamTurn(s.id, { message: CLAIM }, { signal: ctl.signal })) {
        if (ev.type === 'delta' && ++deltas === 1) ctl.abort(reason);
      }
    })(), (err) => err === reason);
    assert.equal(deltas, 1);
    // The turn outlives its connection: resumed, it ends with its result, stored.
    const resumed = await collectTurn(client.resumeTurn(s.id));
    assert.equal(resumed.result.session.version, s.version + 1, 'the aborted turn was not stored');
    assert.equal(resumed.text, resumed.result.result.assistantText);
  });

  test('an aborted signal before the start sends nothing', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const ctl = new AbortController();
    ctl.abort();
    await assert.rejects(all(client.streamTurn(s.id, { message: CLAIM }, { signal: ctl.signal })), (err) => err === ctl.signal.reason);
    assert.equal((await client.getSession(s.id)).version, s.version);
  });

  test('a concurrent turn of the same session is 409 session_busy', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    await enqueue({ chunks: toulminChunks(['Slow ', 'answer.']), fault: { first_byte_delay: '300ms' } });
    const first = collectTurn(client.streamTurn(s.id, { message: CLAIM }));
    // The first turn holds the session once its model call is open.
    await eventually(async () => assert.ok((await modelStats()).open >= 1, 'the model call is not open yet'));
    await rejectsWith(all(client.streamTurn(s.id, { message: CLAIM })), { kind: 'http', status: 409, code: 'session_busy', retryable: true });
    await first;
  });

  test('a line over the limit ends the stream with line_too_long', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const small = new CoachClient({ baseURL: BASE, maxLineBytes: 256 });
    const events = [];
    await rejectsWith((async () => {
      for await (const ev of small.streamTurn(s.id, { message: CLAIM })) events.push(ev);
    })(), { kind: 'read', code: 'line_too_long' });
    assert.ok(events.length > 0 && events.every((e) => e.type === 'delta'), `events before: ${kinds(events)}`);
    // The over-long line was the result line, sent after the commit: the turn is stored.
    assert.equal((await client.getSession(s.id)).version, s.version + 1);
  });

  test('an answer that is not a stream', async () => {
    const fake = new CoachClient({ fetch: async () => new Response('<html>hi</html>', { status: 200, headers: { 'Content-Type': 'text/html' } }) });
    await rejectsWith(all(fake.streamTurn('s', { message: 'x' })), { kind: 'read', code: 'not_a_stream' });
    const proxy = new CoachClient({ fetch: async () => new Response('Bad Gateway', { status: 502, statusText: 'Bad Gateway', headers: { 'Retry-After': '7' } }) });
    await rejectsWith(all(proxy.streamTurn('s', { message: 'x' })), { kind: 'http', status: 502, code: 'http_502', message: 'Bad Gateway', retryAfter: 7, retryable: true });
  });

  test('streamTurn sends nothing until iterated', async () => {
    let calls = 0;
    const counting = new CoachClient({ fetch: async () => { calls++; return new Response('', { status: 500 }); } });
    const it = counting.streamTurn('s', { message: 'x' });
    assert.equal(calls, 0);
    await rejectsWith(it.next(), { status: 500 });
    assert.equal(calls, 1);
  });
});

describe('transcript', { skip }, () => {
  test('messages pages newest first, oldest first within a page; transcript reads them all', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    const bodies = [{ message: CLAIM }, { message: 'My claim is that councils should fund fare-free buses and trams for every resident by 2030.' }, { continue: true }];
    const results = [];
    for (const body of bodies) results.push((await collectTurn(client.streamTurn(s.id, body))).result.result);
    // A failed turn adds nothing.
    assert.equal(kinds(await all(client.streamTurn(s.id, { message: CLAIM, step: 'rebuttal' }))), 'error:coach_step_mismatch');

    const all6 = await client.transcript(s.id, { limit: 4 });
    assert.deepEqual(all6.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(all6.map((e) => e.role), ['learner', 'coach', 'learner', 'coach', 'learner', 'coach']);
    assert.deepEqual(all6.filter((e) => e.role === 'learner').map((e) => e.input), bodies);
    assert.deepEqual(all6.filter((e) => e.role === 'coach').map((e) => e.result), results);
    assert.ok(all6.every((e) => !Number.isNaN(Date.parse(e.at))));

    const newest = await client.messages(s.id, { limit: 4 });
    assert.deepEqual(newest.messages.map((e) => e.seq), [3, 4, 5, 6]);
    assert.equal(newest.next, 3);
    const older = await client.messages(s.id, { limit: 4, before: newest.next });
    assert.deepEqual(older.messages.map((e) => e.seq), [1, 2]);
    assert.equal(older.next, null);
  });

  test('an injected card is an entry of its own; errors as for the session', async () => {
    const s = await client.createSession({ contract: 'cards' });
    for (const message of ['Begin training.', '[Continue]', "I'd ask what is in their way, and we'd agree on a plan by Friday.", '[Continue]']) {
      await collectTurn(client.streamTurn(s.id, { message }));
    }
    const entries = await client.transcript(s.id);
    const cards = entries.filter((e) => 'card' in e);
    assert.equal(cards.length, 1);
    assert.equal(cards[0].card.type, 'level_up');
    assert.equal(entries.at(-1).result.type, 'multiple_choice');
    await rejectsWith(client.messages('0'.repeat(32)), { kind: 'http', status: 404, code: 'session_not_found' });
    await rejectsWith(client.messages(s.id, { limit: 0 }), { kind: 'http', status: 422, code: 'invalid_input', field: 'limit' });
  });
});
