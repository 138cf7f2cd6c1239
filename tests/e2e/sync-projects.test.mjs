// Sync of projects (issue 26, item 4): two browser contexts are two devices against pouchdb-server
// (couch.mjs). A project made on A, with its instructions, its conversation and a fact said in it,
// reaches B: B's new conversation in the project carries the instructions and the fact, one outside
// carries neither; deleted on A, the project is gone from B and its conversation stays, outside.

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
  requestText as sent,
  BROWSER_NETWORK_NOISE,
  syncedDevice,
} from './helpers.mjs';
import { startCouch } from './couch.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const INSTRUCTIONS = 'Answer as the ward sister of a busy clinic would.';



const allow = { allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/] };

/** One turn in a new conversation of the open project (`inside`) or outside any: its request. */
async function askInNew(page, agent, inside, text) {
  await page.locator(tid(inside ? 'project-new-conversation' : 'new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
  await chatTurn(page, agent, text, 'Noted.');
  return agent.chatRequests().at(-1);
}

test('sync: a project, its instructions and its facts reach B; deleted on A, it is gone from B', async () => {
  const { agent } = harness;
  agent.reset();
  const couch = await startCouch();
  const devices = [];
  try {
    const A = await syncedDevice(harness, couch);
    devices.push(A);
    const B = await syncedDevice(harness, couch);
    devices.push(B);
    await withDiagnostics(A.page, A.issues, 'sync-projects', async () => {
      await A.page.locator(tid('new-project')).click();
      await A.page.locator(tid('new-project-name')).fill('Clinic');
      await A.page.locator(tid('new-project-name')).press('Enter');
      await A.page.locator(tid('project-instructions')).fill(INSTRUCTIONS);
      await A.page.locator(tid('project-instructions-save')).click();
      await askInNew(A.page, agent, true, 'I work as a nurse.');
      const id = await A.page.locator(tid('project-item')).getAttribute('data-project-id');

      // B: the project (with its instructions) and its conversation arrive.
      const item = B.page.locator(tid('project-item'));
      await item.waitFor({ state: 'visible', timeout: 30_000 });
      assert.equal(await item.getAttribute('data-project-id'), id);
      await item.locator('button').click();
      await eventually(async () => (await B.page.locator(tid('project-instructions')).inputValue()) === INSTRUCTIONS, { timeout: 30_000, what: "the instructions on B" });
      const items = B.page.locator(tid('conversation-list')).locator(tid('conversation-item'));
      await eventually(async () => (await items.count()) === 1, { timeout: 30_000, what: "A's conversation in the project on B" });
      await eventually(async () => {
        if (!(await B.page.locator(tid('memory-page')).isVisible())) await B.page.locator(tid('memory-page-open')).click();
        return (await B.page.locator(tid('user-fact')).allInnerTexts()).join(' ').includes('nurse');
      }, { timeout: 30_000, what: "A's fact on B's Memory page" });
      await B.page.keyboard.press('Escape');
      const inP = await askInNew(B.page, agent, true, 'What do I do?');
      assert.ok(sent(inP).includes('I work as a nurse') && sent(inP).includes(INSTRUCTIONS), `B's conversation of the project carries both: ${sent(inP)}`);
      await B.page.locator(tid('project-close')).click();
      const outside = await askInNew(B.page, agent, false, 'What do I do?');
      assert.ok(!sent(outside).includes('nurse') && !sent(outside).includes(INSTRUCTIONS), `outside, neither: ${sent(outside)}`);

      // Deleted on A: gone from B; B's conversations stay, outside any project.
      // (A's project is still open, since it was made.)
      await A.page.locator(tid('project-delete')).click();
      await A.page.locator(tid('project-delete-confirm')).click();
      await B.page.locator(tid('project-item')).waitFor({ state: 'detached', timeout: 30_000 });
      await eventually(async () => (await items.count()) === 3, { what: 'every conversation kept on B' });
      for (const d of devices) assertNoPageProblems(d.issues, allow);
    });
  } finally {
    for (const d of devices) await d.context.close();
    await couch.stop();
  }
});
