// End-to-end journeys of the UX pass (issue 17): the phone layout (the list as a drawer, at
// 390×844, with screenshots), message actions (copy, stop is not an error, the model on each reply,
// edit as state), code blocks (highlighted once finished, as text; Copy copies the raw code), search
// rows (one per text, the term highlighted, whole words), the backup menu
// (closes on Esc, outside and after a choice; file names; an import error without Settings), the memory
// pane (graph legend, edge labels, a node click opens its entity, "Recent" per conversation, "Next
// request" after a memory update), and the chrome (skip link, settings close button, explanations and
// plurals, theme toggle, reopening the last conversation).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryReplyText } from './agent-server.mjs';
import {
  startHarness,
  waitForAppReady,
  chatTurn,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForAssistantCount,
  waitForPartialReply,
  currentConversationId,
  openSettings,
  saveSettings,
  tid,
  showInspector,
  uiJourney,
  openAdvanced,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const journey = (name, fn, options) => uiJourney(harness, name, fn, options);

/** Where the phone screenshots go (the report describes them). */
const shot = (name) => join(process.env.MEMOIRE_SHOTS ?? tmpdir(), `memoire-${name}.png`);

async function box(locator) {
  const b = await locator.boundingBox();
  assert.ok(b, 'the element is laid out');
  return b;
}

test('phone (390×844): the list is a drawer (menu button, tap outside, Esc), the title keeps its room, the composer stays in view', () =>
  journey('phone', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Planning the grand opening of the sourdough bakery in Paris', 'Let us plan it.');
    const id = await currentConversationId(page);
    await page.setViewportSize({ width: 390, height: 844 });

    const sidebar = page.locator(tid('sidebar'));
    const toggle = page.locator(tid('sidebar-toggle'));
    await sidebar.waitFor({ state: 'hidden' });
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    const title = await box(page.locator('.chat-title'));
    assert.ok(title.width >= 150, `the title keeps its room: ${title.width}px`);
    const composer = await box(page.locator(tid('composer-input')));
    assert.ok(composer.y + composer.height <= 844, 'the composer is on screen');
    const list = await box(page.locator(tid('message-list')));
    assert.ok(list.height >= 500, `the chat has the screen: ${list.height}px`);
    await page.screenshot({ path: shot('phone-chat') });

    await toggle.click();
    await sidebar.waitFor({ state: 'visible' });
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    // Once slid in, the drawer covers part of the screen, from its left edge.
    await page.waitForFunction(() => document.querySelector('[data-testid="sidebar"]').getBoundingClientRect().left >= 0);
    const drawer = await box(sidebar);
    assert.ok(drawer.width < 390 && drawer.width >= 280, `the drawer's width: ${drawer.width}px`);
    await page.screenshot({ path: shot('phone-drawer') });

    // A tap outside closes it; so does Esc; opening a conversation does too.
    await page.mouse.click(380, 420);
    await sidebar.waitFor({ state: 'hidden' });
    await toggle.click();
    await sidebar.waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await sidebar.waitFor({ state: 'hidden' });
    await toggle.click();
    await page.locator(tid('new-conversation')).click();
    await sidebar.waitFor({ state: 'hidden' });
    await page.waitForFunction(() => location.hash === '');
    await toggle.click();
    await page.locator(tid('conversation-item', `[data-conversation-id="${id}"]`)).locator(tid('conversation-open')).click();
    await sidebar.waitFor({ state: 'hidden' });
    await page.waitForFunction((id) => location.hash === `#/c/${id}`, id);

    // Chatting works on the phone.
    await chatTurn(page, agent, 'And the flour?', 'Order it on Friday.');
    assert.equal(await messages(page).count(), 4);
  }));

