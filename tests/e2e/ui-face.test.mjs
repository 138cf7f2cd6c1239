// End-to-end journeys of issue 30, items 1 to 3: an error that fits (its first line inside the
// banner and Dismiss on screen at 1440×900 and 390×844, the fix behind "How to fix", one Retry),
// a failed turn shown as one failed message that Retry replaces (one question in the chat and in
// the request, also when a new message is typed instead), the memory panel closed and still closed
// after a reload and leading with what is remembered (the facts about the user once there are any),
// and search highlighting the whole query typed key by key.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startHarness,
  waitForAppReady,
  chatTurn,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForAssistantCount,
  configureEndpoint,
  endpointBase,
  tid,
  openUiApp,
  withDiagnostics,
  assertNoPageProblems,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** A fresh app (fresh database) on the local agent; the browser's own logs of failed requests are
 * expected here (the journeys make requests fail on purpose). */
async function journey(name, fn) {
  harness.agent.reset();
  const ctx = await openUiApp(harness);
  try {
    await withDiagnostics(ctx.page, ctx.issues, name, () => fn(ctx.page, ctx));
    assertNoPageProblems(ctx.issues, { allowConsole: BROWSER_NETWORK_NOISE });
  } finally {
    await ctx.context.close();
  }
}

/** Where the screenshots go (the report describes them). */
const shot = (name) => join(process.env.MEMOIRE_SHOTS ?? tmpdir(), `memoire-${name}.png`);

async function box(locator) {
  const b = await locator.boundingBox();
  assert.ok(b, 'the element is laid out');
  return b;
}

/** The banner's first line lies inside the banner's visible box, and Dismiss inside the window. */
async function checkBannerFits(page, width, height) {
  await page.setViewportSize({ width, height });
  const banner = page.locator(tid('error-banner'));
  const line = banner.locator('.text').first();
  await line.waitFor();
  await page.waitForTimeout(100);
  const [b, l, d] = [await box(banner), await box(line), await box(banner.getByRole('button', { name: 'Dismiss' }))];
  const where = `at ${width}: banner ${JSON.stringify(b)}, line ${JSON.stringify(l)}, dismiss ${JSON.stringify(d)}`;
  assert.ok(l.y >= b.y - 0.5 && l.y + l.height <= b.y + b.height + 0.5, `the first line is inside the banner ${where}`);
  assert.ok(l.x >= b.x - 0.5 && l.x + l.width <= b.x + b.width + 0.5, `the first line is not cut at the sides ${where}`);
  assert.ok(d.x >= 0 && d.x + d.width <= width && d.y >= 0 && d.y + d.height <= height, `Dismiss is on screen ${where}`);
  const scrolled = await banner.evaluate((e) => e.scrollTop);
  assert.equal(scrolled, 0, 'nothing of the banner is scrolled away');
  await page.screenshot({ path: shot(`error-banner-${width}`) });
}

