// The first screen in the html (issue 31): index.html draws the layout and a composer that takes
// typing before the wasm arrives; the app takes it over when it mounts. On a throttled first visit
// (the cold-start bench's Fast-4G link and 4x CPU, through CDP):
// - every character typed, before and after the takeover, is in the app's composer, in order, and
//   the layout does not shift (CLS under 0.05) from navigation until the app is usable;
// - the caret, the selection and the focus move into the app's composer (the wasm held back by the
//   static server until the test has typed and moved the caret);
// - Enter before the app is ready says "starting…" and, with an endpoint configured (the
//   deployment's config.json), sends the message exactly once when the app is ready; without one
//   the text stays in the composer and nothing is sent.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHarness, distDir, trackPage, assertNoPageProblems, withDiagnostics, waitForAssistant, tid, eventually, DEFAULT_TIMEOUT_MS } from './helpers.mjs';

const LINK_4G = { offline: false, latency: 150, downloadThroughput: 9_000_000 / 8, uploadThroughput: 1_500_000 / 8 };
const TIMEOUT = Math.max(DEFAULT_TIMEOUT_MS, 60_000);

let harness;
let wasmName;
before(async () => {
  harness = await startHarness();
  const html = readFileSync(join(distDir(), 'index.html'), 'utf8');
  wasmName = html.match(/href="?\.\/([^"\s>]+_bg\.wasm)/)?.[1];
  assert.ok(wasmName, 'dist/index.html names its main wasm');
});
after(() => harness?.close());

/** Runs in the page before anything else: where each typed key landed, and every layout shift. */
function instruments() {
  const out = (window.__first = { keys: [], shifts: [] });
  document.addEventListener('keydown', (e) => out.keys.push(document.getElementById('first-screen') ? 'static' : 'app'), true);
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) out.shifts.push({ value: e.value, at: e.startTime, input: e.hadRecentInput });
  }).observe({ type: 'layout-shift', buffered: true });
}

