// Images in sync (issue 29, item 5): browser contexts are devices (each its own IndexedDB) against
// pouchdb-server (couch.mjs), whose database the test reads and writes directly over HTTP, as the
// server's owner could.
// - an image attached on A reaches B (a fresh database) with its message: B shows it
//   (attachment, data-kind="image", its thumbnail loads) and stores the same bytes; the server
//   holds it once, as the attachment of its blob document `a:{sha-256}`;
// - with encryption on, the server holds no image bytes and no hash: the blob document's id is
//   sealed, its attachment ciphertext; B, with the passphrase, shows the image all the same;
// - a hostile server that swaps an image's bytes (another picture) or makes it huge: B refuses
//   both, says so in the sync status, keeps the message's text, and A keeps its image.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  startHarness,
  chatTurn,
  currentConversationId,
  assertNoPageProblems,
  withDiagnostics,
  conversationItem,
  messages,
  tid,
  eventually,
  BROWSER_NETWORK_NOISE,
  syncedDevice,
  newAppPage,
  openApp,
  endpointBase,
} from './helpers.mjs';
import { startCouch } from './couch.mjs';
import { png } from './png.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const IMAGE = png(4, 3);
const HASH = createHash('sha256').update(IMAGE).digest('hex');
const PASSPHRASE = 'correct horse battery staple';
const allow = {
  allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/, /404 \(Not Found\)/, /was refused/, /answer was larger/],
};

async function synced(page) {
  await page.locator(tid('sync-status', '[data-state="synced"]')).waitFor({ timeout: 30_000 });
}

/** Attaches `files` in the composer, sends `text` and waits for the scripted reply. */
async function sendWithImages(page, agent, files, text, reply) {
  await page.locator(tid('composer-attach')).setInputFiles(files);
  const shown = page.locator('.composer').locator(tid('attachment', '[data-kind="image"]'));
  await shown.nth(files.length - 1).locator('img').waitFor({ state: 'visible' });
  await chatTurn(page, agent, text, reply);
}

/** Opens conversation `id` on `page` once it is listed, and waits for `n` messages. */
async function openConversation(page, id, n) {
  await conversationItem(page, id).waitFor({ timeout: 30_000 });
  await conversationItem(page, id).locator(tid('conversation-open')).click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"]').length === n, n);
}

/** The stored bytes of the image `hash` on `page` (its IndexedDB, read directly), as base64. */
function storedImage(page, hash) {
  return page.evaluate((hash) => new Promise((resolve, reject) => {
    const open = indexedDB.open('memoire');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const req = db.transaction('attachments').objectStore('attachments').get(hash);
      req.onerror = () => reject(req.error);
      req.onsuccess = async () => {
        db.close();
        if (!req.result) return resolve(null);
        const bytes = new Uint8Array(await req.result.blob.arrayBuffer());
        resolve(btoa(String.fromCharCode(...bytes)));
      };
    };
  }), hash);
}

/** Every document on the server, with its attachments' bytes. */
async function serverDocs(server) {
  const r = await fetch(`${server.url}/memoire/_all_docs?include_docs=true&attachments=true`);
  return (await r.json()).rows.map((row) => row.doc);
}

/** The user message's image on `page`: shown with a thumbnail that loaded. */
async function imageShown(page) {
  const img = messages(page, 'user').last().locator(tid('attachment', '[data-kind="image"]')).locator('img');
  await img.waitFor({ state: 'visible', timeout: 30_000 });
  await page.waitForFunction((el) => el.complete && el.naturalWidth === 4, await img.elementHandle());
}

/** A device syncing with `server`, encrypted end to end with PASSPHRASE from the start. */
async function encryptedDevice(server) {
  const { agent, site, browser } = harness;
  const d = await newAppPage(browser);
  const { page } = d;
  await openApp(page, site.url);
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-protocol')).selectOption('openai-chat');
  await page.locator(tid('settings-endpoint-url')).fill(endpointBase(agent, 'openai-chat'));
  await page.locator(tid('settings-model')).fill('test-model');
  await page.locator(tid('settings-sync-url')).fill(server.url);
  await page.locator(tid('settings-sync-database')).fill('memoire');
  await page.locator(tid('settings-sync-enabled')).check();
  await page.locator(tid('settings-sync-encrypt')).setChecked(true);
  await page.locator(tid('sync-passphrase-warning')).filter({ hasText: 'cannot be recovered' }).waitFor();
  await page.locator(tid('settings-sync-passphrase')).fill(PASSPHRASE);
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden', timeout: 60_000 });
  return d;
}

async function withDevices(name, { encrypted = false }, body) {
  const server = await startCouch();
  const devices = [];
  try {
    for (let i = 0; i < 2; i++) {
      devices.push(encrypted ? await encryptedDevice(server) : await syncedDevice(harness, server, 'memoire'));
    }
    await withDiagnostics(devices[0].page, devices[0].issues, name, async () => {
      await body(server, ...devices);
      for (const d of devices) assertNoPageProblems(d.issues, allow);
    });
  } finally {
    for (const d of devices) await d.context.close();
    await server.stop();
  }
}