test('an unreachable server: one plain line that fits at 1440 and 390 wide, the fix behind "How to fix", one Retry, no empty failed bubble with Copy', () =>
  journey('banner-fits', async (page) => {
    await configureEndpoint(page, { url: 'http://127.0.0.1:9/v1', protocol: 'openai-chat', model: 'test-model' });
    await sendMessage(page, 'Are you there?');
    const banner = page.locator(tid('error-banner'));
    await banner.waitFor();
    for (const [w, h] of [[1440, 900], [390, 844]]) await checkBannerFits(page, w, h);
    await page.setViewportSize({ width: 1440, height: 900 });
    assert.equal((await banner.locator(tid('error-line')).innerText()).trim(), "Can't reach the server at 127.0.0.1:9. Is it running?");
    const said = await banner.innerText();
    assert.ok(!said.includes('OLLAMA_ORIGINS') && !said.includes('CORS'), `the jargon waits behind "How to fix": ${said}`);
    await banner.getByText('How to fix').click();
    assert.match(await banner.locator(tid('error-fix')).innerText(), /CORS/);
    await banner.getByText('How to fix').click();

    assert.equal(await page.getByRole('button', { name: /^Retry/ }).count(), 1, 'one Retry on the page');
    assert.equal(await banner.getByRole('button', { name: /^Retry/ }).count(), 0, 'not in the banner: on the failed message');
    const failed = messages(page, 'assistant');
    assert.equal(await failed.count(), 1);
    assert.equal(await failed.getAttribute('data-status'), 'error');
    assert.equal(await failed.locator(tid('copy-message')).count(), 0, 'nothing to copy in a reply that said nothing');
    assert.equal(await failed.locator(tid('retry-button')).count(), 1, 'Retry sits on the failed message');
    await banner.getByRole('button', { name: 'Dismiss' }).click();
    await banner.waitFor({ state: 'detached' });
    assert.match(await failed.innerText(), /Can't reach the server/, 'once dismissed, the failed message says why');
  }));

/** The user messages of a request's body. */
const userTurns = (r) => r.body.messages.filter((m) => m.role === 'user').map((m) => m.content);

test('a failed turn plus Retry leaves one question and one reply, in the chat and in the request, after a reload too', () =>
  journey('retry-replaces', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'First question', 'First answer.');
    agent.script({ status: 500 }, { text: 'Second answer, at last.', delayMs: 5 });
    await sendMessage(page, 'Second question');
    await page.locator(tid('error-banner')).waitFor();
    await page.locator(tid('message', '[data-role="assistant"][data-status="error"]')).waitFor();

    await page.locator(tid('retry-button')).click();
    await waitForAssistantCount(page, 2);
    assert.equal(await waitForAssistant(page), 'Second answer, at last.');
    const check = async (when) => {
      const roles = await page.locator(tid('message')).evaluateAll((els) => els.map((e) => `${e.getAttribute('data-role')}:${e.getAttribute('data-status')}`));
      assert.deepEqual(roles, ['user:complete', 'assistant:complete', 'user:complete', 'assistant:complete'], `${when}: the failed bubble is replaced`);
    };
    await check('after Retry');
    const retried = agent.chatRequests().at(-1);
    assert.deepEqual(userTurns(retried), ['First question', 'Second question'], 'the question goes once');

    await page.reload();
    await waitForAppReady(page);
    await page.locator(tid('message')).nth(3).waitFor();
    await check('after a reload');
  }));

test('a new message typed after a failed turn takes the failed question\'s place: never two questions in a row', () =>
  journey('send-after-failure', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'First question', 'First answer.');
    agent.script({ status: 500 }, { text: 'An answer to the new one.', delayMs: 5 });
    await sendMessage(page, 'Second question');
    await page.locator(tid('message', '[data-role="assistant"][data-status="error"]')).waitFor();

    await sendMessage(page, 'Second question, asked again');
    await page.waitForFunction(() => {
      const all = [...document.querySelectorAll('[data-testid="message"]')];
      return all.length === 4 && all[3].getAttribute('data-status') === 'complete';
    });
    const shown = await page.locator(tid('message')).evaluateAll((els) => els.map((e) => e.getAttribute('data-role')));
    assert.deepEqual(shown, ['user', 'assistant', 'user', 'assistant']);
    assert.equal(await messageText(messages(page, 'user').last()), 'Second question, asked again');
    assert.deepEqual(userTurns(agent.chatRequests().at(-1)), ['First question', 'Second question, asked again']);
  }));

