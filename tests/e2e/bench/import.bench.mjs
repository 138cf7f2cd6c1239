// Browser benchmark of importing another app's export (issue 13): a generated ChatGPT export of
// 10,000 messages (500 conversations of 20, each with a hidden system node and a regenerated answer
// on a branch not shown) through the app's real Import control in headless Debian Chromium, unthrottled.
// Run by `make bench` (scripts/bench.sh), or: cd tests/e2e && DIST=../../dist node bench/import.bench.mjs
//
// Prints one line per figure, each the median of the runs:
//   bench import_chatgpt_10k_msgs_ms <v> ms        file chosen -> everything stored (the notice): the reading
//                                                  and checking up to the preview, plus its confirm click up
//                                                  to the notice (the user's wait in between left out)
//   bench import_chatgpt_10k_msgs_plain_js_ms <v> ms  the plain-JS write floor: the same 10,000 message records
//                                                  (search terms included) and 500 conversation records put in
//                                                  one transaction into a database with the same indexes, in
//                                                  the same page just before each import
//   bench import_chatgpt_vs_plain_js_ratio <v> ratio  import ÷ that floor (median of the runs; goal 1.2)
//   bench import_longest_task_ms <v> ms            the longest main-thread task during the import (longtask
//                                                  entries, and the largest gap of a posted-message probe,
//                                                  which also sees tasks under 50 ms; goal < 50), in runs of
//                                                  their own: the probe keeps the page busy between tasks
//                                                  (one of the machine's 2 cores) during the import but not
//                                                  during its floor (interleaved runs at a load of 5-8:
//                                                  imports of 2,987-3,258 ms with it, 2,677-2,776 without,
//                                                  one outlier of 3,626), so the timed runs (import and
//                                                  floor alike) run without it
//   bench import_nextchat_zip_5k_longest_task_ms <v> ms  the same, importing a NextChat backup of 5,000 messages
//                                                  (250 sessions) inside a ZIP: a format read as one JSON
//                                                  value, so its inflation, parse and reading are sliced
//                                                  (median of the runs; goal < 50)
//   bench import_chatgpt_zip_images_longest_task_ms <v> ms  the same, importing a ChatGPT ZIP of 12 messages
//                                                  with an image each (8 of 2400x1800 to resize, 4 of
//                                                  1200x900 of noise, 3.2 MB each), 17 MB: every image
//                                                  inflated in slices, typed, resized, hashed, then stored
//                                                  (median of the runs; goal < 50). BENCH_IMPORT_ONLY=images
//                                                  runs this figure alone. Measured (session 16, loads 7-60):
//                                                  365 ms (224-473), all of it the browser's PNG encoding of
//                                                  the images it resizes: Chromium encodes convertToBlob's PNG
//                                                  in idle time on the main thread and, when the probe keeps
//                                                  the page from idling, forces it after about a second as one
//                                                  task. Without the probe (longtask entries only) the same
//                                                  import of 12 resized images took 849 ms, longest task 72 ms;
//                                                  12 images kept as they came (no resize): 965 ms, no task
//                                                  over 75 ms while reading, 220 ms once while storing.
// Details (every run: phases, long tasks, the floor) go to stderr.

import { startHarness, newAppPage, openApp, tid, assertNoPageProblems, withDiagnostics, zip } from '../helpers.mjs';
import { gapProbe } from './probe.mjs';
import { png } from '../png.mjs';
import { deflateSync, crc32 } from 'node:zlib';

const CONVERSATIONS = 500;
const PER_CONVERSATION = 20;
const RUNS = Number(process.env.BENCH_IMPORT_RUNS ?? 3);

