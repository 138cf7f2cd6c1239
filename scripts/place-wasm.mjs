// The last step of scripts/build-wasm.sh: puts the split wasm into the built directory.
// - Every part gets one id in its name, the hash of all of them: `memoire-<id>.js` (the glue, with the
//   split loader folded in), `memoire-<id>_bg.wasm`, `split_<name>-<id>.wasm`, `chunk_<n>-<id>.wasm`;
//   the names the js uses for the wasm files are rewritten to match.
// - index.html gets the start-up script (as Trunk's own `rel="rust"` wrote it) and the preloads of
//   what the first screen needs, with sha384 integrity: the js and the main wasm. The chunks are
//   fetched on first use, never preloaded.
// - sw.js gets every built file's name (the chunks' included) from scripts/stamp-sw.mjs, the last
//   step, so the service worker precaches them (offline, an import or a sync still finds its code).
// Usage: node scripts/place-wasm.mjs <parts dir> <built dir>
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error('place-wasm: usage: node scripts/place-wasm.mjs <parts dir> <built dir>');
  process.exit(1);
}
const parts = readdirSync(from).sort();
for (const want of ['memoire.js', 'memoire_bg.wasm', '__wasm_split.js']) {
  if (!parts.includes(want)) throw new Error(`place-wasm: ${want} missing in ${from}`);
}
const id = (() => {
  // This script's own text too: what it writes from the same parts changes with it.
  const h = createHash('sha256').update(readFileSync(new URL(import.meta.url)));
  for (const p of parts) h.update(p).update('\0').update(readFileSync(join(from, p)));
  return h.digest('hex').slice(0, 16);
})();
const renamed = (p) => (p === 'memoire_bg.wasm' ? `memoire-${id}_bg.wasm` : p.replace(/\.(js|wasm)$/, `-${id}.$1`));
const chunks = parts.filter((p) => p.endsWith('.wasm') && p !== 'memoire_bg.wasm');
const text = (p) => readFileSync(join(from, p), 'utf8');
const replaceOnce = (s, what, by) => {
  if (!s.includes(what)) throw new Error(`place-wasm: no ${what} to rewrite`);
  return s.replaceAll(what, by);
};

// The loader goes into the glue: one module, so the first visit asks for one js file, not two (on
// HTTP/1.1, with the html, css, config.json, wasm, manifest and icon, a seventh request waited for a
// free connection and delayed the wasm). The glue imported the loader as a namespace (the wasm's
// imports from "./__wasm_split.js", a key that stays as it is) and the loader imported `initSync`
// from the glue: both become names of the one module, the namespace an object of the loader's exports.
let glue = text('memoire.js');
// (wasm-bindgen writes one namespace import per imported function, all of the same module.)
const stars = [...glue.matchAll(/^import \* as (\w+) from "\.\/__wasm_split\.js";?$/gm)];
if (stars.length === 0) throw new Error('place-wasm: the glue does not import ./__wasm_split.js');
for (const star of stars) glue = glue.replace(star[0], '');
let loader = replaceOnce(text('__wasm_split.js'), 'import { initSync } from "./memoire.js";', '');
// A split point's shared chunks are asked for a few at a time, with a yield to the browser between
// (input, a frame, the next navigation): the loader asked for all of them in one task, and the turn's
// 80-odd fetches at idle after the first screen were one task of about 100 ms at 4x CPU, in the way
// of the first keys typed and of a reload. A chunk that fails meanwhile (offline) is the load's one
// failure: its rejection is handled at once (not an unhandled rejection during the yield) and no
// further chunk is asked for; `Promise.all` below rejects with it.
loader = replaceOnce(
  loader,
  'const parallelStuff = deps.map(d => d());',
  'const parallelStuff = [];\n' +
    '        let failed = false;\n' +
    '        for (let i = 0; i < deps.length; i++) {\n' +
    '            if (i > 0 && i % 8 === 0) await new Promise((go) => { const c = new MessageChannel(); c.port1.onmessage = go; c.port2.postMessage(0); });\n' +
    '            if (failed) break;\n' +
    '            const p = deps[i]();\n' +
    '            p.catch(() => { failed = true; });\n' +
    '            parallelStuff.push(p);\n' +
    '        }',
);
// A failed load is never kept: the loader forgets a rejected load (and wasm_split_helpers' Rust
// side an unsuccessful one), so the next call of a split point fetches what is missing again
// (ARCHITECTURE.md "The split build"). Checked here, since an upgrade of wasm-split-cli could bring
// the caching back.
if (!loader.includes('if (loadingModule === thisLoad) loadingModule = undefined;')) {
  throw new Error('place-wasm: the loader keeps failed loads (it no longer forgets a rejected one)');
}
// The service says a load that failed (its `Unavailable`: "could not be loaded"); the loader's own
// line about it is a warning, not an error of the page.
loader = replaceOnce(loader, '            console.error(e);\n            success = false;', '            console.warn(e);\n            success = false;');
const exported = [...loader.matchAll(/^export const (\w+) = /gm)].map((m) => m[1]);
if (exported.length === 0) throw new Error('place-wasm: the loader exports no load function');
loader = loader.replace(/^export const /gm, 'const ');
for (const c of chunks) loader = replaceOnce(loader, `URL("./${c}"`, `URL("./${renamed(c)}"`);
glue = replaceOnce(glue, "URL('memoire_bg.wasm'", `URL('${renamed('memoire_bg.wasm')}'`);
glue += `\n// The split loader (wasm-split-cli's __wasm_split.js): fetches each wasm chunk on first use.\n${loader}\nconst __wasm_split = { ${exported.join(', ')} };\n${stars.map((m) => `const ${m[1]} = __wasm_split;`).join('\n')}\n`;

const written = new Map([['memoire.js', Buffer.from(glue)]]);
for (const p of [...chunks, 'memoire_bg.wasm']) written.set(p, readFileSync(join(from, p)));
for (const [p, bytes] of written) writeFileSync(join(to, renamed(p)), bytes);

const sri = (p) => `sha384-${createHash('sha384').update(written.get(p)).digest('base64')}`;
const [js, wasm] = ['memoire.js', 'memoire_bg.wasm'].map(renamed);
// The preloads come first in the head, before the stylesheet: the browser asks for the wasm as soon
// as it has read that far, not after the first screen's rules have come down the link.
const preloads =
  `<link rel="preload" href="./${wasm}" as="fetch" type="application/wasm" crossorigin integrity="${sri('memoire_bg.wasm')}">` +
  `<link rel="modulepreload" href="./${js}" crossorigin integrity="${sri('memoire.js')}">`;
const start =
  `<script type="module">import init, * as bindings from './${js}';\n` +
  `const wasm = await init({ module_or_path: './${wasm}' });\n` +
  `window.wasmBindings = bindings;\n` +
  `dispatchEvent(new CustomEvent("TrunkApplicationStarted", {detail: {wasm}}));</script>`;
const index = join(to, 'index.html');
const html = readFileSync(index, 'utf8');
if (!html.includes('</head>') || !html.includes('<title>')) throw new Error('place-wasm: no <title> or </head> in index.html');
writeFileSync(index, replaceOnce(html, '<title>', `${preloads}<title>`).replace('</head>', `${start}</head>`));

const kb = (p) => `${(written.get(p).length / 1024).toFixed(0)} KB`;
console.log(`place-wasm: build ${id}: main ${kb('memoire_bg.wasm')}; chunks ${chunks.map((c) => `${c} ${kb(c)}`).join(', ') || 'none'}`);