test('the memory panel closes on a wide window and stays closed after a reload; the chat takes its room', () =>
  journey('memory-panel', async (page) => {
    const { agent } = harness;
    await page.setViewportSize({ width: 1440, height: 900 });
    await chatTurn(page, agent, 'Hello there', 'Hi.');
    const pane = page.locator(tid('memory-pane'));
    const toggle = page.locator(tid('memory-toggle'));
    await pane.waitFor();
    const before = (await box(page.locator('.chat-pane'))).width;
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    // It leads with what is remembered; the token table waits behind "What the model receives".
    const order = await pane.evaluate((p) => [...p.querySelectorAll('[data-testid="memory-summary"], [data-testid="context-inspector"]')].map((e) => e.getAttribute('data-testid')));
    assert.deepEqual(order, ['memory-summary', 'context-inspector']);
    assert.match(await page.locator(tid('context-inspector')).locator('summary').innerText(), /What the model receives/);
    assert.equal(await page.locator(tid('inspector-section')).first().isVisible(), false, 'the token table is closed');

    await toggle.click();
    await pane.waitFor({ state: 'hidden' });
    const after = (await box(page.locator('.chat-pane'))).width;
    assert.ok(after >= 1440 - 260 - 2, `the chat takes the room: ${before}px -> ${after}px`);
    await page.screenshot({ path: shot('panel-closed-1440') });

    await page.reload();
    await waitForAppReady(page);
    await page.locator(tid('composer-input')).waitFor();
    await page.waitForTimeout(300);
    assert.equal(await pane.isVisible(), false, 'still closed after a reload');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    await toggle.click();
    await pane.waitFor();
    await page.reload();
    await waitForAppReady(page);
    await pane.waitFor();
  }));

test('the memory panel leads with the facts about the user once they exist, in every conversation; "off here" and a forget show at once', () =>
  journey('memory-panel-facts', async (page) => {
    const { agent } = harness;
    await page.setViewportSize({ width: 1440, height: 900 });
    const pane = page.locator(tid('memory-pane'));
    const section = pane.locator(tid('memory-about-you'));
    await chatTurn(page, agent, 'Hello there', 'Hi.');
    await pane.locator(tid('memory-summary')).waitFor();
    assert.equal(await section.count(), 0, 'no facts yet: no section');

    await chatTurn(page, agent, 'My name is Marta and I work as a nurse.', 'Hello Marta.');
    const facts = section.locator(tid('memory-user-fact'));
    await facts.nth(1).waitFor();
    const texts = (await facts.allInnerTexts()).map((t) => t.replace(/\s+said .*$/, '').trim());
    assert.deepEqual(texts, ['My name is Marta.', 'I work as a nurse.'], 'who the user is, name first');
    assert.match(await facts.first().innerText(), /said \d/, 'each with the day it was said');
    // Among what is remembered, before the token table behind "What the model receives".
    const order = await pane.evaluate((p) => [...p.querySelectorAll('[data-testid="memory-summary"], [data-testid="memory-about-you"], [data-testid="context-inspector"]')].map((e) => e.getAttribute('data-testid')));
    assert.deepEqual(order, ['memory-summary', 'memory-about-you', 'context-inspector']);
    const [top, inspector] = [await box(section), await box(pane.locator(tid('context-inspector')))];
    assert.ok(top.y < inspector.y, 'above the inspector');
    assert.ok(top.y < 900, `in view of a 900 px window without scrolling (at ${top.y})`);

    // Off for this conversation: the facts are still shown, and the pane says none of them goes out.
    const off = section.locator(tid('memory-about-you-off'));
    assert.equal(await off.isVisible(), false);
    await pane.locator(tid('conversation-use-user-memory')).click();
    await off.waitFor();

    // Another conversation shows them too: they are about the user, not this conversation.
    await page.locator(tid('new-conversation')).click();
    await page.locator(tid('message')).first().waitFor({ state: 'detached' });
    await chatTurn(page, agent, 'What should I cook tonight?', 'Soup.');
    await section.locator(tid('memory-user-fact')).nth(1).waitFor();
    assert.equal(await section.locator(tid('memory-about-you-off')).isVisible(), false, 'on in this one');

    // Forgotten on the Memory page, a fact leaves the panel at once.
    await pane.locator(tid('memory-page-open')).click();
    const nurse = page.locator(tid('memory-page')).locator(tid('user-fact')).filter({ hasText: 'nurse' });
    await nurse.locator(tid('user-fact-forget')).click();
    await nurse.locator(tid('confirm-forget')).click();
    await page.keyboard.press('Escape');
    await section.locator(tid('memory-user-fact')).filter({ hasText: 'nurse' }).waitFor({ state: 'detached' });
    assert.deepEqual((await section.locator(tid('memory-user-fact')).allInnerTexts()).map((t) => t.replace(/\s+said .*$/, '').trim()), ['My name is Marta.']);
  }));

