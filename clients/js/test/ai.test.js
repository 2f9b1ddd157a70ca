// chatError and chatRoutes (src/ai.js) on the errors the AI SDK reports.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { chatError, chatRoutes } from '../src/ai.js';

test('chatError reads what the SDK hands onError', () => {
  const cases = [
    { name: 'an HTTP error body (before the stream)', err: new Error('{"error":"invalid_input","message":"selected is not an option","field":"selected"}'),
      want: { error: 'invalid_input', message: 'selected is not an option', field: 'selected' } },
    { name: 'a body without a message', err: new Error('{"error":"session_busy"}'), want: { error: 'session_busy', message: 'session_busy' } },
    { name: 'an error line: the code from the last message', err: new Error('The coach could not answer.'),
      last: { parts: [{ type: 'text' }, { type: 'data-coach-error', data: { error: 'coach_validation_failed', message: 'The coach could not answer.' } }] },
      want: { error: 'coach_validation_failed', message: 'The coach could not answer.' } },
    { name: 'no answer at all', err: new TypeError('fetch failed'), want: { error: 'network_error', message: 'fetch failed' } },
    { name: "a proxy's page", err: new Error('<html>Bad gateway</html>'), want: { error: 'network_error', message: '<html>Bad gateway</html>' } },
    { name: 'JSON that is not the gateway\'s', err: new Error('{"detail":"x"}'), want: { error: 'network_error', message: '{"detail":"x"}' } },
  ];
  for (const c of cases) assert.deepEqual(chatError(c.err, c.last), c.want, c.name);
});

test('chatRoutes', () => {
  assert.deepEqual(chatRoutes('http://gw:8080/', 'abc'), {
    api: 'http://gw:8080/v1/sessions/abc/chat',
    stream: 'http://gw:8080/v1/sessions/abc/chat/stream',
    messages: 'http://gw:8080/v1/sessions/abc/chat/messages',
    stop: 'http://gw:8080/v1/sessions/abc/turns/current',
  });
});
