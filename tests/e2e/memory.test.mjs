// End-to-end memory update: with M set in Settings, after M user/assistant pairs the agent receives the
// summary request (temperature 0.3, "No previous conversation" the first time); the scripted summary
// and entities appear in the memory pane and survive a reload; a garbage memory reply leaves them
// untouched, says so, and does not break the chat; a reply that keeps no summary still moves memory on.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { memoryReplyText, MEMORY_OPENING } from './agent-server.mjs';
import {
  startHarness,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  waitForAssistant,
  errorBannerText,
  assertNoPageProblems,
  withDiagnostics,
  tid,
} from './helpers.mjs';

const Q1 = 'I am Ada Lovelace and I am writing notes on the Analytical Engine.';
const A1 = 'Splendid, Ada. Tell me more about the Analytical Engine.';
const Q2 = 'Charles Babbage designed it; I translate and annotate.';
const A2 = 'So you work closely with Charles Babbage.';
const Q3 = 'Are you still with me?';
const A3 = 'Yes, always.';
const SUMMARY = 'Ada Lovelace is writing notes on the Analytical Engine.';
const ENTITIES = [
  {
    id: 'ada',
    type: 'person',
    name: 'Ada Lovelace',
    description: 'Writes notes on the Analytical Engine.',
    properties: { role: 'translator' },
    relationships: [{ targetId: 'engine', relationship: 'writes about', strength: 0.9 }],
  },
  { id: 'engine', type: 'concept', name: 'Analytical Engine', description: 'A mechanical computer.', properties: {}, relationships: [] },
];
const GARBAGE_MEMORY = 'Sorry, I would rather not summarise this conversation. {{{ [[[ not json';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** The memory pane as the user sees it: summary text and entities (name, type). */
async function memoryShown(page) {
  const summary = page.locator(tid('memory-summary')).locator(tid('summary-text'));
  const text = (await summary.count()) ? (await summary.innerText()).trim() : null;
  const entities = await page
    .locator(tid('memory-entities'))
    .locator(tid('entity-node'))
    .evaluateAll((els) =>
      els
        .map((e) => ({ type: e.getAttribute('data-entity-type'), name: e.querySelector('.entity-name')?.textContent.trim() }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    );
  return { summary: text, entities };
}

const EXPECTED_MEMORY = {
  summary: SUMMARY,
  entities: [
    { type: 'person', name: 'Ada Lovelace' },
    { type: 'concept', name: 'Analytical Engine' },
  ].sort((a, b) => a.name.localeCompare(b.name)),
};

async function waitForSummary(page, text) {
  await page.locator(tid('summary-text')).filter({ hasText: text }).waitFor({ state: 'visible' });
}

async function chat(page, question, answer) {
  harness.agent.script({ text: answer, delayMs: 5 });
  await sendMessage(page, question);
  await page.waitForFunction(
    (a) => [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1)?.innerText.includes(a),
    answer,
  );
  assert.equal(await waitForAssistant(page), answer);
}

test('memory update after M=1 pair: request, summary and entities shown and kept; a garbage reply changes nothing', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1 });
  try {
    await withDiagnostics(page, issues, 'memory-update', async () => {
      agent.scriptMemory({ text: memoryReplyText({ summary: SUMMARY, entities: ENTITIES }), delayMs: 5 });
      await chat(page, Q1, A1);

      const [memReq] = await agent.waitForRequests(1, { filter: (r) => r.kind === 'memory' });
      assert.equal(memReq.path, '/v1/chat/completions');
      assert.equal(memReq.body.temperature, 0);
      assert.equal(memReq.body.model, 'test-model');
      assert.ok(memReq.rawBody.includes(MEMORY_OPENING));
      assert.equal(memReq.body.response_format.type, 'json_schema', 'constrained first');
      assert.equal(memReq.body.response_format.json_schema.strict, true);
      const memText = memReq.body.messages.map((m) => m.content).join('\n');
      assert.ok(memText.includes('KNOWN ENTITIES') && !memText.includes('PREVIOUS SUMMARY'), 'a constrained update carries the known entities and the new messages (the engine keeps the previous summary)');
      assert.ok(memText.includes(Q1) && memText.includes(A1), 'the update carries the pair it summarises');
      assert.equal(agent.chatRequests().length, 1, 'the memory request is not a chat turn');

      await waitForSummary(page, SUMMARY);
      await page.locator(tid('entity-node')).nth(1).waitFor({ state: 'visible' });
      assert.deepEqual(await memoryShown(page), EXPECTED_MEMORY);

      await reloadAndReopen(page);
      await waitForSummary(page, SUMMARY);
      await page.locator(tid('entity-node')).nth(1).waitFor({ state: 'visible' });
      assert.deepEqual(await memoryShown(page), EXPECTED_MEMORY, 'memory survives a reload');

      // A garbage memory reply: the previous memory stays, the user is told, the chat goes on.
      agent.setMemoryDefault({ text: GARBAGE_MEMORY, delayMs: 5 });
      await chat(page, Q2, A2);
      await agent.waitForRequests(2, { filter: (r) => r.kind === 'memory' });
      const second = agent.memoryRequests()[1];
      assert.ok(second.rawBody.includes('Analytical Engine'), 'the second update lists the known entities, so their ids are reused');
      assert.match(await errorBannerText(page), /memory update failed/i);
      await page.locator(tid('memory-updating')).waitFor({ state: 'hidden' });
      assert.deepEqual(await memoryShown(page), EXPECTED_MEMORY, 'a failed update leaves memory untouched');
      // The memory pane says so: why, and the raw reply.
      const failure = page.locator(tid('memory-failure'));
      await failure.waitFor({ state: 'visible' });
      assert.match(await failure.locator(tid('memory-failure-reason')).innerText(), /could not be used/);
      await failure.locator(tid('memory-failure-raw')).locator('summary').click();
      assert.ok((await failure.locator('pre').innerText()).includes(GARBAGE_MEMORY), 'the raw reply is shown');

      await chat(page, Q3, A3);
      const third = agent.chatRequests()[2].body.messages;
      assert.ok(third.some((m) => m.content.includes(SUMMARY)), 'the kept summary still feeds the prompt');
      // After a failure automatic updates back off (two turns first): this turn sends none.
      await page.waitForTimeout(500);
      assert.equal(agent.memoryRequests().length, 2, 'a failed update is not retried after every turn');
      await reloadAndReopen(page);
      await waitForSummary(page, SUMMARY);
      assert.deepEqual(await memoryShown(page), EXPECTED_MEMORY, 'still untouched after a reload');
      assert.equal(await page.locator(tid('memory-failure')).count(), 1, 'the failure is still shown after a reload');

      // Retry memory update, now that the model answers well: the failure goes, the summary grows.
      const NEXT = 'Charles Babbage designed the engine that Ada annotates.';
      agent.setMemoryDefault({ text: memoryReplyText({ summary: NEXT, entities: [] }) });
      await page.locator(tid('memory-retry')).click();
      await page.locator(tid('memory-failure')).waitFor({ state: 'detached' });
      const summaryText = await page.locator(tid('memory-summary')).locator(tid('summary-text')).innerText();
      assert.ok(summaryText.includes(NEXT) && summaryText.includes(SUMMARY), `earlier facts are kept: ${summaryText}`);
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('a memory update gives way to the next message on a one-slot server and lands after the turn, with no failure shown', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1 });
  try {
    await withDiagnostics(page, issues, 'memory-gives-way', async () => {
      // llama-cpp-python's default: a request that arrives ends the reply streaming.
      agent.interruptRequests();
      // The first update is slow (a small model on a busy machine): it is still running when the user
      // sends the next message 1.5 s after the reply.
      agent.scriptMemory(
        { text: memoryReplyText({ summary: SUMMARY, entities: ENTITIES }), stall: { after: 3, ms: 30_000 } },
        { text: memoryReplyText({ summary: SUMMARY, entities: ENTITIES }), delayMs: 5 },
      );
      await chat(page, Q1, A1);
      await agent.waitForRequests(1, { filter: (r) => r.kind === 'memory' });
      await page.waitForTimeout(1500);
      await chat(page, Q2, A2);
      // The first update stopped when the message went out; after the turn the update runs again,
      // covering both pairs, and lands.
      const [first, second] = await agent.waitForRequests(2, { filter: (r) => r.kind === 'memory', timeoutMs: 20_000 });
      assert.ok(['client-closed', 'interrupted'].includes(first.outcome), `the first update ended early: ${first.outcome}`);
      assert.ok(first.index < agent.chatRequests()[1].index && second.index > agent.chatRequests()[1].index, 'the second update came after the chat turn');
      const text = second.body.messages.map((m) => m.content).join('\n');
      assert.ok(text.includes(Q1) && text.includes(Q2), 'the update that ran again covers what the first one should have');
      await waitForSummary(page, SUMMARY);
      await page.locator(tid('memory-updating')).waitFor({ state: 'hidden' });
      assert.equal(await page.locator(tid('memory-failure')).count(), 0, 'giving way is not a failure');
      assert.equal(await page.locator(tid('error-banner')).count(), 0, 'and nothing is shown as an error');
      assert.equal(agent.memoryRequests().length, 2, 'no update beyond the one that ran again');
      assertNoPageProblems(issues, { allowConsole: [/ERR_INCOMPLETE_CHUNKED_ENCODING/, /Failed to load resource/] });
    });
  } finally {
    await context.close();
  }
});

test('an update whose reply keeps no summary still moves memory on: the next update reads the next messages, not the same ones again', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1 });
  try {
    await withDiagnostics(page, issues, 'memory-moves-on', async () => {
      agent.scriptMemory({ text: memoryReplyText({ summary: SUMMARY, entities: ENTITIES }), delayMs: 5 });
      await chat(page, Q1, A1);
      await waitForSummary(page, SUMMARY);
      // A small model's reply that only echoes the update's instructions, for a pair where the user
      // stated nothing (a question): nothing of it is kept, and nothing the user said is lost.
      const ECHO = 'What the user told in these new messages, in short sentences: names, places, pets, jobs, family, food, dates, numbers, preferences, plans and decisions.';
      agent.setMemoryDefault({ text: memoryReplyText({ summary: ECHO, entities: [] }), delayMs: 5 });
      await chat(page, Q3, A3);
      await agent.waitForRequests(2, { filter: (r) => r.kind === 'memory' });
      await page.locator(tid('memory-updating')).waitFor({ state: 'hidden' });
      await page.waitForTimeout(300);
      const NEXT = 'Charles Babbage designed the engine that Ada annotates.';
      agent.setMemoryDefault({ text: memoryReplyText({ summary: NEXT, entities: [] }), delayMs: 5 });
      await chat(page, Q2, A2);
      await page.locator(tid('summary-text')).filter({ hasText: 'Babbage' }).waitFor({ state: 'visible' });
      const updates = agent.memoryRequests();
      const next = updates.find((r) => r.rawBody.includes(Q2.slice(0, 20)));
      assert.ok(next, 'an update read the last pair');
      assert.ok(!next.rawBody.includes(Q3), 'the pair whose reply kept no summary is not read again');
      assert.equal(updates.length, 3, `one update per pair, none repeated: ${updates.length}`);
      const summary = await page.locator(tid('memory-summary')).locator(tid('summary-text')).innerText();
      assert.ok(summary.includes(SUMMARY) && !summary.includes('short sentences'), `the echo is not kept, the earlier summary is: ${summary}`);
      assert.equal(await page.locator(tid('memory-failure')).count(), 0, 'no failure is shown');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
