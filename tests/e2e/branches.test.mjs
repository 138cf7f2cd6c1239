// End-to-end journeys of branches (issue 17): regenerate a reply and page between the alternatives
// (‹ 1/2 ›), with the agent receiving only the branch on screen; edit a middle user message, which
// starts a branch and keeps the old one a page away; delete a message (asking first) without losing
// anything else; a reload that keeps all of it, including which alternative was chosen; and a backup
// that carries every alternative (the Markdown transcript is the branch shown).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startHarness,
  chatTurn,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForAssistantCount,
  reloadAndReopen,
  tid,
  uiJourney,
  confirmImport,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const journey = (name, fn) => uiJourney(harness, name, fn);

/** The texts shown, top to bottom. */
const shown = (page) => page.locator(tid('message-content')).evaluateAll((els) => els.map((e) => e.innerText.trim()));

/** The user and assistant texts of the last chat request the agent received. */
function lastSent(agent) {
  return agent.chatRequests().at(-1).body.messages.filter((m) => m.role !== 'system').map((m) => m.content);
}

/** Waits until the conversation shows exactly `want`. */
async function waitForShown(page, want) {
  await page.waitForFunction(
    (want) => JSON.stringify([...document.querySelectorAll('[data-testid="message-content"]')].map((e) => e.innerText.trim())) === JSON.stringify(want),
    want,
  );
}

/** Where the screenshots go (the report describes them). */
const shot = (name) => join(process.env.MEMOIRE_SHOTS ?? tmpdir(), `memoire-${name}.png`);

const position = (message) => message.locator(tid('alternative-position')).innerText();

test('regenerate keeps the earlier reply as an alternative; the agent gets only the branch shown', () =>
  journey('branches-regenerate', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Name a colour.', 'Blue.');
    await chatTurn(page, agent, 'Name a fruit.', 'Apple, take one.');
    assert.equal(await messages(page, 'assistant').last().locator(tid('alternative-position')).count(), 0, 'no pager before there are alternatives');

    agent.script('Pear, take two.');
    await messages(page, 'assistant').last().locator(tid('regenerate-button')).click();
    await waitForShown(page, ['Name a colour.', 'Blue.', 'Name a fruit.', 'Pear, take two.']);
    await waitForAssistant(page);
    const reply = messages(page, 'assistant').last();
    assert.equal(await position(reply), '2/2');
    await page.screenshot({ path: shot('branches-pager') });
    assert.deepEqual(lastSent(agent), ['Name a colour.', 'Blue.', 'Name a fruit.'], 'the earlier reply is not sent with the question');
    assert.equal(await reply.locator(tid('alternative-next')).isDisabled(), true);

    // Back to the first reply, and on from it: the prompt is the branch on screen.
    await reply.locator(tid('alternative-prev')).click();
    await waitForShown(page, ['Name a colour.', 'Blue.', 'Name a fruit.', 'Apple, take one.']);
    assert.equal(await position(messages(page, 'assistant').last()), '1/2');
    const sentBefore = agent.chatRequests().length;
    assert.equal(await chatTurn(page, agent, 'And a vegetable?', 'Carrot.'), 'Carrot.');
    assert.equal(agent.chatRequests().length, sentBefore + 1, 'one request per turn');
    assert.deepEqual(lastSent(agent), ['Name a colour.', 'Blue.', 'Name a fruit.', 'Apple, take one.', 'And a vegetable?']);

    // A reload keeps every alternative and the one chosen.
    await reloadAndReopen(page);
    await waitForShown(page, ['Name a colour.', 'Blue.', 'Name a fruit.', 'Apple, take one.', 'And a vegetable?', 'Carrot.']);
    assert.equal(await position(messages(page, 'assistant').nth(1)), '1/2');
    await messages(page, 'assistant').nth(1).locator(tid('alternative-next')).click();
    await waitForShown(page, ['Name a colour.', 'Blue.', 'Name a fruit.', 'Pear, take two.']);
  }));

test('editing a middle message starts a branch; the old one stays a page away', () =>
  journey('branches-edit', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'One?', 'First.');
    await chatTurn(page, agent, 'Two?', 'Second.');
    await chatTurn(page, agent, 'Three?', 'Third.');
    const input = page.locator(tid('composer-input'));
    assert.equal(await messages(page, 'user').locator(tid('edit-message')).count(), 3, 'every user message can be edited');

    await messages(page, 'user').nth(1).locator(tid('edit-message')).click();
    const editor = messages(page, 'user').nth(1).locator(tid('edit-message-input'));
    assert.equal(await editor.inputValue(), 'Two?');
    assert.equal(await input.inputValue(), '', 'edited in place, not in the composer');
    await editor.fill('Two, edited?');
    agent.script('Second, after the edit.');
    await editor.press('Enter');
    await waitForShown(page, ['One?', 'First.', 'Two, edited?', 'Second, after the edit.']);
    await waitForAssistant(page);
    assert.deepEqual(lastSent(agent), ['One?', 'First.', 'Two, edited?']);
    assert.equal(await position(messages(page, 'user').nth(1)), '2/2');

    await messages(page, 'user').nth(1).locator(tid('alternative-prev')).click();
    await waitForShown(page, ['One?', 'First.', 'Two?', 'Second.', 'Three?', 'Third.']);
    assert.equal(await position(messages(page, 'user').nth(1)), '1/2');
    await reloadAndReopen(page);
    await waitForShown(page, ['One?', 'First.', 'Two?', 'Second.', 'Three?', 'Third.']);
    await messages(page, 'user').nth(1).locator(tid('alternative-next')).click();
    await waitForShown(page, ['One?', 'First.', 'Two, edited?', 'Second, after the edit.']);
  }));

