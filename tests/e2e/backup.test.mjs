// Backup (issue 7, part 3), through the export-button menu and the import-input:
// - export everything as versioned JSON (captured download; the API key never appears) and one
//   conversation as a Markdown transcript;
// - delete everything, import the file: the notice reports what was added, and a second export is
//   identical to the first (messages, summary versions, entities);
// - importing the same file again adds nothing and skips everything;
// - hostile files (huge, wrong types, deep nesting, an id colliding with another conversation, one
//   bad record after good ones, not JSON) each give a clear error-banner message and write nothing.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startHarness,
  newAppPage,
  openApp,
  configureEndpoint,
  endpointBase,
  sendMessage,
  waitForAssistant,
  assertNoPageProblems,
  withDiagnostics,
  confirmImport,
  tid,
} from './helpers.mjs';
import { memoryReplyText } from './agent-server.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const API_KEY = 'sk-never-exported-4242';

const items = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'));

/** Opens the backup menu unless it is open already. */
async function openMenu(page) {
  if (!(await page.locator(tid('export-all-json')).isVisible())) await page.locator(tid('export-button')).click();
}

/** Clicks a menu entry and returns the downloaded file's text. */
async function download(page, testid) {
  await openMenu(page);
  const [file] = await Promise.all([page.waitForEvent('download'), page.locator(tid(testid)).click()]);
  return readFile(await file.path(), 'utf8');
}

async function importFile(page, file) {
  await openMenu(page);
  await page.locator(tid('import-input')).setInputFiles(file);
}

const asFile = (text, name = 'backup.json') => ({ name, mimeType: 'application/json', buffer: Buffer.from(text) });

/** The export without its time stamp. */
function comparable(text) {
  const parsed = JSON.parse(text);
  delete parsed.exported_at;
  return parsed;
}

async function waitForCount(page, n) {
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="conversation-item"]').length === n, n);
}

