// Sync of the facts about the user (issue 26): two browser contexts are two devices against
// pouchdb-server (couch.mjs). A fact said on device A reaches device B's Memory page and B's next
// request; forgetting it on B's Memory page takes it out of A's next request (a forgotten fact is
// a tombstone that syncs, and wins over A's live copy).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  newAppPage,
  openApp,
  endpointBase,
  chatTurn,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
  BROWSER_NETWORK_NOISE,
  factsSent,
  syncedDevice,
} from './helpers.mjs';
import { startCouch } from './couch.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const NAME = 'My name is Marta and I live in Lisbon.';



/** The Memory page's facts (opened if need be), as texts. */
async function pageFacts(page) {
  if (!(await page.locator(tid('memory-page')).isVisible())) await page.locator(tid('memory-page-open')).click();
  return page.locator(tid('memory-page')).locator(tid('user-fact')).allInnerTexts();
}

async function closeMemoryPage(page) {
  if (await page.locator(tid('memory-page')).isVisible()) await page.keyboard.press('Escape');
  await page.locator(tid('memory-page')).waitFor({ state: 'hidden' });
}

/** A new conversation on `page`, one turn in it: the facts its request carried. */
async function askInNewConversation(page, agent, text) {
  await page.locator(tid('new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
  await chatTurn(page, agent, text, 'Noted.');
  return factsSent(agent.chatRequests().at(-1)).join('\n');
}

const allow = { allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/] };

test('sync: a fact said on A reaches B; forgotten on B, it leaves the prompts of A', async () => {
  const { agent } = harness;
  agent.reset();
  const couch = await startCouch();
  const devices = [];
  try {
    const A = await syncedDevice(harness, couch);
    devices.push(A);
    const B = await syncedDevice(harness, couch);
    devices.push(B);
    await withDiagnostics(A.page, A.issues, 'sync-facts', async () => {
      await chatTurn(A.page, agent, NAME, 'Nice to meet you, Marta.');
      await eventually(async () => (await pageFacts(A.page)).join(' ').includes('Lisbon'), { what: "the facts on A's Memory page" });
      await closeMemoryPage(A.page);

      // B's Memory page shows them once sync brings them, and B's next request carries them.
      await eventually(async () => {
        const texts = (await pageFacts(B.page)).join(' ');
        return texts.includes('Marta') && texts.includes('Lisbon');
      }, { timeout: 30_000, what: "A's facts on B's Memory page" });
      await closeMemoryPage(B.page);
      const onB = await askInNewConversation(B.page, agent, 'What do you know about me?');
      assert.ok(onB.includes('Marta') && onB.includes('Lisbon'), `B's request carries A's facts: ${onB}`);

      // Forgotten on B's Memory page: gone from A's page and from A's next request.
      await B.page.locator(tid('memory-page-open')).click();
      const lisbon = B.page.locator(tid('user-fact')).filter({ hasText: 'Lisbon' }).first();
      await lisbon.locator(tid('user-fact-forget')).click();
      await lisbon.locator(tid('confirm-forget')).click();
      await B.page.locator(tid('user-fact')).filter({ hasText: 'Lisbon' }).waitFor({ state: 'detached' });
      await closeMemoryPage(B.page);
      await eventually(async () => !(await pageFacts(A.page)).join(' ').includes('Lisbon'), { timeout: 30_000, what: "the forgotten fact gone from A's Memory page" });
      assert.ok((await pageFacts(A.page)).join(' ').includes('Marta'), 'the other fact stays');
      await closeMemoryPage(A.page);
      const onA = await askInNewConversation(A.page, agent, 'Tell me what you remember.');
      assert.ok(onA.includes('Marta'), `A still carries the fact not forgotten: ${onA}`);
      assert.ok(!onA.includes('Lisbon'), `A's request leaves out the fact forgotten on B: ${onA}`);

      // Said again on A in the same words, in the same message it is not taken again: the
      // tombstone keeps it out (a reload re-reads everything from A's store).
      await A.page.reload();
      await A.page.locator(tid('settings-open')).waitFor();
      assert.ok(!(await pageFacts(A.page)).join(' ').includes('Lisbon'), 'still forgotten after a reload');
      for (const d of devices) assertNoPageProblems(d.issues, allow);
    });
  } finally {
    for (const d of devices) await d.context.close();
    await couch.stop();
  }
});
