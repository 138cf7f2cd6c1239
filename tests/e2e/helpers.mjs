// Browser helpers for the end-to-end journeys: Chromium through playwright-core, and the app driven only
// through the data-testid contract of ARCHITECTURE.md ("UI contract").

import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateRawSync, crc32 } from 'node:zlib';
import { startAgentServer } from './agent-server.mjs';
import { startStaticServer } from './static-server.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));

export const CHROMIUM_PATH = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
/** Generous for a 2-core machine shared with builds. */
export const DEFAULT_TIMEOUT_MS = Number(process.env.E2E_TIMEOUT_MS ?? 20_000);

/** `[data-testid="id"]`, optionally with more attribute selectors appended. */
export const tid = (id, extra = '') => `[data-testid="${id}"]${extra}`;

/**
 * The built app directory: $DIST, else ../../dist relative to tests/e2e. Throws if it has no index.html.
 * @returns {string}
 */
export function distDir() {
  const dir = resolve(process.env.DIST ?? join(HERE, '..', '..', 'dist'));
  if (!existsSync(join(dir, 'index.html'))) {
    throw new Error(`no built app at ${dir} (index.html missing): build it first (trunk build) or set DIST`);
  }
  return dir;
}

/**
 * Launches headless Debian Chromium (never a downloaded browser).
 * @returns {Promise<import('playwright-core').Browser>}
 */
export function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

/**
 * Starts everything a journey needs: the agent endpoint, the static server for dist/, and Chromium.
 * @param {{root?: string, basePath?: string, overrides?: Record<string, string>}} [options]
 *   root: the directory to serve (default: distDir()); the rest goes to the static server
 * @returns {Promise<{agent: import('./agent-server.mjs').AgentServer, site: import('./static-server.mjs').StaticServer, browser: import('playwright-core').Browser, close: () => Promise<void>}>}
 */
export async function startHarness({ root = distDir(), ...options } = {}) {
  const agent = await startAgentServer();
  const site = await startStaticServer(root, options);
  const browser = await launchBrowser();
  const close = async () => {
    await browser.close();
    await site.close();
    await agent.close();
  };
  return { agent, site, browser, close };
}

/**
 * Opens a fresh browser context (its own storage) and page, with the problem tracker attached.
 * @param {import('playwright-core').Browser} browser
 * @returns {Promise<{context: import('playwright-core').BrowserContext, page: import('playwright-core').Page, issues: PageIssues}>}
 */
export async function newAppPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  return { context, page, issues: trackPage(page) };
}

/**
 * Records page errors, console errors, failed requests and dialogs. Every dialog is dismissed and counts
 * as a problem unless the test announced it with `expectDialog`.
 * @param {import('playwright-core').Page} page
 * @returns {PageIssues}
 */
export function trackPage(page) {
  const issues = { pageErrors: [], consoleErrors: [], dialogs: [], acceptedDialogs: [], expectedDialogs: 0 };
  page.on('pageerror', (err) => issues.pageErrors.push(String(err?.stack ?? err)));
  page.on('console', (msg) => {
    if (msg.type() !== 'error' || isOptionalFileMiss(msg)) return;
    issues.consoleErrors.push(msg.text());
  });
  page.on('dialog', async (dialog) => {
    const entry = { type: dialog.type(), message: dialog.message() };
    if (issues.expectedDialogs > 0) {
      issues.expectedDialogs -= 1;
      issues.acceptedDialogs.push(entry);
      await dialog.accept();
    } else {
      issues.dialogs.push(entry);
      await dialog.dismiss();
    }
  });
  return issues;
}

/**
 * Misses that are not problems: Chromium asks for /favicon.ico on its own, and config.json next to
 * index.html is optional by design (ARCHITECTURE.md "UI contract").
 */
const OPTIONAL_FILES = /\/(favicon\.ico|config\.json)(\?.*)?$/;

function isOptionalFileMiss(msg) {
  return msg.text().startsWith('Failed to load resource') && OPTIONAL_FILES.test(msg.location()?.url ?? '');
}

/** Lets the next native dialog (e.g. a delete confirmation) through and accepts it. */
export function expectDialog(issues) {
  issues.expectedDialogs += 1;
}

/**
 * Throws if the page raised an error, logged a console error (unless allowed) or opened an unexpected dialog.
 * @param {PageIssues} issues
 * @param {{allowConsole?: RegExp[]}} [options] console errors to tolerate (e.g. the browser's own
 *   "Failed to load resource" line when a test scripts an HTTP error)
 */
