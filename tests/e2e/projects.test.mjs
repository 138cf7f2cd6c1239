// Projects (issue 26, item 4): a fact learned in a conversation of project P is in the next
// request of another conversation of P and in no request outside P until the user moves it to
// "about you"; the project's instructions reach the system text of its conversations' requests; a
// backup carries a project and its conversations' membership to a fresh profile.

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
  requestText as sent,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const INSTRUCTIONS = 'Answer as the ward sister of a busy clinic would.';

/** The system text of request `r`. */
const system = (r) => r.body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');

/** Creates project `name` from the sidebar; it opens. Returns its id. */
async function newProject(page, name) {
  await page.locator(tid('new-project')).click();
  await page.locator(tid('new-project-name')).fill(name);
  await page.locator(tid('new-project-name')).press('Enter');
  const item = page.locator(tid('project-item')).filter({ hasText: name });
  await item.waitFor({ state: 'visible' });
  await page.locator(tid('project-instructions')).waitFor({ state: 'visible' });
  return item.getAttribute('data-project-id');
}

/** A new conversation inside the open project, or outside any (`inside` false). */
async function newConversation(page, inside) {
  await page.locator(tid(inside ? 'project-new-conversation' : 'new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
}

/** Waits until the Memory page lists a fact holding `words`, with `scope` as its label. */
async function factOnPage(page, words, scope) {
  // On a phone the Memory page opens from the memory panel.
  if (!(await page.locator(tid('memory-page-open')).first().isVisible())) await page.locator(tid('memory-toggle')).click();
  await page.locator(tid('memory-page-open')).first().click();
  const fact = page.locator(tid('memory-page')).locator(tid('user-fact')).filter({ hasText: words });
  await eventually(async () => (await fact.count()) === 1 && (await fact.locator(tid('user-fact-scope')).innerText()) === scope, { what: `the fact "${words}" labelled ${scope}` });
  return fact;
}

test('projects: a fact learned in P reaches P only, until moved to about you; the instructions of P reach its system text', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'projects', async () => {
      const id = await newProject(page, 'Clinic');
      assert.ok(id, 'the project item names its id');
      await page.locator(tid('project-instructions')).fill(INSTRUCTIONS);
      await page.locator(tid('project-instructions-save')).click();

      // A first conversation of P: the instructions are in its system text; the job is learned.
      await newConversation(page, true);
      await chatTurn(page, agent, 'I work as a nurse.', 'Noted.');
      const first = agent.chatRequests().at(-1);
      assert.ok(system(first).includes(INSTRUCTIONS), `P's instructions in the system text: ${system(first)}`);
      await factOnPage(page, 'nurse', 'Project: Clinic');
      await page.keyboard.press('Escape');

      // Another conversation of P carries the fact.
      await newConversation(page, true);
      await chatTurn(page, agent, 'What do I do for a living?', 'You are a nurse.');
      const inP = agent.chatRequests().at(-1);
      assert.ok(sent(inP).includes('I work as a nurse'), `the fact reaches P: ${sent(inP)}`);
      assert.ok(system(inP).includes(INSTRUCTIONS));

      // A conversation outside P carries neither the fact nor the instructions.
      await page.locator(tid('project-close')).click();
      await newConversation(page, false);
      await chatTurn(page, agent, 'What do I do for a living?', 'I do not know.');
      const outside = agent.chatRequests().at(-1);
      assert.ok(!sent(outside).includes('nurse'), `the fact stays in P: ${sent(outside)}`);
      assert.ok(!sent(outside).includes(INSTRUCTIONS), 'the instructions stay in P');

      // Moved to about you, it reaches outside P too.
      const fact = await factOnPage(page, 'nurse', 'Project: Clinic');
      await fact.locator(tid('user-fact-move-about-you')).click();
      await eventually(async () => (await fact.locator(tid('user-fact-scope')).innerText()) === 'About you', { what: 'the fact about you' });
      assert.equal(await fact.locator(tid('user-fact-move-about-you')).count(), 0, 'nothing more to move');
      await page.keyboard.press('Escape');
      await chatTurn(page, agent, 'And now?', 'You are a nurse.');
      const moved = agent.chatRequests().at(-1);
      assert.ok(sent(moved).includes('I work as a nurse'), `moved to about you, it reaches outside P: ${sent(moved)}`);
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('projects: a conversation moves into a project and out; deleting the project keeps it', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'projects-move', async () => {
      await chatTurn(page, agent, 'Hello there.', 'Hello.');
      const id = await newProject(page, 'Garden');
      await page.locator(tid('project-instructions')).fill('Answer as a gardener.');
      await page.locator(tid('project-instructions-save')).click();
      // Open, the project filters the list: the conversation is not in it yet.
      const items = page.locator(tid('conversation-list')).locator(tid('conversation-item'));
      await eventually(async () => (await items.count()) === 0, { what: 'the empty project list' });
      await page.locator(tid('project-close')).click();
      await items.first().locator(tid('conversation-project')).selectOption(id);
      await page.locator(tid('project-item')).first().locator('button').click();
      await eventually(async () => (await items.count()) === 1, { what: 'the conversation in the project' });
      await chatTurn(page, agent, 'Any advice?', 'Water less.');
      assert.ok(system(agent.chatRequests().at(-1)).includes('Answer as a gardener.'));
      // Deleted, the project is gone and the conversation stays, outside any project.
      await page.locator(tid('project-delete')).click();
      await page.locator(tid('project-delete-confirm')).click();
      await page.locator(tid('project-item')).waitFor({ state: 'detached' });
      await eventually(async () => (await items.count()) === 1, { what: 'the conversation kept' });
      await chatTurn(page, agent, 'And now?', 'Anything.');
      assert.ok(!system(agent.chatRequests().at(-1)).includes('gardener'), 'out of the project, no instructions');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

async function openMenu(page) {
  if (!(await page.locator(tid('export-all-json')).isVisible())) await page.locator(tid('export-button')).click();
}

test('projects: a backup carries a project, its conversation\'s membership and its facts to a fresh profile', async () => {
  const { agent } = harness;
  const one = await openConfiguredApp(harness, 'openai-chat');
  let two;
  try {
    await withDiagnostics(one.page, one.issues, 'projects-backup', async () => {
      const { page } = one;
      const id = await newProject(page, 'Garden');
      await page.locator(tid('project-instructions')).fill('Answer as a gardener.');
      await page.locator(tid('project-instructions-save')).click();
      await newConversation(page, true);
      await chatTurn(page, agent, 'I work as a florist.', 'Noted.');
      await factOnPage(page, 'florist', 'Project: Garden');
      await page.keyboard.press('Escape');
      await openMenu(page);
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-all-json')).click()]);
      const text = await readFile(await download.path(), 'utf8');
      const file = JSON.parse(text);
      assert.deepEqual(file.projects.map((p) => [p.id, p.name, p.instructions]), [[id, 'Garden', 'Answer as a gardener.']]);
      assert.equal(file.conversations[0].conversation.memory_overrides.project, id, 'the membership travels');

      two = await openConfiguredApp(harness, 'openai-chat');
      await openMenu(two.page);
      await two.page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(text) });
      await confirmImport(two.page);
      await two.page.locator(tid('notice')).filter({ hasText: 'Imported' }).waitFor();
      const item = two.page.locator(tid('project-item'));
      await item.waitFor({ state: 'visible' });
      assert.equal(await item.getAttribute('data-project-id'), id);
      await item.locator('button').click();
      const items = two.page.locator(tid('conversation-list')).locator(tid('conversation-item'));
      await eventually(async () => (await items.count()) === 1, { what: 'the conversation in its project' });
      await items.first().locator(tid('conversation-open')).click();
      await eventually(async () => (await two.page.locator(tid('message')).count()) === 2, { what: 'the imported messages shown' });
      await chatTurn(two.page, agent, 'What do I do?', 'You are a florist.');
      const r = agent.chatRequests().at(-1);
      assert.ok(system(r).includes('Answer as a gardener.'), `the instructions reach it: ${system(r)}`);
      await factOnPage(two.page, 'florist', 'Project: Garden');
      assertNoPageProblems(one.issues);
      assertNoPageProblems(two.issues);
    });
  } finally {
    await one.context.close();
    await two?.context.close();
  }
});

test('projects on a phone (390×844): made, given instructions and used from the drawer; the Memory page moves its fact', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'projects-phone', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      const sidebar = page.locator(tid('sidebar'));
      await page.locator(tid('sidebar-toggle')).click();
      await sidebar.waitFor({ state: 'visible' });
      await newProject(page, 'Clinic');
      const instructions = page.locator(tid('project-instructions'));
      const shown = await instructions.boundingBox();
      assert.ok(shown.x >= 0 && shown.x + shown.width <= 390, `the instructions fit the drawer: ${JSON.stringify(shown)}`);
      await instructions.fill(INSTRUCTIONS);
      await page.locator(tid('project-instructions-save')).click();
      // New in the project closes the drawer and starts the conversation in it.
      await page.locator(tid('project-new-conversation')).click();
      await sidebar.waitFor({ state: 'hidden' });
      await chatTurn(page, agent, 'I work as a nurse.', 'Noted.');
      assert.ok(system(agent.chatRequests().at(-1)).includes(INSTRUCTIONS));
      const fact = await factOnPage(page, 'nurse', 'Project: Clinic');
      const move = fact.locator(tid('user-fact-move-about-you'));
      const b = await move.boundingBox();
      assert.ok(b.x >= 0 && b.x + b.width <= 390, `Move to about you is on screen: ${JSON.stringify(b)}`);
      await move.click();
      await eventually(async () => (await fact.locator(tid('user-fact-scope')).innerText()) === 'About you', { what: 'the fact about you' });
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
