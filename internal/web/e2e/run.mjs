#!/usr/bin/env node
// Browser test of the coachgw ChatPanel. It drives Debian's Chromium (/usr/bin/chromium) with
// playwright-core against a running gateway whose model is the embedded replay model:
//
//   COACHGW_URL=http://127.0.0.1:8080 node run.mjs [name-filter]
//
// Screenshots go to COACH_SCREENSHOTS_DIR (default: a new temporary directory, never the
// repository); CI keeps them as artifacts. COACHGW_E2E_FILTER (or the first argument) runs only
// the scenarios whose name contains it (or one of its |-separated parts). Every scenario has a
// browser context of its own (its own storage, cookies and BroadcastChannel), so scenarios run
// side by side, COACHGW_E2E_CONCURRENCY at a time (default 2); 1 runs them one after the other.
// The last line of the output is "N passed, N failed"; the exit code is 1 when anything failed.
// internal/web/e2e_test.go starts a gateway and runs this script.

import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { charCount, draftLimit, messageLimit } from '../static/js/limits.js';
import { parseBlocks, parseInline } from '../static/js/markdown.js';
import { sessionLocale } from '../static/js/i18n.js';

// axe-core, the accessibility engine every screen state is checked with.
const AXE_SOURCE = await readFile(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8');
const BASE = (process.env.COACHGW_URL || '').replace(/\/+$/, '');
// LOW_BASE, when set, is a second gateway whose COACH_MAX_MESSAGE_CHARS is LOW_LIMIT.
const LOW_BASE = (process.env.COACHGW_LOW_LIMIT_URL || '').replace(/\/+$/, '');
const LOW_LIMIT = Number(process.env.COACHGW_LOW_LIMIT || 0);
// SLOW_BASE, when set, is a gateway whose replay model pauses between chunks: an answer streams
// for seconds (resume and stop are tried in the middle of one).
const SLOW_BASE = (process.env.COACHGW_SLOW_URL || '').replace(/\/+$/, '');
const SHOTS = process.env.COACH_SCREENSHOTS_DIR || await mkdtemp(path.join(os.tmpdir(), 'coachgw-screenshots-'));
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const FILTER = process.argv[2] || process.env.COACHGW_E2E_FILTER || '';
// WAIT is how long a scenario waits for anything the page or the gateway must do. It is a
// bound for what never happens, not a speed target: a loaded machine (two cores, -race Go tests
// beside the browser) can be many times slower than an idle one. Nothing the panel does on a
// timer of its own would make a waited-for state come about in the meantime (it does not poll;
// holdToasts keeps toasts up), so a broken behaviour still fails at WAIT.
const WAIT = 20_000;
// CONCURRENCY scenarios run at a time: most of a scenario's time goes to waiting on the gateway
// and the page, so a second one keeps a two-core machine busy without starving either.
const CONCURRENCY = Math.max(1, Math.floor(Number(process.env.COACHGW_E2E_CONCURRENCY || 2)) || 1);

const STEPS = ['claim', 'grounds', 'warrant', 'groundsBacking', 'warrantBacking', 'qualifier', 'rebuttal'];
// A decent sentence for every Toulmin element, and a second, fuller one for when the coach wants more.
const ARGUMENT = {
  claim: ['Cities should make public transit free for all residents by 2030.', 'My claim is that city councils should fund fare-free buses and trams for every resident by 2030.'],
  grounds: ['In Tallinn, bus ridership rose by 14% in the first year after fares were dropped.', 'Tallinn saw ridership grow 14% and car traffic in the centre fall after it made transit free in 2013.'],
  warrant: ['Because the fare is a barrier for many people, removing it makes them choose transit over driving.', 'Since price strongly shapes travel choices, removing the fare means more trips move from cars to buses.'],
  groundsBacking: ['The Tallinn figures come from the city transport survey, which has tracked ridership every year since 2005.', 'The ridership data was collected by the municipal transport authority and confirmed by an independent university study.'],
  warrantBacking: ['Decades of transport economics research show that transit demand rises when ticket prices fall.', 'Studies of price elasticity across many European cities find that cheaper fares reliably increase ridership.'],
  qualifier: ['In most large cities with an existing bus network, this effect is likely to hold.', 'This probably holds for most mid-sized and large cities that already run frequent buses.'],
  rebuttal: ['Unless the city cannot replace the lost fare revenue without cutting service frequency.', 'However, if buses become overcrowded and slower, some riders may return to their cars.'],
};

// ---------------------------------------------------------------------------------------------
// A tiny runner: every scenario passes or fails on its own.

const results = [];
// queued holds the scenarios registered and not yet started; runQueued runs them.
const queued = [];

function assert(cond, message) {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

function assertEq(got, want, what) {
  if (got !== want) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

/** scenario registers a scenario; runQueued runs it, in a browser context of its own when a browser runs. */
async function scenario(name, fn) {
  if (FILTER && !FILTER.split('|').some((f) => name.includes(f))) return;
  queued.push({ name, fn });
}

/** runOne runs a scenario with the browser context ctx (null for the unit scenarios) as scenarioContext(). */
async function runOne({ name, fn }, ctx) {
  const start = Date.now();
  try {
    await scenarioStore.run(ctx, fn);
    results.push({ name, ok: true });
    console.log(`ok   ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)`);
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)\n     ${String(err && err.stack ? err.stack : err).split('\n').slice(0, 6).join('\n     ')}`);
  }
}

/**
 * runQueued runs the queued scenarios, CONCURRENCY at a time, each with a new en-US browser
 * context when withBrowser (closed when it ends), and returns when all have ended.
 */
async function runQueued(withBrowser) {
  const worker = async () => {
    for (let next = queued.shift(); next; next = queued.shift()) {
      const own = withBrowser ? await newContext('en-US') : null;
      try {
        await runOne(next, own?.context ?? null);
      } finally {
        await own?.close();
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

// ---------------------------------------------------------------------------------------------
// Browser helpers.

// browser is the one Chromium every scenario's context lives in; scenarioStore holds the
// running scenario's context, which scenarioContext() returns.
let browser = null;
const scenarioStore = new AsyncLocalStorage();

function scenarioContext() {
  const ctx = scenarioStore.getStore();
  if (!ctx) throw new Error('no browser context: a browser scenario ran without the browser');
  return ctx;
}

/** launchBrowser starts Chromium headless; its contexts come from newContext. */
async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * newContext opens a browser context, a profile of its own (storage, cookies, BroadcastChannel:
 * another device, as far as the panel can tell) whose languages (navigator.languages and
 * Accept-Language) are those of locale; close() closes it.
 */
async function newContext(locale) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale });
  return { context: ctx, async close() { await ctx.close().catch(() => {}); } };
}

/**
 * withPage runs fn on a new page; it fails on uncaught page errors and saves a screenshot on
 * failure. The page is the scenario's context's (en-US), or with locale that of a context of
 * its own in that locale.
 */
async function withPage(name, fn, { viewport = { width: 1280, height: 900 }, locale = '' } = {}) {
  const own = locale ? await newContext(locale) : null;
  const page = await (own ? own.context : scenarioContext()).newPage();
  await page.setViewportSize(viewport);
  page.setDefaultTimeout(WAIT);
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // The browser logs every non-2xx response; the scenarios that provoke one check it themselves.
    if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) problems.push(`console error: ${msg.text()}`);
  });
  try {
    await fn(page);
    assert(problems.length === 0, problems.join('; '));
  } catch (err) {
    await shot(page, `FAIL-${name}`).catch(() => {});
    throw err;
  } finally {
    await page.close();
    await own?.close();
  }
}

// A full-page screenshot stitches the page as if it were one tall viewport, so sticky bars
// would land in the middle of it; they are unstuck for the picture. (Through the CSSOM: the
// panel's Content-Security-Policy rightly refuses the stylesheet Playwright would inject.)
const STICKY = '.topbar, .composer, .module-head, .draft-panel, .toulmin-progress';

async function shot(page, name, fullPage = true) {
  await settle(page);
  if (fullPage) await page.evaluate((sel) => document.querySelectorAll(sel).forEach((el) => { el.style.position = 'static'; }), STICKY);
  try {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
  } finally {
    if (fullPage) await page.evaluate((sel) => document.querySelectorAll(sel).forEach((el) => { el.style.position = ''; }), STICKY);
  }
}

/** settle waits until the page has stopped scrolling (a smooth scroll may still be under way). */
async function settle(page) {
  await page.evaluate(() => new Promise((resolve) => {
    let last = -1;
    let still = 0;
    const check = () => {
      still = window.scrollY === last ? still + 1 : 0;
      last = window.scrollY;
      if (still >= 5) resolve();
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  }));
}

/** start opens the panel of the gateway at base and starts a session of contract in locale. */
async function start(page, contract, locale = 'en', base = BASE) {
  await page.goto(`${base}/`);
  await page.getByTestId('start-screen').waitFor();
  if (locale !== 'en') {
    await page.getByTestId('locale-select').selectOption(locale);
    await page.getByTestId('start-screen').waitFor();
  }
  await page.getByTestId(`contract-${contract}`).check();
  if (contract === 'module') {
    await page.waitForFunction(() => document.querySelector('[data-testid="module-select"]')?.options.length > 0);
  }
  await page.getByTestId('start-button').click();
  const panel = page.getByTestId(`${contract}-panel`);
  await panel.waitFor();
  return panel;
}

/** waitTurns waits (up to timeout ms) until the panel has completed n turns and is idle. */
async function waitTurns(page, contract, n, timeout = WAIT) {
  await page.waitForFunction(([sel, want]) => {
    const el = document.querySelector(sel);
    return el && Number(el.dataset.turns) >= want && el.dataset.busy === 'false';
  }, [`[data-testid="${contract}-panel"]`, n], { timeout });
}

async function say(page, text, { enter = false } = {}) {
  const input = page.getByTestId('composer-input');
  await input.fill(text);
  if (enter) await input.press('Enter');
  else await page.getByTestId('composer-send').click();
}

async function turnsOf(page, contract) {
  return Number(await page.getByTestId(`${contract}-panel`).getAttribute('data-turns'));
}

/** restored waits until a resumed panel has drawn its transcript. */
async function restored(page, contract) {
  await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.restored === 'true', `[data-testid="${contract}-panel"]`, { timeout: WAIT });
}

/**
 * onTop waits (up to WAIT, for a smooth scroll to end) until the element with testid is what
 * document.elementFromPoint finds at its centre, inside the viewport: visible and clickable, not
 * under a sticky bar or a toast. The test does not scroll: the panel must have put it there.
 */
async function onTop(page, testid, what) {
  // probe returns true when the element is on top at its centre, else false, or with explain
  // what is wrong.
  const probe = ([id, explain]) => {
    const el = document.querySelector(`[data-testid="${id}"]`);
    let why = 'ok';
    if (!el) {
      why = 'missing';
    } else {
      const r = el.getBoundingClientRect();
      const x = r.left + r.width / 2;
      const y = r.top + r.height / 2;
      if (y < 0 || y > window.innerHeight || x < 0 || x > window.innerWidth) {
        why = `outside the viewport (centre at ${Math.round(x)},${Math.round(y)} of ${window.innerWidth}x${window.innerHeight})`;
      } else {
        const hit = document.elementFromPoint(x, y);
        const owner = hit && hit.closest('[data-testid]');
        if (!(hit === el || el.contains(hit))) why = `covered by ${hit ? `${hit.tagName.toLowerCase()}.${[...hit.classList].join('.')}${owner ? ` in [data-testid=${owner.dataset.testid}]` : ''}` : 'nothing'}`;
      }
    }
    return explain ? why : why === 'ok';
  };
  try {
    await page.waitForFunction(probe, [testid, false], { timeout: WAIT });
  } catch (err) {
    if (!/Timeout/.test(String(err))) throw err;
    throw new Error(`${what}: ${testid} is not clickable at its centre: ${await page.evaluate(probe, [testid, true])}`);
  }
}

/** turnBodies records the bodies of the turns page posts, in order. */
function turnBodies(page) {
  const bodies = [];
  page.on('request', (req) => {
    if (req.method() === 'POST' && /\/v1\/sessions\/[0-9a-f]+\/turns$/.test(req.url())) bodies.push(req.postDataJSON());
  });
  return bodies;
}

/** sessionOf reads the session the page shows from the gateway. */
async function sessionOf(page) {
  return page.evaluate(async () => {
    const id = location.hash.split('/').pop();
    const res = await fetch(`/v1/sessions/${id}`);
    return res.json();
  });
}

/** luminance returns the relative luminance (0 black … 1 white) of the page's background. */
async function luminance(page) {
  return page.evaluate(() => {
    const m = getComputedStyle(document.body).backgroundColor.match(/\d+(\.\d+)?/g) || [];
    const bg = m.length >= 3 && (m.length < 4 || Number(m[3]) > 0) ? m : getComputedStyle(document.documentElement).backgroundColor.match(/\d+(\.\d+)?/g);
    const [r, g, b] = bg.slice(0, 3).map((v) => Number(v) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  });
}

/** toProposal talks the coach into a proposal for the claim: a first attempt, a question, a better attempt. */
async function toProposal(page) {
  await say(page, ARGUMENT.claim[0], { enter: true });
  await waitTurns(page, 'toulmin', 1);
  assert(!(await page.getByTestId('proposal-card').isVisible()), 'a first attempt gets coaching, not a proposal');
  await say(page, 'What makes a claim strong?');
  await waitTurns(page, 'toulmin', 2);
  await say(page, ARGUMENT.claim[1]);
  await waitTurns(page, 'toulmin', 3);
  await page.getByTestId('proposal-card').waitFor();
}

// ---------------------------------------------------------------------------------------------
// Scenarios that need no browser: the pure modules the panel is built from.

async function unitScenarios() {
  await scenario('unit: limits count as the gateway does, per contract as documented', async () => {
    assertEq(charCount('é🎉a'), 3, 'code points, as Go counts runes');
    assertEq(messageLimit({ contract: 'toulmin' }), 4000, 'toulmin');
    assertEq(messageLimit({ contract: 'module' }), 8000, 'module');
    assertEq(messageLimit({ contract: 'cards' }), 8000, 'cards');
    assertEq(draftLimit({ contract: 'toulmin' }), 4000, 'toulmin draft');
    assertEq(messageLimit({ contract: 'module', limits: { messageChars: 500 } }), 500, 'the limit the gateway reports');
    assertEq(messageLimit({ contract: 'toulmin', limits: { messageChars: 300, draftChars: 250 } }), 300, 'reported toulmin message');
    assertEq(draftLimit({ contract: 'toulmin', limits: { messageChars: 300, draftChars: 250 } }), 250, 'reported toulmin draft');
    assertEq(messageLimit({ contract: 'module', limits: { messageChars: 'x' } }), 8000, 'an unusable report is ignored');
  });

  await scenario('unit: a new session takes the region of the browser\'s first language that is its own', async () => {
    for (const [lang, languages, want] of [
      ['en', ['en-US', 'en'], 'en-US'],
      ['es', ['es-MX', 'es', 'en-US'], 'es-MX'],
      ['es', ['en-US', 'es-us'], 'es-US'],
      ['en', ['es-ES', 'en-GB'], 'en-GB'],
      ['es', ['en-US', 'en'], 'es'],
      ['en', ['en'], 'en'],
      ['es', ['es-419', 'es'], 'es'],
      ['es', ['es-419', 'es-AR'], 'es-AR'],
      ['es', ['es-Latn-MX'], 'es-MX'],
      ['en', ['en_US'], 'en-US'],
      ['en', ['eng-US', 'de-DE'], 'en'],
      ['en', [], 'en'],
    ]) assertEq(sessionLocale(lang, languages), want, `${lang} with ${JSON.stringify(languages)}`);
  });

  await scenario('unit: markdown parses model text without ever producing markup', async () => {
    const inline = parseInline('**Bold** and *italic* with snake_case_word, `a<b>` and <img src=x onerror=alert(1)>');
    assertEq(inline[0].type, 'strong', 'bold');
    assertEq(inline[2].type, 'em', 'italic');
    const text = JSON.stringify(inline);
    assert(text.includes('snake_case_word'), 'snake_case stays as written');
    assert(text.includes('<img src=x onerror=alert(1)>'), 'HTML stays text');
    const blocks = parseBlocks('Intro line\nsecond line\n\n- one\n- **two**\n  - nested\n\n1. first\n2. second\n\n> quoted\n\n## Title');
    assertEq(blocks.map((b) => b.type).join(','), 'paragraph,bullets,numbers,quote,heading', 'block types');
    assertEq(blocks[0].children.filter((c) => c.type === 'break').length, 1, 'line break kept');
    assertEq(blocks[1].items.length, 2, 'bullet items');
    assertEq(blocks[1].items[1].lists[0].items.length, 1, 'nested list');
    assertEq(blocks[2].start, 1, 'numbered list start');
    const link = parseInline('[ok](https://example.org/a) [bad](javascript:alert(1))');
    assertEq(link[0].type, 'link', 'https link');
    assert(!link.slice(1).some((n) => n.type === 'link'), 'javascript: is not a link');
  });
}

// ---------------------------------------------------------------------------------------------
// Browser scenarios.

async function browserScenarios() {
  await scenario('start screen: contracts, modules and locales', () => withPage('start', async (page) => {
    await page.goto(`${BASE}/`);
    await page.getByTestId('start-screen').waitFor();
    for (const c of ['toulmin', 'cards', 'module']) assert(await page.getByTestId(`contract-${c}`).count() === 1, `contract ${c} offered`);
    await page.getByTestId('contract-module').check();
    await page.waitForFunction(() => document.querySelector('[data-testid="module-select"]')?.options.length > 0);
    assert(await page.getByTestId('module-select').isVisible(), 'module select shown for module');
    await shot(page, 'start-screen');
    await page.getByTestId('locale-select').selectOption('es');
    await page.waitForFunction(() => document.querySelector('[data-testid="start-button"]')?.textContent === 'Empezar sesión');
  }));

  await scenario('markdown: rendered in the page as DOM text, never as markup', () => withPage('markdown', async (page) => {
    await page.goto(`${BASE}/`);
    await page.getByTestId('start-screen').waitFor();
    const out = await page.evaluate(async () => {
      const md = await import('./static/js/markdown.js');
      const div = document.createElement('div');
      div.append(md.renderMarkdown('**Bold** <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n- one\n- two\n\n[x](javascript:alert(1))'));
      document.body.append(div);
      await new Promise((r) => setTimeout(r, 50));
      const result = { imgs: div.querySelectorAll('img,script').length, strong: div.querySelector('strong')?.textContent, items: div.querySelectorAll('li').length, links: div.querySelectorAll('a').length, text: div.textContent, pwned: window.__pwned };
      div.remove();
      return result;
    });
    assertEq(out.imgs, 0, 'img/script elements');
    assertEq(out.strong, 'Bold', 'bold');
    assertEq(out.items, 2, 'list items');
    assertEq(out.links, 0, 'javascript: links');
    assert(out.text.includes('<img src=x'), 'markup shown as text');
    assertEq(out.pwned, undefined, 'no script ran');
  }));

  await scenario('transcript: a long transcript is read page by page, oldest first', () => withPage('paging', async (page) => {
    await page.goto(`${BASE}/`);
    await page.getByTestId('start-screen').waitFor();
    const id = 'a'.repeat(32);
    const asked = [];
    // Three pages, newest first, as the gateway pages: before=SEQ asks for the entries under SEQ.
    await page.route(`**/v1/sessions/${id}/messages*`, (route) => {
      const url = new URL(route.request().url());
      asked.push(url.search);
      const before = Number(url.searchParams.get('before') || 0);
      const pages = { 0: [[5, 6], 5], 5: [[3, 4], 3], 3: [[1, 2], null] };
      const [seqs, next] = pages[before];
      route.fulfill({ json: { messages: seqs.map((seq) => ({ seq, at: '2026-01-01T00:00:00Z', role: 'learner', input: { message: `m${seq}` } })), next } });
    });
    const seqs = await page.evaluate(async (sid) => {
      const { client, TRANSCRIPT_PAGE } = await import('./static/js/coach.js');
      return (await client.transcript(sid, { limit: TRANSCRIPT_PAGE })).map((e) => e.seq);
    }, id);
    assertEq(JSON.stringify(seqs), '[1,2,3,4,5,6]', 'entries oldest first across pages');
    assertEq(JSON.stringify(asked), '["?limit=200","?limit=200&before=5","?limit=200&before=3"]', 'pages asked for');
  }));

  await scenario('toulmin: a full argument from claim to rebuttal', () => withPage('toulmin', async (page) => {
    await start(page, 'toulmin');
    assertEq(await page.getByTestId('toulmin-progress').getAttribute('data-completed'), '0', 'completed steps at start');
    let turns = 0;
    for (const [i, step] of STEPS.entries()) {
      assertEq(await page.getByTestId(`step-${step}`).getAttribute('data-state'), 'current', `state of step ${step}`);
      assertEq(await page.getByTestId(`step-${step}`).getAttribute('aria-current'), 'step', `aria-current of ${step}`);
      for (const [k, sentence] of ARGUMENT[step].entries()) {
        await say(page, sentence, { enter: k === 0 });
        await waitTurns(page, 'toulmin', ++turns);
        if (await page.getByTestId('proposal-card').isVisible()) break;
      }
      const card = page.getByTestId('proposal-card');
      assert(await card.isVisible(), `a proposal for ${step} after two messages`);
      assertEq(await card.getAttribute('data-field'), step, 'proposal field');
      assert((await page.getByTestId('proposal-value').textContent()).trim().length > 10, 'proposal value');
      if (i === 0) await shot(page, 'toulmin-proposal');
      await page.getByTestId('proposal-confirm').click();
      if (step !== 'rebuttal') {
        // Confirm advances and triggers the next coach turn by itself.
        await waitTurns(page, 'toulmin', ++turns);
        assertEq(await page.getByTestId(`step-${step}`).getAttribute('data-state'), 'done', `state of ${step} after confirm`);
      }
      await page.waitForFunction((s) => {
        const el = document.querySelector(`[data-testid="draft-${s}"]`);
        return el && !el.classList.contains('draft-empty') && el.textContent.trim().length > 10;
      }, step);
      if (i === 2) await shot(page, 'toulmin-midway');
    }
    await page.getByTestId('complete-banner').waitFor();
    assertEq(await page.getByTestId('toulmin-progress').getAttribute('data-completed'), '7', 'completed steps');
    assertEq(await page.getByTestId('argument-summary').locator('li').count(), 7, 'argument summary items');
    assert(await page.getByTestId('composer-input').isDisabled(), 'composer is off once complete');
    assert(!(await page.getByTestId('transcript').textContent()).includes('[object'), 'no stray objects in the transcript');
    await shot(page, 'toulmin-complete');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, 'toulmin-complete-mobile', false);
  }));

  await scenario('toulmin: draft edits, rejecting a proposal, and resuming after a reload', () => withPage('toulmin-edit', async (page) => {
    await start(page, 'toulmin');
    await page.getByTestId('draft-edit-claim').click();
    await page.getByTestId('draft-input-claim').fill('Schools should start classes at 9 a.m. or later.');
    const draftHint = (await page.getByTestId('draft-input-claim').getAttribute('aria-describedby')).split(' ')[0];
    assert((await page.locator(`[id="${draftHint}"]`).textContent()).includes('Ctrl+Enter'), 'the Ctrl+Enter hint describes the draft box');
    await page.getByTestId('draft-input-claim').press('Control+Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="draft-claim"]')?.textContent.startsWith('Schools should start'));
    await say(page, 'Schools should start classes later because teenagers need more sleep.');
    await waitTurns(page, 'toulmin', 1);
    await say(page, 'Please improve my claim so it is clearer.');
    await waitTurns(page, 'toulmin', 2);
    await page.getByTestId('proposal-card').waitFor();
    const proposed = (await page.getByTestId('proposal-value').textContent()).trim();
    await page.getByTestId('proposal-reject').click();
    await page.getByTestId('msg-rejected').waitFor();
    assert(!(await page.getByTestId('proposal-card').isVisible()), 'proposal gone after reject');
    assertEq(await page.getByTestId('step-claim').getAttribute('data-state'), 'current', 'reject does not advance');
    assertEq((await page.getByTestId('rejected-value').textContent()).trim(), proposed, 'the rejected text stays in view');
    await page.getByTestId('rejected-edit').click();
    assertEq(await page.getByTestId('composer-input').inputValue(), proposed, 'the rejected text can be taken into the box');
    await page.getByTestId('composer-input').fill('An unsent thought about sleep');

    await page.reload();
    await page.getByTestId('toulmin-panel').waitFor();
    await restored(page, 'toulmin');
    await page.getByTestId('msg-resumed').waitFor();
    assert((await page.getByTestId('draft-claim').textContent()).startsWith('Schools should start'), 'draft survives a reload');
    assertEq(await page.getByTestId('msg-user').count(), 2, 'learner messages restored');
    assertEq(await page.getByTestId('msg-assistant').count(), 2, 'coach answers restored');
    assertEq((await page.getByTestId('rejected-value').textContent()).trim(), proposed, 'the rejected proposal is restored');
    assertEq(await page.getByTestId('composer-input').inputValue(), 'An unsent thought about sleep', 'unsent text survives a reload');
  }));

  for (const [size, viewport] of [['desktop', { width: 1280, height: 900 }], ['mobile', { width: 390, height: 844 }]]) {
    await scenario(`toulmin ${size} ${viewport.width}x${viewport.height}: Confirm on top, reload restores the pending proposal, the continue turn`, () => withPage(`toulmin-${size}`, async (page) => {
      const bodies = turnBodies(page);
      await start(page, 'toulmin');
      await toProposal(page);
      await onTop(page, 'proposal-confirm', 'after the proposal arrived');
      await onTop(page, 'proposal-reject', 'after the proposal arrived');
      await shot(page, `toulmin-proposal-${size}`, false);
      if (size === 'mobile') {
        const bar = await page.getByTestId('toulmin-progress').boundingBox();
        assert(bar && Math.abs(bar.y) < 2, `the step progress is stuck to the top on mobile (y=${bar && bar.y})`);
        await onTop(page, 'step-claim', 'the progress while scrolled down');
      }
      const value = (await page.getByTestId('proposal-value').textContent()).trim();

      await page.reload();
      await page.getByTestId('toulmin-panel').waitFor();
      await restored(page, 'toulmin');
      assertEq(await page.getByTestId('msg-user').count(), 3, 'learner messages restored');
      assertEq(await page.getByTestId('msg-assistant').count(), 3, 'coach answers restored');
      assert((await page.getByTestId('transcript').textContent()).includes(ARGUMENT.claim[0]), 'the first attempt is restored');
      assertEq((await page.getByTestId('proposal-value').textContent()).trim(), value, 'the pending proposal is restored');
      await onTop(page, 'proposal-confirm', 'after a reload');
      await shot(page, `toulmin-restore-${size}`, false);
      if (size === 'mobile') return;

      await page.getByTestId('proposal-confirm').click();
      await waitTurns(page, 'toulmin', 1);
      assertEq(JSON.stringify(bodies.at(-1)), '{"continue":true}', 'the turn after an accept is a continue turn');
      assertEq(await page.getByTestId('msg-user').count(), 3, 'a continue turn adds no learner message');
      assertEq(await page.getByTestId('step-grounds').getAttribute('data-state'), 'current', 'step after confirm');
      // The rule of issue 13: a weak first attempt at the new step gets coaching, not a proposal.
      await say(page, 'Some cities made buses free and more people used them.');
      await waitTurns(page, 'toulmin', 2);
      assert(!(await page.getByTestId('proposal-card').isVisible()), 'the first attempt after a continue turn gets coaching, not a proposal');
      const sess = await sessionOf(page);
      assertEq(sess.state.turns.grounds, 1, 'turns of the new step (the continue turn does not count)');
      assertEq(sess.state.pendingProposal, null, 'no proposal pending');
    }, { viewport }));
  }

  await scenario('toulmin: stream error with Retry, a reset line, a 422 with its field, a reload during a turn', () => withPage('errors', async (page) => {
    await start(page, 'toulmin');
    const turnsURL = '**/v1/sessions/*/turns';
    await page.route(turnsURL, (route) => route.fulfill({
      status: 200,
      contentType: 'application/x-ndjson',
      body: '{"type":"delta","text":"PARTIAL-TEXT "}\n{"type":"error","error":"coach_stream_failed","message":"the model endpoint failed (server)"}\n',
    }));
    await say(page, 'My claim is that remote work makes teams more productive.');
    const error = page.getByTestId('turn-error');
    await error.waitFor();
    assertEq(await error.getAttribute('data-error-code'), 'coach_stream_failed', 'error code');
    assert((await error.textContent()).includes('the model endpoint failed'), 'gateway message shown in the details');
    const friendly = await page.getByTestId('error-text').textContent();
    assert(!/coach_stream_failed|HTTP|\d{3}/.test(friendly), `the learner's sentence has no codes (${friendly})`);
    assertEq((await page.getByTestId('error-code').textContent()).trim(), 'coach_stream_failed', 'the code is in the details line');
    assert(!(await page.getByTestId('transcript').textContent()).includes('PARTIAL-TEXT'), 'partial text of a failed turn is gone');
    await shot(page, 'error-retry');
    assertEq(await page.getByTestId('composer-input').inputValue(), 'My claim is that remote work makes teams more productive.', 'the unsent text is back in the box');
    assertEq(await page.getByTestId('msg-user').count(), 0, 'and not shown as sent');

    await page.unroute(turnsURL);
    await page.route(turnsURL, async (route) => {
      const res = await route.fetch();
      const real = await res.text();
      await route.fulfill({ response: res, body: `{"type":"delta","text":"SHOULD-NOT-SHOW "}\n{"type":"reset","reason":"stream_interrupted"}\n${real}` });
    });
    await page.getByTestId('retry-button').click();
    await waitTurns(page, 'toulmin', 1);
    const transcript = await page.getByTestId('transcript').textContent();
    assert(!transcript.includes('SHOULD-NOT-SHOW'), 'text before a reset is discarded');
    assertEq(await page.getByTestId('msg-user').count(), 1, 'the retried message is shown once');
    assertEq(await page.getByTestId('composer-input').inputValue(), '', 'and has left the box');
    assertEq(await page.getByTestId('msg-assistant').count(), 1, 'one answer');
    assertEq(await page.getByTestId('turn-error').count(), 0, 'error cleared by the retry');

    await page.unroute(turnsURL);
    await page.route(turnsURL, (route) => route.fulfill({
      status: 422,
      contentType: 'application/json',
      body: JSON.stringify({ error: 'invalid_input', message: 'message is longer than 8000 characters', field: 'message' }),
    }));
    const tooLong = 'This message pretends to be too long for the gateway.';
    await say(page, tooLong);
    await page.waitForFunction(() => document.querySelector('[data-testid="turn-error"]')?.dataset.errorCode === 'invalid_input');
    assert((await page.getByTestId('error-field').textContent()).includes('message'), 'offending field named');
    assertEq(await page.getByTestId('retry-button').count(), 0, 'no Retry for invalid input');
    assertEq(await page.getByTestId('composer-input').inputValue(), tooLong, 'the text is back in the box to edit');
    assert(!(await page.getByTestId('error-text').textContent()).includes('invalid_input'), 'no code in the learner sentence');
    await page.unroute(turnsURL);

    // A spent daily budget: said plainly, and no Retry that cannot help.
    await page.route(turnsURL, (route) => route.fulfill({ status: 429, contentType: 'application/json', body: JSON.stringify({ error: 'budget_exceeded', message: 'the daily token budget is spent' }) }));
    await say(page, 'A message over the budget.');
    await page.waitForFunction(() => document.querySelector('[data-testid="turn-error"]')?.dataset.errorCode === 'budget_exceeded');
    assertEq(await page.getByTestId('retry-button').count(), 0, 'no Retry when the budget is spent');
    assert((await page.getByTestId('error-text').textContent()).includes('tomorrow'), 'says when to come back');
    assertEq(await page.getByTestId('composer-input').inputValue(), 'A message over the budget.', 'the text stays in the box');
    await page.unroute(turnsURL);

    // A reload while a turn is under way no longer cancels it (v1.2): the page goes on with it,
    // the message shown as sent and not back in the box. The gateway answers the turn, but the
    // page never hears of it (not even its id), so its kept copy of the message is still there
    // at the reload, which ends the page's request. (A request held unsent and let go at the
    // reload raced with it: sometimes it never reached the gateway.)
    let answered = false;
    await page.route(turnsURL, async (route) => {
      await (await route.fetch()).body();
      answered = true;
    });
    await say(page, 'A message in flight during a reload.');
    await page.waitForFunction(() => document.querySelector('[data-testid="toulmin-panel"]')?.dataset.busy === 'true');
    assertEq(await page.getByTestId('composer-input').inputValue(), '', 'the box empties when the message goes');
    for (let i = 0; i < 200 && !answered; i++) await page.waitForTimeout(100);
    assert(answered, 'the gateway answered the turn');
    await page.reload();
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await restored(page, 'toulmin');
    // Resumed, or already over and drawn from the transcript: either way the message and an
    // answer after it, once.
    await page.waitForFunction(() => {
      const panel = document.querySelector('[data-testid="toulmin-panel"]');
      const msgs = [...document.querySelectorAll('[data-testid="msg-user"]')].filter((m) => m.textContent.includes('A message in flight during a reload.'));
      return panel?.dataset.busy === 'false' && msgs.length === 1 && msgs[0].nextElementSibling?.dataset.testid === 'msg-assistant';
    });
    assertEq(await page.getByTestId('msg-user').filter({ hasText: 'A message in flight during a reload.' }).count(), 1, 'the message of a turn under way at the reload shows once, as sent');
    assertEq(await page.getByTestId('msg-assistant').count(), 2, 'one answer to each message');
    assertEq(await page.getByTestId('composer-input').inputValue(), '', 'and is not back in the box');
  }));

  await scenario('toulmin: the message limit, a counter near it, a long paste kept whole', () => withPage('limits', async (page) => {
    await start(page, 'toulmin');
    const input = page.getByTestId('composer-input');
    const counter = page.getByTestId('composer').getByTestId('counter');
    const live = page.getByTestId('composer').getByTestId('counter-live');
    await input.fill('short message');
    assert(await counter.isHidden(), 'no counter far from the limit');
    assertEq(await live.textContent(), '', 'nothing announced far from the limit');
    await input.fill('x'.repeat(3300));
    assert(await counter.isVisible(), 'counter near the limit');
    assertEq((await counter.textContent()).replace(/\s/g, ''), '3300/4000', 'counter text (toulmin limit)');
    const near = await live.textContent();
    assert(near.includes('700'), `announced once near the limit (${near})`);
    await input.fill('x'.repeat(3301));
    assertEq(await live.textContent(), near, 'not announced again on the next keystroke');
    // A paste over the limit is kept whole, and the learner is told.
    const paste = 'y'.repeat(4100);
    await input.fill(paste);
    assertEq((await input.inputValue()).length, 4100, 'nothing cut');
    assert(await page.getByTestId('composer-send').isDisabled(), 'Send off over the limit');
    const note = page.getByTestId('composer').getByTestId('limit-note');
    assert(await note.isVisible() && (await note.textContent()).includes('100'), 'the learner is told by how much');
    assert((await live.textContent()).includes('100'), 'and it is announced');
    assertEq(await input.getAttribute('aria-invalid'), 'true', 'aria-invalid over the limit');
    await input.press('Enter');
    assertEq(await turnsOf(page, 'toulmin'), 0, 'Enter does not send over the limit');
    await shot(page, 'limit-over', false);
    await input.fill('y'.repeat(4000));
    assert(await note.isHidden(), 'note gone within the limit');
    assert(!(await page.getByTestId('composer-send').isDisabled()), 'Send on at the limit');
    const describedBy = (await input.getAttribute('aria-describedby')).split(' ');
    assertEq(await page.locator(`[id="${describedBy[0]}"]`).textContent(), 'Enter to send · Shift+Enter for a new line', 'the Enter hint describes the box');
  }));

  await scenario('limits: the counter counts against the limit the gateway reports', () => withPage('server-limits', async (page) => {
    assert(LOW_BASE && LOW_LIMIT > 0, 'COACHGW_LOW_LIMIT_URL and COACHGW_LOW_LIMIT name a gateway with a low COACH_MAX_MESSAGE_CHARS');
    for (const contract of ['toulmin', 'module']) {
      await start(page, contract, 'en', LOW_BASE);
      // A module session opens with the coach's turn.
      const opening = contract === 'module' ? 1 : 0;
      if (opening) await waitTurns(page, contract, opening);
      const input = page.getByTestId('composer-input');
      const counter = page.getByTestId('composer').getByTestId('counter');
      const send = page.getByTestId('composer-send');
      const near = Math.ceil(LOW_LIMIT * 0.9);
      await input.fill('x'.repeat(near));
      assert(await counter.isVisible(), `${contract}: counter near the server's limit`);
      assertEq((await counter.textContent()).replace(/\s/g, ''), `${near}/${LOW_LIMIT}`, `${contract}: counter against the server's limit`);
      await input.fill('x'.repeat(LOW_LIMIT + 1));
      assert(await send.isDisabled(), `${contract}: Send off one over the server's limit`);
      assert((await page.getByTestId('composer').getByTestId('limit-note').textContent()).includes('1'), `${contract}: told by how much`);
      await input.fill('x'.repeat(LOW_LIMIT));
      assert(!(await send.isDisabled()), `${contract}: Send on at the server's limit`);
      if (contract === 'toulmin') {
        await page.getByTestId('draft-edit-claim').click();
        const area = page.getByTestId('draft-input-claim');
        await area.fill('d'.repeat(LOW_LIMIT + 1));
        assert(await page.getByTestId('draft-save-claim').isDisabled(), 'toulmin: Save off one over the server\'s draft limit');
        continue;
      }
      // The gateway takes a message of exactly its limit: the turn completes.
      await send.click();
      await waitTurns(page, contract, opening + 1);
      assertEq(await page.getByTestId('turn-error').count(), 0, `${contract}: no error at the limit`);
      await shot(page, 'limit-from-server', false);
    }
  }));

  await scenario('sessions: a list to return to, switching, removing, and a session that is gone', () => withPage('sessions', async (page) => {
    await page.goto(`${BASE}/`);
    await page.evaluate(() => localStorage.clear());
    await start(page, 'toulmin');
    await say(page, 'Session one: libraries should open on Sundays.');
    await waitTurns(page, 'toulmin', 1);
    const first = (await sessionOf(page)).id;
    await page.getByTestId('new-session').click();
    await page.getByTestId('session-list').waitFor();
    assertEq(await page.getByTestId('session-item').count(), 1, 'one session listed');
    assert(/^Toulmin argument · /.test((await page.locator('.session-title').first().textContent()).trim()), 'named by its contract and time');

    await start(page, 'toulmin');
    await say(page, 'Session two: parks should have more trees.');
    await waitTurns(page, 'toulmin', 1);
    const second = (await sessionOf(page)).id;
    await page.getByTestId('new-session').click();
    await page.getByTestId('session-list').waitFor();
    assertEq(await page.getByTestId('session-item').count(), 2, 'two sessions listed');
    assertEq(await page.getByTestId('session-item').first().getAttribute('data-session-id'), second, 'newest first');
    await shot(page, 'session-list');

    // Switch back to the first session: its transcript comes back.
    await page.locator(`[data-session-id="${first}"]`).getByTestId('session-open').click();
    await restored(page, 'toulmin');
    assert((await page.getByTestId('transcript').textContent()).includes('Session one'), 'switched to the first session');
    await page.getByTestId('new-session').click();
    await page.locator(`[data-session-id="${second}"]`).getByTestId('session-remove').click();
    assertEq(await page.getByTestId('session-item').count(), 1, 'removed from the list');
    await page.reload();
    await page.getByTestId('session-list').waitFor();
    assertEq(await page.getByTestId('session-item').count(), 1, 'still removed after a reload');

    // A session that is gone (deleted here; expired or lost on a restart elsewhere), on reload:
    await page.getByTestId('session-open').click();
    await restored(page, 'toulmin');
    await page.getByTestId('composer-input').fill('Text I had not sent yet');
    await page.evaluate((id) => fetch(`/v1/sessions/${id}`, { method: 'DELETE' }), first);
    await page.reload();
    await page.getByTestId('session-gone').waitFor();
    await shot(page, 'session-gone', false);
    await page.getByTestId('start-new-session').click();
    await page.getByTestId('toulmin-panel').waitFor();
    assert((await sessionOf(page)).id !== first, 'a new session');
    assertEq(await page.getByTestId('composer-input').inputValue(), 'Text I had not sent yet', 'unsent text carried over');

    // … and in the middle of a conversation.
    const third = (await sessionOf(page)).id;
    await page.evaluate((id) => fetch(`/v1/sessions/${id}`, { method: 'DELETE' }), third);
    await page.getByTestId('composer-send').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="turn-error"]')?.dataset.errorCode === 'session_not_found');
    assert(!(await page.getByTestId('error-text').textContent()).includes('session_not_found'), 'no code in the learner sentence');
    assertEq(await page.getByTestId('composer-input').inputValue(), 'Text I had not sent yet', 'the failed text is back in the box');
    await page.getByTestId('turn-error').getByTestId('start-new-session').click();
    await page.waitForFunction((id) => !location.hash.endsWith(id), third);
    await page.getByTestId('toulmin-panel').waitFor();
    assertEq(await page.getByTestId('composer-input').inputValue(), 'Text I had not sent yet', 'the text goes to the new session');
  }));

  await scenario('cards: a drill up to a level_up card', () => withPage('cards', async (page) => {
    await start(page, 'cards');
    await waitTurns(page, 'cards', 1); // "Begin training." is sent by the panel
    assertEq((await page.getByTestId('cards-level').textContent()).trim(), 'Level 1', 'level at start');
    const seen = [];
    let turns = 1;
    for (let i = 0; i < 16 && (await page.locator('[data-card-type="level_up"]').count()) === 0; i++) {
      const card = page.locator('[data-testid="card"][data-active="true"]').last();
      const type = await card.getAttribute('data-card-type');
      seen.push(type);
      if (type === 'scenario' || type === 'insight') {
        await card.getByTestId('card-continue').click();
      } else if (type === 'prompt' || type === 'reflection') {
        const submit = card.getByTestId('card-submit');
        assert(await submit.isDisabled(), `${type}: Submit disabled until there is input`);
        const max = Number((await card.getByTestId('card-counter').textContent()).split('/')[1]);
        await card.getByTestId('card-input').fill('x'.repeat(max + 40));
        assertEq((await card.getByTestId('card-input').inputValue()).length, max + 40, `${type}: a long paste is not cut`);
        assert(await submit.isDisabled(), `${type}: max_length enforced: no Submit over it`);
        assert((await card.getByTestId('limit-note').textContent()).includes('40'), `${type}: the learner is told by how much`);
        assertEq((await card.getByTestId('card-counter').textContent()).replace(/\s/g, ''), `${max + 40}/${max}`, `${type}: counter over the limit`);
        assertEq(await card.getByTestId('card-counter').getAttribute('aria-hidden'), 'true', `${type}: the counter itself is not read out on every keystroke`);
        assert((await card.getByTestId('counter-live').textContent()).includes('40'), `${type}: going over is announced`);
        const answer = type === 'prompt'
          ? "I'd ask what is getting in their way, and we'll agree on a plan by Friday."
          : 'Because I care about the relationship more than I admit.';
        await card.getByTestId('card-input').fill(answer);
        assert(!(await submit.isDisabled()), `${type}: Submit enabled with input`);
        const hintId = (await card.getByTestId('card-input').getAttribute('aria-describedby')).split(' ')[0];
        assert((await page.locator(`[id="${hintId}"]`).textContent()).includes('Ctrl+Enter'), `${type}: the Ctrl+Enter hint describes the box`);
        if (type === 'prompt' && !seen.slice(0, -1).includes('prompt')) {
          await shot(page, 'cards-prompt');
          // Reload with the answer typed but not sent: the drill comes back, answers under the
          // cards, and the typed text in the active card.
          const answered = await page.getByTestId('card-answer').count();
          await page.reload();
          await restored(page, 'cards');
          assertEq(await page.getByTestId('card-answer').count(), answered, 'answers restored under their cards');
          assertEq(await page.locator('[data-testid="card"]').count(), seen.length, 'every card restored');
          const again = page.locator('[data-testid="card"][data-active="true"]').last();
          assertEq(await again.getAttribute('data-card-type'), 'prompt', 'the last card is active again');
          assertEq(await again.getByTestId('card-input').inputValue(), answer, "the last card's input is restored");
          await shot(page, 'cards-restore', false);
          // Ctrl+Enter submits a card's answer.
          await again.getByTestId('card-input').press('Control+Enter');
          turns = 0;
        } else {
          await submit.click();
        }
      } else if (type === 'multiple_choice') {
        const options = card.getByTestId('card-option');
        assert((await options.count()) >= 2, 'options offered');
        assertEq(await card.getByRole('radiogroup').count(), 1, 'options form a radio group');
        // Arrow keys move the choice; Enter answers with it.
        await options.nth(0).focus();
        await page.keyboard.press('ArrowDown');
        assertEq(await options.nth(1).evaluate((el) => el === document.activeElement), true, 'ArrowDown moves to the next option');
        assertEq(await options.nth(1).getAttribute('aria-checked'), 'true', 'and checks it');
        assertEq(await options.nth(0).getAttribute('tabindex'), '-1', 'only the checked option is in the tab order');
        await page.keyboard.press('ArrowUp');
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('Enter');
      } else {
        throw new Error(`unexpected active card ${type}`);
      }
      await waitTurns(page, 'cards', ++turns);
    }
    assertEq(seen.join(' → '), 'scenario → prompt → insight → multiple_choice → reflection → insight', 'card sequence');
    const levelUp = page.locator('[data-card-type="level_up"]');
    await levelUp.waitFor();
    assert((await levelUp.getByTestId('levelup-level').textContent()).includes('2'), 'new level shown');
    assertEq((await page.getByTestId('cards-level').textContent()).trim(), 'Level 2', 'level badge');
    const next = page.locator('[data-testid="card"][data-active="true"]').last();
    assert(await next.isHidden(), 'the next card waits for Continue Training');
    await shot(page, 'cards-level-up');
    await levelUp.getByTestId('card-continue-training').click();
    await next.waitFor({ state: 'visible' });
    assertEq(await next.getAttribute('data-card-type'), 'scenario', 'a level 2 scenario follows');
    await shot(page, 'cards-after-level-up');

    await page.reload();
    await page.getByTestId('cards-panel').waitFor();
    await restored(page, 'cards');
    const resumed = page.locator('[data-testid="card"][data-active="true"]').last();
    assertEq(await resumed.getAttribute('data-card-type'), 'scenario', 'the last card comes back after a reload');
    assertEq((await page.getByTestId('cards-level').textContent()).trim(), 'Level 2', 'level after a reload');
    assertEq(await page.locator('[data-card-type="level_up"]').count(), 1, 'the level_up card is restored');
    assertEq(await page.locator('[data-testid="card"]').count(), seen.length + 2, 'every card restored');
    assert((await page.getByTestId('card-feed').textContent()).includes('You chose:'), 'the selection is restored under its card');
  }));

  await scenario('module: streamed blocks, a submitted form, progress and a milestone toast', () => withPage('module', async (page) => {
    await holdToasts(page);
    await start(page, 'module');
    await waitTurns(page, 'module', 1);
    const first = page.getByTestId('module-response').last();
    assert((await first.getByTestId('block').count()) > 0, 'text blocks rendered');
    assert((await first.locator('[data-block-type="heading"]').count()) > 0, 'a heading block');
    let turns = 1;
    let form = null;
    for (let i = 0; i < 6 && !form; i++) {
      // Pin the response by position: .last() would follow newer responses.
      const latest = page.getByTestId('module-response').nth((await page.getByTestId('module-response').count()) - 1);
      if ((await latest.getByTestId('module-form').count()) > 0) {
        form = latest.getByTestId('module-form').first();
        break;
      }
      const suggestion = latest.getByTestId('suggestion').first();
      if (await suggestion.count()) await suggestion.click();
      else await say(page, 'Can you tell me more about this?');
      await waitTurns(page, 'module', ++turns);
    }
    assert(form, 'a form was offered within six turns');
    assert(await form.getByTestId('form-optional-note').isVisible(), 'forms say they are optional');
    assert(await page.getByTestId('composer-input').isEnabled(), 'free text stays available next to a form');
    for (const field of await form.getByTestId('form-field').all()) {
      const radios = field.locator('input[type="radio"]');
      const boxes = field.locator('input[type="checkbox"]');
      if (await radios.count()) await radios.first().check();
      else if (await boxes.count()) {
        await boxes.nth(0).check();
        if ((await boxes.count()) > 1) await boxes.nth(1).check();
      } else if (await field.locator('select').count()) await field.locator('select').selectOption({ index: 1 });
      else if (await field.locator('input[type="number"]').count()) await field.locator('input[type="number"]').fill('3');
      else await field.locator('input, textarea').first().fill('I notice it most before presentations.');
    }
    await shot(page, 'module-form');
    await form.getByTestId('form-submit').click();
    await waitTurns(page, 'module', ++turns);
    assertEq(await form.getAttribute('data-sent'), 'true', 'form marked sent');
    assert((await page.getByTestId('msg-user').last().textContent()).includes('Form'), 'the submission shows as the learner message');
    const pct = Number(await page.getByTestId('module-progress').getAttribute('data-percentage'));
    assert(pct > 0, `progress grew (${pct}%)`);
    assert((await page.getByTestId('module-progress-text').textContent()).includes('remaining'), 'covered/remaining shown');

    // A reload brings the lesson back: every message, the answered form filled in and closed.
    const formId = await form.getAttribute('data-form-id');
    const counts = async () => [await page.getByTestId('msg-user').count() + await page.getByTestId('msg-auto').count(), await page.getByTestId('module-response').count()];
    const before = await counts();
    await page.reload();
    await restored(page, 'module');
    assertEq(JSON.stringify(await counts()), JSON.stringify(before), 'messages and responses restored');
    const again = page.locator(`[data-testid="module-form"][data-form-id="${formId}"]`).first();
    assertEq(await again.getAttribute('data-sent'), 'true', 'the answered form is marked answered');
    assert(await again.locator('fieldset.form-fields').evaluate((f) => f.disabled), 'and closed');
    assert((await again.locator('input:checked').count()) > 0 || (await again.locator('input[type="text"], textarea').first().inputValue().catch(() => '')) !== '', 'with the answers filled in');
    assertEq(Number(await page.getByTestId('module-progress').getAttribute('data-percentage')), pct, 'progress after a reload');
    await shot(page, 'module-restore');
    turns = 0;

    // Keep learning until the first milestone (25%) is celebrated.
    for (let i = 0; i < 10 && (await page.getByTestId('toast').count()) === 0; i++) {
      const suggestion = page.getByTestId('module-response').last().getByTestId('suggestion').first();
      if (await suggestion.count()) await suggestion.click();
      else await say(page, 'Please continue with the next topic.');
      await waitTurns(page, 'module', ++turns);
    }
    const toast = page.getByTestId('toast').first();
    await toast.waitFor();
    assert((await toast.textContent()).includes('25%'), 'milestone toast names 25%');
    assert(Number(await page.getByTestId('module-progress').getAttribute('data-percentage')) >= 25, 'progress at 25% or more');
    await page.getByTestId('composer-input').fill('typing while the toast shows');
    await onTop(page, 'composer-send', 'while the milestone toast shows');
    await shot(page, 'module-milestone', false);
    await toast.getByTestId('toast-close').click();
    await toast.waitFor({ state: 'detached', timeout: WAIT }); // held: only the dismissal takes it away
  }));

  await scenario('dark mode: prefers-color-scheme dark in the three contracts', () => withPage('dark', async (page) => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await start(page, 'toulmin');
    assert(await luminance(page) < 0.05, 'a dark background');
    const ink = await page.evaluate(() => getComputedStyle(document.body).color);
    assert(/rgb\((2[0-9]{2}|1[5-9][0-9]), /.test(ink), `light text (${ink})`);
    await toProposal(page);
    await onTop(page, 'proposal-confirm', 'dark mode');
    await shot(page, 'dark-toulmin-proposal', false);
    await start(page, 'cards');
    await waitTurns(page, 'cards', 1);
    await page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-continue').click();
    await waitTurns(page, 'cards', 2);
    await shot(page, 'dark-cards');
    await start(page, 'module');
    await waitTurns(page, 'module', 1);
    await shot(page, 'dark-module');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await onTop(page, 'module-progress', 'the module progress on mobile, scrolled to the end');
    await shot(page, 'dark-module-mobile', false);
    await page.emulateMedia({ colorScheme: 'light' });
    assert(await luminance(page) > 0.8, 'light again when the preference is light');
  }));

  await scenario('locale: a session takes the region of the browser\'s language, en-US and es-MX', async () => {
    // pick starts a session in the language chosen on the start screen and returns its locale,
    // as the gateway stored it, and the panel's language.
    const pick = async (page, lang) => {
      await page.goto(`${BASE}/`);
      await page.getByTestId('start-screen').waitFor();
      await page.getByTestId('locale-select').selectOption(lang);
      await page.getByTestId('start-screen').waitFor();
      await page.getByTestId('contract-toulmin').check();
      await page.getByTestId('start-button').click();
      await page.getByTestId('toulmin-panel').waitFor();
      return [(await sessionOf(page)).locale, await page.evaluate(() => document.documentElement.lang)];
    };
    await withPage('locale-en-US', async (page) => {
      assertEq(await page.evaluate(() => navigator.languages.join()), 'en-US', 'the browser\'s languages');
      assertEq(JSON.stringify(await pick(page, 'en')), '["en-US","en"]', 'English in an en-US browser');
      assertEq(JSON.stringify(await pick(page, 'es')), '["es","es"]', 'Spanish in an en-US browser: no region of its own');
    }, { locale: 'en-US' });
    await withPage('locale-es-MX', async (page) => {
      await page.goto(`${BASE}/`);
      assertEq(await page.getByTestId('locale-select').inputValue(), 'es', 'an es-MX browser starts in Spanish');
      assertEq(JSON.stringify(await pick(page, 'es')), '["es-MX","es"]', 'Spanish in an es-MX browser');
      assertEq((await page.getByTestId('composer-send').textContent()).trim(), 'Enviar', 'the panel of an es-MX session speaks Spanish');
      assertEq(JSON.stringify(await pick(page, 'en')), '["en","en"]', 'English in an es-MX browser: no region of its own');
    }, { locale: 'es-MX' });
  });

  await scenario('locale es: Spanish labels and a streamed Spanish turn', () => withPage('es', async (page) => {
    await start(page, 'toulmin', 'es');
    assertEq((await page.getByTestId('step-claim').textContent()).replace(/^\d+/, ''), 'Afirmación', 'step label');
    await say(page, 'Las ciudades deberían ofrecer transporte público gratuito para todos en 2030.');
    await waitTurns(page, 'toulmin', 1);
    const answer = (await page.getByTestId('msg-assistant').last().textContent()) || '';
    assert(/afirmación/i.test(answer), `a Spanish answer (${answer.slice(0, 80)})`);
    await shot(page, 'toulmin-es');
  }));
}


