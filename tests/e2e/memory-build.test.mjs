// Memory from the past (issue 13): after importing a ChatGPT export of 2 conversations, "Build memory
// for the imported conversations" (memory-build-all) builds each one's memory, one conversation and
// one part (M exchanges) at a time, with a progress line (memory-build-progress) and Cancel
// (memory-build-cancel). Without an endpoint it says memory is off and sends nothing. A reply that
// cannot be used fails its conversation (the failure shown in its memory pane) and the run goes on
// to the next, ending with which failed and why (data-state "failed") and a Retry
// (memory-build-retry) of only those; a cancel while a part is in flight writes nothing of it, and
// building again finishes the conversation without redoing the parts already built.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { memoryReplyText } from './agent-server.mjs';
import { startHarness, newAppPage, openApp, configureSettings, endpointBase, assertNoPageProblems, withDiagnostics, tid } from './helpers.mjs';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'import', 'chatgpt.json');
const RUST = 'Rust and Leptos';
const BONJOUR = 'Bonjour, ça va ?';

const entity = (id, type, name) => ({ id, type, name, description: '', properties: {}, relationships: [] });
const reply = (summary, entities, extra = {}) => ({ text: memoryReplyText({ summary, entities }), ...extra });

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

async function importChatGpt(page) {
  await page.locator(tid('export-button')).click();
  await page.locator(tid('import-input')).setInputFiles({ name: 'conversations.json', mimeType: 'application/json', buffer: await readFile(FIXTURE) });
  await page.locator(tid('import-confirm')).click();
  await page.locator(tid('notice')).filter({ hasText: 'Imported 2 conversations' }).waitFor({ state: 'visible' });
}

/** Clicks "Build memory for the imported conversations" and waits for the run to end; its text. */
async function buildAll(page, state = 'done') {
  const last = page.locator(tid('memory-build-progress'));
  if (await last.count()) {
    await last.getByRole('button', { name: 'Dismiss' }).click();
    await last.waitFor({ state: 'detached' });
  }
  await page.locator(tid('memory-build-all')).click();
  return ended(page, state);
}

async function ended(page, state) {
  const line = page.locator(`${tid('memory-build-progress')}[data-state="${state}"]`);
  await line.waitFor({ state: 'visible' });
  return line.innerText();
}

async function open(page, title) {
  await page.locator(tid('conversation-item')).filter({ hasText: title }).click();
  await page.locator(tid('message')).first().waitFor({ state: 'visible' });
}

/** The open conversation's memory pane: summary text (or null) and entity names. */
async function memoryShown(page) {
  const summary = page.locator(tid('summary-text'));
  const text = (await summary.count()) ? (await summary.innerText()).trim() : null;
  const entities = await page.locator(tid('memory-entities')).locator(tid('entity-node')).evaluateAll((els) =>
    els.map((e) => e.querySelector('.entity-name')?.textContent.trim()).sort(),
  );
  return { summary: text, entities };
}

test('build memory for imported conversations: off without an endpoint, a failure does not stop the run, retry only what failed, cancel, resume without redoing', async () => {
  const { agent, site, browser } = harness;
  agent.reset();
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'memory-build', async () => {
      await openApp(page, site.url);
      await importChatGpt(page);

      // No endpoint yet: memory is off, nothing is sent, the offer stays.
      assert.match(await buildAll(page, 'stopped'), /Memory is off/);
      assert.equal(agent.memoryRequests().length, 0);

      // One exchange per update: "Rust and Leptos" is two parts, "Bonjour" one. The first part's
      // reply cannot be used: that conversation fails (shown in its memory pane), the run goes on
      // to the next and says at the end which one failed and why.
      await configureSettings(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model', summaryFrequency: 1 });
      agent.scriptMemory(
        { text: 'Sorry, no memory today. {{{ not json' },
        reply('The user greeted the assistant in French.', [entity('fr', 'concept', 'French')]),
      );
      const failed = await buildAll(page, 'failed');
      assert.match(failed, /1 conversation up to date, 1 update written/);
      assert.match(failed, /Not built \(.*could not be used.*\): “Rust and Leptos”/);
      assert.match(failed, /Retry builds only the rest/);
      assert.equal(agent.memoryRequests().length, 2, 'the run went on to the next conversation');
      assert.ok(agent.memoryRequests()[1].rawBody.includes('Bonjour'));
      assert.equal(await page.locator(tid('memory-build-all')).count(), 0, 'the import offer gives way to the retry');
      await open(page, RUST);
      await page.locator(tid('memory-failure')).waitFor({ state: 'visible' });
      assert.deepEqual(await memoryShown(page), { summary: null, entities: [] }, 'a failed update writes no memory');
      await open(page, BONJOUR);
      await page.locator(tid('summary-text')).filter({ hasText: 'greeted the assistant in French' }).waitFor({ state: 'visible' });

      // Retry builds only the one that failed; its second part hangs until it is cancelled.
      agent.scriptMemory(
        reply('Rust is a systems programming language.', [entity('rust', 'concept', 'Rust')]),
        reply('Leptos is a Rust web framework.', [entity('leptos', 'concept', 'Leptos')], { delayMs: 20_000 }),
      );
      await page.locator(tid('memory-build-retry')).click();
      await agent.waitForRequests(4, { filter: (r) => r.kind === 'memory', timeoutMs: 30_000 });
      const line = page.locator(tid('memory-build-progress'));
      await line.filter({ hasText: 'conversation 1 of 1' }).waitFor({ state: 'visible' });
      assert.match(await line.innerText(), /part 2 of 2/);
      await page.locator(tid('memory-build-cancel')).click();
      assert.match(await ended(page, 'stopped'), /cancelled/);
      const [third, fourth] = agent.memoryRequests().slice(2).map((r) => r.rawBody);
      assert.ok(third.includes('What is Rust?') && !third.includes('And Leptos?'), 'one exchange per part, oldest first');
      assert.ok(fourth.includes('And Leptos?') && !fourth.includes('What is Rust?'), 'the second part goes on after the first');
      assert.ok(!third.includes('Bonjour') && !fourth.includes('Bonjour'), 'the retry builds only what failed');

      await open(page, RUST);
      await page.locator(tid('summary-text')).filter({ hasText: 'Rust is a systems programming language.' }).waitFor({ state: 'visible' });
      assert.deepEqual((await memoryShown(page)).entities, ['Rust'], 'the cancelled part wrote nothing');

      // Building again from the memory pane finishes the last part, without redoing the first.
      agent.scriptMemory(reply('Leptos is a Rust web framework.', [entity('leptos', 'concept', 'Leptos')]));
      await page.locator(tid('memory-build')).click();
      assert.match(await ended(page, 'done'), /1 conversation up to date, 1 update written/);
      assert.equal(agent.memoryRequests().length, 5);
      assert.ok(agent.memoryRequests()[4].rawBody.includes('And Leptos?') && !agent.memoryRequests()[4].rawBody.includes('What is Rust?'));
      await page.locator(tid('memory-failure')).waitFor({ state: 'detached' });
      await page.locator(tid('summary-text')).filter({ hasText: 'Leptos is a Rust web framework.' }).waitFor({ state: 'visible' });
      assert.deepEqual((await memoryShown(page)).entities, ['Leptos', 'Rust']);
      assert.equal(await page.locator(tid('memory-build')).count(), 0, 'a covered history offers no build');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
