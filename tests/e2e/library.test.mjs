// A large library (issue 16, point 3): the sidebar is windowed (a page of the list read at a time by
// last activity, at most 90 rows mounted), scrolling reveals more (and unmounts what scrolled away),
// and search finds an old conversation, by a word of a message and by its title, from the store's
// term indexes. The figures for 10,000 conversations are bench/library.bench.mjs's.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, waitForAppReady, tid, uiJourney, eventually } from './helpers.mjs';
import { importLibrary, libraryId, mountedItems, OLD_TITLE, OLD_WORD } from './library.mjs';

const N = 400;

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** The sidebar's rows, top to bottom. */
const ids = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'))
  .evaluateAll((els) => els.map((e) => e.getAttribute('data-conversation-id')));

/** Scrolls the list to its end (or its top) and waits until the rows change. */
async function scrollList(page, where) {
  const before = (await ids(page)).join();
  await eventually(async () => {
    await page.locator(tid('conversation-list')).evaluate((el, where) => {
      el.scrollTop = where === 'end' ? el.scrollHeight : 0;
    }, where);
    return (await ids(page)).join() !== before;
  }, { what: `the list to move on scrolling to its ${where}` });
}

test(`a library of ${N}: few rows mounted, scrolling reveals more, search finds the oldest`, () =>
  uiJourney(harness, 'library', async (page) => {
    await importLibrary(page, N);
    await page.reload();
    await waitForAppReady(page);
    await page.locator(tid('conversation-item')).first().waitFor();
    const first = await ids(page);
    assert.ok(first.length > 0 && first.length <= 100, `mounted ${first.length}`);
    assert.equal(first[0], libraryId(N - 1), 'most recent activity first');
    assert.ok(!first.includes(libraryId(0)), 'the oldest is not mounted');

    // Down: later pages are read and mounted, the top unmounted past the cap.
    let seen = new Set(first);
    for (let i = 0; i < 6; i += 1) {
      await scrollList(page, 'end');
      const now = await ids(page);
      assert.ok(now.length <= 100, `mounted ${now.length} after scrolling`);
      now.forEach((id) => seen.add(id));
    }
    assert.ok(seen.size > 150, `scrolling revealed ${seen.size} conversations`);
    assert.ok(!(await ids(page)).includes(libraryId(N - 1)), 'the top was unmounted');
    const order = await ids(page);
    assert.deepEqual(order, [...order].sort().reverse(), 'still in order of last activity');
    // Up again, in one move to the top: pages are read until the top is back.
    await page.locator(tid('conversation-list')).evaluate((el) => { el.scrollTop = 0; });
    await eventually(async () => (await ids(page))[0] === libraryId(N - 1), { what: 'the top of the list to come back' });
    assert.ok((await mountedItems(page)) <= 100);

    // Search: the oldest conversation, by a word of a message and by its title.
    const search = page.locator(tid('conversation-search'));
    await search.fill(OLD_WORD);
    const hit = page.locator(tid('search-hit', `[data-conversation-id="${libraryId(0)}"]`));
    await hit.waitFor();
    assert.match(await hit.innerText(), new RegExp(OLD_TITLE));
    await search.fill('lighthouse kee');
    await page.locator(tid('search-results')).locator(tid('conversation-item', `[data-conversation-id="${libraryId(0)}"]`)).waitFor();
    // Opening a hit outside the window: the header still names it.
    await search.fill(OLD_WORD);
    await hit.locator('button').click();
    await page.waitForFunction((id) => location.hash === `#/c/${id}`, libraryId(0));
    await eventually(async () => (await page.locator('.chat-title').innerText()).includes(OLD_TITLE), { what: 'the header to name the conversation' });
    assert.ok((await mountedItems(page)) <= 100);
  }));