// ---------------------------------------------------------------------------------------------
// Issue 22: every screen state, at every width, in both themes, by keyboard.

// The WCAG 2.2 AA rules of axe-core (with the A and AA rules of 2.0 and 2.1 they build on).
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
const WIDTHS = [390, 768, 1280];

/** axeClean runs axe-core on page and fails with every WCAG 2.2 AA violation it finds. */
async function axeClean(page, what) {
  // Through the debugging protocol: the panel's Content-Security-Policy rightly refuses a script tag.
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async (tags) => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return r.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} ${n.failureSummary.split('\n').slice(1, 2).join('')}`).join(' | ')}`);
  }, AXE_TAGS);
  assert(violations.length === 0, `axe (${what}): ${violations.join('; ')}`);
}

/** noOverflow fails when the page is wider than the viewport, naming the widest element. */
async function noOverflow(page, what) {
  const out = await page.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    let worst = null;
    for (const el of document.querySelectorAll('main *, header *')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || el.closest('.sr-only')) continue;
      if (r.right > vw + 1 && (!worst || r.right > worst.right)) worst = { right: Math.round(r.right), el: `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}` };
    }
    return { sw: document.documentElement.scrollWidth, vw, worst };
  });
  assert(out.sw <= out.vw && !out.worst, `${what}: the page is ${out.sw}px wide in a ${out.vw}px viewport${out.worst ? `; ${out.worst.el} ends at x=${out.worst.right}` : ''}`);
}

