// End-to-end journeys through the interface (issue 6): the sidebar (create, rename, search, delete,
// order, counts), chat (streaming, stop, retry, edit-and-resend, keyboard, auto-scroll, DOM identity
// while streaming), markdown with a working copy button, and long conversations mounted as a window.
// Memory pane, inspector, settings and /clear: ui-memory.test.mjs. XSS corpus: xss.test.mjs.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openUiApp,
  waitForAppReady,
  chatTurn,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForAssistantCount,
  waitForPartialReply,
  conversationIds,
  conversationItem,
  currentConversationId,
  importBackup,
  syntheticBackup,
  assertNoPageProblems,
  withDiagnostics,
  tid,
  uiJourney,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const journey = (name, fn, options) => uiJourney(harness, name, fn, options);

async function itemText(page, id, testid) {
  return (await conversationItem(page, id).locator(tid(testid)).innerText()).trim();
}

test('sidebar: create, sort by activity with counts, inline rename, search, delete with confirmation', () =>
  journey('sidebar', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Tell me about bananas', 'Bananas are yellow.');
    const a = await currentConversationId(page);
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => location.hash === '');
    assert.equal(await messages(page).count(), 0, 'a new conversation starts empty');
    await chatTurn(page, agent, 'And cherries?', 'Cherries are red and grow on trees.');
    const b = await currentConversationId(page);
    assert.notEqual(b, a);
    assert.deepEqual(await conversationIds(page), [b, a], 'the most recent activity first');

    // More activity in A moves it to the top; the counts follow.
    await conversationItem(page, a).locator(tid('conversation-open')).click();
    await page.waitForFunction((a) => location.hash === `#/c/${a}`, a);
    await waitForAssistantCount(page, 1);
    await chatTurn(page, agent, 'Are they curved?', 'Yes, most bananas are curved.');
    await page.waitForFunction(() => document.querySelector('[data-testid="conversation-item"]')?.querySelector('[data-testid="conversation-count"]')?.getAttribute('data-count') === '4');
    assert.deepEqual(await conversationIds(page), [a, b]);
    assert.equal(await conversationItem(page, a).locator(tid('conversation-count')).getAttribute('data-count'), '4');
    assert.equal(await conversationItem(page, b).locator(tid('conversation-count')).getAttribute('data-count'), '2');
    assert.match(await itemText(page, a, 'conversation-count'), /4/);
    assert.match(await itemText(page, a, 'conversation-time'), /just now/);

    // Inline rename: Enter commits, Esc cancels.
    await conversationItem(page, a).locator(tid('rename-conversation')).click();
    const input = conversationItem(page, a).locator(tid('rename-input'));
    await input.waitFor({ state: 'visible' });
    assert.equal(await input.evaluate((el) => el === document.activeElement), true, 'the rename field has focus');
    await input.fill('Fruit notes');
    await input.press('Enter');
    await page.waitForFunction((a) => document.querySelector(`[data-testid="conversation-item"][data-conversation-id="${a}"] [data-testid="conversation-title"]`)?.textContent.trim() === 'Fruit notes', a);
    await conversationItem(page, a).locator(tid('rename-conversation')).click();
    await conversationItem(page, a).locator(tid('rename-input')).fill('Should not stick');
    await conversationItem(page, a).locator(tid('rename-input')).press('Escape');
    await conversationItem(page, a).locator(tid('rename-input')).waitFor({ state: 'detached' });
    assert.equal(await itemText(page, a, 'conversation-title'), 'Fruit notes', 'Esc cancels the rename');
    await page.reload();
    await waitForAppReady(page);
    await conversationItem(page, a).waitFor();
    assert.equal(await itemText(page, a, 'conversation-title'), 'Fruit notes', 'the rename persists');

    // Search: titles and message text; a hit opens the conversation at that message.
    const search = page.locator(tid('conversation-search'));
    await search.fill('fruit');
    const results = page.locator(tid('search-results'));
    await results.locator(tid('conversation-item', `[data-conversation-id="${a}"]`)).waitFor();
    assert.equal(await results.locator(tid('conversation-item', `[data-conversation-id="${b}"]`)).count(), 0);
    await search.fill('grow on trees');
    const hit = results.locator(tid('search-hit', `[data-conversation-id="${b}"]`));
    await hit.waitFor();
    assert.match(await hit.innerText(), /grow on trees/);
    const hitMessage = await hit.getAttribute('data-message-id');
    await hit.locator('button').click();
    await page.waitForFunction((b) => location.hash === `#/c/${b}`, b);
    const focused = page.locator(tid('message', `[data-message-id="${hitMessage}"]`));
    await page.waitForFunction((id) => document.querySelector(`[data-message-id="${id}"]`)?.getAttribute('data-focused') === 'true', hitMessage);
    assert.match(await messageText(focused), /grow on trees/);
    assert.equal(await search.inputValue(), '', 'opening a hit clears the search');
    await page.locator(tid('conversation-list')).waitFor();

    // Delete asks in the page; Keep keeps, Delete deletes (and it stays deleted after a reload).
    await conversationItem(page, b).locator(tid('delete-conversation')).click();
    await conversationItem(page, b).locator(tid('cancel-delete')).click();
    assert.deepEqual(await conversationIds(page), [a, b]);
    await conversationItem(page, b).locator(tid('delete-conversation')).click();
    await conversationItem(page, b).locator(tid('confirm-delete')).click();
    await conversationItem(page, b).waitFor({ state: 'detached' });
    assert.deepEqual(await conversationIds(page), [a]);
    assert.equal(await currentConversationId(page), null, 'the deleted conversation is closed');
    await page.reload();
    await waitForAppReady(page);
    await conversationItem(page, a).waitFor();
    assert.deepEqual(await conversationIds(page), [a]);
  }));

