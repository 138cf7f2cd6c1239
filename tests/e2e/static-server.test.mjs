// Self-tests of the static server (no browser).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStaticServer, mimeType, acceptsBrotli } from './static-server.mjs';
import { brotliCompressSync, brotliDecompressSync } from 'node:zlib';
import { rawRequest } from './wire.mjs';

let root;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'memoire-static-'));
  writeFileSync(join(root, 'index.html'), '<!doctype html><title>app</title>');
  writeFileSync(join(root, 'app-1a2b.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
  writeFileSync(join(root, 'app-1a2b.js'), 'export default 1;');
  writeFileSync(join(root, 'app-1a2b.css'), 'body { color: red }');
  writeFileSync(join(root, 'app-1a2b.css.br'), brotliCompressSync('pre')); // precompressed: not the file's own text
  mkdirSync(join(root, 'icons'));
  writeFileSync(join(root, 'icons', 'icon.svg'), '<svg/>');
  writeFileSync(join(tmpdir(), 'outside-secret.txt'), 'secret');
});
after(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(join(tmpdir(), 'outside-secret.txt'), { force: true });
});

const get = (server, path) => rawRequest(server.origin, { method: 'GET', path });

async function withServer(options, fn) {
  const server = await startStaticServer(root, options);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

async function checkFile(server, path, status, type, body) {
  const res = await get(server, path);
  assert.equal(res.status, status, path);
  if (type) assert.equal(res.headers['content-type'], type, path);
  if (body !== undefined) assert.equal(res.bytes.toString('latin1'), body, path);
  if (status === 200) assert.equal(res.headers['cache-control'], 'no-store');
}

test('MIME types', () => {
  assert.equal(mimeType('a.wasm'), 'application/wasm');
  assert.equal(mimeType('A.JS'), 'text/javascript; charset=utf-8');
  assert.equal(mimeType('manifest.webmanifest'), 'application/manifest+json');
  assert.equal(mimeType('x.unknown'), 'application/octet-stream');
});

test('serves the directory at /', () =>
  withServer({}, async (s) => {
    assert.equal(s.url, `${s.origin}/`);
    await checkFile(s, '/', 200, 'text/html; charset=utf-8', '<!doctype html><title>app</title>');
    await checkFile(s, '/app-1a2b.wasm', 200, 'application/wasm', '\u0000asm\u0001\u0000\u0000\u0000');
    await checkFile(s, '/app-1a2b.js', 200, 'text/javascript; charset=utf-8');
    await checkFile(s, '/icons/', 404); // no index.html there, and no directory listing
    await checkFile(s, '/icons/icon.svg', 200, 'image/svg+xml');
    await checkFile(s, '/missing.js', 404);
    await checkFile(s, '/../outside-secret.txt', 404);
    await checkFile(s, '/%2e%2e/outside-secret.txt', 404);
  }));

test('serves under a sub-path and nowhere else', () =>
  withServer({ basePath: '/some/sub/path' }, async (s) => {
    assert.equal(s.url, `${s.origin}/some/sub/path/`);
    await checkFile(s, '/some/sub/path/', 200, 'text/html; charset=utf-8');
    await checkFile(s, '/some/sub/path/app-1a2b.wasm', 200, 'application/wasm');
    await checkFile(s, '/app-1a2b.wasm', 404);
    const bare = await get(s, '/some/sub/path');
    assert.deepEqual([bare.status, bare.headers.location], [301, '/some/sub/path/']);
  }));

test('overrides serve a file from memory (e.g. config.json)', () =>
  withServer({ overrides: { 'config.json': '{"protocol":"ollama"}' } }, async (s) => {
    await checkFile(s, '/config.json', 200, 'application/json', '{"protocol":"ollama"}');
    s.setOverride('config.json');
    await checkFile(s, '/config.json', 404);
  }));

test('offline refuses every request until switched back', () =>
  withServer({}, async (s) => {
    s.setOffline(true);
    await assert.rejects(get(s, '/'));
    s.setOffline(false);
    await checkFile(s, '/', 200);
    assert.deepEqual(s.requests.map((r) => r.offline), [true, false]);
  }));

test('setRoute answers a path itself (query ignored, the base as index.html); setRoot serves another directory', () =>
  withServer({}, async (s) => {
    const other = mkdtempSync(join(tmpdir(), 'memoire-static-b-'));
    try {
      writeFileSync(join(other, 'index.html'), 'build B');
      s.setRoute('api/count', (req, res) => res.end(req.url));
      await checkFile(s, '/api/count?since=3', 200, undefined, '/api/count?since=3');
      s.setRoute('index.html', (_req, res) => ((res.statusCode = 500), res.end('down')));
      await checkFile(s, '/', 500, undefined, 'down');
      s.setRoute('index.html');
      s.setRoute('api/count');
      await checkFile(s, '/api/count', 404);
      s.setRoot(other);
      await checkFile(s, '/', 200, undefined, 'build B');
      await checkFile(s, '/app-1a2b.js', 404);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  }));

/** GET `path` with `encoding` as Accept-Encoding: the Content-Encoding answered and the decoded body. */
async function checkEncoding(server, path, encoding, wantEncoding, wantBody) {
  const res = await rawRequest(server.origin, { method: 'GET', path, headers: { 'accept-encoding': encoding } });
  assert.equal(res.status, 200, path);
  assert.equal(res.headers['content-encoding'], wantEncoding, `${path} with ${encoding}`);
  assert.equal(Number(res.headers['content-length']), res.bytes.length, path);
  const body = wantEncoding === 'br' ? brotliDecompressSync(res.bytes) : res.bytes;
  assert.equal(body.toString('latin1'), wantBody, path);
}

test('Accept-Encoding: br is read as a host reads it', () => {
  for (const [header, want] of [['br', true], ['gzip, deflate, br, zstd', true], ['br;q=0', false], ['gzip', false], ['', false], ['brotli', false]]) {
    assert.equal(acceptsBrotli(header), want, header);
  }
});

test('brotli: compressed when asked, a precompressed .br preferred, plain otherwise', () =>
  withServer({ brotli: true }, async (s) => {
    await checkEncoding(s, '/app-1a2b.js', 'gzip, br', 'br', 'export default 1;');
    await checkEncoding(s, '/app-1a2b.js', 'gzip', undefined, 'export default 1;');
    await checkEncoding(s, '/app-1a2b.css', 'br', 'br', 'pre');
    await checkEncoding(s, '/', 'br', 'br', '<!doctype html><title>app</title>');
  }));

test('without brotli: the file as it is on disk whatever the client accepts', () =>
  withServer({}, async (s) => {
    await checkEncoding(s, '/app-1a2b.js', 'br', undefined, 'export default 1;');
  }));