/**
 * tour checks a screen state as learners meet it: at 390, 768 and 1280 px, light and dark, the
 * page never grows wider than the screen and is screenshotted; at 390 and 1280 axe-core finds
 * no violation. The viewport and the colour scheme are put back afterwards.
 */
async function tour(page, name) {
  const before = page.viewportSize();
  try {
    for (const scheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: width < 700 ? 844 : 900 });
        await noOverflow(page, `${name} at ${width}px, ${scheme}`);
        await shot(page, `${name}-${width}-${scheme}`, false);
        if (width !== 768) await axeClean(page, `${name} at ${width}px, ${scheme}`);
      }
    }
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize(before);
  }
}

/** rewriteTurns rewrites the result line of every turn page posts with edit(result), after the real gateway answered. */
async function rewriteTurns(page, edit) {
  await page.route('**/v1/sessions/*/turns', async (route) => {
    const res = await route.fetch();
    const lines = (await res.text()).split('\n').map((l) => {
      if (!l.trim()) return l;
      const ev = JSON.parse(l);
      if (ev.type === 'result') edit(ev.result);
      return JSON.stringify(ev);
    });
    await route.fulfill({ response: res, body: lines.join('\n') });
  });
}

/** tabTo presses Tab until the element with testid has the focus (at most max times). */
async function tabTo(page, testid, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((id) => document.activeElement?.closest('[data-testid]')?.dataset.testid === id || document.activeElement?.dataset.testid === id, testid)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`${testid} not reached with ${max} presses of Tab`);
}

