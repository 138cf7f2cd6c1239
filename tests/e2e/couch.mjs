// The sync server for end-to-end tests: pouchdb-server from npm (tests/e2e/package-lock.json, installed
// by scripts/setup.sh; nothing is downloaded at run time), a CouchDB-compatible server, started
// `--in-memory` on a free loopback port (or a given one, to restart "the same" server), with CORS set
// through its `_config` the way a CouchDB 3 admin would, and stopped again.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, 'node_modules', '.bin', 'pouchdb-server');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitUntilUp(url, child, log, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`pouchdb-server exited (${child.exitCode}):\n${log()}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`pouchdb-server did not answer within ${timeoutMs} ms:\n${log()}`);
}

/** Sets one `_config` value (the body is the value as a JSON string, as CouchDB wants it). */
async function setConfig(url, section, key, value) {
  const res = await fetch(`${url}/_config/${section}/${key}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(value),
  });
  if (!res.ok) throw new Error(`PUT /_config/${section}/${key}: HTTP ${res.status} ${await res.text()}`);
}

/**
 * Starts pouchdb-server in memory.
 * @param {{port?: number, origins?: string, cors?: boolean, timeoutMs?: number}} options
 *   `origins`: the CORS origins to allow (default `*`); `cors: false` leaves CORS off (to test the
 *   app's "CORS not enabled" message).
 * @returns {Promise<{url: string, port: number, log: () => string, stop: () => Promise<void>}>}
 */
export async function startCouch({ port, origins = '*', cors = true, timeoutMs = 30_000 } = {}) {
  if (port === undefined) port = await freePort();
  // Its config.json and log.txt go to a directory of their own, removed on stop.
  const dir = mkdtempSync(join(tmpdir(), 'memoire-couch-'));
  const args = ['--in-memory', '--host', '127.0.0.1', '--port', String(port),
    '--config', join(dir, 'config.json'), '--dir', dir, '--no-stdout-logs'];
  const child = spawn(BIN, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d) => { out = (out + d).slice(-20_000); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const log = () => out;
  const url = `http://127.0.0.1:${port}`;
  const stop = () => new Promise((resolve) => {
    const done = () => { rmSync(dir, { recursive: true, force: true }); resolve(); };
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', done);
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3000).unref();
  });
  try {
    await waitUntilUp(url, child, log, timeoutMs);
    if (cors) {
      await setConfig(url, 'httpd', 'enable_cors', 'true');
      await setConfig(url, 'cors', 'origins', origins);
      await setConfig(url, 'cors', 'credentials', 'true');
      await setConfig(url, 'cors', 'methods', 'GET, PUT, POST, HEAD, DELETE');
      await setConfig(url, 'cors', 'headers', 'accept, authorization, content-type, origin, referer');
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, port, log, stop };
}
