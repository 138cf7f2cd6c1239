// Browser benchmarks of the built app (DIST) in headless Debian Chromium, driven only through the
// data-testid contract and measured inside the page (performance.now(), rAF, PerformanceObserver).
// Run by `make bench` (scripts/bench.sh), or: cd tests/e2e && DIST=../../dist node bench/app.bench.mjs
//
// Prints one line per figure, each the median of several runs:
//   bench import_10k_msgs_ms <v> ms                      change on import-input -> the imported conversation listed
//                                                        (the wait between the preview shown and its confirm click left out)
//   bench import_10k_msgs_plain_js_ms <v> ms             the plain-JS floor: the same 10k records (search terms
//                                                        included) added in one transaction, same page and run
//   bench import_vs_plain_js_ratio <v> ratio             import ÷ the floor measured just before it (median)
//   bench open_10k_conversation_ms <v> ms                click on a 10k conversation -> its last message painted
//   bench send_to_request_ms <v> ms                      send click -> fetch() of the chat request (10k conversation)
//   bench stream_1000_tok_per_s_longest_task_ms <v> ms   2,000 tokens at ~1,000 tok/s: longest main-thread task
//   bench stream_reasoning_1000_tok_per_s_longest_task_ms <v> ms  2,000 thinking tokens then 1,000 answer
//                                                        tokens at ~1,000 tok/s (the thinking block open, then
//                                                        collapsing): longest main-thread task
//   bench offline_reload_ms <v> ms                       network off, reload -> settings and conversation list shown
// Details (every run, the import phases and the plain-JS floor of its write, the real streaming rate,
// long-task counts) go to stderr.

import {
  startHarness,
  newAppPage,
  openApp,
  waitForAppReady,
  configureEndpoint,
  endpointBase,
  tid,
  assertNoPageProblems,
  withDiagnostics,
} from '../helpers.mjs';
import { gapProbe } from './probe.mjs';

const N_MESSAGES = 10_000;
const IMPORT_RUNS = Number(process.env.BENCH_IMPORT_RUNS ?? 5); // each imports a new 10k conversation; they are then the ones opened
// BENCH_ONLY=import stops after the import figure (for iterating on the import path); BENCH_ONLY=stream
// measures only the streaming figures (and the offline reload after them).
const ONLY = process.env.BENCH_ONLY ?? '';
// BENCH_DETAIL=1 also stamps the first and last `add` of each transaction (one performance.now() per
// add, so it costs a little; the printed figures are measured without it unless it is set).
const DETAIL = process.env.BENCH_DETAIL === '1';
const OPEN_RUNS = 7;
const SEND_RUNS = 5;
const STREAM_RUNS = 3;
const STREAM_TOKENS = 2_000;
const THINKING_TOKENS = 2_000;
const ANSWER_TOKENS = 1_000;
// 1,000 tokens/s as the agent can pace it: pieces of TOKENS_PER_PIECE tokens, one every
// TOKENS_PER_PIECE ms (a 1 ms timer per single token only reaches ~300 tokens/s in Node on a busy box).
const TOKENS_PER_PIECE = 8;
const OFFLINE_RUNS = 5;
const STEP_TIMEOUT_MS = Number(process.env.BENCH_STEP_TIMEOUT_MS ?? 60_000);