/** focused returns the data-testid of the focused element (or of the nearest element that has one). */
async function focused(page) {
  return page.evaluate(() => document.activeElement?.dataset.testid || document.activeElement?.closest('[data-testid]')?.dataset.testid || document.activeElement?.tagName.toLowerCase());
}

const LONG_URL = 'https://www.who.int/news-room/fact-sheets/detail/ambient-(outdoor)-air-quality-and-health?utm_source=coachgw&utm_medium=learner&utm_campaign=a-very-long-campaign-name-that-never-ends';
const LONG_WORD = 'Donaudampfschifffahrtsgesellschaftskapitän'.repeat(5);
const LONG_PROPOSAL = `Cities should make public transit free for all residents by 2030, as ${LONG_URL} shows for air quality; ${'and because the evidence from many cities keeps pointing the same way, free fares are worth their cost '.repeat(7)}`.slice(0, 830);

async function issue22Scenarios() {
  await scenario('i22-1 overflow: long URLs and words never widen the page, 320 to 1280 px', () => withPage('i22-overflow', async (page) => {
    await rewriteTurns(page, (r) => {
      if (typeof r.assistantText === 'string') r.assistantText += ` See ${LONG_URL} and ${LONG_WORD}.`;
      if (r.proposedUpdate) r.proposedUpdate.value = `${LONG_PROPOSAL} ${LONG_WORD}`;
    });
    await start(page, 'toulmin');
    await toProposal(page);
    await say(page, `My source: ${LONG_URL} ${LONG_WORD}`.slice(0, 3900), { enter: false }).catch(() => {});
    await waitTurns(page, 'toulmin', 4);
    for (const width of [320, 390, 768, 1280]) {
      await page.setViewportSize({ width, height: 844 });
      await noOverflow(page, `toulmin at ${width}px`);
      const send = await page.getByTestId('composer-send').boundingBox();
      assert(send && send.x + send.width <= width, `Send is on screen at ${width}px (ends at ${send && send.x + send.width})`);
    }
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.setViewportSize({ width: 1280, height: 900 });
    // A URL in a cards answer.
    await start(page, 'cards');
    await waitTurns(page, 'cards', 1);
    await page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-continue').click();
    await waitTurns(page, 'cards', 2);
    const card = page.locator('[data-testid="card"][data-active="true"]').last();
    await card.getByTestId('card-input').fill(`${LONG_URL}`.slice(0, 190));
    await card.getByTestId('card-submit').click();
    await waitTurns(page, 'cards', 3);
    for (const width of [320, 390, 768]) {
      await page.setViewportSize({ width, height: 844 });
      await noOverflow(page, `cards at ${width}px`);
    }
  }));

  await scenario('i22-2 palette: every custom property used resolves in both themes', () => withPage('i22-palette', async (page) => {
    await start(page, 'toulmin');
    for (const scheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: scheme });
      const bad = await page.evaluate(() => {
        const used = new Set();
        const scoped = new Set(); // declared by a rule other than :root (e.g. .card's --accent)
        for (const sheet of document.styleSheets) {
          const walk = (rules) => {
            for (const rule of rules) {
              if (rule.cssRules) walk(rule.cssRules);
              if (!rule.style) continue;
              for (const prop of rule.style) {
                if (prop.startsWith('--') && rule.selectorText !== ':root') scoped.add(prop);
                for (const m of rule.style.getPropertyValue(prop).matchAll(/var\((--[\w-]+)/g)) used.add(m[1]);
              }
            }
          };
          walk(sheet.cssRules);
        }
        const root = getComputedStyle(document.documentElement);
        return [...used].filter((name) => root.getPropertyValue(name).trim() === '' && !scoped.has(name));
      });
      assertEq(bad.join(', '), '', `custom properties without a value in the ${scheme} theme`);
      const composerBg = await page.evaluate(() => getComputedStyle(document.querySelector('[data-testid="composer"]')).backgroundImage);
      assert(/gradient/.test(composerBg) && !/transparent\)$/.test(composerBg), `the composer has its background (${composerBg})`);
    }
  }));

  await scenario('i22-3 keyboard and screen reader: focus after start, proposal, draft save; one announcement per answer', () => withPage('i22-focus', async (page) => {
    await start(page, 'toulmin');
    assertEq(await focused(page), 'composer-input', 'the focus after Start session');
    for (const [sel, what] of [['[data-testid="transcript"]', 'transcript']]) {
      const live = await page.evaluate((q) => { const el = document.querySelector(q); return [el.getAttribute('aria-live'), el.getAttribute('role')].join(','); }, sel);
      assertEq(live, ',', `the ${what} is not a live region (streamed text would be read delta by delta)`);
    }
    await page.evaluate(() => {
      window.__announced = [];
      const el = document.querySelector('[data-testid="announcer"]');
      new MutationObserver(() => { if (el.textContent) window.__announced.push(el.textContent); }).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await toProposal(page);
    const announced = await page.evaluate(() => window.__announced);
    assertEq(announced.length, 3, `one announcement per answer (${JSON.stringify(announced).slice(0, 300)})`);
    const value = (await page.getByTestId('proposal-value').textContent()).trim();
    assert(announced[2].includes(value) && /Confirm/.test(announced[2]), 'the proposal is announced with its text and how to act on it');
    assertEq(await focused(page), 'proposal-card', 'the focus moves to the proposal card');
    await page.keyboard.press('Tab');
    assertEq(await focused(page), 'proposal-confirm', 'Confirm is the first stop of the Tab key in the card');
    await page.getByTestId('draft-edit-claim').click();
    await page.getByTestId('draft-input-claim').fill('Cities should make buses free.');
    await page.getByTestId('draft-input-claim').press('Control+Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="draft-claim"]')?.textContent.startsWith('Cities should make buses'));
    assertEq(await focused(page), 'draft-edit-claim', 'the focus after Ctrl+Enter saved the draft');
    const outline = await page.evaluate(() => {
      const b = document.querySelector('[data-testid="draft-edit-claim"]');
      return getComputedStyle(b).outlineStyle;
    });
    assert(outline !== 'none', 'the focused Edit button shows its focus');
  }));

  await scenario('i22-4 dir: learner and model text take their direction from their own letters', () => withPage('i22-dir', async (page) => {
    const hebrew = 'ערים צריכות להציע תחבורה ציבורית חינם לכולם 🚌 (2024).';
    await rewriteTurns(page, (r) => { if (r.proposedUpdate) r.proposedUpdate.value = hebrew; });
    await start(page, 'toulmin');
    await toProposal(page);
    await say(page, hebrew);
    await waitTurns(page, 'toulmin', 4);
    const dirs = await page.evaluate(() => ({
      user: [...document.querySelectorAll('[data-testid="msg-user"] .msg-body')].map((e) => e.getAttribute('dir')),
      coach: [...document.querySelectorAll('[data-testid="msg-assistant"] .msg-body')].map((e) => e.getAttribute('dir')),
      hebrewDirection: getComputedStyle([...document.querySelectorAll('[data-testid="msg-user"] .msg-body')].at(-1)).direction,
      englishDirection: getComputedStyle(document.querySelector('[data-testid="msg-user"] .msg-body')).direction,
      input: document.querySelector('[data-testid="composer-input"]').getAttribute('dir'),
    }));
    assert(dirs.user.every((d) => d === 'auto') && dirs.coach.every((d) => d === 'auto'), `bubbles have dir=auto (${JSON.stringify(dirs)})`);
    assertEq(dirs.hebrewDirection, 'rtl', 'a Hebrew message reads right to left');
    assertEq(dirs.englishDirection, 'ltr', 'an English one left to right');
    assertEq(dirs.input, 'auto', 'the message box');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await start(page, 'toulmin');
    await rewriteTurns(page, (r) => { if (r.proposedUpdate) r.proposedUpdate.value = hebrew; });
    await toProposal(page);
    assertEq(await page.getByTestId('proposal-value').getAttribute('dir'), 'auto', 'the proposal');
    assertEq(await page.getByTestId('proposal-value').evaluate((e) => getComputedStyle(e).direction), 'rtl', 'a Hebrew proposal reads right to left');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await start(page, 'cards');
    await waitTurns(page, 'cards', 1);
    assertEq(await page.getByTestId('card-content').last().getAttribute('dir'), 'auto', 'a card');
  }));

  await scenario('i22-5 tabs and devices stay in step; nothing is resent under a moved session', async () => {
    const a = await scenarioContext().newPage();
    const b = await scenarioContext().newPage();
    try {
      for (const p of [a, b]) { p.setDefaultTimeout(WAIT); await p.setViewportSize({ width: 1280, height: 900 }); }
      await start(a, 'toulmin');
      const id = (await sessionOf(a)).id;
      await b.goto(`${BASE}/#/s/${id}`);
      await restored(b, 'toulmin');
      const bBodies = turnBodies(b);
      await toProposal(a);
      await a.getByTestId('proposal-confirm').click();
      await waitTurns(a, 'toulmin', 4);
      // Tab B follows by itself (BroadcastChannel): it does not poll, and nothing else here makes it
      // read the session.
      await b.waitForFunction(() => document.querySelector('[data-testid="step-grounds"]')?.dataset.state === 'current' && document.querySelectorAll('[data-testid="msg-user"]').length === 3 && document.querySelectorAll('[data-testid="msg-assistant"]').length === 4, null, { timeout: WAIT });
      assertEq(await b.getByTestId('draft-claim').textContent(), await a.getByTestId('draft-claim').textContent(), 'the same draft in both tabs');

      // Another device (no BroadcastChannel): its turn moves the session on. B's send finds out
      // before it sends, reloads the conversation and keeps the text in the box.
      const device = async (message) => {
        const res = await fetch(`${BASE}/v1/sessions/${id}/turns`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ message }) });
        await res.text();
      };
      await device('From my phone: Tallinn made buses free in 2013.');
      await say(b, 'Text typed in tab B.');
      await b.waitForFunction(() => document.querySelector('[data-testid="transcript"]').textContent.includes('From my phone'), null, { timeout: WAIT });
      assertEq(await b.getByTestId('composer-input').inputValue(), 'Text typed in tab B.', 'the unsent text stays in the box');
      assert(!bBodies.some((x) => x.message === 'Text typed in tab B.'), 'nothing sent under a session B had not seen');

      // Retry after the session moved elsewhere: nothing is resent; the conversation reloads.
      await b.route('**/v1/sessions/*/turns', (route) => route.fulfill({ status: 200, contentType: 'application/x-ndjson', body: '{"type":"error","error":"coach_stream_failed","message":"x"}\n' }));
      await b.getByTestId('composer-send').click();
      await b.getByTestId('retry-button').waitFor();
      await b.unrouteAll({ behavior: 'ignoreErrors' });
      const sent = bBodies.length;
      await device('From my phone again: car traffic fell too.');
      await b.getByTestId('retry-button').click();
      await b.waitForFunction(() => document.querySelector('[data-testid="transcript"]').textContent.includes('From my phone again'), null, { timeout: WAIT });
      assertEq(bBodies.length, sent, 'Retry sent nothing under the moved session');
      assertEq(await b.getByTestId('composer-input').inputValue(), 'Text typed in tab B.', 'the text is still in the box');
      // On focus: a device's change shows when the tab is focused again.
      await device('From my phone a third time.');
      await b.evaluate(() => window.dispatchEvent(new Event('focus')));
      await b.waitForFunction(() => document.querySelector('[data-testid="transcript"]').textContent.includes('a third time'), null, { timeout: WAIT });
    } finally {
      await a.close();
      await b.close();
    }
  });

  await scenario('i22-6 long proposal on a phone: Confirm and Reject in view', () => withPage('i22-long-proposal', async (page) => {
    await rewriteTurns(page, (r) => { if (r.proposedUpdate) r.proposedUpdate.value = LONG_PROPOSAL; });
    await start(page, 'toulmin');
    await toProposal(page);
    assert((await page.getByTestId('proposal-value').textContent()).length >= 800, 'an ~830-character proposal');
    await onTop(page, 'proposal-confirm', 'a long proposal on a phone');
    await onTop(page, 'proposal-reject', 'a long proposal on a phone');
    await noOverflow(page, 'a long proposal on a phone');
    await shot(page, 'toulmin-long-proposal-390', false);
  }, { viewport: { width: 390, height: 844 } }));

  await scenario('i22-8 wording, the retrying note, the 422 names the character, progress in the session list', () => withPage('i22-wording', async (page) => {
    await page.goto(`${BASE}/`);
    await page.getByTestId('start-screen').waitFor();
    const words = await page.getByTestId('start-screen').textContent();
    assert(!/contract|gateway|streams/i.test(words), `no jargon on the start page (${words.match(/contract|gateway|streams/i)})`);
    await start(page, 'toulmin');
    await page.evaluate(() => {
      window.__note = {};
      new MutationObserver(() => {
        const on = Boolean(document.querySelector('[data-testid="retry-note"]'));
        if (on && !window.__note.shown) window.__note.shown = performance.now();
        if (!on && window.__note.shown && !window.__note.gone) window.__note.gone = performance.now();
      }).observe(document.body, { childList: true, subtree: true });
    });
    await page.route('**/v1/sessions/*/turns', async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, body: `{"type":"delta","text":"Lost "}\n{"type":"reset","reason":"stream_interrupted"}\n${await res.text()}` });
    });
    await say(page, ARGUMENT.claim[0]);
    await waitTurns(page, 'toulmin', 1);
    await page.waitForFunction(() => window.__note.gone, null, { timeout: WAIT });
    const up = await page.evaluate(() => window.__note.gone - window.__note.shown);
    assert(up >= 1400, `the retrying note stays up long enough to read (${Math.round(up)} ms)`);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.route('**/v1/sessions/*/turns', (route) => route.fulfill({ status: 422, contentType: 'application/json', body: JSON.stringify({ error: 'invalid_input', message: 'message contains a control character', field: 'message' }) }));
    await say(page, 'Pasted text');
    await page.getByTestId('turn-error').waitFor();
    const text = await page.getByTestId('error-text').textContent();
    assert(/control character/.test(text) && !/may be too long/.test(text), `the 422 names what the gateway found (${text})`);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await start(page, 'toulmin');
    await toProposal(page);
    await page.getByTestId('proposal-confirm').click();
    await waitTurns(page, 'toulmin', 4);
    await page.getByTestId('new-session').click();
    await page.getByTestId('session-list').waitFor();
    const progress = await page.getByTestId('session-progress').first().textContent();
    assert(progress.includes('1 of 7'), `the session list shows the progress (${progress})`);
  }));

  await scenario('i22 axe and screenshots: every screen state of the three contracts, 390/768/1280, light and dark', () => withPage('i22-states', async (page) => {
    await page.goto(`${BASE}/`);
    await page.getByTestId('start-screen').waitFor();
    await tour(page, 'start');
    await start(page, 'toulmin');
    await tour(page, 'toulmin-empty');
    await toProposal(page);
    await tour(page, 'toulmin-proposal');
    await page.getByTestId('proposal-reject').click();
    await page.getByTestId('msg-rejected').waitFor();
    await page.getByTestId('draft-edit-claim').click();
    await tour(page, 'toulmin-rejected-editing');
    await page.route('**/v1/sessions/*/turns', (route) => route.fulfill({ status: 200, contentType: 'application/x-ndjson', body: '{"type":"error","error":"coach_stream_failed","message":"the model endpoint failed"}\n' }));
    await say(page, 'A message that fails.');
    await page.getByTestId('turn-error').waitFor();
    await tour(page, 'toulmin-error');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.getByTestId('new-session').click();
    await page.getByTestId('session-list').waitFor();
    await tour(page, 'session-list');

    await start(page, 'cards');
    await waitTurns(page, 'cards', 1);
    await tour(page, 'cards-scenario');
    let turns = 1;
    const seen = new Set();
    for (let i = 0; i < 16 && (await page.locator('[data-card-type="level_up"]').count()) === 0; i++) {
      const card = page.locator('[data-testid="card"][data-active="true"]').last();
      const type = await card.getAttribute('data-card-type');
      if (!seen.has(type)) { seen.add(type); if (type !== 'scenario') await tour(page, `cards-${type}`); }
      if (type === 'scenario' || type === 'insight') await card.getByTestId('card-continue').click();
      else if (type === 'multiple_choice') await card.getByTestId('card-option').first().click();
      else { await card.getByTestId('card-input').fill('I would listen first, then agree on a plan.'); await card.getByTestId('card-submit').click(); }
      await waitTurns(page, 'cards', ++turns);
    }
    await page.locator('[data-card-type="level_up"]').waitFor();
    await tour(page, 'cards-level-up');

    await start(page, 'module');
    await waitTurns(page, 'module', 1);
    await tour(page, 'module-response');
    let mturns = 1;
    for (let i = 0; i < 6 && (await page.getByTestId('module-form').count()) === 0; i++) {
      const suggestion = page.getByTestId('module-response').last().getByTestId('suggestion').first();
      if (await suggestion.count()) await suggestion.click();
      else await say(page, 'Can you tell me more about this?');
      await waitTurns(page, 'module', ++mturns);
    }
    await page.getByTestId('module-form').first().waitFor();
    await tour(page, 'module-form');
  }));

  await scenario('i22 keyboard walks: a toulmin session, a cards drill, a module form', () => withPage('i22-keyboard', async (page) => {
    // Toulmin: start, messages, proposal, Confirm, draft edit, by keyboard alone.
    await page.goto(`${BASE}/`);
    await page.getByTestId('start-screen').waitFor();
    await tabTo(page, 'contract-toulmin');
    await page.keyboard.press('Space');
    await tabTo(page, 'start-button');
    await page.keyboard.press('Enter');
    await page.getByTestId('toulmin-panel').waitFor();
    assertEq(await focused(page), 'composer-input', 'typing goes into the message box after Start');
    const messages = [ARGUMENT.claim[0], 'What makes a claim strong?', ARGUMENT.claim[1]];
    for (const [i, m] of messages.entries()) {
      if (i > 0) assertEq(await focused(page), 'composer-input', `the focus is back in the box after answer ${i}`);
      await page.keyboard.type(m);
      await page.keyboard.press('Enter');
      await waitTurns(page, 'toulmin', i + 1);
    }
    await page.getByTestId('proposal-card').waitFor();
    await tabTo(page, 'proposal-confirm', 4);
    await page.keyboard.press('Enter');
    await waitTurns(page, 'toulmin', 4);
    assertEq(await page.getByTestId('step-grounds').getAttribute('data-state'), 'current', 'confirmed by keyboard');
    await tabTo(page, 'draft-edit-claim');
    await page.keyboard.press('Enter');
    assertEq(await focused(page), 'draft-input-claim', 'Edit opens the draft box with the focus in it');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('Cities should fund fare-free transit by 2030.');
    await page.keyboard.press('Control+Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="draft-claim"]')?.textContent.startsWith('Cities should fund'));
    assertEq(await focused(page), 'draft-edit-claim', 'the focus after the draft was saved');

    // Cards: the first card's Continue has the focus; options by arrow keys.
    await page.getByTestId('new-session').focus();
    await page.keyboard.press('Enter');
    // One stop per radio group: the arrow keys choose within it.
    await tabTo(page, 'contract-toulmin');
    await page.keyboard.press('ArrowDown');
    assert(await page.getByTestId('contract-cards').isChecked(), 'cards chosen by arrow key');
    await tabTo(page, 'start-button');
    await page.keyboard.press('Enter');
    await waitTurns(page, 'cards', 1);
    let turns = 1;
    for (let i = 0; i < 8; i++) {
      const card = page.locator('[data-testid="card"][data-active="true"]').last();
      const type = await card.getAttribute('data-card-type');
      if (type === 'multiple_choice') {
        assertEq(await focused(page), 'card-option', 'the first option has the focus');
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('Enter');
        await waitTurns(page, 'cards', ++turns);
        break;
      }
      if (type === 'scenario' || type === 'insight') {
        assertEq(await focused(page), 'card-continue', `${type}: Continue has the focus`);
        await page.keyboard.press('Enter');
      } else {
        assertEq(await focused(page), 'card-input', `${type}: the answer box has the focus`);
        await page.keyboard.type('I would ask what is in their way.');
        await page.keyboard.press('Control+Enter');
      }
      await waitTurns(page, 'cards', ++turns);
    }
    assert(turns > 1 && (await page.getByTestId('card-answer').filter({ hasText: 'You chose' }).count()) === 1, 'an option chosen by arrow keys');

    // Module: a form filled and sent by keyboard.
    await page.getByTestId('new-session').focus();
    await page.keyboard.press('Enter');
    await tabTo(page, 'contract-cards');
    await page.keyboard.press('ArrowDown');
    assert(await page.getByTestId('contract-module').isChecked(), 'module chosen by arrow key');
    await page.waitForFunction(() => document.querySelector('[data-testid="module-select"]')?.options.length > 0);
    await tabTo(page, 'start-button');
    await page.keyboard.press('Enter');
    await waitTurns(page, 'module', 1);
    let mturns = 1;
    for (let i = 0; i < 6 && (await page.getByTestId('module-form').count()) === 0; i++) {
      await page.keyboard.type('Can you tell me more about this?');
      await page.keyboard.press('Enter');
      await waitTurns(page, 'module', ++mturns);
    }
    const form = page.getByTestId('module-form').first();
    await form.waitFor();
    await tabTo(page, 'form-field', 120);
    for (let i = 0; i < 12 && (await focused(page)) !== 'form-submit'; i++) {
      const kind = await page.evaluate(() => { const el = document.activeElement; return el.type || el.tagName.toLowerCase(); });
      if (kind === 'radio' || kind === 'checkbox') await page.keyboard.press('Space');
      else if (kind === 'select-one') await page.keyboard.press('ArrowDown');
      else if (kind === 'number') await page.keyboard.type('3');
      else await page.keyboard.type('Before presentations.');
      await page.keyboard.press('Tab');
    }
    assertEq(await focused(page), 'form-submit', 'Tab reaches the form’s submit button');
    await page.keyboard.press('Enter');
    await waitTurns(page, 'module', ++mturns);
    assertEq(await form.getAttribute('data-sent'), 'true', 'the form was sent by keyboard');
  }));
}