const STREAMED = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

test('chat: streaming keeps earlier nodes, stop keeps the partial reply, retry, edit-and-resend, keyboard', () =>
  journey('chat', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'First question', 'First answer.');
    const input = page.locator(tid('composer-input'));

    // Shift+Enter adds a line; Enter sends.
    await input.fill('line one');
    await input.press('Shift+Enter');
    await input.type('line two');
    assert.equal(await input.inputValue(), 'line one\nline two');
    assert.equal(await messages(page, 'user').count(), 1, 'Shift+Enter does not send');

    // Mark the mounted messages; streaming must not replace them.
    await page.evaluate(() => {
      window.__marked = [...document.querySelectorAll('[data-testid="message"]')];
    });
    agent.script({ text: STREAMED, delayMs: 40 });
    await input.press('Enter');
    await page.locator(tid('stop-button')).waitFor();
    const partial = await waitForPartialReply(page, STREAMED);
    assert.ok(STREAMED.startsWith(partial));
    await page.evaluate(() => {
      window.__streaming = document.querySelector('[data-testid="message"][data-role="assistant"][data-status="streaming"]');
    });
    await page.waitForFunction((n) => (window.__streaming.querySelector('[data-testid="message-content"]').innerText.trim().length > n), partial.length, { polling: 'raf' });
    const identity = await page.evaluate(() => {
      const now = [...document.querySelectorAll('[data-testid="message"]')];
      return {
        kept: window.__marked.every((el, i) => el.isConnected && now[i] === el),
        streamingKept: window.__streaming.isConnected && now.at(-1) === window.__streaming,
      };
    });
    assert.deepEqual(identity, { kept: true, streamingKept: true }, 'streaming re-renders only the growing message');
    assert.equal(await messageText(messages(page, 'user').last()), 'line one\nline two');

    // Esc stops: the partial reply is kept, marked interrupted, and retry is offered.
    await input.press('Escape');
    const kept = await waitForAssistant(page, { status: 'interrupted' });
    assert.ok(kept.length > 0 && STREAMED.startsWith(kept), `the partial reply is kept: ${kept}`);
    await page.locator(tid('retry-button')).waitFor();
    const chatsBefore = agent.chatRequests().length;
    agent.script('Second answer, retried.');
    await page.locator(tid('retry-button')).click();
    await page.waitForFunction(() => {
      const all = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')];
      return all.at(-1)?.getAttribute('data-status') === 'complete' && all.at(-1).innerText.includes('retried');
    });
    assert.equal(agent.chatRequests().length, chatsBefore + 1);
    assert.deepEqual(agent.chatRequests().at(-1).body.messages.at(-1), { role: 'user', content: 'line one\nline two' });

    // Stop with the button too.
    agent.script({ text: STREAMED, delayMs: 40 });
    await sendMessage(page, 'Third question');
    await waitForPartialReply(page, STREAMED);
    await page.locator(tid('stop-button')).click();
    await waitForAssistant(page, { status: 'interrupted' });
    await page.locator(tid('send-button')).waitFor();

    // Edit of the last user message: a new branch; the old question and its reply are a page away.
    await messages(page, 'user').last().locator(tid('edit-message')).click();
    const editor = messages(page, 'user').last().locator(tid('edit-message-input'));
    assert.equal(await editor.inputValue(), 'Third question');
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'edit-message-input');
    agent.script('Answer to the edited question.');
    await editor.fill('Third question, edited');
    await messages(page, 'user').last().locator(tid('save-edit')).click();
    await page.waitForFunction(() => {
      const all = [...document.querySelectorAll('[data-testid="message"]')];
      const last = all.at(-1);
      return last?.getAttribute('data-role') === 'assistant' && last.getAttribute('data-status') === 'complete' && last.innerText.includes('edited question');
    });
    const texts = await page.locator(tid('message-content')).evaluateAll((els) => els.map((e) => e.innerText.trim()));
    // Q1 A1 Q2 A2(interrupted, kept) A2(retried) Q3(edited) A3: the old Q3 and its reply are off the branch.
    assert.equal(texts.length, 7, `old reply replaced: ${JSON.stringify(texts)}`);
    assert.equal(await messages(page, 'assistant').nth(1).getAttribute('data-status'), 'interrupted', 'a stopped reply is kept');
    assert.equal(texts.at(-2), 'Third question, edited');
    assert.ok(!texts.some((t) => t === 'Third question'), 'the old text is gone');
    assert.deepEqual(agent.chatRequests().at(-1).body.messages.at(-1), { role: 'user', content: 'Third question, edited' });
    await page.reload();
    await waitForAppReady(page);
    await page.locator(tid('conversation-item')).first().locator(tid('conversation-open')).click();
    await waitForAssistantCount(page, 4);
    assert.equal(await messageText(messages(page, 'user').last()), 'Third question, edited');
  }));