test('message actions: copy a reply, the model on each reply, a stop is not an error, edit is state with a way out', () =>
  journey('message-actions', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'What is a sourdough starter?', 'Flour and water, fermented.');
    const reply = messages(page, 'assistant').last();
    assert.equal((await reply.locator(tid('message-model')).innerText()).trim(), 'test-model');
    await reply.locator(tid('copy-message')).click();
    await reply.locator(tid('copy-message')).filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'Flour and water, fermented.');
    assert.equal(await messages(page, 'user').last().locator(tid('copy-message')).count(), 1, 'the question can be copied too');
    assert.equal(await reply.locator(tid('message-tokens')).count(), 0, 'no count when the endpoint reported none');

    // Stop: the reply is kept and says "stopped"; no error anywhere.
    const long = 'A starter needs feeding every day. '.repeat(20).trim();
    agent.script({ text: long, delayMs: 80 });
    await sendMessage(page, 'How do I keep it?');
    await waitForPartialReply(page, long);
    await page.locator(tid('stop-button')).click();
    await waitForAssistantCount(page, 2, { status: 'interrupted' });
    const stopped = messages(page, 'assistant').last();
    assert.equal((await stopped.locator('.status').innerText()).trim(), 'stopped');
    assert.equal(await stopped.locator('.message-error').count(), 0, 'no error text on a stopped reply');
    assert.equal(await page.locator(tid('error-banner')).count(), 0, 'no error banner');

    // Edit: the message becomes its own editor where it is; Cancel leaves it; Enter there sends the
    // new question; the composer is not involved.
    const input = page.locator(tid('composer-input'));
    const question = messages(page, 'user').last();
    await question.locator(tid('edit-message')).click();
    const editor = question.locator(tid('edit-message-input'));
    assert.equal(await editor.inputValue(), 'How do I keep it?');
    assert.equal(await input.inputValue(), '', 'the composer is left alone');
    await question.locator(tid('cancel-edit')).click();
    await question.locator(tid('message-editor')).waitFor({ state: 'detached' });
    assert.equal(await messageText(question), 'How do I keep it?');
    await question.locator(tid('edit-message')).click();
    await editor.fill('How do I keep it alive?');
    agent.script({ text: 'Feed it daily.' });
    await editor.press('Enter');
    await waitForAssistantCount(page, 2);
    assert.equal(await waitForAssistant(page), 'Feed it daily.');
    assert.equal(await messageText(messages(page, 'user').last()), 'How do I keep it alive?');
    assert.equal(await page.locator(tid('message-editor')).count(), 0);

    // A bare URL in a reply is a safe link; a code block names its language above the code.
    await chatTurn(page, agent, 'Where are the docs?', { text: 'See https://example.org/docs. Then:\n\n```rust\nfn main() {}\n```\n', honourUsage: true, usage: { input: 50, output: 7 } });
    // The endpoint reported its token count: the reply shows it.
    assert.equal((await messages(page, 'assistant').last().locator(tid('message-tokens')).innerText()).trim(), '7 tokens');
    const content = messages(page, 'assistant').last().locator(tid('message-content'));
    const link = content.locator('a');
    assert.deepEqual(await link.evaluate((a) => [a.getAttribute('href'), a.rel, a.target, a.textContent]),
      ['https://example.org/docs', 'noopener noreferrer', '_blank', 'https://example.org/docs']);
    assert.equal((await content.locator('.code-lang').innerText()).trim(), 'rust');
    const code = await box(content.locator('pre code'));
    const copy = await box(content.locator(tid('copy-code')));
    assert.ok(copy.y + copy.height <= code.y + 1, 'the Copy button sits above the code, not over it');
    await page.screenshot({ path: shot('message-actions') });
  }, { permissions: ['clipboard-read', 'clipboard-write'] }));

