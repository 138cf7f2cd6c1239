// Encrypted sync's keys (issue 43, items 4 and 5), browser contexts as devices against pouchdb-server:
// - a passphrase under the strength floor makes no key (the hint under the field says so as it is
//   typed); a new database's marker is v2 (NFC, PBKDF2 to 256 bits, HKDF);
// - the same passphrase typed in another Unicode form (NFD, as some keyboards give it) opens it;
// - the keys are the ones the marker's derivation names: the sealed id of the conversation is the
//   HMAC that Node's own PBKDF2 and HKDF give (v2), and a database made as builds before issue 43
//   made them (v1: 512 PBKDF2 bits split in two, the marker written here) still opens, stays v1,
//   and gets ids under its v1 key;
// - once the marker is deleted on the server, a database holding sealed documents is an error on a
//   new device and on the device that made it, in the form and the sync status; no new marker, no
//   new key, nothing written.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import {
  startHarness,
  openConfiguredApp,
  chatTurn,
  assertNoPageProblems,
  withDiagnostics,
  conversationItem,
  currentConversationId,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';
import { startCouch } from './couch.mjs';
import { saveSync } from './e2ee.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const PASSPHRASE = 'Crème brûlée à Noël, déjà vu';
const allow = { allowConsole: [...BROWSER_NETWORK_NOISE, /blocked by CORS policy/] };

async function marker(couch) {
  const res = await fetch(`${couch.url}/memoire/memoire-e2ee`);
  return res.ok ? res.json() : null;
}

/** The keys a marker's derivation gives (engine/sync/keys.rs), computed here with Node's crypto. */
function keysOf(kdf, passphrase, salt, iterations) {
  if (kdf === 1) {
    const bits = crypto.pbkdf2Sync(Buffer.from(passphrase), salt, iterations, 64, 'sha256');
    return { aes: bits.subarray(0, 32), mac: bits.subarray(32) };
  }
  const bits = crypto.pbkdf2Sync(Buffer.from(passphrase.normalize('NFC')), salt, iterations, 32, 'sha256');
  const hkdf = (info) => Buffer.from(crypto.hkdfSync('sha256', bits, Buffer.alloc(0), Buffer.from(info), 32));
  return { aes: hkdf('memoire e2ee v2: AES-256-GCM documents'), mac: hkdf('memoire e2ee v2: HMAC-SHA-256 ids') };
}

/** The server id of conversation `id` under `keys`. */
function sealedConversation(keys, id) {
  return `x:${crypto.createHmac('sha256', keys.mac).update(`c:${id}`).digest('base64url')}`;
}

/** A v1 marker as builds before issue 43 wrote it (engine/sync/seal.rs `Marker::to_json`, v 1). */
function v1Marker(passphrase, iterations) {
  const salt = crypto.randomBytes(16);
  const { aes } = keysOf(1, passphrase, salt, iterations);
  const iv = crypto.randomBytes(12);
  const c = crypto.createCipheriv('aes-256-gcm', aes, iv);
  c.setAAD(Buffer.from('memoire-e2ee'));
  const ct = Buffer.concat([c.update('memoire: this passphrase opens this database'), c.final(), c.getAuthTag()]);
  return { _id: 'memoire-e2ee', v: 1, kdf: 'PBKDF2-SHA-256', iterations, salt: salt.toString('base64'),
    cipher: 'AES-256-GCM', ids: 'HMAC-SHA-256', check: Buffer.concat([iv, ct]).toString('base64') };
}

async function seq(couch) {
  return (await (await fetch(`${couch.url}/memoire/_changes?limit=0&descending=true`)).json()).last_seq;
}

