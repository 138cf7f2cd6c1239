// Sync benchmark (issue 14): the built app (DIST) in headless Chromium, two browser contexts as two
// devices, against pouchdb-server in memory on loopback (couch.mjs). Run by `make bench`
// (scripts/bench.sh), or: cd tests/e2e && DIST=../../dist node bench/sync.bench.mjs
//
// Prints one line per figure:
//   bench sync_first_10k_msgs_push_ms <v> ms   device A holds 10,000 messages (imported through the
//                                              Import control) and turns sync on: until the server holds
//                                              every message and A says "synced"
//   bench sync_first_10k_msgs_pull_ms <v> ms   an empty device B turns sync on: until B's store holds
//                                              every message and B says "synced"
//   bench sync_first_10k_longest_task_ms <v> ms the longest main-thread task on either page during its
//                                              sync: longtask entries, and the largest gap of a posted-
//                                              message probe (which also sees tasks under 50 ms; an upper
//                                              bound: a gap also holds a frame, and a task's wait for a core)
//   bench sync_one_message_ms <v> ms           both online, the same conversation open: a message sent
//                                              on A until it is shown on B (median of 5)
//   bench sync_first_10k_msgs_pull_encrypted_ms <v> ms  the same pull with end-to-end encryption on
//                                              (issue 28): A pushes the 10,000 messages sealed to a
//                                              second database, an empty device C turns encrypted sync
//                                              on there with the passphrase: from the Save click
//                                              until C holds every message and says "synced", less the
//                                              key derivation (e2ee_unlock_ms, paid once per device;
//                                              the wall time with it goes to stderr)
//   bench sync_encrypted_pull_ratio <v> x       encrypted pull / plain pull, same run (goal <= 1.3): the
//                                              plain pull is the mean of B's and of one more empty
//                                              device D's after C (the encrypted pull between them)
//   bench e2ee_unlock_ms <v> ms                C's passphrase to key: PBKDF2-SHA-256 (the marker's rounds: 3,000,000 since issue 43),
//                                              in WebCrypto (the `memoire-sync:e2ee-unlock` measure;
//                                              goal 300-1,500, off the main thread)
//   bench sync_first_10k_longest_task_cpu_ms <v> ms  with BENCH_TASKCPU=1: the most main-thread CPU time
//                                              one task took on either page (from a trace; on a loaded
//                                              machine a task's wall time is mostly waiting for a core)
// Details go to stderr: each long task or probe gap over 30 ms with the driver's phases it overlaps
// (the `memoire-sync:*` user-timing measures: seed, record, dirty, outbox, request, response, batch,
// apply = apply.held + apply.plan + apply.slice + apply.rest, report, later), and with BENCH_TASKCPU=1
// the tasks with the most CPU time and their phases. BENCH_PROBE=0 turns the probe off (its ping
// tasks cost the page some time); BENCH_CPUPROFILE=file writes a CPU profile of the push page.

import { startHarness, newAppPage, openApp, endpointBase, sendMessage, tid, withDiagnostics, confirmImport } from '../helpers.mjs';
import { startCouch } from '../couch.mjs';
import { gapProbe } from './probe.mjs';

const CONVERSATIONS = 50;
const PER_CONVERSATION = 200;
const TOTAL = CONVERSATIONS * PER_CONVERSATION;
const ONE_MESSAGE_RUNS = 5;
const START = Date.UTC(2024, 0, 1);

