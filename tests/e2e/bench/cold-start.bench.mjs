// How long the built app (DIST) takes to become usable, as a newcomer's phone and a returning user see it.
// Run by `make bench` (scripts/bench.sh), or: cd tests/e2e && DIST=../../dist node bench/cold-start.bench.mjs
//
//   bench first_screen_4g_ms <v> ms median of the same first visits, from navigation to index.html's static
//                                   first screen painted with its composer focusable (the frame after it)
//   bench typed_before_ready_kept <v> %   one more throttled first visit, typed into from the first screen
//                                   until the app has taken over: the share of the characters typed before
//                                   the takeover that the app's composer holds after it
//   bench cold_start_4g_ms <v> ms   median of 5 first visits: dist/ served with brotli (static-server.mjs),
//                                   Chromium throttled through CDP (9 Mbit/s down, 150 ms round trip, cache
//                                   disabled, 4x CPU slowdown), from navigation to a usable composer with the
//                                   conversation list drawn (the frame after it, painted)
//   bench warm_start_ms <v> ms      median of 5 returning visits: the service worker's cache, no network
//                                   throttling, the same 4x CPU slowdown
//   bench warm_start_fast_cpu_ms <v> ms   the same without the CPU slowdown
// BENCH_TYPED=0 leaves typed_before_ready_kept out.
// Each run's phases go to stderr: html, js and wasm downloaded, the wasm started (`TrunkApplicationStarted`:
// compiled, instantiated, main() run and the first view mounted), first contentful paint, usable.
// BENCH_TRACE=file.json also records a CDP trace of one more throttled first visit (BENCH_TRACE_WARM=file.json:
// of a returning visit at 4x CPU) and prints where the
// main thread's time went (by trace event), the wasm compile events, and each phase's split (wall time, main
// thread busy, lazy wasm compile on first call, largest events).

import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser, distDir, DEFAULT_TIMEOUT_MS } from '../helpers.mjs';
import { startStaticServer } from '../static-server.mjs';

const RUNS = Number(process.env.BENCH_START_RUNS ?? 5);
const TRACE = process.env.BENCH_TRACE ?? '';
const TRACE_WARM = process.env.BENCH_TRACE_WARM ?? '';
// The link of the issue (#16): "Fast 4G"-like, in CDP's terms (bytes per second; latency is the added
// round trip before each response's headers).
const LINK_4G = { offline: false, latency: 150, downloadThroughput: (9_000_000 / 8), uploadThroughput: (1_500_000 / 8) };
const NO_THROTTLE = { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 };
const CPU_SLOWDOWN = 4;
const TIMEOUT_MS = Math.max(DEFAULT_TIMEOUT_MS, 60_000);

