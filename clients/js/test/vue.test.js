// The Vue bindings rendered by Vue's own DOM renderer (on happy-dom), against the real gateway.

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import { client, drainQueue, enqueue, optional, sendWhenFree, skip, toulminChunks } from './gateway.js';

const CLAIM = 'Cities should make public transit free for all residents by 2030.';

// The bindings' dependencies are dev dependencies: without `npm ci` these tests skip (not on CI).
// The DOM first: Vue's renderer looks for it when it loads.
const mods = await optional(async () => ({ dom: await import('./dom.js'), vue: await import('vue'), bindings: await import('../src/vue.js') }));
const { mountPoint, text, waitFor } = mods?.dom ?? {};

afterEach(drainQueue);

/**
 * mountSession renders a component that uses useCoachSession and shows the session and its turn;
 * it returns the composable's result, the root element, the statuses the turn went through and
 * the texts it rendered.
 */
function mountSession() {
  const { createApp, defineComponent, h, watch, onUpdated } = mods.vue;
  const { useCoachSession } = mods.bindings;
  let api;
  const statuses = [];
  const rendered = [];
  const App = defineComponent({
    setup() {
      api = useCoachSession(client);
      watch(api.turn.status, (s) => statuses.push(s), { flush: 'sync' });
      onUpdated(() => rendered.push(api.turn.text.value));
      return () => h('div', [
        h('p', { 'data-testid': 'session-status' }, api.status.value),
        h('p', { 'data-testid': 'version' }, String(api.session.value?.version ?? '')),
        h('p', { 'data-testid': 'step' }, api.session.value?.state.step ?? ''),
        h('p', { 'data-testid': 'turn-status' }, api.turn.status.value),
        h('p', { 'data-testid': 'text' }, api.turn.text.value),
        h('p', { 'data-testid': 'error' }, api.turn.error.value?.code ?? api.error.value?.code ?? ''),
      ]);
    },
  });
  const root = mountPoint();
  const app = createApp(App);
  app.mount(root);
  return { api, root, app, statuses, rendered };
}

