// What the tests against a real gateway share. internal TestNode (jsclient_test.go) starts the
// gateway and its scripted model and passes their URLs in COACHGW_URL and FAKELLM_URL; without
// them (plain `node --test`), those tests skip.

import assert from 'node:assert/strict';

import { CoachClient, CoachError } from '../src/index.js';

export const BASE = process.env.COACHGW_URL || '';
export const FAKELLM = process.env.FAKELLM_URL || '';

/** skip is the reason to skip the tests that need a gateway, or false. */
export const skip = BASE ? false : 'needs a gateway: run through `go test ./clients/js` (TestNode)';

export const client = new CoachClient({ baseURL: BASE });

/**
 * enqueue queues replies at the scripted model: the next model requests get them, in order,
 * instead of the replay model's answer.
 * @param {object[]} replies fakellm replies ({content, chunks, tool_call, fault})
 */
export async function enqueue(...replies) {
  const res = await fetch(`${FAKELLM}/_fakellm/enqueue`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(replies) });
  assert.equal(res.status, 200, `enqueue: ${await res.text()}`);
}

/** modelStats returns the scripted model's counters: {requests, open, served, queued}. */
export async function modelStats() {
  return (await fetch(`${FAKELLM}/_fakellm/stats`)).json();
}

/** drainQueue drops whatever a failed test left queued at the scripted model. */
export async function drainQueue() {
  if (FAKELLM) await fetch(`${FAKELLM}/_fakellm/reset`, { method: 'POST' });
}

/** all collects an async iterable. */
export async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

/** kinds renders events compactly, a run of deltas as one "delta+", e.g. "card delta+ result". */
export function kinds(events) {
  const out = [];
  for (const e of events) {
    const k = e.type === 'error' ? `error:${e.error}` : e.type === 'delta' ? 'delta+' : e.type;
    if (k !== 'delta+' || out.at(-1) !== 'delta+') out.push(k);
  }
  return out.join(' ');
}

/**
 * rejectsWith asserts that promise rejects with a CoachError with the given fields.
 * @param {Promise<unknown>} promise
 * @param {Partial<CoachError>} want
 */
export async function rejectsWith(promise, want) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof CoachError, `got ${err}`);
    for (const [k, v] of Object.entries(want)) assert.equal(err[k], v, `${k} of ${err.kind} ${err.code}: ${err.message}`);
    return true;
  });
}

/** eventually retries fn until it stops throwing, for up to 3 s. */
export async function eventually(fn) {
  const deadline = Date.now() + 3000;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** toulminContent is a valid toulmin answer of the model whose text is chunked as given. */
export function toulminChunks(pieces, step = 'claim') {
  return ['{"assistantText":"', ...pieces, `","step":"${step}","confidence":0.3,"shouldAdvance":false}`];
}

/**
 * optional imports what a group of tests needs beyond node (dev dependencies, a browser) and
 * returns it, or null when it cannot: those tests then skip, except under CI, where it throws.
 * @template T
 * @param {() => Promise<T>} load
 * @returns {Promise<T | null>}
 */
export async function optional(load) {
  try {
    return await load();
  } catch (err) {
    if (process.env.CI === 'true') throw err;
    return null;
  }
}

/**
 * sendWhenFree calls send (which takes a turn and resolves null when it failed) again while the
 * turn fails with busy() true (409 session_busy: the gateway may hold the session a moment after
 * an abort), for up to 2 s. It returns { done }, the promise of the turn that went through, once
 * that turn has run for 50 ms.
 * @param {() => Promise<unknown>} send
 * @param {() => boolean} busy
 */
export async function sendWhenFree(send, busy) {
  const deadline = Date.now() + 2000;
  for (;;) {
    const done = send();
    const first = await Promise.race([done, new Promise((r) => setTimeout(() => r('running'), 50))]);
    if (first === 'running' || first !== null || !busy() || Date.now() > deadline) return { done };
  }
}
