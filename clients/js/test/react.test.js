// The React bindings rendered by react-dom (on happy-dom), against the real gateway. Renders are
// left to React's own scheduling (no act()), so the test sees the text as it streams.

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';

import { client, drainQueue, enqueue, optional, sendWhenFree, skip, toulminChunks } from './gateway.js';

const CLAIM = 'Cities should make public transit free for all residents by 2030.';

// The bindings' dependencies are dev dependencies: without `npm ci` these tests skip (not on CI).
// The DOM first: React's renderer looks for it when it loads.
const mods = await optional(async () => ({
  dom: await import('./dom.js'),
  react: await import('react'),
  client: await import('react-dom/client'),
  bindings: await import('../src/react.js'),
}));
const { mountPoint, text, waitFor } = mods?.dom ?? {};

afterEach(drainQueue);

/**
 * mountSession renders a component that uses useCoachSession and waits for its first render; it
 * returns a getter of the hook's latest result, the root element, and the texts and statuses of
 * every render.
 */
async function mountSession() {
  const { createElement: h, StrictMode } = mods.react;
  const { useCoachSession } = mods.bindings;
  let api;
  const renders = [];
  function App() {
    const s = useCoachSession(client);
    api = s;
    renders.push({ text: s.turn.text, status: s.turn.status });
    return h('div', null,
      h('p', { 'data-testid': 'session-status' }, s.status),
      h('p', { 'data-testid': 'version' }, String(s.session?.version ?? '')),
      h('p', { 'data-testid': 'turn-status' }, s.turn.status),
      h('p', { 'data-testid': 'text' }, s.turn.text),
      h('p', { 'data-testid': 'cards' }, s.turn.cards.map((c) => c.type).join(',')),
      h('p', { 'data-testid': 'error' }, s.turn.error?.code ?? s.error?.code ?? ''));
  }
  const root = mountPoint();
  const reactRoot = mods.client.createRoot(root);
  reactRoot.render(h(StrictMode, null, h(App)));
  await waitFor(() => text(root, 'session-status') === 'idle', 'the first render');
  return { api: () => api, root, reactRoot, renders };
}