export function assertNoPageProblems(issues, { allowConsole = [] } = {}) {
  const console = issues.consoleErrors.filter((text) => !allowConsole.some((re) => re.test(text)));
  const problems = [
    ...issues.pageErrors.map((e) => `page error: ${e}`),
    ...console.map((e) => `console error: ${e}`),
    ...issues.dialogs.map((d) => `unexpected ${d.type} dialog: ${d.message}`),
  ];
  if (problems.length) throw new Error(`the page had problems:\n${problems.join('\n')}`);
}

/**
 * Loads the app and waits until it has mounted (the settings button is there; it always is, even on a
 * first run without an endpoint).
 * @param {import('playwright-core').Page} page
 * @param {string} url
 */
export async function openApp(page, url) {
  await page.goto(url);
  await waitForAppReady(page);
}

/** Waits until the app has mounted (after a goto or a reload). On a phone the settings button is
 * in the closed conversation drawer: mounted, not visible. */
export async function waitForAppReady(page) {
  await page.locator(tid('settings-open')).waitFor({ state: 'attached' });
}

/**
 * The base URL a user would type for a protocol, given the agent server (ARCHITECTURE.md "Endpoints"):
 * OpenAI-style bases end in /v1; Ollama and Anthropic bases are the bare host.
 */
export function endpointBase(agent, protocol) {
  return protocol.startsWith('openai') ? `${agent.url}/v1` : agent.url;
}

/**
 * Configures the endpoint through the settings dialog (settings-open ... settings-save).
 * @param {import('playwright-core').Page} page
 * @param {{url: string, protocol: string, model: string, apiKey?: string}} endpoint
 */
export async function configureEndpoint(page, { url, protocol, model, apiKey }) {
  await page.locator(tid('settings-open')).click();
  const urlInput = page.locator(tid('settings-endpoint-url'));
  await urlInput.waitFor({ state: 'visible' });
  await page.locator(tid('settings-protocol')).selectOption(protocol);
  await urlInput.fill(url);
  await page.locator(tid('settings-model')).fill(model);
  if (apiKey !== undefined) await page.locator(tid('settings-api-key')).fill(apiKey);
  await page.locator(tid('settings-save')).click();
  await urlInput.waitFor({ state: 'hidden' });
}

/**
 * Types a message in the composer and sends it with the send button.
 * @param {import('playwright-core').Page} page
 * @param {string} text
 */
export async function sendMessage(page, text) {
  const input = page.locator(tid('composer-input'));
  await input.fill(text);
  await page.locator(tid('send-button')).click();
}

/** Locator for the messages, optionally of one role. */
export function messages(page, role) {
  return page.locator(role ? tid('message', `[data-role="${role}"]`) : tid('message'));
}

/** The visible text of a message's content (trimmed). */
export async function messageText(message) {
  return (await message.locator(tid('message-content')).innerText()).trim();
}

/**
 * Waits until the assistant message number `index` (default: the last one) has `status`, then returns
 * its text.
 * @param {import('playwright-core').Page} page
 * @param {{status?: string, index?: number, timeout?: number}} [options]
 * @returns {Promise<string>}
 */
export async function waitForAssistant(page, { status = 'complete', index = -1, timeout = DEFAULT_TIMEOUT_MS } = {}) {
  const handle = await page.waitForFunction(
    ({ status, index }) => {
      const all = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')];
      const el = index < 0 ? all.at(index) : all[index];
      return el && el.getAttribute('data-status') === status ? el : null;
    },
    { status, index },
    { timeout },
  );
  const content = await handle.$('[data-testid="message-content"]');
  return ((await content?.innerText()) ?? '').trim();
}

/**
 * Waits for a moment where the last assistant message is streaming and shows some, but not all, of
 * `fullText`; returns the partial text seen.
 * @param {import('playwright-core').Page} page
 * @param {string} fullText
 * @returns {Promise<string>}
 */
export async function waitForPartialReply(page, fullText, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
  const handle = await page.waitForFunction(
    (full) => {
      const el = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1);
      if (!el || el.getAttribute('data-status') !== 'streaming') return null;
      const text = (el.querySelector('[data-testid="message-content"]')?.innerText ?? '').trim();
      return text.length > 0 && text.length < full.trim().length ? text : null;
    },
    fullText,
    { timeout, polling: 'raf' },
  );
  return handle.jsonValue();
}