const log = (...a) => console.error('[import.bench]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (v) => (Math.round(v * 10) / 10).toFixed(1);

/** ~200 characters of message text, varied per message. */
const text = (run, c, m) => `Run ${run}, conversation ${c}, message ${m}: the quick brown fox jumps over the lazy dog ` +
  `while the assistant explains borrowing, lifetimes and traits in Rust with a short example and a little more text.`;

/** A ChatGPT `conversations.json` (ARCHITECTURE.md, issue 13): `mapping` trees, the shown branch from `current_node`. */
function chatgptExport(run) {
  const out = [];
  for (let c = 0; c < CONVERSATIONS; c++) {
    const id = `r${run}-c${c}`;
    const mapping = {};
    const node = (nid, parent, message) => {
      mapping[nid] = { id: nid, parent, children: [], message };
      if (parent) mapping[parent].children.push(nid);
    };
    const msg = (nid, role, body, t, extra = {}) => ({
      id: nid, author: { role }, create_time: 1_700_000_000 + c * 100 + t, content: { content_type: 'text', parts: [body] },
      metadata: {}, recipient: 'all', ...extra,
    });
    node(`${id}-root`, null, null);
    node(`${id}-sys`, `${id}-root`, msg(`${id}-sys`, 'system', '', 0, { metadata: { is_visually_hidden_from_conversation: true } }));
    let parent = `${id}-sys`;
    for (let m = 0; m < PER_CONVERSATION; m++) {
      const nid = `${id}-m${m}`;
      node(nid, parent, msg(nid, m % 2 ? 'assistant' : 'user', text(run, c, m), m + 1));
      // A regenerated answer the user did not keep.
      if (m === 1) node(`${id}-alt`, parent, msg(`${id}-alt`, 'assistant', 'An answer on another branch.', m + 1));
      parent = nid;
    }
    out.push({ id, conversation_id: id, title: `Bench ${id}`, create_time: 1_700_000_000 + c * 100, update_time: 1_700_000_100 + c * 100, mapping, current_node: parent });
  }
  return JSON.stringify(out);
}

/** In-page instruments: change and click stamps, every transaction's start and end, long tasks and a probe. */
function instruments() {
  const b = (window.__imp = { changes: [], clicks: [], txs: [], longtasks: [], probing: false });
  addEventListener('change', () => b.changes.push(performance.now()), true);
  addEventListener('click', (e) => b.clicks.push({ t: performance.now(), testid: e.target?.closest?.('[data-testid]')?.dataset.testid }), true);
  const realTransaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    const tx = realTransaction.call(this, stores, mode, options);
    const rec = { start: performance.now(), end: null, mode: tx.mode, stores: [...tx.objectStoreNames] };
    b.txs.push(rec);
    const end = () => (rec.end = performance.now());
    tx.addEventListener('complete', end);
    tx.addEventListener('abort', end);
    return tx;
  };
  new PerformanceObserver((list) => {
    if (b.probing) b.longtasks.push(...list.getEntries().map((e) => ({ start: e.startTime, ms: e.duration })));
  }).observe({ type: 'longtask' });
  // The probe's gaps (bench/probe.mjs) only when `spin`: it keeps a core busy.
  b.startProbe = (spin) => {
    b.longtasks = [];
    b.probing = true;
    window.__gapProbe.reset();
    if (spin) window.__gapProbe.start();
  };
  b.stopProbe = () => {
    b.probing = false;
    window.__gapProbe.stop();
  };
  b.afterPaint = () => new Promise((done) => requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => done(performance.now());
    ch.port2.postMessage(0);
  }));
  b.until = (selector, text) => new Promise((done) => {
    const check = () => {
      const el = document.querySelector(selector);
      if (!el || (text && !el.textContent.includes(text))) return false;
      obs.disconnect();
      b.afterPaint().then(done);
      return true;
    };
    const obs = new MutationObserver(check);
    obs.observe(document, { childList: true, subtree: true, characterData: true });
    check();
  });
}

