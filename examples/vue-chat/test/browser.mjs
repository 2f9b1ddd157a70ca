#!/usr/bin/env node
// Browser test of the example app: headless Chromium (playwright-core, Debian's /usr/bin/chromium)
// drives the built app through a toulmin session, a cards drill, a module turn and a reset, with
// @ai-sdk/vue's Chat talking to a real gateway on another origin (CORS).
//
//   APP_URL=http://127.0.0.1:4173/ COACHGW_URL=http://127.0.0.1:8080 FAKELLM_URL=http://127.0.0.1:9000 node test/browser.mjs
//
// e2e_test.go builds the app, serves it and starts the gateway. Exit code 1 when a scenario
// failed; a failed scenario leaves a screenshot in SCREENSHOT_DIR (default: the system's temp dir).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const APP = process.env.APP_URL ?? '';
const GATEWAY = (process.env.COACHGW_URL ?? '').replace(/\/+$/, '');
const FAKELLM = (process.env.FAKELLM_URL ?? '').replace(/\/+$/, '');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = process.env.SCREENSHOT_DIR ?? os.tmpdir();
const WAIT = 20_000;
if (!APP || !GATEWAY || !FAKELLM) throw new Error('set APP_URL, COACHGW_URL and FAKELLM_URL (e2e_test.go does)');

