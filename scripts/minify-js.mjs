// Trunk post-build hook: minifies the built JavaScript (wasm-bindgen's glue, which Trunk leaves as it is,
// and the service worker) with terser (tools/), then recomputes every `integrity` attribute in index.html
// that names a file it changed, so the browser still accepts them. The glue is an ES module: its
// exports keep their names (index.html imports `init` and the bindings by name); locals are mangled.
// Runs before csp.mjs and stamp-sw.mjs (the CSP hashes index.html's inline scripts, which this does not
// touch; the build id hashes the final files). Usage outside Trunk: TRUNK_STAGING_DIR=dist node scripts/minify-js.mjs
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) {
  console.error('minify-js: run by trunk (or set TRUNK_STAGING_DIR to the built directory)');
  process.exit(1);
}
const require = createRequire(new URL('../tools/package.json', import.meta.url));
const { minify } = require('terser');

const changed = new Map();
for (const name of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
  const file = join(dir, name);
  const code = readFileSync(file, 'utf8');
  // The service worker is a classic script; everything else Trunk emits here is a module.
  const module = name !== 'sw.js';
  const out = await minify(code, { module, ecma: 2020, compress: { passes: 2 }, mangle: true, format: { comments: false } });
  if (typeof out.code !== 'string' || out.code.length === 0) throw new Error(`minify-js: terser gave nothing for ${name}`);
  writeFileSync(file, out.code);
  changed.set(name, out.code);
  console.log(`minify-js: ${name} ${code.length} -> ${out.code.length} bytes`);
}

// index.html's integrity attributes (Trunk writes sha384 for the glue's modulepreload link).
const index = join(dir, 'index.html');
let html = readFileSync(index, 'utf8');
let fixed = 0;
html = html.replace(/<link\b[^>]*>/gi, (tag) => {
  const href = /\bhref=(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/i.exec(tag);
  const name = href && (href[1] ?? href[2] ?? href[3]).replace(/^\.\//, '');
  if (!name || !changed.has(name) || !/\bintegrity=/i.test(tag)) return tag;
  fixed += 1;
  const sri = `sha384-${createHash('sha384').update(changed.get(name), 'utf8').digest('base64')}`;
  return tag.replace(/\bintegrity=(?:"[^"]*"|'[^']*'|[^\s>"']+)/i, `integrity="${sri}"`);
});
writeFileSync(index, html);
console.log(`minify-js: ${fixed} integrity attribute(s) recomputed`);