// ---------------------------------------------------------------------------------------------

/** keptTurn returns what the panel keeps in sessionStorage of the turn under way, or null. */
async function keptTurn(page) {
  return page.evaluate(() => JSON.parse(sessionStorage.getItem(`coachgw.turn.${location.hash.split('/').pop()}`) || 'null'));
}

// TOULMIN_STREAMING is where the toulmin panel streams an answer.
const TOULMIN_STREAMING = '[data-testid="msg-assistant"][data-streaming="true"] .msg-body';

/**
 * midAnswer waits until the answer streaming in the element of selector (the toulmin panel's
 * bubble by default) shows text and the panel has kept more than `lines` lines. (A card's text
 * comes in two or three lines, the last just before the result: one is enough there.)
 */
async function midAnswer(page, selector = TOULMIN_STREAMING, lines = 1) {
  await page.waitForFunction(([sel, n]) => {
    const el = document.querySelector(sel);
    const kept = sessionStorage.getItem(`coachgw.turn.${location.hash.split('/').pop()}`);
    return el && !el.querySelector('.typing') && el.textContent.trim().length > 0 && kept && JSON.parse(kept).after > n;
  }, [selector, lines]);
}

/**
 * stoppedNeutrally checks how a stopped answer is told: a plain note in words, no error box, no
 * code, no Retry.
 */
async function stoppedNeutrally(page) {
  const note = (await page.getByTestId('turn-stopped').textContent()).trim();
  assert(/stopped/i.test(note) && !/turn_cancelled|HTTP/.test(note), `the learner is told in words (${note})`);
  assertEq(await page.getByTestId('turn-error').count(), 0, 'no error box for a Stop the learner asked for');
  assertEq(await page.getByTestId('retry-button').count(), 0, 'no Retry');
  assertEq(await page.getByTestId('turn-stopped').evaluate((el) => el.closest('[role="alert"]') === null), true, 'not an alert');
}

/** storedMessages reads the transcript the gateway stored for the session the page shows. */
async function storedMessages(page) {
  const sess = await sessionOf(page);
  return page.evaluate(async (id) => (await (await fetch(`/v1/sessions/${id}/messages`)).json()).messages, sess.id);
}

