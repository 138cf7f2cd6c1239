// Several tabs at once (issue 7, part 4): two pages of ONE browser context share IndexedDB, and a
// BroadcastChannel keeps both views live; Web Locks make a memory update run in one tab only.
// - a message sent in tab A appears in tab B, streaming included; the conversation list follows;
// - a rename in A shows in B; New in B stores nothing until B's first message, which A then sees;
// - a memory update started in A shows as running in B, then its summary and entities appear in B;
// - both tabs sending at once in one conversation: nothing lost or duplicated, the seqs agree in both
//   tabs and after a reload, and the memory update that becomes due in both runs exactly once.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  trackPage,
  openApp,
  waitForAppReady,
  endpointBase,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForPartialReply,
  assertNoPageProblems,
  withDiagnostics,
  tid,
  DEFAULT_TIMEOUT_MS,
} from './helpers.mjs';
import { memoryReplyText } from './agent-server.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/**
 * Two pages of one context: A configured (memory every `every` exchanges), then B opened (unless
 * `openB` is false: the test opens it later). `initB` runs in B before any app script.
 */
async function twoTabs({ agent, site, browser }, every, { openB = true, initB } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  if (process.env.NO_LOCKS) await context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined }));
  const a = await context.newPage();
  const b = await context.newPage();
  if (initB) await b.addInitScript(initB);
  for (const p of [a, b]) p.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  const issues = { a: trackPage(a), b: trackPage(b) };
  await openApp(a, site.url);
  await a.locator(tid('settings-open')).click();
  await a.locator(tid('settings-protocol')).selectOption('openai-chat');
  await a.locator(tid('settings-endpoint-url')).fill(endpointBase(agent, 'openai-chat'));
  await a.locator(tid('settings-model')).fill('test-model');
  await a.locator(tid('settings-summary-frequency')).fill(String(every));
  await a.locator(tid('settings-save')).click();
  await a.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden' });
  if (openB) await openApp(b, site.url);
  return { context, a, b, issues };
}

const items = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'));

/** The open conversation's messages as [role, text] pairs, in the order shown. */
async function transcript(page) {
  const out = [];
  for (const m of await messages(page).all()) out.push([await m.getAttribute('data-role'), await messageText(m)]);
  return out;
}

async function waitForMessageCount(page, n) {
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"]').length === n, n);
}

async function waitAllComplete(page, n) {
  await page.waitForFunction(
    (n) => {
      const all = [...document.querySelectorAll('[data-testid="message"]')];
      return all.length === n && all.every((m) => m.getAttribute('data-status') === 'complete');
    },
    n,
  );
}

