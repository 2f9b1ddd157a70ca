// The safety line of a crisis turn (gateway v1.3) through every layer of the client: the parser,
// streamTurn over HTTP (a recorded crisis stream served here on a loopback port), collectTurn,
// the TurnRunner's snapshot, and the Vue and React bindings (on happy-dom), which must expose it.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { CoachClient, CoachError, collectTurn, parseEvent, readEvents, TurnRunner } from '../src/index.js';
import { optional } from './gateway.js';

const notice = {
  kind: 'crisis',
  locale: 'es-US',
  message: 'No tienes que pasar por esto a solas.',
  resources: [
    { name: '988 Línea de Prevención del Suicidio y Crisis', phone: '988', text: 'Envía AYUDA al 988', url: 'https://988lineadevida.org' },
    { name: 'Emergencias', phone: '911' },
  ],
};
const safetyLine = { type: 'safety', ...notice };
const hold = { hold: true, since: '2026-11-26T10:00:00Z', episode: 'ep1' };
const session = { id: 's1', contract: 'toulmin', locale: 'es-US', version: 3, state: { step: 'claim' }, safety: hold };
const resultLine = { type: 'result', result: { assistantText: 'Estoy aquí contigo.', step: 'claim' }, session };
/** The NDJSON of a crisis turn as the contract has it: the safety line, one delta, the result. */
const crisisStream = [safetyLine, { type: 'delta', text: 'Estoy aquí contigo.' }, resultLine].map((l) => JSON.stringify(l)).join('\n') + '\n';

const enc = new TextEncoder();
/** body returns a ReadableStream of the given string chunks. */
function body(...chunks) {
  return new ReadableStream({
    pull(controller) {
      const c = chunks.shift();
      if (c === undefined) controller.close();
      else controller.enqueue(enc.encode(c));
    },
  });
}

/** fakeClient's turns play events, whatever is asked; it has no turn to resume. */
function fakeClient(events) {
  return {
    async* streamTurn(_id, _body, options) {
      options?.onTurn?.('t1');
      for (const ev of events) yield ev;
    },
    async* resumeTurn() {},
  };
}