/** plain is text as a page shows it: markdown marks and list markers out, white space collapsed. */
function plain(text) {
  return text.replace(/^\s*(?:[-+]|\d+\.)\s+/gm, '').replace(/[*_`#>]/g, '').replace(/\s+/g, ' ').trim();
}

/** announcements records what the panel's live region says from now on (window.__announced). */
async function announcements(page) {
  await page.evaluate(() => {
    window.__announced = [];
    const el = document.querySelector('[data-testid="announcer"]');
    new MutationObserver(() => { if (el.textContent) window.__announced.push(el.textContent); }).observe(el, { childList: true, characterData: true, subtree: true });
  });
}

// RESUMABLE says, for the cards and module panels, what the resume and stop scenarios need: how
// the turn to resume or stop comes about, where its answer streams, its Stop button, and how it
// shows. The module's turns take half a minute each on the slow gateway: its scenarios use its
// opening turn.
const RESUMABLE = {
  cards: {
    streaming: '[data-testid="card-pending"][data-streaming="true"] .card-content',
    // lines: how many lines the panel must have kept for midAnswer (more than).
    lines: 0,
    stop: 'cards-stop',
    // answers: the elements of the answers shown (the pending card is not one); before: how
    // many there are before the turn.
    answers: '[data-testid="card"]',
    before: 1,
    // ready waits for the session to be where the turn starts (after its opening turn).
    ready: (page) => waitTurns(page, 'cards', 1),
    // ask starts the turn: Continue on the first card, a scenario.
    async ask(page) {
      const card = page.locator('[data-testid="card"][data-active="true"]').last();
      assertEq(await card.getAttribute('data-card-type'), 'scenario', 'the first card');
      await card.getByTestId('card-continue').click();
    },
    // texts are what the stored result shows as text.
    texts: (r) => [r.content],
    // streamed returns the text streamed so far, by block: the card's content is one.
    streamed: (events) => ({ 0: events.filter((e) => e.type === 'delta').map((e) => e.text).join('') }),
    // asked checks how the learner's input shows once the turn is over.
    async asked(page) {
      assertEq(await page.getByTestId('card-answer').count(), 1, 'the answer shows once, under its card');
      assertEq((await page.getByTestId('card-answer').textContent()).trim(), 'Continued', 'as the learner gave it');
      assertEq(await page.locator('[data-testid="card"][data-active="true"]').count(), 1, 'one card to answer');
    },
    // stopped checks the panel after Stop: the card is there to answer again, with the focus.
    async stopped(page) {
      const card = page.locator('[data-testid="card"][data-active="true"]');
      assertEq(await card.count(), 1, 'the card is there to answer again');
      assert(!(await card.getByTestId('card-continue').isDisabled()), 'and can be answered');
      assertEq(await focused(page), 'card-continue', 'the focus on its Continue');
    },
  },
  module: {
    streaming: '[data-testid="module-response"][data-streaming="true"] .blocks',
    lines: 1,
    stop: 'composer-stop',
    answers: '[data-testid="module-response"]',
    before: 0,
    ready: async () => {},
    ask: async () => {},
    texts: (r) => (r.content.text_blocks || []).map((b) => b.content),
    streamed(events) {
      const blocks = {};
      for (const e of events.filter((x) => x.type === 'delta')) blocks[e.block || 0] = (blocks[e.block || 0] || '') + e.text;
      return blocks;
    },
    async asked(page) {
      assertEq(await page.getByTestId('msg-auto').count(), 1, 'the opening message shows once, as sent');
      assertEq(await page.getByTestId('composer-input').inputValue(), '', 'and is not in the box');
    },
    async stopped(page) {
      assertEq(await page.getByTestId('msg-auto').count(), 1, 'the opening message stays, to send again');
      assertEq(await page.getByTestId('stopped-again').count(), 1, 'with Send again');
      assertEq(await focused(page), 'composer-input', 'focus in the message box');
      // A message of the learner's own, stopped, goes back into the box.
      const message = 'Can you tell me more about this?';
      await say(page, message);
      await midAnswer(page, this.streaming, this.lines);
      await page.getByTestId('composer-stop').click();
      await page.waitForFunction(() => document.querySelector('[data-testid="turn-stopped"]') && document.querySelector('[data-testid="module-panel"]')?.dataset.busy === 'false');
      assertEq(await page.getByTestId('msg-user').count(), 0, 'the stopped message is not shown as sent');
      assertEq(await page.getByTestId('composer-input').inputValue(), message, 'the message is back in the box');
      assertEq(await focused(page), 'composer-input', 'focus in the message box');
    },
  },
};

/** resumeAfters records the `after` of every resume request the page makes. */
function resumeAfters(page) {
  const afters = [];
  page.on('request', (req) => {
    const m = /\/turns\/current\?(.*)$/.exec(req.url());
    if (req.method() === 'GET' && m) afters.push(Number(new URLSearchParams(m[1]).get('after')));
  });
  return afters;
}

/** countOf returns how many times needle occurs in haystack. */
function countOf(haystack, needle) {
  return needle ? haystack.split(needle).length - 1 : 0;
}

// Issue 21 / issue 22 point 7: a reload in the middle of an answer goes on with the same answer,
// and Stop ends one with nothing stored. They need the slow gateway.
async function resumeScenarios() {
  if (!SLOW_BASE) return;

  await scenario('resume: a reload mid-answer continues the same answer, shown once', () => withPage('resume-reload', async (page) => {
    const afters = resumeAfters(page);
    await start(page, 'toulmin', 'en', SLOW_BASE);
    const message = ARGUMENT.claim[0];
    await say(page, message);
    await midAnswer(page);
    const kept = await keptTurn(page);
    assert(kept && kept.turn && kept.after > 1, `the turn id and line count are kept (${JSON.stringify(kept && { turn: kept.turn, after: kept.after })})`);
    const partial = kept.events.filter((e) => e.type === 'delta').map((e) => e.text).join('');
    await page.reload();
    await restored(page, 'toulmin');
    // The partial text is back before the rest arrives.
    await page.waitForFunction(() => document.querySelector('[data-testid="msg-assistant"] .msg-body')?.textContent.trim().length > 0);
    assert(afters.some((n) => n >= kept.after), `resumed after the lines kept (${afters.join(',')} vs ${kept.after})`);
    assertEq(await page.getByTestId('msg-user').count(), 1, 'the message shows once, as sent');
    assertEq(await page.getByTestId('composer-input').inputValue(), '', 'and is not back in the box');
    await waitTurns(page, 'toulmin', 1);
    assertEq(await page.getByTestId('msg-assistant').count(), 1, 'one answer');
    const sess = await sessionOf(page);
    const transcript = await page.evaluate(async (id) => (await (await fetch(`/v1/sessions/${id}/messages`)).json()), sess.id);
    const coach = transcript.messages.filter((m) => m.role === 'coach');
    assertEq(coach.length, 1, 'one answer stored');
    const r = coach[0].result;
    const shown = (await page.getByTestId('msg-assistant').textContent()).replace(/\s+/g, ' ');
    assert(shown.includes(partial.replace(/[*_`#]/g, '').trim().split(/\s+/).slice(0, 4).join(' ')), `the answer goes on from the text shown before the reload (${partial.slice(0, 60)})`);
    if (r.nextQuestion) assertEq(countOf(shown, r.nextQuestion.trim()), 1, 'the question shows once');
    const first = r.assistantText.replace(/\s+/g, ' ').trim().slice(0, 40);
    assertEq(countOf(shown, first), 1, 'the answer shows once');
    assertEq(await keptTurn(page), null, 'nothing kept once the turn is over');
    await axeClean(page, 'after a resumed answer');
  }));

  await scenario('resume: a reload during the opening turn after Confirm', () => withPage('resume-confirm', async (page) => {
    await start(page, 'toulmin', 'en', SLOW_BASE);
    const bodies = turnBodies(page);
    await toProposal(page);
    await page.getByTestId('proposal-confirm').click();
    await midAnswer(page);
    assertEq(JSON.stringify(bodies.at(-1)), '{"continue":true}', 'the turn after Confirm is a continue turn');
    const users = await page.getByTestId('msg-user').count();
    await page.reload();
    await restored(page, 'toulmin');
    await waitTurns(page, 'toulmin', 1);
    assertEq(await page.getByTestId('msg-user').count(), users, 'a continue turn adds no learner message');
    assertEq(await page.getByTestId('step-grounds').getAttribute('data-state'), 'current', 'the new step');
    const sess = await sessionOf(page);
    const transcript = await page.evaluate(async (id) => (await (await fetch(`/v1/sessions/${id}/messages`)).json()), sess.id);
    const opening = transcript.messages.filter((m) => m.role === 'coach').at(-1).result;
    const shown = (await page.getByTestId('transcript').textContent()).replace(/\s+/g, ' ');
    assertEq(countOf(shown, opening.assistantText.replace(/\s+/g, ' ').trim().slice(0, 40)), 1, 'the opening of the new step shows once');
    if (opening.nextQuestion) assertEq(countOf(shown, opening.nextQuestion.trim()), 1, 'its question shows once');
    assertEq(await keptTurn(page), null, 'nothing kept once the turn is over');
  }));

  await scenario('resume: Stop ends the answer, says so, stores nothing; by keyboard; axe clean', () => withPage('resume-stop', async (page) => {
    await start(page, 'toulmin', 'en', SLOW_BASE);
    const message = ARGUMENT.claim[0];
    await say(page, message);
    await midAnswer(page);
    const stop = page.getByTestId('composer-stop');
    assert(await stop.isVisible(), 'Stop shows while the coach answers');
    await axeClean(page, 'while an answer streams, with Stop');
    await stop.focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('turn-stopped').waitFor();
    await stoppedNeutrally(page);
    assertEq(await page.getByTestId('msg-assistant').count(), 0, 'the stopped answer is gone');
    assertEq(await page.getByTestId('composer-input').inputValue(), message, 'the message is back in the box');
    assert(!(await stop.isVisible()), 'Stop goes when the answer has ended');
    assertEq(await focused(page), 'composer-input', 'focus in the message box');
    const sess = await sessionOf(page);
    const transcript = await page.evaluate(async (id) => (await (await fetch(`/v1/sessions/${id}/messages`)).json()), sess.id);
    assertEq(transcript.messages.length, 0, 'nothing stored');
    assertEq(sess.state.turns.claim || 0, 0, 'no turn counted');
    assertEq(await keptTurn(page), null, 'nothing kept');
    await axeClean(page, 'after Stop');
    // A reload after the stop does not bring the cancelled answer back.
    await page.reload();
    await restored(page, 'toulmin');
    await page.waitForFunction(() => document.querySelector('[data-testid="toulmin-panel"]')?.dataset.busy === 'false');
    assertEq(await page.getByTestId('turn-error').count(), 0, 'no old error after a reload');
    assertEq(await page.getByTestId('msg-assistant').count(), 0, 'no answer after a reload');
  }));
}

// ---------------------------------------------------------------------------------------------
// Issue 23: a crisis turn's safety line (gateway v1.3), from the real gateway: its built-in
// screen finds a crisis in what the learner wrote (phrases of testdata/safety/*.jsonl) before
// the model is asked, and the turn answers with the safety line, the contract's supportive
// answer and a session on hold. The resources are those of the session's locale, which the
// panel takes from the browser's languages (sessionLocale): each scenario runs in a browser of
// its own locale. The expectations below are the gateway's built-in resources
// (internal/safety/resources.go).

const NOTICE_US = {
  locale: 'en-US', message: "You don't have to go through this alone. You can talk to someone right now, any time, for free.",
  resources: [
    { name: '988 Suicide & Crisis Lifeline', phone: '988', text: '988', url: 'https://988lifeline.org' },
    { name: 'Emergency services (if you are in danger now)', phone: '911' },
    { name: 'Childhelp National Child Abuse Hotline', phone: '1-800-422-4453' },
  ],
};
const NOTICE_MX = {
  locale: 'es-MX', message: 'No tienes que pasar por esto a solas. Puedes hablar con alguien ahora mismo, a cualquier hora y gratis.',
  resources: [
    { name: 'Línea de la Vida', phone: '800 911 2000' },
    { name: 'Emergencias (si estás en peligro ahora)', phone: '911' },
  ],
};
// A browser that names no region ("en") gets the general list: no country's number.
const NOTICE_FALLBACK = {
  locale: 'en', message: "You don't have to go through this alone. Find the free helpline for your country, or call your local emergency number if you are in danger.",
  resources: [{ name: 'Find A Helpline: free, confidential helplines by country', url: 'https://findahelpline.com' }],
};

// TOAST_MS is how long the panel keeps a toast up by itself (app.js).
const TOAST_MS = 3500;

/**
 * holdToasts keeps page's toasts up until they are dismissed (their close button, Escape): the
 * panel's own timer, which takes a toast away after TOAST_MS, is held back, so that a slow turn
 * on a busy machine cannot take a toast away while a scenario still looks at it, nor make it
 * leave by itself where the scenario checks that Escape dismissed it.
 */
async function holdToasts(page) {
  await page.addInitScript((ms) => {
    const setTimeout = window.setTimeout;
    window.setTimeout = (fn, delay, ...args) => setTimeout(fn, delay === ms ? 10 * 60_000 : delay, ...args);
  }, TOAST_MS);
}

/**
 * keepTurnStreams makes page keep a copy of the body of every turn it posts, as the gateway
 * sent it (window.__turnStreams): the panel reads the response itself, the copy is a tee of it.
 * Playwright cannot give the body of a streamed fetch response.
 */
async function keepTurnStreams(page) {
  await page.addInitScript(() => {
    const fetch = window.fetch;
    window.__turnStreams = [];
    window.fetch = async (input, init) => {
      const res = await fetch(input, init);
      const url = new URL(typeof input === 'string' ? input : input.url, location.href);
      if ((init?.method || 'GET') === 'POST' && /^\/v1\/sessions\/[0-9a-f]{32}\/turns$/.test(url.pathname)) {
        const i = window.__turnStreams.push(null) - 1;
        res.clone().text().then((text) => { window.__turnStreams[i] = text; }, () => { window.__turnStreams[i] = ''; });
      }
      return res;
    };
  });
}

/**
 * turnLines runs act, which makes page post one turn, and returns the lines of that turn's
 * stream as the gateway sent them (see keepTurnStreams).
 */
async function turnLines(page, act) {
  const n = await page.evaluate(() => window.__turnStreams.length);
  await act();
  const body = (await page.waitForFunction((i) => window.__turnStreams[i], n)).jsonValue();
  return (await body).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

/**
 * crisisStream checks the stream of a crisis turn (or of a turn of a held session): the safety
 * line with notice's resources before any text, exactly once, and a result whose session holds.
 */
function crisisStream(lines, notice, what) {
  const types = lines.map((l) => l.type);
  assertEq(types.filter((t) => t === 'safety').length, 1, `${what}: safety lines in ${types.join(' ')}`);
  const at = types.indexOf('safety');
  assert(!types.slice(0, at).some((t) => t === 'delta' || t === 'card'), `${what}: the safety line comes before any of the answer (${types.join(' ')})`);
  const safety = lines[at];
  assertEq(safety.kind, 'crisis', `${what}: the line's kind`);
  assertEq(safety.locale, notice.locale, `${what}: the resources' locale`);
  assertEq(JSON.stringify(safety.resources), JSON.stringify(notice.resources), `${what}: the resources`);
  const result = lines.find((l) => l.type === 'result');
  assert(result, `${what}: the turn has a result (${types.join(' ')})`);
  assertEq(result.session?.safety?.hold, true, `${what}: the result's session holds`);
  assert(!result.result?.proposedUpdate, `${what}: the supportive answer proposes nothing`);
  assert(!result.result?.content?.form && !(result.result?.content?.suggestions || []).length, `${what}: the supportive answer offers no form and no suggestion`);
}

/**
 * heldOnGateway checks the hold where a reload reads it: the session from GET carries
 * safety.hold, and the transcript's last coach entry (the crisis turn's result, read through
 * /messages) carries notice.
 */
async function heldOnGateway(page, notice, what) {
  const s = await sessionOf(page);
  assertEq(s.safety?.hold, true, `${what}: GET of the session carries safety.hold`);
  const last = await page.evaluate(async () => {
    const id = location.hash.split('/').pop();
    const r = await fetch(`/v1/sessions/${id}/messages?limit=1`);
    return (await r.json()).messages.pop();
  });
  assertEq(last.role, 'coach', `${what}: the transcript ends with the coach's answer`);
  assertEq(last.safety?.locale, notice.locale, `${what}: the transcript's coach entry keeps the notice`);
}

/** safetyShown checks the region as a learner meets it: heading, message, links, and where the focus is. */
async function safetyShown(page, notice, what) {
  const region = page.getByTestId('safety-notice');
  await region.waitFor();
  const title = await region.getAttribute('aria-labelledby');
  assert(title && (await page.locator(`#${title}`).evaluate((el) => el.tagName)) === 'H2', `${what}: the region is labelled by its heading`);
  assertEq((await region.getByTestId('safety-message').textContent()).trim(), notice.message, `${what}: the gateway's message`);
  assertEq(await region.getByTestId('safety-resource').count(), notice.resources.length, `${what}: every resource`);
  for (const [i, r] of notice.resources.entries()) {
    const item = region.getByTestId('safety-resource').nth(i);
    assertEq((await item.locator('.safety-name').textContent()).trim(), r.name, `${what}: resource ${i + 1}'s name`);
    if (r.phone) assertEq(await item.getByTestId('safety-call').getAttribute('href'), `tel:${r.phone.replace(/\D/g, '')}`, `${what}: ${r.name} call link`);
    if (r.text) assertEq(await item.getByTestId('safety-sms').getAttribute('href'), `sms:${r.text.replace(/\D/g, '')}`, `${what}: ${r.name} text link`);
    if (r.url) {
      const a = item.getByTestId('safety-url');
      assertEq(await a.getAttribute('href'), new URL(r.url).href, `${what}: ${r.name} web link`);
      assertEq(await a.getAttribute('rel'), 'noopener noreferrer', `${what}: the new tab has no opener`);
    }
  }
  const lang = notice.locale.split('-')[0];
  assertEq(await region.getAttribute('lang'), lang, `${what}: the region's language`);
  assert(!(await page.evaluate(() => document.activeElement?.closest('[data-testid="safety-notice"]'))), `${what}: the focus was not taken into the region`);
  assertEq(await page.locator('.panel').getAttribute('data-safety-hold'), 'true', `${what}: the panel holds`);
  assert(await page.getByTestId('safety-hold').isVisible(), `${what}: the region says the lesson is paused`);
  assert(await page.getByTestId('composer-input').count() === 0 || await page.getByTestId('composer-input').isEnabled(), `${what}: the message box stays available`);
}

/** phones checks the page at 320 and 390 px in both themes: no overflow, axe-core clean, the region on screen. */
async function phones(page, name) {
  const before = page.viewportSize();
  try {
    for (const scheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [320, 390]) {
        await page.setViewportSize({ width, height: 780 });
        await noOverflow(page, `${name} at ${width}px, ${scheme}`);
        await page.getByTestId('safety-notice').scrollIntoViewIfNeeded();
        await shot(page, `${name}-${width}-${scheme}`, false);
        await axeClean(page, `${name} at ${width}px, ${scheme}`);
        for (const h of await page.getByTestId('safety-call').evaluateAll((els) => els.map((el) => el.getBoundingClientRect().height))) {
          assert(h >= 44, `${name} at ${width}px: a call link is ${h}px tall, want a 44px target`);
        }
      }
    }
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize(before);
  }
}

