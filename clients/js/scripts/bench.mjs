#!/usr/bin/env node
// bench measures the stream reader: a turn-like NDJSON body (short delta lines, one large result
// line) read by readEvents from chunks of a given size, as the network would deliver them.
//
//   node scripts/bench.mjs [chunkBytes=1024] [deltas=20000]

import { readEvents } from '../src/index.js';

const chunkBytes = Number(process.argv[2] || 1024);
const deltas = Number(process.argv[3] || 20000);
const enc = new TextEncoder();
const lines = [];
for (let i = 0; i < deltas; i++) lines.push(JSON.stringify({ type: 'delta', text: `piece ${i} of the coach’s answer · ` }));
lines.push(JSON.stringify({ type: 'result', result: { assistantText: 'x'.repeat(200_000), step: 'claim' }, session: { id: 's', contract: 'toulmin', version: 2, state: {} } }));
const bytes = enc.encode(lines.join('\n') + '\n');

function body() {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.subarray(at, at + chunkBytes));
      at += chunkBytes;
    },
  });
}

async function once() {
  let n = 0;
  for await (const _ of readEvents(body())) n++;
  if (n !== deltas + 1) throw new Error(`read ${n} events, want ${deltas + 1}`);
}

await once(); // warm-up
const runs = 10;
const start = process.hrtime.bigint();
for (let i = 0; i < runs; i++) await once();
const sec = Number(process.hrtime.bigint() - start) / 1e9 / runs;
console.log(`${(bytes.length / 1e6).toFixed(2)} MB, ${deltas + 1} lines, ${chunkBytes}-byte chunks: ${(sec * 1000).toFixed(1)} ms a stream, ${(bytes.length / 1e6 / sec).toFixed(1)} MB/s, ${((deltas + 1) / sec / 1e6).toFixed(2)} M lines/s`);
