// Accessibility (issue 30 item 8): axe-core (npm, injected into the page) finds no violation of
// serious or critical impact on any screen, in both themes (the system's colour scheme, emulated) and
// both widths: the main screen with a conversation, the memory panel open (summary, entities, graph),
// the settings dialog, search results, the import preview, the model picker and the shortcuts sheet
// open, and on a 390×844 phone the drawer. No rule is turned off.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { memoryReplyText } from './agent-server.mjs';
import { startHarness, chatTurn, tid, uiJourney, syntheticBackup } from './helpers.mjs';

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/**
 * Runs axe-core on the page as it is and returns its serious and critical violations, one line per
 * rule and element (rule id, impact, CSS target, axe's summary of what fails).
 * @param {import('playwright-core').Page} page
 */
async function seriousViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) {
    // Evaluated through the devtools protocol: the app's Content-Security-Policy (rightly) refuses
    // an inline script tag.
    await page.evaluate(AXE_SOURCE);
  }
  // Transitions (the drawer slides in) settle before colours are measured.
  await page.waitForTimeout(300);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}) ${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`));
  });
  return found;
}

/** What each screen checked so far found (a journey reports every screen, then fails). */
let findings = [];

/** Checks one screen: axe finds nothing serious or critical there. */
async function check(page, screen) {
  const found = await seriousViolations(page);
  findings.push(...found.map((f) => `${screen}: ${f}`));
}

/** A journey over several screens, failing at its end with every violation any of them had. */
const a11yJourney = (name, fn) => uiJourney(harness, name, async (page) => {
  findings = [];
  await fn(page);
  assert.deepEqual(findings, [], `${findings.length} serious or critical violations:\n${findings.join('\n')}`);
});

const ENTITIES = [
  { id: 'alice', type: 'person', name: 'Alice', description: 'A baker.', properties: {},
    relationships: [{ targetId: 'paris', relationship: 'lives in', strength: 0.9 }, { targetId: 'bakery', relationship: 'runs', strength: 0.6 }] },
  { id: 'paris', type: 'place', name: 'Paris', description: 'Capital of France.', properties: {}, relationships: [] },
  { id: 'bakery', type: 'concept', name: 'Sourdough bakery', description: 'The shop.', properties: {}, relationships: [] },
];

/** A conversation with a question, a reply with markdown and code, its memory built, and a fact
 * about the user. */
async function conversationWithMemory(page) {
  const { agent } = harness;
  await chatTurn(page, agent, 'Alice runs a bakery in Paris.',
    'Nice: **Alice** runs the Sourdough bakery, and Alice lives in Paris.\n\n```python\ndef greet(name):\n    return f"hi {name}"\n```\n\n[More](https://example.org)');
  // A fact about the user, so the memory panel shows its facts too.
  await chatTurn(page, agent, 'I work as a nurse. What should she bake first?', 'A country loaf.');
  agent.scriptMemory({ text: memoryReplyText({ summary: 'Alice runs a bakery in Paris.', entities: ENTITIES }) });
  await page.locator(tid('update-memory')).click();
  await page.locator(tid('entity-graph')).waitFor();
  await page.locator(tid('memory-about-you')).locator(tid('memory-user-fact')).first().waitFor();
}

/** Opens the memory panel if it is closed. */
async function showMemory(page) {
  const toggle = page.locator(tid('memory-toggle'));
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  await page.locator(tid('memory-pane')).waitFor({ state: 'visible' });
}

/** Closes the memory panel if it is open. */
async function hideMemory(page) {
  const toggle = page.locator(tid('memory-toggle'));
  // On a phone the panel covers the header: its own close button closes it.
  const close = page.locator(tid('memory-close'));
  // Right after a resize the app may not have seen the new width yet: the toggle says what the app
  // thinks, the panel what the CSS shows. Act only once they agree.
  await page.waitForFunction(() => {
    const t = document.querySelector('[data-testid="memory-toggle"]');
    const pane = document.querySelector('[data-testid="memory-pane"]');
    const shown = !!pane && pane.getClientRects().length > 0 && getComputedStyle(pane).visibility !== 'hidden';
    return (t?.getAttribute('aria-expanded') === 'true') === shown;
  }, null, { timeout: 5000 });
  const expanded = await toggle.getAttribute('aria-expanded');
  const closeShown = await close.isVisible();
  if (expanded === 'true') await (closeShown ? close : toggle).click();
  await page.locator(tid('memory-pane')).waitFor({ state: 'hidden', timeout: 5000 }).catch(async () => {
    const cls = await page.evaluate(() => document.querySelector('.app').className);
    assert.fail(`the memory panel stays (toggle expanded: ${expanded}, close shown: ${closeShown}, app: ${cls})`);
  });
}

/** The settings dialog, checked, then closed. */
async function checkSettings(page, screen) {
  await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-dialog')).waitFor({ state: 'visible' });
  await check(page, `${screen}: settings dialog`);
  await page.keyboard.press('Escape');
  await page.locator(tid('settings-dialog')).waitFor({ state: 'detached' });
}

/** The import preview of a small backup, checked, then cancelled. */
async function checkImportPreview(page, screen) {
  await page.locator(tid('export-button')).click();
  const backup = syntheticBackup({ id: 'c-a11y', title: 'Imported for the check', count: 4 });
  await page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(backup)) });
  await page.locator(tid('import-preview')).waitFor({ state: 'visible' });
  await check(page, `${screen}: import preview`);
  await page.locator(tid('import-preview')).locator(tid('import-cancel')).click();
  await page.locator(tid('import-preview')).waitFor({ state: 'detached' });
}

for (const scheme of ['light', 'dark']) {
  test(`a11y, ${scheme}, 1280×800: main screen, memory panel, settings, search results, import preview`, () =>
    a11yJourney(`a11y-${scheme}-wide`, async (page) => {
      await page.emulateMedia({ colorScheme: scheme });
      await conversationWithMemory(page);
      await showMemory(page);
      await check(page, `${scheme} wide: main screen, memory panel open`);
      await hideMemory(page);
      await check(page, `${scheme} wide: main screen, memory panel closed`);
      await checkSettings(page, `${scheme} wide`);
      await page.locator(tid('model-picker')).click();
      await page.locator(tid('model-option')).nth(1).waitFor();
      await check(page, `${scheme} wide: model picker open`);
      await page.keyboard.press('Escape');
      await page.evaluate(() => document.activeElement?.blur());
      await page.keyboard.press('Shift+?');
      await page.locator(tid('shortcuts-sheet')).waitFor();
      await check(page, `${scheme} wide: shortcuts sheet`);
      await page.keyboard.press('Escape');
      await page.locator(tid('shortcuts-sheet')).waitFor({ state: 'detached' });
      await page.locator(tid('conversation-search')).fill('bakery');
      await page.locator(tid('search-hit')).first().waitFor();
      await check(page, `${scheme} wide: search results`);
      await page.locator(tid('conversation-search')).fill('');
      await checkImportPreview(page, `${scheme} wide`);
    }));

  test(`a11y, ${scheme}, 390×844: main screen, drawer, search in the drawer, memory panel, settings, import preview`, () =>
    a11yJourney(`a11y-${scheme}-phone`, async (page) => {
      await page.emulateMedia({ colorScheme: scheme });
      await conversationWithMemory(page);
      await page.setViewportSize({ width: 390, height: 844 });
      await hideMemory(page);
      await check(page, `${scheme} phone: main screen`);
      await page.locator(tid('sidebar-toggle')).click();
      await page.locator(tid('sidebar')).waitFor({ state: 'visible' });
      await check(page, `${scheme} phone: drawer open`);
      await page.locator(tid('conversation-search')).fill('bakery');
      await page.locator(tid('search-hit')).first().waitFor();
      await check(page, `${scheme} phone: search results in the drawer`);
      await page.locator(tid('conversation-search')).fill('');
      await checkSettings(page, `${scheme} phone`);
      await page.locator(tid('drawer-backdrop')).click({ position: { x: 380, y: 420 } }).catch(() => {});
      await page.locator(tid('sidebar')).waitFor({ state: 'hidden' });
      await showMemory(page);
      await check(page, `${scheme} phone: memory panel open`);
      await hideMemory(page);
      await checkImportPreview(page, `${scheme} phone`);
    }));
}