/**
 * countAnnouncements counts, from now on, the times the assertive announcer is given text (a screen
 * reader reads each); read it with announced(page).
 */
async function countAnnouncements(page) {
  await page.evaluate(() => {
    const el = document.querySelector('[data-testid="safety-announcer"]');
    window.__announced = 0;
    new MutationObserver(() => { if (el.textContent) window.__announced += 1; }).observe(el, { childList: true, characterData: true, subtree: true });
  });
}

async function announced(page) {
  return page.evaluate(() => window.__announced);
}

/** liveText returns what the assertive region holds. */
async function liveText(page) {
  return (await page.getByTestId('safety-announcer').textContent()) || '';
}

async function safetyScenarios() {
  await scenario('safety: toulmin in en-US — 988 arrives, announced once; a reload keeps it and the proposal away', () => withPage('safety-toulmin', async (page) => {
    await keepTurnStreams(page);
    await start(page, 'toulmin');
    assertEq((await sessionOf(page)).locale, 'en-US', 'the session takes the browser\'s region');
    await toProposal(page);
    await countAnnouncements(page);
    const lines = await turnLines(page, () => say(page, "I don't want to be alive anymore"));
    await waitTurns(page, 'toulmin', 4);
    crisisStream(lines, NOTICE_US, 'toulmin, the crisis turn');
    await safetyShown(page, NOTICE_US, 'toulmin, live');
    assertEq(await announced(page), 1, 'the resources are announced once');
    assert((await liveText(page)).includes(NOTICE_US.message) && (await liveText(page)).includes('988'), 'announced with the resources');
    assertEq(await page.getByTestId('safety-announcer').getAttribute('aria-live'), 'assertive', 'the announcer is assertive');
    assertEq(await page.getByTestId('safety-notice').getAttribute('aria-live'), null, 'the region itself is not live');
    assert((await page.getByTestId('msg-assistant').last().textContent()).includes('988'), 'the supportive answer names the line');
    assert(!(await page.getByTestId('proposal-card').isVisible()), 'no proposal while the session holds');
    await onTop(page, 'safety-notice', 'toulmin, live');
    await phones(page, 'safety-toulmin');

    // A held turn carries the resources again; they are not read out again.
    crisisStream(await turnLines(page, () => say(page, 'Are you still there?')), NOTICE_US, 'toulmin, a held turn');
    await waitTurns(page, 'toulmin', 5);
    await safetyShown(page, NOTICE_US, 'toulmin, a held turn');
    assertEq(await announced(page), 1, 'a held turn announces nothing more');

    await heldOnGateway(page, NOTICE_US, 'toulmin');
    await page.reload();
    await restored(page, 'toulmin');
    await safetyShown(page, NOTICE_US, 'toulmin, after a reload');
    assertEq(await liveText(page), '', 'a reload does not announce it again');
    assert(!(await page.getByTestId('proposal-card').isVisible()), 'the pending proposal stays away after a reload');
    await countAnnouncements(page);
    await say(page, 'Thank you.');
    await waitTurns(page, 'toulmin', 1);
    await safetyShown(page, NOTICE_US, 'toulmin, a held turn after a reload');
    assertEq(await announced(page), 0, 'a held turn after a reload announces nothing');

    // This gateway has no access keys, so the region offers staff the operator's clear: a false
    // positive on a fresh install never holds a session for ever.
    await page.getByTestId('safety-clear').click();
    await page.locator('.panel[data-safety-hold="false"]').waitFor();
    assert(!(await sessionOf(page)).safety?.hold, 'the clear ends the hold on the gateway');
    assert(!(await page.getByTestId('safety-notice').isVisible()), 'the region goes with the hold');
  }, { locale: 'en-US' }));

  await scenario('safety: cards in "en" — the general list below the active card, on phones', () => withPage('safety-cards', async (page) => {
    await keepTurnStreams(page);
    await start(page, 'cards');
    assertEq((await sessionOf(page)).locale, 'en', 'a browser without a region makes an "en" session');
    await waitTurns(page, 'cards', 1);
    await page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-continue').click();
    await waitTurns(page, 'cards', 2);
    const card = page.locator('[data-testid="card"][data-active="true"]').last();
    assertEq(await card.getAttribute('data-card-type'), 'prompt', 'a prompt card asks for the learner\'s words');
    await card.getByTestId('card-input').fill("I don't want to be alive anymore");
    const lines = await turnLines(page, () => card.getByTestId('card-submit').click());
    await waitTurns(page, 'cards', 3);
    crisisStream(lines, NOTICE_FALLBACK, 'cards, the crisis turn');
    await safetyShown(page, NOTICE_FALLBACK, 'cards, live');
    assert((await liveText(page)).includes(NOTICE_FALLBACK.message), 'announced');
    const answer = page.getByTestId('support-answer').last();
    assert((await answer.textContent()).includes('findahelpline.com'), 'the supportive answer names the resources');
    assertEq(await page.locator('[data-testid="card"][data-card-type="insight"]').count(), 0, 'the supportive answer is no insight card');
    await phones(page, 'safety-cards');
    await heldOnGateway(page, NOTICE_FALLBACK, 'cards');
    await page.reload();
    await restored(page, 'cards');
    await safetyShown(page, NOTICE_FALLBACK, 'cards, after a reload');
    assertEq(await liveText(page), '', 'a reload does not announce it again');
    assertEq((await page.getByTestId('cards-level').textContent()).trim(), 'Level 1', 'the crisis turn scored nothing');
  }, { locale: 'en' }));

  await scenario('safety: module in es-MX — Línea de la Vida, suggestions and forms away while it holds', () => withPage('safety-module', async (page) => {
    await keepTurnStreams(page);
    await start(page, 'module', 'es');
    assertEq((await sessionOf(page)).locale, 'es-MX', 'the session takes the browser\'s region');
    await waitTurns(page, 'module', 1);
    assert(await page.locator('[data-testid="suggestion"]:visible').count() > 0, 'the lesson offers suggestions before');
    await countAnnouncements(page);
    const lines = await turnLines(page, () => say(page, 'Ya no quiero vivir.'));
    await waitTurns(page, 'module', 2);
    crisisStream(lines, NOTICE_MX, 'module, the crisis turn');
    await safetyShown(page, NOTICE_MX, 'module, live');
    assertEq(await announced(page), 1, 'the resources are announced once');
    assert((await page.getByTestId('module-response').last().textContent()).includes('Línea de la Vida'), 'the supportive answer names the line');
    assertEq(await page.locator('[data-testid="suggestion"]:visible, [data-testid="module-form"]:visible').count(), 0, 'no suggestion or form shows while the session holds');
    crisisStream(await turnLines(page, () => say(page, '¿Sigues ahí?')), NOTICE_MX, 'module, a held turn');
    await waitTurns(page, 'module', 3);
    assertEq(await announced(page), 1, 'a held turn announces nothing more');
    assertEq(await page.locator('[data-testid="suggestion"]:visible, [data-testid="module-form"]:visible').count(), 0, 'no suggestion or form after a held turn');
    await phones(page, 'safety-module');
    await heldOnGateway(page, NOTICE_MX, 'module');
    await page.reload();
    await restored(page, 'module');
    await safetyShown(page, NOTICE_MX, 'module, after a reload');
    assertEq(await liveText(page), '', 'a reload does not announce it again');
    assertEq(await page.locator('[data-testid="suggestion"]:visible, [data-testid="module-form"]:visible').count(), 0, 'no suggestion or form after a reload');
  }, { locale: 'es-MX' }));
}

// The cards and module panels go on with an answer after a reload, and stop one, as the toulmin
// panel does.
async function resumePanelScenarios() {
  if (!SLOW_BASE) return;
  for (const [contract, p] of Object.entries(RESUMABLE)) {
    await scenario(`resume ${contract}: a reload mid-answer continues the same answer in place, shown and announced once; axe clean resumed`, () => withPage(`resume-${contract}`, async (page) => {
      const afters = resumeAfters(page);
      await start(page, contract, 'en', SLOW_BASE);
      await p.ready(page);
      await p.ask(page);
      await midAnswer(page, p.streaming, p.lines);
      const kept = await keptTurn(page);
      assert(kept && kept.turn && kept.after > p.lines, `the turn id and line count are kept (${JSON.stringify(kept && { turn: kept.turn, after: kept.after })})`);
      const before = p.streamed(kept.events);
      await page.reload();
      await restored(page, contract);
      // The answer so far is back, each block in its place, before the rest arrives (once drawn:
      // the panel draws streamed text at the next animation frame).
      await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.trim().length > 0, p.streaming);
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      const shown = await page.evaluate((sel) => {
        const el = document.querySelector(sel);
        const blocks = el ? [...el.querySelectorAll(':scope > [data-index]')] : [];
        return blocks.length ? Object.fromEntries(blocks.map((b) => [b.dataset.index, b.textContent])) : { 0: el ? el.textContent : '' };
      }, p.streaming);
      for (const [index, text] of Object.entries(before)) {
        const words = plain(text).split(' ').slice(0, 3).join(' ');
        assert(plain(shown[index] || '').startsWith(words), `block ${index} is back in place as it was (${JSON.stringify(shown[index] || '').slice(0, 80)} vs ${JSON.stringify(words)})`);
      }
      assert(afters.some((n) => n >= kept.after), `resumed after the lines kept (${afters.join(',')} vs ${kept.after})`);
      assert(await page.getByTestId(p.stop).isVisible(), 'Stop shows while the resumed answer streams');
      await announcements(page);
      await axeClean(page, `${contract}: a resumed answer streaming`);
      await waitTurns(page, contract, 1, 60_000);
      assertEq(await page.locator(p.answers).count(), p.before + 1, 'the resumed answer, once');
      await p.asked(page);
      const coach = (await storedMessages(page)).filter((m) => m.role === 'coach' && m.result);
      assertEq(coach.length, p.before + 1, 'the answer stored once');
      const r = coach.at(-1).result;
      // Its text once in the answer (the one answer after the first): blocks long enough to say.
      const last = plain(await page.locator(p.answers).last().textContent());
      const long = p.texts(r).map(plain).filter((text) => text.length >= 30);
      assert(long.length > 0, 'the answer has text to look for');
      for (const text of long) assertEq(countOf(last, text.slice(0, 30)), 1, `the answer's text shows once (${text.slice(0, 30)})`);
      for (const text of Object.values(before)) {
        assert(plain(p.texts(r).join(' ')).includes(plain(text).split(' ').slice(0, 3).join(' ')), 'the answer finished is the one shown before the reload');
      }
      const announced = await page.evaluate(() => window.__announced);
      assertEq(announced.length, 1, `the answer is announced once (${JSON.stringify(announced).slice(0, 200)})`);
      assertEq(await keptTurn(page), null, 'nothing kept once the turn is over');
      assert(!(await page.getByTestId(p.stop).isVisible()), 'Stop goes when the answer has ended');
      await settle(page); // the answer's last reveal may still be scrolling
      await axeClean(page, `${contract}: after a resumed answer`);
    }));

    await scenario(`resume ${contract}: Stop ends the answer with a neutral note, stores nothing; by keyboard; axe clean`, () => withPage(`resume-${contract}-stop`, async (page) => {
      await start(page, contract, 'en', SLOW_BASE);
      await p.ready(page);
      const stored = await storedMessages(page);
      const version = (await sessionOf(page)).version;
      await p.ask(page);
      await midAnswer(page, p.streaming, p.lines);
      const stop = page.getByTestId(p.stop);
      assert(await stop.isVisible(), 'Stop shows while the coach answers');
      await axeClean(page, `${contract}: while an answer streams, with Stop`);
      await stop.focus();
      await page.keyboard.press('Enter');
      await page.getByTestId('turn-stopped').waitFor();
      await stoppedNeutrally(page);
      assertEq(await page.locator(p.answers).count(), p.before, 'the stopped answer is gone');
      assertEq(await page.locator(p.streaming).count(), 0, 'nothing streams');
      assert(!(await stop.isVisible()), 'Stop goes when the answer has ended');
      await p.stopped(page);
      assertEq(JSON.stringify(await storedMessages(page)), JSON.stringify(stored), 'nothing stored');
      assertEq((await sessionOf(page)).version, version, 'the session did not move');
      assertEq(await keptTurn(page), null, 'nothing kept');
      await axeClean(page, `${contract}: after Stop`);
      // A reload after the stop does not bring the cancelled answer back.
      await page.reload();
      await restored(page, contract);
      await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.busy === 'false', `[data-testid="${contract}-panel"]`);
      assertEq(await page.getByTestId('turn-error').count(), 0, 'no old error after a reload');
      assertEq(await page.locator(p.answers).count(), p.before, 'no stopped answer after a reload');
    }));
  }
}

// ---------------------------------------------------------------------------------------------
// What a learner writes stays out of the browser's storage and the session list (a school's
// computer is shared), and crisis care a learner on a phone can act on at once after a reload.

/**
 * storedText returns every key and value of the page's localStorage and sessionStorage, and the
 * names of its IndexedDB databases, as one string to search.
 */
async function storedText(page) {
  return page.evaluate(async () => {
    const all = [];
    for (const store of [localStorage, sessionStorage]) {
      for (let i = 0; i < store.length; i++) all.push(store.key(i), store.getItem(store.key(i)));
    }
    const dbs = indexedDB.databases ? await indexedDB.databases() : [];
    return JSON.stringify({ all, dbs: dbs.map((d) => d.name) });
  });
}

/** titlesText returns the page's title, the listed sessions' titles and every title and aria-label attribute. */
async function titlesText(page) {
  return page.evaluate(() => [document.title,
    ...[...document.querySelectorAll('.session-title')].map((el) => el.textContent),
    ...[...document.querySelectorAll('[title], [aria-label]')].map((el) => `${el.getAttribute('title') || ''} ${el.getAttribute('aria-label') || ''}`)].join('\n'));
}

/**
 * helpAboveComposer checks, at the current scroll position (the panel's, the test does not scroll),
 * that the crisis region begins on screen, below the sticky bars at the top and above the sticky
 * message box, and that its first link to call (or visit) is whole in that band and on top.
 */
async function helpAboveComposer(page, what) {
  const first = (await page.getByTestId('safety-call').count()) ? 'safety-call' : 'safety-url';
  await onTop(page, first, what);
  const g = await page.evaluate((id) => {
    let top = 0;
    for (const bar of document.querySelectorAll('[data-sticky="top"], .topbar')) {
      const st = getComputedStyle(bar);
      if (st.position === 'sticky' || st.position === 'fixed') top = Math.max(top, bar.getBoundingClientRect().bottom);
    }
    const box = document.querySelector('[data-testid="composer"]');
    const bottom = box ? box.getBoundingClientRect().top : window.innerHeight;
    const region = document.querySelector('[data-testid="safety-notice"]').getBoundingClientRect();
    const link = document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect();
    return { top, bottom, regionTop: region.top, linkTop: link.top, linkBottom: link.bottom };
  }, first);
  assert(g.regionTop >= g.top - 1 && g.regionTop < g.bottom, `${what}: the help region begins on screen above the message box (its top at ${Math.round(g.regionTop)}, the free band ${Math.round(g.top)}–${Math.round(g.bottom)})`);
  assert(g.linkTop >= g.top - 1 && g.linkBottom <= g.bottom + 1, `${what}: the first ${first} is whole above the message box (${Math.round(g.linkTop)}–${Math.round(g.linkBottom)} in ${Math.round(g.top)}–${Math.round(g.bottom)})`);
}

/**
 * lessonPaused checks that every control of the lesson (selector) that is on the page is disabled
 * during the hold and described by the region's note that the lesson is paused.
 */
