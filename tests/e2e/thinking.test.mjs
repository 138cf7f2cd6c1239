// A reply's thinking, on every protocol in its own wire form (encoders.mjs): openai-chat
// `reasoning_content` and `reasoning`, a `<think>` block opening the content, openai-responses'
// reasoning summary, ollama `message.thinking`, anthropic `thinking` blocks. The block
// (message-reasoning) streams open while only thinking has arrived, collapses when the answer starts,
// says "Thought for N s", survives a reload (collapsed), and is in neither the next request nor the
// memory update. The reasoning effort set in Settings > Advanced reaches the request in the protocol's
// own field, and only once set. The generation figures (message-stats) show where the server reports
// them.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { splitText } from './encoders.mjs';
import {
  startHarness,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  waitForAssistant,
  waitForAssistantCount,
  assertNoPageProblems,
  withDiagnostics,
  openSettings,
  openAdvanced,
  saveSettings,
  tid,
} from './helpers.mjs';

// One word no other text holds, so a leak of the thinking anywhere is found by it.
const MARK = 'Quibblewort';
const THOUGHT = `The user asks about ${MARK} tea. I recall it is brewed for three minutes, so I will say that.`;
const ANSWER = 'Brew it for three minutes.';
const QUESTION = 'How long should I brew it?';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** How many stream pieces carry the thinking (the answer starts after them). */
function thinkingPieces(form) {
  if (form !== 'think') return splitText(THOUGHT).length;
  const opening = `<think>\n${THOUGHT}`;
  let length = 0;
  return splitText(`${opening}\n</think>\n\n${ANSWER}`).findIndex((p) => (length += p.length) > opening.length);
}

/** The last reply's thinking block: whether it is open, its head, its text, and the reply's text. */
function lastReply(page) {
  return page.evaluate(() => {
    const el = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1);
    const block = el?.querySelector('[data-testid="message-reasoning"]');
    return {
      status: el?.getAttribute('data-status'),
      open: block?.getAttribute('data-open') ?? null,
      shownOpen: block ? block.open : null,
      head: block?.querySelector('summary')?.textContent.trim() ?? null,
      thinking: block?.querySelector('.reasoning-content')?.textContent ?? '',
      content: (el?.querySelector('[data-testid="message-content"]')?.textContent ?? '').trim(),
    };
  });
}

const CASES = [
  { protocol: 'openai-chat', label: 'reasoning_content' },
  { protocol: 'openai-chat', label: 'reasoning', form: 'reasoning' },
  { protocol: 'openai-chat', label: '<think> in the content', form: 'think' },
  { protocol: 'openai-responses', label: 'reasoning summary' },
  { protocol: 'ollama', label: 'message.thinking' },
  { protocol: 'anthropic', label: 'thinking blocks' },
];

for (const { protocol, label, form } of CASES) {
  test(`thinking (${protocol}, ${label}): streams open, collapses, survives a reload, never sent back`, async () => {
    const { agent } = harness;
    const { context, page, issues } = await openConfiguredApp(harness, protocol, { summaryFrequency: 1 });
    try {
      await withDiagnostics(page, issues, `thinking-${protocol}-${form ?? 'own'}`, async () => {
        const pieces = thinkingPieces(form);
        agent.script({ text: ANSWER, reasoning: THOUGHT, reasoningForm: form, delayMs: 20, stall: { after: pieces, ms: 2500 } });
        await sendMessage(page, QUESTION);

        // Only thinking has arrived: the block is open and shows it, the reply has no text yet.
        await page.waitForFunction(() => {
          const el = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1);
          const block = el?.querySelector('[data-testid="message-reasoning"]');
          return block?.getAttribute('data-open') === 'true' && block.textContent.includes('three minutes');
        });
        const live = await lastReply(page);
        assert.equal(live.status, 'streaming');
        assert.equal(live.shownOpen, true, 'the block is open on screen');
        assert.equal(live.head, 'Thinking…');
        assert.ok(live.thinking.includes(MARK), live.thinking);
        assert.equal(live.content, '', 'no answer yet');

        // The answer starts: the block collapses and says how long it thought.
        assert.equal(await waitForAssistant(page), ANSWER);
        const done = await lastReply(page);
        assert.equal(done.open, 'false');
        assert.equal(done.shownOpen, false);
        assert.match(done.head, /^Thought for \d+ s$/);
        assert.ok(done.thinking.includes(MARK) && !done.thinking.includes('<think>'), done.thinking);
        assert.ok(!done.content.includes(MARK), 'the answer holds none of the thinking');

        // The memory update (M = 1) reads the pair, not the thinking.
        const [memory] = await agent.waitForRequests(1, { filter: (r) => r.kind === 'memory' });
        assert.ok(memory.rawBody.includes(ANSWER), 'the update reads the answer');
        assert.ok(!memory.rawBody.includes(MARK), 'the update never reads the thinking');

        // A reload shows it collapsed; a click opens it.
        await reloadAndReopen(page);
        const block = page.locator(tid('message-reasoning'));
        await block.waitFor({ state: 'attached' });
        const reloaded = await lastReply(page);
        assert.equal(reloaded.open, 'false');
        assert.match(reloaded.head, /^Thought for \d+ s$/);
        assert.ok(reloaded.thinking.includes(MARK));
        await block.locator('summary').click();
        await page.locator(tid('message-reasoning', '[data-open="true"]')).waitFor();

        // The next request carries the answer, never the thinking.
        agent.script({ text: 'You are welcome.' });
        await sendMessage(page, 'Thanks!');
        await waitForAssistantCount(page, 2);
        assert.equal(await waitForAssistant(page), 'You are welcome.');
        const next = agent.chatRequests().at(-1);
        // (openai-responses resumes the server's own copy of the turn: only the new message goes.)
        const resumed = Boolean(next.body.previous_response_id);
        assert.ok(resumed || next.rawBody.includes(ANSWER), 'the history holds the answer');
        assert.ok(!next.rawBody.includes(MARK), 'the history never holds the thinking');
        assert.ok(!agent.requests.some((r) => r.kind !== 'other' && r !== agent.chatRequests()[0] && r.rawBody.includes(MARK)));
      });
      assertNoPageProblems(issues);
    } finally {
      await context.close();
    }
  });
}

