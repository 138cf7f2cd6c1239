// Static hosting under a sub-path (issue 7, part 1): the same dist/ served by a plain static server at
// /some/sub/path/ runs a chat; every file it asks for is below that path (relative URLs); the service
// worker registers with exactly that scope; the web app manifest is valid and installable (relative
// start_url and scope, icons that load).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness } from './helpers.mjs';
import { chatSurvivesReload } from './journeys.mjs';
import { newAppPage, openApp, assertNoPageProblems, withDiagnostics } from './helpers.mjs';

const BASE = '/some/sub/path/';

let harness;
before(async () => {
  harness = await startHarness({ basePath: BASE });
});
after(() => harness?.close());

test('sub-path: a chat streams and survives a reload at /some/sub/path/', async () => {
  assert.ok(harness.site.url.endsWith(BASE));
  await chatSurvivesReload(harness);
  const outside = harness.site.requests.filter((r) => !r.url.startsWith(BASE));
  assert.deepEqual(outside, [], 'every request stays below the sub-path');
});

test('sub-path: the service worker registers with the sub-path scope and the manifest is installable', async () => {
  const { site, browser } = harness;
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'subpath-sw', async () => {
      await openApp(page, site.url);
      const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
      assert.equal(scope, site.url);
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      const cached = await page.evaluate(async () => {
        const [name] = await caches.keys();
        const cache = await caches.open(name);
        return (await cache.keys()).map((r) => r.url);
      });
      const rel = cached.map((u) => {
        assert.ok(u.startsWith(site.url), `cached below the scope: ${u}`);
        return u.slice(site.url.length);
      });
      for (const want of ['index.html', 'manifest.webmanifest', 'icons/icon.svg']) assert.ok(rel.includes(want), `${want} is precached: ${rel}`);
      assert.ok(rel.some((u) => /\.wasm$/.test(u)), `the wasm is precached: ${rel}`);
      assert.ok(rel.some((u) => /\.js$/.test(u) && u !== 'sw.js'), `the app's js is precached: ${rel}`);
      // The stylesheet is inlined into index.html (scripts/csp.mjs): no css file is left to precache.
      assert.ok(!rel.some((u) => /\.css$/.test(u)), `no css file is precached: ${rel}`);

      const manifest = await page.evaluate(async () => {
        const link = document.querySelector('link[rel="manifest"]');
        const res = await fetch(link.href);
        return { url: res.url, type: res.headers.get('content-type'), text: await res.text() };
      });
      assert.equal(manifest.url, `${site.url}manifest.webmanifest`);
      assert.match(manifest.type, /application\/manifest\+json/);
      const m = JSON.parse(manifest.text);
      assert.ok(m.name && m.short_name, 'a name and a short name');
      assert.equal(m.display, 'standalone');
      for (const key of ['start_url', 'scope']) {
        assert.ok(!/^[a-z]+:|^\//i.test(m[key]), `${key} is relative: ${m[key]}`);
        assert.equal(new URL(m[key], manifest.url).href, site.url, `${key} resolves to the app`);
      }
      assert.ok(Array.isArray(m.icons) && m.icons.length > 0);
      for (const icon of m.icons) {
        assert.ok(icon.src && icon.sizes && icon.type, `complete icon entry: ${JSON.stringify(icon)}`);
        const src = new URL(icon.src, manifest.url).href;
        assert.ok(src.startsWith(site.url), `icon below the sub-path: ${src}`);
        const ok = await page.evaluate(async (src) => (await fetch(src)).ok, src);
        assert.ok(ok, `icon loads: ${src}`);
      }
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