test('sync keys: a weak passphrase makes no key; a v2 marker opens with the passphrase in another Unicode form; a deleted marker is an error, never a new key', async () => {
  const couch = await startCouch();
  const devices = [];
  try {
    const A = await openConfiguredApp(harness, 'openai-chat');
    devices.push(A);
    await withDiagnostics(A.page, A.issues, 'sync-keys', async () => {
      const weak = await saveSync(A.page, couch, { encrypt: true, passphrase: 'password' });
      assert.ok(!weak.ok && weak.text.includes('too easy to guess'), weak.text);
      const hint = A.page.locator(tid('sync-passphrase-strength'));
      assert.equal(await hint.getAttribute('data-level'), 'weak');
      assert.match(await hint.innerText(), /Too easy to guess/);
      assert.equal(await marker(couch), null, 'no marker, no key');

      const saved = await saveSync(A.page, couch, { encrypt: true, passphrase: PASSPHRASE.normalize('NFC') });
      assert.ok(saved.ok, saved.text);
      const m = await marker(couch);
      assert.deepEqual([m.v, m.kdf, m.passphrase], [2, 'PBKDF2-SHA-256+HKDF-SHA-256', 'NFC']);
      await chatTurn(A.page, harness.agent, 'Remember the word Zanzibarite.', 'Zanzibarite noted.');
      const id = await currentConversationId(A.page);
      await A.page.locator(tid('sync-status', '[data-state="synced"]')).waitFor({ timeout: 60_000 });
      const keys = keysOf(2, PASSPHRASE, Buffer.from(m.salt, 'base64'), m.iterations);
      const ids = (await (await fetch(`${couch.url}/memoire/_all_docs`)).json()).rows.map((r) => r.id);
      assert.ok(ids.includes(sealedConversation(keys, id)), `the conversation under its v2 id: ${ids}`);

      // B types the passphrase decomposed (NFD): the same key.
      const B = await openConfiguredApp(harness, 'openai-chat');
      devices.push(B);
      assert.notEqual(PASSPHRASE.normalize('NFD'), PASSPHRASE.normalize('NFC'));
      const right = await saveSync(B.page, couch, { encrypt: true, passphrase: PASSPHRASE.normalize('NFD') });
      assert.ok(right.ok, right.text);
      await conversationItem(B.page, id).waitFor({ timeout: 30_000 });

      // The marker deleted on the server: a new device with the right passphrase is refused.
      const del = await fetch(`${couch.url}/memoire/memoire-e2ee?rev=${m._rev}`, { method: 'DELETE' });
      assert.ok(del.ok, `DELETE: ${del.status}`);
      const at = await seq(couch);
      const C = await openConfiguredApp(harness, 'openai-chat');
      devices.push(C);
      const missing = await saveSync(C.page, couch, { encrypt: true, passphrase: PASSPHRASE });
      assert.ok(!missing.ok && missing.text.includes('encryption marker is missing'), missing.text);
      // A, on its next connection (a reload), says so in its sync status and makes no marker.
      await A.page.reload();
      const status = A.page.locator(tid('sync-status', '[data-state="error"]'));
      await status.waitFor({ timeout: 30_000 });
      assert.match(await status.getAttribute('title'), /encryption marker is missing/);
      assert.equal(await marker(couch), null, 'no device made a new marker');
      assert.equal(await seq(couch), at, 'nothing was written to the server');
      for (const d of devices) assertNoPageProblems(d.issues, allow);
    });
  } finally {
    for (const d of devices) await d.context.close();
    await couch.stop();
  }
});

test('sync keys: a database encrypted before issue 43 (marker v1) still opens and keeps its derivation', async () => {
  const couch = await startCouch();
  let A;
  try {
    const passphrase = 'an older passphrase of several words';
    await fetch(`${couch.url}/memoire`, { method: 'PUT' });
    const old = v1Marker(passphrase, 600_000);
    assert.ok((await fetch(`${couch.url}/memoire/memoire-e2ee`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(old) })).ok);
    A = await openConfiguredApp(harness, 'openai-chat');
    await withDiagnostics(A.page, A.issues, 'sync-keys-v1', async () => {
      const wrong = await saveSync(A.page, couch, { encrypt: true, passphrase: 'another passphrase of several words' });
      assert.ok(!wrong.ok && wrong.text.includes('passphrase does not open'), wrong.text);
      const saved = await saveSync(A.page, couch, { encrypt: true, passphrase });
      assert.ok(saved.ok, saved.text);
      await chatTurn(A.page, harness.agent, 'Remember the word Quillwort.', 'Quillwort noted.');
      const id = await currentConversationId(A.page);
      await A.page.locator(tid('sync-status', '[data-state="synced"]')).waitFor({ timeout: 60_000 });
      const m = await marker(couch);
      assert.deepEqual([m.v, m.kdf, m.salt, m.check], [1, 'PBKDF2-SHA-256', old.salt, old.check], 'the marker stays v1');
      const keys = keysOf(1, passphrase, Buffer.from(old.salt, 'base64'), old.iterations);
      const ids = (await (await fetch(`${couch.url}/memoire/_all_docs`)).json()).rows.map((r) => r.id);
      assert.ok(ids.includes(sealedConversation(keys, id)), `the conversation under its v1 id: ${ids}`);
      assertNoPageProblems(A.issues, allow);
    });
  } finally {
    await A?.context.close();
    await couch.stop();
  }
});