async function lessonPaused(page, selector, what) {
  const controls = await page.evaluate((sel) => [...document.querySelectorAll(sel)].map((el) => ({
    name: el.dataset.testid || el.tagName,
    disabled: el.disabled === true || el.closest('[inert]') !== null,
    described: (el.getAttribute('aria-describedby') || '').split(' ').map((id) => document.getElementById(id)?.textContent || '').join(' '),
  })), selector);
  for (const c of controls) {
    assert(c.disabled, `${what}: ${c.name} is live during the hold`);
    assert(/paused/.test(c.described), `${what}: ${c.name} is not described as paused (${JSON.stringify(c.described)})`);
  }
  return controls.length;
}

/** CRISIS_CONTRACTS say how each contract reaches a crisis turn and what its lesson controls are. */
const CRISIS_CONTRACTS = {
  toulmin: {
    controls: '[data-testid^="draft-edit-"], [data-testid="proposal-confirm"], [data-testid="proposal-reject"], [data-testid="rejected-edit"]',
    async crisis(page) {
      await say(page, "I don't want to be alive anymore");
      await waitTurns(page, 'toulmin', 1);
    },
  },
  cards: {
    controls: '[data-testid="card-continue"], [data-testid="card-option"], [data-testid="card-input"], [data-testid="card-submit"], [data-testid="card-continue-training"]',
    async crisis(page) {
      await waitTurns(page, 'cards', 1);
      await page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-continue').click();
      await waitTurns(page, 'cards', 2);
      const card = page.locator('[data-testid="card"][data-active="true"]').last();
      await card.getByTestId('card-input').fill("I don't want to be alive anymore");
      await card.getByTestId('card-submit').click();
      await waitTurns(page, 'cards', 3);
    },
  },
  module: {
    controls: '[data-testid="suggestion"], [data-testid="module-form"] :is(button, input, textarea, select)',
    async crisis(page) {
      await waitTurns(page, 'module', 1);
      await say(page, "I don't want to be alive anymore");
      await waitTurns(page, 'module', 2);
    },
  },
};

async function secretsAndCrisisScenarios() {
  await scenario('secrets: no learner text in the browser\'s storage or the session titles; removing a session clears what was kept', () => withPage('secrets', async (page) => {
    await page.goto(`${BASE}/`);
    await page.evaluate(() => localStorage.clear());
    const sent = 'Private words 4711: I am scared of my exam tomorrow.';
    const unsent = 'Unsent words 4712 about my family.';
    for (const contract of ['toulmin', 'module']) {
      await start(page, contract);
      if (contract === 'module') await waitTurns(page, 'module', 1);
      await say(page, sent);
      await waitTurns(page, contract, contract === 'module' ? 2 : 1);
      assert(!(await storedText(page)).includes('4711'), `${contract}: the sent message is not in the browser's storage`);
      assert(!(await titlesText(page)).includes('4711'), `${contract}: the sent message is in no title`);
      await page.getByTestId('new-session').click();
      await page.getByTestId('session-list').waitFor();
      assert(!(await titlesText(page)).includes('4711'), `${contract}: the session list names no session by the learner's words`);
      assert(!(await page.getByTestId('session-list').textContent()).includes('4711'), `${contract}: nothing the learner wrote in the session list`);
    }
    const titles = await page.locator('.session-title').allTextContents();
    assert(titles.some((x) => /^Toulmin argument · /.test(x)) && titles.some((x) => x.includes(' · ')), `neutral titles: ${JSON.stringify(titles)}`);

    // Unsent text is kept while the tab lives, for a reload; never in localStorage. Removing the
    // session from the list leaves nothing of it behind.
    await page.getByTestId('session-open').first().click();
    await page.locator('.panel[data-restored="true"]').waitFor();
    const id = (await sessionOf(page)).id;
    await page.getByTestId('composer-input').fill(unsent);
    await page.reload();
    await page.locator('.panel[data-restored="true"]').waitFor();
    assertEq(await page.getByTestId('composer-input').inputValue(), unsent, 'unsent text survives a reload of the tab');
    assert(!(await page.evaluate(() => JSON.stringify(Object.entries(localStorage)))).includes('4712'), 'unsent text is not in localStorage');
    await page.getByTestId('new-session').click();
    await page.locator(`[data-session-id="${id}"]`).getByTestId('session-remove').click();
    const left = await storedText(page);
    assert(!left.includes(id) && !left.includes('4712'), `removing the session leaves nothing of it in storage: ${left.slice(0, 300)}`);
    await axeClean(page, 'the session list');
  }));

  for (const [contract, c] of Object.entries(CRISIS_CONTRACTS)) {
    await scenario(`crisis ${contract} on a phone: the help above the message box after a reload, the lesson paused, axe clean`, () => withPage(`crisis-${contract}`, async (page) => {
      await start(page, contract);
      await c.crisis(page);
      await safetyShown(page, NOTICE_US, `${contract}, live`);
      const live = await lessonPaused(page, c.controls, `${contract}, live`);
      if (contract === 'toulmin') assert(live >= 7, `toulmin: every step's Edit is paused (${live} controls)`);
      if (contract === 'cards') {
        assertEq(await page.getByTestId('support-answer').count(), 1, 'cards: the crisis answer is a supportive view');
        assertEq(await page.locator('[data-testid="card"][data-card-type="insight"]').count(), 0, 'cards: the crisis answer is no insight card');
        assertEq(await page.locator('[data-testid="card-continue"]:not([disabled])').count(), 0, 'cards: no Continue to press');
      }
      await page.reload();
      await restored(page, contract);
      await safetyShown(page, NOTICE_US, `${contract}, after a reload`);
      await helpAboveComposer(page, `${contract} at 390px after a reload`);
      await lessonPaused(page, c.controls, `${contract}, after a reload`);
      if (contract === 'cards') {
        assertEq(await page.getByTestId('support-answer').count(), 1, 'cards after a reload: the crisis answer is a supportive view');
        assertEq(await page.locator('[data-testid="card"][data-card-type="insight"]').count(), 0, 'cards after a reload: no insight card');
        assert(await page.getByTestId('support-input').isEnabled(), 'cards after a reload: the learner can write to the coach');
      }
      await shot(page, `crisis-${contract}-390-reloaded`, false);
      await axeClean(page, `${contract} held, after a reload at 390px`);
      await page.emulateMedia({ colorScheme: 'dark' });
      await shot(page, `crisis-${contract}-390-reloaded-dark`, false);
      await axeClean(page, `${contract} held, after a reload at 390px, dark`);
      await page.emulateMedia({ colorScheme: 'light' });
    }, { viewport: { width: 390, height: 780 }, locale: 'en-US' }));
  }
}

// Two tabs of one session, the keys and the smaller things of the panel: a tab follows the turn
// another tab streams (read-only, Send off until it ends, never a 409), Escape works everywhere,
// a stopped answer is a neutral note, and nothing covers or crowds what the learner reads.

/** boxesOverlap says whether two bounding boxes share any area. */
function boxesOverlap(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

async function tabsAndKeysScenarios() {
  await scenario('tabs: tab B follows the turn tab A streams, read-only; its Send is off, then on; no 409', () => withPage('tabs-follow', async (a) => {
    if (!SLOW_BASE) throw new Error('needs COACHGW_SLOW_URL');
    await start(a, 'toulmin', 'en', SLOW_BASE);
    const b = await scenarioContext().newPage();
    const refused = [];
    b.on('response', (res) => { if (res.status() === 409) refused.push(`${res.request().method()} ${res.url()}`); });
    try {
      await b.setViewportSize({ width: 390, height: 844 });
      await b.goto(a.url());
      await restored(b, 'toulmin');
      await b.getByTestId('composer-input').fill('A message typed in tab B meanwhile.');
      assert(await b.getByTestId('composer-send').isEnabled(), 'B can send while nothing runs');
      const message = ARGUMENT.claim[0];
      await say(a, message);
      await midAnswer(a);
      // B shows A's turn as it streams, read-only.
      await b.waitForFunction((sel) => document.querySelector('[data-testid="toulmin-panel"]')?.dataset.following === 'true'
        && document.querySelector(sel)?.textContent.trim().length > 0, TOULMIN_STREAMING, { timeout: WAIT });
      assertEq((await b.getByTestId('msg-user').last().textContent()).includes(message), true, "B shows A's message");
      assert(await b.getByTestId('composer-send').isVisible(), 'B shows its Send');
      assert(await b.getByTestId('composer-send').isDisabled(), "B's Send is off while A's turn runs");
      assert(!(await b.getByTestId('composer-stop').isVisible()), 'B offers no Stop for the turn it follows');
      assert(/another tab/i.test(await b.getByTestId('turn-following').textContent()), 'B says why Send is off');
      await b.getByTestId('composer-input').press('Enter');
      assertEq(await b.getByTestId('composer-input').inputValue(), 'A message typed in tab B meanwhile.', "B's text stays in its box");
      await axeClean(b, 'tab B following a turn');
      await waitTurns(a, 'toulmin', 1, 60_000);
      // At its end B has the answer and the new state, and can send again.
      await b.waitForFunction(() => {
        const p = document.querySelector('[data-testid="toulmin-panel"]');
        return p?.dataset.busy === 'false' && p.dataset.following === 'false' && document.querySelectorAll('[data-testid="msg-assistant"]').length === 1;
      }, null, { timeout: WAIT });
      assertEq(plain(await b.getByTestId('msg-assistant').textContent()), plain(await a.getByTestId('msg-assistant').textContent()), 'B shows the answer A got');
      assertEq(await b.getByTestId('turn-following').count(), 0, 'the note has gone');
      assert(await b.getByTestId('composer-send').isEnabled(), "B's Send is on again");
      assertEq(await b.getByTestId('turn-error').count(), 0, 'no error in B');
      await b.getByTestId('composer-send').click();
      await waitTurns(b, 'toulmin', 2, 60_000);
      assertEq(await b.getByTestId('turn-error').count(), 0, "B's own turn went through");
      assertEq(refused.join(', '), '', 'no 409 in B');
    } finally {
      await b.close();
    }
  }));

  await scenario('tabs: a Send that meets a turn running elsewhere follows it instead of a red session_busy', () => withPage('tabs-busy', async (a) => {
    if (!SLOW_BASE) throw new Error('needs COACHGW_SLOW_URL');
    await start(a, 'toulmin', 'en', SLOW_BASE);
    // A context of its own: no channel to the first one, as on another device.
    const other = await newContext('en-US');
    try {
      const b = await other.context.newPage();
      await b.goto(a.url());
      await restored(b, 'toulmin');
      await say(a, ARGUMENT.claim[0]);
      await midAnswer(a);
      const text = 'Sent from another device meanwhile.';
      await say(b, text);
      await b.waitForFunction(() => document.querySelector('[data-testid="toulmin-panel"]')?.dataset.following === 'true', null, { timeout: WAIT });
      assertEq(await b.getByTestId('turn-error').count(), 0, 'no error box');
      assertEq(await b.getByTestId('composer-input').inputValue(), text, 'the text waits in the box');
      assert(await b.getByTestId('composer-send').isDisabled(), 'Send is off while the other turn runs');
      await b.waitForFunction(() => document.querySelector('[data-testid="toulmin-panel"]')?.dataset.busy === 'false', null, { timeout: 60_000 });
      assertEq(await b.getByTestId('msg-assistant').count(), 1, 'the other turn\'s answer is shown');
      assertEq(await b.getByTestId('turn-error').count(), 0, 'still no error box');
      assert(await b.getByTestId('composer-send').isEnabled(), 'Send is on again');
    } finally {
      await other.close();
    }
  }));

  await scenario('keys: Escape cancels a draft edit', () => withPage('keys-draft', async (page) => {
    await start(page, 'toulmin');
    await page.getByTestId('draft-edit-claim').click();
    await page.getByTestId('draft-input-claim').fill('A claim I will not keep.');
    await page.getByTestId('draft-input-claim').press('Escape');
    assertEq(await page.getByTestId('draft-input-claim').count(), 0, 'the draft box has gone');
    assertEq((await page.getByTestId('draft-claim').textContent()).includes('A claim I will not keep'), false, 'nothing saved');
    assertEq(await focused(page), 'draft-edit-claim', 'the focus is back on Edit');
    assertEq((await sessionOf(page)).state.draft?.claim || '', '', 'nothing saved on the gateway');
  }));

  await scenario('keys: Escape dismisses a toast; the milestone toast leaves the progress bar in view at 1280 and 390 px', () => withPage('keys-toast', async (page) => {
    await holdToasts(page);
    let pct = 20;
    await rewriteTurns(page, (r) => {
      pct += 5;
      r.meta = { ...(r.meta || {}), progress: { ...((r.meta && r.meta.progress) || {}), percentage: pct, milestone: pct } };
    });
    await start(page, 'module');
    for (const [i, width] of [1280, 390].entries()) {
      if (i > 0) {
        await page.setViewportSize({ width, height: 844 });
        await say(page, 'Please continue with the next topic.');
      }
      const toast = page.getByTestId('toast').last();
      await toast.waitFor();
      for (const id of ['module-progress', 'module-progress-text']) {
        const bar = await page.getByTestId(id).boundingBox();
        const over = await toast.boundingBox();
        assert(bar && over && !boxesOverlap(bar, over), `${width}px: the toast (${JSON.stringify(over)}) does not cover ${id} (${JSON.stringify(bar)})`);
      }
      await waitTurns(page, 'module', i + 1);
      await page.getByTestId('composer-input').focus();
      await page.keyboard.press('Escape');
      await toast.waitFor({ state: 'detached', timeout: WAIT }); // held: only the dismissal takes it away
    }
  }));

  await scenario('keys: Escape stops a running turn, told as a neutral note', () => withPage('keys-stop', async (page) => {
    if (!SLOW_BASE) throw new Error('needs COACHGW_SLOW_URL');
    await start(page, 'toulmin', 'en', SLOW_BASE);
    const message = ARGUMENT.claim[0];
    await say(page, message);
    await midAnswer(page);
    await page.keyboard.press('Escape');
    await page.getByTestId('turn-stopped').waitFor({ timeout: WAIT });
    await stoppedNeutrally(page);
    assertEq(await page.getByTestId('msg-assistant').count(), 0, 'the stopped answer is gone (nothing of it is stored)');
    assertEq(await page.getByTestId('composer-input').inputValue(), message, 'the message is back in the box');
    assertEq((await storedMessages(page)).length, 0, 'nothing stored');
    await axeClean(page, 'after Escape stopped a turn');
  }));

  await scenario('cards: the character counter stays on one line at 390 px', () => withPage('cards-counter', async (page) => {
    await start(page, 'cards');
    await waitTurns(page, 'cards', 1);
    await page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-continue').click();
    await waitTurns(page, 'cards', 2);
    const counter = page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-counter');
    for (const text of ['', 'A short answer typed into the card.']) {
      await page.locator('[data-testid="card"][data-active="true"]').last().getByTestId('card-input').fill(text);
      const m = await counter.evaluate((el) => ({ height: el.getBoundingClientRect().height, line: parseFloat(getComputedStyle(el).lineHeight) || parseFloat(getComputedStyle(el).fontSize) * 1.5, text: el.textContent }));
      assert(m.height > 0 && m.height < 1.5 * m.line, `the counter "${m.text}" is ${m.height}px high for a ${m.line}px line`);
    }
  }, { viewport: { width: 390, height: 844 } }));

  await scenario('header: no session hash or locale shown to the learner', () => withPage('header', async (page) => {
    await start(page, 'toulmin');
    const sess = await sessionOf(page);
    const header = await page.locator('header.topbar').innerText();
    assert(!header.includes(sess.id.slice(0, 8)), `no session hash in the header (${header})`);
    assert(!new RegExp(`(^|\\s)${sess.locale}(\\s|$)`, 'i').test(header), `no locale ${sess.locale} in the header (${header})`);
  }));

  await scenario('toulmin: Confirm comes before the proposal text in the Tab order', () => withPage('proposal-tab', async (page) => {
    await start(page, 'toulmin');
    await toProposal(page);
    await page.getByTestId('proposal-card').focus();
    const order = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      order.push(await focused(page));
    }
    assertEq(order[0], 'proposal-confirm', `the first stop in the card (${order.join(', ')})`);
    await axeClean(page, 'a proposal');
  }));
}

async function main() {
  await unitScenarios();
  await runQueued(false);
  if (!BASE) {
    console.log('FAIL browser scenarios: set COACHGW_URL to the gateway under test, e.g. http://127.0.0.1:8080');
    results.push({ name: 'browser', ok: false });
    return;
  }
  await mkdir(SHOTS, { recursive: true });
  try {
    browser = await launchBrowser();
    await browserScenarios();
    await issue22Scenarios();
    await resumeScenarios();
    await safetyScenarios();
    await resumePanelScenarios();
    await secretsAndCrisisScenarios();
    await tabsAndKeysScenarios();
    // Every context's language is pinned: sessions take its region (en-US), whatever the
    // machine's own language.
    await runQueued(true);
  } catch (err) {
    console.log(`FAIL browser: ${err.message}`);
    results.push({ name: 'browser', ok: false });
  } finally {
    await browser?.close().catch(() => {});
  }
}

await main();
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log(`screenshots: ${SHOTS}`);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
