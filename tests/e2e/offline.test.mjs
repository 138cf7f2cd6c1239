// Offline (issue 7, part 2): after one visit the service worker has the app shell, so with the
// network off (the browser offline AND the static host refusing every connection) the app reloads;
// every stored conversation opens, scrolls back to its first message and is searchable; the memory
// pane shows the stored summary and entities; sending says "offline" and keeps the draft; drafts are
// kept per conversation across switches and reloads; coming back online is noticed (even while the
// offline error is shown) and sending works.
// The data is seeded through the import input (a backup file built here), which also exercises import;
// offline, a second import proves the import's wasm chunk (fetched on first use) was precached.
// A chunk that cannot be fetched at all (no service worker, the host refusing it) makes the action
// say so in the error banner, and the same action works once the chunk can be fetched again.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  newAppPage,
  openApp,
  waitForAppReady,
  configureEndpoint,
  endpointBase,
  messages,
  messageText,
  waitForAssistant,
  assertNoPageProblems,
  withDiagnostics,
  confirmImport,
  tid,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const T0 = Date.UTC(2024, 4, 1, 9, 0, 0);
const LONG = 150;

/** A version-1 backup file: `specs` are {id, title, texts: [user, assistant, ...], summary?, entities?}. */
function backupFile(specs) {
  return JSON.stringify({
    format: 'memoire-backup',
    version: 1,
    exported_at: T0,
    conversations: specs.map(({ id, title, texts, summary, entities = [] }) => ({
      conversation: {
        id,
        title,
        title_is_custom: true,
        created_at: T0,
        updated_at: T0 + texts.length * 1000,
        message_count: texts.length,
        endpoint_profile_id: null,
        remote_handle: null,
        last_path: null,
        memory_overrides: { recent_messages: null, summary_every_pairs: null, context_tokens: null, reply_reserve_tokens: null, max_message_chars: null, history_format: null },
      },
      messages: texts.map((content, i) => ({
        id: `${id}-m${i + 1}`,
        conversation_id: id,
        seq: i + 1,
        role: i % 2 === 0 ? 'user' : 'assistant',
        content,
        status: 'complete',
        created_at: T0 + i * 1000,
        tool_calls: [],
        usage: null,
        error: null,
        path: null,
        model: null,
      })),
      summaries: summary
        ? [{ conversation_id: id, version: 1, text: summary, covers_up_to_seq: texts.length, message_count: texts.length, updated_at: T0 + texts.length * 1000 }]
        : [],
      entities: entities.map((e) => ({ aliases: [], properties: {}, relationships: [], source_message_ids: [], updated_at: T0, ...e })),
    })),
    shared_entities: [],
  });
}

const longTexts = Array.from({ length: LONG }, (_, i) =>
  i === 2 ? 'Trip note 3: the ferry to Zanzibar leaves at dawn.' : `Trip note ${i + 1}: ${i % 2 ? 'noted, anything else?' : 'more about the journey.'}`,
);
const SEED = backupFile([
  {
    id: 'c-long',
    title: 'Long trip notes',
    texts: longTexts,
    summary: 'The user is planning a long trip with a ferry at dawn.',
    entities: [
      { id: 'e-ferry', type: 'event', name: 'Ferry', description: 'Leaves at dawn' },
      { id: 'e-zanzibar', type: 'place', name: 'Zanzibar', description: 'The destination' },
    ],
  },
  { id: 'c-short', title: 'Short chat', texts: ['Hi there', 'Hello!', 'How are you?', 'Fine, thanks.'] },
]);

const items = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'));
const item = (page, id) => page.locator(tid('conversation-item', `[data-conversation-id="${id}"]`));

async function importBackup(page, text) {
  await page.locator(tid('export-button')).click();
  await page.locator(tid('import-input')).setInputFiles({ name: 'seed.json', mimeType: 'application/json', buffer: Buffer.from(text) });
  await confirmImport(page);
}

/** Opens a conversation and waits until its last message is shown. */
async function openConversation(page, id, lastText) {
  await item(page, id).click();
  await page.locator(tid('message')).last().filter({ hasText: lastText }).waitFor();
}