/** A fresh profile on the throttled link; the wasm held back until `release()` when `hold` is set. */
async function throttledVisit({ hold = false } = {}) {
  const { browser, site } = harness;
  let release = () => {};
  if (hold) {
    const gate = new Promise((ok) => (release = ok));
    const bytes = readFileSync(join(distDir(), wasmName));
    site.setRoute(wasmName, async (_req, res) => {
      await gate;
      res.writeHead(200, { 'Content-Type': 'application/wasm', 'Content-Length': bytes.length });
      res.end(bytes);
    });
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(instruments);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const issues = trackPage(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  await cdp.send('Network.emulateNetworkConditions', LINK_4G);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
  await page.goto(site.url, { waitUntil: 'commit' });
  // The static composer takes the focus (autofocus) with the first paint, once the stylesheet is in.
  await page.waitForFunction(() => document.activeElement?.id === 'first-screen-input', null, { polling: 'raf' });
  const close = async () => {
    site.setRoute(wasmName, undefined);
    release();
    await context.close();
  };
  return { page, issues, release, close };
}

/** The app has taken over: its composer is there and the static screen gone. */
async function takenOver(page) {
  await page.locator(tid('composer-input')).waitFor({ state: 'visible' });
  await page.locator('#first-screen').waitFor({ state: 'detached' });
}

const composerValue = (page) => page.locator(tid('composer-input')).inputValue();

test('first screen: every character typed on a throttled first visit is kept through the takeover, with no layout shift', async () => {
  const { page, issues, close } = await throttledVisit();
  try {
    await withDiagnostics(page, issues, 'first-screen-typing', async () => {
      // Typed until well after the takeover: some keys land in the static composer, some in the app's.
      const text = 'The quick brown fox jumps over the lazy dog; ';
      let typed = '';
      for (let i = 0; i < 400; i++) {
        const ch = text[i % text.length];
        await page.keyboard.type(ch);
        typed += ch;
        const keys = await page.evaluate(() => window.__first.keys);
        if (keys.filter((k) => k === 'app').length >= 20) break;
      }
      const keys = await page.evaluate(() => window.__first.keys);
      const before = keys.filter((k) => k === 'static').length;
      assert.ok(before >= 5, `keys typed before the takeover: ${before}`);
      assert.ok(keys.length - before >= 20, 'keys typed after the takeover');
      await takenOver(page);
      assert.equal(await composerValue(page), typed, 'every character, in order');
      assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'composer-input', 'the app composer has the focus');
      // The list drawn, then a moment for late shifts.
      await page.locator(tid('conversation-list')).locator('li.empty').first().waitFor();
      await page.waitForTimeout(500);
      const shifts = await page.evaluate(() => window.__first.shifts);
      const cls = shifts.filter((s) => !s.input).reduce((a, s) => a + s.value, 0);
      assert.ok(cls < 0.05, `layout shift during the takeover: ${cls.toFixed(4)} (${JSON.stringify(shifts)})`);
      assertNoPageProblems(issues);
    });
  } finally {
    await close();
  }
});

test('first screen: the caret, the selection and the focus move into the app composer', async () => {
  const { page, issues, release, close } = await throttledVisit({ hold: true });
  try {
    await withDiagnostics(page, issues, 'first-screen-caret', async () => {
      await page.keyboard.type('hello world');
      for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowLeft');
      await page.keyboard.down('Shift');
      await page.keyboard.press('ArrowLeft');
      await page.keyboard.up('Shift');
      // "hello| |world": the space selected, backwards.
      assert.equal(await page.evaluate(() => document.getElementById('first-screen')?.isConnected), true, 'the app has not started yet');
      release();
      await takenOver(page);
      const sel = await page.evaluate(() => {
        const el = document.activeElement;
        return { testid: el?.dataset.testid, start: el?.selectionStart, end: el?.selectionEnd, dir: el?.selectionDirection };
      });
      assert.deepEqual(sel, { testid: 'composer-input', start: 5, end: 6, dir: 'backward' });
      await page.keyboard.type('_');
      assert.equal(await composerValue(page), 'hello_world', 'typing replaces the selection where it was');
      // The first screen shows (the new chat's stored draft, empty) and the text stays.
      await page.locator(tid('conversation-list')).locator('li.empty').first().waitFor();
      await page.waitForTimeout(300);
      assert.equal(await composerValue(page), 'hello_world');
      assertNoPageProblems(issues);
    });
  } finally {
    await close();
  }
});

test('first screen: Enter before the app is ready sends once it is, exactly once (endpoint configured)', async () => {
  const { agent, site } = harness;
  const before = agent.chatRequests().length;
  site.setOverride('config.json', JSON.stringify({ endpoint_url: `${agent.url}/v1`, protocol: 'openai-chat', model: 'test-model' }));
  const { page, issues, release, close } = await throttledVisit({ hold: true });
  try {
    await withDiagnostics(page, issues, 'first-screen-enter', async () => {
      await page.keyboard.type('Sent before the app was ready');
      await page.keyboard.press('Enter');
      assert.equal(await page.locator(tid('first-screen-status')).innerText(), 'starting…');
      // A second Enter is the same press remembered, not a second message.
      await page.keyboard.press('Enter');
      release();
      await takenOver(page);
      await waitForAssistant(page, { timeout: TIMEOUT });
      await page.waitForTimeout(500);
      const sent = agent.chatRequests().slice(before);
      assert.equal(sent.length, 1, `one chat request: ${sent.length}`);
      const last = sent[0].body.messages.at(-1);
      assert.equal(last.content, 'Sent before the app was ready');
      assert.equal(await page.locator(tid('message', '[data-role="user"]')).count(), 1);
      assert.equal(await composerValue(page), '', 'the composer is empty once it is sent');
      assertNoPageProblems(issues);
    });
  } finally {
    site.setOverride('config.json', undefined);
    await close();
  }
});

test('first screen: Enter before the app is ready without an endpoint keeps the text and sends nothing', async () => {
  const { agent } = harness;
  const before = agent.requests.length;
  const { page, issues, release, close } = await throttledVisit({ hold: true });
  try {
    await withDiagnostics(page, issues, 'first-screen-enter-no-endpoint', async () => {
      await page.keyboard.type('No endpoint yet');
      await page.keyboard.press('Enter');
      release();
      await takenOver(page);
      await page.locator(tid('conversation-list')).locator('li.empty').first().waitFor();
      await eventually(async () => (await composerValue(page)) === 'No endpoint yet', { what: 'the text in the composer' });
      await page.waitForTimeout(500);
      assert.equal(await composerValue(page), 'No endpoint yet');
      assert.equal(agent.requests.length, before, 'nothing was sent');
      assert.equal(await page.locator(tid('message')).count(), 0);
      assertNoPageProblems(issues);
    });
  } finally {
    await close();
  }
});
