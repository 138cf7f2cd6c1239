// Replies that end (#41): every chat request of every protocol carries the reply cap Settings keep
// ("Room kept for the reply"), in the protocol's own field; a reply the cap cut is marked capped
// (data-status="capped", not an error) with Continue, whose request carries what was written and
// whose answer grows the same reply (capped again: Continue again; Stop keeps what came); the
// context inspector shows the cap; the cached prompt tokens a server reports show in the reply's
// figures, and none show where it reports none. A server whose context is smaller than Settings say
// (llama-cpp-python at its default 2,048 tokens) refuses a long prompt with an empty stream: the turn
// asks once, not streamed, why; learns the window the refusal names; and goes again, fitted to it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  waitForAssistant,
  assertNoPageProblems,
  withDiagnostics,
  openSettings,
  openAdvanced,
  saveSettings,
  showInspector,
  eventually,
  tid,
  endpointBase,
} from './helpers.mjs';
import { memoryReplyText } from './agent-server.mjs';

const PROTOCOLS = ['openai-chat', 'openai-responses', 'ollama', 'anthropic'];
const QUESTION = 'Tell me the story of the lighthouse keeper.';

/** The reply cap a chat request's body carries, read from the protocol's own field. */
function capOf(protocol, body) {
  if (protocol === 'openai-chat') return body.max_tokens;
  if (protocol === 'openai-responses') return body.max_output_tokens;
  if (protocol === 'ollama') return body.options?.num_predict;
  return body.max_tokens;
}

/** The messages (role, text) a chat request carried, whatever the protocol's shape. */
function sentMessages(protocol, body) {
  const list = protocol === 'openai-responses' ? body.input : body.messages;
  const text = (c) => (typeof c === 'string' ? c : c.map((p) => p.text ?? '').join(''));
  return list.map((m) => ({ role: m.role, text: text(m.content) }));
}

const lastAssistant = (page) => page.locator(tid('message', '[data-role="assistant"]')).last();

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

test('every chat request of every protocol carries the reply cap Settings keep, and the inspector shows it', async () => {
  const { agent } = harness;
  for (const protocol of PROTOCOLS) {
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `cap-${protocol}`, async () => {
        // The default room first, then one typed in Settings.
        agent.script({ text: 'First.' }, { text: 'Second.' });
        await sendMessage(page, QUESTION);
        await waitForAssistant(page);
        await openSettings(page);
        await openAdvanced(page);
        await page.locator(tid('settings-reply-reserve')).fill('777');
        await saveSettings(page);
        await sendMessage(page, 'And then?');
        await waitForAssistant(page, { index: 1 });
        const chats = agent.chatRequests();
        assert.equal(chats.length, 2, protocol);
        assert.deepEqual(chats.map((r) => capOf(protocol, r.body)), [1024, 777], `${protocol}: the cap in its own field`);
        await showInspector(page);
        const cap = page.locator(tid('inspector-reply-cap'));
        assert.equal(await cap.getAttribute('data-tokens'), '777');
        assert.match(await cap.innerText(), /reply cap 777 tokens/);
      });
      assertNoPageProblems(issues);
    } finally {
      await context.close();
    }
  }
});

test('a reply cut by the cap is capped, not failed; Continue asks for the rest with what was written and the reply grows in place', async () => {
  const { agent } = harness;
  for (const protocol of PROTOCOLS) {
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `continue-${protocol}`, async () => {
        agent.script(
          { text: 'Once upon a time, a keeper ', finishReason: 'length' },
          { text: 'climbed the stairs ', finishReason: 'length' },
          { text: 'and lit the lamp.' },
        );
        await sendMessage(page, QUESTION);
        assert.equal(await waitForAssistant(page, { status: 'capped' }), 'Once upon a time, a keeper');
        const reply = lastAssistant(page);
        const id = await reply.getAttribute('data-message-id');
        assert.equal(await page.locator(tid('error-banner')).count(), 0, 'not an error');
        await reply.locator(tid('message-continue')).click();
        // Capped again, the text grown in place.
        await eventually(async () => (await reply.getAttribute('data-status')) === 'capped'
          && (await reply.locator(tid('message-content')).innerText()).trim().endsWith('stairs'), { what: 'the continued text' });
        assert.equal(await waitForAssistant(page, { status: 'capped' }), 'Once upon a time, a keeper climbed the stairs');
        // The request for the rest: the question, the reply so far, then (except anthropic, whose
        // trailing assistant message is a prefill, trimmed) the instruction to go on.
        const second = agent.chatRequests()[1];
        const sent = sentMessages(protocol, second.body);
        const question = sent.findLastIndex((m) => m.role === 'user' && m.text.includes(QUESTION));
        assert.ok(question >= 0, `${protocol}: the question is sent again`);
        const after = sent.slice(question + 1);
        if (protocol === 'anthropic') {
          assert.deepEqual(after, [{ role: 'assistant', text: 'Once upon a time, a keeper' }]);
        } else {
          assert.equal(after.length, 2, `${protocol}: ${JSON.stringify(after)}`);
          assert.deepEqual(after[0], { role: 'assistant', text: 'Once upon a time, a keeper ' });
          assert.equal(after[1].role, 'user');
          assert.match(after[1].text, /continue/i);
        }
        assert.equal(capOf(protocol, second.body) > 0, true, 'the continuation carries the cap too');
        // Capped again: Continue again, then it ends.
        await reply.locator(tid('message-continue')).click();
        assert.equal(await waitForAssistant(page), 'Once upon a time, a keeper climbed the stairs and lit the lamp.');
        assert.equal(await page.locator(tid('message', '[data-role="assistant"]')).count(), 1, 'one reply');
        assert.equal(await lastAssistant(page).getAttribute('data-message-id'), id, 'the same message');
        assert.equal(await page.locator(tid('message-continue')).count(), 0);
        await reloadAndReopen(page);
        assert.equal(await waitForAssistant(page), 'Once upon a time, a keeper climbed the stairs and lit the lamp.');
      });
      assertNoPageProblems(issues);
    } finally {
      await context.close();
    }
  }
});

