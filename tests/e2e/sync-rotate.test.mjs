// Changing the passphrase of an encrypted sync database (issue 43, item 4), browser contexts as
// devices against pouchdb-server behind a proxy that, on the test's word, holds one request
// unanswered:
// - device A, with two conversations (one with an image) and a fact, changes the passphrase in Settings → Sync; the
//   proxy holds its first deletion of old copies (the new copies are written by then), so the
//   re-encryption is interrupted part-way, deterministically; A reloads and goes on without being
//   asked for a passphrase;
// - meanwhile device B, holding only the old key, is told the passphrase is being changed and
//   writes nothing;
// - afterwards the marker's only key is the new one (v2), the server holds no document under the
//   old keys (no old sealed id; every sealed document opens under the new key, none under the old:
//   checked here with Node's own crypto), B with the old key is told the passphrase changed and
//   writes nothing, and B with the new passphrase reads every conversation, the image and the fact.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import crypto from 'node:crypto';
import {
  startHarness,
  chatTurn,
  assertNoPageProblems,
  withDiagnostics,
  conversationItem,
  currentConversationId,
  tid,
  eventually,
  BROWSER_NETWORK_NOISE,
  unsyncedDevice,
  waitForSyncStatus,
  memoryPageFacts,
} from './helpers.mjs';
import { startCouch } from './couch.mjs';
import { saveSync } from './e2ee.mjs';
import { png } from './png.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const OLD = 'correct horse battery staple';
const NEW = 'violet harbour lantern quietly drifting';
const NAME = 'My name is Marta and I live in Lisbon.';
const IMAGE = png(4, 3);
const HASH = crypto.createHash('sha256').update(IMAGE).digest('hex');
const allow = { allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/, /could not be opened|not sealed/] };

/**
 * A proxy in front of `target` that forwards everything, except that after `holdDeletion()` it
 * holds the first `_bulk_docs` deleting documents unanswered and unforwarded (`held` resolves
 * then); `release()` drops it and forwards everything again. `log` lists every request.
 */
async function startProxy(target) {
  const state = { hold: false, held: null, onHeld: null, log: [] };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, target);
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (req.method !== 'OPTIONS') state.log.push({ method: req.method, path: url.pathname, body: body.toString() });
    if (state.hold && req.method === 'POST' && url.pathname.endsWith('/_bulk_docs') && body.toString().includes('"_deleted":true')) {
      state.hold = false;
      state.held = res;
      state.onHeld?.();
      return;
    }
    const up = http.request(url, { method: req.method, headers: { ...req.headers, host: url.host } }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    up.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    holdDeletion() {
      state.hold = true;
      return new Promise((r) => { state.onHeld = r; });
    },
    release() { state.held?.destroy(); state.held = null; },
    close: () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); },
  };
}

/** The keys of a v2 marker's derivation (engine/sync/keys.rs), with Node's crypto. */
function keysOf(passphrase, salt, iterations) {
  const bits = crypto.pbkdf2Sync(Buffer.from(passphrase.normalize('NFC')), salt, iterations, 32, 'sha256');
  const hkdf = (info) => Buffer.from(crypto.hkdfSync('sha256', bits, Buffer.alloc(0), Buffer.from(info), 32));
  return { aes: hkdf('memoire e2ee v2: AES-256-GCM documents'), mac: hkdf('memoire e2ee v2: HMAC-SHA-256 ids') };
}

/** `iv ‖ AES-256-GCM(…)` (base64) opened under `keys` with additional data `aad`, or null. */
function decrypt(keys, aad, b64) {
  const blob = Buffer.from(b64 ?? '', 'base64');
  if (blob.length < 28) return null;
  try {
    const d = crypto.createDecipheriv('aes-256-gcm', keys.aes, blob.subarray(0, 12));
    d.setAAD(Buffer.from(aad));
    d.setAuthTag(blob.subarray(blob.length - 16));
    return Buffer.concat([d.update(blob.subarray(12, blob.length - 16)), d.final()]);
  } catch {
    return null;
  }
}

