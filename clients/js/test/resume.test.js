// Resumable turns (v1.2) through the client against a real gateway: a turn read again from line
// N after its reader left (resumeTurn), and stopped wherever it runs (stopTurn).

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import { CoachClient, collectTurn, TurnText } from '../src/index.js';
import { all, BASE, client, drainQueue, enqueue, kinds, rejectsWith, skip, toulminChunks } from './gateway.js';

const CLAIM = 'Cities should make public transit free for all residents by 2030.';

afterEach(drainQueue);

/** A toulmin answer in many pieces that pauses after three, so a reader surely leaves mid-turn. */
const slow = () => ({ chunks: toulminChunks(['One ', 'piece ', 'at ', 'a ', 'time, ', 'and ', 'then ', 'some ', 'more.']), fault: { stall_after: 4, stall: '300ms' } });

describe('resumeTurn and stopTurn (v1.2)', { skip }, () => {
  test('a reader that leaves after 3 lines; resumeTurn after=3 gives the rest, and the same result', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    await enqueue(slow());
    let turn = '';
    let lines = 0;
    const first = [];
    for await (const ev of client.streamTurn(s.id, { message: CLAIM }, { onTurn: (t) => { turn = t; }, onLine: (n) => { lines = n; } })) {
      first.push(ev);
      if (first.length === 3) break; // leaving the loop drops the connection
    }
    assert.match(turn, /.+/, 'the X-Coach-Turn header');
    assert.equal(lines, 3);
    assert.equal(kinds(first), 'delta+');

    let resumedTurn = '';
    const lastLines = [];
    const rest = await all(client.resumeTurn(s.id, { after: lines, turn }, { onTurn: (t) => { resumedTurn = t; }, onLine: (n) => lastLines.push(n) }));
    assert.equal(resumedTurn, turn);
    assert.equal(lastLines[0], lines + 1, 'onLine counts from the lines the reader had');
    const end = rest.at(-1);
    assert.equal(end.type, 'result', kinds(rest));
    assert.equal(end.turn, turn, 'the result line names its turn');
    assert.equal(end.session.version, s.version + 1, 'the turn ran to its end and was stored');
    const text = new TurnText();
    [...first, ...rest].forEach((e) => text.apply(e));
    assert.equal(text.text, end.result.assistantText, 'the first 3 lines and the rest are the whole answer');

    // The whole turn again from its first line (within COACH_RESUME_TTL): the same lines.
    const again = await all(client.resumeTurn(s.id));
    assert.deepEqual(again, [...first, ...rest]);
  });

  test('resumeTurn: nothing to resume yields nothing; another turn id is 404 turn_not_found', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    assert.deepEqual(await all(client.resumeTurn(s.id)), []);
    const done = await collectTurn(client.streamTurn(s.id, { message: CLAIM }));
    await rejectsWith(all(client.resumeTurn(s.id, { turn: '0'.repeat(32) })), { kind: 'http', status: 404, code: 'turn_not_found' });
    const replay = await collectTurn(client.resumeTurn(s.id, { turn: done.result.turn }));
    assert.deepEqual(replay.result, done.result);
    await rejectsWith(all(client.resumeTurn('0'.repeat(32))), { kind: 'http', status: 404 });
  });

  test('stopTurn ends every reader with turn_cancelled and stores nothing; then it is false (404)', async () => {
    const s = await client.createSession({ contract: 'toulmin' });
    await enqueue({ chunks: toulminChunks(['Stalls ', 'here ', 'for long.']), fault: { stall_after: 2, stall: '30s' } });
    let turn = '';
    const sender = all(client.streamTurn(s.id, { message: CLAIM }, { onTurn: (t) => { turn = t; } }));
    // A second reader of the same turn, through the resume route.
    let follower;
    for (let i = 0; i < 100 && !follower; i++) {
      const it = client.resumeTurn(s.id)[Symbol.asyncIterator]();
      const head = await it.next();
      if (!head.done) follower = (async () => [head.value, ...(await all({ [Symbol.asyncIterator]: () => it }))])();
      else await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(follower, 'the resume route never showed the running turn');

    const other = new CoachClient({ baseURL: BASE });
    assert.equal(await other.stopTurn(s.id), true);
    for (const events of [await sender, await follower]) {
      const end = events.at(-1);
      assert.equal(end.type, 'error', kinds(events));
      assert.equal(end.error, 'turn_cancelled');
      assert.equal(end.turn, turn);
    }
    assert.equal(await client.stopTurn(s.id), false, 'no running turn: 404 no_running_turn');
    assert.equal((await client.getSession(s.id)).version, s.version, 'a stopped turn stores nothing');
    await rejectsWith(client.stopTurn('0'.repeat(32)), { kind: 'http', status: 404 });
  });
});
