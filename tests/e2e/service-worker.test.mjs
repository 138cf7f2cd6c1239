// The service worker against what a host, a deploy or a curious user does (issue 28, items 1 and 7):
// - a same-origin API under the app's path (a counting endpoint, a reverse-proxied CouchDB's
//   `_changes`) reaches the server on every fetch, whatever the query string, and nothing of it is
//   cached;
// - opening config.json, an icon or sw.js in a tab does not replace the offline shell;
// - a returning start takes the page from the worker's cache (the host is not asked for it);
// - a new build whose index.html answers 500 during its install is not installed: the old worker and
//   its shell stay, and the app starts offline;
// - a deploy with two tabs open: the new build waits, both tabs say "A new version is ready"; Reload
//   in one saves its typed draft, lets the new worker take over and reloads into the new build with
//   the draft; the other tab, still the old build, loads an old lazy chunk the host no longer has;
//   the old build's cache goes once no tab of it is left.
// A deploy is a copy of dist/ made here with another wasm id (every file named with it renamed, the
// js, index.html's integrity and CSP hashes and sw.js rewritten to match) and another build id.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startHarness,
  newAppPage,
  openApp,
  waitForAppReady,
  assertNoPageProblems,
  withDiagnostics,
  importBackup,
  syntheticBackup,
  eventually,
  distDir,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';

let harness;
const builds = [];
before(async () => {
  harness = await startHarness();
});
after(async () => {
  await harness?.close();
  for (const dir of builds) rmSync(dir, { recursive: true, force: true });
});

const hex16 = (id) => [...id].map((c) => ((parseInt(c, 16) + 1) % 16).toString(16)).join('');
const sha = (alg, bytes, enc = 'base64') => createHash(alg).update(bytes).digest(enc);
const inlineScripts = (html) =>
  [...html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/gi)].filter((m) => !/\ssrc\s*=/i.test(m[1] ?? '')).map((m) => m[2]);

/** A copy of `from` as the next deploy would be: every id changed. Returns its dir and ids. */
function nextBuild(from) {
  const to = mkdtempSync(join(tmpdir(), 'memoire-next-build-'));
  builds.push(to);
  cpSync(from, to, { recursive: true });
  const wasmId = readdirSync(to).map((f) => /^memoire-([0-9a-f]{16})\.js$/.exec(f)?.[1]).find(Boolean);
  const newId = hex16(wasmId);
  const oldJs = readFileSync(join(to, `memoire-${wasmId}.js`));
  for (const f of readdirSync(to)) if (f.includes(wasmId)) renameSync(join(to, f), join(to, f.replaceAll(wasmId, newId)));
  const js = join(to, `memoire-${newId}.js`);
  writeFileSync(js, readFileSync(js, 'utf8').replaceAll(wasmId, newId));
  const oldHtml = readFileSync(join(to, 'index.html'), 'utf8');
  let html = oldHtml.replaceAll(wasmId, newId).replace(`sha384-${sha('sha384', oldJs)}`, `sha384-${sha('sha384', readFileSync(js))}`);
  const [before, after] = [inlineScripts(oldHtml), inlineScripts(html)];
  before.forEach((s, i) => (html = html.replace(`'sha256-${sha('sha256', s)}'`, `'sha256-${sha('sha256', after[i])}'`)));
  writeFileSync(join(to, 'index.html'), html);
  const sw = readFileSync(join(to, 'sw.js'), 'utf8');
  const build = /BUILD\s*=\s*"([0-9a-f]{16})"/.exec(sw)[1];
  writeFileSync(join(to, 'sw.js'), sw.replaceAll(wasmId, newId).replaceAll(build, hex16(build)));
  return { dir: to, wasmId: newId, oldWasmId: wasmId, cache: `memoire-shell-${hex16(build)}`, oldCache: `memoire-shell-${build}` };
}

