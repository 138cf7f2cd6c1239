// End-to-end continuity journeys (the core promise): what was said survives a reload and is given back
// to a stateless agent; a live openai-responses session is resumed with only the new message; an
// expired one is re-injected with the full history, without the user seeing an error.
// Every test opens a fresh browser context (fresh IndexedDB) and resets the agent.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  messages,
  waitForAssistant,
  waitForContinuity,
  assertNoPageProblems,
  withDiagnostics,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';

const SYSTEM = 'You are the continuity test assistant. Remember everything.';
const TURNS = [
  { q: 'My name is Ada and my cat is called Pixel.', a: 'Nice to meet you, Ada. Pixel is a lovely name.' },
  { q: 'I live in Lyon, near the river.', a: 'Lyon by the river sounds wonderful.' },
  { q: 'What is my cat called, and where do I live?', a: 'Your cat is Pixel and you live in Lyon.' },
];
const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

async function journey(name, protocol, fn) {
  const opened = await openConfiguredApp(harness, protocol, { systemPrompt: SYSTEM });
  try {
    await withDiagnostics(opened.page, opened.issues, name, () => fn(opened));
  } finally {
    await opened.context.close();
  }
}

/** Sends turn `i` with its scripted reply and waits until the reply is complete. */
async function turn(page, i) {
  harness.agent.script({ text: TURNS[i].a, delayMs: 5 });
  await sendMessage(page, TURNS[i].q);
  await page.waitForFunction(
    (n) => document.querySelectorAll('[data-testid="message"][data-role="assistant"]').length === n,
    i + 1,
  );
  assert.equal(await waitForAssistant(page), TURNS[i].a);
}

test('core promise: after a reload, turn three carries the system prompt and turns one and two, in order', () =>
  journey('continuity-reload', 'openai-chat', async ({ page, issues }) => {
    const { agent } = harness;
    await turn(page, 0);
    await turn(page, 1);
    await reloadAndReopen(page);
    assert.equal(await messages(page).count(), 4, 'both turns are back after the reload');
    await turn(page, 2);

    const requests = agent.chatRequests();
    assert.equal(requests.length, 3, 'the reload sent nothing');
    const sent = requests[2].body.messages;
    assert.equal(sent[0].role, 'system');
    assert.ok(sent[0].content.includes(SYSTEM), `the system prompt leads: ${JSON.stringify(sent[0])}`);
    assert.deepEqual(
      sent.filter((m) => m.role !== 'system'),
      [user(TURNS[0].q), assistant(TURNS[0].a), user(TURNS[1].q), assistant(TURNS[1].a), user(TURNS[2].q)],
    );
    await waitForContinuity(page, 'reinjected');
    assertNoPageProblems(issues);
  }));

test('openai-responses with a live handle: turn two (after a reload) resumes with only the new message', () =>
  journey('responses-live', 'openai-responses', async ({ page, issues }) => {
    const { agent } = harness;
    await turn(page, 0);
    // The chat turn's own response (a title request after the first reply gets one too).
    const first = agent.chatRequests()[0].responseId;
    assert.ok(first, 'the agent issued a response id');
    await waitForContinuity(page, 'resumable');

    await reloadAndReopen(page);
    await waitForContinuity(page, 'resumable');
    await turn(page, 1);
    const [r1, r2] = agent.chatRequests();
    assert.equal(r1.body.previous_response_id, undefined);
    assert.equal(r2.body.previous_response_id, first, 'turn two continues the stored session');
    assert.deepEqual(r2.body.input, [user(TURNS[1].q)], 'only the new message is sent');
    assert.equal(r2.body.instructions, SYSTEM, 'instructions are not carried over by the server, so they are sent');
    assert.equal(agent.chatRequests().length, 2);
    await waitForContinuity(page, 'resumable');
    assertNoPageProblems(issues);
  }));

test('openai-responses with an expired handle: re-sent with the full history, a reply and no error', () =>
  journey('responses-expired', 'openai-responses', async ({ page, issues }) => {
    const { agent } = harness;
    await turn(page, 0);
    await waitForContinuity(page, 'resumable');
    const handle = agent.chatRequests()[0].responseId;
    const expired = agent.expireResponseIds();
    assert.ok(handle && expired.includes(handle), 'the conversation\'s handle expired');

    await turn(page, 1);
    const [, resumeTry, resent] = agent.chatRequests();
    assert.equal(resumeTry.body.previous_response_id, handle, 'the turn first tried to resume');
    assert.equal(resumeTry.outcome, 'previous-not-found');
    assert.equal(resumeTry.status, 400);
    assert.ok(resent, 'the turn was re-sent');
    assert.equal(resent.body.previous_response_id, undefined, 'the re-sent request resumes nothing');
    assert.deepEqual(resent.body.input, [user(TURNS[0].q), assistant(TURNS[0].a), user(TURNS[1].q)]);
    assert.equal(resent.body.instructions, SYSTEM);
    assert.equal(agent.chatRequests().length, 3);

    assert.equal(await page.locator(tid('error-banner')).count(), 0, 'the user sees no error');
    const statuses = await messages(page, 'assistant').evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
    assert.deepEqual(statuses, ['complete', 'complete'], 'one reply per turn, no failed one left behind');
    await waitForContinuity(page, 'reinjected');

    // The new session the re-injected turn opened is the one the next turn resumes.
    const fresh = resent.responseId;
    assert.ok(fresh && agent.issuedResponseIds().includes(fresh));
    await turn(page, 2);
    const last = agent.chatRequests().at(-1);
    assert.equal(last.body.previous_response_id, fresh);
    assert.deepEqual(last.body.input, [user(TURNS[2].q)]);
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  }));