const log = (...a) => console.error('[app.bench]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (v) => (Math.round(v * 10) / 10).toFixed(1);

/** Runs `fn` and fails with a clear message if it takes longer than `ms`. */
async function step(name, fn, ms = STEP_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`benchmark step "${name}" did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([fn(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** ~200 characters of deterministic, markdown-flavoured text, varied per message. */
function content(i) {
  const base = `Message ${i}: the **quick** brown fox jumps over the lazy dog while Memoire keeps every word, ` +
    `and the agent answers with a \`code span\`, a [link](https://example.org/${i}) and a little more text.`;
  return base;
}

/** A backup file (engine/backup.rs, format version 1) with one conversation of `n` messages. */
function backupFile(convId, n) {
  const t0 = 1_700_000_000_000;
  const messages = [];
  for (let i = 0; i < n; i++) {
    messages.push({
      id: `${convId}-m${i}`,
      conversation_id: convId,
      seq: i + 1,
      role: i % 2 ? 'assistant' : 'user',
      content: content(i),
      status: 'complete',
      created_at: t0 + i * 1000,
      tool_calls: [],
      usage: null,
      error: null,
      path: null,
      model: null,
    });
  }
  return JSON.stringify({
    format: 'memoire-backup',
    version: 1,
    exported_at: t0 + n * 1000,
    conversations: [
      {
        conversation: {
          id: convId,
          title: `Bench ${convId}`,
          title_is_custom: true,
          created_at: t0,
          updated_at: t0 + n * 1000,
          message_count: n,
          endpoint_profile_id: null,
          remote_handle: null,
          last_path: null,
          memory_overrides: {
            recent_messages: null,
            summary_every_pairs: null,
            context_tokens: null,
            reply_reserve_tokens: null,
            max_message_chars: null,
            history_format: null,
          },
        },
        messages,
        summaries: [],
        entities: [],
      },
    ],
    shared_entities: [],
  });
}

/**
 * In-page instruments, installed before any app script: `__bench.until(selector)` resolves with the
 * performance.now() of the first frame after `selector` matches (checked on every DOM mutation, then
 * stamped after the next animation frame has been produced: rAF + a posted message, which runs after
 * that frame's paint); capturing listeners stamp the last `click` and `change`; `fetch` is wrapped to
 * stamp every call; `__bench.readyAt` is when settings-open and a conversation item first both exist.
 */
function instruments(detail) {
  const b = (window.__bench = { clicks: [], changes: [], fetches: [], txs: [], readyAt: null });
  if (detail) {
    // The first and last `add` of each transaction (when the main thread queued them).
    const realAdd = IDBObjectStore.prototype.add;
    IDBObjectStore.prototype.add = function (value, key) {
      const rec = b.txs.find((t) => t.tx === this.transaction);
      const now = performance.now();
      if (rec) {
        rec.firstAdd ??= now;
        rec.lastAdd = now;
        rec.adds = (rec.adds ?? 0) + 1;
      }
      return key === undefined ? realAdd.call(this, value) : realAdd.call(this, value, key);
    };
  }
  // Every IndexedDB transaction's start and end (per transaction, never per request, so the cost of
  // the writes measured is untouched): the import's phases are read off them.
  const realTransaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    const tx = realTransaction.call(this, stores, mode, options);
    const rec = { start: performance.now(), end: null, mode: tx.mode, stores: [...tx.objectStoreNames] };
    if (detail) Object.defineProperty(rec, 'tx', { value: tx, enumerable: false });
    b.txs.push(rec);
    const end = () => (rec.end = performance.now());
    tx.addEventListener('complete', end);
    tx.addEventListener('abort', end);
    return tx;
  };
  addEventListener('click', (e) => b.clicks.push({ t: performance.now(), testid: e.target?.closest?.('[data-testid]')?.dataset.testid }), true);
  addEventListener('change', () => b.changes.push(performance.now()), true);
  const realFetch = window.fetch.bind(window);
  window.fetch = function (input, init) {
    const t = performance.now();
    const url = typeof input === 'string' ? input : input?.url ?? String(input);
    const rec = { t, url, body: null };
    b.fetches.push(rec);
    try {
      const bodySource = input instanceof Request ? input.clone().text() : Promise.resolve(String(init?.body ?? ''));
      bodySource.then((text) => (rec.body = text), () => {});
    } catch {}
    return realFetch(input, init);
  };
  b.afterPaint = () =>
    new Promise((done) =>
      requestAnimationFrame(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => done(performance.now());
        ch.port2.postMessage(0);
      }),
    );
  b.until = (selector) =>
    new Promise((done) => {
      const check = () => {
        if (!document.querySelector(selector)) return false;
        obs.disconnect();
        b.afterPaint().then(done);
        return true;
      };
      const obs = new MutationObserver(check);
      obs.observe(document, { childList: true, subtree: true, attributes: true });
      check();
    });
  const readySel = ['[data-testid="settings-open"]', '[data-testid="conversation-item"]'];
  const watchReady = () => {
    if (b.readyAt !== null || !readySel.every((s) => document.querySelector(s))) return;
    b.readyAt = -1;
    b.afterPaint().then((t) => (b.readyAt = t));
  };
  new MutationObserver(watchReady).observe(document, { childList: true, subtree: true });
}

