// Browser benchmark of a large library (issue 16, point 3), the built app (DIST) in headless Debian
// Chromium, unthrottled. 10,000 conversations (two messages each, tests/e2e/library.mjs) are written
// through the app's own Import control, then the app is reloaded OPEN_RUNS times.
// Run by `make bench` (scripts/bench.sh), or: cd tests/e2e && DIST=../../dist node bench/library.bench.mjs
//
// Prints one line per figure, each the median of the runs:
//   bench open_app_10k_conversations_ms <v> ms   navigation -> composer usable and the sidebar drawn
//   bench sidebar_mounted_items <v> items         conversation rows mounted after that open
//   bench open_app_longest_task_ms <v> ms         the longest main-thread task from navigation to usable
//                                                (longtask entries, and the largest gap of a posted-message
//                                                probe, which also sees tasks under 50 ms)
//   bench search_10k_conversations_ms <v> ms      one input event in the search field -> the first result shown
// Details (every run) go to stderr.

import { startHarness, newAppPage, openApp, waitForAppReady, assertNoPageProblems, withDiagnostics } from '../helpers.mjs';
import { importLibrary, mountedItems, timeSearch } from '../library.mjs';
import { gapProbe } from './probe.mjs';

const N = Number(process.env.BENCH_LIBRARY_SIZE ?? 10_000);
const OPEN_RUNS = 5;
const SEARCH_WORDS = ['garden', 'harbour', 'violin', 'recipe', 'mountain', 'quetzal', 'lighthouse'];

const log = (...a) => console.error('[library.bench]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (v) => (Math.round(v * 10) / 10).toFixed(1);

/** Installed before the app's scripts on every navigation: when the composer is usable with the
 * sidebar drawn (checked every frame), and the longest task until then. */
function instruments() {
  const b = (window.__lib = { readyAt: 0, longtasks: [] });
  new PerformanceObserver((list) => b.longtasks.push(...list.getEntries().map((e) => e.duration)))
    .observe({ type: 'longtask' });
  // Until ready (bench/probe.mjs, installed before this script).
  window.__gapProbe.start();
  const check = () => {
    const composer = document.querySelector('[data-testid="composer-input"]');
    const item = document.querySelector('[data-testid="conversation-list"] [data-testid="conversation-item"]');
    if (composer && !composer.disabled && item) {
      b.readyAt = performance.now();
      window.__gapProbe.stop();
    } else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}

async function openRun(page, url, run) {
  await page.goto(url);
  await page.waitForFunction(() => window.__lib?.readyAt > 0, null, { timeout: 60_000 });
  const { readyAt, longtasks, maxGap } = await page.evaluate(() => ({ ...window.__lib, maxGap: window.__gapProbe.max }));
  const mounted = await mountedItems(page);
  const longest = Math.max(maxGap, ...longtasks, 0);
  log(`open run ${run}: usable at ${fmt(readyAt)} ms, ${mounted} rows mounted, longtasks ${JSON.stringify(longtasks.map(Math.round))}, max probe gap ${fmt(maxGap)} ms`);
  return { readyAt, mounted, longest };
}

async function main() {
  const harness = await startHarness();
  const { site, browser } = harness;
  const { context, page, issues } = await newAppPage(browser);
  const results = {};
  try {
    await withDiagnostics(page, issues, 'library-bench', async () => {
      await openApp(page, site.url);
      const t0 = Date.now();
      await importLibrary(page, N, { timeout: 600_000 });
      log(`imported ${N} conversations in ${Date.now() - t0} ms (through the Import control)`);
      await context.addInitScript(gapProbe);
      await context.addInitScript(instruments);
      const runs = [];
      for (let i = 0; i < OPEN_RUNS; i++) runs.push(await openRun(page, site.url, i));
      results.open_app_10k_conversations_ms = median(runs.map((r) => r.readyAt));
      results.sidebar_mounted_items = median(runs.map((r) => r.mounted));
      results.open_app_longest_task_ms = median(runs.map((r) => r.longest));

      await waitForAppReady(page);
      const searches = [];
      for (const w of SEARCH_WORDS) {
        const ms = await timeSearch(page, w);
        const hits = await page.locator('[data-testid="search-hit"]').count();
        const titles = await page.locator('[data-testid="search-results"] [data-testid="conversation-item"]').count();
        log(`search "${w}": first result after ${fmt(ms)} ms (${titles} titles and ${hits} messages shown)`);
        searches.push(ms);
        await page.locator('[data-testid="conversation-search"]').fill('');
        await page.locator('[data-testid="conversation-list"]').waitFor();
      }
      results.search_10k_conversations_ms = median(searches);
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close().catch(() => {});
    await harness.close();
  }
  const units = { sidebar_mounted_items: 'items' };
  for (const [name, v] of Object.entries(results)) console.log(`bench ${name} ${fmt(v)} ${units[name] ?? 'ms'}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
