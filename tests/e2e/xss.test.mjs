// The XSS corpus (issue 6): hostile MODEL OUTPUT streamed through the agent server and rendered in
// the app. Nothing may execute: no dialog, no global set by any payload (payload N sets window.xssN),
// no <script>/<iframe>/<object>/<embed>/on* attribute/unsafe link inside message-content, and the text
// is still there to read. Checked while streaming (render_streaming), after completion, and after a
// reload (the stored text rendered again). Hostile memory (summary and entity names) too; and the
// corpus inside math delimiters, typeset as MathML.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { memoryReplyText } from './agent-server.mjs';
import {
  startHarness,
  openUiApp,
  waitForAppReady,
  chatTurn,
  waitForAssistantCount,
  conversationItem,
  currentConversationId,
  assertNoPageProblems,
  withDiagnostics,
  tid,
} from './helpers.mjs';

/**
 * [payload, text that must stay visible]. `{N}` is replaced by the payload's number; every payload that
 * could run sets window.xssN (or opens a dialog).
 */
const CORPUS = [
  ['<script>window.xss{N}=1</script>', '<script>window.xss{N}=1</script>'],
  ['<SCRIPT SRC=data:text/javascript,window.xss{N}=1></SCRIPT>', '<SCRIPT SRC=data:text/javascript,window.xss{N}=1>'],
  ['<img src=x onerror="window.xss{N}=1">', '<img src=x onerror="window.xss{N}=1">'],
  ['<img src="x" onerror=alert({N})>', 'onerror=alert({N})'],
  ['<svg onload=window.xss{N}=1>', '<svg onload=window.xss{N}=1>'],
  ['<svg><script>window.xss{N}=1</script></svg>', '<svg><script>window.xss{N}=1</script></svg>'],
  ['<iframe src="javascript:window.parent.xss{N}=1"></iframe>', '<iframe src="javascript:window.parent.xss{N}=1"></iframe>'],
  ['<iframe srcdoc="<script>parent.xss{N}=1</script>"></iframe>', '<iframe srcdoc='],
  ['<body onload=window.xss{N}=1>', '<body onload=window.xss{N}=1>'],
  ['<details open ontoggle=window.xss{N}=1>', '<details open ontoggle=window.xss{N}=1>'],
  ['<input autofocus onfocus=window.xss{N}=1>', '<input autofocus onfocus=window.xss{N}=1>'],
  ['<a href="javascript:window.xss{N}=1">rawlink{N}</a>', '<a href="javascript:window.xss{N}=1">rawlink{N}</a>'],
  ['[click{N}](javascript:window.xss{N}=1)', 'click{N}'],
  ['[case{N}](JaVaScRiPt:window.xss{N}=1)', 'case{N}'],
  ['[ent{N}](&#106;avascript:window.xss{N}=1)', 'ent{N}'],
  ['[tab{N}](java\tscript:window.xss{N}=1)', 'tab{N}'],
  ['[vb{N}](vbscript:msgbox({N}))', 'vb{N}'],
  ['[data{N}](data:text/html;base64,PHNjcmlwdD5wYXJlbnQueHNzPTE8L3NjcmlwdD4=)', 'data{N}'],
  ['[ref{N}][evil{N}]\n\n[evil{N}]: javascript:window.xss{N}=1', 'ref{N}'],
  ['<javascript:window.xss{N}=1>', 'javascript:window.xss{N}=1'],
  ['![img{N}](javascript:window.xss{N}=1)', 'img{N}'],
  ['[quote{N}](https://example.com/" onmouseover="window.xss{N}=1)', 'quote{N}'],
  ['[title{N}](https://example.com "x\\" onmouseover=\\"window.xss{N}=1")', 'title{N}'],
  ['<a href=https://example.com onclick=window.xss{N}=1>attr{N}</a>', 'onclick=window.xss{N}=1'],
  ['"><script>window.xss{N}=1</script>', '"><script>window.xss{N}=1</script>'],
  ["'><img src=x onerror=window.xss{N}=1>", "'><img src=x onerror=window.xss{N}=1>"],
  ['&lt;script&gt;window.xss{N}=1&lt;/script&gt;', '<script>window.xss{N}=1</script>'],
  ['&#60;img src=x onerror=window.xss{N}=1&#62;', '<img src=x onerror=window.xss{N}=1>'],
  ['<style>@import "javascript:window.xss{N}=1";</style>', '<style>@import'],
  ['<div style="background:url(javascript:window.xss{N}=1)">style{N}</div>', 'style{N}'],
  ['<meta http-equiv="refresh" content="0;url=javascript:window.xss{N}=1">', '<meta http-equiv="refresh"'],
  ['<object data="javascript:window.xss{N}=1"></object>', '<object data="javascript:window.xss{N}=1">'],
  ['<embed src="data:text/html,<script>parent.xss{N}=1</script>">', '<embed src='],
  ['<math><mtext><table><mglyph><style><img src=x onerror=window.xss{N}=1>', '<math><mtext>'],
  ['<form action="javascript:window.xss{N}=1"><button>form{N}</button></form>', '<form action='],
  ['<base href="javascript:window.xss{N}=1//">', '<base href='],
  ['<video><source onerror="window.xss{N}=1"></video>', '<video><source onerror='],
  ['<!--><img src=x onerror=window.xss{N}=1>-->', 'onerror=window.xss{N}=1'],
  ['<noscript><p title="</noscript><img src=x onerror=window.xss{N}=1>">', '<noscript>'],
  ['`<script>window.xss{N}=1</script>` and ```inline```', '<script>window.xss{N}=1</script>'],
  ['```html\n<script>window.xss{N}=1</script>\n```', '<script>window.xss{N}=1</script>'],
  ['| a | b |\n| - | - |\n| <img src=x onerror=window.xss{N}=1> | [cell{N}](javascript:window.xss{N}=1) |', 'cell{N}'],
].map(([payload, visible], i) => [payload.replaceAll('{N}', String(i + 1)), visible.replaceAll('{N}', String(i + 1))]);