/**
 * In the page: the records the import writes (messages as the store keeps them, search terms
 * included, and the conversations), put with plain IndexedDB code in one transaction into a
 * database with the store's indexes; ms from the transaction's start to its completion.
 *
 * The floor's database is kept from run to run, as the app's is, so each run's floor writes into a
 * database already holding the earlier runs' records, like the import it is compared with (until
 * session 8 each floor wrote into a fresh database and deleted it right before the import: the
 * import's database was the larger one, and the deletion's clean-up could overlap the import).
 * It is deleted once the runs are over (`dropFloor`).
 */
async function plainJsFloor({ run, conversations, per, name }) {
  const db = await new Promise((ok, fail) => {
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => {
      const s = r.result.createObjectStore('messages', { keyPath: 'id' });
      s.createIndex('by_conversation_seq', ['conversation_id', 'seq'], { unique: true });
      s.createIndex('by_streaming', 'streaming');
      s.createIndex('by_term', 'terms', { multiEntry: true });
      const c = r.result.createObjectStore('conversations', { keyPath: 'id' });
      c.createIndex('by_updated_at', 'updated_at');
      c.createIndex('by_title_term', 'title_terms', { multiEntry: true });
    };
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  });
  const body = (c, m) => `Run ${run}, conversation ${c}, message ${m}: the quick brown fox jumps over the lazy dog ` +
    `while the assistant explains borrowing, lifetimes and traits in Rust with a short example and a little more text.`;
  const terms = (t) => [...new Set(t.toLowerCase().split(/[^a-z0-9+#]+/).filter(Boolean).map((w) => w.slice(0, 32)))].sort();
  const convs = [];
  const messages = [];
  for (let c = 0; c < conversations; c++) {
    const id = `chatgpt-r${run}-c${c}`;
    convs.push({ id, title: `Bench r${run}-c${c}`, title_is_custom: true, created_at: 1_700_000_000_000, updated_at: 1_700_000_000_000 + c,
      message_count: per, last_seq: per - 1, title_terms: terms(`Bench r${run}-c${c}`) });
    for (let m = 0; m < per; m++) {
      const t = body(c, m);
      messages.push({ id: `${id}/r${run}-c${c}-m${m}`, conversation_id: id, seq: m, role: m % 2 ? 'assistant' : 'user', content: t,
        status: 'complete', created_at: 1_700_000_000_000 + m * 1000, terms: terms(t) });
    }
  }
  const t0 = performance.now();
  await new Promise((ok, fail) => {
    const tx = db.transaction(['conversations', 'messages'], 'readwrite');
    const cs = tx.objectStore('conversations');
    for (const r of convs) cs.put(r);
    const ms = tx.objectStore('messages');
    for (const r of messages) ms.add(r);
    tx.oncomplete = ok;
    tx.onabort = () => fail(tx.error);
  });
  const ms = performance.now() - t0;
  db.close();
  return ms;
}

/** In the page: deletes the floor's database once the runs are over. */
async function dropFloor(name) {
  await new Promise((ok) => {
    const r = indexedDB.deleteDatabase(name);
    r.onsuccess = r.onerror = r.onblocked = ok;
  });
}

/**
 * Chooses `file` in the Import control, checks the preview says `want`, confirms, and waits for the
 * notice; the probe stopped. Returns when the preview was shown and the import stored (page times),
 * and what the page recorded: the change and the confirm click, transactions, long tasks, probe gaps.
 */
async function throughControl(page, input, file, want) {
  const previewed = page.evaluate((sel) => window.__imp.until(sel), tid('import-preview'));
  await input.setInputFiles(file);
  const shown = await previewed;
  const preview = await page.locator(tid('import-preview')).innerText();
  if (!preview.includes(want)) throw new Error(`unexpected preview: ${preview}`);
  const stored = page.evaluate((sel) => window.__imp.until(sel, 'Imported'), tid('notice'));
  await page.locator(tid('import-confirm')).click();
  const end = await stored;
  const r = await page.evaluate(() => {
    const b = window.__imp;
    b.stopProbe();
    return { start: b.changes[0], confirm: b.clicks.find((c) => c.testid === 'import-confirm')?.t, txs: b.txs, longtasks: b.longtasks, gaps: window.__gapProbe.gaps };
  });
  return { shown, end, r };
}

/** One import through the control; `probe`: with the posted-message probe (the longest task), else timed. */
async function importRun(page, run, probe) {
  const file = chatgptExport(run);
  const input = page.locator(tid('import-input'));
  if ((await input.count()) === 0) await page.locator(tid('export-button')).click();
  await page.evaluate((spin) => {
    const b = window.__imp;
    b.changes.length = 0;
    b.clicks.length = 0;
    b.txs.length = 0;
    b.startProbe(spin);
  }, probe);
  const messages = CONVERSATIONS * PER_CONVERSATION;
  const { shown, end, r } = await throughControl(page, input, { name: 'conversations.json', mimeType: 'application/json', buffer: Buffer.from(file) },
    `${CONVERSATIONS} conversations, ${messages} messages`);
  if (typeof r.start !== 'number' || typeof r.confirm !== 'number') throw new Error('the change or the confirm click was not seen in the page');
  const notice = await page.locator(tid('notice')).innerText();
  if (!notice.includes(`Imported ${CONVERSATIONS} conversations and ${messages} messages`)) throw new Error(`unexpected notice: ${notice}`);
  await page.locator(tid('notice')).getByRole('button', { name: 'Dismiss' }).click();
  const write = r.txs.find((t) => t.mode === 'readwrite' && t.stores.includes('messages'));
  const total = shown - r.start + (end - r.confirm);
  // Tasks that began at the change event or later. The task the change event ends is Playwright
  // handing the 5 MB file to the page (1-2 s of base64 on this machine); the app's part in it is
  // only its change handler, which starts the import and returns at its first await.
  const during = (t) => t.start >= r.start - 1;
  const where = (t) => {
    const at = t.start + t.ms / 2;
    if (at < shown) return 'reading+checking';
    if (at < write.start) return 'confirm->write';
    if (at < write.end) return 'write';
    return 'after write';
  };
  const show = (ts) => JSON.stringify(ts.filter(during).map((t) => `${Math.round(t.ms)} ${where(t)} @${Math.round(t.start - r.start)}`));
  const longest = Math.max(...r.gaps.filter(during).map((t) => t.ms), ...r.longtasks.filter(during).map((t) => t.ms), 0);
  log(`run ${run}${probe ? ' (probe)' : ''}: ${fmt(file.length / 1e6)} MB; read+check to preview ${fmt(shown - r.start)} ms, confirm -> write start ${fmt(write.start - r.confirm)}`,
    `write ${fmt(write.end - write.start)} ui ${fmt(end - write.end)}; total ${fmt(total)} ms (the ${fmt(r.confirm - shown)} ms before the confirm left out)`);
  log(`run ${run}: long tasks ${show(r.longtasks)}; probe gaps over 30 ms ${show(r.gaps.filter((g) => g.ms > 30))}`);
  return { total, longest };
}

/** A NextChat backup (`chat-next-web-store`) of 250 sessions of 20 messages, zipped. */
function nextchatZip(run) {
  const sessions = [];
  for (let s = 0; s < 250; s++) {
    const messages = [];
    for (let m = 0; m < 20; m++) {
      messages.push({ id: `n${run}-s${s}-m${m}`, date: '2024/5/3 10:00:00', role: m % 2 ? 'assistant' : 'user', content: text(run, s, m) });
    }
    sessions.push({ id: `n${run}-s${s}`, topic: `NextChat ${run}/${s}`, memoryPrompt: '', messages, mask: { context: [] }, lastUpdate: 1_715_000_000_000 + s });
  }
  const json = JSON.stringify({ 'chat-next-web-store': { sessions }, 'access-control': { openaiApiKey: 'sk-not-imported' } }, null, 2);
  return { json, archive: zip([['NextChat-backup.json', Buffer.from(json)]]) };
}

/** Imports the NextChat ZIP through the control; the longest task from the file chosen to the notice. */
async function nextchatRun(page, run) {
  const { json, archive } = nextchatZip(run);
  const input = page.locator(tid('import-input'));
  if ((await input.count()) === 0) await page.locator(tid('export-button')).click();
  await page.evaluate(() => {
    const b = window.__imp;
    b.changes.length = 0;
    b.clicks.length = 0;
    b.startProbe(true);
  });
  const { shown, end, r } = await throughControl(page, input, { name: 'NextChat-backup.zip', mimeType: 'application/zip', buffer: archive },
    '250 conversations, 5000 messages');
  await page.locator(tid('notice')).getByRole('button', { name: 'Dismiss' }).click();
  const during = (t) => t.start >= r.start - 1;
  const where = (t) => (t.start + t.ms / 2 < shown ? 'reading+checking' : 'writing+ui');
  const tasks = [...r.gaps, ...r.longtasks].filter(during);
  const longest = Math.max(...tasks.map((t) => t.ms), 0);
  log(`nextchat run ${run}: a ${fmt(archive.length / 1e3)} kB zip of ${fmt(json.length / 1e6)} MB of JSON; read+check to preview ${fmt(shown - r.start)} ms,`,
    `confirm -> stored ${fmt(end - r.confirm)} ms; longest task ${fmt(longest)} ms; over 30 ms: ${JSON.stringify(tasks.filter((t) => t.ms > 30).map((t) => `${Math.round(t.ms)} ${where(t)}`))}`);
  return longest;
}

/** A w x h RGB PNG of noise (incompressible, as photos are). */
function noisePng(w, h, seed) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const raw = Buffer.alloc((1 + w * 3) * h);
  let x = seed * 2654435761 >>> 0 || 1;
  for (let i = 0; i < raw.length; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    raw[i] = i % (1 + w * 3) === 0 ? 0 : x & 255;
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 1 })), chunk('IEND', Buffer.alloc(0))]);
}