test('code blocks: a finished reply is highlighted as text (never while it streams), an unknown language stays plain, Copy copies the raw code, a <script> stays text', () =>
  journey('code-highlight', async (page) => {
    const { agent } = harness;
    const rust = 'fn main() {\n    let x: u32 = 42; // the answer\n    println!("{x} <b>");\n}';
    const other = 'some words <i>here</i> 42 "quoted"';
    const html = '<script>window.xssHighlight=1</script>';
    const text = `Rust:\n\n\`\`\`rust\n${rust}\n\`\`\`\n\nOther:\n\n\`\`\`brainfuck\n${other}\n\`\`\`\n\nHTML:\n\n\`\`\`html\n${html}\n\`\`\`\n`;
    agent.script({ text, chunkSize: 6, delayMs: 40 });
    await sendMessage(page, 'Show me some code');
    // Seen in one frame while the reply streams, its code block shown: nothing highlighted yet.
    const during = await page.waitForFunction(() => {
      const el = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1);
      if (!el || el.getAttribute('data-status') !== 'streaming' || !el.querySelector('code.language-rust')) return null;
      return { spans: el.querySelectorAll('[class^="hl-"]').length, marked: el.querySelectorAll('code[data-hl]').length };
    }, null, { polling: 'raf' });
    assert.deepEqual(await during.jsonValue(), { spans: 0, marked: 0 }, 'nothing is highlighted while the reply streams');
    await waitForAssistantCount(page, 1);
    const reply = messages(page, 'assistant').last();
    const block = (lang) => reply.locator(`pre > code.language-${lang}`);
    await reply.locator('code[data-hl]').nth(2).waitFor({ state: 'attached' });

    // Rust: the spans are text in span.hl-* elements, and the text is the code, exactly.
    const rustBlock = block('rust');
    assert.equal(await rustBlock.getAttribute('data-hl'), 'done');
    const spans = await rustBlock.evaluate((c) => [...c.querySelectorAll('*')].map((e) => [e.tagName, e.className, e.textContent]));
    assert.ok(spans.every(([tag, cls]) => tag === 'SPAN' && /^hl-[a-z]+$/.test(cls)), `only spans: ${JSON.stringify(spans)}`);
    for (const want of [['hl-kw', 'fn'], ['hl-fn', 'main'], ['hl-kw', 'let'], ['hl-ty', 'u32'], ['hl-num', '42'], ['hl-com', '// the answer'], ['hl-fn', 'println!'], ['hl-str', '"{x} <b>"']]) {
      assert.ok(spans.some(([, cls, t]) => cls === want[0] && t === want[1]), `${want} in ${JSON.stringify(spans)}`);
    }
    // The block's text is the fence's content (CommonMark keeps its last newline).
    assert.equal(await rustBlock.evaluate((c) => c.textContent), `${rust}\n`);
    assert.equal((await reply.locator('.code-lang').first().innerText()).trim(), 'rust', 'the language label stays');
    const colours = await rustBlock.evaluate((c) => {
      const kw = c.querySelector('.hl-kw');
      const read = () => [getComputedStyle(kw).color, getComputedStyle(c).color];
      const light = read();
      document.documentElement.dataset.theme = 'dark';
      const dark = read();
      delete document.documentElement.dataset.theme;
      return { light, dark };
    });
    assert.notEqual(colours.light[0], colours.light[1], 'a keyword has its colour (light)');
    assert.notEqual(colours.dark[0], colours.dark[1], 'a keyword has its colour (dark)');
    assert.notEqual(colours.light[0], colours.dark[0], 'each theme has its own colours');

    // An unknown language: looked at, left as it was.
    assert.equal(await block('brainfuck').getAttribute('data-hl'), 'none');
    assert.equal(await block('brainfuck').evaluate((c) => [c.childElementCount, c.textContent].join('|')), `0|${other}\n`);

    // HTML: the <script> is highlighted text, never an element, and never runs.
    const htmlBlock = block('html');
    assert.equal(await htmlBlock.evaluate((c) => c.textContent), `${html}\n`);
    assert.ok(await htmlBlock.locator('span.hl-tag').count() > 0);
    assert.equal(await reply.locator('script').count(), 0);
    assert.equal(await page.evaluate(() => window.xssHighlight), undefined);

    // Copy copies the raw code.
    await reply.locator(tid('copy-code')).first().click();
    await reply.locator(tid('copy-code')).first().filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), `${rust}\n`);
    await page.screenshot({ path: shot('code-highlight') });
  }, { permissions: ['clipboard-read', 'clipboard-write'] }));