const BATCHES = 3;

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** Globals any payload set, dangerous nodes and links inside message content and the memory pane. */
async function inspect(page) {
  // Code blocks are highlighted when the page is idle: the checks read them highlighted.
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-content"] pre > code[class^="language-"]:not([data-hl])'));
  return page.evaluate((count) => {
    const set = [];
    for (let i = 1; i <= count + 100; i += 1) if (window[`xss${i}`] !== undefined) set.push(i);
    const bad = [];
    for (const root of document.querySelectorAll('[data-testid="message-content"], [data-testid="memory-pane"]')) {
      for (const el of root.querySelectorAll('*')) {
        const tag = el.tagName.toLowerCase();
        if (['script', 'iframe', 'object', 'embed', 'style', 'meta', 'base', 'form', 'input', 'link', 'frame', 'math', 'video', 'source', 'noscript'].includes(tag)) bad.push(`<${tag}>`);
        if (tag === 'svg' && !el.closest('[data-testid="entity-graph"]')) bad.push('<svg> outside the graph');
        for (const a of el.attributes) {
          if (/^on/i.test(a.name)) bad.push(`${tag} ${a.name}`);
          if (a.name === 'style' || a.name === 'srcdoc' || a.name === 'formaction') bad.push(`${tag} ${a.name}`);
          if (['href', 'src', 'action', 'data', 'xlink:href'].includes(a.name) && !/^(https?:|mailto:|#)/i.test(a.value.trim())) bad.push(`${tag} ${a.name}=${a.value}`);
        }
        if (tag === 'a' && el.hasAttribute('href') && (el.getAttribute('rel') !== 'noopener noreferrer' || el.getAttribute('target') !== '_blank')) bad.push(`a without rel/target: ${el.outerHTML}`);
      }
    }
    return { set, bad, text: [...document.querySelectorAll('[data-testid="message-content"]')].map((e) => e.innerText).join('\n') };
  }, CORPUS.length);
}

function check(found, where) {
  assert.deepEqual(found.set, [], `${where}: payloads ran: ${found.set}`);
  assert.deepEqual(found.bad, [], `${where}: dangerous markup`);
  const normal = found.text.replace(/\s+/g, ' ');
  const missing = CORPUS.filter(([, visible]) => !normal.includes(visible.replace(/\s+/g, ' '))).map(([p]) => p);
  assert.deepEqual(missing, [], `${where}: payload text no longer visible`);
}

test(`XSS: ${CORPUS.length} hostile payloads as model output render as text and never run`, async () => {
  assert.ok(CORPUS.length >= 30);
  const { agent } = harness;
  agent.reset();
  const { context, page, issues } = await openUiApp(harness);
  try {
    await withDiagnostics(page, issues, 'xss', async () => {
      const size = Math.ceil(CORPUS.length / BATCHES);
      for (let b = 0; b < BATCHES; b += 1) {
        const text = CORPUS.slice(b * size, (b + 1) * size).map(([p]) => p).join('\n\n');
        await chatTurn(page, agent, `Batch ${b + 1}, please`, { text, chunkSize: 13, delayMs: 2 });
      }
      // Hostile memory too: a summary and entity names, descriptions, properties and relationships,
      // said in the conversation first (the engine keeps only what a message says).
      await chatTurn(page, agent, 'And the memory ones?', {
        text: '<img src=x onerror=window.xss103=1> <svg onload=window.xss104=1> <b onmouseover=window.xss105=1> '
          + '<script>window.xss106=1</script> <iframe src=javascript:parent.xss107=1> "><script>window.xss108=1</script> '
          + 'javascript:window.xss109=1',
        chunkSize: 13,
        delayMs: 2,
      });
      agent.scriptMemory({
        text: memoryReplyText({
          summary: '<script>window.xss101=1</script><img src=x onerror=window.xss102=1>',
          entities: [
            { id: 'e1', type: 'person', name: '<img src=x onerror=window.xss103=1>', description: '<svg onload=window.xss104=1>', properties: { '<b onmouseover=window.xss105=1>': '<script>window.xss106=1</script>' }, relationships: [{ targetId: 'e2', relationship: '<iframe src=javascript:parent.xss107=1>', strength: 0.5 }] },
            { id: 'e2', type: 'place', name: '"><script>window.xss108=1</script>', description: 'javascript:window.xss109=1', properties: {}, relationships: [] },
          ],
        }),
      });
      await page.locator(tid('update-memory')).click();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="entity-node"]').length === 2);
      assert.match(await page.locator(tid('summary-text')).innerText(), /<script>window\.xss101=1<\/script>/);
      assert.match(await page.locator(tid('memory-entities')).innerText(), /<img src=x onerror=window\.xss103=1>/);
      // Give anything that was going to fire (onerror, onload, autofocus) a moment: two frames.
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      check(await inspect(page), 'after streaming');
      assert.ok(await page.locator('[data-testid="message-content"] code.language-html span.hl-tag').count() > 0, 'the html blocks were highlighted, as text');

      const id = await currentConversationId(page);
      await page.reload();
      await waitForAppReady(page);
      if ((await currentConversationId(page)) !== id) await conversationItem(page, id).locator(tid('conversation-open')).click();
      await waitForAssistantCount(page, BATCHES + 1);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="entity-node"]').length === 2);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      check(await inspect(page), 'after a reload');
      assert.deepEqual(issues.dialogs, [], 'no dialog opened');
    });
    assertNoPageProblems(issues, { allowConsole: [/Failed to load resource/, /Content Security Policy|Refused to/] });
  } finally {
    await context.close();
  }
});

