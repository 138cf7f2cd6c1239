// Trunk post-build hook, the last step: writes into the service worker the build's list of files
// (what it precaches and the only paths it answers, by exact URL) and the build id (its cache's
// name, so each build gets its own cache). The list is every file of the built directory, by path
// relative to it, but sw.js itself, config.json (a deployment replaces it; the worker keeps it apart)
// precompressed copies (`.br`, `.gz`: a host serves them for the file they copy) and dotfiles. The id hashes
// every built file with its name, sw.js with its list included, so any change to what the service
// worker precaches gives a new id.
// Usage outside Trunk: TRUNK_STAGING_DIR=dist node scripts/stamp-sw.mjs
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) {
  console.error('stamp-sw: run by trunk (or set TRUNK_STAGING_DIR to the built directory)');
  process.exit(1);
}
const sw = join(dir, 'sw.js');
let text = readFileSync(sw, 'utf8');
// (Quoted either way: minify-js.mjs ran on sw.js before.)
const LIST = /["']__MEMOIRE_FILES__["']/;
for (const placeholder of [LIST, /__MEMOIRE_BUILD__/]) {
  if (!placeholder.test(text)) {
    console.error(`stamp-sw: no ${placeholder} placeholder in ${sw}`);
    process.exit(1);
  }
}

/** Every file under `root`, by path relative to it with `/` separators, sorted. */
function filesUnder(root) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.name.startsWith('.')) continue; // (Trunk's .stage, a host's dotfiles: not the app's)
      if (e.isDirectory()) walk(full);
      else if (e.isFile()) out.push(relative(root, full).split(sep).join('/'));
    }
  };
  walk(root);
  return out.sort();
}

const files = filesUnder(dir).filter((f) => f !== 'sw.js' && f !== 'config.json' && !/\.(br|gz)$/.test(f));
if (!files.includes('index.html')) {
  console.error(`stamp-sw: no index.html in ${dir}`);
  process.exit(1);
}
text = text.replace(LIST, () => files.map((f) => JSON.stringify(f)).join(', '));
writeFileSync(sw, text);

const hash = createHash('sha256');
for (const f of filesUnder(dir)) hash.update(`./${f}\n`).update(readFileSync(join(dir, f)));
const id = hash.digest('hex').slice(0, 16);
writeFileSync(sw, text.replaceAll('__MEMOIRE_BUILD__', id));
console.log(`stamp-sw: build ${id}: ${files.length} files precached`);