const log = (...a) => console.error('[sync.bench]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A backup (engine/backup, version 1) of CONVERSATIONS conversations of PER_CONVERSATION messages. */
function backup() {
  const overrides = {
    recent_messages: null, summary_every_pairs: null, context_tokens: null, reply_reserve_tokens: null,
    max_message_chars: null, history_format: null,
  };
  const conversations = [];
  for (let c = 0; c < CONVERSATIONS; c += 1) {
    const id = `sync-${String(c).padStart(3, '0')}`;
    const messages = [];
    for (let k = 0; k < PER_CONVERSATION; k += 1) {
      messages.push({
        id: `${id}-m${k + 1}`, conversation_id: id, seq: k + 1, role: k % 2 ? 'assistant' : 'user',
        content: `Message ${k + 1} of conversation ${c}: ${'a few words about the weather and the sea. '.repeat(1 + (k % 4))}`,
        status: 'complete', created_at: START + c * 1_000_000 + k * 1000, tool_calls: [], usage: null, error: null, path: null, model: null,
      });
    }
    conversations.push({
      conversation: {
        id, title: `Synced ${c}`, title_is_custom: true, created_at: START + c * 1_000_000, updated_at: START + c * 1_000_000 + PER_CONVERSATION * 1000,
        message_count: PER_CONVERSATION, endpoint_profile_id: null, remote_handle: null, last_path: null, memory_overrides: overrides,
      },
      messages, summaries: [], entities: [],
    });
  }
  return JSON.stringify({ format: 'memoire-backup', version: 1, exported_at: START, shared_entities: [], conversations });
}

/** Installed before the app's scripts: long tasks (start, duration), the gaps of a posted-message
 *  probe (each at least the task or frame that ran in between, so the largest bounds the longest
 *  task from above, also below 50 ms where longtask entries say nothing), and the sync driver's
 *  `memoire-sync:*` user-timing measures, to say which phase a long task ran in. */
function instruments() {
  const b = (window.__sync = { longtasks: [], measures: [] });
  new PerformanceObserver((list) => b.longtasks.push(...list.getEntries().map((e) => ({ start: e.startTime, ms: e.duration }))))
    .observe({ type: 'longtask' });
  new PerformanceObserver((list) => b.measures.push(...list.getEntries()
    .filter((e) => e.name.startsWith('memoire-sync:'))
    .map((e) => ({ name: e.name.slice(13), start: e.startTime, ms: e.duration }))))
    .observe({ type: 'measure' });
  b.reset = () => { b.longtasks = []; b.measures = []; window.__gapProbe.reset(); };
  b.startProbe = () => window.__gapProbe.start();
  b.stopProbe = () => window.__gapProbe.stop();
}

/** The page's long tasks and probe gaps over `over` ms, each with the driver's phases it overlaps
 *  (a phase's name, and how much of the task it covers). */
async function attribution(page, over) {
  const r = await page.evaluate(() => ({ ...window.__sync, gaps: window.__gapProbe.gaps }));
  const slow = [...r.longtasks.map((t) => ({ ...t, how: 'longtask' })), ...r.gaps.map((t) => ({ ...t, how: 'gap' }))]
    .filter((t) => t.ms > over)
    .sort((a, b) => b.ms - a.ms);
  return slow.map((t) => {
    const end = t.start + t.ms;
    const phases = {};
    for (const m of r.measures) {
      const cover = Math.min(end, m.start + m.ms) - Math.max(t.start, m.start);
      if (cover > 0) phases[m.name] = Math.round(Math.max(phases[m.name] ?? 0, cover));
    }
    return { how: t.how, ms: Math.round(t.ms), at: Math.round(t.start), phases };
  });
}

/** The longest long task and the largest probe gap on `page` since its instruments were reset. */
async function longest(page) {
  const r = await page.evaluate(() => ({ ...window.__sync, gaps: window.__gapProbe.gaps }));
  return {
    longtask: Math.round(Math.max(0, ...r.longtasks.map((t) => t.ms))),
    gap: Math.round(Math.max(0, ...r.gaps.map((t) => t.ms))),
  };
}

const PROBE = process.env.BENCH_PROBE !== '0';

/** BENCH_TASKCPU=1: a trace of both pages during both syncs, and each page's longest tasks by the
 *  main thread's CPU time in them (a task's wall time also counts the time the thread waited for
 *  a core, which on a loaded machine can be most of it). */
async function startTrace(page) {
  const cdp = await page.context().newCDPSession(page);
  const events = [];
  cdp.on('Tracing.dataCollected', (d) => events.push(...d.value));
  await cdp.send('Tracing.start', {
    transferMode: 'ReportEvents',
    traceConfig: { includedCategories: ['toplevel', 'blink.user_timing', '__metadata'] },
  });
  return { cdp, events };
}

async function stopTrace({ cdp, events }) {
  const done = new Promise((ok) => cdp.once('Tracing.tracingComplete', ok));
  await cdp.send('Tracing.end');
  await done;
  // The pages' main threads: those that measured the driver's phases.
  const threads = new Map();
  for (const e of events) {
    if (e.cat === 'blink.user_timing' && e.name?.startsWith('memoire-sync:')) threads.set(`${e.pid}:${e.tid}`, { pid: e.pid, tid: e.tid });
  }
  if (threads.size === 0) {
    // A build without the measures: the two renderer main threads that ran the most tasks.
    const mains = events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
    const count = (m) => events.filter((e) => e.pid === m.pid && e.tid === m.tid && e.cat === 'toplevel').length;
    for (const m of mains.map((m) => ({ m, n: count(m) })).sort((a, b) => b.n - a.n).slice(0, 2)) {
      threads.set(`${m.m.pid}:${m.m.tid}`, { pid: m.m.pid, tid: m.m.tid });
    }
  }
  const out = [];
  for (const { pid, tid } of threads.values()) {
    // The phases measured on this thread (begin and end events of one measure share an id).
    const open = new Map();
    const phases = [];
    for (const e of events) {
      if (e.pid !== pid || e.cat !== 'blink.user_timing' || !e.name?.startsWith('memoire-sync:')) continue;
      const key = `${e.name}:${e.id ?? e.id2?.local}`;
      if (e.ph === 'b') open.set(key, e.ts);
      else if (e.ph === 'e' && open.has(key)) phases.push({ name: e.name.slice(13), from: open.get(key), to: e.ts });
    }
    const tasks = events.filter((e) => e.pid === pid && e.tid === tid && e.ph === 'X' && e.cat === 'toplevel' && e.tdur !== undefined)
      .map((e) => ({ cpu: e.tdur / 1000, wall: e.dur / 1000, from: e.ts, to: e.ts + e.dur }))
      .sort((a, b) => b.cpu - a.cpu);
    out.push(tasks);
    log(`trace: thread ${pid}:${tid}: ${tasks.length} tasks; longest by CPU time:`);
    for (const t of tasks.slice(0, 8)) {
      const names = [...new Set(phases.filter((ph) => ph.from < t.to && ph.to > t.from).map((ph) => ph.name))];
      log(`trace:   ${t.cpu.toFixed(1)} ms CPU (${t.wall.toFixed(1)} ms wall) in ${names.join(', ') || '(no phase)'}`);
    }
  }
  return Math.max(0, ...out.map((t) => t[0]?.cpu ?? 0));
}

/** BENCH_CPUPROFILE=file: a CPU profile of the push page during the push (for DevTools), and the
 *  functions that took the most time in it, to stderr. */
async function startProfile(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return cdp;
}

async function stopProfile(cdp, file) {
  const { profile } = await cdp.send('Profiler.stop');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(file, JSON.stringify(profile));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  profile.samples.forEach((id, k) => {
    const f = byId.get(id).callFrame;
    const name = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
    self.set(name, (self.get(name) ?? 0) + (dt[k] ?? 0) / 1000);
  });
  for (const [name, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) log(`profile: ${Math.round(ms)} ms ${name}`);
}

async function device(harness) {
  const opened = await newAppPage(harness.browser);
  await opened.context.addInitScript(gapProbe);
  await opened.context.addInitScript(instruments);
  await openApp(opened.page, harness.site.url);
  const { page } = opened;
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-protocol')).selectOption('openai-chat');
  await page.locator(tid('settings-endpoint-url')).fill(endpointBase(harness.agent, 'openai-chat'));
  await page.locator(tid('settings-model')).fill('test-model');
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden' });
  return opened;
}

const PASSPHRASE = 'a bench passphrase, long enough';

/** Turns sync on against `couch` (database `db`; with `encrypt`, sealed under PASSPHRASE); returns
 *  the time just before the click that saves it. */
async function syncOn(page, couch, { db = 'memoire', encrypt = false } = {}) {
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-sync-url')).fill(couch.url);
  await page.locator(tid('settings-sync-database')).fill(db);
  await page.locator(tid('settings-sync-enabled')).check();
  await page.locator(tid('settings-sync-encrypt')).setChecked(encrypt);
  if (encrypt) await page.locator(tid('settings-sync-passphrase')).fill(PASSPHRASE);
  const t0 = Date.now();
  // The dialog's one Save saves sync too and closes once it is saved.
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-dialog')).waitFor({ state: 'detached' });
  return t0;
}

const synced = (page, timeout) => page.locator(tid('sync-status', '[data-state="synced"]')).waitFor({ timeout });

/** Messages in this device's store (counted in the page's IndexedDB). */
function storedMessages(page) {
  return page.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open('memoire');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const req = db.transaction('messages').objectStore('messages').count();
      req.onsuccess = () => { db.close(); resolve(req.result); };
      req.onerror = () => reject(req.error);
    };
  }));
}

