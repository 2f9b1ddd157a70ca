// Unit tests of the stream reader: bodies made here, split at every awkward place.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { CoachError, collectTurn, parseEvent, readEvents, readNDJSON, TurnText } from '../src/index.js';

const enc = new TextEncoder();

/** body returns a ReadableStream that delivers chunks (strings or bytes) one read at a time. */
function body(...chunks) {
  let cancelled = false;
  const stream = new ReadableStream({
    pull(controller) {
      const c = chunks.shift();
      if (c === undefined) controller.close();
      else controller.enqueue(typeof c === 'string' ? enc.encode(c) : c);
    },
    cancel() {
      cancelled = true;
    },
  });
  stream.wasCancelled = () => cancelled;
  return stream;
}

async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

/** rejectsWith asserts that promise rejects with a CoachError of kind and code. */
async function rejectsWith(promise, kind, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof CoachError, `got ${err}`);
    assert.equal(err.kind, kind);
    assert.equal(err.code, code);
    return true;
  });
}

const result = '{"type":"result","result":{"assistantText":"Hi","step":"claim"},"session":{"id":"s1","contract":"toulmin","version":2,"state":{}}}';

describe('readNDJSON', () => {
  const cases = [
    { name: 'one chunk', chunks: ['{"a":1}\n{"b":2}\n'], want: [{ a: 1 }, { b: 2 }] },
    { name: 'split inside a line', chunks: ['{"a":', '1}\n{"b"', ':2}\n'], want: [{ a: 1 }, { b: 2 }] },
    { name: 'last line without newline', chunks: ['{"a":1}\n{"b":2}'], want: [{ a: 1 }, { b: 2 }] },
    { name: 'CRLF and blank lines', chunks: ['{"a":1}\r\n\r\n  \n{"b":2}\r\n'], want: [{ a: 1 }, { b: 2 }] },
    { name: 'empty body', chunks: [], want: [] },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      assert.deepEqual(await all(readNDJSON(body(...c.chunks))), c.want);
    });
  }

  test('a multi-byte character split across chunks stays whole', async () => {
    const bytes = enc.encode('{"t":"¿qué tal? 👋"}\n');
    // Cut inside the 4-byte emoji and inside "é".
    const cuts = [8, 9, 17, 18, 19];
    const chunks = [];
    let at = 0;
    for (const c of cuts) {
      chunks.push(bytes.slice(at, c));
      at = c;
    }
    chunks.push(bytes.slice(at));
    assert.deepEqual(await all(readNDJSON(body(...chunks))), [{ t: '¿qué tal? 👋' }]);
  });

  test('a line over the limit fails before its end arrives, and cancels the body', async () => {
    const b = body('{"a":1}\n', `{"t":"${'x'.repeat(40)}`, 'never read"}\n');
    const got = [];
    await rejectsWith((async () => {
      for await (const x of readNDJSON(b, { maxLineBytes: 32 })) got.push(x);
    })(), 'read', 'line_too_long');
    assert.deepEqual(got, [{ a: 1 }]);
    assert.ok(b.wasCancelled(), 'the body was not cancelled');
  });

  test('a line exactly at the limit passes; the limit counts bytes, not characters', async () => {
    const line = '{"t":"ééé"}'; // 14 bytes, 11 characters
    assert.equal(enc.encode(line).length, 14);
    assert.deepEqual(await all(readNDJSON(body(line + '\n'), { maxLineBytes: 14 })), [{ t: 'ééé' }]);
    await rejectsWith(all(readNDJSON(body(line + '\n'), { maxLineBytes: 13 })), 'read', 'line_too_long');
  });

  const bad = [
    { name: 'not JSON', chunks: ['{"a":1}\nnope\n'], code: 'malformed_line' },
    { name: 'an array', chunks: ['[1]\n'], code: 'malformed_line' },
    { name: 'a string', chunks: ['"x"\n'], code: 'malformed_line' },
    { name: 'invalid UTF-8', chunks: [new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d, 0x0a])], code: 'malformed_line' },
    { name: 'a last line cut short', chunks: ['{"a":1}\n{"b":'], code: 'stream_truncated' },
  ];
  for (const c of bad) {
    test(c.name, async () => {
      await rejectsWith(all(readNDJSON(body(...c.chunks))), 'read', c.code);
    });
  }

  test('an aborted signal stops the reading with its reason', async () => {
    const ctl = new AbortController();
    const reason = new Error('stop');
    const b = body('{"a":1}\n', '{"b":2}\n', '{"c":3}\n');
    const got = [];
    await assert.rejects((async () => {
      for await (const x of readNDJSON(b, { signal: ctl.signal })) {
        got.push(x);
        ctl.abort(reason);
      }
    })(), (err) => err === reason);
    assert.deepEqual(got, [{ a: 1 }]);
    assert.ok(b.wasCancelled());
  });

  test('leaving the loop early cancels the body', async () => {
    const b = body('{"a":1}\n', '{"b":2}\n');
    for await (const _ of readNDJSON(b)) break;
    assert.ok(b.wasCancelled());
  });
});