async function importBackup(page, convId, file) {
  const input = page.locator(tid('import-input'));
  if ((await input.count()) === 0) await page.locator(tid('export-button')).click();
  await input.waitFor({ state: 'attached' });
  const previewed = page.evaluate((sel) => window.__bench.until(sel), tid('import-preview'));
  await page.evaluate(() => {
    window.__bench.changes.length = 0;
    window.__bench.clicks.length = 0;
    window.__bench.txs.length = 0;
  });
  await input.setInputFiles({ name: `${convId}.json`, mimeType: 'application/json', buffer: Buffer.from(file) });
  // The preview (read and checked; what is new here), then its confirm: the time between the two is
  // the user's, not the import's, and is left out.
  const shown = await previewed;
  const listed = page.evaluate((sel) => window.__bench.until(sel), tid('conversation-item', `[data-conversation-id="${convId}"]`));
  await page.locator(tid('import-confirm')).click();
  const end = await listed;
  const { start, confirm } = await page.evaluate(() => ({
    start: window.__bench.changes[0],
    confirm: window.__bench.clicks.find((c) => c.testid === 'import-confirm')?.t,
  }));
  if (typeof start !== 'number') throw new Error('no change event was seen on import-input');
  if (typeof confirm !== 'number') throw new Error('the click on import-confirm was not seen in the page');
  const waited = confirm - shown;
  // Phases: read + check until the first transaction, the lookups, the write (the readwrite
  // transaction over messages), then the UI until the conversation is listed.
  const txs = await page.evaluate(() => window.__bench.txs);
  const write = txs.find((t) => t.mode === 'readwrite' && t.stores.includes('messages'));
  if (txs.length && write?.end) {
    const f = (v) => fmt(v).padStart(7);
    log(
      `import ${convId}: read+check ${f(txs[0].start - start)} preview ${f(shown - start)} confirm->write ${f(write.start - confirm)}`,
      `write ${f(write.end - write.start)} ui ${f(end - write.end)} total ${f(end - start - waited)} ms (the ${fmt(waited)} ms before the confirm click left out)`,
    );
    if (DETAIL) {
      for (const t of txs) {
        const adds = t.adds ? ` adds ${t.adds} first ${f(t.firstAdd - t.start)} last ${f(t.lastAdd - t.start)}` : '';
        log(`  tx ${t.mode.padEnd(9)} ${t.stores.join(',').padEnd(40)} start ${f(t.start - start)} end ${f(t.end - start)}${adds}`);
      }
    }
  }
  // Close the backup menu again, so it covers nothing.
  if ((await input.count()) > 0) await page.locator(tid('export-button')).click();
  return end - start - waited;
}

/**
 * In the page: `n` IndexedDB `add`s of the record the store writes, in one transaction, into a fresh
 * database with the store's `messages` schema; returns ms from the transaction's start to its
 * completion. The import's write phase cannot be faster than this.
 */