test('search: a question and its reply with the same words are one row, the term is highlighted, snippets end at words, each row says who wrote it', () =>
  journey('search-rows', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Tell me about Zanzibar', 'Tell me about Zanzibar');
    const long = 'Spices were traded for centuries across the ocean before anyone in Zanzibar wrote down the recipes that the harbour cooks still use every single morning today.';
    await chatTurn(page, agent, 'And the spices?', long);
    await page.locator(tid('conversation-search')).fill('zanzibar');
    const hits = page.locator(tid('search-hit'));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="search-hit"]').length === 2);
    const rows = await hits.locator(tid('search-snippet')).allInnerTexts();
    assert.equal(new Set(rows).size, rows.length, `no two identical rows: ${JSON.stringify(rows)}`);
    for (const mark of await hits.locator('mark').allInnerTexts()) assert.equal(mark.toLowerCase(), 'zanzibar');
    assert.equal(await hits.locator('mark').count(), 2);
    const cut = rows.find((r) => r.startsWith('…'));
    assert.ok(cut, `the long reply's snippet is cut: ${JSON.stringify(rows)}`);
    const words = cut.replace(/^…\s*/, '').replace(/\s*…$/, '').split(/\s+/);
    assert.ok(long.includes(` ${words[0]} `), `it starts at a whole word: ${words[0]}`);
    assert.ok(long.includes(` ${words.at(-1)} `), `it ends at a whole word: ${words.at(-1)}`);

    // Each row says who wrote the text: the question is "You", the reply "Agent".
    // The long reply matched "zanzibar" too: its row shows the new query's words, highlighted.
    await page.locator(tid('conversation-search')).fill('spices');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="search-hit"]')];
      return rows.length === 2 && rows.every((r) => r.querySelector('mark')?.textContent.toLowerCase() === 'spices');
    });
    const rows2 = await hits.evaluateAll((els) => els.map((e) => [
      e.querySelector('[data-testid="search-hit-role"]')?.textContent.trim(),
      e.querySelector('[data-testid="search-snippet"]').textContent.trim(),
    ]));
    assert.deepEqual(rows2.map(([role, text]) => `${role}: ${text === 'And the spices?' ? 'question' : 'reply'}`).sort(), ['Agent: reply', 'You: question'], JSON.stringify(rows2));

    // Asking "Delete for good?" puts the question on a line of its own: the title keeps its width.
    await page.locator(tid('conversation-search')).fill('');
    const item = page.locator(tid('conversation-list')).locator(tid('conversation-item')).first();
    const before = (await box(item.locator(tid('conversation-title')))).width;
    await item.locator(tid('delete-conversation')).click();
    await item.locator(tid('confirm-delete')).waitFor();
    const during = (await box(item.locator(tid('conversation-title')))).width;
    assert.ok(during >= before - 1, `the title is not squeezed: ${before}px -> ${during}px`);
    await page.screenshot({ path: shot('delete-confirm') });
    await item.locator(tid('cancel-delete')).click();
  }));

test('backup menu: Esc, a click outside and a choice close it; files are named after the conversation and the day; an import error offers no Settings', () =>
  journey('backup-menu', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Trip to Zanzibar: plans', 'Sounds lovely.');
    const button = page.locator(tid('export-button'));
    const menu = page.locator('.export .menu');
    await button.click();
    await menu.waitFor();
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    await button.click();
    await menu.waitFor();
    await page.locator(tid('message-list')).click({ position: { x: 20, y: 20 } });
    await menu.waitFor({ state: 'detached' });

    await button.click();
    const [md] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-conversation-markdown')).click()]);
    assert.match(md.suggestedFilename(), /^memoire-trip-to-zanzibar-plans-\d{4}-\d{2}-\d{2}\.md$/);
    await menu.waitFor({ state: 'detached' });
    await button.click();
    const [all] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-all-json')).click()]);
    assert.match(all.suggestedFilename(), /^memoire-backup-\d{4}-\d{2}-\d{2}\.json$/);

    await button.click();
    await page.locator(tid('import-input')).setInputFiles({ name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{ not json') });
    await menu.waitFor({ state: 'detached' });
    const banner = page.locator(tid('error-banner'));
    await banner.waitFor();
    assert.equal(await banner.getByRole('button', { name: 'Settings' }).count(), 0, 'Settings cannot fix a broken file');
  }));

const ENTITIES = [
  { id: 'alice', type: 'person', name: 'Alice', description: 'A baker.', properties: {},
    relationships: [{ targetId: 'paris', relationship: 'lives in', strength: 0.9 }, { targetId: 'bakery', relationship: 'runs', strength: 0.6 }] },
  { id: 'paris', type: 'place', name: 'Paris', description: 'Capital of France.', properties: {}, relationships: [] },
  { id: 'bakery', type: 'concept', name: 'Sourdough bakery with a very long name indeed', description: 'The shop.', properties: {}, relationships: [] },
];

test('memory pane: graph legend and edge labels, nothing cut at the edges, a node click opens its entity; "Recent" honours the conversation\'s N; "Next request" follows a memory update', () =>
  journey('memory-graph', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Alice runs a bakery in Paris.', 'Nice: Alice runs the Sourdough bakery with a very long name indeed, and Alice lives in Paris.');
    await showInspector(page);
    await page.waitForFunction(() => document.querySelector('[data-testid="inspector-section"][data-section="history"]'));
    assert.equal(await page.locator(tid('inspector-section', '[data-section="summary"]')).count(), 0, 'no summary yet');

    agent.scriptMemory({ text: memoryReplyText({ summary: 'Alice runs a bakery in Paris.', entities: ENTITIES }) });
    await page.locator(tid('update-memory')).click();
    await page.locator(tid('entity-graph')).waitFor();
    // The inspector shows the summary it will now send, without another message.
    await page.locator(tid('inspector-section', '[data-section="summary"]')).waitFor();

    const graph = page.locator(tid('entity-graph'));
    assert.deepEqual(await page.locator(tid('graph-legend')).locator('li').allInnerTexts(), ['People', 'Places', 'Concepts']);
    assert.deepEqual((await graph.locator(tid('graph-edge-label')).allTextContents()).sort(), ['lives in', 'runs']);
    const inside = await graph.evaluate((svg) => {
      const v = svg.viewBox.baseVal;
      return [...svg.querySelectorAll('text')].every((t) => {
        const b = t.getBBox();
        return b.x >= v.x && b.x + b.width <= v.x + v.width;
      });
    });
    assert.ok(inside, 'every label is inside the drawing');

    const paris = graph.locator(tid('graph-node')).filter({ hasText: 'Paris' });
    const parisId = await paris.getAttribute('data-entity-id');
    await paris.click();
    const card = page.locator(tid('entity-node', `[data-entity-id="${parisId}"]`));
    await page.waitForFunction((id) => document.querySelector(`[data-testid="entity-node"][data-entity-id="${id}"]`)?.classList.contains('selected'), parisId);
    assert.ok(await card.isVisible());
    const pane = await box(page.locator(tid('memory-pane')));
    const cardBox = await box(card);
    assert.ok(cardBox.y >= pane.y - 1 && cardBox.y < pane.y + pane.height, 'the entity is scrolled into view');
    await graph.scrollIntoViewIfNeeded();
    await graph.screenshot({ path: shot('graph') });

    // This conversation sends only its last message word for word: "Recent" shows one.
    assert.equal(await page.locator(tid('recent-message')).count(), 2);
    await openSettings(page);
    await page.locator(tid('settings-scope-conversation')).check();
    await page.locator(tid('settings-override-recent-count')).fill('1');
    await saveSettings(page);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="recent-message"]').length === 1);
  }));