test('Stop during a continuation keeps what came; a capped reply stays capped across a reload', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'continue-stop', async () => {
      agent.script(
        { text: 'The keeper ', finishReason: 'length' },
        { chunks: ['walked ', 'to ', 'the ', 'shore ', 'and ', 'waited.'], delayMs: 400 },
      );
      await sendMessage(page, QUESTION);
      await waitForAssistant(page, { status: 'capped' });
      await reloadAndReopen(page);
      assert.equal(await waitForAssistant(page, { status: 'capped' }), 'The keeper', 'kept capped');
      await lastAssistant(page).locator(tid('message-continue')).click();
      await eventually(async () => (await lastAssistant(page).locator(tid('message-content')).innerText()).includes('walked'), { what: 'the continuation streaming' });
      await page.locator(tid('stop-button')).click();
      const kept = await waitForAssistant(page, { status: 'interrupted' });
      assert.match(kept, /^The keeper walked/);
      assert.equal(await page.locator(tid('message', '[data-role="assistant"]')).count(), 1);
    });
    assertNoPageProblems(issues);
  } finally {
    await context.close();
  }
});

test('the cached prompt tokens show in the reply figures when the server reports them, and only then', async () => {
  const { agent } = harness;
  for (const [protocol, reply, want] of [
    ['openai-chat', { text: 'Cached.', honourUsage: true, usage: { input: 3000, output: 7, cached: 2816 } }, /^7 tokens · 2,816 cached · /],
    ['openai-chat', { text: 'Cached.', llamaTimings: true, usage: { input: 2852, output: 12, cached: 2840 } }, /^12 tokens · 2,840 cached · /],
    ['openai-responses', { text: 'Cached.', usage: { input: 1290, output: 4, cached: 1152 } }, /^4 tokens · 1,152 cached · /],
    ['anthropic', { text: 'Cached.', usage: { input: 12, output: 16, cached: 2840 } }, /^16 tokens · 2,840 cached · /],
    // Reported without a cached count: none shown.
    ['openai-chat', { text: 'Cached.', honourUsage: true, usage: { input: 3000, output: 7 } }, /^7 tokens · (?!.*cached)/],
    ['ollama', { text: 'Cached.' }, /^\d+ tokens · (?!.*cached)/],
  ]) {
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `cached-${protocol}`, async () => {
        agent.script(reply);
        await sendMessage(page, QUESTION);
        assert.equal(await waitForAssistant(page), 'Cached.');
        const stats = page.locator(tid('message-stats')).last();
        assert.match(await stats.innerText(), want, protocol);
        await reloadAndReopen(page);
        assert.match(await page.locator(tid('message-stats')).last().innerText(), want, `${protocol}: kept with the reply`);
      });
      assertNoPageProblems(issues);
    } finally {
      await context.close();
    }
  }
});