test('deleting a message asks first, removes only it, and it stays deleted after a reload', () =>
  journey('branches-delete', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Alpha?', 'Alpha reply.');
    await chatTurn(page, agent, 'Beta?', 'Beta reply.');

    const first = messages(page, 'assistant').first();
    await first.locator(tid('delete-message')).click();
    await first.locator(tid('cancel-delete-message')).click();
    await first.locator(tid('delete-message')).waitFor();
    assert.deepEqual(await shown(page), ['Alpha?', 'Alpha reply.', 'Beta?', 'Beta reply.'], 'Cancel keeps it');

    await first.locator(tid('delete-message')).click();
    await page.screenshot({ path: shot('branches-delete-confirm') });
    await first.locator(tid('confirm-delete-message')).click();
    await waitForShown(page, ['Alpha?', 'Beta?', 'Beta reply.']);
    await chatTurn(page, agent, 'Gamma?', 'Gamma reply.');
    assert.deepEqual(lastSent(agent), ['Alpha?', 'Beta?', 'Beta reply.', 'Gamma?'], 'a deleted message is never sent');

    await reloadAndReopen(page);
    await waitForShown(page, ['Alpha?', 'Beta?', 'Beta reply.', 'Gamma?', 'Gamma reply.']);
    assert.equal(await messageText(messages(page, 'user').first()), 'Alpha?');
    await waitForAssistantCount(page, 2);
  }));

test('a turn sent right after a regeneration goes on from the new reply', () =>
  journey('branches-continue', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Pick a number.', 'Seven.');
    agent.script('Nine.');
    await messages(page, 'assistant').last().locator(tid('regenerate-button')).click();
    await waitForShown(page, ['Pick a number.', 'Nine.']);
    await waitForAssistant(page);
    agent.script('Ten.');
    await sendMessage(page, 'Add one.');
    await waitForShown(page, ['Pick a number.', 'Nine.', 'Add one.', 'Ten.']);
    await waitForAssistant(page);
    assert.deepEqual(lastSent(agent), ['Pick a number.', 'Nine.', 'Add one.']);
  }));

/** Clicks a backup menu entry and returns the downloaded file's text. */
async function download(page, testid) {
  if (!(await page.locator(tid(testid)).isVisible())) await page.locator(tid('export-button')).click();
  const [file] = await Promise.all([page.waitForEvent('download'), page.locator(tid(testid)).click()]);
  return readFile(await file.path(), 'utf8');
}

test('a backup keeps every alternative and brings them back; the Markdown transcript is the branch shown', () =>
  journey('branches-backup', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Say hello.', 'Hello, first try.');
    agent.script('Hello, second try.');
    await messages(page, 'assistant').last().locator(tid('regenerate-button')).click();
    await waitForShown(page, ['Say hello.', 'Hello, second try.']);
    await waitForAssistant(page);

    const md = await download(page, 'export-conversation-markdown');
    assert.match(md, /Hello, second try\./);
    assert.doesNotMatch(md, /first try/, 'the transcript is the branch shown');
    const json = await download(page, 'export-all-json');
    const msgs = JSON.parse(json).conversations[0].messages;
    const first = msgs.find((m) => m.content === 'Hello, first try.');
    const second = msgs.find((m) => m.content === 'Hello, second try.');
    assert.ok(first && second, 'both replies are in the backup');
    assert.equal(second.replaces, first.id);

    const item = page.locator(tid('conversation-item')).first();
    await item.hover();
    await item.locator(tid('delete-conversation')).click();
    await item.locator(tid('confirm-delete')).click();
    await page.locator(tid('conversation-item')).waitFor({ state: 'detached' });
    await page.locator(tid('export-button')).click();
    await page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(json) });
    await confirmImport(page);
    await page.locator(tid('notice')).waitFor({ state: 'visible' });
    await page.locator(tid('conversation-item')).first().click();
    await waitForShown(page, ['Say hello.', 'Hello, second try.']);
    assert.equal(await position(messages(page, 'assistant').last()), '2/2');
    await messages(page, 'assistant').last().locator(tid('alternative-prev')).click();
    await waitForShown(page, ['Say hello.', 'Hello, first try.']);
  }));