test('drafts: what is typed right after a switch is kept, and a late save never lands in another conversation', () =>
  journey('drafts', async (page) => {
    const { agent } = harness;
    const composer = page.locator(tid('composer-input'));
    const value = () => composer.inputValue();
    const open = (id) => conversationItem(page, id).locator(tid('conversation-open')).click();
    // Two conversations (New stores nothing: each is created by its first message).
    await chatTurn(page, agent, 'Conversation B', 'Reply B.');
    const b = await currentConversationId(page);
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => location.hash === '');
    await chatTurn(page, agent, 'Conversation A', 'Reply A.');
    const a = await currentConversationId(page);
    await composer.fill('Draft for A');
    // From here on, reading a stored draft takes 600 ms, as on a busy machine: the handler of any
    // IndexedDB `get` of a `draft:` key is called late.
    await page.evaluate(() => {
      const get = IDBObjectStore.prototype.get;
      IDBObjectStore.prototype.get = function (key) {
        const req = get.call(this, key);
        if (typeof key === 'string' && key.startsWith('draft:')) {
          let handler = null;
          Object.defineProperty(req, 'onsuccess', { configurable: true, get: () => handler, set: (h) => { handler = h; } });
          req.addEventListener('success', (e) => setTimeout(() => {
            handler?.call(req, e);
            window.__draftReads = (window.__draftReads ?? 0) + 1;
          }, 600));
        }
        return req;
      };
    });
    const reads = () => page.evaluate(() => window.__draftReads ?? 0);
    /** Waits until the slowed draft read started by the last switch has been handled. */
    const readDone = async (before) => {
      await page.waitForFunction((n) => (window.__draftReads ?? 0) > n, before);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    };
    // The new chat, typed into at once: the late read of its (empty) draft must not wipe it.
    let before = await reads();
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => location.hash === '');
    assert.equal(await value(), '', "A's draft is not shown in the new chat");
    await composer.fill('Typed in the new chat at once');
    await readDone(before);
    assert.equal(await value(), 'Typed in the new chat at once');
    // Back to A: its draft comes back.
    await open(a);
    await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Draft for A');
    // Edit A and switch before the typing pause has saved it: A's text is saved as A's, and the
    // pending save does not write it into B while B's draft is still being read.
    await composer.fill('Draft for A, edited');
    before = await reads();
    await open(b);
    await readDone(before);
    // The typing pause (400 ms) has passed too: a save it started would have landed by now.
    await page.waitForTimeout(500);
    assert.equal(await value(), '', 'B has no draft: nothing of A landed there');
    // What is stored, after a reload (drafts read at normal speed again).
    await page.reload();
    await waitForAppReady(page);
    await open(a);
    await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Draft for A, edited');
    await open(b);
    await page.waitForTimeout(300);
    assert.equal(await value(), '');
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Typed in the new chat at once');
  }));