describe('React bindings', { skip: skip || (!mods && 'react is not installed: npm ci in clients/js') }, () => {
  test('useCoachSession: create, a streamed turn, the session after it', async () => {
    const { api, root, reactRoot, renders } = await mountSession();
    // A turn sent right after create() finds the new session.
    await api().create({ contract: 'toulmin' });
    // A pause halfway, so that a render of the partial text surely happens however the chunks
    // are read (a framework may merge states that follow each other quickly).
    await enqueue({ chunks: toulminChunks(['Streamed ', 'as it ', 'comes.']), fault: { stall_after: 3, stall: '200ms' } });
    const result = await api().turn.send({ message: CLAIM });
    assert.ok(result, `the turn failed: ${api().turn.error?.message}`);
    await waitFor(() => text(root, 'turn-status') === 'done', 'the turn is done');
    await waitFor(() => text(root, 'version') === '2', 'the session after the turn shows');
    const final = text(root, 'text');
    assert.ok(final.length > 0 && result.result.assistantText.startsWith(final));
    const partial = new Set(renders.map((r) => r.text).filter((t) => t.length > 0 && t.length < final.length && final.startsWith(t)));
    assert.ok(partial.size >= 1, `rendered texts: ${JSON.stringify([...partial])}`);
    assert.ok(renders.some((r) => r.status === 'streaming'));
    reactRoot.unmount();
  });

  test('useCoachTurn: cards with an injected level_up card, and a reset', async () => {
    const { api, root, reactRoot, renders } = await mountSession();
    await api().create({ contract: 'cards' });
    for (const message of ['Begin training.', '[Continue]', "I'd ask what is in their way, and we'd agree on a plan by Friday."]) {
      const ok = await api().turn.send({ message });
      if (!ok) await waitFor(() => text(root, 'turn-status') !== 'streaming', 'the failure renders');
      assert.ok(ok, `${message}: ${api().turn.status} ${api().turn.error?.kind} ${api().turn.error?.code} ${api().turn.error?.message}`);
    }
    assert.ok(await api().turn.send({ message: '[Continue]' }));
    await waitFor(() => text(root, 'cards') === 'level_up', 'the level_up card shows');

    const s = await api().create({ contract: 'toulmin' });
    // The retry answers only after a pause, so that the state between the reset and the retry's
    // text is surely rendered (React may merge states that follow each other quickly).
    await enqueue(
      { chunks: toulminChunks(['Text that ', 'will be ', 'discarded.']), fault: { cut_after: 3 } },
      { chunks: toulminChunks(['The retry ', 'speaks.']), fault: { first_byte_delay: '300ms' } },
    );
    const from = renders.length;
    assert.ok(await api().turn.send({ message: CLAIM }));
    await waitFor(() => text(root, 'version') === String(s.version + 1), 'the turn is stored');
    assert.equal(text(root, 'text'), 'The retry speaks.');
    assert.ok(renders.slice(from).some((r) => r.status === 'retrying' && r.text === ''), 'the reset was rendered');
    reactRoot.unmount();
  });

  test('useCoachTurn: an error line; stop() ends the turn with turn_cancelled; unmounting leaves it running, and a page mounted again follows it', async () => {
    const { api, root, reactRoot } = await mountSession();
    const s = await api().create({ contract: 'toulmin' });
    assert.equal(await api().turn.send({ message: CLAIM, step: 'warrant' }), null);
    await waitFor(() => text(root, 'error') === 'coach_step_mismatch', 'the error line shows');

    // v1.2: stop() (DELETE …/turns/current) stops the turn on the gateway; nothing is stored.
    await enqueue({ chunks: toulminChunks(['Slowly ', 'one ', 'piece ', 'at ', 'a ', 'time.']), fault: { stall_after: 2, stall: '30s' } });
    const turn = api().turn.send({ message: CLAIM });
    await waitFor(() => text(root, 'text').length > 0, 'text arrives');
    assert.equal(await api().turn.stop(), true);
    assert.equal(await turn, null);
    await waitFor(() => text(root, 'error') === 'turn_cancelled', 'the stop shows');
    assert.equal((await client.getSession(s.id)).version, s.version, 'nothing of the stopped turn was stored');

    // Unmounting mid-stream stops reading only: the turn runs on to its end.
    await enqueue({ chunks: toulminChunks(['Slowly ', 'one ', 'piece ', 'at ', 'a ', 'time.']), fault: { stall_after: 3, stall: '300ms' } });
    const again = (await sendWhenFree(() => api().turn.send({ message: CLAIM }), () => api().turn.error?.code === 'session_busy')).done;
    await waitFor(() => text(root, 'text').length > 0 && text(root, 'turn-status') === 'streaming', 'text arrives');
    reactRoot.unmount();
    assert.equal(await again, null);

    // The page again (a reload): useCoachTurn with the session's id follows the turn on mount.
    const { createElement: h, StrictMode } = mods.react;
    let latest;
    function Page() {
      const t = mods.bindings.useCoachTurn(client, s.id);
      latest = t;
      return h('p', { 'data-testid': 'text' }, t.text);
    }
    const root2 = mountPoint();
    const reactRoot2 = mods.client.createRoot(root2);
    reactRoot2.render(h(StrictMode, null, h(Page)));
    await waitFor(() => latest?.status === 'done', `the resumed turn ends (status ${latest?.status} ${latest?.error?.message})`);
    assert.equal(latest.result.session.version, s.version + 1, 'the unmounted turn was stored');
    await waitFor(() => text(root2, 'text') === latest.result.result.assistantText, 'the whole answer shows');
    reactRoot2.unmount();
  });
});