test('backup: export, delete, import gives identical data; a second import skips everything; hostile files write nothing', async () => {
  const { agent, site } = harness;
  agent.reset();
  const { context, page, issues } = await newAppPage(harness.browser);
  const huge = join(tmpdir(), `memoire-huge-${process.pid}.json`);
  try {
    await withDiagnostics(page, issues, 'backup', async () => {
      await openApp(page, site.url);
      await configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model', apiKey: API_KEY });

      // Conversation 1: two exchanges, two memory updates (two summary versions, two entities).
      agent.script({ text: 'A picnic in Paris sounds lovely.' }, { text: 'Bring a blanket.' });
      await sendMessage(page, 'Plan a picnic with Alice in Paris');
      await waitForAssistant(page);
      const entities = [
        { id: 'alice', type: 'person', name: 'Alice', description: 'A friend', properties: { role: 'friend' }, relationships: [{ targetId: 'paris', relationship: 'visits', strength: 0.8 }] },
        { id: 'paris', type: 'place', name: 'Paris', description: 'A city', properties: {}, relationships: [] },
      ];
      agent.scriptMemory(
        { text: memoryReplyText({ summary: 'Picnic planning with Alice in Paris.', entities }) },
        { text: memoryReplyText({ summary: 'Picnic planning; bring a blanket.', entities }) },
      );
      await page.locator(tid('update-memory')).click();
      await page.locator(tid('summary-text')).filter({ hasText: 'Picnic planning with Alice' }).waitFor();
      await sendMessage(page, 'What should I bring?');
      await waitForAssistant(page, { index: 1 });
      await page.locator(tid('update-memory')).click();
      await page.locator(tid('summary-text')).filter({ hasText: 'bring a blanket' }).waitFor();
      assert.equal(await page.locator(tid('entity-node')).count(), 2);

      // Conversation 2: one exchange.
      await page.locator(tid('new-conversation')).click();
      await page.locator(tid('message-list')).waitFor();
      agent.script({ text: 'Second answer.' });
      await sendMessage(page, 'Second conversation question');
      await waitForAssistant(page);
      await waitForCount(page, 2);

      // Export everything; the file is versioned and has no API key.
      const exported = await download(page, 'export-all-json');
      assert.ok(!exported.includes(API_KEY), 'the API key is never exported');
      const original = comparable(exported);
      assert.equal(original.format, 'memoire-backup');
      assert.equal(original.version, 1);
      assert.equal(original.conversations.length, 2);
      const counts = {
        messages: original.conversations.reduce((n, c) => n + c.messages.length, 0),
        summaries: original.conversations.reduce((n, c) => n + c.summaries.length, 0),
        entities: original.conversations.reduce((n, c) => n + c.entities.length, 0) + original.shared_entities.length,
      };
      assert.deepEqual(counts, { messages: 6, summaries: 2, entities: 2 });

      // A Markdown transcript of the open conversation.
      const md = await download(page, 'export-conversation-markdown');
      assert.match(md, /^# Second conversation question/);
      assert.match(md, /\*\*User\*\*[^\n]*\n\nSecond conversation question/);
      assert.match(md, /\*\*Assistant\*\*[^\n]*\n\nSecond answer\./);

      // Delete everything, then import the backup.
      for (let n = 2; n > 0; n--) {
        await items(page).first().hover();
        await items(page).first().locator(tid('delete-conversation')).click();
        await items(page).first().locator(tid('confirm-delete')).click();
        await waitForCount(page, n - 1);
      }
      await importFile(page, asFile(exported));
      // Our own backup goes through the same preview as other apps' exports.
      assert.match(await confirmImport(page), /Memoire backup: 2 conversations, 6 messages\. New here: 2 conversations and 6 messages; already here: 0 messages\./);
      const n = (k, one, many) => `${k} ${k === 1 ? one : many}`;
      const all = `${n(counts.messages, 'message', 'messages')}, ${n(counts.summaries, 'summary', 'summaries')} and ${n(counts.entities, 'entity', 'entities')}`;
      await page.locator(tid('notice')).filter({ hasText: `Imported 2 conversations, ${all}.` }).waitFor();
      await waitForCount(page, 2);
      assert.deepEqual(comparable(await download(page, 'export-all-json')), original, 'the round trip is identical');

      // The imported conversation shows its messages and memory.
      await items(page).filter({ hasText: 'Plan a picnic' }).click();
      await page.locator(tid('message')).filter({ hasText: 'Bring a blanket.' }).waitFor();
      assert.equal(await page.locator(tid('message')).count(), 4);
      await page.locator(tid('summary-text')).filter({ hasText: 'bring a blanket' }).waitFor();
      assert.equal(await page.locator(tid('entity-node')).count(), 2);

      // The same file again: the preview says so, and everything is skipped.
      await importFile(page, asFile(exported));
      assert.match(await confirmImport(page), /New here: 0 conversations and 0 messages; already here: 6 messages\./);
      await page.locator(tid('notice')).filter({ hasText: `Imported 0 conversations, 0 messages, 0 summaries and 0 entities; skipped 2 conversations, ${all} that were already here.` }).waitFor();
      assert.deepEqual(comparable(await download(page, 'export-all-json')), original);

      // Hostile files: a clear error, nothing written.
      const good = JSON.parse(exported);
      const fresh = (id) => {
        const c = structuredClone(good.conversations[1]);
        c.conversation.id = id;
        c.messages = c.messages.map((m, i) => ({ ...m, id: `${id}-m${i}`, conversation_id: id }));
        c.summaries = c.summaries.map((s) => ({ ...s, conversation_id: id }));
        c.entities = [];
        return c;
      };
      const variant = (edit) => {
        const f = structuredClone(good);
        edit(f);
        return JSON.stringify(f);
      };
      await writeFile(huge, Buffer.alloc(51 * 1024 * 1024, 0x20));
      const hostile = [
        ['huge', huge, /limit is 52428800 bytes/],
        ['wrong type', asFile(variant((f) => (f.conversations[0].messages[0].seq = 'one'))), /wrong type/],
        ['deep nesting', asFile(`{"format":"memoire-backup","version":1,"x":${'['.repeat(5000)}${']'.repeat(5000)}}`), /levels deep/],
        ['id collision', asFile(variant((f) => {
          const intruder = fresh('c-intruder');
          intruder.messages[0].id = good.conversations[0].messages[0].id;
          f.conversations = [fresh('c-innocent'), intruder];
        })), /already exists here/],
        ['bad record after good ones', asFile(variant((f) => {
          const bad = fresh('c-bad');
          bad.messages[1].role = 'robot';
          f.conversations = [fresh('c-good'), bad];
        })), /robot/],
        ['not JSON', asFile('{"format": "memoire-backup", "version": 1, garbage'), /not valid JSON/],
        ['not a backup', asFile('{"hello": "world"}'), /not a Memoire backup/],
      ];
      for (const [name, file, message] of hostile) {
        await importFile(page, file);
        await page.locator(tid('error-banner')).filter({ hasText: message }).waitFor();
        assert.equal(await items(page).count(), 2, `${name}: no conversation was added`);
      }
      assert.deepEqual(comparable(await download(page, 'export-all-json')), original, 'hostile files changed nothing');
      assertNoPageProblems(issues);
    });
  } finally {
    await rm(huge, { force: true });
    await context.close();
  }
});

test('backup: a reply\'s thinking (message-reasoning) survives export and import into a fresh database', async () => {
  const { agent, site } = harness;
  agent.reset();
  const thought = 'Considering the Quarrendale route first.';
  const A = await newAppPage(harness.browser);
  const B = await newAppPage(harness.browser);
  try {
    await withDiagnostics(A.page, A.issues, 'backup-reasoning', async () => {
      await openApp(A.page, site.url);
      await configureEndpoint(A.page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model' });
      agent.script({ text: 'Take the coast road.', reasoning: thought });
      await sendMessage(A.page, 'Which way?');
      await waitForAssistant(A.page);
      const exported = await download(A.page, 'export-all-json');
      await openApp(B.page, site.url);
      await importFile(B.page, asFile(exported));
      await confirmImport(B.page);
      await waitForCount(B.page, 1);
      await items(B.page).first().locator(tid('conversation-open')).click();
      const block = B.page.locator(tid('message', '[data-role="assistant"]')).last().locator(tid('message-reasoning'));
      await block.waitFor();
      assert.equal((await block.locator('.reasoning-content').textContent()).trim(), thought);
      assertNoPageProblems(A.issues);
      assertNoPageProblems(B.issues);
    });
  } finally {
    await A.context.close();
    await B.context.close();
  }
});
