// Loads @modelcontextprotocol/conformance under Node 20 (benches/mcp.rs): its bundle imports
// `globSync` from fs (Node 22), used only by its tier-check command; that one import gets a stand-in.
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(`
export async function load(url, context, next) {
  const r = await next(url, context);
  if (url.includes('/conformance/dist/index.js')) {
    let s = String(r.source);
    s = s.replace('globSync as o,', '');
    s = 'const o = () => { throw new Error("globSync needs Node 22"); };\\n' + s.replace(/^#!.*\\n/, '');
    return { ...r, source: s };
  }
  return r;
}`));