describe('readEvents', () => {
  test('every event type, then nothing after the result', async () => {
    const lines = [
      '{"type":"card","card":{"type":"level_up","new_level":2,"message":"Level 2"}}',
      '{"type":"delta","text":"Hel"}',
      '{"type":"reset","reason":"stream_interrupted"}',
      '{"type":"delta","text":"Hello","block":0,"blockType":"paragraph"}',
      '{"type":"future","x":1}',
      result,
      '{"type":"delta","text":"after the end"}',
    ];
    const evs = await all(readEvents(body(lines.join('\n') + '\n')));
    assert.deepEqual(evs.map((e) => e.type), ['card', 'delta', 'reset', 'delta', 'result']);
    assert.deepEqual(evs[3], { type: 'delta', text: 'Hello', block: 0, blockType: 'paragraph' });
    assert.equal(evs[4].session.version, 2);
  });

  test('an error line ends the stream as an event', async () => {
    const evs = await all(readEvents(body('{"type":"error","error":"coach_step_mismatch","message":"no"}\n')));
    assert.deepEqual(evs, [{ type: 'error', error: 'coach_step_mismatch', message: 'no' }]);
  });

  test('a stream without its result or error line is truncated', async () => {
    await rejectsWith(all(readEvents(body('{"type":"delta","text":"Hi"}\n'))), 'read', 'stream_truncated');
  });

  const malformed = [
    ['no type', { text: 'x' }],
    ['delta without text', { type: 'delta' }],
    ['negative block', { type: 'delta', text: 'x', block: -1 }],
    ['fractional block', { type: 'delta', text: 'x', block: 1.5 }],
    ['card without a card', { type: 'card', card: 'x' }],
    ['reset without a reason', { type: 'reset' }],
    ['result without a session', { type: 'result', result: {} }],
    ['result with a session without id', { type: 'result', result: {}, session: { version: 1 } }],
    ['fallback not a boolean', { type: 'result', result: {}, session: { id: 's' }, fallback: 'yes' }],
    ['error with an empty code', { type: 'error', error: '', message: 'x' }],
    ['error without a message', { type: 'error', error: 'x' }],
  ];
  for (const [name, line] of malformed) {
    test(`malformed: ${name}`, () => {
      assert.throws(() => parseEvent(line, 3), (err) => err instanceof CoachError && err.code === 'malformed_line' && /line 3/.test(err.message));
    });
  }
});

describe('TurnText and collectTurn', () => {
  test('a reset discards the text so far, blocks included', () => {
    const t = new TurnText();
    assert.equal(t.apply({ type: 'delta', text: 'Hel', block: 0, blockType: 'heading' }), true);
    assert.equal(t.apply({ type: 'delta', text: 'lo', block: 1, blockType: 'paragraph' }), true);
    assert.deepEqual([t.text, t.blocks, t.blockTypes], ['Hello', ['Hel', 'lo'], ['heading', 'paragraph']]);
    assert.equal(t.apply({ type: 'reset', reason: 'stalled' }), true);
    assert.deepEqual([t.text, t.blocks, t.resets], ['', [], 1]);
    assert.equal(t.apply({ type: 'reset', reason: 'stalled' }), false, 'a reset of no text changes nothing visible');
    t.apply({ type: 'delta', text: 'Again' });
    assert.equal(t.text, 'Again');
  });

  test('collectTurn returns the text after the last reset, the cards and the result', async () => {
    const lines = [
      '{"type":"card","card":{"type":"level_up"}}',
      '{"type":"delta","text":"first try"}',
      '{"type":"reset","reason":"invalid_output"}',
      '{"type":"delta","text":"Hi"}',
      result,
    ];
    const seen = [];
    const got = await collectTurn(readEvents(body(lines.join('\n'))), (ev, text) => seen.push(`${ev.type}:${text.text}`));
    assert.equal(got.text, 'Hi');
    assert.equal(got.cards.length, 1);
    assert.equal(got.result.result.assistantText, 'Hi');
    assert.deepEqual(seen, ['card:', 'delta:first try', 'reset:', 'delta:Hi', 'result:Hi']);
  });

  test('collectTurn throws the error line as a CoachError of kind turn', async () => {
    await rejectsWith(collectTurn(readEvents(body('{"type":"delta","text":"x"}\n{"type":"error","error":"coach_stream_failed","message":"gone"}\n'))), 'turn', 'coach_stream_failed');
  });
});

describe('chunking', () => {
  // A stream with multi-byte text in every line kind, cut at seeded random byte offsets: however
  // the network splits it, the events are the same.
  const lines = [
    '{"type":"card","card":{"type":"level_up","new_level":2,"message":"¡Nivel 2! 🎉"}}',
    '{"type":"delta","text":"Ça va — "}',
    '{"type":"reset","reason":"stalled"}',
    '{"type":"delta","text":"日本語のテキスト","block":1,"blockType":"paragraph"}',
    '{"type":"delta","text":"👩‍🏫 coach"}',
    result,
  ];
  const bytes = enc.encode(lines.join('\n') + '\n');

  /** mulberry32 is a small seeded PRNG, so a failure can be replayed. */
  function mulberry32(seed) {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  test('random splits give the same events', async () => {
    const want = await all(readEvents(body(bytes)));
    assert.equal(want.length, lines.length);
    for (let seed = 1; seed <= 300; seed++) {
      const rand = mulberry32(seed);
      const chunks = [];
      for (let at = 0; at < bytes.length;) {
        const n = 1 + Math.floor(rand() * 24);
        chunks.push(bytes.slice(at, at + n));
        at += n;
      }
      assert.deepEqual(await all(readEvents(body(...chunks))), want, `seed ${seed}`);
    }
  });
});
