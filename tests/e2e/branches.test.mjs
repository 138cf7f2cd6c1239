// End-to-end journeys of branches (issue 17): regenerate a reply and page between the alternatives
// (‹ 1/2 ›), with the agent receiving only the branch on screen; edit a middle user message, which
// starts a branch and keeps the old one a page away; delete a message (asking first) without losing
// anything else; and a reload that keeps all of it, including which alternative was chosen.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
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
    assert.equal(await input.inputValue(), 'Two?');
    await input.fill('Two, edited?');
    agent.script('Second, after the edit.');
    await input.press('Enter');
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
