// A plain static file server for the built app (dist/), like any static host: at `/` or under a
// sub-path, correct MIME types (application/wasm for streaming compilation), `Cache-Control: no-store`
// so no test sees a stale file, and an offline switch that refuses every request. With `brotli: true`
// it answers `Accept-Encoding: br` as a host does: a precompressed `<file>.br` next to the file when
// there is one, else the file compressed once (quality 11) and kept in memory. A test can serve
// another directory from the same address (`setRoot`: a deploy of a new build) and answer a path
// itself (`setRoute`: a same-origin API under the app's path, an error in place of a file).

import http from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { brotliCompressSync, constants as zlib } from 'node:zlib';

const MIME_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
};

/** The Content-Type for a file name (application/octet-stream when unknown). */
export function mimeType(name) {
  return MIME_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Serves `root` on 127.0.0.1 at a random port.
 * @param {string} root            directory to serve (e.g. the built dist/)
 * @param {{basePath?: string, brotli?: boolean, overrides?: Record<string, string|Buffer>}} [options]
 *   basePath: mount point such as '/some/sub/path/' (default '/');
 *   brotli: answer `Accept-Encoding: br` with brotli (default false: every body as it is on disk);
 *   overrides: files served instead of (or in addition to) the disk, by path relative to root, e.g. {'config.json': '...'}
 * @returns {Promise<StaticServer>}
 */
export async function startStaticServer(root, options = {}) {
  const state = {
    root: resolve(root),
    basePath: normalizeBase(options.basePath ?? '/'),
    overrides: { ...options.overrides },
    routes: {},
    brotli: options.brotli === true,
    offline: false,
    requests: [],
  };
  const server = http.createServer((req, res) => {
    serve(state, req, res).catch((err) => sendText(res, 500, `static-server error: ${err.message}`));
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', ok);
  });
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    url: `${origin}${state.basePath}`,
    port: server.address().port,
    requests: state.requests,
    setOffline: (on) => void (state.offline = on),
    setOverride: (path, body) => void (body === undefined ? delete state.overrides[path] : (state.overrides[path] = body)),
    setRoot: (dir) => void (state.root = resolve(dir)),
    setRoute: (path, handler) => void (handler === undefined ? delete state.routes[path] : (state.routes[path] = handler)),
    close: () =>
      new Promise((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

function normalizeBase(base) {
  const withLead = base.startsWith('/') ? base : `/${base}`;
  return withLead.endsWith('/') ? withLead : `${withLead}/`;
}

async function serve(state, req, res) {
  state.requests.push({ method: req.method, url: req.url, offline: state.offline });
  if (state.offline) return req.socket.destroy();
  if (!['GET', 'HEAD'].includes(req.method)) return sendText(res, 405, 'Method Not Allowed');
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (`${path}/` === state.basePath) return redirect(res, state.basePath);
  if (!path.startsWith(state.basePath)) return sendText(res, 404, 'Not Found');
  const relative = path.slice(state.basePath.length) || 'index.html';
  if (relative in state.routes) {
    res.setHeader('Cache-Control', 'no-store');
    return state.routes[relative](req, res);
  }
  const body = await loadFile(state, relative.endsWith('/') ? `${relative}index.html` : relative);
  if (body === null) return sendText(res, 404, 'Not Found');
  const headers = { 'Content-Type': mimeType(body.name), 'Cache-Control': 'no-store' };
  let bytes = body.bytes;
  if (state.brotli) {
    headers.Vary = 'Accept-Encoding';
    if (acceptsBrotli(req.headers['accept-encoding'])) {
      bytes = await brotliOf(body);
      headers['Content-Encoding'] = 'br';
    }
  }
  headers['Content-Length'] = bytes.length;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : bytes);
}

/** Whether an Accept-Encoding header takes `br` (and does not refuse it with q=0). */
export function acceptsBrotli(header = '') {
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return coding.trim() === 'br' && (q === undefined || Number(q.slice(2)) > 0);
  });
}

// Compressed bodies by file path, size and mtime: each file is compressed once per process.
const BROTLI_CACHE = new Map();

/** The brotli body of a loaded file: `<file>.br` when it exists beside it, else compressed here. */
async function brotliOf(body) {
  const key = body.stamp === undefined ? null : `${body.name}\0${body.stamp}`;
  if (key !== null && BROTLI_CACHE.has(key)) return BROTLI_CACHE.get(key);
  const pre = body.stamp === undefined ? null : await readFile(`${body.name}.br`).catch(() => null);
  const bytes =
    pre ??
    brotliCompressSync(body.bytes, {
      params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.bytes.length },
    });
  if (key !== null) BROTLI_CACHE.set(key, bytes);
  return bytes;
}

/** Reads a file below root (never outside it); overrides win. Returns null when there is none. */
async function loadFile(state, relative) {
  if (relative in state.overrides) return { name: relative, bytes: Buffer.from(state.overrides[relative]) };
  const full = resolve(join(state.root, relative));
  if (full !== state.root && !full.startsWith(state.root + sep)) return null;
  const info = await stat(full).catch(() => null);
  if (info?.isDirectory()) return loadFile(state, join(relative, 'index.html'));
  if (!info?.isFile()) return null;
  return { name: full, bytes: await readFile(full), stamp: `${info.size}:${info.mtimeMs}` };
}

function redirect(res, location) {
  res.writeHead(301, { Location: location, 'Content-Length': 0 });
  res.end();
}

function sendText(res, status, text) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
  res.end(text);
}

/**
 * @typedef {object} StaticServer
 * @property {string} origin                 http://127.0.0.1:PORT
 * @property {string} url                    origin + basePath (the app's address)
 * @property {number} port
 * @property {{method: string, url: string, offline: boolean}[]} requests
 * @property {(on: boolean) => void} setOffline   true: every connection is refused (destroyed unanswered)
 * @property {(path: string, body?: string|Buffer) => void} setOverride   serve (or stop serving) a file from memory
 * @property {(dir: string) => void} setRoot   serve another directory from now on (a deploy)
 * @property {(path: string, handler?: (req: http.IncomingMessage, res: http.ServerResponse) => void) => void} setRoute
 *   answer a path (relative to the base, query ignored; `index.html` also answers the base itself) with
 *   `handler`, or stop
 * @property {() => Promise<void>} close
 */