describe('Vue bindings', { skip: skip || (!mods && 'vue is not installed: npm ci in clients/js') }, () => {
  test('useCoachSession: create, a streamed turn, the session after it', async () => {
    const { api, root, app, statuses, rendered } = mountSession();
    assert.equal(text(root, 'session-status'), 'idle');
    await api.create({ contract: 'toulmin' });
    await waitFor(() => text(root, 'session-status') === 'ready', 'the session is ready');
    assert.equal(text(root, 'version'), '1');

    // A pause halfway, so that a render of the partial text surely happens however the chunks
    // are read (a framework may merge states that follow each other quickly).
    await enqueue({ chunks: toulminChunks(['Streamed ', 'as it ', 'comes.']), fault: { stall_after: 3, stall: '200ms' } });
    const result = await api.turn.send({ message: CLAIM });
    assert.ok(result, `the turn failed: ${api.turn.error.value?.message}`);
    await waitFor(() => text(root, 'turn-status') === 'done', 'the turn is done');
    const final = text(root, 'text');
    assert.ok(final.length > 0);
    assert.ok(result.result.assistantText.startsWith(final));
    // The text was rendered as it streamed, not only at the end.
    const partial = rendered.filter((t) => t.length > 0 && t.length < final.length && final.startsWith(t));
    assert.ok(partial.length >= 1, `rendered texts: ${JSON.stringify(rendered)}`);
    assert.deepEqual([statuses[0], statuses.at(-1)], ['streaming', 'done']);
    // The result line's session is the session now.
    assert.equal(text(root, 'version'), '2');
    assert.equal(api.session.value.version, result.session.version);
    app.unmount();
  });

  test('useCoachTurn: a reset shows as retrying and clears the text', async () => {
    const { api, root, app, statuses } = mountSession();
    await api.create({ contract: 'toulmin' });
    await enqueue({ chunks: toulminChunks(['Text that ', 'will be ', 'discarded.']), fault: { cut_after: 3 } });
    const texts = [];
    const { watch } = mods.vue;
    watch(api.turn.text, (t) => texts.push(t), { flush: 'sync' });
    await api.turn.send({ message: CLAIM });
    assert.ok(statuses.includes('retrying'), `statuses ${statuses.join(' ')}`);
    assert.ok(texts.includes('Text that will be '), `texts ${JSON.stringify(texts.slice(0, 5))}`);
    assert.ok(texts.includes(''), 'the text was cleared by the reset');
    assert.ok(!text(root, 'text').includes('discarded'));
    assert.equal(api.turn.status.value, 'done');
    app.unmount();
  });

  test('useCoachTurn: an error line, and an HTTP error', async () => {
    const { api, root, app } = mountSession();
    await api.create({ contract: 'toulmin' });
    assert.equal(await api.turn.send({ message: CLAIM, step: 'rebuttal' }), null);
    await waitFor(() => text(root, 'error') === 'coach_step_mismatch', 'the error line shows');
    assert.equal(api.turn.error.value.kind, 'turn');
    assert.equal(api.turn.status.value, 'error');
    await api.load('0'.repeat(32));
    await waitFor(() => text(root, 'session-status') === 'error', 'the failed load shows');
    assert.equal(api.error.value.status, 404);
    assert.equal(api.session.value.version, 1, 'a failed load keeps the session');
    app.unmount();
  });

  test('stop() mid-stream stops the turn on the gateway: turn_cancelled, nothing stored', async () => {
    const { api, root, app } = mountSession();
    const s = await api.create({ contract: 'toulmin' });
    // A stall after the first pieces: the stop surely comes while the turn runs.
    await enqueue({ chunks: toulminChunks(['Slowly ', 'one ', 'piece ', 'at ', 'a ', 'time.']), fault: { stall_after: 2, stall: '30s' } });
    const turn = api.turn.send({ message: CLAIM });
    await waitFor(() => text(root, 'text').length > 0, 'text arrives');
    assert.match(api.turn.turn.value, /.+/, 'the turn id (X-Coach-Turn) is known once it streams');
    assert.equal(await api.turn.stop(), true);
    assert.equal(await turn, null);
    await waitFor(() => text(root, 'error') === 'turn_cancelled', 'the stream ends with turn_cancelled');
    assert.equal(api.turn.status.value, 'error');
    assert.equal(await api.turn.stop(), false, 'no turn runs any more: 404 no_running_turn');
    assert.equal((await client.getSession(s.id)).version, s.version, 'a stopped turn stores nothing');
    app.unmount();
  });

  test('abort, and unmounting mid-stream, stop reading; the turn runs on, and a page mounted again follows it', async () => {
    const { api, root, app } = mountSession();
    const s = await api.create({ contract: 'toulmin' });
    await enqueue({ chunks: toulminChunks(['Slowly ', 'one ', 'piece ', 'at ', 'a ', 'time.']), fault: { drip: '1ms' } });
    const turn = api.turn.send({ message: CLAIM });
    await waitFor(() => text(root, 'text').length > 0, 'text arrives');
    api.turn.abort();
    assert.equal(await turn, null);
    assert.equal(api.turn.status.value, 'aborted');
    // v1.2: the turn outlives its connection; resume() follows it to its result.
    const resumed = await api.turn.resume();
    assert.ok(resumed, `the resumed turn failed: ${api.turn.error.value?.message}`);
    assert.equal(api.turn.text.value, resumed.result.assistantText, 'the resumed text is the whole answer, question included');
    assert.equal(resumed.session.version, s.version + 1, 'the aborted turn was stored');

    await enqueue({ chunks: toulminChunks(['Slowly ', 'one ', 'piece ', 'at ', 'a ', 'time.']), fault: { stall_after: 3, stall: '300ms' } });
    // The gateway may hold the session a moment after the result line: 409 session_busy.
    const again = (await sendWhenFree(() => api.turn.send({ message: CLAIM }), () => api.turn.error.value?.code === 'session_busy')).done;
    await waitFor(() => api.turn.text.value.length > 0, 'text arrives');
    app.unmount();
    assert.equal(await again, null);
    assert.equal(api.turn.status.value, 'aborted');

    // The page again (a reload): a component with the session's id follows the running turn on
    // mount, from its first line, to the same result.
    const { createApp, defineComponent, h } = mods.vue;
    let turnApi;
    const App = defineComponent({
      setup() {
        turnApi = mods.bindings.useCoachTurn(client, s.id);
        return () => h('p', { 'data-testid': 'text' }, turnApi.text.value);
      },
    });
    const root2 = mountPoint();
    const app2 = createApp(App);
    app2.mount(root2);
    await waitFor(() => turnApi.status.value === 'done', `the resumed turn ends (status ${turnApi.status.value}, ${turnApi.error.value?.message})`);
    const { result, session } = turnApi.result.value;
    assert.equal(session.version, s.version + 2, 'the unmounted turn was stored');
    assert.equal(text(root2, 'text'), result.assistantText);
    app2.unmount();
  });
});