/** A ChatGPT export ZIP of one conversation: 12 user messages with an image each, and replies. */
function imagesZip(run) {
  const mapping = { root: { id: 'root', parent: null, children: [], message: null } };
  let parent = 'root';
  const files = [];
  const add = (id, message) => {
    mapping[id] = { id, parent, children: [], message };
    mapping[parent].children.push(id);
    parent = id;
  };
  for (let i = 0; i < 12; i++) {
    const file = `file-R${run}I${i}`;
    const picture = i < 8 ? png(2400, 1800) : noisePng(1200, 900, run * 100 + i);
    files.push([`${file}-photo${i}.png`, picture]);
    add(`u${i}`, { id: `u${i}`, author: { role: 'user' }, create_time: 1_700_000_000 + i * 10, recipient: 'all', metadata: { attachments: [{ id: file, name: `photo${i}.png` }] },
      content: { content_type: 'multimodal_text', parts: [{ content_type: 'image_asset_pointer', asset_pointer: `file-service://${file}`, width: 2400, height: 1800 }, `Picture ${i}?`] } });
    add(`a${i}`, { id: `a${i}`, author: { role: 'assistant' }, create_time: 1_700_000_005 + i * 10, recipient: 'all', metadata: {}, content: { content_type: 'text', parts: [`Reply ${i}.`] } });
  }
  const conv = [{ id: `img-${run}`, conversation_id: `img-${run}`, title: `Pictures ${run}`, create_time: 1_700_000_000, update_time: 1_700_000_200, mapping, current_node: parent }];
  return zip([['conversations.json', Buffer.from(JSON.stringify(conv))], ...files]);
}