function assert(cond, message) {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

let failed = 0;
let context;

/** scenario runs fn on a fresh page of the app; page errors and console errors fail it. */
async function scenario(name, fn) {
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  const start = Date.now();
  try {
    await page.goto(`${APP}?gateway=${encodeURIComponent(GATEWAY)}`);
    await fn(page);
    assert(problems.length === 0, problems.join('; '));
    console.log(`ok   ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)`);
  } catch (err) {
    failed++;
    const shot = path.join(SHOTS, `vue-chat-${name.replace(/\W+/g, '-')}.png`);
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    console.log(`FAIL ${name}: ${err.stack ?? err}\n     screenshot: ${shot}`);
  } finally {
    await page.close();
  }
}

/** results waits until the page shows n result parts and the chat is ready again. */
async function results(page, n) {
  await page.locator('[data-testid=result]').nth(n - 1).waitFor();
  await page.locator('[data-testid=status]', { hasText: 'ready' }).waitFor();
}

/** lastAssistant is the locator of the last assistant message. */
const lastAssistant = (page) => page.locator('[data-testid=message][data-role=assistant]').last();

/** conversation returns what the page shows: each message's role and text. */
async function conversation(page) {
  return page.locator('[data-testid=message]').evaluateAll((els) => els.map((e) => `${e.dataset.role}: ${e.innerText.trim()}`));
}

/**
 * reloadRestores reloads the page once its chat is ready and checks that the conversation comes
 * back as it was, each message once: restored from GET …/chat/messages, the last answer also
 * replayed by the resume (GET …/chat/stream) in its place.
 */
async function reloadRestores(page) {
  await page.locator('[data-testid=status]', { hasText: 'ready' }).waitFor();
  const before = await conversation(page);
  await page.reload();
  await page.locator('[data-restore=done]').waitFor();
  await page.locator('[data-testid=status]', { hasText: 'ready' }).waitFor();
  const after = await conversation(page);
  assert(JSON.stringify(after) === JSON.stringify(before), `after the reload:\n${after.join('\n')}\nwant as before:\n${before.join('\n')}`);
}

async function say(page, text) {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('send').click();
}

async function main() {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'vue-chat-chromium-'));
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1100, height: 900 },
    });

    await scenario('toulmin session', async (page) => {
      await page.getByTestId('new-toulmin').click();
      await say(page, 'Cities should ban private cars from their centres.');
      await results(page, 1);
      const text = await lastAssistant(page).getByTestId('text').innerText();
      assert(text.length > 20, `the coach's text streamed in: ${JSON.stringify(text)}`);
      assert(/step claim/.test(await lastAssistant(page).getByTestId('result').innerText()), 'the result names the step');
      await say(page, 'Private cars should be banned from city centres to cut pollution.');
      await results(page, 2);
      assert((await lastAssistant(page).getByTestId('result').getAttribute('data-version')) === '3', 'the second turn stored version 3');
      // The replay model proposes the restated claim; accepting it moves the session on.
      await page.getByTestId('proposal').waitFor();
      await page.getByTestId('accept').click();
      await page.locator('[data-testid=step]', { hasText: 'grounds' }).waitFor();
      // The app then sends data-coach-continue: the coach opens the grounds on its own.
      await results(page, 3);
      assert(/step grounds/.test(await lastAssistant(page).getByTestId('result').innerText()), 'the coach opens the grounds');
      assert((await page.locator('[data-role=user]').last().innerText()).includes('accepted'), 'the opening turn went as a data-coach-continue part');
      await say(page, 'In Tallinn, bus ridership rose by 14% in the first year after fares were dropped.');
      await results(page, 4);
      assert(/step grounds/.test(await lastAssistant(page).getByTestId('result').innerText()), 'the next turn coaches the grounds');
      await reloadRestores(page);
      assert((await page.locator('[data-role=user]').nth(2).innerText()).includes('accepted'), 'the decision is restored too');
      // The step is the session's, read back after the reload (the restored results have none).
      const step = await page.getByTestId('step').innerText({ timeout: 5000 });
      assert(step === 'grounds', `after the reload the step is ${JSON.stringify(step)}, want "grounds"`);
    });

    await scenario('cards drill', async (page) => {
      await page.getByTestId('new-cards').click(); // sends "Begin training."
      await results(page, 1);
      assert((await lastAssistant(page).getByTestId('result').innerText()).includes('scenario'), 'a scenario card first');
      await page.getByTestId('continue').click();
      await results(page, 2);
      await say(page, 'I would ask what is getting in the way and offer to help with the next handoff.');
      await results(page, 3);
      await page.getByTestId('continue').click();
      await results(page, 4);
      // One completed cycle per level: this turn opens with the level_up card, then the choice.
      await lastAssistant(page).getByTestId('injected-card').waitFor();
      assert((await lastAssistant(page).getByTestId('injected-card').innerText()).startsWith('Level 2'), 'a level_up card to level 2');
      await page.getByTestId('option-b').click();
      await results(page, 5);
      assert((await lastAssistant(page).getByTestId('result').innerText()).includes('reflection'), 'a reflection card after the choice');
      assert((await page.locator('[data-role=user]').last().innerText()).includes('chose b'), 'the choice went as a data-coach-select part');
      await reloadRestores(page);
      await page.getByTestId('continue').or(page.getByTestId('input')).waitFor();
    });

    await scenario('module turn', async (page) => {
      await page.getByTestId('new-module').click();
      await say(page, 'Hi, what is anxiety?');
      await results(page, 1);
      const blocks = await lastAssistant(page).getByTestId('text').evaluateAll((els) => els.map((e) => e.dataset.blockType));
      assert(blocks.length >= 2, `one text part per block: ${blocks}`);
      assert(blocks.includes('paragraph'), `block types come through: ${blocks}`);
      assert(/% of the module covered/.test(await lastAssistant(page).getByTestId('result').innerText()), 'the progress shows');
      await reloadRestores(page);
      const restored = await lastAssistant(page).getByTestId('text').evaluateAll((els) => els.map((e) => e.dataset.blockType));
      assert(JSON.stringify(restored) === JSON.stringify(blocks), `the blocks restored: ${restored}, want ${blocks}`);
    });

    await scenario('an error shows its code', async (page) => {
      await page.getByTestId('new-toulmin').click();
      const res = await fetch(`${FAKELLM}/_fakellm/enqueue`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify([{ content: 'not json' }, { content: 'still not json' }]),
      });
      assert(res.ok, `enqueue: ${res.status}`);
      await say(page, 'Cities should ban private cars.');
      const error = page.getByTestId('error');
      await error.waitFor();
      assert((await error.getAttribute('data-error')) === 'coach_validation_failed', `the error's code: ${await error.getAttribute('data-error')}`);
      assert(!(await error.innerText()).includes('{'), `the message, not JSON: ${await error.innerText()}`);
    });

    await scenario('cards fallback shows the result card', async (page) => {
      // Twice a card the frontend would reject: its streamed text is discarded, the fallback
      // card is the result and has no text part of its own.
      const banner = '{"content":"A banner card that will be discarded.","card_type":"banner"}';
      const reply = { tool_call: { name: 'display_card', arguments: banner }, chunks: banner.match(/.{1,6}/g) };
      const res = await fetch(`${FAKELLM}/_fakellm/enqueue`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify([reply, reply]),
      });
      assert(res.ok, `enqueue: ${res.status}`);
      await page.getByTestId('new-cards').click();
      await results(page, 1);
      assert((await lastAssistant(page).getByTestId('text').count()) === 0, 'no discarded text shows');
      const content = await lastAssistant(page).getByTestId('card-content').innerText();
      assert(content.length > 0 && !content.includes('discarded'), `the fallback card's content shows: ${content}`);
      assert((await lastAssistant(page).getByTestId('result').innerText()).includes('(fallback)'), 'marked as a fallback');
    });

    await scenario('reset drops the discarded text', async (page) => {
      await page.getByTestId('new-toulmin').click();
      const res = await fetch(`${FAKELLM}/_fakellm/enqueue`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify([{ chunks: ['{"assistantText":"This text will ', 'be discarded ', 'by the reset.","step":"claim"}'], fault: { cut_after: 2 } }]),
      });
      assert(res.ok, `enqueue: ${res.status}`);
      await say(page, 'I think cars in cities are a problem.');
      await results(page, 1);
      await page.getByTestId('resets').waitFor();
      const texts = await lastAssistant(page).getByTestId('text').allInnerTexts();
      assert(texts.length === 1 && !texts[0].includes('discarded'), `only the retried text shows: ${JSON.stringify(texts)}`);
    });

    await scenario('reload mid-answer: the answer finishes; stop stores nothing', async (page) => {
      await page.getByTestId('new-toulmin').click();
      const enqueue = async (reply) => {
        const res = await fetch(`${FAKELLM}/_fakellm/enqueue`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify([reply]) });
        assert(res.ok, `enqueue: ${res.status}`);
      };
      await say(page, 'Cities should ban private cars from their centres.');
      await results(page, 1);
      const earlier = await conversation(page);
      // The answer pauses after its first piece: the reload surely comes mid-answer.
      await enqueue({ chunks: ['{"assistantText":"A first piece, ', 'and after the reload the rest.","step":"claim","confidence":0.3,"shouldAdvance":false}'], fault: { stall_after: 1, stall: '1500ms' } });
      await say(page, 'Private cars make the air in city centres worse.');
      await lastAssistant(page).getByTestId('text').filter({ hasText: 'A first piece' }).waitFor();
      assert(new URL(page.url()).searchParams.get('session'), 'the session is in the address');
      await page.reload();
      // The reloaded page restores the earlier messages (GET …/chat/messages) and follows the
      // same turn (GET …/chat/stream) to its result; once stored, the learner's message of that
      // turn is read back with it.
      await page.locator('[data-restore=done]').waitFor();
      await page.locator('[data-testid=status]', { hasText: 'ready' }).waitFor();
      const shown = await conversation(page);
      assert(shown.length === 4, `four messages, each once:\n${shown.join('\n')}`);
      assert(JSON.stringify(shown.slice(0, 2)) === JSON.stringify(earlier), `the earlier messages, once:\n${shown.join('\n')}`);
      assert(shown[2] === 'user: Private cars make the air in city centres worse.', `the learner's message of the resumed turn: ${shown[2]}`);
      const text = await lastAssistant(page).getByTestId('text').innerText();
      assert(text.startsWith('A first piece, and after the reload the rest.'), `the same answer, finished: ${JSON.stringify(text)}`);
      assert((await page.locator('[data-testid=text]', { hasText: 'A first piece' }).count()) === 1, 'the answer shows once');
      // A reload after the answer: the same four messages again.
      await reloadRestores(page);

      // Stop: the DELETE route stops the turn on the gateway; nothing is stored.
      await enqueue({ chunks: ['{"assistantText":"This answer ', 'is stopped.","step":"claim"}'], fault: { stall_after: 1, stall: '30s' } });
      await say(page, 'Private cars should be banned from city centres.');
      await lastAssistant(page).getByTestId('text').filter({ hasText: 'This answer' }).waitFor();
      await page.getByTestId('stop').click();
      await page.locator('[data-testid=status]', { hasText: 'ready' }).waitFor();
      const sid = new URL(page.url()).searchParams.get('session');
      // The model call stalls for 30 s unless the stop cancelled it.
      for (let i = 0; ; i++) {
        const stats = await (await fetch(`${FAKELLM}/_fakellm/stats`)).json();
        if (stats.open === 0) break;
        assert(i < 100, 'the model call still runs after stop');
        await new Promise((r) => setTimeout(r, 50));
      }
      const again = await fetch(`${GATEWAY}/v1/sessions/${sid}/turns/current`, { method: 'DELETE' });
      assert(again.status === 404, `no turn runs after stop: ${again.status}`);
      const session = await (await fetch(`${GATEWAY}/v1/sessions/${sid}`)).json();
      assert(session.version === 3, `the stopped turn stored nothing: version ${session.version}`);
    });
  } finally {
    await context?.close().catch(() => {});
    await rm(profile, { recursive: true, force: true });
  }
  console.log(failed ? `${failed} scenario(s) failed` : 'all scenarios passed');
  process.exitCode = failed ? 1 : 0;
}

await main();