// What the page logs once usable (see `instruments`).
const USABLE = 'memoire-bench-usable';
const log = (...a) => console.error('[cold-start]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (v) => (v === undefined ? '-' : String(Math.round(v)));

/**
 * Runs in every document before the app: records when the wasm started and when the composer and the
 * conversation list are there (the list no longer says it is opening), then the end of the next frame.
 */
function instruments(USABLE) {
  const out = (window.__start = { controlled: Boolean(navigator.serviceWorker?.controller) });
  addEventListener('TrunkApplicationStarted', () => (out.started = performance.now()));
  // After the frame that shows it: a message posted from requestAnimationFrame runs after the paint.
  const afterPaint = (then) =>
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = then;
      ch.port2.postMessage(0);
    });
  // index.html's static first screen, its composer there and focusable.
  const firstScreen = () => {
    const input = document.getElementById('first-screen-input');
    return Boolean(input && !input.disabled);
  };
  const usable = () => {
    const input = document.querySelector('[data-testid="composer-input"]');
    const list = document.querySelector('[data-testid="conversation-list"]');
    if (!input || input.disabled || !list || list.querySelector('.spinner')) return false;
    return Boolean(list.querySelector('[data-testid="conversation-item"], li.empty'));
  };
  const observer = new MutationObserver(() => {
    if (out.firstScreenSeen === undefined && firstScreen()) {
      out.firstScreenSeen = performance.now();
      afterPaint(() => (out.firstScreen = performance.now()));
    }
    if (out.ready !== undefined || !usable()) return;
    out.ready = performance.now();
    observer.disconnect();
    afterPaint(() => {
      out.usable = performance.now();
      console.debug(USABLE);
    });
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
}

/**
 * Loads `url` and waits for the page to say it is usable (the console message of `instruments`), then
 * reads the load's phases from the page's own timings. Nothing of Playwright's runs in the page until
 * then: waiting with `waitForFunction` evaluated Playwright's injected script in the page during the load
 * (an 82 ms task at 4x CPU) and polled it every frame, time no user's browser spends.
 */
async function load(page, url) {
  const usable = page.waitForEvent('console', { predicate: (m) => m.text() === USABLE, timeout: TIMEOUT_MS });
  await page.goto(url, { waitUntil: 'commit' });
  await usable;
  return page.evaluate(() => {
    const end = (re) => performance.getEntriesByType('resource').find((e) => re.test(new URL(e.name).pathname));
    const nav = performance.getEntriesByType('navigation')[0];
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    const wasm = end(/\.wasm$/);
    const js = end(/\/memoire-[^/]*\.js$/);
    return {
      html: nav?.responseEnd,
      js: js?.responseEnd,
      wasmStart: wasm?.responseStart,
      wasm: wasm?.responseEnd,
      wasmBytes: wasm?.encodedBodySize,
      started: window.__start.started,
      firstScreen: window.__start.firstScreen,
      fcp: paint?.startTime,
      ready: window.__start.ready,
      usable: window.__start.usable,
      controlled: window.__start.controlled,
    };
  });
}

const describe = (p) =>
  `html ${fmt(p.html)}, js ${fmt(p.js)}, wasm ${fmt(p.wasmStart)}-${fmt(p.wasm)} (${p.wasmBytes ?? '-'} B on the wire), ` +
  `first screen ${fmt(p.firstScreen)}, started ${fmt(p.started)}, fcp ${fmt(p.fcp)}, ready ${fmt(p.ready)}, usable ${fmt(p.usable)} ms` +
  (p.controlled ? ' (service worker)' : '');

/** A fresh profile's page under CDP: cache disabled, the given link and CPU slowdown. */
async function throttledPage(browser, link, cpu) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(instruments, USABLE);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const throttle = async (l, c) => {
    await cdp.send('Network.emulateNetworkConditions', l);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: c });
  };
  await throttle(link, cpu);
  return { context, page, cdp, throttle, errors };
}

/**
 * After a first visit: waits until the service worker is active (it precaches the shell), then one load,
 * not measured, lets it take control (and the engine its code cache). Leaves the page unthrottled.
 */
async function returning(p, url) {
  await p.throttle(NO_THROTTLE, 1);
  await p.page.evaluate(async () => {
    const reg = await navigator.serviceWorker.ready;
    if (reg.active?.state !== 'activated') await new Promise((ok) => reg.active.addEventListener('statechange', ok));
  });
  await load(p.page, url);
}

/** One first visit, then (unless `warm` is false) the returning visits with the service worker's cache. */
async function visit(browser, url, { warm = true } = {}) {
  const p = await throttledPage(browser, LINK_4G, CPU_SLOWDOWN);
  try {
    const cold = await load(p.page, url);
    if (!warm) return { cold };
    await returning(p, url);
    await p.throttle(NO_THROTTLE, CPU_SLOWDOWN);
    const warmSlow = await load(p.page, url);
    await p.throttle(NO_THROTTLE, 1);
    const warmFast = await load(p.page, url);
    if (p.errors.length) throw new Error(`page errors: ${p.errors.join('; ')}`);
    return { cold, warmSlow, warmFast };
  } finally {
    await p.context.close();
  }
}