test('sync: an image attached on A shows on B with the same bytes, stored once on the server', () =>
  withDevices('sync-image', {}, async (server, A, B) => {
    const { agent } = harness;
    const files = [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }];
    await sendWithImages(A.page, agent, files, 'What is this?', 'A gradient.');
    const id = await currentConversationId(A.page);
    await synced(A.page);
    await openConversation(B.page, id, 2);
    await imageShown(B.page);
    assert.equal(await storedImage(B.page, HASH), IMAGE.toString('base64'), 'the same bytes');
    // The same image on a second message goes up once: one blob document, its bytes the image's.
    await sendWithImages(A.page, agent, files, 'And again?', 'Still a gradient.');
    await B.page.waitForFunction(() => document.querySelectorAll('[data-testid="message"]').length === 4);
    await synced(A.page);
    const blobs = (await serverDocs(server)).filter((d) => d._id.startsWith('a:'));
    assert.deepEqual(blobs.map((d) => d._id), [`a:${HASH}`]);
    assert.equal(blobs[0]._attachments.blob.data, IMAGE.toString('base64'));
    assert.equal(blobs[0]._attachments.blob.content_type, 'image/png');
    const msg = (await serverDocs(server)).find((d) => d.type === 'message' && d.role === 'user');
    assert.equal(msg.attachments[0].hash, HASH);
    assert.equal(msg.attachments[0].name, 'grad.png');
  }));

test('sync with encryption: the server holds neither the image nor its hash; B shows it', () =>
  withDevices('sync-image-e2ee', { encrypted: true }, async (server, A, B) => {
    const { agent } = harness;
    await sendWithImages(A.page, agent, [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }], 'Sealed?', 'Sealed.');
    const id = await currentConversationId(A.page);
    await synced(A.page);
    const docs = await serverDocs(server);
    const text = JSON.stringify(docs);
    assert.ok(!text.includes(HASH), 'no hash on the server');
    assert.ok(!text.includes(IMAGE.toString('base64')), 'no image bytes on the server');
    const sealed = docs.filter((d) => d._attachments);
    assert.equal(sealed.length, 1, 'one blob document');
    assert.match(sealed[0]._id, /^x:/);
    assert.equal(sealed[0]._attachments.blob.content_type, 'application/octet-stream');
    assert.equal(Buffer.from(sealed[0]._attachments.blob.data, 'base64').length, IMAGE.length + 28, 'iv, ciphertext, tag');
    await openConversation(B.page, id, 2);
    await imageShown(B.page);
    assert.equal(await storedImage(B.page, HASH), IMAGE.toString('base64'));
  }));

/** Replaces the server's blob document `a:{hash}` with `bytes` under the same name. */
async function swap(server, hash, bytes) {
  const url = `${server.url}/memoire/a%3A${hash}`;
  const doc = await (await fetch(url)).json();
  const put = await fetch(url, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...doc, _attachments: { blob: { content_type: 'image/png', data: bytes.toString('base64') } } }),
  });
  assert.equal(put.status, 201, await put.text());
}

test('sync from a hostile server: a swapped or huge image is refused, the message kept, A keeps it', () =>
  withDevices('sync-image-hostile', {}, async (server, A, B) => {
    const { agent } = harness;
    const other = png(5, 5);
    const files = [
      { name: 'grad.png', mimeType: 'image/png', buffer: IMAGE },
      { name: 'square.png', mimeType: 'image/png', buffer: other },
    ];
    // B is offline until the server turned hostile (else it would fetch the images at once).
    await B.context.setOffline(true);
    await sendWithImages(A.page, agent, files, 'Two pictures', 'Two gradients.');
    const id = await currentConversationId(A.page);
    await synced(A.page);
    await eventually(async () => {
      const ids = (await serverDocs(server)).map((d) => d._id).filter((i) => i.startsWith('a:'));
      return ids.length === 2;
    }, { what: 'both images on the server' });
    // Another picture under the first one's name; 13 MB under the second's.
    await swap(server, HASH, png(4, 4));
    const huge = Buffer.concat([other, Buffer.alloc(13 * 1024 * 1024)]);
    await swap(server, createHash('sha256').update(other).digest('hex'), huge);
    await B.context.setOffline(false);
    await openConversation(B.page, id, 2);
    const status = B.page.locator(tid('sync-status'));
    await B.page.waitForFunction(
      (el) => /2 pulled images refused/.test(el.getAttribute('title') ?? ''),
      await status.elementHandle(),
      { timeout: 60_000 },
    );
    const user = messages(B.page, 'user').last();
    assert.match(await user.innerText(), /Two pictures/, 'the message is kept');
    assert.equal(await user.locator(tid('attachment', '[data-kind="image"]')).count(), 2, 'named');
    assert.equal(await user.locator('img').count(), 0, 'no image shown');
    assert.equal(await storedImage(B.page, HASH), null, 'nothing stored');
    // A keeps its own.
    assert.equal(await storedImage(A.page, HASH), IMAGE.toString('base64'));
  }));
