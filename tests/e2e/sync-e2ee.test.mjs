// End-to-end encrypted sync and the sync password's origin (issue 28, items 6 and 4): browser
// contexts are devices against pouchdb-server (couch.mjs), whose database the test reads directly
// over HTTP, as the server's owner could.
// - with encryption on, the server holds none of the conversation's words, its title, the memory's
//   entity names or the facts about the user; only sealed ids, revisions and ciphertext (and the
//   marker with its salt);
// - a second device with a wrong passphrase is told so and writes nothing (no document on the
//   device, none on the server); with the right one it shows the conversation, its memory, the facts;
// - a device with encryption off is refused by an encrypted database, and writes nothing to it;
// - turning encryption on for a database that holds plaintext uploads everything sealed and leaves
//   no plaintext document;
// - after the sync URL's origin changes, neither "Test connection" nor the dialog's Save sends the
//   old host's password to the new host; the form says it must be typed again.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  startHarness,
  newAppPage,
  openApp,
  chatTurn,
  assertNoPageProblems,
  withDiagnostics,
  conversationItem,
  currentConversationId,
  tid,
  eventually,
  BROWSER_NETWORK_NOISE,
  syncedDevice,
  unsyncedDevice,
  memoryPageFacts,
} from './helpers.mjs';
import { startCouch } from './couch.mjs';
import { saveSync } from './e2ee.mjs';
import { memoryReplyText } from './agent-server.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const PASSPHRASE = 'correct horse battery staple';
const allow = { allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/, /does not open with this passphrase/] };

// Words that appear only in the conversation, its reply, its memory and its facts.
const SAID = 'My name is Ysolde and I live in Quibdo with my parrot Fernhollow.';
const REPLY = 'Greetings Ysolde, Quibdo sounds humid.';
const SUMMARY = 'Ysolde lives in Quibdo with a parrot named Fernhollow.';
const ENTITY = { type: 'other', name: 'Fernhollow', description: 'Ysolde’s parrot.' };
const SECRETS = ['Ysolde', 'Quibdo', 'humid', 'Fernhollow', 'parrot'];

/** A new device with the endpoint set and nothing else. */
const freshDevice = () => unsyncedDevice(harness, { summaryFrequency: 1 });

async function synced(page) {
  await page.locator(tid('sync-status', '[data-state="synced"]')).waitFor({ timeout: 60_000 });
}

/** Everything the server holds in database `memoire` (live documents, and the feed with deletions). */
async function serverView(server) {
  const all = await (await fetch(`${server.url}/memoire/_all_docs?include_docs=true`)).json();
  const feed = await (await fetch(`${server.url}/memoire/_changes?include_docs=true&style=all_docs`)).text();
  return { rows: all.rows, text: JSON.stringify(all) + feed, seq: JSON.parse(feed).last_seq };
}

/** The number of records in object store `store` of this device's IndexedDB. */
function storedCount(page, store) {
  return page.evaluate((store) => new Promise((resolve, reject) => {
    const open = indexedDB.open('memoire');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const req = db.transaction(store).objectStore(store).count();
      req.onsuccess = () => { db.close(); resolve(req.result); };
      req.onerror = () => reject(req.error);
    };
  }), store);
}

/** One turn whose memory update learns ENTITY; waits until the pane shows the summary. */
async function converse(page) {
  harness.agent.scriptMemory({ text: memoryReplyText({ summary: SUMMARY, entities: [{ properties: {}, relationships: [], ...ENTITY }] }) });
  await chatTurn(page, harness.agent, SAID, REPLY);
  await page.locator(tid('summary-text')).filter({ hasText: SUMMARY }).waitFor();
}

const pageFacts = memoryPageFacts;

function assertSealed(view, what) {
  for (const w of SECRETS) assert.ok(!view.text.includes(w), `${what}: the server holds "${w}"`);
  const ids = view.rows.map((r) => r.id);
  const plain = ids.filter((id) => /^[cmersfp]:/.test(id));
  assert.deepEqual(plain, [], `${what}: no plain document ids`);
  assert.ok(ids.filter((id) => id.startsWith('x:')).length >= 4, `${what}: sealed documents ${ids}`);
}

