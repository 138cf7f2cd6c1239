// Memory on a real model (issue 12): chat goes to the scripted local agent, memory updates to a
// separate memory endpoint, llama-cpp-python's server with SmolLM2-135M (real-model.mjs), through a
// recording proxy. What a 135M model can be held to:
// - the server refuses the `json_schema` form (HTTP 500, as llama-cpp-python 0.3.36 does), the same
//   update is sent again as `json_object` + `schema`, and later updates start with that form, also
//   after a reload;
// - every memory update parses (no failure is shown; one summary version per answered update);
// - the entity named in the first message ("Zorblax") is in the graph after the first update;
// - after a reload and enough turns that the history cannot fit the budget, the last chat request
//   carries the early facts through memory, while the messages that stated them are left out.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer, startRecordingProxy } from './real-model.mjs';
import {
  startHarness,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  waitForAssistantCount,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
} from './helpers.mjs';

const LONG_REPLY = Array.from({ length: 12 }, (_, i) =>
  `Point ${i + 1}: that depends on the conditions around you, on how much time you have and on what you want in the end, so start small and adjust.`,
).join(' ');
const FACTS = ['I have a cat called Zorblax.', 'I live in Trondheim, in Norway.'];
const FILLER = [
  'How do ocean tides work, and why are there two of them each day?',
  'What is the difference between baking soda and baking powder?',
  'How do I keep basil alive on a windowsill in winter?',
  'Why is the sky blue during the day and red at sunset?',
];
const FINAL = 'Before we stop: what do you remember about me?';
// One update of a looping 135M model under a grammar can take minutes on a busy 2-core machine.
const UPDATE_TIMEOUT = 600_000;

let harness;
let model;
let proxy;
before(async () => {
  model = await startModelServer();
  proxy = await startRecordingProxy(model.url);
  harness = await startHarness();
});
after(async () => {
  await harness?.close();
  await proxy?.close();
  await model?.close();
});

const memoryRecords = () => proxy.records.filter((r) => r.method === 'POST');
const formOf = (r) => r.body?.response_format?.type ?? 'none';

/** Waits until no memory update runs and every memory request has been answered. */
async function memorySettled(page, count) {
  await eventually(
    async () => memoryRecords().length >= count && memoryRecords().every((r) => r.status !== null)
      && (await page.locator(tid('memory-updating')).count()) === 0,
    { timeout: UPDATE_TIMEOUT, interval: 250, what: `${count} memory request(s) answered` },
  );
}

async function setMemoryEndpoint(page) {
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-context-tokens')).fill('1400');
  await page.locator(tid('settings-reply-reserve')).fill('400');
  await page.locator(tid('settings-memory-model-section')).locator('summary').click();
  await page.locator(tid('settings-memory-endpoint-url')).fill(`${proxy.url}/v1`);
  await page.locator(tid('settings-memory-model')).fill(model.model);
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden' });
}

async function turn(page, text, count) {
  await sendMessage(page, text);
  await waitForAssistantCount(page, count);
}

/** Every update parsed: a failed one stays in the memory pane until the next one succeeds, and each
 * update is waited for before the next turn. */
async function noFailure(page, what) {
  assert.equal(await page.locator(tid('memory-failure')).count(), 0, `no memory update failed (${what})`);
}

test('memory on SmolLM2-135M: constrained updates parse, the form is remembered, early facts survive through memory', { timeout: 2_400_000 }, async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1, recentCount: 2 });
  try {
    await withDiagnostics(page, issues, 'real-model-memory', async () => {
      agent.setDefault(LONG_REPLY);
      await setMemoryEndpoint(page);

      // First update: json_schema is refused, the same update goes out as json_object + schema.
      await turn(page, FACTS[0], 1);
      await memorySettled(page, 2);
      await noFailure(page, 'first update');
      assert.deepEqual(memoryRecords().map((r) => [formOf(r), r.status]), [['json_schema', 500], ['json_object', 200]]);
      assert.equal(memoryRecords()[1].body.temperature, 0);
      assert.ok(memoryRecords()[1].body.max_tokens > 0, 'the memory request always bounds its reply');
      assert.equal(agent.memoryRequests().length, 0, 'memory goes to the memory endpoint, not the chat endpoint');
      await page.locator(tid('memory-entities')).locator(tid('entity-node')).first().waitFor({ state: 'visible' });
      const names = await page.locator(tid('memory-entities')).locator(tid('entity-name')).allInnerTexts();
      assert.ok(names.some((n) => /zorblax/i.test(n)), `Zorblax is in the graph after the first update: ${names}`);

      // The form that worked is remembered, also after a reload.
      await turn(page, FACTS[1], 2);
      await memorySettled(page, 3);
      await noFailure(page, 'second update');
      assert.equal(formOf(memoryRecords()[2]), 'json_object');
      await reloadAndReopen(page);
      let n = 2;
      for (const text of FILLER) {
        n += 1;
        const before = memoryRecords().length;
        await turn(page, text, n);
        await memorySettled(page, before + 1);
        await noFailure(page, text);
      }
      const memory = memoryRecords().slice(1);
      assert.ok(memory.every((r) => formOf(r) === 'json_object' && r.status === 200), 'one form, no refusal after the first');

      assert.ok(memory.length >= 5, `every turn's update ran: ${memory.length}`);

      // The last chat request carries the early facts through memory, not through history.
      const chatBefore = agent.chatRequests().length;
      await turn(page, FINAL, n + 1);
      await eventually(() => agent.chatRequests().length > chatBefore, { what: 'the final chat request' });
      const last = agent.chatRequests().at(-1).body.messages;
      const users = last.filter((m) => m.role === 'user').map((m) => m.content);
      for (const fact of FACTS) assert.ok(!users.includes(fact), `"${fact}" was dropped from the history`);
      // Only memory can carry them now: the scripted replies never name them.
      const memoryText = last.map((m) => m.content).join('\n');
      assert.match(memoryText, /Zorblax/i, 'the cat is remembered');
      assert.match(memoryText, /Trondheim/i, 'the city is remembered');
      // The one refused request (json_schema, HTTP 500) is the browser's only console complaint.
      assertNoPageProblems(issues, { allowConsole: [/status of 500/] });
    });
  } finally {
    await context.close();
  }
});