/**
 * Saves a full-page screenshot to the temp directory and returns its path (for failure reports).
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
export async function screenshot(page, name) {
  const path = join(tmpdir(), `memoire-e2e-${name.replace(/\W+/g, '-')}-${Date.now()}.png`);
  await page.screenshot({ path, fullPage: true }).catch(() => {});
  return path;
}

/**
 * Runs `fn`; if it throws, attaches a screenshot path and the page problems to the error.
 * @template T
 * @param {import('playwright-core').Page} page
 * @param {PageIssues} issues
 * @param {string} name
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withDiagnostics(page, issues, name, fn) {
  try {
    return await fn();
  } catch (err) {
    const shot = await screenshot(page, name);
    err.message += `\nscreenshot: ${shot}\npage errors: ${JSON.stringify(issues.pageErrors)}\nconsole errors: ${JSON.stringify(issues.consoleErrors)}\ndialogs: ${JSON.stringify(issues.dialogs)}`;
    throw err;
  }
}

/**
 * @typedef {object} PageIssues
 * @property {string[]} pageErrors       uncaught exceptions in the page
 * @property {string[]} consoleErrors    console.error lines (the browser's own included)
 * @property {{type: string, message: string}[]} dialogs   unexpected dialogs (dismissed)
 * @property {{type: string, message: string}[]} acceptedDialogs  dialogs announced with expectDialog
 * @property {number} expectedDialogs
 */

// ---------------------------------------------------------------------------------------------------
// Additions for the transport/session journeys (chat, continuity, memory).

/**
 * Fills the settings dialog and saves: the endpoint (as `configureEndpoint`) plus, when given, the
 * system prompt (settings-system-prompt) and the global memory settings (settings-summary-frequency,
 * settings-recent-count). Fields left undefined keep their current value.
 * @param {import('playwright-core').Page} page
 * @param {{url: string, protocol: string, model: string, apiKey?: string, systemPrompt?: string, summaryFrequency?: number, recentCount?: number}} settings
 */
export async function configureSettings(page, { url, protocol, model, apiKey, systemPrompt, summaryFrequency, recentCount }) {
  await page.locator(tid('settings-open')).click();
  const urlInput = page.locator(tid('settings-endpoint-url'));
  await urlInput.waitFor({ state: 'visible' });
  await page.locator(tid('settings-protocol')).selectOption(protocol);
  await urlInput.fill(url);
  await page.locator(tid('settings-model')).fill(model);
  if (apiKey !== undefined) await page.locator(tid('settings-api-key')).fill(apiKey);
  if (systemPrompt !== undefined) await page.locator(tid('settings-system-prompt')).fill(systemPrompt);
  if (summaryFrequency !== undefined) await page.locator(tid('settings-summary-frequency')).fill(String(summaryFrequency));
  if (recentCount !== undefined) await page.locator(tid('settings-recent-count')).fill(String(recentCount));
  await page.locator(tid('settings-save')).click();
  await urlInput.waitFor({ state: 'hidden' });
}

/**
 * A fresh context (fresh IndexedDB) with the app open and configured against the local agent for
 * `protocol`. The agent is reset first, so every journey starts from nothing.
 * @param {{agent: import('./agent-server.mjs').AgentServer, site: import('./static-server.mjs').StaticServer, browser: import('playwright-core').Browser}} harness
 * @param {string} protocol
 * @param {{apiKey?: string, systemPrompt?: string, summaryFrequency?: number, recentCount?: number, model?: string}} [extra]
 */
export async function openConfiguredApp({ agent, site, browser }, protocol, extra = {}) {
  agent.reset();
  const opened = await newAppPage(browser);
  await openApp(opened.page, site.url);
  await configureSettings(opened.page, { url: endpointBase(agent, protocol), protocol, model: extra.model ?? 'test-model', ...extra });
  return opened;
}

/** Reloads the page, waits for the app, and opens the only conversation from the sidebar. */
export async function reloadAndReopen(page) {
  await page.reload();
  await waitForAppReady(page);
  const items = page.locator(tid('conversation-list')).locator(tid('conversation-item'));
  await items.first().waitFor({ state: 'visible' });
  if ((await items.count()) !== 1) throw new Error(`expected one conversation after the reload, found ${await items.count()}`);
  await items.first().click();
  await page.locator(tid('message')).first().waitFor({ state: 'visible' });
}