async function composerValue(page) {
  return page.locator(tid('composer-input')).inputValue();
}

test('offline: after one visit the app reloads, browses, scrolls, searches and keeps drafts with the network off', async () => {
  const { agent, site } = harness;
  agent.reset();
  site.setOffline(false);
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'offline', async () => {
      await openApp(page, site.url);
      await configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model' });
      await importBackup(page, SEED);
      await page.locator(tid('notice')).filter({ hasText: 'Imported 2 conversations' }).waitFor();
      await items(page).nth(1).waitFor();

      // The service worker controls the page, and its cache carries the stamped build id.
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      const caches = await page.evaluate(() => caches.keys());
      assert.equal(caches.length, 1, `one shell cache: ${caches}`);
      assert.match(caches[0], /^memoire-shell-[0-9a-f]{16}$/, 'the build id was stamped into sw.js');

      // Network off: the browser is offline and the host refuses every connection.
      await context.setOffline(true);
      site.setOffline(true);
      await page.locator(tid('network-status')).filter({ hasText: 'offline' }).waitFor();
      const servedBefore = site.requests.filter((r) => !r.offline).length;
      await page.reload();
      await waitForAppReady(page);
      assert.equal(site.requests.filter((r) => !r.offline).length, servedBefore, 'nothing was served by the host');
      await page.locator(tid('network-status')).filter({ hasText: 'offline' }).waitFor();
      await items(page).nth(1).waitFor();
      assert.equal(await items(page).count(), 2);

      // Open the long conversation and scroll back to its very first message.
      await openConversation(page, 'c-long', `Trip note ${LONG}`);
      const list = page.locator(tid('message-list'));
      const first = page.locator(tid('message-content')).filter({ hasText: /^Trip note 1: / });
      for (let i = 0; i < 10 && !(await first.count()); i++) {
        const before = await messages(page).count();
        await list.evaluate((el) => el.scrollTo(0, 0));
        await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"]').length > n, before);
      }
      assert.equal(await messages(page).count(), LONG, 'every message is reachable');
      assert.equal(await messageText(messages(page).first()), 'Trip note 1: more about the journey.');

      // The memory pane shows the stored summary and entities.
      await page.locator(tid('summary-text')).filter({ hasText: 'ferry at dawn' }).waitFor();
      assert.equal(await page.locator(tid('entity-node')).count(), 2);

      // Search finds an old message and opens the conversation at it.
      await openConversation(page, 'c-short', 'Fine, thanks.');
      await page.locator(tid('conversation-search')).fill('zanzibar');
      const hit = page.locator(tid('search-hit'), { hasText: 'Zanzibar' });
      await hit.first().waitFor();
      await hit.first().click();
      const target = page.locator(tid('message')).filter({ hasText: 'ferry to Zanzibar' });
      await target.waitFor();
      await page.waitForFunction(() => {
        const el = [...document.querySelectorAll('[data-testid="message"]')].find((m) => m.innerText.includes('ferry to Zanzibar'));
        const list = document.querySelector('[data-testid="message-list"]');
        if (!el || !list) return false;
        const a = el.getBoundingClientRect();
        const b = list.getBoundingClientRect();
        return a.bottom > b.top && a.top < b.bottom;
      });

      // Import is a wasm chunk fetched on first use (not yet used since this reload): offline it comes
      // from the service worker's cache, and a file is imported as ever.
      await importBackup(page, backupFile([{ id: 'c-plane', title: 'Written offline', texts: ['On the plane', 'Safe travels.'] }]));
      await page.locator(tid('notice')).filter({ hasText: 'Imported 1 conversation' }).waitFor();
      await item(page, 'c-plane').waitFor();
      assert.equal(site.requests.filter((r) => !r.offline).length, servedBefore, 'the import chunk came from the cache');

      // Sending offline says so and keeps the draft; nothing reaches the agent.
      await openConversation(page, 'c-short', 'Fine, thanks.');
      await page.locator(tid('composer-input')).fill('Written on the plane');
      await page.locator(tid('send-button')).click();
      await page.locator(tid('error-banner')).filter({ hasText: /offline/i }).waitFor();
      assert.equal(await composerValue(page), 'Written on the plane');
      assert.equal(agent.chatRequests().length, 0);

      // Drafts are per conversation, across switches and a reload.
      await openConversation(page, 'c-long', `Trip note ${LONG}`);
      assert.equal(await composerValue(page), '');
      await page.locator(tid('composer-input')).fill('Draft for the trip');
      await openConversation(page, 'c-short', 'Fine, thanks.');
      await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Written on the plane');
      await page.reload();
      await waitForAppReady(page);
      await openConversation(page, 'c-long', `Trip note ${LONG}`);
      await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Draft for the trip');
      await openConversation(page, 'c-short', 'Fine, thanks.');
      await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Written on the plane');

      // Back online with the offline error still shown (not dismissed): the notice takes its place,
      // and the kept draft can be sent.
      await page.locator(tid('send-button')).click();
      await page.locator(tid('error-banner')).filter({ hasText: /offline/i }).waitFor();
      site.setOffline(false);
      await context.setOffline(false);
      await page.locator(tid('network-status')).filter({ hasText: 'online' }).waitFor();
      await page.locator(tid('notice')).filter({ hasText: /back online/i }).waitFor();
      assert.equal(await page.locator(tid('error-banner')).count(), 0, 'the offline error is gone');
      agent.script({ text: 'Welcome back.' });
      await page.locator(tid('send-button')).click();
      assert.equal(await waitForAssistant(page, { index: 2 }), 'Welcome back.');
      assert.equal(await messageText(messages(page, 'user').last()), 'Written on the plane');
      assert.equal(agent.chatRequests().length, 1);
      assert.equal(await composerValue(page), '');
      assertNoPageProblems(issues, { allowConsole: [/Failed to load resource/, /ERR_INTERNET_DISCONNECTED/, /ERR_CONNECTION/] });
    });
  } finally {
    site.setOffline(false);
    await context.close();
  }
});