test('chrome: skip link to the composer, settings close button, an explanation under each setting, right plurals, theme toggle, the app reopens the last conversation', () =>
  journey('chrome', async (page) => {
    const { agent, site } = harness;
    await page.reload();
    await waitForAppReady(page);
    // The first screen's composer has the focus from the start (index.html), and keeps it through the
    // takeover; from the top of the page, the first Tab reaches the skip link.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'composer-input');
    await page.evaluate(() => {
      document.body.tabIndex = -1;
      document.body.focus();
      document.body.removeAttribute('tabindex');
    });
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'skip-to-composer');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'composer-input');

    await openSettings(page);
    const dialog = page.locator(tid('settings-dialog'));
    await openAdvanced(page);
    for (const field of ['settings-endpoint-url', 'settings-model', 'settings-system-prompt', 'settings-recent-count', 'settings-summary-frequency', 'settings-context-tokens', 'settings-reply-reserve', 'settings-history-format']) {
      const hint = await dialog.locator(`label:has([data-testid="${field}"]) .hint`).innerText();
      assert.ok(hint.trim().length > 10, `${field} is explained`);
    }
    await page.locator(tid('settings-test')).click();
    await page.locator(tid('settings-test-status')).filter({ hasText: 'Connected: 1 model available.' }).waitFor();
    // Save stays in view at the top of the dialog's scroll and at its bottom.
    const save = page.locator(tid('settings-save'));
    const within = async () => {
      const d = await box(dialog);
      const s = await box(save);
      return s.y >= d.y && s.y + s.height <= d.y + d.height + 1;
    };
    await dialog.evaluate((d) => { d.scrollTop = 0; });
    assert.ok(await within(), 'Save is in view at the top');
    await page.locator(tid('settings-close')).click();
    await dialog.waitFor({ state: 'detached' });

    // Theme: auto → light → dark, kept across a reload.
    const theme = page.locator(tid('theme-toggle'));
    await theme.click();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
    await theme.click();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(22, 24, 29)');

    // Opening the app's plain address again shows the conversation that was open.
    await chatTurn(page, agent, 'Remember me?', 'Of course.');
    const id = await currentConversationId(page);
    assert.match(await page.locator(tid('conversation-count')).first().innerText(), /^2 msgs$/);
    const configStatus = [];
    page.on('response', (r) => { if (/\/config\.json(\?|$)/.test(r.url())) configStatus.push(r.status()); });
    await page.goto(site.url);
    await waitForAppReady(page);
    await page.waitForFunction((id) => location.hash === `#/c/${id}`, id);
    await waitForAssistantCount(page, 1);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    assert.ok(configStatus.length > 0 && configStatus.every((s) => s === 200 || s === 304), `config.json is found, no 404: ${configStatus}`);
  }));
