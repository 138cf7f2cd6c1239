// Keyboard use (issue 30 item 6): the shortcuts people know (new chat Ctrl+Shift+O, focus the
// composer Shift+Esc, search Ctrl+K, stop Esc while a reply streams), the sheet on `?` listing them
// (from the same table the keys follow, engine::keys), a message's actions as one tab stop with the
// arrow keys inside, the model picker moved by the arrow keys, and the focus back on the opener after
// Esc or a choice (model picker, Backup menu, import preview) or in the composer after Enter on a search hit.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  chatTurn,
  sendMessage,
  messages,
  waitForAssistantCount,
  waitForPartialReply,
  currentConversationId,
  tid,
  uiJourney,
  syntheticBackup,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const journey = (name, fn, options) => uiJourney(harness, name, fn, options);

/** The `data-testid` of the focused element (or its tag when it has none). */
const focused = (page) => page.evaluate(() => {
  const a = document.activeElement;
  return a?.getAttribute('data-testid') ?? a?.tagName.toLowerCase() ?? null;
});

/** Waits until the focused element has this testid. */
async function focusIs(page, testid) {
  await page.waitForFunction((t) => document.activeElement?.getAttribute('data-testid') === t, testid)
    .catch(async () => assert.fail(`focus is on ${await focused(page)}, not ${testid}`));
}

/** Takes the focus out of any field (on the page's body). */
const blur = (page) => page.evaluate(() => document.activeElement?.blur());

test('shortcuts: Ctrl+Shift+O starts a new chat, Shift+Esc focuses the composer, Ctrl+K the search, Esc stops a reply', () =>
  journey('keys-shortcuts', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Plan the bakery opening.', 'Let us plan it.');
    assert.ok(await currentConversationId(page));

    await blur(page);
    await page.keyboard.press('Shift+Escape');
    await focusIs(page, 'composer-input');

    await page.keyboard.press('Control+k');
    await focusIs(page, 'conversation-search');

    await page.keyboard.press('Control+Shift+O');
    await page.waitForFunction(() => location.hash === '');
    await focusIs(page, 'composer-input');
    assert.equal(await messages(page).count(), 0, 'a new, empty chat');

    // Esc stops a streaming reply from anywhere on the page (focus on the body here).
    const long = 'Proofing takes time and patience. '.repeat(25).trim();
    agent.script({ text: long, delayMs: 80 });
    await sendMessage(page, 'How long does proofing take?');
    await waitForPartialReply(page, long);
    await blur(page);
    await page.keyboard.press('Escape');
    await waitForAssistantCount(page, 1, { status: 'interrupted' });
  }));

test('the shortcuts sheet: `?` outside a text field opens it with every shortcut, Esc closes it and gives the focus back; in the composer `?` types', () =>
  journey('keys-sheet', async (page) => {
    await page.locator(tid('settings-open')).focus();
    await page.keyboard.press('Shift+?');
    const sheet = page.locator(tid('shortcuts-sheet'));
    await sheet.waitFor({ state: 'visible' });
    const rows = await sheet.locator(tid('shortcut')).allInnerTexts();
    const flat = rows.map((r) => r.replace(/\s+/g, ' ').trim());
    assert.deepEqual(flat, [
      'Ctrl+Shift+O New chat',
      'Shift+Esc Focus the message box',
      'Ctrl+K Search conversations',
      'Esc Stop the reply being written',
      '? Show these shortcuts',
    ]);
    assert.equal(await sheet.getAttribute('role'), 'dialog');
    await page.keyboard.press('Escape');
    await sheet.waitFor({ state: 'detached' });
    await focusIs(page, 'settings-open');

    const input = page.locator(tid('composer-input'));
    await input.focus();
    await page.keyboard.type('why?');
    assert.equal(await input.inputValue(), 'why?');
    assert.equal(await sheet.count(), 0, 'no sheet while typing');
  }));

