// The client in a real browser: headless Chromium (Debian's, driven by playwright-core) opens a
// page of the gateway and imports the modules the gateway serves at /client/, with no build step,
// as the ChatPanel does. The browser's own fetch and streams read the turns.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { BASE, optional, skip } from './gateway.js';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// Chromium and playwright-core are needed: without them the tests skip (not on CI).
const playwright = skip ? null : await optional(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing`);
  return import('playwright-core');
});

describe('in Chromium', { skip: skip || (!playwright && `needs ${CHROMIUM} and playwright-core (npm ci in clients/js)`) }, () => {
  let context;
  let profile;
  let page;
  before(async () => {
    profile = await mkdtemp(path.join(os.tmpdir(), 'coachgw-client-'));
    context = await playwright.chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await context.newPage();
    const problems = [];
    page.on('pageerror', (err) => problems.push(err.message));
    // The ChatPanel's page: same origin as the API, and its Content-Security-Policy applies.
    await page.goto(`${BASE}/`);
    assert.deepEqual(problems, []);
  });
  after(async () => {
    await context?.close().catch(() => {});
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  test('a turn streamed and collected with the modules served at /client/', async () => {
    const got = await page.evaluate(async () => {
      const { CoachClient, TurnText } = await import('/client/index.js');
      const client = new CoachClient();
      const s = await client.createSession({ contract: 'toulmin' });
      const text = new TurnText();
      const types = [];
      let end = null;
      for await (const ev of client.streamTurn(s.id, { message: 'Cities should make public transit free for all residents by 2030.' })) {
        text.apply(ev);
        types.push(ev.type);
        end = ev;
      }
      return { types, text: text.text, assistantText: end.result.assistantText, version: end.session.version, before: s.version };
    });
    assert.ok(got.types.length > 2 && got.types.slice(0, -1).every((t) => t === 'delta'), got.types.join(' '));
    assert.equal(got.types.at(-1), 'result');
    assert.ok(got.text.length > 0 && got.assistantText.startsWith(got.text));
    assert.equal(got.version, got.before + 1);
  });

  test('stream.js alone: abort mid-stream, an HTTP error, the line limit', async () => {
    const got = await page.evaluate(async () => {
      const { CoachError, streamTurn } = await import('/client/stream.js');
      const create = await fetch('/v1/sessions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"contract":"toulmin"}' });
      const s = await create.json();
      const message = 'Cities should make public transit free for all residents by 2030.';
      const out = {};

      const ctl = new AbortController();
      let deltas = 0;
      try {
        for await (const ev of streamTurn(s.id, { message }, { signal: ctl.signal })) {
          if (ev.type === 'delta' && ++deltas === 1) ctl.abort(new Error('left'));
        }
        out.abort = 'not aborted';
      } catch (err) {
        out.abort = `${err.message} after ${deltas}`;
      }

      try {
        for await (const ev of streamTurn('0'.repeat(32), { message })) void ev;
      } catch (err) {
        out.http = err instanceof CoachError ? [err.kind, err.status, err.code] : String(err);
      }

      // The aborted turn runs on to its end (v1.2) and holds the session until then; a busy
      // answer is retried.
      for (let i = 0; i < 150; i++) {
        try {
          for await (const ev of streamTurn(s.id, { message }, { maxLineBytes: 200 })) void ev;
          out.limit = 'no error';
        } catch (err) {
          out.limit = err instanceof CoachError ? err.code : String(err);
        }
        if (out.limit !== 'session_busy') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const after = await (await fetch(`/v1/sessions/${s.id}`)).json();
      out.stored = after.version - s.version;
      return out;
    });
    assert.equal(got.abort, 'left after 1');
    assert.deepEqual(got.http, ['http', 404, 'session_not_found']);
    assert.equal(got.limit, 'line_too_long');
    // Both were stored: the aborted turn ran on to its end (v1.2: turns outlive their
    // connection), and the one cut by the line limit's over-long line was the result line, which
    // the gateway sends after the commit.
    assert.equal(got.stored, 2);
  });
});
