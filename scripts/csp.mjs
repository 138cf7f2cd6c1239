// Trunk post-build hook: puts a Content-Security-Policy <meta> at the top of the built index.html.
// Defence in depth for untrusted model output: the markdown writer already emits only allow-listed
// markup (src/engine/markdown/), and this policy makes the browser refuse any script the app did not
// ship even if something slipped through: no inline script but the three in index.html (allowed by
// their SHA-256, computed here from the final, minified file), no eval, no plugins, no <base>, no
// form posts, images only from the app itself, data: URLs, or blob: URLs (which only this page can
// make: the thumbnails of the user's own attached images, read from IndexedDB).
// - `wasm-unsafe-eval`: compiling the app's own wasm needs it.
// - `connect-src *`: the agent endpoint is any http(s) origin the user configures.
// - `style-src-attr 'unsafe-inline'`: the markdown writer aligns table cells with a `style`
//   attribute (a fixed `text-align` value); a style attribute cannot run script, and `img-src` stops
//   it from fetching anything from elsewhere.
// - The stylesheet goes into index.html as one <style> (allowed by its SHA-256 too): the static first
//   screen then paints with the html, without waiting for a request of its own that shares the slow
//   link with the wasm (issue 31: about 230 ms on the Fast-4G profile). The file itself is then
//   removed from the build, so the service worker (whose list is every built file) does not fetch it.
// A <meta> policy cannot set frame-ancestors or report-uri; a host can add both as headers (README).
// Usage outside Trunk: TRUNK_STAGING_DIR=dist node scripts/csp.mjs
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) {
  console.error('csp: run by trunk (or set TRUNK_STAGING_DIR to the built directory)');
  process.exit(1);
}
const file = join(dir, 'index.html');
let html = readFileSync(file, 'utf8');
if (/http-equiv=["']?Content-Security-Policy/i.test(html)) {
  console.error('csp: index.html already has a Content-Security-Policy');
  process.exit(1);
}

// The one stylesheet Trunk linked, inlined.
const links = [...html.matchAll(/<link\b[^>]*\brel=["']?stylesheet["']?[^>]*>/gi)];
if (links.length !== 1) {
  console.error(`csp: ${links.length} stylesheet links in index.html, expected the one of style.css`);
  process.exit(1);
}
const href = /\bhref=(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/i.exec(links[0][0]);
const cssName = href && (href[1] ?? href[2] ?? href[3]).replace(/^\.\//, '');
const css = cssName && readFileSync(join(dir, cssName), 'utf8');
if (!css || /<\/style/i.test(css)) {
  console.error(`csp: the stylesheet ${cssName} cannot be inlined`);
  process.exit(1);
}
html = html.replace(links[0][0], () => `<style>${css}</style>`);
const styleHash = `'sha256-${createHash('sha256').update(css, 'utf8').digest('base64')}'`;

const hashes = [];
for (const m of html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/gi)) {
  if (/\ssrc\s*=/i.test(m[1] ?? '')) continue;
  hashes.push(`'sha256-${createHash('sha256').update(m[2], 'utf8').digest('base64')}'`);
}
if (hashes.length === 0) {
  console.error('csp: no inline <script> found in index.html: the app cannot start without its loader');
  process.exit(1);
}

const policy = [
  "default-src 'self'",
  `script-src 'self' 'wasm-unsafe-eval' ${hashes.join(' ')}`,
  `style-src 'self' ${styleHash}`,
  "style-src-attr 'unsafe-inline'",
  "img-src 'self' data: blob:",
  'connect-src *',
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');
const meta = `<meta http-equiv="Content-Security-Policy" content="${policy}">`;

// The policy only covers what comes after it: it goes right after the charset declaration, before
// any script or stylesheet.
const charset = /<meta\s+charset=["']?utf-8["']?\s*\/?>/i;
if (!charset.test(html)) {
  console.error('csp: no <meta charset=utf-8> in index.html to put the policy after');
  process.exit(1);
}
html = html.replace(charset, (m) => m + meta);
writeFileSync(file, html);
// Nothing links the stylesheet's own file any more: it would only be precached by the service worker
// (stamp-sw.mjs runs next and lists what is left) and downloaded for nothing.
rmSync(join(dir, cssName));
console.log(`csp: ${hashes.length} inline script(s) and the inlined ${cssName} allowed by hash; ${cssName} removed`);