test('nothing cut or wrapped: "+ New" on one line at 1440 and 1000 wide, the model picker\'s ▾ whole at 390 wide', () =>
  journey('cosmetics', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Hello there', 'Hi.');
    for (const width of [1000, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.waitForTimeout(100);
      const sidebar = await box(page.locator(tid('sidebar')));
      for (const id of ['new-conversation', 'temporary-chat']) {
        const lines = await page.locator(tid(id)).evaluate((b) => {
          const r = document.createRange();
          r.selectNodeContents(b);
          return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size;
        });
        assert.equal(lines, 1, `${id} is on one line at ${width}`);
        const b = await box(page.locator(tid(id)));
        assert.ok(b.x + b.width <= sidebar.x + sidebar.width, `${id} is inside the sidebar at ${width}: ${JSON.stringify(b)} in ${JSON.stringify(sidebar)}`);
      }
      await page.screenshot({ path: shot(`sidebar-head-${width}`) });
    }

    // A long model name is cut short on a phone, its ▾ never.
    await configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'a-very-long-model-name-that-cannot-fit-in-the-header-q4_k_m' });
    await page.setViewportSize({ width: 390, height: 844 });
    const picker = page.locator(tid('model-picker'));
    const caret = picker.locator('.caret');
    await page.waitForTimeout(100);
    const [p, c] = [await box(picker), await box(caret)];
    assert.ok(c.width > 4 && c.x >= p.x && c.x + c.width <= p.x + p.width + 0.5, `the ▾ is whole: ${JSON.stringify(c)} in ${JSON.stringify(p)}`);
    assert.ok(p.x + p.width <= 390, 'the picker is on screen');
    const name = picker.locator(tid('model-picker-name'));
    assert.ok(await name.evaluate((e) => e.scrollWidth > e.clientWidth), 'the name is cut short instead');
    await page.screenshot({ path: shot('picker-390') });
  }));

test('search typed key by key, at a person\'s speed, highlights the whole query; the match is in view in the sidebar', () =>
  journey('typed-search', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Could you please tell me whether the doctor said I must avoid penicillin for good?', 'Ask the doctor, please.');
    await chatTurn(page, agent, 'Another thing: the old prescription lists penicillin twice', 'Noted.');
    await page.locator(tid('conversation-search')).click();
    await page.keyboard.type('penicillin', { delay: 90 });
    const hits = page.locator(tid('search-results')).locator(tid('search-hit'));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="search-hit"]').length === 2);
    await page.waitForTimeout(400);
    const marks = await hits.locator('mark').allInnerTexts();
    assert.ok(marks.length >= 2, `marks: ${JSON.stringify(marks)}`);
    for (const m of marks) assert.equal(m.toLowerCase(), 'penicillin', `the whole word, only it: ${JSON.stringify(marks)}`);
    for (const snippet of await hits.locator(tid('search-snippet')).all()) {
      const s = await box(snippet);
      const m = await box(snippet.locator('mark').first());
      assert.ok(m.x >= s.x - 0.5 && m.x + m.width <= s.x + s.width + 0.5, `the match is in view: snippet ${JSON.stringify(s)}, mark ${JSON.stringify(m)}`);
    }

    // Typing on: the highlights follow, nothing of the earlier query stays marked.
    await page.keyboard.press('End');
    await page.keyboard.type(' tw', { delay: 90 });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="search-hit"]').length === 1);
    await page.waitForTimeout(300);
    assert.deepEqual((await hits.locator('mark').allInnerTexts()).map((m) => m.toLowerCase()), ['penicillin', 'tw']);
  }));