test('tabs: messages, streaming, list changes, renames and memory updates reach the other tab', async () => {
  const { agent } = harness;
  agent.reset();
  const { context, a, b, issues } = await twoTabs(harness, 5);
  try {
    await withDiagnostics(a, issues.a, 'tabs-live', async () => {
      // A new conversation and its first exchange, sent in A, appear in B's list.
      agent.script({ text: 'First answer from the agent.' });
      await sendMessage(a, 'First question from tab A');
      assert.equal(await waitForAssistant(a), 'First answer from the agent.');
      await items(b).first().waitFor({ state: 'visible' });
      assert.equal(await items(b).count(), 1);
      await b.waitForFunction(() => document.querySelector('[data-testid="conversation-item"]')?.innerText.includes('First question'));
      await items(b).first().click();
      await waitAllComplete(b, 2);
      assert.deepEqual(await transcript(b), await transcript(a));

      // The next reply streams in B too (partial text first), and ends identical.
      const slow = 'Streaming across tabs: alpha beta gamma delta epsilon zeta eta theta iota kappa lambda.';
      agent.script({ text: slow, chunkSize: 6, delayMs: 60 });
      await sendMessage(a, 'Second question from tab A');
      const partial = await waitForPartialReply(b, slow);
      assert.ok(slow.startsWith(partial), `B saw a prefix while A streamed: ${JSON.stringify(partial)}`);
      assert.equal(await waitForAssistant(b), slow);
      await waitAllComplete(b, 4);
      assert.deepEqual(await transcript(b), await transcript(a));

      // A rename in A shows in B's list.
      await items(a).first().locator(tid('rename-conversation')).click();
      const input = a.locator(tid('rename-input'));
      await input.fill('Renamed in tab A');
      await input.press('Enter');
      await b.waitForFunction(() => document.querySelector('[data-testid="conversation-item"]')?.innerText.includes('Renamed in tab A'));

      // A memory update run from A shows as running in B, and its result appears in B; one request.
      agent.scriptMemory({
        text: memoryReplyText({
          summary: 'Tab A asked two questions; the agent streamed its answers.',
          entities: [{ id: 'tab-a', type: 'concept', name: 'Tab A', description: 'The first tab', properties: {}, relationships: [] }],
        }),
        headersDelayMs: 400,
      });
      await a.locator(tid('update-memory')).click();
      await b.locator(tid('memory-updating')).waitFor({ state: 'visible' });
      await b.locator(tid('summary-text')).filter({ hasText: 'Tab A asked two questions' }).waitFor();
      await b.locator(tid('entity-node')).first().waitFor();
      assert.equal(await b.locator(tid('entity-node')).count(), 1);
      await a.locator(tid('summary-text')).filter({ hasText: 'Tab A asked two questions' }).waitFor();
      await b.locator(tid('memory-updating')).waitFor({ state: 'hidden' });
      assert.equal(agent.memoryRequests().length, 1);

      // New in B stores nothing, so A's list does not change; B's first message creates the
      // conversation, which then appears in A's list; deleting it in B removes it from A's.
      await b.locator(tid('new-conversation')).click();
      await b.waitForFunction(() => location.hash === '' && document.querySelectorAll('[data-testid="message"]').length === 0);
      await a.waitForTimeout(300);
      assert.equal(await items(a).count(), 1, 'New alone stores nothing');
      assert.equal(await items(b).count(), 1);
      agent.script({ text: 'Answer in the new conversation.' });
      await sendMessage(b, 'First message of a new conversation in B');
      await waitAllComplete(b, 2);
      await a.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 2);
      const fresh = items(b).filter({ hasNotText: 'Renamed in tab A' });
      // A has it open when B deletes it: A closes it (no conversation open, nothing to update).
      await items(a).filter({ hasNotText: 'Renamed in tab A' }).click();
      await waitAllComplete(a, 2);
      assert.equal(await a.locator(tid('update-memory')).isEnabled(), true);
      await fresh.locator(tid('delete-conversation')).click();
      await fresh.locator(tid('confirm-delete')).click();
      await a.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 1);
      await a.waitForFunction(() => document.querySelector('[data-testid="update-memory"]')?.disabled === true);
      // ...and A's address no longer names it, so a reload does not try to open what is gone.
      await a.waitForFunction(() => location.hash === '');
      assert.equal(agent.chatRequests().length, 3, 'B sent only its new conversation\'s first message');
      assertNoPageProblems(issues.a);
      assertNoPageProblems(issues.b);
    });
  } finally {
    await context.close();
  }
});

test('tabs: sending at once in one conversation loses nothing, duplicates nothing, and memory updates once', async () => {
  const { agent } = harness;
  agent.reset();
  // Memory every 2 exchanges: one exchange first, then one from each tab at once makes it due in
  // both tabs; the Web Lock lets one run it, the other then finds nothing left to do.
  // NO_LOCKS=1 hides navigator.locks from the app, to see this test fail without the lock.
  const { context, a, b, issues } = await twoTabs(harness, 2);
  try {
    await withDiagnostics(a, issues.a, 'tabs-concurrent', async () => {
      agent.script({ text: 'Warm-up answer.' });
      await sendMessage(a, 'Warm-up question');
      await waitAllComplete(a, 2);
      await items(b).first().waitFor({ state: 'visible' });
      await items(b).first().click();
      await waitAllComplete(b, 2);

      // Both turns in flight at once: B's request reaches the agent, then A sends. B's reply (the
      // earlier one) ends first and makes the memory update due; A's ends while B's update is still
      // waiting for the agent, and would make it due a second time without the Web Lock.
      const replyA = 'Answer to tab A, streamed in small pieces.';
      const replyB = 'Answer to tab B, streamed in small pieces.';
      agent.script(
        { text: replyB, chunkSize: 2, delayMs: 150, headersDelayMs: 300, match: (r) => r.rawBody.includes('Concurrent from B') },
        { text: replyA, chunkSize: 2, delayMs: 150, headersDelayMs: 300, match: (r) => r.rawBody.includes('Concurrent from A') },
      );
      agent.scriptMemory({ text: memoryReplyText({ summary: 'Both tabs asked at once.' }), headersDelayMs: 2500 });
      await sendMessage(b, 'Concurrent from B');
      await agent.waitForRequests(2, { filter: (r) => r.kind === 'chat' });
      await sendMessage(a, 'Concurrent from A');
      // Both replies are being written at the same time (A sees B's too).
      await a.waitForFunction(() => document.querySelectorAll('[data-testid="message"][data-status="streaming"]').length === 2, null, { polling: 50 });

      await waitAllComplete(a, 6);
      await waitAllComplete(b, 6);
      const seen = await transcript(a);
      assert.deepEqual(await transcript(b), seen, 'both tabs show the same messages in the same order');
      const texts = seen.map(([, text]) => text);
      assert.equal(new Set(texts).size, 6, `no duplicates: ${JSON.stringify(texts)}`);
      assert.deepEqual(texts, ['Warm-up question', 'Warm-up answer.', 'Concurrent from B', replyB, 'Concurrent from A', replyA]);

      // The memory update due in both tabs ran once, and both tabs show its summary.
      await a.locator(tid('summary-text')).filter({ hasText: 'Both tabs asked at once.' }).waitFor();
      await b.locator(tid('summary-text')).filter({ hasText: 'Both tabs asked at once.' }).waitFor();
      assert.equal(agent.memoryRequests().length, 1, 'one memory update for both tabs');
      assert.equal(agent.chatRequests().length, 3);

      // The stored order is the order both tabs showed (seq is assigned by the store).
      await b.reload();
      await waitForAppReady(b);
      await items(b).first().click();
      await waitAllComplete(b, 6);
      assert.deepEqual(await transcript(b), seen);
      assertNoPageProblems(issues.a);
      assertNoPageProblems(issues.b);
    });
  } finally {
    await context.close();
  }
});