test('the first screen fetches no wasm chunk; one that cannot be fetched: the import, the Memory page and deleting a conversation say so in the banner, and work once the network is back', async () => {
  const { site } = harness;
  site.setOffline(false);
  // No service worker: nothing is precached, so the chunk can only come from the network.
  const context = await harness.browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  try {
    // When the app says its first screen is drawn (the list shown), as the page saw it: the turn
    // chunk is fetched at idle after it, which under load can come before this test looks.
    await context.addInitScript(() => addEventListener('memoire-first-screen', () => (window.__firstScreenAt = performance.now()), { once: true }));
    await openApp(page, site.url);
    // The first screen loads the main wasm only: no chunk is asked for before it is drawn.
    await page.waitForFunction(() => window.__firstScreenAt !== undefined);
    const before = await page.evaluate(() =>
      performance.getEntriesByType('resource').filter((e) => e.startTime <= window.__firstScreenAt).map((e) => new URL(e.name).pathname));
    assert.deepEqual(before.filter((u) => /\/(split|chunk)_\w+-[0-9a-f]{16}\.wasm$/.test(u)), [], 'no chunk on the first screen');
    assert.equal(before.filter((u) => /_bg\.wasm$/.test(u)).length, 1, 'the main wasm once');
    const chunk = /\/split_import-[0-9a-f]{16}\.wasm$/;
    let refused = 0;
    await page.route(chunk, (route) => ((refused += 1), route.abort('internetdisconnected')));
    await page.locator(tid('export-button')).click();
    const file = { name: 'seed.json', mimeType: 'application/json', buffer: Buffer.from(SEED) };
    await page.locator(tid('import-input')).setInputFiles(file);
    await page.locator(tid('error-banner')).filter({ hasText: /could not be loaded/ }).waitFor();
    assert.ok(refused >= 1, 'the import chunk was asked for');
    assert.equal(await page.locator(tid('import-preview')).count(), 0, 'no preview without the import code');

    // The network is back: the same control works, nothing was cached as failed.
    await page.unroute(chunk);
    await page.locator(tid('export-button')).click();
    await page.locator(tid('import-input')).setInputFiles(file);
    const preview = await confirmImport(page);
    assert.match(preview, /2 conversations/);
    // (The notice waits behind the error banner, which stays until dismissed.)
    await item(page, 'c-long').waitFor();
    await item(page, 'c-short').waitFor();

    // The Memory page's chunk refused: the page closes, the banner says so, and the same button
    // opens the page once the network is back.
    await page.locator(tid('error-banner')).getByRole('button', { name: 'Dismiss' }).click();
    const about = /\/split_about-[0-9a-f]{16}\.wasm$/;
    let refusedAbout = 0;
    await page.route(about, (route) => ((refusedAbout += 1), route.abort('internetdisconnected')));
    await page.locator(tid('memory-page-open')).click();
    await page.locator(tid('error-banner')).filter({ hasText: /could not be loaded/ }).waitFor();
    assert.ok(refusedAbout >= 1, 'the Memory page chunk was asked for');
    assert.equal(await page.locator(tid('memory-page')).count(), 0, 'no page without its code');
    await page.unroute(about);
    await page.locator(tid('memory-page-open')).click();
    await page.locator(tid('memory-page')).waitFor();

    // Deleting a conversation (split point `edits`) with its chunk refused: the banner says so and
    // the conversation stays; with the network back the same Delete deletes it.
    await page.reload();
    await waitForAppReady(page);
    const edits = /\/split_edits-[0-9a-f]{16}\.wasm$/;
    let refusedEdits = 0;
    await page.route(edits, (route) => ((refusedEdits += 1), route.abort('internetdisconnected')));
    await item(page, 'c-short').hover();
    await item(page, 'c-short').locator(tid('delete-conversation')).click();
    await item(page, 'c-short').locator(tid('confirm-delete')).click();
    await page.locator(tid('error-banner')).filter({ hasText: /could not be loaded/ }).waitFor();
    assert.ok(refusedEdits >= 1, 'the edits chunk was asked for');
    assert.equal(await item(page, 'c-short').count(), 1, 'the conversation is kept');
    await page.unroute(edits);
    await page.locator(tid('error-banner')).getByRole('button', { name: 'Dismiss' }).click();
    await item(page, 'c-short').hover();
    await item(page, 'c-short').locator(tid('delete-conversation')).click();
    await item(page, 'c-short').locator(tid('confirm-delete')).click();
    await item(page, 'c-short').waitFor({ state: 'detached' });
    await item(page, 'c-long').waitFor();
  } finally {
    await context.close();
  }
});

