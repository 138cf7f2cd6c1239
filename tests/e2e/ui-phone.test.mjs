// A phone that fits (issue 30 item 5), at 390×844: the chat header is one row (what does not fit is
// an icon with its name for screen readers), each message action is a 44×44 px target with an
// accessible name, and the conversation drawer closes on any choice (the conversation already open
// included) and never covers the chat once a message is sent; a row's memory badge says what it
// means on a tap.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  chatTurn,
  messages,
  waitForAssistantCount,
  currentConversationId,
  tid,
  uiJourney,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const PHONE = { width: 390, height: 844 };
/** A journey on the phone (the app is set up at 1280 wide, where Settings is in view, then narrowed). */
const journey = (name, fn) => uiJourney(harness, name, async (page, ctx) => {
  await page.setViewportSize(PHONE);
  await fn(page, ctx);
});

async function box(locator) {
  const b = await locator.boundingBox();
  assert.ok(b, 'the element is laid out');
  return b;
}

test('phone: the header is one row, its controls named; message actions are 44×44 px targets with names', () =>
  journey('phone-fits', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Here is a long question about the grand opening of the sourdough bakery in Paris', 'Let us plan it.');
    const head = await box(page.locator('.chat-head'));
    // One row: no room for a second row of 40 px controls (it was 86 px with the picker below).
    assert.ok(head.height < 64, `one row: the header is ${head.height}px tall`);
    const titleBox = await box(page.locator('.chat-title'));
    const middle = (b) => b.y + b.height / 2;
    for (const id of ['sidebar-toggle', 'model-picker', 'export-button', 'memory-toggle']) {
      const b = await box(page.locator(tid(id)));
      assert.ok(b.y >= head.y && b.y + b.height <= head.y + head.height, `${id} is inside the header`);
      assert.ok(Math.abs(middle(b) - middle(titleBox)) <= 4, `${id} is on the title's row`);
      assert.ok(b.x + b.width <= PHONE.width, `${id} is on screen`);
      const name = await page.locator(tid(id)).evaluate((e) => e.getAttribute('aria-label') ?? e.textContent.trim());
      assert.ok(name.length > 1, `${id} has a name: ${name}`);
    }
    assert.ok(titleBox.width >= 120, `the title keeps its room: ${titleBox.width}px`);

    await page.waitForFunction(() => document.querySelectorAll('[data-testid="delete-message"]').length === 2);
    const targets = await page.locator('[data-testid="message"] .message-actions button').evaluateAll((bs) => bs.map((b) => {
      const r = b.getBoundingClientRect();
      return { id: b.getAttribute('data-testid'), w: r.width, h: r.height, name: b.getAttribute('aria-label') };
    }));
    assert.ok(targets.length >= 5, `the actions: ${JSON.stringify(targets)}`);
    for (const t of targets) {
      assert.ok(t.w >= 44 && t.h >= 44, `${t.id} is ${t.w}×${t.h}`);
      assert.ok(t.name && t.name.length > 3, `${t.id} has a name for screen readers`);
    }
  }));

test('phone: the drawer closes on choosing the conversation already open, and on sending a message', () =>
  journey('phone-drawer', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Planning the bakery', 'Let us plan it.');
    const id = await currentConversationId(page);
    const sidebar = page.locator(tid('sidebar'));
    const toggle = page.locator(tid('sidebar-toggle'));

    await toggle.click();
    await sidebar.waitFor({ state: 'visible' });
    await page.locator(tid('conversation-item', `[data-conversation-id="${id}"]`)).locator(tid('conversation-open')).click();
    await sidebar.waitFor({ state: 'hidden' });
    assert.equal(await currentConversationId(page), id);

    // A message sent while the drawer is open (the keyboard reached the composer) uncovers the chat.
    await toggle.click();
    await sidebar.waitFor({ state: 'visible' });
    agent.script('Order flour on Friday.');
    await page.locator(tid('composer-input')).evaluate((e) => e.focus());
    await page.keyboard.type('And the flour?');
    await page.keyboard.press('Enter');
    await sidebar.waitFor({ state: 'hidden' });
    await waitForAssistantCount(page, 2);
    assert.equal(await messages(page).count(), 4);
  }));

test('phone: a sidebar row\'s memory badge ("new", "memory sent") says what it means on a tap, in the drawer; the rest of the row still opens the conversation', () =>
  journey('phone-badge', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Planning the bakery', 'Let us plan it.');
    const first = await currentConversationId(page);
    const sidebar = page.locator(tid('sidebar'));
    await page.locator(tid('sidebar-toggle')).click();
    await page.locator(tid('new-conversation')).click();
    await page.locator(tid('message')).first().waitFor({ state: 'detached' });
    await chatTurn(page, agent, 'Planning the garden', 'Tomatoes first.');
    await page.locator(tid('sidebar-toggle')).click();
    await sidebar.waitFor({ state: 'visible' });
    const row = page.locator(tid('conversation-item', `[data-conversation-id="${first}"]`));
    const info = row.locator(tid('conversation-badge-info'));
    const badge = info.locator(tid('conversation-badge'));
    assert.ok(['new', 'memory sent'].includes((await badge.innerText()).trim()), await badge.innerText());
    assert.equal(await badge.getAttribute('title'), null, 'no tooltip-only explanation');
    assert.equal(await row.locator(tid('conversation-open')).locator(tid('conversation-badge-info')).count(), 0, 'not a button inside the row\'s button');

    // A tap shows the words inside the drawer, and opens nothing.
    await info.click();
    const explained = row.locator(tid('conversation-badge-explained'));
    await explained.waitFor();
    assert.match(await explained.innerText(), /Memoire sends|Nothing to carry over/);
    assert.equal(await info.getAttribute('aria-expanded'), 'true');
    const [s, e] = [await box(sidebar), await box(explained)];
    assert.ok(e.x >= s.x && e.x + e.width <= s.x + s.width + 0.5, `inside the drawer: ${JSON.stringify(e)} in ${JSON.stringify(s)}`);
    assert.equal(await sidebar.isVisible(), true, 'the drawer stays open');
    assert.notEqual(await currentConversationId(page), first, 'the conversation was not opened');
    // A second tap closes it; a tap on the row's time opens the conversation and closes the drawer.
    await info.click();
    await explained.waitFor({ state: 'detached' });
    const t = await box(row.locator(tid('conversation-time')));
    await page.mouse.click(t.x + t.width / 2, t.y + t.height / 2);
    await sidebar.waitFor({ state: 'hidden' });
    assert.equal(await currentConversationId(page), first);
  }));