test('a server whose context is smaller than Settings say (llama-cpp-python at its default): the refused turn is asked why, fitted to the window it names, and goes again', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'context-window', async () => {
      // Settings keep 8,192 tokens; the server holds 1,024 (four characters a token).
      agent.setContextWindow(1024);
      const reply = Array.from({ length: 10 }, (_, i) => `Part ${i + 1} of the story: the keeper climbs, trims the wick and watches the sea.`).join(' ');
      agent.setDefault(reply);
      const asks = [1, 2, 3, 4].map((n) => `Question ${n}: ${'tell me more about the lighthouse and its keeper, '.repeat(8)}`);
      for (const [i, text] of asks.entries()) {
        await sendMessage(page, text);
        assert.equal(await waitForAssistant(page, { index: i }), reply, `reply ${i + 1} arrived`);
      }
      assert.equal(await page.locator(tid('error-banner')).count(), 0, 'no error was shown');
      const chats = agent.chatRequests();
      const outcomes = chats.map((r) => `${r.body.stream ? 'stream' : 'plain'} ${r.outcome}`);
      // The prompt that outgrew the server: its stream ended empty, the probe (not streamed, one
      // token) was refused with the window, and the same turn went again, fitted; none after it
      // was refused.
      const at = outcomes.indexOf('stream refused-for-length');
      assert.ok(at >= 1, `a prompt outgrew the server: ${outcomes}`);
      assert.deepEqual(outcomes, [
        ...Array(at).fill('stream complete'),
        'stream refused-for-length',
        'plain refused-for-length',
        ...Array(asks.length - at).fill('stream complete'),
      ]);
      assert.ok(chats[at].promptTokens >= 1024 && chats.slice(0, at).every((r) => r.promptTokens < 1024));
      const [refused, probe, again] = chats.slice(at);
      assert.equal(probe.body.max_tokens, 1, 'the probe asks for one token');
      assert.deepEqual(probe.body.messages, refused.body.messages, 'the probe sends the refused prompt');
      assert.ok(chats.slice(at + 2).every((r) => r.promptTokens < 1024), `fitted: ${chats.map((r) => r.promptTokens)}`);
      assert.equal(again.body.messages.at(-1).content, refused.body.messages.at(-1).content, 'the same question went again');
      assert.ok(again.body.max_tokens <= 512, `the reply cap fits the window too: ${again.body.max_tokens}`);
      await showInspector(page);
      const window = page.locator(tid('inspector-server-window'));
      assert.equal(await window.getAttribute('data-tokens'), '1024');
      assert.match(await window.innerText(), /the server holds 1,024 tokens/);
    });
    // The probe's refusal is logged by the browser, as every error status is.
    assertNoPageProblems(issues, { allowConsole: [/status of 400/] });
  } finally {
    await context.close();
  }
});

test('a memory server whose context is smaller than Settings say: the update whose stream ended empty is asked why, the failure names the window, and the retry is fitted to it', async () => {
  const { agent } = harness;
  // Chat on Anthropic (not held to the window); memory updates to the same scripted server as
  // openai-chat, answering as llama-cpp-python at its default does. No chat turn learns the window
  // for the memory server: only its own refusal can.
  const { context, page, issues } = await openConfiguredApp(harness, 'anthropic', { summaryFrequency: 5 });
  try {
    await withDiagnostics(page, issues, 'memory-window', async () => {
      await openSettings(page);
      await openAdvanced(page);
      await page.locator(tid('settings-memory-model-section')).locator('summary').click();
      await page.locator(tid('settings-memory-endpoint-url')).fill(endpointBase(agent, 'openai-chat'));
      await page.locator(tid('settings-memory-protocol')).selectOption('openai-chat');
      await page.locator(tid('settings-memory-model')).fill('memory-model');
      await saveSettings(page);
      const WINDOW = 2048;
      agent.setContextWindow(WINDOW);
      agent.setDefault('Noted.');
      const SUMMARY = 'The user keeps a logbook of the lighthouse.';
      agent.setMemoryDefault({ text: memoryReplyText({ summary: SUMMARY }) });
      // Five long messages, then the update (every five exchanges): its prompt outgrows 2,048 tokens.
      for (let day = 1; day <= 5; day += 1) {
        await sendMessage(page, `Day ${day} of my logbook: ${'the keeper climbed at dusk, trimmed the wick, wound the clockwork and watched the sea until dawn. '.repeat(18)}`);
        assert.equal(await waitForAssistant(page, { index: day - 1 }), 'Noted.');
      }
      const failure = page.locator(tid('memory-failure'));
      await failure.waitFor({ state: 'visible' });
      const reason = await failure.locator(tid('memory-failure-reason')).innerText();
      assert.match(reason, new RegExp(`${WINDOW}`), `the failure names the server's window: ${reason}`);
      const updates = () => agent.memoryRequests();
      assert.deepEqual(updates().map((r) => `${r.body.stream ? 'stream' : 'plain'} ${r.outcome}`), ['stream refused-for-length', 'plain refused-for-length']);
      const [refused, probe] = updates();
      assert.equal(probe.body.max_tokens, 1, 'the probe asks for one token');
      assert.deepEqual(probe.body.messages, refused.body.messages, 'the probe sends the refused prompt');
      // Retried, the update is fitted to the window the refusal named, and lands.
      await page.locator(tid('memory-retry')).click();
      await failure.waitFor({ state: 'detached' });
      await eventually(async () => (await page.locator(tid('memory-summary')).locator(tid('summary-text')).innerText().catch(() => '')).includes(SUMMARY), { what: 'the summary' });
      const fitted = updates().slice(2);
      assert.ok(fitted.length >= 1 && fitted.every((r) => r.outcome === 'complete' && r.promptTokens < WINDOW), `fitted: ${fitted.map((r) => `${r.promptTokens} ${r.outcome}`)}`);
    });
    assertNoPageProblems(issues, { allowConsole: [/status of 400/] });
  } finally {
    await context.close();
  }
});