test('chat: auto-scroll follows the stream until the user scrolls up', () =>
  journey('autoscroll', async (page) => {
    const { agent } = harness;
    const tall = Array.from({ length: 40 }, (_, i) => `Line ${i} of a tall reply.`).join('\n\n');
    await chatTurn(page, agent, 'Something tall', tall);
    const list = page.locator(tid('message-list'));
    const gap = () => list.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
    // The app scrolls on the animation frame after the final render: wait for it (bounded), then check.
    await page
      .waitForFunction(() => {
        const el = document.querySelector('[data-testid="message-list"]');
        return el.scrollHeight - el.scrollTop - el.clientHeight < 5;
      }, null, { polling: 'raf', timeout: 2000 })
      .catch(() => {});
    assert.ok((await gap()) < 5, 'at the bottom after a reply');
    const long = Array.from({ length: 60 }, (_, i) => `Streamed line ${i}.`).join('\n\n');
    agent.script({ text: long, chunkSize: 24, delayMs: 40 });
    await sendMessage(page, 'Something taller');
    await waitForPartialReply(page, long);
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="message-list"]');
      const c = [...document.querySelectorAll('[data-testid="message-content"]')].at(-1).innerText;
      return c.includes('Streamed line 6.') && el.scrollHeight - el.scrollTop - el.clientHeight < 5;
    }, null, { polling: 'raf' });
    // The user scrolls up: the stream must not pull the view back down.
    const box = await list.boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -600);
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="message-list"]');
      return el.scrollHeight - el.scrollTop - el.clientHeight > 300;
    });
    const top = await list.evaluate((el) => el.scrollTop);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message-content"]')].at(-1).innerText.includes('Streamed line 20.'));
    assert.ok(Math.abs((await list.evaluate((el) => el.scrollTop)) - top) < 5, 'the view stayed where the user put it');
    await page.locator(tid('stop-button')).click();
    await waitForAssistant(page, { status: 'interrupted' });
  }));

const MARKDOWN = [
  'First paragraph with **bold** text.',
  '',
  'Second paragraph.',
  '',
  '- apple',
  '- pear',
  '- plum',
  '',
  '1. one',
  '2. two',
  '',
  '| Name | Qty |',
  '| --- | --- |',
  '| Apple | 3 |',
  '| Pear | 5 |',
  '',
  '```rust',
  'fn main() {',
  '    println!("hi <b>");',
  '}',
  '```',
  '',
  'See [the docs](https://example.com/docs) or <https://example.org>.',
].join('\n');

test('markdown: paragraphs, lists, a table, a code block with a working copy button, safe links', () =>
  journey('markdown', async (page) => {
    await chatTurn(page, harness.agent, 'Show me markdown', { text: MARKDOWN, chunkSize: 7, delayMs: 5 });
    const content = messages(page, 'assistant').last().locator(tid('message-content'));
    const shape = await content.evaluate((el) => ({
      paragraphs: el.querySelectorAll(':scope > p').length,
      bullets: [...el.querySelectorAll('ul > li')].map((li) => li.textContent.trim()),
      numbered: [...el.querySelectorAll('ol > li')].map((li) => li.textContent.trim()),
      header: [...el.querySelectorAll('table thead th')].map((c) => c.textContent.trim()),
      cells: [...el.querySelectorAll('table tbody td')].map((c) => c.textContent.trim()),
      bold: el.querySelector('p strong')?.textContent,
      code: el.querySelector('pre code')?.textContent,
      codeLang: el.querySelector('pre code')?.className,
      links: [...el.querySelectorAll('a')].map((a) => ({ href: a.getAttribute('href'), rel: a.getAttribute('rel'), target: a.getAttribute('target'), text: a.textContent })),
    }));
    assert.equal(shape.paragraphs, 3);
    assert.deepEqual(shape.bullets, ['apple', 'pear', 'plum']);
    assert.deepEqual(shape.numbered, ['one', 'two']);
    assert.deepEqual(shape.header, ['Name', 'Qty']);
    assert.deepEqual(shape.cells, ['Apple', '3', 'Pear', '5']);
    assert.equal(shape.bold, 'bold');
    assert.equal(shape.code, 'fn main() {\n    println!("hi <b>");\n}\n');
    assert.match(shape.codeLang, /language-rust/);
    assert.deepEqual(shape.links, [
      { href: 'https://example.com/docs', rel: 'noopener noreferrer', target: '_blank', text: 'the docs' },
      { href: 'https://example.org', rel: 'noopener noreferrer', target: '_blank', text: 'https://example.org' },
    ]);
    await content.locator(tid('copy-code')).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="copy-code"]').textContent.includes('Copied'));
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shape.code);
  }, { permissions: ['clipboard-read', 'clipboard-write'] }));