/**
 * One more throttled first visit (or, `warm`, a returning visit at 4x CPU) under a CDP trace: where the
 * main thread's time went until usable.
 */
async function traced(browser, url, file, { warm = false } = {}) {
  const p = await throttledPage(browser, LINK_4G, CPU_SLOWDOWN);
  try {
    if (warm) {
      await load(p.page, url);
      await returning(p, url);
      await p.throttle(NO_THROTTLE, CPU_SLOWDOWN);
    }
    const events = [];
    p.cdp.on('Tracing.dataCollected', (d) => events.push(...d.value));
    const done = new Promise((ok) => p.cdp.once('Tracing.tracingComplete', ok));
    await p.cdp.send('Tracing.start', {
      transferMode: 'ReportEvents',
      traceConfig: {
        includedCategories: ['devtools.timeline', 'v8', 'v8.wasm', 'v8.execute', 'blink.user_timing', 'loading', 'disabled-by-default-devtools.timeline'],
      },
    });
    const ph = await load(p.page, url);
    await p.cdp.send('Tracing.end');
    await done;
    writeFileSync(file, JSON.stringify({ traceEvents: events }));
    log(`trace (${events.length} events) in ${file}: ${describe(ph)}`);
    summarise(events, new URL(url).origin, ph);
  } finally {
    await p.context.close();
  }
}