/** Waits for the error banner and returns its text. */
export async function errorBannerText(page) {
  const banner = page.locator(tid('error-banner'));
  await banner.waitFor({ state: 'visible' });
  return (await banner.innerText()).trim();
}

/**
 * Waits until every continuity badge on the page (the chat header's and the sidebar item's) says
 * `want` in `data-continuity`; throws on timeout with what they said.
 */
export async function waitForContinuity(page, want, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
  const read = () => page.locator(tid('continuity-badge')).evaluateAll((els) => els.map((e) => e.getAttribute('data-continuity')));
  try {
    await page.waitForFunction(
      (w) => {
        const all = [...document.querySelectorAll('[data-testid="continuity-badge"]')];
        return all.length > 0 && all.every((e) => e.getAttribute('data-continuity') === w);
      },
      want,
      { timeout },
    );
  } catch (err) {
    err.message += `\ncontinuity badges say ${JSON.stringify(await read())}, expected ${want}`;
    throw err;
  }
  return read();
}

/**
 * Waits while the last assistant message is streaming until it shows more than `minLength` characters
 * (but not all of `fullText`); returns that text. Proves the reply grows in steps.
 */
export async function waitForLongerPartial(page, fullText, minLength, { timeout = DEFAULT_TIMEOUT_MS } = {}) {
  const handle = await page.waitForFunction(
    ({ full, min }) => {
      const el = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].at(-1);
      if (!el || el.getAttribute('data-status') !== 'streaming') return null;
      const text = (el.querySelector('[data-testid="message-content"]')?.innerText ?? '').trim();
      return text.length > min && text.length < full.trim().length ? text : null;
    },
    { full: fullText, min: minLength },
    { timeout, polling: 'raf' },
  );
  return handle.jsonValue();
}

/** Polls `fn` (sync or async) until it returns a truthy value; returns it. */
export async function eventually(fn, { timeout = DEFAULT_TIMEOUT_MS, interval = 25, what = 'a condition' } = {}) {
  const end = Date.now() + timeout;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

/** Console lines the browser itself logs when a test scripts an HTTP error or a dropped stream. */
export const BROWSER_NETWORK_NOISE = [/Failed to load resource/, /ERR_INCOMPLETE_CHUNKED_ENCODING/, /net::ERR_/];
// Additions for the UI journeys (ui*.test.mjs, xss.test.mjs).

/**
 * A fresh context and page with the app open and pointed at the agent server (openai-chat).
 * @param {{agent: import('./agent-server.mjs').AgentServer, site: import('./static-server.mjs').StaticServer, browser: import('playwright-core').Browser}} harness
 * @param {{viewport?: {width: number, height: number}, permissions?: string[], endpoint?: boolean}} [options]
 */
export async function openUiApp({ agent, site, browser }, { viewport = { width: 1280, height: 800 }, permissions = [], endpoint = true } = {}) {
  const context = await browser.newContext({ viewport });
  if (permissions.length) await context.grantPermissions(permissions, { origin: new URL(site.url).origin });
  const page = await context.newPage();
  page.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  const issues = trackPage(page);
  await openApp(page, site.url);
  if (endpoint) await configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model' });
  return { context, page, issues };
}

/** A reply that ended by itself: whole, or whole as far as the reply cap let it go (a real model's
 * reply may reach it; a scripted one never does unless a test asks). */
export const REPLY_ENDED = ['complete', 'capped'];

/** Waits until exactly `count` assistant messages are shown and the last one has `status` (or one of
 * a list of them, such as `REPLY_ENDED`). */
export async function waitForAssistantCount(page, count, { status = 'complete', timeout = DEFAULT_TIMEOUT_MS } = {}) {
  await page.waitForFunction(
    ({ count, statuses }) => {
      const all = document.querySelectorAll('[data-testid="message"][data-role="assistant"]');
      return all.length === count && statuses.includes(all[count - 1].getAttribute('data-status'));
    },
    { count, statuses: [].concat(status) },
    { timeout },
  );
}

/**
 * One complete turn: queue `reply` (string or Reply), send `text`, wait for the new reply to complete;
 * returns its text.
 */
export async function chatTurn(page, agent, text, reply) {
  const before = await messages(page, 'assistant').count();
  agent.script(reply);
  await sendMessage(page, text);
  await waitForAssistantCount(page, before + 1);
  return waitForAssistant(page);
}

/** The `data-conversation-id`s of the sidebar list, top to bottom. */
export function conversationIds(page) {
  return page.locator(tid('conversation-list')).locator(tid('conversation-item')).evaluateAll((els) => els.map((e) => e.getAttribute('data-conversation-id')));
}

/** The sidebar item of a conversation. */
export function conversationItem(page, id) {
  return page.locator(tid('conversation-list')).locator(tid('conversation-item', `[data-conversation-id="${id}"]`));
}

/** The id of the open conversation, from the URL (`#/c/<id>`). */
export async function currentConversationId(page) {
  const hash = await page.evaluate(() => location.hash);
  const m = /^#\/c\/(.+)$/.exec(hash);
  return m ? decodeURIComponent(m[1]) : null;
}

/** Opens the settings dialog and waits for it. */
export async function openSettings(page) {
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-dialog')).waitFor({ state: 'visible' });
}

/** Opens the settings dialog's "Advanced" part (context size, reply room, history format), if closed. */
export async function openAdvanced(page) {
  const advanced = page.locator(tid('settings-advanced'));
  if (!(await advanced.evaluate((d) => d.open))) await advanced.locator('summary').click();
}

/** Saves the settings dialog and waits until it has closed. */
export async function saveSettings(page) {
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-dialog')).waitFor({ state: 'detached' });
}

/**
 * Confirms the import preview (import-preview, shown once a chosen file is read and checked) and
 * returns its text; the write then runs.
 * @param {import('playwright-core').Page} page
 */
export async function confirmImport(page, { timeout = 30_000 } = {}) {
  const preview = page.locator(tid('import-preview'));
  await preview.waitFor({ state: 'visible', timeout });
  const text = await preview.innerText();
  await page.locator(tid('import-confirm')).click();
  return text;
}

/**
 * Imports a backup file through the backup menu (export-button, then import-input, then the
 * preview's import-confirm) and waits for the notice that reports it.
 * @param {import('playwright-core').Page} page
 * @param {object} backup the backup JSON (ARCHITECTURE.md / engine::backup format)
 */
export async function importBackup(page, backup) {
  await page.locator(tid('export-button')).click();
  await page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(backup)) });
  await confirmImport(page);
  await page.locator(tid('notice')).waitFor({ state: 'visible' });
}