test('sync e2ee: the server holds no word; a wrong passphrase writes nothing; the right one shows everything', async () => {
  harness.agent.reset();
  const couch = await startCouch();
  const devices = [];
  try {
    const A = await freshDevice();
    devices.push(A);
    await withDiagnostics(A.page, A.issues, 'sync-e2ee', async () => {
      const saved = await saveSync(A.page, couch, { encrypt: true, passphrase: PASSPHRASE });
      assert.ok(saved.ok, saved.text);
      await converse(A.page);
      const id = await currentConversationId(A.page);
      await eventually(async () => (await pageFacts(A.page)).includes('Quibdo'), { what: "the fact on A's Memory page", timeout: 30_000 });
      await synced(A.page);
      const view = await serverView(couch);
      assertSealed(view, 'after A synced');
      assert.ok(view.rows.some((r) => r.id === 'memoire-e2ee' && r.doc.iterations >= 600000 && r.doc.salt), 'the marker holds the salt');

      // B, wrong passphrase: a clear error; nothing on B, nothing new on the server.
      const B = await freshDevice();
      devices.push(B);
      const wrong = await saveSync(B.page, couch, { encrypt: true, passphrase: 'Tr0ub4dor&3' });
      assert.ok(!wrong.ok && wrong.text.includes('passphrase does not open'), wrong.text);
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(await storedCount(B.page, 'sync_docs'), 0, 'B wrote no synced document');
      assert.equal(await conversationItem(B.page, id).count(), 0);
      assert.equal((await serverView(couch)).seq, view.seq, 'the server received nothing');

      // B, encryption off: the encrypted database is refused and nothing is written.
      const plainB = await saveSync(B.page, couch, { encrypt: false });
      assert.ok(plainB.ok, plainB.text);
      await B.page.locator(tid('sync-status', '[data-state="error"]')).waitFor({ timeout: 30_000 });
      assert.match(await B.page.locator(tid('sync-status')).getAttribute('title'), /encrypted/);
      assert.equal(await storedCount(B.page, 'sync_docs'), 0);
      assert.equal((await serverView(couch)).seq, view.seq, 'the server still received nothing');

      // B, the right passphrase: the conversation, its memory and the facts arrive.
      const right = await saveSync(B.page, couch, { encrypt: true, passphrase: PASSPHRASE });
      assert.ok(right.ok, right.text);
      await synced(B.page);
      await conversationItem(B.page, id).waitFor({ timeout: 30_000 });
      await conversationItem(B.page, id).locator(tid('conversation-open')).click();
      await B.page.locator(tid('message')).filter({ hasText: 'Quibdo sounds humid' }).waitFor();
      await B.page.locator(tid('summary-text')).filter({ hasText: 'Fernhollow' }).waitFor();
      await B.page.locator(tid('memory-entities')).locator(tid('entity-name')).filter({ hasText: 'Fernhollow' }).waitFor();
      await eventually(async () => (await pageFacts(B.page)).includes('Quibdo'), { what: "the fact on B's Memory page", timeout: 30_000 });
      // A reload keeps the key (the passphrase is not asked again) and B's new message goes up sealed.
      await B.page.reload();
      await synced(B.page);
      await conversationItem(B.page, id).locator(tid('conversation-open')).click();
      await chatTurn(B.page, harness.agent, 'Ysolde again: the parrot Fernhollow says hello.', 'Hello to Fernhollow.');
      await synced(B.page);
      await A.page.locator(tid('message')).filter({ hasText: 'Hello to Fernhollow.' }).waitFor({ timeout: 30_000 });
      assertSealed(await serverView(couch), 'after B wrote');
      for (const d of devices) assertNoPageProblems(d.issues, allow);
    });
  } finally {
    for (const d of devices) await d.context.close();
    await couch.stop();
  }
});