/** Top-level main-thread work by event name, the wasm compile events, and the phases' split, from a trace. */
function summarise(events, origin, ph) {
  // The page's main thread: the renderer main thread of the process that asked for the app's wasm
  // (the browser's own pages, such as its omnibox, have renderers too).
  const mine = (e) => typeof e.args?.data?.url === 'string' && e.args.data.url.startsWith(origin);
  const wasmPid = events.find((e) => e.name === 'ResourceSendRequest' && mine(e) && e.args.data.url.endsWith('.wasm'))?.pid;
  const main = events.find((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain' && e.pid === wasmPid);
  if (!main) return log('trace: no renderer main thread found');
  const byName = new Map();
  for (const e of events) {
    if (e.pid !== main.pid || e.tid !== main.tid || e.ph !== 'X' || e.dur === undefined) continue;
    const key = `${e.cat}:${e.name}`;
    const v = byName.get(key) ?? { n: 0, ms: 0 };
    v.n += 1;
    v.ms += e.dur / 1000;
    byName.set(key, v);
  }
  const top = [...byName.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25);
  log('trace: renderer main thread, time per event name (nested events counted in their own line):');
  for (const [k, v] of top) log(`  ${v.ms.toFixed(1).padStart(8)} ms  ${String(v.n).padStart(5)}x  ${k}`);
  const wasm = events.filter((e) => /wasm/i.test(e.cat) || /wasm/i.test(e.name));
  const perName = new Map();
  for (const e of wasm) {
    const v = perName.get(e.name) ?? { n: 0, ms: 0 };
    v.n += 1;
    v.ms += (e.dur ?? 0) / 1000;
    perName.set(e.name, v);
  }
  // The network as the renderer saw it: each request's send, response and finish (ms after the first).
  const ids = new Set(events.filter((e) => e.name === 'ResourceSendRequest' && mine(e)).map((e) => e.args.data.requestId));
  const net = events.filter((e) => /^Resource(SendRequest|ReceiveResponse|Finish)$/.test(e.name) && ids.has(e.args?.data?.requestId));
  const t0 = Math.min(...net.filter((e) => e.name === 'ResourceSendRequest').map((e) => e.ts));
  const reqs = new Map();
  for (const e of net) {
    const d = e.args.data;
    const r = reqs.get(d.requestId) ?? {};
    if (e.name === 'ResourceSendRequest') r.url = d.url;
    r[e.name] = (e.ts - t0) / 1000;
    if (e.name === 'ResourceFinish') r.bytes = d.encodedDataLength;
    reqs.set(d.requestId, r);
  }
  log('trace: requests (sent / response / finished, ms after the first request; bytes on the wire):');
  for (const r of [...reqs.values()].filter((r) => r.url).sort((a, b) => a.ResourceSendRequest - b.ResourceSendRequest)) {
    log(`  ${fmt(r.ResourceSendRequest).padStart(6)} ${fmt(r.ResourceReceiveResponse).padStart(6)} ${fmt(r.ResourceFinish).padStart(6)} ${String(r.bytes ?? '-').padStart(8)}  ${new URL(r.url).pathname}`);
  }
  phaseSplit(events, main, origin, ph);
  log('trace: wasm events (all threads):');
  for (const [k, v] of [...perName.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 15)) {
    log(`  ${v.ms.toFixed(1).padStart(8)} ms  ${String(v.n).padStart(5)}x  ${k}`);
  }
}

/**
 * Each phase of the traced visit (navigation to html, to js, to the wasm downloaded, to the wasm
 * started, to first paint, to ready, to usable): its wall time, how much of it the main thread was busy,
 * how much of that was V8 compiling wasm functions on their first call (`wasm.CompileLazy`), and the
 * phase's largest main-thread events.
 */
function phaseSplit(events, main, origin, ph) {
  const nav = events.filter((e) => e.name === 'navigationStart' && e.pid === main.pid && String(e.args?.data?.documentLoaderURL ?? '').startsWith(origin));
  if (!nav.length) return log('trace: no navigationStart for the app');
  const t0 = nav[nav.length - 1].ts;
  const on = events.filter((e) => e.pid === main.pid && e.tid === main.tid && e.ph === 'X' && e.dur !== undefined);
  const overlap = (e, a, b) => {
    const start = (e.ts - t0) / 1000;
    return Math.max(0, Math.min(start + e.dur / 1000, b) - Math.max(start, a));
  };
  const marks = [['html', ph.html], ['js', ph.js], ['wasm downloaded', ph.wasm], ['started', ph.started], ['first paint', ph.fcp], ['ready', ph.ready], ['usable', ph.usable]];
  log('trace: phases (wall ms; main thread busy; of which lazy wasm compile; largest events):');
  let from = 0;
  for (const [name, to] of marks) {
    if (to === undefined) continue;
    // Nested events of one name (a task run inside another) count once: the union of their intervals.
    const sum = (pred) => {
      let total = 0;
      let end = -Infinity;
      for (const e of on.filter(pred).sort((a, b) => a.ts - b.ts)) {
        const a = Math.max((e.ts - t0) / 1000, end);
        const b = (e.ts + e.dur - t0) / 1000;
        if (b > a) total += overlap({ ts: a * 1000 + t0, dur: (b - a) * 1000 }, from, to);
        end = Math.max(end, b);
      }
      return total;
    };
    const byName = new Map();
    for (const e of on) if (e.name !== 'RunTask') byName.set(e.name, (byName.get(e.name) ?? 0) + overlap(e, from, to));
    const top = [...byName.entries()].filter(([, v]) => v >= 1).sort((a, b) => b[1] - a[1]).slice(0, 4);
    log(`  -> ${name.padEnd(16)} ${fmt(to - from).padStart(5)} wall, ${fmt(sum((e) => e.name === 'RunTask')).padStart(4)} busy, ` +
      `${fmt(sum((e) => e.name === 'wasm.CompileLazy')).padStart(4)} lazy compile; ${top.map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}`);
    from = to;
  }
}

/** Serves `dir` with brotli, every file compressed once before measuring (a host serves them precompressed). */
async function brotliSite(dir) {
  const site = await startStaticServer(dir, { brotli: true });
  for (const f of readdirSync(dir)) {
    if (/\.(html|js|wasm|css|json|webmanifest)$/.test(f)) await fetch(`${site.url}${f}`, { headers: { 'accept-encoding': 'br' } }).then((r) => r.arrayBuffer());
  }
  return site;
}

/** RUNS visits to `url`: the usable times of the first visits and of the returning ones. */
async function runs(browser, url, label) {
  const out = { cold: [], warmSlow: [], warmFast: [], firstScreen: [] };
  for (let i = 0; i < RUNS; i++) {
    const r = await visit(browser, url);
    log(`${label} run ${i} cold: ${describe(r.cold)}`);
    log(`${label} run ${i} warm (4x CPU): ${describe(r.warmSlow)}`);
    log(`${label} run ${i} warm: ${describe(r.warmFast)}`);
    if (!r.warmSlow.controlled) throw new Error('the returning visit was not served by the service worker');
    for (const k of ['cold', 'warmSlow', 'warmFast']) out[k].push(r[k].usable);
    out.firstScreen.push(r.cold.firstScreen);
  }
  // (The floor's page has no static first screen.)
  if (out.firstScreen.some((v) => v !== undefined)) log(`${label} first_screen_4g_ms runs`, out.firstScreen.map(fmt).join(' '));
  for (const [k, name] of [['cold', 'cold_start_4g_ms'], ['warmSlow', 'warm_start_ms'], ['warmFast', 'warm_start_fast_cpu_ms']]) {
    log(`${label} ${name} runs`, out[k].map(fmt).join(' '));
  }
  return out;
}

/**
 * A site that only fetches and compiles the app's main wasm (the same file, preloaded, streamed), then
 * shows a composer and an empty list, with a service worker that caches both: the floor under the
 * app's figures on the same link and CPU, what is left being the app's own work (the js glue,
 * instantiating, main(), the first view, the database, painting). Written to a temporary directory.
 */
function floorSite(dist) {
  const html = readFileSync(join(dist, 'index.html'), 'utf8');
  const wasm = html.match(/href="?\.\/([^"\s>]+_bg\.wasm)/)?.[1];
  if (!wasm) throw new Error('dist/index.html names no main wasm to preload');
  const dir = mkdtempSync(join(tmpdir(), 'memoire-floor-'));
  copyFileSync(join(dist, wasm), join(dir, wasm));
  writeFileSync(join(dir, 'index.html'), `<!doctype html><html lang=en><meta charset=utf-8><title>floor</title>
<link rel="preload" href="./${wasm}" as="fetch" type="application/wasm" crossorigin>
<body><script type="module">
await WebAssembly.compileStreaming(fetch('./${wasm}', { credentials: 'same-origin' }));
dispatchEvent(new Event('TrunkApplicationStarted'));
document.body.insertAdjacentHTML('beforeend', '<ul data-testid="conversation-list"><li class="empty">No conversations yet</li></ul><textarea data-testid="composer-input"></textarea>');
navigator.serviceWorker.register('sw.js');
</script></body></html>
`);
  writeFileSync(join(dir, 'sw.js'), `const FILES = ['./', 'index.html', '${wasm}'];
self.addEventListener('install', (e) => e.waitUntil(caches.open('floor').then((c) => c.addAll(FILES)).then(() => self.skipWaiting())));
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => e.respondWith(caches.match(e.request, { ignoreSearch: true }).then((r) => r || fetch(e.request))));
`);
  return dir;
}