describe('the safety line', () => {
  test('parseEvent keeps the notice, and only its documented members', () => {
    const ev = parseEvent({ ...safetyLine, extra: 1, resources: [{ ...notice.resources[0], email: 'x@y' }, notice.resources[1]] }, 1);
    assert.deepEqual(ev, safetyLine);
  });

  const malformed = [
    ['no resources', { type: 'safety', kind: 'crisis', locale: 'en', message: 'm' }],
    ['resources not a list', { ...safetyLine, resources: {} }],
    ['a resource without a name', { ...safetyLine, resources: [{ phone: '988' }] }],
    ['a phone that is not a string', { ...safetyLine, resources: [{ name: 'x', phone: 988 }] }],
    ['no message', { type: 'safety', kind: 'crisis', locale: 'en', resources: [] }],
  ];
  for (const [name, line] of malformed) {
    test(`malformed: ${name}`, () => {
      assert.throws(() => parseEvent(line, 2), (err) => err instanceof CoachError && err.code === 'malformed_line');
    });
  }

  test('a reset for unsafe output discards the text like any reset', async () => {
    const lines = ['{"type":"delta","text":"Unsafe"}', '{"type":"reset","reason":"unsafe_output"}', '{"type":"delta","text":"Safe."}', JSON.stringify(resultLine)];
    const got = await collectTurn(readEvents(body(lines.join('\n'))));
    assert.equal(got.text, 'Safe.');
    assert.equal(got.safety, null);
  });

  describe('streamTurn over HTTP', () => {
    let server;
    let base;
    before(async () => {
      server = http.createServer((req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'X-Coach-Turn': 't1' });
        // The line and the rest in separate writes, as a gateway flushes them.
        res.write(crisisStream.slice(0, 40));
        setTimeout(() => res.end(crisisStream.slice(40)), 5);
      });
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${server.address().port}`;
    });
    after(() => new Promise((resolve) => server.close(resolve)));

    test('yields the safety event first, then the supportive text and the held session', async () => {
      const client = new CoachClient({ baseURL: base });
      const got = await collectTurn(client.streamTurn('s1', { message: 'ya no quiero vivir' }));
      assert.deepEqual(got.safety, safetyLine);
      assert.equal(got.text, 'Estoy aquí contigo.');
      assert.deepEqual(got.result.session.safety, hold);
      const types = [];
      for await (const ev of client.streamTurn('s1', { message: 'x' })) types.push(ev.type);
      assert.deepEqual(types, ['safety', 'delta', 'result']);
    });
  });

  test('TurnRunner: the snapshot carries the safety event from its arrival, and the next turn starts without it', async () => {
    const snapshots = [];
    const events = [safetyLine, { type: 'delta', text: 'Estoy aquí.' }, resultLine];
    const runner = new TurnRunner(fakeClient(events), (s) => snapshots.push(s));
    const result = await runner.send('s1', { message: 'x' });
    assert.equal(result.session.safety.hold, true);
    const first = snapshots.findIndex((s) => s.safety);
    assert.ok(first >= 0 && snapshots[first].text === '', 'the safety event shows before any text');
    assert.deepEqual(snapshots.at(-1).safety, safetyLine);
    assert.equal(snapshots.at(-1).status, 'done');
    events.splice(0, 1);
    runner.send('s1', { message: 'y' });
    await new Promise((r) => setTimeout(r, 0));
    assert.equal(runner.snapshot.safety, null);
  });
});

const vue = await optional(async () => ({ dom: await import('./dom.js'), vue: await import('vue'), bindings: await import('../src/vue.js') }));

describe('Vue: useCoachTurn exposes the safety event', { skip: !vue && 'vue is not installed: npm ci in clients/js' }, () => {
  test('a ref that renders the resources', async () => {
    const { createApp, defineComponent, h } = vue.vue;
    let api;
    const App = defineComponent({
      setup() {
        api = vue.bindings.useCoachTurn(fakeClient([safetyLine, { type: 'delta', text: 'Estoy aquí.' }, resultLine]), 's1', { resume: false });
        return () => h('ul', { 'data-testid': 'resources' }, (api.safety.value?.resources ?? []).map((r) => h('li', r.phone)));
      },
    });
    const root = vue.dom.mountPoint();
    const app = createApp(App);
    app.mount(root);
    assert.equal(api.safety.value, null);
    await api.send({ message: 'x' });
    await vue.dom.waitFor(() => vue.dom.text(root, 'resources') === '988911', 'the resources render');
    assert.equal(api.safety.value.locale, 'es-US');
    app.unmount();
  });
});

const react = await optional(async () => ({
  dom: await import('./dom.js'),
  react: await import('react'),
  client: await import('react-dom/client'),
  bindings: await import('../src/react.js'),
}));

describe('React: useCoachTurn exposes the safety event', { skip: !react && 'react is not installed: npm ci in clients/js' }, () => {
  test('state that renders the resources', async () => {
    const { createElement: h } = react.react;
    const client = fakeClient([safetyLine, { type: 'delta', text: 'Estoy aquí.' }, resultLine]);
    let api;
    function App() {
      api = react.bindings.useCoachTurn(client, 's1', { resume: false });
      return h('ul', { 'data-testid': 'resources' }, (api.safety?.resources ?? []).map((r) => h('li', { key: r.name }, r.phone)));
    }
    const root = react.dom.mountPoint();
    const reactRoot = react.client.createRoot(root);
    reactRoot.render(h(App));
    await react.dom.waitFor(() => api, 'the first render');
    assert.equal(api.safety, null);
    await api.send({ message: 'x' });
    await react.dom.waitFor(() => react.dom.text(root, 'resources') === '988911', 'the resources render');
    reactRoot.unmount();
  });
});
