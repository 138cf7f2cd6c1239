// Self-tests of the sync server helper (no browser): pouchdb-server starts in memory on a free port,
// answers CORS preflights for the app's origin, speaks the CouchDB calls the replicator makes, loses
// everything on a restart on the same port, and stops.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startCouch } from './couch.mjs';

const ORIGIN = 'http://127.0.0.1:8080';

async function json(res) {
  return { status: res.status, body: await res.json() };
}

async function call(url, path, method = 'GET', body) {
  const init = { method, headers: { 'content-type': 'application/json', origin: ORIGIN } };
  if (body !== undefined) init.body = JSON.stringify(body);
  return json(await fetch(`${url}${path}`, init));
}

test('pouchdb-server answers the replicator\'s calls with CORS for the app', async () => {
  const couch = await startCouch();
  try {
    const pre = await fetch(`${couch.url}/memoire/_bulk_docs`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization' },
    });
    assert.ok(pre.status < 300, `preflight: HTTP ${pre.status}`);
    assert.equal(pre.headers.get('access-control-allow-origin'), ORIGIN);

    assert.equal((await call(couch.url, '/memoire')).status, 404);
    assert.equal((await call(couch.url, '/memoire', 'PUT')).status, 201);
    const doc = { _id: 'm:1', type: 'message', content: 'hi' };
    const pushed = await call(couch.url, '/memoire/_bulk_docs', 'POST', { docs: [doc] });
    assert.equal(pushed.status, 201);
    assert.equal(pushed.body[0].id, 'm:1');
    const again = await call(couch.url, '/memoire/_bulk_docs', 'POST', { docs: [doc] });
    assert.equal(again.body[0].error, 'conflict', 'no _rev on a live document is a conflict');

    const changes = await call(couch.url,
      '/memoire/_changes?include_docs=true&style=all_docs&conflicts=true&limit=10');
    assert.equal(changes.body.results.length, 1);
    assert.equal(changes.body.results[0].doc.content, 'hi');
    assert.ok(changes.body.last_seq !== undefined);

    const all = await call(couch.url, '/memoire/_all_docs?include_docs=true&conflicts=true', 'POST',
      { keys: ['m:1', 'm:2'] });
    assert.equal(all.body.rows[0].doc.content, 'hi');
    assert.equal(all.body.rows[1].error, 'not_found');

    const cp = await call(couch.url, '/memoire/_local/memoire-a', 'PUT', { since: changes.body.last_seq });
    assert.ok(cp.status < 300, JSON.stringify(cp.body));
    assert.ok((await call(couch.url, '/memoire/_local/memoire-a')).body._rev);

    // Restarting on the same port: an in-memory server comes back empty.
    await couch.stop();
    const again2 = await startCouch({ port: couch.port });
    try {
      assert.equal((await call(again2.url, '/memoire')).status, 404);
    } finally {
      await again2.stop();
    }
  } finally {
    await couch.stop();
  }
});