// The same corpus inside each of the four math delimiters, and payloads a TeX converter might pass
// through (links, styles, classes, raw text), each formula typeset as MathML where it converts:
// nothing runs, and a `<math>` holds only MathML Core's elements and inert attributes.
const MATH_TAGS = new Set(['math', 'mrow', 'mi', 'mn', 'mo', 'ms', 'mtext', 'mspace', 'msub', 'msup', 'msubsup', 'mfrac',
  'msqrt', 'mroot', 'mstyle', 'merror', 'mpadded', 'mphantom', 'munder', 'mover', 'munderover', 'mtable', 'mtr', 'mtd',
  'semantics', 'annotation', 'mmultiscripts', 'mprescripts', 'none']);
const MATH_ATTRS = new Set(['display', 'mathvariant', 'stretchy', 'fence', 'separator', 'lspace', 'rspace', 'accent',
  'accentunder', 'columnalign', 'rowalign', 'columnspacing', 'rowspacing', 'displaystyle', 'scriptlevel', 'width',
  'height', 'depth', 'voffset', 'linethickness', 'form', 'largeop', 'movablelimits', 'symmetric', 'minsize', 'maxsize',
  'encoding']);
const TEX_PAYLOADS = [
  '\\href{javascript:window.xss{N}=1}{x}',
  '\\url{javascript:window.xss{N}=1}',
  '\\style{background:url(javascript:window.xss{N}=1)}{x}',
  '\\class{x" onclick="window.xss{N}=1}{x}',
  '\\htmlData{onclick=window.xss{N}=1}{y}',
  '\\color{red" onmouseover="window.xss{N}=1}{x}',
  '\\text{<img src=x onerror=window.xss{N}=1>}',
  '\\mathrm{</math><img src=x onerror=window.xss{N}=1>}',
  '\\operatorname{<svg onload=window.xss{N}=1>}',
  'x^{<img src=x onerror=window.xss{N}=1>}',
].map((p, i) => p.replaceAll('{N}', String(200 + i)));
const DELIMITERS = [['$', '$'], ['$$', '$$'], ['\\(', '\\)'], ['\\[', '\\]']];