test('long conversation: only a window is mounted, older pages load on scroll, a search hit loads back to its message', () =>
  journey('window', async (page) => {
    const count = 400;
    await importBackup(page, syntheticBackup({ id: 'c-long', title: 'A long one', count, text: (i) => (i === 7 ? 'The zanzibar word is here.' : `Message number ${i}.`) }));
    await conversationItem(page, 'c-long').locator(tid('conversation-open')).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="message"]').length > 0);
    const mounted = await messages(page).count();
    assert.ok(mounted >= 20 && mounted <= 120, `a window is mounted, not all ${count}: ${mounted}`);
    assert.equal(await messageText(messages(page).last()), `Message number ${count}.`);
    const list = page.locator(tid('message-list'));
    assert.ok((await list.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)) < 5, 'opens at the bottom');

    // Scroll to the top: an older page is mounted above, and the view keeps its place.
    const firstId = await messages(page).first().getAttribute('data-message-id');
    await list.evaluate((el) => { el.scrollTop = 0; });
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"]').length > n, mounted);
    const after = await messages(page).count();
    assert.ok(after <= 2 * mounted, `one more page: ${after}`);
    await page.waitForFunction((id) => {
      const list = document.querySelector('[data-testid="message-list"]');
      const el = document.querySelector(`[data-message-id="${id}"]`);
      const a = el.getBoundingClientRect();
      const b = list.getBoundingClientRect();
      return a.top >= b.top - 5 && a.top < b.bottom && list.scrollTop > 0;
    }, firstId);

    // Further up, pages below are unmounted: the DOM never holds more than a few pages, and the
    // latest messages come back on the way down.
    const cap = 240;
    const count400 = () => page.locator(`[data-message-id="c-long-m${count - 1}"]`).count();
    for (let i = 0; i < 8 && !(await page.locator(tid('load-newer')).isVisible()); i++) {
      const n = await messages(page).count();
      const top = await messages(page).first().getAttribute('data-message-id');
      await list.evaluate((el) => { el.scrollTop = 0; });
      await page.waitForFunction((top) => document.querySelector('[data-testid="message"]')?.dataset.messageId !== top, top);
      assert.ok((await messages(page).count()) <= cap, `at most ${cap} mounted after ${n}`);
    }
    await page.locator(tid('load-newer')).waitFor();
    assert.equal(await count400(), 0, 'the latest message was unmounted far up');
    for (let i = 0; i < 8 && (await count400()) === 0; i++) {
      const bottom = await messages(page).last().getAttribute('data-message-id');
      await list.evaluate((el) => { el.scrollTop = el.scrollHeight; });
      await page.waitForFunction((b) => [...document.querySelectorAll('[data-testid="message"]')].at(-1)?.dataset.messageId !== b, bottom);
      assert.ok((await messages(page).count()) <= cap, `at most ${cap} mounted on the way down`);
    }
    assert.equal(await count400(), 1, 'back down at the latest message');
    await page.locator(tid('load-newer')).waitFor({ state: 'hidden' });

    // A hit far above the window opens a window around it, not everything down to it.
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => !location.hash.endsWith('c-long'));
    await page.locator(tid('conversation-search')).fill('zanzibar');
    const hit = page.locator(tid('search-hit', '[data-conversation-id="c-long"]'));
    await hit.waitFor();
    await hit.locator('button').click();
    await page.waitForFunction(() => document.querySelector('[data-message-id="c-long-m7"]')?.getAttribute('data-focused') === 'true');
    const inView = await page.locator('[data-message-id="c-long-m7"]').evaluate((el) => {
      const a = el.getBoundingClientRect();
      const b = document.querySelector('[data-testid="message-list"]').getBoundingClientRect();
      return a.bottom > b.top && a.top < b.bottom;
    });
    assert.ok(inView, 'the hit is scrolled into view');
    assert.ok((await messages(page).count()) <= 61, `a window around the hit: ${await messages(page).count()}`);
    await page.locator(tid('load-newer')).waitFor();
  }));
