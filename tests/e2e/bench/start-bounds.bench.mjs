// How low the app's start-up work over its floor (cold-start.bench.mjs) can go on this stack, issue #31
// item 2: cold-start.bench.mjs run on two pages made from the built app (DIST), each beside the same
// floor, and each printed as its median less the floor's median (ms).
//
//   bench start_page_cold_over_floor_ms <v> ms   index.html as built (the static first screen, the
//   bench start_page_warm_over_floor_ms <v> ms   stylesheet, the inline scripts, the preloads of the
//                                                js glue, the main wasm and config.json), its module
//                                                script doing only what the floor's does (the main wasm
//                                                compiled), then a composer and an empty list
//   bench start_minimal_app_cold_over_floor_ms <v> ms   that page, then the least an app on this stack
//   bench start_minimal_app_warm_over_floor_ms <v> ms   does (minimal-app/: a Leptos view mounted,
//                                                IndexedDB opened and one store read, the list drawn;
//                                                its own 74 KB wasm preloaded, fetched and compiled too)
// Cold: a first visit on the 4G link at 4x CPU; warm: a returning visit at 4x CPU (cold-start's).
// Builds minimal-app with cargo (target/minimal-app) and wasm-bindgen; BENCH_START_RUNS as cold-start.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distDir } from '../helpers.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..', '..');
const log = (...a) => console.error('[start-bounds]', ...a);

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr?.slice(-2000)}`);
  return r;
}

/** minimal-app built for the browser: the directory holding minimal_app.js and minimal_app_bg.wasm. */
function buildMinimalApp(out) {
  const target = join(ROOT, 'target', 'minimal-app');
  const manifest = join(HERE, 'minimal-app', 'Cargo.toml');
  run('cargo', ['build', '--release', '--locked', '--target', 'wasm32-unknown-unknown', '--manifest-path', manifest], {
    env: { ...process.env, CARGO_TARGET_DIR: target },
  });
  const wasm = join(target, 'wasm32-unknown-unknown', 'release', 'minimal-app.wasm');
  run('wasm-bindgen', ['--target', 'web', '--out-dir', out, '--out-name', 'minimal_app', wasm]);
  return out;
}

const sha256 = (text) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * A copy of `dist` whose index.html's module script is `script` (its CSP hash replaced), with `head`
 * put before the title and `files` added to the service worker's list.
 */
function variant(dist, script, { head = '', files = [], copy = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'memoire-bounds-'));
  cpSync(dist, dir, { recursive: true });
  for (const f of copy) cpSync(f, join(dir, f.split('/').pop()));
  const path = join(dir, 'index.html');
  let html = readFileSync(path, 'utf8');
  const module = html.match(/<script type="module">([\s\S]*?)<\/script>/);
  if (!module || !html.includes(sha256(module[1]))) throw new Error('index.html: no module script allowed by its hash');
  html = html.replace(module[1], () => script).replace(sha256(module[1]), () => sha256(script));
  html = html.replace('<title>', () => `${head}<title>`);
  writeFileSync(path, html);
  const sw = join(dir, 'sw.js');
  const worker = readFileSync(sw, 'utf8');
  if (!worker.includes('"index.html"')) throw new Error('sw.js: no list of files with index.html');
  writeFileSync(sw, worker.replace('"index.html"', () => ['"index.html"', ...files.map((f) => JSON.stringify(f))].join(', ')));
  return dir;
}

/** cold-start.bench.mjs on `dir`: the app's medians over the floor's. */
function overFloor(name, dir) {
  const r = run('node', [join(HERE, 'cold-start.bench.mjs')], { env: { ...process.env, DIST: dir, BENCH_TYPED: '0' } });
  const figure = (n) => Number(r.stdout.match(new RegExp(`^bench ${n} (\\d+) ms$`, 'm'))?.[1]);
  const got = {
    cold: figure('cold_start_4g_ms') - figure('cold_start_floor_4g_ms'),
    warm: figure('warm_start_ms') - figure('warm_start_floor_ms'),
  };
  if (!Number.isFinite(got.cold) || !Number.isFinite(got.warm)) throw new Error(`${name}: cold-start.bench.mjs printed no figures:\n${r.stdout}`);
  log(`${name}: ${r.stdout.trim().split('\n').join('; ')}`);
  return got;
}

function main() {
  const dist = distDir();
  const html = readFileSync(join(dist, 'index.html'), 'utf8');
  const wasm = html.match(/href="?\.\/([^"\s>]+_bg\.wasm)/)?.[1];
  if (!wasm) throw new Error('dist/index.html names no main wasm to preload');
  const compile = `await WebAssembly.compileStreaming(fetch('./${wasm}', { credentials: 'same-origin' }));`;
  const shown = `document.body.insertAdjacentHTML('beforeend', '<ul data-testid="conversation-list"><li class="empty">No conversations yet</li></ul><textarea data-testid="composer-input"></textarea>');`;
  const built = mkdtempSync(join(tmpdir(), 'memoire-minimal-app-'));
  const dirs = [];
  try {
    buildMinimalApp(built);
    const page = variant(dist, [compile, `dispatchEvent(new Event('TrunkApplicationStarted'));`,
      `document.getElementById('first-screen').remove();`, shown].join('\n'));
    dirs.push(page);
    const app = variant(dist, [`import init from './minimal_app.js';`, compile,
      `await init({ module_or_path: './minimal_app_bg.wasm' });`, `dispatchEvent(new Event('TrunkApplicationStarted'));`].join('\n'), {
      head: '<link rel="modulepreload" href="./minimal_app.js"><link rel="preload" href="./minimal_app_bg.wasm" as="fetch" type="application/wasm" crossorigin>',
      files: ['minimal_app.js', 'minimal_app_bg.wasm'],
      copy: [join(built, 'minimal_app.js'), join(built, 'minimal_app_bg.wasm')],
    });
    dirs.push(app);
    const p = overFloor('the page', page);
    const a = overFloor('the minimal app', app);
    console.log(`bench start_page_cold_over_floor_ms ${p.cold} ms`);
    console.log(`bench start_page_warm_over_floor_ms ${p.warm} ms`);
    console.log(`bench start_minimal_app_cold_over_floor_ms ${a.cold} ms`);
    console.log(`bench start_minimal_app_warm_over_floor_ms ${a.warm} ms`);
  } finally {
    for (const d of [built, ...dirs]) rmSync(d, { recursive: true, force: true });
  }
}

main();