const controlled = (page) => page.waitForFunction(() => navigator.serviceWorker.controller !== null);
const cacheNames = (page) => page.evaluate(() => caches.keys());
/** Asks the browser to look for a new sw.js now (as it does on a navigation or a tab shown again). */
const checkForUpdate = (page) =>
  page.evaluate(() => navigator.serviceWorker.getRegistration().then((r) => r.update().then(() => 'ok', (e) => String(e))));
/** How many requests for `path` (relative to the app) the host answered. */
const served = (site, path) => site.requests.filter((r) => !r.offline && new URL(r.url, site.url).pathname === new URL(path, site.url).pathname).length;

/** Counts the calls of `path` (relative to the app) and answers each with its number. */
function countingRoute(site, path) {
  const seen = [];
  site.setRoute(path, (req, res) => {
    seen.push(req.url);
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ hits: seen.length }));
  });
  return seen;
}

async function offlineStart(context, site, page, url) {
  await context.setOffline(true);
  site.setOffline(true);
  try {
    const servedBefore = site.requests.filter((r) => !r.offline).length;
    await page.goto(url);
    await waitForAppReady(page);
    await page.locator(tid('composer-input')).waitFor();
    assert.equal(site.requests.filter((r) => !r.offline).length, servedBefore, 'nothing came from the host');
  } finally {
    site.setOffline(false);
    await context.setOffline(false);
  }
}

test('a same-origin API under the app path reaches the server on every fetch, whatever the query, and is never cached', async () => {
  const { site } = harness;
  site.setRoot(distDir());
  const api = countingRoute(site, 'api/count');
  const changes = countingRoute(site, 'couch/memoire/_changes');
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'sw-api', async () => {
      await openApp(page, site.url);
      await controlled(page);
      const hits = await page.evaluate(async () => {
        const get = async (u) => (await (await fetch(u)).json()).hits;
        const out = [];
        for (const u of ['api/count', 'api/count', 'api/count?since=1', 'api/count?since=2']) out.push(await get(u));
        for (const u of ['couch/memoire/_changes?since=0', 'couch/memoire/_changes?since=0', 'couch/memoire/_changes?since=5']) out.push(await get(u));
        return out;
      });
      assert.deepEqual(hits, [1, 2, 3, 4, 1, 2, 3], 'every fetch reached the server');
      assert.equal(api.length, 4);
      assert.equal(changes.length, 3);
      const kept = await page.evaluate(async () => [await caches.match('api/count'), await caches.match('couch/memoire/_changes?since=0')].map(Boolean));
      assert.deepEqual(kept, [false, false], 'nothing of the API is in a cache');
      assertNoPageProblems(issues);
    });
  } finally {
    site.setRoute('api/count');
    site.setRoute('couch/memoire/_changes');
    await context.close();
  }
});

test('opening config.json, an icon or sw.js in a tab leaves the offline shell: offline afterwards the app starts', async () => {
  const { site } = harness;
  site.setRoot(distDir());
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'sw-navigations', async () => {
      await openApp(page, site.url);
      await controlled(page);
      for (const path of ['config.json', 'icons/icon.svg', 'sw.js']) {
        const res = await page.goto(`${site.url}${path}`);
        assert.equal(res.status(), 200, path);
      }
      await offlineStart(context, site, page, site.url);
      await offlineStart(context, site, page, `${site.url}index.html`);
      assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
    });
  } finally {
    await context.close();
  }
});

test('a returning start takes the page from the worker\'s cache: the host is not asked for it', async () => {
  const { site } = harness;
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'sw-shell-cached', async () => {
      await openApp(page, site.url);
      await controlled(page);
      const pages = () => served(site, './') + served(site, 'index.html');
      const before = pages();
      for (let i = 0; i < 2; i++) {
        await page.reload();
        await waitForAppReady(page);
      }
      assert.equal(pages(), before, 'no request for the page reached the host');
      assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
    });
  } finally {
    await context.close();
  }
});

