// A compile-time test of the published types (tsc --strict checks it, nothing runs it): what a
// TypeScript user writes must type-check, and the mistakes marked @ts-expect-error must not.

import { CoachClient, CoachError, collectTurn, TurnText } from '@coachgw/client';
import type { CoachAIResult, CoachDataParts, CoachUIMessage, FrontendCard, Locale, Session, StructuredResponse, ToulminState, TurnEvent } from '@coachgw/client';
import { chatError, chatRoutes } from '@coachgw/client/ai';
import { streamTurn } from '@coachgw/client/stream.js';
import { useCoachSession as useVueSession, useCoachTurn as useVueTurn } from '@coachgw/client/vue';
import { useCoachSession as useReactSession } from '@coachgw/client/react';

declare const client: CoachClient;

export async function narrowing(id: string): Promise<string> {
  const text = new TurnText();
  for await (const ev of client.streamTurn<CoachAIResult>(id, { message: 'hi' })) {
    text.apply(ev);
    switch (ev.type) {
      case 'delta':
        ev.text.toUpperCase();
        ev.block?.toFixed();
        break;
      case 'card':
        ev.card.type satisfies FrontendCard['type'];
        if (ev.card.type === 'level_up') ev.card.new_level.toFixed();
        // @ts-expect-error only a multiple_choice card has options
        ev.card.options;
        break;
      case 'reset':
        ev.reason.length;
        if (ev.reason === 'unsafe_output') text.apply(ev);
        // @ts-expect-error the reasons are the contract's
        if (ev.reason === 'bored') text.apply(ev);
        break;
      case 'safety':
        ev.kind satisfies 'crisis';
        ev.message.length;
        for (const r of ev.resources) {
          r.name.length;
          r.phone?.length;
          r.text?.length;
          r.url?.length;
        }
        // @ts-expect-error a resource has no e-mail address
        ev.resources[0]?.email;
        break;
      case 'result':
        ev.result.assistantText.length;
        ev.result.proposedUpdate?.field satisfies CoachAIResult['step'] | undefined;
        ev.session.version.toFixed();
        // @ts-expect-error a toulmin result has no text_blocks
        ev.result.text_blocks;
        break;
      case 'error':
        ev.error.length;
        // @ts-expect-error an error event has no text
        ev.text;
        break;
    }
  }
  return text.text;
}

export async function results(id: string) {
  const { result } = await collectTurn(streamTurn<StructuredResponse>(id, { message: 'hi' }, { baseURL: '' }));
  result.result.content.text_blocks[0]?.type satisfies 'paragraph' | 'heading' | 'list' | 'quote' | 'info' | 'warning' | 'success' | 'tip' | undefined;
  const s = (await client.getSession(id)) as Session<ToulminState>;
  s.state.step satisfies CoachAIResult['step'];
  s.safety?.hold satisfies boolean | undefined;
  const { safety } = await collectTurn(client.streamTurn(id, { message: 'hi' }));
  safety?.resources.length;
  // @ts-expect-error a turn body has no "text"
  client.streamTurn(id, { text: 'hi' });
  // @ts-expect-error contract is one of the three
  await client.createSession({ contract: 'poetry' });
  // v1.3: a locale with a region, and an opaque learner reference.
  const mx = await client.createSession({ contract: 'toulmin', locale: 'es-MX', learner: 'lrn-42' });
  mx.learner satisfies string | undefined;
  await client.createSession({ contract: 'cards', locale: 'en' });
  await client.createSession({ contract: 'cards', locale: 'en-US' });
  const locale: Locale = 'es';
  await client.createSession({ contract: 'module', module: 'anxiety-basics', locale });
  // @ts-expect-error the gateway speaks English and Spanish only
  await client.createSession({ contract: 'toulmin', locale: 'fr' });
  // @ts-expect-error a region follows its language after a hyphen
  await client.createSession({ contract: 'toulmin', locale: 'es_MX' });
  // @ts-expect-error a learner reference is a string
  await client.createSession({ contract: 'toulmin', learner: 42 });
  const page = await client.messages(id, { limit: 10 });
  page.next satisfies number | null;
  const ev: TurnEvent = { type: 'delta', text: 'x' };
  return ev;
}

