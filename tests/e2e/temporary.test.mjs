// Temporary chats (issue 26): never stored, no memory update, no memory about the user unless asked
// for, nothing left in IndexedDB (or localStorage) after a reload; leaving one ends it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openConfiguredApp,
  chatTurn,
  conversationIds,
  assertNoPageProblems,
  withDiagnostics,
  waitForAppReady,
  eventually,
  messages,
  tid,
  requestText,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());


/** Every record of every IndexedDB database of the page's origin, and its localStorage, as text. */
function everythingStored(page) {
  return page.evaluate(async () => {
    const ask = (r) => new Promise((resolve, reject) => {
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    const out = [];
    for (const { name } of await indexedDB.databases()) {
      const db = await ask(indexedDB.open(name));
      for (const store of db.objectStoreNames) {
        const all = await ask(db.transaction(store).objectStore(store).getAll());
        out.push(`${name}/${store}: ${JSON.stringify(all)}`);
      }
      db.close();
    }
    out.push(`localStorage: ${JSON.stringify({ ...localStorage })}`);
    return out.join('\n');
  });
}

const SAID = 'I am allergic to peanuts and my dog is called Rexitor.';

test('temporary chat: sends no memory about the user unless asked, and leaves nothing stored after a reload', async () => {
  const { agent } = harness;
  // A memory update after every exchange: a stored conversation has one at once, a temporary none.
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1 });
  try {
    await withDiagnostics(page, issues, 'temporary-chat', async () => {
      await chatTurn(page, agent, 'My name is Marta and I live in Lisbon.', 'Nice to meet you, Marta.');
      await page.locator(tid('memory-page-open')).click();
      await page.locator(tid('user-fact')).filter({ hasText: 'Lisbon' }).first().waitFor({ state: 'visible' });
      await page.keyboard.press('Escape');
      const stored = await conversationIds(page);
      assert.equal(stored.length, 1);
      await eventually(async () => agent.memoryRequests().length === 1, { what: "the stored conversation's memory update" });

      await page.locator(tid('temporary-chat')).click();
      await page.locator(tid('temporary-chat-notice')).waitFor({ state: 'visible' });
      await messages(page).first().waitFor({ state: 'detached' });
      await chatTurn(page, agent, SAID, 'Noted: peanuts, and Rexitor.');
      const first = agent.chatRequests().at(-1);
      assert.ok(requestText(first).includes('Rexitor'), 'the message itself is sent');
      assert.ok(!requestText(first).includes('Marta') && !requestText(first).includes('Lisbon'), `no memory about the user: ${requestText(first)}`);
      assert.equal(await page.evaluate(() => location.hash), '', 'no address of its own');

      // Asked for, memory about the user comes in; its own history is there too.
      const own = page.locator(tid('conversation-use-user-memory'));
      assert.equal(await own.getAttribute('aria-checked'), 'false', 'off until asked');
      await own.click();
      await eventually(async () => (await own.getAttribute('aria-checked')) === 'true', { what: 'memory about me on' });
      await chatTurn(page, agent, 'What is my name, and what is my dog called?', 'Marta; Rexitor.');
      const second = agent.chatRequests().at(-1);
      assert.ok(requestText(second).includes('Lisbon'), `asked for, the facts come: ${requestText(second)}`);
      assert.ok(requestText(second).includes(SAID), 'the temporary chat is its own history');
      assert.deepEqual(await conversationIds(page), stored, 'the sidebar never lists it');
      await page.locator(tid('composer-input')).fill('A draft, never kept: Zorblat.');
      // Time for a memory update, a fact taken in or a draft saved, had any been started.
      await page.waitForTimeout(500);
      assert.equal(agent.memoryRequests().length, 1, 'no memory update in a temporary chat');
      assert.ok(agent.titleRequests().every((r) => !requestText(r).includes('Rexitor')), 'no title request for a temporary chat');
      assert.equal(agent.titleRequests().length, 1, "only the stored conversation's title was asked for");

      const before = await everythingStored(page);
      assert.ok(before.includes('Marta') && before.includes('Lisbon'), 'the dump reads the stored conversation and facts');
      for (const word of ['Rexitor', 'peanuts', 'Zorblat']) {
        assert.ok(!before.includes(word), `nothing of the temporary chat is stored while it is open: ${word}`);
      }

      await page.reload();
      await waitForAppReady(page);
      assert.equal(await page.locator(tid('temporary-chat-notice')).count(), 0, 'a reload ends it');
      assert.equal(await messages(page).count(), 0, 'the new chat, empty');
      const afterReload = await everythingStored(page);
      for (const word of ['Rexitor', 'peanuts', 'Zorblat']) {
        assert.ok(!afterReload.includes(word), `nothing of it after a reload: ${word}`);
      }
      assert.deepEqual(await conversationIds(page), stored);
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('temporary chat: leaving it ends it; a new one starts empty', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'temporary-chat-leave', async () => {
      await page.locator(tid('temporary-chat')).click();
      await page.locator(tid('temporary-chat-notice')).waitFor({ state: 'visible' });
      await chatTurn(page, agent, 'Remember the word Quillon.', 'Quillon.');
      assert.equal(await page.locator(tid('edit-message')).count(), 0, 'nothing stored to edit or branch from');
      await page.locator(tid('new-conversation')).click();
      await page.locator(tid('temporary-chat-notice')).waitFor({ state: 'detached' });
      assert.equal(await messages(page).count(), 0);
      await page.locator(tid('temporary-chat')).click();
      await page.locator(tid('temporary-chat-notice')).waitFor({ state: 'visible' });
      assert.equal(await messages(page).count(), 0, 'a new temporary chat starts empty');
      await chatTurn(page, agent, 'What was the word?', 'I do not know.');
      assert.ok(!requestText(agent.chatRequests().at(-1)).includes('Quillon'), 'the temporary chat before is gone');
      assert.deepEqual(await conversationIds(page), [], 'none listed');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