async function plainJsWrite(n) {
  const name = `bench-floor-${Date.now()}`;
  const db = await new Promise((ok, fail) => {
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => {
      const s = r.result.createObjectStore('messages', { keyPath: 'id' });
      s.createIndex('by_conversation_seq', ['conversation_id', 'seq'], { unique: true });
      s.createIndex('by_streaming', 'streaming');
      s.createIndex('by_term', 'terms', { multiEntry: true });
    };
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  });
  const text = (i) => `Message ${i}: the **quick** brown fox jumps over the lazy dog while Memoire keeps every word, ` +
    `and the agent answers with a \`code span\`, a [link](https://example.org/${i}) and a little more text.`;
  // The search terms the store keeps on each record (engine/search.rs: distinct lowercase words, sorted;
  // for this ASCII text, runs of letters, digits, + and #), computed before the clock starts: the floor
  // is the write of the same records, not their preparation.
  const terms = (t) => [...new Set(t.toLowerCase().split(/[^a-z0-9+#]+/).filter(Boolean).map((w) => w.slice(0, 32)))].sort();
  const records = Array.from({ length: n }, (_, i) => ({ id: `floor-m${i}`, conversation_id: 'floor', seq: i + 1,
    role: i % 2 ? 'assistant' : 'user', content: text(i), status: 'complete', created_at: 1_700_000_000_000 + i * 1000,
    terms: terms(text(i)) }));
  const t0 = performance.now();
  let issued = 0;
  await new Promise((ok, fail) => {
    const tx = db.transaction(['messages'], 'readwrite');
    const s = tx.objectStore('messages');
    for (const r of records) s.add(r);
    issued = performance.now() - t0;
    tx.oncomplete = ok;
    tx.onabort = () => fail(tx.error);
  });
  const ms = performance.now() - t0;
  db.close();
  await new Promise((ok) => {
    const r = indexedDB.deleteDatabase(name);
    r.onsuccess = r.onerror = r.onblocked = ok;
  });
  return { ms, issued };
}

async function openConversation(page, convId) {
  const lastId = `${convId}-m${N_MESSAGES - 1}`;
  const painted = page.evaluate((sel) => window.__bench.until(sel), tid('message', `[data-message-id="${lastId}"]`));
  await page.evaluate(() => (window.__bench.clicks.length = 0));
  await page.locator(tid('conversation-item', `[data-conversation-id="${convId}"]`)).click();
  const end = await painted;
  const click = await page.evaluate(() => window.__bench.clicks.find((c) => c.testid !== undefined));
  if (!click) throw new Error('the click on the conversation item was not seen in the page');
  return end - click.t;
}

/** Ids of the assistant messages on screen now. */
function assistantIds(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].map((m) => m.dataset.messageId),
  );
}

/** Waits until an assistant message that is not one of `known` is on screen and complete. */
async function waitNewAssistantDone(page, known) {
  await page.waitForFunction(
    (known) => {
      const seen = new Set(known);
      return [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')].some(
        (m) => !seen.has(m.dataset.messageId) && m.getAttribute('data-status') === 'complete',
      );
    },
    known,
    { timeout: STEP_TIMEOUT_MS },
  );
}

/** Waits until the agent has no memory-update request still streaming (they run after a turn). */
async function memoryQuiet(agent) {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const busy = agent.memoryRequests().some((r) => !r.outcome || r.outcome === 'streaming');
    if (!busy) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function sendToRequest(page, agent, run) {
  const text = `bench send ${run} ${Date.now()}`;
  const before = await assistantIds(page);
  await page.locator(tid('composer-input')).fill(text);
  await page.evaluate(() => {
    window.__bench.clicks.length = 0;
    window.__bench.fetches.length = 0;
  });
  agent.script({ text: 'ok', delayMs: 5 });
  await page.locator(tid('send-button')).click();
  const found = await page.waitForFunction(
    (text) => {
      const b = window.__bench;
      const click = b.clicks.find((c) => c.testid === 'send-button');
      const f = b.fetches.find((x) => x.body !== null && x.body.includes(text));
      return click && f ? { click: click.t, fetch: f.t } : null;
    },
    text,
    { timeout: STEP_TIMEOUT_MS },
  );
  const { click, fetch } = await found.jsonValue();
  await waitNewAssistantDone(page, before);
  await memoryQuiet(agent);
  return fetch - click;
}

/** `count` tokens of markdown-ish text in pieces of TOKENS_PER_PIECE tokens. */
function tokenPieces(count) {
  const tokens = Array.from({ length: count }, (_, i) => (i % 12 === 11 ? 'word.\n\n' : `w${i % 97} `));
  const pieces = [];
  for (let i = 0; i < tokens.length; i += TOKENS_PER_PIECE) pieces.push(tokens.slice(i, i + TOKENS_PER_PIECE).join(''));
  return pieces;
}

async function streamLongestTask(page, agent, run) {
  const reply = { chunks: tokenPieces(STREAM_TOKENS), delayMs: TOKENS_PER_PIECE };
  return measureStream(page, agent, `stream run ${run}`, STREAM_TOKENS, reply);
}

/** A reply that thinks first (reasoning_content deltas), then answers, all at ~1,000 tok/s. */
async function streamReasoningLongestTask(page, agent, run) {
  const reply = { chunks: tokenPieces(ANSWER_TOKENS), reasoningChunks: tokenPieces(THINKING_TOKENS), delayMs: TOKENS_PER_PIECE };
  return measureStream(page, agent, `reasoning stream run ${run}`, THINKING_TOKENS + ANSWER_TOKENS, reply);
}

/** Streams `reply` (`tokens` in all) into the open conversation: the longest main-thread task. */
async function measureStream(page, agent, label, tokens, reply) {
  const before = await assistantIds(page);
  agent.script(reply);
  await page.evaluate(() => {
    const b = window.__bench;
    b.longtasks = [];
    b.obs?.disconnect();
    b.obs = new PerformanceObserver((list) => b.longtasks.push(...list.getEntries().map((e) => e.duration)));
    b.obs.observe({ type: 'longtask' });
    window.__gapProbe.start();
  });
  const t0 = Date.now();
  await page.locator(tid('composer-input')).fill(`bench ${label}`);
  await page.locator(tid('send-button')).click();
  await waitNewAssistantDone(page, before);
  const secs = (Date.now() - t0) / 1000;
  const { longtasks, maxGap } = await page.evaluate(() => {
    const b = window.__bench;
    window.__gapProbe.stop();
    b.obs.disconnect();
    return { longtasks: b.longtasks, maxGap: window.__gapProbe.max };
  });
  const longest = Math.max(maxGap, ...longtasks, 0);
  log(`${label}: ${tokens} tokens in ${secs.toFixed(2)} s (${Math.round(tokens / secs)} tok/s incl. request), longtasks ${JSON.stringify(longtasks.map(Math.round))}, max probe gap ${fmt(maxGap)} ms`);
  await memoryQuiet(agent);
  return longest;
}

async function offlineReload(page) {
  await page.reload();
  await waitForAppReady(page);
  await page.waitForFunction(() => typeof window.__bench?.readyAt === 'number' && window.__bench.readyAt > 0, null, {
    timeout: STEP_TIMEOUT_MS,
  });
  return page.evaluate(() => window.__bench.readyAt);
}

async function main() {
  const harness = await startHarness();
  const { agent, site, browser } = harness;
  const { context, page, issues } = await newAppPage(browser);
  const results = {};
  try {
    await withDiagnostics(page, issues, 'app-bench', async () => {
      await context.addInitScript(gapProbe);
      await context.addInitScript(instruments, DETAIL);
      agent.setDefault({ text: 'ok' });
      agent.setMemoryDefault({ text: 'not a memory reply' });
      await step('open the app', () => openApp(page, site.url));
      await step('configure the endpoint', () =>
        configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model' }));

      if (ONLY !== 'stream') {
        const convIds = Array.from({ length: IMPORT_RUNS }, (_, i) => `bench-10k-${i}`);
        const imports = [];
        const floors = [];
        for (const id of convIds) {
          const file = backupFile(id, N_MESSAGES);
          // Before each import, the plain-JS floor of its write, at the same moment on a busy machine.
          const floor = await step(`plain-JS floor before ${id}`, () => page.evaluate(plainJsWrite, N_MESSAGES));
          log(`floor before ${id}: ${fmt(floor.ms)} ms (adds issued in ${fmt(floor.issued)} ms)`);
          floors.push(floor.ms);
          imports.push(await step(`import ${id}`, () => importBackup(page, id, file)));
        }
        log('import_10k_msgs_ms runs', imports.map(fmt).join(' '));
        log(`floor: plain JS, ${N_MESSAGES} adds of the stored record in one transaction, same page and schema:`, floors.map(fmt).join(' '), 'ms');
        log('import/floor ratios', imports.map((v, i) => (v / floors[i]).toFixed(2)).join(' '));
        results.import_10k_msgs_ms = median(imports);
        results.import_10k_msgs_plain_js_ms = median(floors);
        results.import_vs_plain_js_ratio = median(imports.map((v, i) => v / floors[i]));
        if (ONLY === 'import') return;

        const opens = [];
        for (let i = 0; i < OPEN_RUNS; i++) {
          const id = convIds[i % convIds.length];
          opens.push(await step(`open ${id}`, () => openConversation(page, id)));
        }
        log('open_10k_conversation_ms runs', opens.map(fmt).join(' '));
        results.open_10k_conversation_ms = median(opens);

        // The conversation opened last is a 10k one: send there.
        const sends = [];
        for (let i = 0; i < SEND_RUNS; i++) sends.push(await step(`send ${i}`, () => sendToRequest(page, agent, i)));
        log('send_to_request_ms runs', sends.map(fmt).join(' '));
        results.send_to_request_ms = median(sends);

      }
      // Streaming in a fresh conversation (the reply is the only long thing on screen).
      await page.locator(tid('new-conversation')).click();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="message"]').length === 0, null, {
        timeout: STEP_TIMEOUT_MS,
      });
      const streams = [];
      for (let i = 0; i < STREAM_RUNS; i++) streams.push(await step(`stream ${i}`, () => streamLongestTask(page, agent, i)));
      log('stream_1000_tok_per_s_longest_task_ms runs', streams.map(fmt).join(' '));
      results.stream_1000_tok_per_s_longest_task_ms = median(streams);
      const thinking = [];
      for (let i = 0; i < STREAM_RUNS; i++) thinking.push(await step(`reasoning stream ${i}`, () => streamReasoningLongestTask(page, agent, i)));
      log('stream_reasoning_1000_tok_per_s_longest_task_ms runs', thinking.map(fmt).join(' '));
      results.stream_reasoning_1000_tok_per_s_longest_task_ms = median(thinking);

      // Offline: the service worker must control the page (it did since the first visit's reload).
      await step('service worker ready', async () => {
        await page.evaluate(() => navigator.serviceWorker.ready);
        // What the worker precached on install: the app's js and wasm should be there after one visit.
        const missing = await page.evaluate(async () => {
          const cached = [];
          for (const name of await caches.keys()) {
            for (const req of await (await caches.open(name)).keys()) cached.push(new URL(req.url).pathname);
          }
          const wanted = performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)
            .filter((p) => /\.(js|wasm|css)$/.test(p) && !p.endsWith('/sw.js'));
          return wanted.filter((p) => !cached.includes(p));
        });
        if (missing.length) log(`warning: after one visit the service worker has not cached ${missing.join(', ')}; measuring after a second (online) load`);
        // A second online load goes through the worker, so the shell is cached either way.
        await page.reload();
        await waitForAppReady(page);
        if (!(await page.evaluate(() => Boolean(navigator.serviceWorker.controller)))) {
          throw new Error('no service worker controls the page after a reload: offline cannot work');
        }
      });
      await context.setOffline(true);
      const offline = [];
      for (let i = 0; i < OFFLINE_RUNS; i++) offline.push(await step(`offline reload ${i}`, () => offlineReload(page)));
      await context.setOffline(false);
      log('offline_reload_ms runs', offline.map(fmt).join(' '));
      results.offline_reload_ms = median(offline);

      assertNoPageProblems(issues, { allowConsole: [/Failed to load resource/, /ERR_INTERNET_DISCONNECTED/] });
    });
  } finally {
    await context.close().catch(() => {});
    await harness.close();
  }
  for (const [name, v] of Object.entries(results)) console.log(name.endsWith("_ratio") ? `bench ${name} ${v.toFixed(2)} ratio` : `bench ${name} ${fmt(v)} ms`);
}

main().catch((err) => {
  console.error(`app benchmarks failed: ${err?.message ?? err}\n${err?.stack ?? ''}`);
  process.exit(1);
});