test('the turn chunk is asked for at idle after the first screen; refused, a send keeps the message and sends nothing, and Retry sends it once', async () => {
  const { site, agent } = harness;
  site.setOffline(false);
  // No service worker: the chunk can only come from the network.
  const context = await harness.browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  try {
    const turn = /\/split_turn-[0-9a-f]{16}\.wasm$/;
    let refused = 0;
    await page.route(turn, (route) => ((refused += 1), route.abort('internetdisconnected')));
    await openApp(page, site.url);
    await page.locator(tid('conversation-list')).waitFor();
    // Nothing was sent or previewed by hand: the app asks for the turn's chunk on its own, at idle.
    await waitUntil(() => refused >= 1, 'the turn chunk is asked for at idle');
    assert.equal(await page.locator(tid('error-banner')).count(), 0, 'an idle fetch that failed says nothing');
    await configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model' });
    const before = agent.chatRequests().length;
    await page.locator(tid('composer-input')).fill('Sent without the turn code');
    await page.locator(tid('send-button')).click();
    await page.locator(tid('error-banner')).filter({ hasText: /could not be loaded/ }).waitFor();
    await page.locator(tid('message')).filter({ hasText: 'Sent without the turn code' }).waitFor();
    assert.equal(agent.chatRequests().length, before, 'nothing sent without the turn code');
    // The network is back: Retry sends the kept message, once.
    await page.unroute(turn);
    await page.locator(tid('error-banner')).getByRole('button', { name: 'Dismiss' }).click();
    await page.locator(tid('retry-button')).click();
    await waitForAssistant(page);
    assert.equal(agent.chatRequests().length, before + 1, 'sent once');
    assert.equal(await page.locator(tid('message')).filter({ hasText: 'Sent without the turn code' }).count(), 1);
  } finally {
    await context.close();
  }
});