/**
 * One more throttled first visit, typed into (one key at a time, as fast as Playwright sends them) from
 * the moment the static first screen's composer has the focus until 20 keys have reached the app's composer:
 * the percentage of the characters typed before the takeover that the app's composer holds after it.
 */
async function typedBeforeReady(browser, url, attempt = 1) {
  const p = await throttledPage(browser, LINK_4G, CPU_SLOWDOWN);
  try {
    await p.page.addInitScript(() => {
      const keys = (window.__keys = []);
      document.addEventListener('keydown', () => keys.push(document.getElementById('first-screen') ? 'static' : 'app'), true);
    });
    await p.page.goto(url, { waitUntil: 'commit' });
    // On a busy machine Playwright's own script may first run in the page after the takeover: then
    // there was no moment to type into the first screen from here, and the visit is made again.
    const focused = await p.page.waitForFunction(
      () => document.activeElement?.id === 'first-screen-input' || (document.readyState !== 'loading' && !document.getElementById('first-screen')),
      null,
      { polling: 'raf' },
    );
    if (!(await focused.evaluate(() => document.getElementById('first-screen') !== null))) {
      if (attempt >= 3) throw new Error('typed_before_ready_kept: the app took over before the first key, 3 visits in a row');
      log(`typed_before_ready_kept: the app took over before the first key could be typed (visit ${attempt}); again`);
      return typedBeforeReady(browser, url, attempt + 1);
    }
    const text = 'Typed before the app was ready, and after. ';
    let typed = '';
    for (let i = 0; i < 1000; i++) {
      const ch = text[i % text.length];
      await p.page.keyboard.type(ch);
      typed += ch;
      const after = await p.page.evaluate(() => window.__keys.filter((k) => k === 'app').length);
      if (after >= 20) break;
    }
    const keys = await p.page.evaluate(() => window.__keys);
    const before = keys.filter((k) => k === 'static').length;
    if (before === 0) throw new Error('typed_before_ready_kept: no key reached the static first screen');
    await p.page.locator('#first-screen').waitFor({ state: 'detached' });
    const held = await p.page.locator('[data-testid="composer-input"]').inputValue();
    let kept = 0;
    while (kept < before && held[kept] === typed[kept]) kept += 1;
    log(`typed_before_ready_kept: ${before} keys before the takeover, ${keys.length - before} after; ${kept} of the first kept; ` +
      `the composer ${held === typed ? 'holds every character' : `differs: ${JSON.stringify(held)} vs ${JSON.stringify(typed)}`}`);
    if (p.errors.length) throw new Error(`page errors: ${p.errors.join('; ')}`);
    return (100 * kept) / before;
  } finally {
    await p.context.close();
  }
}