/** Imports the images ZIP through the control; the longest task from the file chosen to the notice. */
async function imagesRun(page, run) {
  const archive = imagesZip(run);
  const input = page.locator(tid('import-input'));
  if ((await input.count()) === 0) await page.locator(tid('export-button')).click();
  await page.evaluate(() => {
    const b = window.__imp;
    b.changes.length = 0;
    b.clicks.length = 0;
    b.startProbe(true);
  });
  const { shown, end, r } = await throughControl(page, input, { name: 'chatgpt-export.zip', mimeType: 'application/zip', buffer: archive },
    'Images: 12 brought in, 0 kept as a name');
  await page.locator(tid('notice')).getByRole('button', { name: 'Dismiss' }).click();
  const during = (t) => t.start >= r.start - 1;
  const where = (t) => (t.start + t.ms / 2 < shown ? 'reading+checking' : 'writing+ui');
  const tasks = [...r.gaps, ...r.longtasks].filter(during);
  const longest = Math.max(...tasks.map((t) => t.ms), 0);
  log(`images run ${run}: a ${fmt(archive.length / 1e6)} MB zip; read+check to preview ${fmt(shown - r.start)} ms, confirm -> stored ${fmt(end - r.confirm)} ms;`,
    `longest task ${fmt(longest)} ms; over 30 ms: ${JSON.stringify(tasks.filter((t) => t.ms > 30).map((t) => `${Math.round(t.ms)} ${where(t)}`))}`);
  return longest;
}