test('sync e2ee: turning encryption on for a plaintext database leaves no plaintext document', async () => {
  harness.agent.reset();
  const couch = await startCouch();
  let A;
  try {
    A = await syncedDevice(harness, couch, 'memoire', { summaryFrequency: 1 });
    await withDiagnostics(A.page, A.issues, 'sync-e2ee-migrate', async () => {
      await converse(A.page);
      await synced(A.page);
      const before = await serverView(couch);
      assert.ok(before.text.includes('Quibdo'), 'plaintext sync holds the words (the test can see them)');
      const on = await saveSync(A.page, couch, { encrypt: true, passphrase: PASSPHRASE });
      assert.ok(on.ok, on.text);
      await eventually(async () => {
        const v = await serverView(couch);
        return !v.rows.some((r) => /^[cmersfp]:/.test(r.id)) && v.rows.some((r) => r.id.startsWith('x:'));
      }, { timeout: 60_000, interval: 500, what: 'the plaintext documents replaced by sealed ones' });
      await synced(A.page);
      const live = await serverView(couch);
      for (const w of SECRETS) {
        const docs = JSON.stringify(live.rows.filter((r) => !r.value.deleted));
        assert.ok(!docs.includes(w), `a live document still holds "${w}"`);
      }
      assertSealed({ ...live, text: JSON.stringify(live.rows) }, 'after turning encryption on');
      // Nothing was lost on the device.
      await A.page.locator(tid('message')).filter({ hasText: REPLY }).waitFor();
      assertNoPageProblems(A.issues, allow);
    });
  } finally {
    await A?.context.close();
    await couch.stop();
  }
});

/** A server that records the Authorization header of every request, answers CORS, refuses all. */
function startRecorder() {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, auth: req.headers.authorization ?? null });
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'authorization, content-type, accept');
    res.setHeader('Access-Control-Allow-Methods', 'GET, PUT, POST');
    if (req.method === 'OPTIONS') return res.end();
    res.statusCode = 401;
    res.setHeader('content-type', 'application/json');
    res.end('{"error":"unauthorized","reason":"Name or password is incorrect."}');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    stop: () => new Promise((r) => server.close(r)),
  })));
}

test('sync credentials: after the sync URL changes origin, the old password never reaches the new host', async () => {
  const { site, browser } = harness;
  const couch = await startCouch();
  const other = await startRecorder();
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'sync-credentials', async () => {
      await openApp(page, site.url);
      await page.locator(tid('settings-open')).click();
      await page.locator(tid('settings-sync-url')).fill(couch.url);
      await page.locator(tid('settings-sync-database')).fill('memoire');
      await page.locator(tid('settings-sync-user')).fill('ann');
      await page.locator(tid('settings-sync-password')).fill('old-host-secret');
      await page.locator(tid('settings-save')).click();
      await page.locator(tid('settings-dialog')).waitFor({ state: 'detached' });
      await page.reload();
      await page.locator(tid('settings-open')).click();
      const needed = page.locator(tid('sync-password-needed'));
      assert.ok(await needed.isHidden(), 'same origin: the saved password is kept');

      // Only the URL changes: the form says the password must be typed again.
      await page.locator(tid('settings-sync-url')).fill(other.url);
      await needed.waitFor({ state: 'visible' });
      const result = page.locator(tid('sync-result'));
      await page.locator(tid('sync-test')).click();
      await result.filter({ hasText: 'type its password again' }).waitFor();
      await page.locator(tid('settings-sync-enabled')).check();
      // The dialog's Save refuses too, says why in the dialog, and stays open.
      await page.locator(tid('settings-save')).click();
      await page.locator(tid('settings-dialog')).locator('.dialog-actions [role="alert"]')
        .filter({ hasText: /Sync was not saved: .*type its password again/ }).waitFor();
      assert.equal(await result.getAttribute('data-ok'), 'false');
      await new Promise((r) => setTimeout(r, 1000));
      assert.deepEqual(other.seen.filter((r) => r.auth), [], 'the new host received no credentials');

      // Typed for the new host, it goes there.
      await page.locator(tid('settings-sync-password')).fill('new-host-secret');
      await page.locator(tid('sync-test')).click();
      await eventually(async () => other.seen.some((r) => r.auth), { what: 'the test request with the typed password' });
      const sent = other.seen.filter((r) => r.auth).map((r) => Buffer.from(r.auth.replace('Basic ', ''), 'base64').toString());
      assert.deepEqual([...new Set(sent)], ['ann:new-host-secret']);
      assertNoPageProblems(issues, { allowConsole: [...allow.allowConsole, /401/] });
    });
  } finally {
    await context.close();
    await other.stop();
    await couch.stop();
  }
});