/** Documents on the server (conversations and messages; `_local` checkpoints are not counted). */
async function serverDocs(couch, db = 'memoire') {
  const res = await fetch(`${couch.url}/${db}`);
  return res.ok ? (await res.json()).doc_count : 0;
}

async function until(what, test, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await test()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An empty device D pulls database `memoire` in plaintext: its time, from the Save click. */
async function plainPull(harness, couch) {
  const D = await device(harness);
  try {
    const t0 = await syncOn(D.page, couch);
    await until('D holds every message', async () => (await storedMessages(D.page)) >= TOTAL, 600_000);
    await synced(D.page, 600_000);
    return Date.now() - t0;
  } finally {
    await D.context.close();
  }
}

/** A pushes everything sealed to database `memoire-e2ee`; an empty device C pulls it with the
 *  passphrase: the encrypted pull, its ratio to the plain one, and C's key derivation. */
async function encryptedPull(harness, couch, A, results) {
  const db = 'memoire-e2ee';
  await syncOn(A.page, couch, { db, encrypt: true });
  await until('the server holds every sealed message', async () => (await serverDocs(couch, db)) >= TOTAL + CONVERSATIONS, 600_000);
  await synced(A.page, 600_000);
  const C = await device(harness);
  try {
    await C.page.evaluate(() => window.__sync.reset());
    const t0 = await syncOn(C.page, couch, { db, encrypt: true });
    await until('C holds every message', async () => (await storedMessages(C.page)) >= TOTAL, 600_000);
    await synced(C.page, 600_000);
    const wall = Date.now() - t0;
    const unlock = await C.page.evaluate(() => window.__sync.measures.filter((m) => m.name === 'e2ee-unlock').map((m) => m.ms));
    results.e2ee_unlock_ms = Math.round(Math.max(...unlock));
    // The derivation is its own figure (e2ee_unlock_ms), paid once per device, not per pull.
    const derived = Math.round(unlock.reduce((a, b) => a + b, 0));
    results.sync_first_10k_msgs_pull_encrypted_ms = wall - derived;
    log(`encrypted pull from the Save click: ${wall} ms, of which the key derivation ${derived} ms`);
    // A plain pull after it too (device D), so the ratio compares it with plain pulls on both
    // sides: a later pull in a run can be faster (a warmer browser and server).
    const after = await plainPull(harness, couch);
    const plain = (results.sync_first_10k_msgs_pull_ms + after) / 2;
    results.sync_encrypted_pull_ratio = (results.sync_first_10k_msgs_pull_encrypted_ms / plain).toFixed(2);
    log(`plain pulls before and after the encrypted one: ${results.sync_first_10k_msgs_pull_ms} and ${after} ms`);
    // The derivation runs in the browser's crypto thread: no long task of the page overlaps it.
    const overlapping = await C.page.evaluate(() => {
      const u = window.__sync.measures.filter((m) => m.name === 'e2ee-unlock');
      return window.__sync.longtasks.filter((t) => u.some((m) => t.start < m.start + m.ms && t.start + t.ms > m.start)).map((t) => Math.round(t.ms));
    });
    const opening = await C.page.evaluate(() => {
      const sum = (n) => Math.round(window.__sync.measures.filter((m) => m.name === n).reduce((a, m) => a + m.ms, 0));
      return { read: sum('open.read'), decrypt: sum('open.decrypt'), write: sum('open.write') };
    });
    log(`encrypted pull: opening the pages took ${JSON.stringify(opening)} ms in all (wall time; the decryptions overlap other work)`);
    log(`encrypted pull: ${results.sync_first_10k_msgs_pull_encrypted_ms} ms; unlock ${unlock.map(Math.round).join(', ')} ms; long tasks during it: ${overlapping.join(', ') || 'none'}`);
  } finally {
    await C.context.close();
  }
}

async function main() {
  const harness = await startHarness();
  const couch = await startCouch();
  const results = {};
  const A = await device(harness);
  const B = await device(harness);
  try {
    await withDiagnostics(A.page, A.issues, 'sync-bench', async () => {
      await A.page.locator(tid('export-button')).click();
      await A.page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(backup()) });
      await confirmImport(A.page, { timeout: 300_000 });
      await A.page.locator(tid('notice')).waitFor({ state: 'visible', timeout: 300_000 });
      await until('A imported', async () => (await storedMessages(A.page)) >= TOTAL, 300_000);
      await A.page.evaluate((probe) => { window.__sync.reset(); if (probe) window.__sync.startProbe(); }, PROBE);

      const profile = process.env.BENCH_CPUPROFILE ? await startProfile(A.page) : null;
      const trace = process.env.BENCH_TASKCPU ? await startTrace(A.page) : null;
      const tPush = await syncOn(A.page, couch);
      await until('the server holds every message', async () => (await serverDocs(couch)) >= TOTAL + CONVERSATIONS, 600_000);
      await synced(A.page, 600_000);
      results.sync_first_10k_msgs_push_ms = Date.now() - tPush;
      log(`push: ${results.sync_first_10k_msgs_push_ms} ms`);
      if (profile) await stopProfile(profile, process.env.BENCH_CPUPROFILE);

      await A.page.evaluate(() => window.__sync.stopProbe());
      await B.page.evaluate((probe) => { window.__sync.reset(); if (probe) window.__sync.startProbe(); }, PROBE);
      const tPull = await syncOn(B.page, couch);
      await until('B holds every message', async () => (await storedMessages(B.page)) >= TOTAL, 600_000);
      await synced(B.page, 600_000);
      results.sync_first_10k_msgs_pull_ms = Date.now() - tPull;
      log(`pull: ${results.sync_first_10k_msgs_pull_ms} ms`);
      await B.page.evaluate(() => window.__sync.stopProbe());
      if (trace) results.sync_first_10k_longest_task_cpu_ms = Math.round(await stopTrace(trace));
      const la = await longest(A.page);
      const lb = await longest(B.page);
      results.sync_first_10k_longest_task_ms = Math.max(la.longtask, lb.longtask, la.gap, lb.gap);
      log(`longest task: push page ${la.longtask} ms (longtask), ${la.gap} ms (probe gap); pull page ${lb.longtask} ms, ${lb.gap} ms`);
      for (const [name, page] of [['push', A.page], ['pull', B.page]]) {
        for (const t of (await attribution(page, 30)).slice(0, 12)) log(`${name} page: ${t.how} ${t.ms} ms at ${t.at}: ${JSON.stringify(t.phases)}`);
      }

      // One message, both online, the same conversation open on both.
      const item = (page) => page.locator(tid('conversation-item', '[data-conversation-id="sync-049"]')).locator(tid('conversation-open'));
      for (const page of [A.page, B.page]) {
        await item(page).click();
        await page.locator(tid('message')).first().waitFor();
      }
      const runs = [];
      for (let i = 0; i < ONE_MESSAGE_RUNS; i += 1) {
        await synced(A.page, 60_000);
        await synced(B.page, 60_000);
        const text = `ping ${i} ${Date.now()}`;
        harness.agent.script({ text: `pong ${i}` });
        const shown = B.page.waitForFunction(
          (t) => [...document.querySelectorAll('[data-testid="message"]')].some((m) => m.innerText.includes(t)),
          text,
          { timeout: 60_000, polling: 'raf' },
        );
        const t0 = Date.now();
        await sendMessage(A.page, text);
        await shown;
        runs.push(Date.now() - t0);
        log(`one message run ${i}: ${runs.at(-1)} ms`);
        await A.page.locator(tid('message', '[data-role="assistant"]')).filter({ hasText: `pong ${i}` }).waitFor();
      }
      results.sync_one_message_ms = median(runs);
      await encryptedPull(harness, couch, A, results);
    });
  } finally {
    await A.context.close();
    await B.context.close();
    await couch.stop();
    await harness.close();
  }
  console.log(`bench sync_first_10k_msgs_push_ms ${results.sync_first_10k_msgs_push_ms} ms`);
  console.log(`bench sync_first_10k_msgs_pull_ms ${results.sync_first_10k_msgs_pull_ms} ms`);
  console.log(`bench sync_first_10k_longest_task_ms ${results.sync_first_10k_longest_task_ms} ms`);
  console.log(`bench sync_one_message_ms ${results.sync_one_message_ms} ms`);
  console.log(`bench sync_first_10k_msgs_pull_encrypted_ms ${results.sync_first_10k_msgs_pull_encrypted_ms} ms`);
  console.log(`bench sync_encrypted_pull_ratio ${results.sync_encrypted_pull_ratio} x`);
  console.log(`bench e2ee_unlock_ms ${results.e2ee_unlock_ms} ms`);
  if (results.sync_first_10k_longest_task_cpu_ms !== undefined) console.log(`bench sync_first_10k_longest_task_cpu_ms ${results.sync_first_10k_longest_task_cpu_ms} ms`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