async function main() {
  const dist = distDir();
  const site = await brotliSite(dist);
  const browser = await launchBrowser();
  try {
    const app = await runs(browser, site.url, 'app');
    // The floor: the same wasm fetched and compiled the same way, by a page that runs nothing.
    const floorDir = floorSite(dist);
    const floor = await brotliSite(floorDir);
    let bare;
    try {
      bare = await runs(browser, floor.url, 'floor');
    } finally {
      await floor.close();
      rmSync(floorDir, { recursive: true, force: true });
    }
    // BENCH_TYPED=0 (start-bounds.bench.mjs, whose pages have no app to type into): not measured.
    const kept = process.env.BENCH_TYPED === '0' ? undefined : await typedBeforeReady(browser, site.url);
    if (TRACE) await traced(browser, site.url, TRACE);
    if (TRACE_WARM) await traced(browser, site.url, TRACE_WARM, { warm: true });
    const load = loadavg().map((v) => v.toFixed(2)).join(' ');
    log(`load average (1, 5, 15 min): ${load}`);
    log(`first screen ${fmt(median(app.firstScreen))} ms; cold ${fmt(median(app.cold))} ms over the floor ${fmt(median(bare.cold))} ms; ` +
      `warm ${fmt(median(app.warmSlow))} ms over the floor ${fmt(median(bare.warmSlow))} ms (4x CPU)`);
    console.log(`bench first_screen_4g_ms ${Math.round(median(app.firstScreen))} ms`);
    if (kept !== undefined) console.log(`bench typed_before_ready_kept ${Math.round(kept)} %`);
    console.log(`bench cold_start_4g_ms ${Math.round(median(app.cold))} ms`);
    console.log(`bench cold_start_floor_4g_ms ${Math.round(median(bare.cold))} ms`);
    console.log(`bench warm_start_ms ${Math.round(median(app.warmSlow))} ms`);
    console.log(`bench warm_start_floor_ms ${Math.round(median(bare.warmSlow))} ms`);
    console.log(`bench warm_start_fast_cpu_ms ${Math.round(median(app.warmFast))} ms`);
  } finally {
    await browser.close();
    await site.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
