// The last step of scripts/build-wasm.sh: puts the split wasm into the built directory.
// - Every part gets one id in its name, the hash of all of them (the glue imports the loader and the
//   loader imports the glue, so a hash per file would be circular): `memoire-<id>.js`,
//   `memoire-<id>_bg.wasm`, `__wasm_split-<id>.js`, `split_<name>-<id>.wasm`, `chunk_<n>-<id>.wasm`,
//   and the names each file uses for the others are rewritten to match.
// - index.html gets the start-up script (as Trunk's own `rel="rust"` wrote it) and the preloads of
//   what the first screen needs, with sha384 integrity: the glue, the loader, the main wasm. The
//   chunks are fetched on first use, never preloaded.
// - sw.js gets the chunks' names in place of its `__MEMOIRE_LAZY__` placeholder, so the service
//   worker precaches them (offline, an import or a sync still finds its code).
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
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0').update(readFileSync(join(from, p)));
  return h.digest('hex').slice(0, 16);
})();
const renamed = (p) => (p === 'memoire_bg.wasm' ? `memoire-${id}_bg.wasm` : p.replace(/\.(js|wasm)$/, `-${id}.$1`));
const chunks = parts.filter((p) => p.endsWith('.wasm') && p !== 'memoire_bg.wasm');

// The names the files use for each other: the glue imports the loader and names its default wasm
// (`new URL('memoire_bg.wasm', ...)`); the loader imports the glue and fetches every chunk
// (`new URL("./split_x.wasm", ...)`). The wasm's own import module name ("./__wasm_split.js", the key
// of the glue's imports object) stays as it is.
const rewrite = (text, refs) => {
  for (const [n, pattern] of refs) {
    const before = text;
    text = text.replaceAll(pattern(n), pattern(renamed(n)));
    if (text === before) throw new Error(`place-wasm: no reference to ${n} to rewrite`);
  }
  return text;
};
const imported = (n) => `from "./${n}"`;
const fetched = (n) => `URL("./${n}"`;
const glueRefs = [['__wasm_split.js', imported], ['memoire_bg.wasm', (n) => `URL('${n}'`]];
const loaderRefs = [['memoire.js', imported], ...chunks.map((c) => [c, fetched])];
const written = new Map();
for (const p of parts) {
  let bytes = readFileSync(join(from, p));
  if (p === 'memoire.js') bytes = Buffer.from(rewrite(bytes.toString('utf8'), glueRefs));
  if (p === '__wasm_split.js') bytes = Buffer.from(rewrite(bytes.toString('utf8'), loaderRefs));
  writeFileSync(join(to, renamed(p)), bytes);
  written.set(p, bytes);
}

const sri = (p) => `sha384-${createHash('sha384').update(written.get(p)).digest('base64')}`;
const [glue, wasm, loader] = ['memoire.js', 'memoire_bg.wasm', '__wasm_split.js'].map(renamed);
const head =
  `<script type="module">import init, * as bindings from './${glue}';\n` +
  `const wasm = await init({ module_or_path: './${wasm}' });\n` +
  `window.wasmBindings = bindings;\n` +
  `dispatchEvent(new CustomEvent("TrunkApplicationStarted", {detail: {wasm}}));</script>` +
  `<link rel="modulepreload" href="./${glue}" crossorigin integrity="${sri('memoire.js')}">` +
  `<link rel="modulepreload" href="./${loader}" crossorigin integrity="${sri('__wasm_split.js')}">` +
  `<link rel="preload" href="./${wasm}" as="fetch" type="application/wasm" crossorigin integrity="${sri('memoire_bg.wasm')}">`;
const index = join(to, 'index.html');
const html = readFileSync(index, 'utf8');
if (!html.includes('</head>')) throw new Error('place-wasm: no </head> in index.html');
writeFileSync(index, html.replace('</head>', `${head}</head>`));

const sw = join(to, 'sw.js');
const swText = readFileSync(sw, 'utf8');
if (!swText.includes('"__MEMOIRE_LAZY__"')) throw new Error('place-wasm: no "__MEMOIRE_LAZY__" placeholder in sw.js');
writeFileSync(sw, swText.replace('"__MEMOIRE_LAZY__"', chunks.map((c) => JSON.stringify(renamed(c))).join(', ')));

const kb = (p) => `${(written.get(p).length / 1024).toFixed(0)} KB`;
console.log(`place-wasm: build ${id}: main ${kb('memoire_bg.wasm')}; chunks ${chunks.map((c) => `${c} ${kb(c)}`).join(', ') || 'none'}`);