test('tabs: a send from a tab whose view is behind (no broadcast from the other) still carries every stored message', async () => {
  const { agent, site } = harness;
  agent.reset();
  // Tab A keeps its recent history in memory and sends while writing. Tab B here cannot broadcast, so
  // A never hears of B's exchange: A's send must notice that the store moved on, write nothing
  // out of order, and send again with the stored history.
  const { context, a, b, issues } = await twoTabs(harness, 50, {
    openB: false,
    initB: () => {
      delete window.BroadcastChannel;
    },
  });
  try {
    await withDiagnostics(a, issues.a, 'tabs-behind', async () => {
      agent.script({ text: 'First answer.' });
      await sendMessage(a, 'First from A');
      await waitAllComplete(a, 2);

      await openApp(b, site.url);
      await items(b).first().click();
      await waitAllComplete(b, 2);
      agent.script({ text: 'Answer to B.' });
      await sendMessage(b, 'Sent from B, unseen by A');
      await waitAllComplete(b, 4);
      await a.waitForTimeout(300); // nothing arrives in A: B has no channel
      assert.equal(await messages(a).count(), 2, 'A did not hear of B (the premise of this test)');

      // Only a request that carries B's exchange gets this answer (a stale one would get the default).
      agent.script({ text: 'Second answer.', match: (r) => r.rawBody.includes('Second from A') && r.rawBody.includes('unseen by A') });
      await sendMessage(a, 'Second from A');
      await a.locator(tid('message-content')).filter({ hasText: 'Second answer.' }).waitFor();
      const last = agent.chatRequests().filter((r) => r.rawBody.includes('Second from A')).at(-1);
      const roles = last.body.messages.map((m) => `${m.role}: ${m.content}`);
      assert.deepEqual(roles.slice(1), [
        'user: First from A',
        'assistant: First answer.',
        'user: Sent from B, unseen by A',
        'assistant: Answer to B.',
        'user: Second from A',
      ]);

      // A's view noticed the gap and caught up, without a reload; and the store holds the same.
      const expected = [
        'First from A',
        'First answer.',
        'Sent from B, unseen by A',
        'Answer to B.',
        'Second from A',
        'Second answer.',
      ];
      await waitAllComplete(a, 6);
      assert.deepEqual((await transcript(a)).map(([, t]) => t), expected);
      await a.reload();
      await waitForAppReady(a);
      await items(a).first().click();
      await waitAllComplete(a, 6);
      assert.deepEqual((await transcript(a)).map(([, t]) => t), [
        'First from A',
        'First answer.',
        'Sent from B, unseen by A',
        'Answer to B.',
        'Second from A',
        'Second answer.',
      ]);
      assertNoPageProblems(issues.a);
      assertNoPageProblems(issues.b);
    });
  } finally {
    await context.close();
  }
});

test('tabs: settings saved in one tab are in force in the other without a reload', async () => {
  const { agent } = harness;
  agent.reset();
  const { context, a, b, issues } = await twoTabs(harness, 50);
  try {
    await withDiagnostics(b, issues.b, 'tabs-settings', async () => {
      await a.locator(tid('settings-open')).click();
      await a.locator(tid('settings-model')).fill('model-from-tab-a');
      await a.locator(tid('settings-save')).click();
      await a.locator(tid('settings-model')).waitFor({ state: 'hidden' });

      // B was opened before the change: its next request uses the new model, and its dialog shows it.
      agent.script({ text: 'Answer with the new model.' });
      await sendMessage(b, 'Which model?');
      await waitAllComplete(b, 2);
      const sent = agent.chatRequests().at(-1);
      assert.equal(sent.body.model, 'model-from-tab-a');
      await b.locator(tid('settings-open')).click();
      assert.equal(await b.locator(tid('settings-model')).inputValue(), 'model-from-tab-a');
      assertNoPageProblems(issues.a);
      assertNoPageProblems(issues.b);
    });
  } finally {
    await context.close();
  }
});
