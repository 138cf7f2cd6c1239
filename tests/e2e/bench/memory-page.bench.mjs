// The Memory page (memory about you, issue 26) with 1,000 facts about the user.
// Run by `make bench` (scripts/bench.sh), or: cd tests/e2e && DIST=../../dist node bench/memory-page.bench.mjs
//
//   bench memory_page_open_1000_facts_ms <v> ms   median of 5: click on memory-page-open -> the page
//                                                 painted with its count ("1,000 facts") and its first
//                                                 page of facts (the frame after they are in the DOM;
//                                                 the page mounts 200 at a time, "Show more" the rest).
//                                                 The facts are stored as the store writes them
//                                                 (IndexedDB `user_facts`), then the app is reloaded, so
//                                                 each open reads them from the database.

import { startHarness, newAppPage, openApp, waitForAppReady, tid } from '../helpers.mjs';

const FACTS = 1000;
/// What the page mounts at first (`FACTS_PAGE` in src/ui/about/store.rs).
const FIRST_PAGE = 200;
const RUNS = Number(process.env.BENCH_MEMORY_PAGE_RUNS ?? 5);
const log = (...a) => console.error('[memory-page]', ...a);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Writes `n` facts about the user into the app's database, in the store's record shape. */
async function seedFacts(page, n) {
  await page.evaluate(async (n) => {
    const db = await new Promise((resolve, reject) => {
      const r = indexedDB.open('memoire');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    const kinds = ['name', 'home', 'work', 'people', 'pets', 'preference', 'health', 'project', 'other'];
    const day = 86_400_000;
    const t0 = Date.UTC(2026, 0, 1);
    await new Promise((resolve, reject) => {
      const tx = db.transaction('user_facts', 'readwrite');
      const store = tx.objectStore('user_facts');
      for (let i = 0; i < n; i += 1) {
        const past = i % 10 === 9;
        store.put({
          id: `f${i}`,
          text: `I like thing number ${i} very much.`,
          kind: kinds[i % kinds.length],
          claim_key: `likes thing${i}`,
          source: { conversation_id: `c${i % 40}`, message_id: `m${i}`, said_at: t0 + i * day },
          valid_from: t0 + i * day,
          valid_to: past ? t0 + (i + 1) * day : null,
          forgotten: null,
          scope: null,
          updated_at: t0 + i * day,
        });
      }
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    db.close();
  }, n);
}

/** Clicks "About you" and resolves with the time until the count of `total` facts and the first `n`
 * are in the DOM and painted. */
async function openPage(page, n, total) {
  return page.evaluate(
    ({ n, sel, total }) =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        document.querySelector(sel).click();
        const deadline = t0 + 30_000;
        const check = () => {
          const count = document.querySelector('[data-testid="memory-page-count"]')?.textContent ?? '';
          if (document.querySelectorAll('[data-testid="user-fact"]').length >= n && count.replace(/\D/g, '') === String(total)) {
            requestAnimationFrame(() => resolve(performance.now() - t0));
          } else if (performance.now() > deadline) {
            reject(new Error(`only ${document.querySelectorAll('[data-testid="user-fact"]').length} of ${n} facts shown`));
          } else {
            requestAnimationFrame(check);
          }
        };
        check();
      }),
    { n, sel: tid('memory-page-open'), total },
  );
}

async function main() {
  const harness = await startHarness();
  try {
    const { page } = await newAppPage(harness.browser);
    await openApp(page, harness.site.url);
    // The database is open (and upgraded) once the first screen has settled.
    await page.locator(tid('memory-page-open')).waitFor({ state: 'visible' });
    await seedFacts(page, FACTS);
    const runs = [];
    for (let i = 0; i < RUNS; i += 1) {
      await page.reload();
      await waitForAppReady(page);
      await page.locator(tid('memory-page-open')).waitFor({ state: 'visible' });
      runs.push(await openPage(page, FIRST_PAGE, FACTS));
      await page.keyboard.press('Escape');
      await page.locator(tid('memory-page')).waitFor({ state: 'detached' });
    }
    log('runs', runs.map((v) => v.toFixed(1)).join(' '));
    console.log(`bench memory_page_open_1000_facts_ms ${median(runs).toFixed(1)} ms`);
  } finally {
    await harness.close();
  }
}

main().catch((e) => {
  console.error(`memory page benchmark failed: ${e?.message ?? e}\n${e?.stack ?? ''}`);
  process.exit(1);
});
