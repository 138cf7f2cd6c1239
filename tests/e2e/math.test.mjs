// Math in replies (issue 29, item 2): a finished reply's formulas in the four delimiters become
// MathML in Chromium (`<math>` elements, the TeX in their annotation), a `$` of money stays text,
// TeX that does not convert stays code with the reason as its tooltip, a selection copies formulas
// as their TeX, and a reload shows the same. The XSS corpus inside math is xss.test.mjs's.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openUiApp,
  waitForAppReady,
  chatTurn,
  waitForAssistantCount,
  conversationItem,
  currentConversationId,
  tid,
  assertNoPageProblems,
  withDiagnostics,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const REPLY = [
  'Euler wrote $e^{i\\pi} + 1 = 0$, and Pythagoras \\(a^2 + b^2 = c^2\\).',
  '',
  'The sum is',
  '$$',
  '\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}',
  '$$',
  '',
  '\\[\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}\\]',
  '',
  'It costs $5 and $10, or \\$20. Broken: $\\frac{a}{$ here. Code: `$x$`.',
].join('\n');

/** What the reply shows once its formulas are typeset. */
async function shown(page) {
  const last = page.locator('[data-testid="message-content"]').last();
  await page.waitForFunction(() => {
    const roots = document.querySelectorAll('[data-testid="message-content"]');
    const root = roots[roots.length - 1];
    return root && !root.querySelector('code.math-tex:not([data-math-done])');
  });
  return last.evaluate((root) => ({
    maths: [...root.querySelectorAll('span.math')].map((s) => ({
      display: s.dataset.math,
      tex: s.dataset.tex,
      block: s.querySelector('math')?.getAttribute('display'),
      annotation: s.querySelector('annotation[encoding="application/x-tex"]')?.textContent,
      height: s.querySelector('math')?.getBoundingClientRect().height ?? 0,
    })),
    code: [...root.querySelectorAll('code.math-tex')].map((c) => ({ tex: c.textContent, title: c.title })),
    spans: [...root.querySelectorAll('code:not(.math-tex)')].map((c) => c.textContent),
    text: root.innerText,
  }));
}

test('math: inline and display formulas render as MathML, money stays text, bad TeX stays code, a selection copies TeX', async () => {
  const { agent } = harness;
  agent.reset();
  const { context, page, issues } = await openUiApp(harness);
  try {
    await withDiagnostics(page, issues, 'math', async () => {
      await chatTurn(page, agent, 'Some math, please', { text: REPLY, chunkSize: 11, delayMs: 2 });
      const check = (found, where) => {
        assert.deepEqual(found.maths.map((m) => [m.display, m.tex, m.block]), [
          ['inline', '$e^{i\\pi} + 1 = 0$', null],
          ['inline', '$a^2 + b^2 = c^2$', null],
          ['block', '$$\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$$', 'block'],
          ['block', '$$\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}$$', 'block'],
        ], `${where}: the four formulas`);
        for (const m of found.maths) {
          assert.ok(m.tex.includes(m.annotation), `${where}: the annotation holds the TeX: ${m.annotation}`);
          assert.ok(m.height > 5, `${where}: Chromium lays the MathML out (${m.height}px)`);
        }
        assert.deepEqual(found.code.map((c) => c.tex), ['\\frac{a}{'], `${where}: the broken formula stays code`);
        assert.match(found.code[0].title, /^This formula could not be shown as math/);
        assert.deepEqual(found.spans, ['$x$'], `${where}: code keeps its dollars`);
        assert.match(found.text, /It costs \$5 and \$10, or \$20\./, `${where}: money stays text`);
      };
      check(await shown(page), 'after streaming');

      // A selection over the first paragraph copies its formulas as TeX (the list's copy handler).
      const copied = await page.evaluate(() => {
        const roots = document.querySelectorAll('[data-testid="message-content"]');
        const p = roots[roots.length - 1].querySelector('p');
        const range = document.createRange();
        range.selectNodeContents(p);
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        const data = new DataTransfer();
        const ev = new ClipboardEvent('copy', { clipboardData: data, bubbles: true, cancelable: true });
        p.dispatchEvent(ev);
        const whole = data.getData('text/plain');
        // Inside one formula: that formula's TeX.
        const inner = roots[roots.length - 1].querySelector('span.math mi');
        range.selectNodeContents(inner);
        sel.removeAllRanges();
        sel.addRange(range);
        const data2 = new DataTransfer();
        inner.dispatchEvent(new ClipboardEvent('copy', { clipboardData: data2, bubbles: true, cancelable: true }));
        return { whole, inside: data2.getData('text/plain'), prevented: ev.defaultPrevented };
      });
      assert.equal(copied.whole, 'Euler wrote $e^{i\\pi} + 1 = 0$, and Pythagoras $a^2 + b^2 = c^2$.');
      assert.equal(copied.inside, '$e^{i\\pi} + 1 = 0$');
      assert.ok(copied.prevented);

      const id = await currentConversationId(page);
      await page.reload();
      await waitForAppReady(page);
      if ((await currentConversationId(page)) !== id) await conversationItem(page, id).locator(tid('conversation-open')).click();
      await waitForAssistantCount(page, 1);
      check(await shown(page), 'after a reload');
    });
    assertNoPageProblems(issues);
  } finally {
    await context.close();
  }
});