test(`XSS inside math: ${CORPUS.length + TEX_PAYLOADS.length} payloads in each of the four delimiters render nothing active`, async () => {
  const { agent } = harness;
  agent.reset();
  const { context, page, issues } = await openUiApp(harness);
  try {
    await withDiagnostics(page, issues, 'xss-math', async () => {
      const payloads = [...CORPUS.map(([p]) => p), ...TEX_PAYLOADS];
      for (const [open, close] of DELIMITERS) {
        const text = payloads.map((p) => `Formula ${open}${p}${close} here.`).join('\n\n');
        await chatTurn(page, agent, `Math ${open}`, { text, chunkSize: 29, delayMs: 1 });
      }
      await page.waitForFunction(() => !document.querySelector('[data-testid="message-content"] code.math-tex:not([data-math-done])'));
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const found = await page.evaluate(([tags, attrs]) => {
        const mathTags = new Set(tags);
        const mathAttrs = new Set(attrs);
        const set = [];
        for (let i = 1; i <= 300; i += 1) if (window[`xss${i}`] !== undefined) set.push(i);
        const bad = [];
        let maths = 0;
        for (const root of document.querySelectorAll('[data-testid="message-content"]')) {
          for (const el of root.querySelectorAll('*')) {
            const tag = el.tagName.toLowerCase();
            const inMath = el.closest('math');
            if (inMath) {
              if (tag === 'math') maths += 1;
              if (el.namespaceURI !== 'http://www.w3.org/1998/Math/MathML' || !mathTags.has(tag)) bad.push(`<${tag}> in math`);
              if (tag === 'math' && !el.parentElement.matches('span.math')) bad.push('<math> outside span.math');
              for (const a of el.attributes) if (!mathAttrs.has(a.name)) bad.push(`${tag} ${a.name} in math`);
              continue;
            }
            if (['script', 'iframe', 'object', 'embed', 'style', 'meta', 'base', 'form', 'input', 'link', 'frame', 'svg', 'img', 'video', 'source'].includes(tag)) bad.push(`<${tag}>`);
            for (const a of el.attributes) {
              if (/^on/i.test(a.name) || a.name === 'style' || a.name === 'srcdoc') bad.push(`${tag} ${a.name}`);
              if (['href', 'src', 'action', 'data'].includes(a.name) && !/^(https?:|mailto:|#)/i.test(a.value.trim())) bad.push(`${tag} ${a.name}=${a.value}`);
            }
          }
        }
        return { set, bad, maths };
      }, [[...MATH_TAGS], [...MATH_ATTRS]]);
      assert.deepEqual(found.set, [], `payloads ran: ${found.set}`);
      assert.deepEqual(found.bad, [], 'dangerous markup');
      assert.ok(found.maths >= 40, `formulas were typeset (${found.maths})`);
      assert.deepEqual(issues.dialogs, [], 'no dialog opened');
    });
    assertNoPageProblems(issues, { allowConsole: [/Failed to load resource/, /Content Security Policy|Refused to/] });
  } finally {
    await context.close();
  }
});

test('CSP: the built page refuses any script, handler, javascript: URL or remote image it did not ship', async () => {
  const { context, page, issues } = await openUiApp(harness);
  try {
    await withDiagnostics(page, issues, 'csp', async () => {
      const found = await page.evaluate(async () => {
        const violations = [];
        document.addEventListener('securitypolicyviolation', (e) => violations.push(e.effectiveDirective));
        const meta = document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content ?? '';
        // As if markup had slipped past the markdown writer: an inline script, an inline handler, a
        // javascript: link and a remote image. (eval cannot be probed from here: code run through the
        // DevTools protocol is exempt from the page's policy; the policy text is checked instead.)
        const s = document.createElement('script');
        s.textContent = 'window.cspInline = 1';
        document.body.append(s);
        const holder = document.createElement('div');
        holder.innerHTML = '<img src="data:," onload="window.cspHandler = 1"><img src="https://example.invalid/beacon.png">';
        document.body.append(holder);
        const a = document.createElement('a');
        a.href = 'javascript:window.cspHref = 1';
        document.body.append(a);
        a.click();
        a.remove();
        await new Promise((r) => setTimeout(r, 300));
        holder.remove();
        return { meta, violations, inline: window.cspInline, handler: window.cspHandler, href: window.cspHref };
      });
      const scriptSrc = found.meta.split(';').find((d) => d.trim().startsWith('script-src')) ?? '';
      assert.match(scriptSrc, /^ ?script-src 'self' 'wasm-unsafe-eval'( 'sha256-[A-Za-z0-9+/=]+')+$/, 'script-src allows only the app, its wasm and hashed scripts');
      assert.match(found.meta, /object-src 'none'/);
      assert.match(found.meta, /base-uri 'none'/);
      assert.equal(found.inline, undefined, 'an injected inline script ran');
      assert.equal(found.handler, undefined, 'an injected inline handler ran');
      assert.equal(found.href, undefined, 'a javascript: link ran');
      for (const d of ['script-src-elem', 'script-src-attr', 'img-src']) {
        assert.ok(found.violations.includes(d), `no ${d} violation reported: ${found.violations}`);
      }
      // The app itself still works under the policy: its own scripts, wasm, styles and icons loaded.
      await page.locator(tid('new-conversation')).click();
      await page.locator(tid('composer-input')).waitFor();
    });
    assertNoPageProblems(issues, { allowConsole: [/Content Security Policy|Refused to/] });
  } finally {
    await context.close();
  }
});