/** The plain document an envelope holds under `keys`, or null when it does not open. */
function open(keys, doc) {
  const plain = decrypt(keys, doc._id, doc.d);
  return plain && JSON.parse(plain.toString());
}

/** The image's bytes of the blob document `id` under `keys` (engine/sync/blob.rs `sealed_aad`). */
async function imageBytes(couch, keys, id) {
  const doc = await (await fetch(`${couch.url}/memoire/${encodeURIComponent(id)}?attachments=true`)).json();
  return decrypt(keys, `${id}/blob`, doc._attachments?.blob?.data);
}

const sealedId = (keys, plain) => `x:${crypto.createHmac('sha256', keys.mac).update(plain).digest('base64url')}`;

async function marker(couch) {
  return (await fetch(`${couch.url}/memoire/memoire-e2ee`)).json();
}

/** The server's live sealed documents. */
async function sealedDocs(couch) {
  const all = await (await fetch(`${couch.url}/memoire/_all_docs?include_docs=true`)).json();
  return all.rows.filter((r) => r.id.startsWith('x:')).map((r) => r.doc);
}

async function seq(couch) {
  return (await (await fetch(`${couch.url}/memoire/_changes?limit=0&descending=true`)).json()).last_seq;
}

/** Keeps the durations of the key derivations (the `memoire-sync:e2ee-unlock` measure, cleared at
 *  once by the app) in `window.__unlocks`, on this page and (`context`) after a reload. */
async function watchUnlocks(page, context) {
  const script = () => {
    window.__unlocks = [];
    new PerformanceObserver((l) => l.getEntries().forEach((e) => {
      if (e.name === 'memoire-sync:e2ee-unlock') window.__unlocks.push(Math.round(e.duration));
    })).observe({ entryTypes: ['measure'] });
  };
  await page.evaluate(script);
  if (context) await context.addInitScript(script);
}
const unlocks = (page) => page.evaluate(() => window.__unlocks);

/** Settings → Sync → Change passphrase on `page`: this attempt's result (`ok`, its words). */
async function changePassphrase(page, current, next) {
  if (!(await page.locator(tid('settings-sync-url')).isVisible())) await page.locator(tid('settings-open')).click();
  if (!(await page.locator(tid('sync-rotate-current')).isVisible())) await page.locator(tid('sync-rotate-open')).click();
  await page.locator(tid('sync-rotate-current')).fill(current);
  await page.locator(tid('sync-rotate-new')).fill(next);
  await page.locator(tid('sync-rotate-strength')).waitFor();
  const result = page.locator(tid('sync-rotate-result'));
  // This attempt's words, not the last one's: they come after its "Checking…".
  await result.evaluate((e) => {
    e.seenWorking = false;
    new MutationObserver(() => { if (/Checking/.test(e.textContent)) e.seenWorking = true; })
      .observe(e, { childList: true, characterData: true, subtree: true });
  });
  await page.locator(tid('sync-rotate-start')).click();
  await page.waitForFunction(() => {
    const e = document.querySelector('[data-testid="sync-rotate-result"]');
    return e.seenWorking && !/Checking/.test(e.textContent);
  }, null, { timeout: 30_000 });
  return { ok: (await result.getAttribute('data-ok')) === 'true', text: await result.innerText() };
}