async function main() {
  const harness = await startHarness();
  const { context, page, issues } = await newAppPage(harness.browser);
  const results = {};
  try {
    await withDiagnostics(page, issues, 'import-bench', async () => {
      await context.addInitScript(gapProbe);
      await context.addInitScript(instruments);
      await openApp(page, harness.site.url);
      const images = [];
      for (let run = 0; run < RUNS; run++) images.push(await imagesRun(page, run));
      results.import_chatgpt_zip_images_longest_task_ms = median(images);
      if (process.env.BENCH_IMPORT_ONLY === 'images') return;
      const totals = [];
      const floors = [];
      const longest = [];
      const floorDb = `bench-floor-${Date.now()}`;
      for (let run = 0; run < RUNS; run++) {
        const floor = await page.evaluate(plainJsFloor, { run, conversations: CONVERSATIONS, per: PER_CONVERSATION, name: floorDb });
        log(`floor before run ${run}: ${fmt(floor)} ms`);
        floors.push(floor);
        totals.push((await importRun(page, run, false)).total);
      }
      await page.evaluate(dropFloor, floorDb);
      log('import runs', totals.map(fmt).join(' '), '| floors', floors.map(fmt).join(' '), '| ratios', totals.map((v, i) => (v / floors[i]).toFixed(2)).join(' '));
      // The longest task, in runs of their own with the probe (new conversations each: runs RUNS..).
      const probed = [];
      for (let run = RUNS; run < 2 * RUNS; run++) {
        const r = await importRun(page, run, true);
        probed.push(r.total);
        longest.push(r.longest);
      }
      log('import runs with the probe', probed.map(fmt).join(' '), '| longest tasks', longest.map(fmt).join(' '));
      results.import_chatgpt_10k_msgs_ms = median(totals);
      results.import_chatgpt_10k_msgs_plain_js_ms = median(floors);
      results.import_chatgpt_vs_plain_js_ratio = median(totals.map((v, i) => v / floors[i]));
      results.import_longest_task_ms = median(longest);
      const nextchat = [];
      for (let run = 0; run < RUNS; run++) nextchat.push(await nextchatRun(page, run));
      results.import_nextchat_zip_5k_longest_task_ms = median(nextchat);
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close().catch(() => {});
    await harness.close();
  }
  for (const [name, v] of Object.entries(results)) console.log(name.endsWith('_ratio') ? `bench ${name} ${v.toFixed(2)} ratio` : `bench ${name} ${fmt(v)} ms`);
}

main().catch((e) => {
  console.error(`import benchmark failed: ${e?.message ?? e}\n${e?.stack ?? ''}`);
  process.exit(1);
});