test("a returning start takes config.json from the worker's cache and refreshes it for the next start", async () => {
  const { site } = harness;
  const model = async (page) => {
    await page.locator(tid('settings-open')).click();
    const value = await page.locator(tid('settings-model')).inputValue();
    await page.keyboard.press('Escape');
    await page.locator(tid('settings-model')).waitFor({ state: 'hidden' });
    return value;
  };
  const configRequests = () => site.requests.filter((r) => r.url.endsWith('/config.json')).length;
  site.setOverride('config.json', JSON.stringify({ model: 'model-one' }));
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'config-cache', async () => {
      await openApp(page, site.url);
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      assert.equal(await model(page), 'model-one');
      // The deployment changes its config: the next start uses the cached copy at once, and the
      // worker fetches the new one meanwhile.
      site.setOverride('config.json', JSON.stringify({ model: 'model-two' }));
      const before = configRequests();
      await page.reload();
      await waitForAppReady(page);
      assert.equal(await model(page), 'model-one');
      await waitUntil(() => configRequests() > before, 'the worker refreshes config.json');
      // The start after that has it.
      await page.reload();
      await waitForAppReady(page);
      assert.equal(await model(page), 'model-two');
      assertNoPageProblems(issues);
    });
  } finally {
    site.setOverride('config.json');
    await context.close();
  }
});

/** Resolves once `check()` is true (polled every 50 ms, for at most 10 s). */
async function waitUntil(check, what) {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`timed out: ${what}`);
}

test('an older database: its data migrations are a chunk of their own, fetched only then; refused, the app opens without them and they run at the next start', async () => {
  const { site } = harness;
  site.setOffline(false);
  // No service worker: the chunk can only come from the network.
  const context = await harness.browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  try {
    // A database of the first version (a flat `messages` list), made on the app's origin before the
    // app ever opened there: a page of the origin that is not the app.
    await page.goto(new URL('manifest.webmanifest', site.url).href);
    await page.evaluate(() => new Promise((resolve, reject) => {
      const open = indexedDB.open('memoire', 1);
      open.onupgradeneeded = () => open.result.createObjectStore('messages', { keyPath: 'id' });
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const tx = open.result.transaction('messages', 'readwrite');
        tx.objectStore('messages').put({ id: 'm1', agent_id: 'alice', role: 'user', content: 'kept from before', timestamp: 1000 });
        tx.oncomplete = () => (open.result.close(), resolve());
        tx.onerror = () => reject(tx.error);
      };
    }));
    const migrate = /\/split_migrate-[0-9a-f]{16}\.wasm$/;
    let refused = 0;
    await page.route(migrate, (route) => ((refused += 1), route.abort('internetdisconnected')));
    // The app's own list drawn (the static first screen before it has one too).
    await context.addInitScript(() => addEventListener('memoire-first-screen', () => (window.__drawn = true), { once: true }));
    await openApp(page, site.url);
    await page.waitForFunction(() => window.__drawn === true);
    assert.ok(refused >= 1, 'the migrations chunk was asked for');
    assert.equal(await item(page, 'legacy-alice').count(), 0, 'not migrated without its code');
    assert.equal(await page.locator(tid('error-banner')).count(), 0, 'a migration that waits says nothing');

    // The network is back: the next start migrates.
    await page.unroute(migrate);
    await page.reload();
    await waitForAppReady(page);
    await item(page, 'legacy-alice').waitFor();
    await item(page, 'legacy-alice').click();
    await page.locator(tid('message')).filter({ hasText: 'kept from before' }).waitFor();

    // A database born with this version never asks for it.
    const fresh = await harness.browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'block' });
    try {
      const first = await fresh.newPage();
      const asked = [];
      first.on('request', (r) => asked.push(r.url()));
      await fresh.addInitScript(() => addEventListener('memoire-first-screen', () => (window.__drawn = true), { once: true }));
      await openApp(first, site.url);
      await first.waitForFunction(() => window.__drawn === true);
      await first.reload();
      await first.waitForFunction(() => window.__drawn === true);
      assert.ok(!asked.some((u) => migrate.test(u)), 'no migrations chunk for a new database');
    } finally {
      await fresh.close();
    }
  } finally {
    await context.close();
  }
});