/**
 * A version-1 backup of one conversation with `count` alternating user/assistant messages; message i
 * (1-based seq) reads `text(i)`.
 */
export function syntheticBackup({ id = 'c-imported', title = 'Imported conversation', count = 200, text = (i) => `Message number ${i}.`, start = Date.UTC(2024, 0, 1) } = {}) {
  const msgs = [];
  for (let i = 1; i <= count; i += 1) {
    msgs.push({
      id: `${id}-m${i}`, conversation_id: id, seq: i, role: i % 2 ? 'user' : 'assistant', content: text(i), status: 'complete',
      created_at: start + i * 1000, tool_calls: [], usage: null, error: null, path: null, model: null,
    });
  }
  return {
    format: 'memoire-backup', version: 1, exported_at: start + (count + 1) * 1000, shared_entities: [],
    conversations: [{
      conversation: {
        id, title, title_is_custom: true, created_at: start, updated_at: start + count * 1000, message_count: count,
        endpoint_profile_id: null, remote_handle: null, last_path: null,
        memory_overrides: { recent_messages: null, summary_every_pairs: null, context_tokens: null, reply_reserve_tokens: null, max_message_chars: null, history_format: null },
      },
      messages: msgs, summaries: [], entities: [],
    }],
  };
}

/** Runs `fn(page, ctx)` in a fresh app configured for the harness's agent; checks the page had no problems. */
export async function uiJourney(harness, name, fn, options) {
  harness.agent.reset();
  const ctx = await openUiApp(harness, options);
  try {
    await withDiagnostics(ctx.page, ctx.issues, name, () => fn(ctx.page, ctx));
    assertNoPageProblems(ctx.issues);
  } finally {
    await ctx.context.close();
  }
}