export function errors(err: unknown) {
  if (err instanceof CoachError) {
    err.kind satisfies 'http' | 'turn' | 'read' | 'network';
    return [err.status, err.code, err.field, err.retryAfter, err.retryable] as const;
  }
  return null;
}

export function vue(id: string) {
  const t = useVueTurn<CoachAIResult>(client, () => id);
  t.text.value.toUpperCase();
  t.result.value?.result.assistantText;
  t.status.value satisfies 'idle' | 'streaming' | 'retrying' | 'done' | 'error' | 'aborted';
  t.safety.value?.resources[0]?.url satisfies string | undefined;
  const s = useVueSession<ToulminState>(client);
  s.session.value?.state.step satisfies CoachAIResult['step'] | undefined;
  void s.turn.send({ message: 'hi' });
}

export function react() {
  const s = useReactSession<ToulminState, CoachAIResult>(client);
  s.turn.text.toUpperCase();
  s.turn.safety?.message satisfies string | undefined;
  s.session?.safety?.hold satisfies boolean | undefined;
  s.turn.result?.result.nextQuestion;
  s.session?.state.isComplete satisfies boolean | undefined;
  s.error?.code;
  void s.decideProposal('accept');
  // @ts-expect-error the action is accept or reject
  void s.decideProposal('maybe');
}

export async function resume(id: string) {
  let turn = '';
  let lines = 0;
  for await (const ev of client.streamTurn<CoachAIResult>(id, { message: 'hi' }, { onTurn: (t) => (turn = t), onLine: (n) => (lines = n) })) {
    if (ev.type === 'result') ev.turn?.length;
    if (lines > 3) break;
  }
  for await (const ev of client.resumeTurn<CoachAIResult>(id, { after: lines, turn })) {
    if (ev.type === 'result') ev.result.nextQuestion?.length;
    if (ev.type === 'error') ev.error satisfies string;
  }
  (await client.stopTurn(id)) satisfies boolean;
  // @ts-expect-error after is a number of lines
  client.resumeTurn(id, { after: 'x' });
}

export function aiTypes(m: CoachUIMessage<'toulmin'>, any: CoachUIMessage) {
  for (const p of m.parts) {
    if (p.type === 'data-coach-result') p.data.result.assistantText.length;
    // @ts-expect-error a restored result has no session: check before reading it
    if (p.type === 'data-coach-result') p.data.session.version;
    if (p.type === 'data-coach-result') p.data.session?.version satisfies number | undefined;
    if (p.type === 'data-coach-decision') p.data.action satisfies 'accept' | 'reject';
    if (p.type === 'data-coach-continue') p.data.step satisfies CoachAIResult['step'] | undefined;
    if (p.type === 'data-coach-card') p.data.card.type satisfies FrontendCard['type'];
    if (p.type === 'data-coach-error') p.data.error.length;
    if (p.type === 'data-coach-safety') p.data.resources[0]?.phone satisfies string | undefined;
    if (p.type === 'data-coach-reset') p.data.reason satisfies 'stream_interrupted' | 'stalled' | 'invalid_output' | 'unsafe_output';
    if (p.type === 'text') p.text.length;
  }
  for (const p of any.parts) {
    // @ts-expect-error any contract's result: not every one has assistantText
    if (p.type === 'data-coach-result') p.data.result.assistantText;
  }
  // The parts a learner's message is sent with.
  const continued: CoachUIMessage = { id: 'u1', role: 'user', parts: [{ type: 'data-coach-continue', data: {} }] };
  const chose: CoachUIMessage['parts'][number] = { type: 'data-coach-select', data: { selected: 'b' } };
  // @ts-expect-error a decision is accept or reject
  const maybe: CoachDataParts['coach-decision'] = { action: 'maybe' };
  void [continued, chose, maybe];
  const e = chatError(new Error('{"error":"session_not_found","message":"no such session"}'), m);
  e.error satisfies string;
  e.field satisfies string | undefined;
  chatRoutes('', 'x').stream satisfies string;
}