test('message actions are one tab stop per message; the arrow keys move inside', () =>
  journey('keys-roving', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'First question', 'First answer');
    await chatTurn(page, agent, 'Second question', 'Second answer');
    // Settle: every action row has exactly one tab stop.
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message"] .message-actions')]
      .every((row) => row.querySelectorAll('button[tabindex="0"]').length === 1));
    const stops = await page.evaluate(() => [...document.querySelectorAll('[data-testid="message"] .message-actions')]
      .map((row) => [...row.querySelectorAll('button')].filter((b) => b.tabIndex >= 0).length));
    assert.deepEqual(stops, [1, 1, 1, 1], 'one tab stop per message');

    const reply = messages(page, 'assistant').last();
    await reply.locator(tid('copy-message')).focus();
    await page.keyboard.press('ArrowRight');
    await focusIs(page, 'regenerate-button');
    await page.keyboard.press('ArrowRight');
    await focusIs(page, 'delete-message');
    await page.keyboard.press('ArrowRight');
    await focusIs(page, 'copy-message');
    await page.keyboard.press('End');
    await focusIs(page, 'delete-message');
    // The action focused last is the row's tab stop: Shift+Tab leaves the row, Tab comes back to it.
    assert.equal(await reply.locator(tid('delete-message')).getAttribute('tabindex'), '0');
    assert.equal(await reply.locator(tid('copy-message')).getAttribute('tabindex'), '-1');
    await page.keyboard.press('Shift+Tab');
    assert.ok(!(await reply.evaluate((m) => m.contains(document.activeElement))), 'Shift+Tab leaves the row');
    await page.keyboard.press('Tab');
    await focusIs(page, 'delete-message');
  }));

test('model picker: the arrow keys open it and move through the models, Enter chooses, Esc closes; the focus is back on the picker', () =>
  journey('keys-model-picker', async (page) => {
    const picker = page.locator(tid('model-picker'));
    await picker.focus();
    await page.keyboard.press('ArrowDown');
    await page.locator('[role="listbox"]').waitFor();
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'model-option'
      && document.activeElement.getAttribute('data-model') === '' && document.querySelectorAll('[data-testid="model-option"]').length >= 2);
    const focusedModel = () => page.evaluate(() => document.activeElement?.getAttribute('data-model'));
    await page.keyboard.press('ArrowDown');
    assert.equal(await focusedModel(), 'test-model');
    await page.keyboard.press('ArrowUp');
    assert.equal(await focusedModel(), '');
    await page.keyboard.press('End');
    assert.equal(await focusedModel(), 'test-model');
    await page.keyboard.press('Escape');
    await page.locator('[role="listbox"]').waitFor({ state: 'detached' });
    await focusIs(page, 'model-picker');

    await page.keyboard.press('ArrowDown');
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'model-option');
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.locator('[role="listbox"]').waitFor({ state: 'detached' });
    await focusIs(page, 'model-picker');
  }));

test('focus after Esc or a choice: the Backup menu gives it back to its button; Enter on a search hit puts it in the composer', () =>
  journey('keys-focus-return', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'The penicillin story', 'Fleming noticed the mould.');
    await chatTurn(page, agent, 'And the cello?', 'A bowed string instrument.');

    const backup = page.locator(tid('export-button'));
    await backup.focus();
    await page.keyboard.press('Enter');
    await page.locator('[role="menu"]').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('role')), 'menuitem', 'the first item has the focus');
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(page), 'export-conversation-markdown');
    await page.keyboard.press('Escape');
    await page.locator('[role="menu"]').waitFor({ state: 'detached' });
    await focusIs(page, 'export-button');

    // The import preview's Cancel gives the focus back to the Backup button too.
    await page.keyboard.press('Enter');
    const backupFile = syntheticBackup({ id: 'c-keys', title: 'Imported', count: 2 });
    await page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(backupFile)) });
    const preview = page.locator(tid('import-preview'));
    await preview.waitFor();
    await preview.locator(tid('import-cancel')).click();
    await preview.waitFor({ state: 'detached' });
    await focusIs(page, 'export-button');

    await page.keyboard.press('Control+k');
    await focusIs(page, 'conversation-search');
    await page.keyboard.type('mould');
    const hit = page.locator(tid('search-hit')).first();
    await hit.waitFor();
    await hit.locator('button').focus();
    await page.keyboard.press('Enter');
    await page.locator(tid('search-results')).waitFor({ state: 'detached' });
    await focusIs(page, 'composer-input');
  }));