/** A ZIP (deflate) of `[name, Buffer]` entries, as ChatGPT mails its export. */
export function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, data] of entries) {
    const body = deflateRawSync(data);
    const n = Buffer.from(name);
    const head = (central) => {
      const h = Buffer.alloc(central ? 46 : 30);
      let i = 0;
      h.writeUInt32LE(central ? 0x02014b50 : 0x04034b50, i); i += 4;
      if (central) { h.writeUInt16LE(20, i); i += 2; }
      h.writeUInt16LE(20, i); i += 2;
      h.writeUInt16LE(0, i); i += 2;
      h.writeUInt16LE(8, i); i += 2;
      i += 4; // time, date
      h.writeUInt32LE(crc32(data), i); i += 4;
      h.writeUInt32LE(body.length, i); i += 4;
      h.writeUInt32LE(data.length, i); i += 4;
      h.writeUInt16LE(n.length, i); i += 2;
      h.writeUInt16LE(0, i); i += 2;
      if (central) { i += 10; h.writeUInt32LE(offset, i); }
      return Buffer.concat([h, n]);
    };
    const local = Buffer.concat([head(false), body]);
    centrals.push(head(true));
    locals.push(local);
    offset += local.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** Everything the chat request `r` sends (its messages' contents), as one text. */
export const requestText = (r) => r.body.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');

/** The facts about the user the chat request `r` carries: the lines of its "About the user" section. */
export function factsSent(r) {
  const lines = requestText(r).split('\n');
  const at = lines.findIndex((l) => l.startsWith('## About the user'));
  if (at < 0) return [];
  const facts = [];
  for (const l of lines.slice(at + 1)) {
    if (!l.startsWith('- ')) break;
    facts.push(l);
  }
  return facts;
}

/**
 * A device for the sync tests: its own browser context, the endpoint set, sync on against `server`
 * (its `url`) in database `db`; `summaryFrequency` sets the memory update's frequency too.
 */
export async function syncedDevice({ agent, site, browser }, server, db = 'memoire', { summaryFrequency } = {}) {
  const opened = await newAppPage(browser);
  const { page } = opened;
  await openApp(page, site.url);
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-protocol')).selectOption('openai-chat');
  await page.locator(tid('settings-endpoint-url')).fill(endpointBase(agent, 'openai-chat'));
  await page.locator(tid('settings-model')).fill('test-model');
  if (summaryFrequency !== undefined) await page.locator(tid('settings-summary-frequency')).fill(String(summaryFrequency));
  await page.locator(tid('settings-sync-url')).fill(server.url);
  await page.locator(tid('settings-sync-database')).fill(db);
  await page.locator(tid('settings-sync-enabled')).check();
  // The dialog's one Save saves sync too, and closes the dialog once both are saved.
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden' });
  return opened;
}

/**
 * A new device for the sync tests: its own browser context and the endpoint set, sync not set up
 * yet; `summaryFrequency` sets the memory update's frequency.
 */
export async function unsyncedDevice({ agent, site, browser }, { summaryFrequency = 1 } = {}) {
  const d = await newAppPage(browser);
  await openApp(d.page, site.url);
  await d.page.locator(tid('settings-open')).click();
  await d.page.locator(tid('settings-protocol')).selectOption('openai-chat');
  await d.page.locator(tid('settings-endpoint-url')).fill(endpointBase(agent, 'openai-chat'));
  await d.page.locator(tid('settings-model')).fill('test-model');
  await d.page.locator(tid('settings-summary-frequency')).fill(String(summaryFrequency));
  return d;
}

/** The sidebar's sync status: its `data-state` and its detail (the tooltip). */
export const syncStatus = async (page) => ({
  state: await page.locator(tid('sync-status')).getAttribute('data-state'),
  detail: (await page.locator(tid('sync-status')).getAttribute('title')) ?? '',
});

/** Waits until the sync status satisfies `want`; returns it. */
export function waitForSyncStatus(page, want, what, timeout = 60_000) {
  return eventually(async () => {
    const s = await syncStatus(page);
    return want(s) ? s : null;
  }, { timeout, interval: 100, what });
}

/** The Memory page's facts (opened, read, closed), as one text. */
export async function memoryPageFacts(page) {
  if (!(await page.locator(tid('memory-page')).isVisible())) await page.locator(tid('memory-page-open')).click();
  const texts = await page.locator(tid('memory-page')).locator(tid('user-fact')).allInnerTexts();
  await page.keyboard.press('Escape');
  await page.locator(tid('memory-page')).waitFor({ state: 'hidden' });
  return texts.join(' ');
}

/**
 * Opens the memory pane's "What the model receives" (the context inspector, closed until the user
 * opens it; this browser remembers it open from then on).
 * @param {import('playwright-core').Page} page
 */
export async function showInspector(page) {
  const inspector = page.locator(tid('context-inspector'));
  await inspector.waitFor();
  if (!(await inspector.evaluate((d) => d.open))) await inspector.locator(tid('inspector-toggle')).click();
}