/** What each protocol's request says of reasoning when the effort is `high`. */
const EFFORT = {
  'openai-chat': (b) => b.reasoning_effort === 'high',
  'openai-responses': (b) => b.reasoning?.effort === 'high' && b.reasoning?.summary === 'auto',
  ollama: (b) => b.think === true,
  anthropic: (b) => b.thinking?.type === 'enabled' && b.thinking.budget_tokens === 24576 && b.max_tokens > 24576,
};
const FIELDS = ['reasoning_effort', 'reasoning', 'think', 'thinking'];

for (const protocol of Object.keys(EFFORT)) {
  test(`reasoning effort (${protocol}): none sent until set in Settings > Advanced, then in the protocol's own field`, async () => {
    const { agent } = harness;
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `effort-${protocol}`, async () => {
        agent.script({ text: 'First.' });
        await sendMessage(page, 'One');
        await waitForAssistant(page);
        const first = agent.chatRequests().at(-1).body;
        assert.deepEqual(FIELDS.filter((f) => f in first), [], 'no reasoning field by default');

        await openSettings(page);
        await openAdvanced(page);
        await page.getByLabel('Reasoning effort for test-model').selectOption('high');
        await saveSettings(page);
        agent.script({ text: 'Second.' });
        await sendMessage(page, 'Two');
        await waitForAssistantCount(page, 2);
        const second = agent.chatRequests().at(-1).body;
        assert.ok(EFFORT[protocol](second), JSON.stringify(second));
      });
      assertNoPageProblems(issues);
    } finally {
      await context.close();
    }
  });
}

/** The figures line under the last reply. */
const statsLine = (page) => page.locator(tid('message-stats')).last().innerText();

test('generation figures: under the reply where the server reports them (ollama durations, openai usage), none where it does not', async () => {
  const { agent } = harness;
  for (const [protocol, reply, want] of [
    ['ollama', { text: ANSWER }, /^\d+ tokens · [\d.]+ s to first token · [\d.]+ tokens\/s$/],
    ['openai-chat', { text: ANSWER, honourUsage: true, usage: { output: 6 }, delayMs: 40 }, /^6 tokens · [\d.]+ s to first token · [\d.]+ tokens\/s$/],
    ['openai-chat', { text: ANSWER }, null],
  ]) {
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `stats-${protocol}`, async () => {
        agent.script(reply);
        await sendMessage(page, QUESTION);
        assert.equal(await waitForAssistant(page), ANSWER);
        if (!want) {
          assert.equal(await page.locator(tid('message-stats')).count(), 0, 'no figures without a reported token count');
          return;
        }
        assert.match(await statsLine(page), want);
        await reloadAndReopen(page);
        assert.match(await statsLine(page), want, 'kept with the message');
      });
      assertNoPageProblems(issues);
    } finally {
      await context.close();
    }
  }
});