test('a new build whose index.html answers 500 during its install is not installed: the old shell stays and starts offline', async () => {
  const { site } = harness;
  site.setRoot(distDir());
  const next = nextBuild(distDir());
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'sw-install-500', async () => {
      await openApp(page, site.url);
      await controlled(page);
      const [cache] = await cacheNames(page);
      assert.equal(cache, next.oldCache);
      site.setRoot(next.dir);
      site.setRoute('index.html', (_req, res) => ((res.statusCode = 500), res.end('Internal Server Error')));
      const asked = served(site, 'index.html');
      await checkForUpdate(page);
      await eventually(() => served(site, 'index.html') > asked, { what: 'the new worker asks for index.html' });
      await page.waitForFunction(async () => {
        const r = await navigator.serviceWorker.getRegistration();
        return r.installing === null;
      });
      const state = await page.evaluate(async () => {
        const r = await navigator.serviceWorker.getRegistration();
        return { waiting: r.waiting !== null, active: r.active.scriptURL, caches: await caches.keys() };
      });
      assert.deepEqual(state, { waiting: false, active: `${site.url}sw.js`, caches: [cache] }, 'the old worker and only its cache');
      assert.equal(await page.locator(tid('update-ready')).count(), 0, 'no new version to offer');
      site.setRoute('index.html');
      site.setRoot(distDir());
      await offlineStart(context, site, page, site.url);
      assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
    });
  } finally {
    site.setRoute('index.html');
    site.setRoot(distDir());
    await context.close();
  }
});

test('a deploy with tabs open: the new build waits, the old tab keeps its lazy chunks, Reload keeps the typed draft', async () => {
  const { site } = harness;
  site.setRoot(distDir());
  const next = nextBuild(distDir());
  const { context, page: old, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(old, issues, 'sw-deploy', async () => {
      await openApp(old, site.url);
      await controlled(old);
      const page = await context.newPage();
      await openApp(page, site.url);
      await controlled(page);

      // The deploy: the host serves the next build only. The new worker installs and waits.
      const chunk = `split_import-${next.oldWasmId}.wasm`;
      const chunkServed = served(site, chunk);
      site.setRoot(next.dir);
      await checkForUpdate(page);
      await page.locator(tid('update-ready')).waitFor();
      await old.locator(tid('update-ready')).waitFor();
      assert.match(await page.locator(tid('update-ready')).innerText(), /A new version is ready/);
      assert.deepEqual((await cacheNames(page)).sort(), [next.cache, next.oldCache].sort());

      // Reload with a draft typed a moment ago (not yet saved by the composer's own pause).
      await page.locator(tid('composer-input')).fill('Typed just before the reload');
      const reloaded = page.waitForEvent('framenavigated');
      await page.locator(tid('update-reload')).click();
      await reloaded;
      await waitForAppReady(page);
      const scripts = await page.evaluate(() => [...document.querySelectorAll('link[rel=modulepreload]')].map((l) => l.href));
      assert.ok(scripts.some((s) => s.includes(next.wasmId)), `the page runs the new build: ${scripts}`);
      await page.waitForFunction(() => document.querySelector('[data-testid="composer-input"]').value === 'Typed just before the reload');
      assert.equal(await page.locator(tid('update-ready')).count(), 0, 'nothing waits any more');

      // The old tab, now served by the new worker, still gets its own build's import chunk, which
      // the host no longer has.
      await importBackup(old, syntheticBackup({ count: 2 }));
      assert.equal(served(site, chunk), chunkServed, 'the old chunk came from the old cache');
      assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });

      // Once no tab of the old build is left, its cache goes.
      await old.close();
      await eventually(
        async () => {
          await page.evaluate(() => fetch('manifest.webmanifest').then((r) => r.text()));
          return JSON.stringify(await cacheNames(page)) === JSON.stringify([next.cache]);
        },
        { what: 'the old build cache is deleted' },
      );
    });
  } finally {
    site.setRoot(distDir());
    await context.close();
  }
});