test('sync rotate: a changed passphrase re-encrypts every document, resumes after a reload, and stops devices with the old key', async () => {
  const { agent } = harness;
  agent.reset();
  const couch = await startCouch();
  const proxy = await startProxy(couch.url);
  const devices = [];
  try {
    const A = await unsyncedDevice(harness, { summaryFrequency: 1 });
    devices.push(A);
    await withDiagnostics(A.page, A.issues, 'sync-rotate', async () => {
      const on = await saveSync(A.page, proxy, { encrypt: true, passphrase: OLD });
      assert.ok(on.ok, on.text);
      await chatTurn(A.page, agent, NAME, 'Nice to meet you, Marta.');
      const first = await currentConversationId(A.page);
      await eventually(async () => (await memoryPageFacts(A.page)).includes('Lisbon'), { what: 'the fact on the Memory page', timeout: 30_000 });
      await A.page.locator(tid('new-conversation')).click();
      await A.page.locator(tid('message')).first().waitFor({ state: 'detached' });
      await A.page.locator(tid('composer-attach')).setInputFiles([{ name: 'porto.png', mimeType: 'image/png', buffer: IMAGE }]);
      await A.page.locator('.composer').locator(tid('attachment', '[data-kind="image"]')).locator('img').waitFor({ state: 'visible' });
      await chatTurn(A.page, agent, 'Plan a trip to Porto.', 'Porto it is.');
      const second = await currentConversationId(A.page);
      assert.notEqual(first, second);
      await waitForSyncStatus(A.page, (s) => s.state === 'synced', 'A synced');
      await eventually(async () => (await sealedDocs(couch)).some((d) => d._attachments), { what: 'the image on the server', timeout: 30_000 });

      // B holds the old key (encryption saved, sync not on yet).
      const B = await unsyncedDevice(harness, { summaryFrequency: 50 });
      devices.push(B);
      await watchUnlocks(B.page);
      const keep = await saveSync(B.page, couch, { encrypt: true, passphrase: OLD, enabled: false });
      assert.ok(keep.ok, keep.text);

      const before = await marker(couch);
      const oldKeys = keysOf(OLD, Buffer.from(before.salt, 'base64'), before.iterations);
      const oldDocs = await sealedDocs(couch);
      const plainIds = oldDocs.map((d) => open(oldKeys, d)?._id);
      assert.ok(plainIds.every(Boolean), 'every sealed document opens under the old key');
      assert.ok(plainIds.includes(`c:${first}`) && plainIds.includes(`c:${second}`), `${plainIds}`);
      assert.ok(plainIds.some((id) => id.startsWith('f:')), `a fact among ${plainIds}`);
      assert.ok(plainIds.includes(`a:${HASH}`), `the image among ${plainIds}`);

      // The change, interrupted at its first deletion of old copies.
      await watchUnlocks(A.page, A.context);
      const held = proxy.holdDeletion();
      const weak = await changePassphrase(A.page, OLD, 'short');
      assert.ok(!weak.ok && /too easy to guess/.test(weak.text), weak.text);
      const wrong = await changePassphrase(A.page, 'not the passphrase at all', NEW);
      assert.ok(!wrong.ok && /does not open/.test(wrong.text), wrong.text);
      assert.equal((await marker(couch)).next, undefined, 'a refused change writes no marker');
      const changed = await changePassphrase(A.page, OLD, NEW);
      assert.ok(changed.ok, changed.text);
      await held;
      const changing = await unlocks(A.page);
      // The wrong current passphrase, then the right one and the new: one derivation each.
      assert.equal(changing.length, 3, `A's derivations: ${changing}`);
      const rotating = await marker(couch);
      assert.ok(rotating.next && rotating.next.v === 2 && rotating.salt === before.salt, JSON.stringify(rotating));
      const newKeys = keysOf(NEW, Buffer.from(rotating.next.salt, 'base64'), rotating.next.iterations);
      // Part-way: the new copies of the first page are written, no old copy is deleted yet.
      const atHold = await sealedDocs(couch);
      const stillOld = atHold.filter((d) => open(oldKeys, d));
      const carried = atHold.filter((d) => open(newKeys, d));
      assert.ok(stillOld.length >= oldDocs.length && carried.length > 0, `${stillOld.length} old, ${carried.length} new`);
      const toCarry = stillOld.map((d) => open(oldKeys, d)._id).sort();
      const progress = await waitForSyncStatus(A.page, (s) => /Re-encrypting: \d+ of \d+ documents/.test(s.detail), 'the progress');
      assert.match(progress.detail, new RegExp(`of ${stillOld.length} documents`));
      await A.page.locator(tid('sync-rotate-progress')).filter({ hasText: /Re-encrypting: \d+ of/ }).waitFor();

      // B, with only the old key, is told the passphrase is being changed, and writes nothing.
      const heldAt = await seq(couch);
      const leaving = await saveSync(B.page, couch, { encrypt: true, passphrase: '' });
      assert.ok(!leaving.ok && /being changed on another device/.test(leaving.text), leaving.text);
      assert.equal(await seq(couch), heldAt, 'B wrote nothing');

      // A reloads mid-way and goes on by itself.
      await A.page.reload();
      proxy.release();
      const done = await eventually(async () => {
        const m = await marker(couch);
        return m.next === undefined ? m : null;
      }, { timeout: 60_000, what: 'the change finished' });
      await waitForSyncStatus(A.page, (s) => s.state === 'synced', 'A synced after the change', 60_000);
      assert.deepEqual(await unlocks(A.page), [], 'A went on with its kept keys: no passphrase, no derivation');
      assert.deepEqual([done.v, done.salt, done.rotated_from], [2, rotating.next.salt, before.salt]);
      const now = await sealedDocs(couch);
      const oldIds = new Set(stillOld.map((d) => d._id));
      for (const d of now) {
        assert.ok(!oldIds.has(d._id), `${d._id} is an old sealed id`);
        assert.equal(open(oldKeys, d), null, `${d._id} opens under the old key`);
        const plain = open(newKeys, d);
        assert.ok(plain && sealedId(newKeys, plain._id) === d._id, `${d._id} opens under the new key, under its new id`);
      }
      const plainNow = now.map((d) => open(newKeys, d)._id);
      assert.equal(new Set(plainNow).size, plainNow.length, 'each document once');
      for (const id of toCarry) assert.ok(plainNow.includes(id), `${id} carried over`);
      const image = now.find((d) => open(newKeys, d)._id === `a:${HASH}`);
      assert.deepEqual(await imageBytes(couch, newKeys, image._id), IMAGE, "the image's bytes under the new key");
      assert.equal(await imageBytes(couch, oldKeys, image._id), null);

      // B with the old key: stopped with the words to act on, nothing written.
      const at = await seq(couch);
      const stale = await saveSync(B.page, couch, { encrypt: true, passphrase: '' });
      assert.ok(!stale.ok && /was changed on another device: enter the new one/.test(stale.text), stale.text);
      assert.equal(await seq(couch), at, 'B wrote nothing');
      // With the new passphrase, B reads every conversation and the fact.
      const fresh = await saveSync(B.page, couch, { encrypt: true, passphrase: NEW });
      assert.ok(fresh.ok, fresh.text);
      await conversationItem(B.page, first).waitFor({ timeout: 30_000 });
      await conversationItem(B.page, second).waitFor({ timeout: 30_000 });
      await conversationItem(B.page, second).locator(tid('conversation-open')).click();
      const img = B.page.locator(tid('message')).first().locator(tid('attachment', '[data-kind="image"]')).locator('img');
      await img.waitFor({ state: 'visible', timeout: 30_000 });
      await B.page.waitForFunction((el) => el.complete && el.naturalWidth === 4, await img.elementHandle());
      await eventually(async () => (await memoryPageFacts(B.page)).includes('Lisbon'), { what: "the fact on B's Memory page", timeout: 30_000 });
      // A typed passphrase derives once, as before the change existed; kept keys never derive.
      const onB = await unlocks(B.page);
      assert.equal(onB.length, 2, `B's derivations (the old passphrase, then the new): ${onB}`);
      console.error(`[sync-rotate] e2ee_unlock_ms: B ${onB.join(', ')} ms; A while changing ${changing.join(', ')} ms`);
      for (const d of devices) assertNoPageProblems(d.issues, allow);
    });
  } finally {
    for (const d of devices) await d.context.close();
    await proxy.close();
    await couch.stop();
  }
});
