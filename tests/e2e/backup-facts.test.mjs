// The facts about the user in Memoire's own backup (issue 26): exported on one profile with a
// forgotten one among them (a tombstone), imported into a fresh profile: the preview counts them,
// the Memory page and the next request carry the live ones, the forgotten one arrives forgotten.
// An older backup (taken before the forgetting) imported afterwards, on either profile, never
// brings the forgotten fact back.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import {
  startHarness,
  openConfiguredApp,
  chatTurn,
  assertNoPageProblems,
  withDiagnostics,
  confirmImport,
  eventually,
  tid,
  factsSent,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());


async function openMenu(page) {
  if (!(await page.locator(tid('export-all-json')).isVisible())) await page.locator(tid('export-button')).click();
}

async function exportAll(page) {
  await openMenu(page);
  const [file] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-all-json')).click()]);
  return readFile(await file.path(), 'utf8');
}

/** Imports `text` as a backup file; returns the preview's text once the notice reports the import. */
async function importText(page, text) {
  await openMenu(page);
  await page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(text) });
  const preview = await confirmImport(page);
  await page.locator(tid('notice')).filter({ hasText: 'Imported' }).waitFor();
  return preview;
}

/** The Memory page's facts (opened if need be), as one text; closed again. */
async function pageFacts(page) {
  await page.locator(tid('memory-page-open')).click();
  await page.locator(tid('memory-page')).waitFor();
  const texts = (await page.locator(tid('memory-page')).locator(tid('user-fact')).allInnerTexts()).join(' | ');
  await page.keyboard.press('Escape');
  await page.locator(tid('memory-page')).waitFor({ state: 'hidden' });
  return texts;
}

/** Every stored fact (the store read directly): text and whether forgotten. */
function storedFacts(page) {
  return page.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open('memoire');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const req = db.transaction('user_facts').objectStore('user_facts').getAll();
      req.onsuccess = () => { db.close(); resolve(req.result.map((f) => ({ text: f.text, forgotten: f.forgotten != null }))); };
      req.onerror = () => reject(req.error);
    };
  }));
}

async function askInNewConversation(page, agent, text) {
  await page.locator(tid('new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
  await chatTurn(page, agent, text, 'Noted.');
  return factsSent(agent.chatRequests().at(-1)).join('\n');
}

test('backup: the facts about you and a forgotten one travel to a fresh profile; an older backup never brings a forgotten fact back', async () => {
  const { agent } = harness;
  const one = await openConfiguredApp(harness, 'openai-chat');
  let two;
  try {
    await withDiagnostics(one.page, one.issues, 'backup-facts', async () => {
      const { page } = one;
      await chatTurn(page, agent, 'My name is Marta and I live in Lisbon.', 'Hello Marta.');
      await chatTurn(page, agent, 'I have a dog called Biscuit.', 'Lovely.');
      await eventually(async () => (await storedFacts(page)).length === 3, { what: 'three facts stored' });
      const before = await exportAll(page);

      await page.locator(tid('memory-page-open')).click();
      const biscuit = page.locator(tid('user-fact')).filter({ hasText: 'Biscuit' }).first();
      await biscuit.locator(tid('user-fact-forget')).click();
      await biscuit.locator(tid('confirm-forget')).click();
      await page.locator(tid('user-fact')).filter({ hasText: 'Biscuit' }).waitFor({ state: 'detached' });
      await page.keyboard.press('Escape');
      const after = await exportAll(page);
      const file = JSON.parse(after);
      assert.equal(file.user_facts.length, 3, 'every fact, the forgotten one too');
      assert.deepEqual(file.user_facts.filter((f) => f.forgotten != null).map((f) => f.text), ['I have a dog called Biscuit.']);

      // The older backup imported here again: the forgotten fact stays forgotten.
      assert.match(await importText(page, before), /Facts about you: 0 new, 3 already here\./);
      assert.ok(!(await pageFacts(page)).includes('Biscuit'), 'an older backup does not undo forgetting');

      // A fresh profile: the preview counts them; the live ones are on the Memory page and in the
      // next request, the forgotten one arrives as a tombstone.
      two = await openConfiguredApp(harness, 'openai-chat');
      assert.match(await importText(two.page, after), /Facts about you: 3 new, 0 already here\./);
      const shown = await pageFacts(two.page);
      assert.ok(shown.includes('Marta') && shown.includes('Lisbon'), `the facts arrived: ${shown}`);
      assert.ok(!shown.includes('Biscuit'), 'the forgotten fact is not shown');
      assert.deepEqual(
        (await storedFacts(two.page)).filter((f) => f.forgotten).map((f) => f.text),
        ['I have a dog called Biscuit.'],
        'the tombstone arrived',
      );
      const carried = await askInNewConversation(two.page, agent, 'What do you know about me?');
      assert.ok(carried.includes('Marta') && carried.includes('Lisbon'), `the next request carries them: ${carried}`);
      assert.ok(!carried.includes('Biscuit'), 'not the forgotten one');

      // Then the older backup, where Biscuit is live: still forgotten.
      assert.match(await importText(two.page, before), /Facts about you: 0 new, 3 already here\./);
      assert.ok(!(await pageFacts(two.page)).includes('Biscuit'), 'an older backup does not bring it back');
      assert.ok(!(await askInNewConversation(two.page, agent, 'And now?')).includes('Biscuit'));
      assertNoPageProblems(one.issues);
      assertNoPageProblems(two.issues);
    });
  } finally {
    await one.context.close();
    await two?.context.close();
  }
});
