// End-to-end journeys through the interface (issue 6), part two: the memory pane after a memory
// update (summary, entities by type, relationships, SVG graph, edit/delete, versions with restore), the
// context inspector's numbers, settings that persist (global and per conversation), the first run
// without an endpoint, `/clear`, and layout, routing, keyboard, focus and accessible names.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { memoryReplyText } from './agent-server.mjs';
import {
  startHarness,
  openUiApp,
  waitForAppReady,
  chatTurn,
  messages,
  waitForAssistantCount,
  conversationIds,
  conversationItem,
  currentConversationId,
  openSettings,
  saveSettings,
  endpointBase,
  assertNoPageProblems,
  withDiagnostics,
  tid,
  showInspector,
  uiJourney,
  openAdvanced,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const journey = (name, fn, options) => uiJourney(harness, name, fn, options);

const ENTITIES = [
  { id: 'alice', type: 'person', name: 'Alice', description: 'A baker who lives in Paris.', properties: { job: 'baker' },
    relationships: [{ targetId: 'paris', relationship: 'lives in', strength: 0.9 }, { targetId: 'bakery', relationship: 'runs', strength: 0.6 }] },
  { id: 'paris', type: 'place', name: 'Paris', description: 'Capital of France.', properties: {}, relationships: [] },
  { id: 'bakery', type: 'concept', name: 'Sourdough bakery', description: 'Alice’s shop.', properties: {}, relationships: [] },
  { id: 'opening', type: 'event', name: 'Grand opening', description: 'Next Saturday.', properties: {},
    relationships: [{ targetId: 'bakery', relationship: 'of', strength: 0.4 }] },
  { id: 'flour', type: 'task', name: 'Order flour', description: 'Before Friday.', properties: {}, relationships: [] },
];
const SUMMARY_1 = 'Alice runs a sourdough bakery in Paris and is preparing its grand opening.';
/** The agent's reply, so that every scripted entity, description, property and relationship is
 * grounded in a message (the engine drops what no message says, `engine::memory::ground`). */
const TOLD = 'How exciting! So Alice runs the sourdough bakery, Alice’s shop. Alice lives in Paris, Alice is a baker who lives in Paris. '
  + 'Paris is the capital of France. The grand opening of the sourdough bakery is next Saturday: '
  + 'order flour before Friday.';
const SUMMARY_2 = 'Alice ordered the flour; the opening is on Saturday.';

/** Clicks "Update memory now" and waits until the summary ends with `text` (the earlier summary's
 * facts that the reply leaves out are carried forward before it). */
async function updateMemory(page, agent, reply) {
  agent.scriptMemory({ text: memoryReplyText(reply) });
  await page.locator(tid('update-memory')).click();
  await page.waitForFunction((t) => document.querySelector('[data-testid="summary-text"]')?.textContent.trim().endsWith(t), reply.summary);
}

async function reopen(page, id) {
  await page.reload();
  await waitForAppReady(page);
  if ((await currentConversationId(page)) !== id) await conversationItem(page, id).locator(tid('conversation-open')).click();
  await page.locator(tid('message')).first().waitFor();
}

test('memory pane: summary, entities grouped by type, relationships, graph; edit and delete persist; versions restore', () =>
  journey('memory', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Alice opens a sourdough bakery in Paris.', TOLD);
    const id = await currentConversationId(page);
    await updateMemory(page, agent, { summary: SUMMARY_1, entities: ENTITIES });
    assert.equal(agent.memoryRequests().length, 1);
    assert.match(await page.locator(tid('summary-meta')).innerText(), /covers 2 messages/);

    const pane = page.locator(tid('memory-pane'));
    await pane.locator(tid('entity-node')).nth(ENTITIES.length - 1).waitFor();
    const groups = await pane.locator(tid('entity-group')).evaluateAll((gs) => gs.map((g) => ({
      type: g.getAttribute('data-entity-type'),
      nodes: [...g.querySelectorAll('[data-testid="entity-node"]')].map((n) => [n.getAttribute('data-entity-type'), n.querySelector('[data-testid="entity-name"]').textContent.trim()]),
    })));
    assert.deepEqual(groups, [
      { type: 'person', nodes: [['person', 'Alice']] },
      { type: 'place', nodes: [['place', 'Paris']] },
      { type: 'concept', nodes: [['concept', 'Sourdough bakery']] },
      { type: 'event', nodes: [['event', 'Grand opening']] },
      { type: 'task', nodes: [['task', 'Order flour']] },
    ]);
    // The app gives entities its own ids: find them by name, then hold on to the id.
    const byName = (name) => pane.locator(tid('entity-node')).filter({ has: page.locator(tid('entity-name'), { hasText: name }) });
    const aliceId = await byName('Alice').getAttribute('data-entity-id');
    const flourId = await byName('Order flour').getAttribute('data-entity-id');
    const alice = pane.locator(tid('entity-node', `[data-entity-id="${aliceId}"]`));
    const rels = await alice.locator(tid('entity-relationship')).allInnerTexts();
    assert.equal(rels.length, 2);
    assert.match(rels.join('|'), /lives in → Paris/);
    assert.match(rels.join('|'), /runs → Sourdough bakery/);
    assert.match(await alice.innerText(), /A baker who lives in Paris\./);
    assert.match(await alice.innerText(), /job/);

    const graph = pane.locator(tid('entity-graph'));
    assert.equal(await graph.evaluate((el) => el.tagName.toLowerCase()), 'svg');
    assert.equal(await graph.locator(tid('graph-node')).count(), ENTITIES.length);
    assert.equal(await graph.locator(tid('graph-edge')).count(), 3);
    const types = await graph.locator(tid('graph-node')).evaluateAll((ns) => ns.map((n) => n.getAttribute('data-entity-type')).sort());
    assert.deepEqual(types, ['concept', 'event', 'person', 'place', 'task']);
    const widths = await graph.locator(tid('graph-edge')).evaluateAll((es) => es.map((e) => Number(e.getAttribute('stroke-width'))).sort((a, b) => a - b));
    assert.ok(widths[0] < widths[2], `edges are weighted by strength: ${widths}`);

    // Edit one entity and delete another; both survive a reload.
    await alice.locator(tid('entity-edit')).click();
    await alice.locator(tid('entity-name-input')).fill('Alice Martin');
    await alice.locator(tid('entity-description-input')).fill('Baker, owner of the shop.');
    await alice.locator(tid('entity-save')).click();
    await page.waitForFunction((id) => document.querySelector(`[data-entity-id="${id}"] [data-testid="entity-name"]`)?.textContent.trim() === 'Alice Martin', aliceId);
    await pane.locator(tid('entity-node', `[data-entity-id="${flourId}"]`)).locator(tid('entity-delete')).click();
    await pane.locator(tid('entity-node', `[data-entity-id="${flourId}"]`)).waitFor({ state: 'detached' });
    await reopen(page, id);
    await alice.waitFor();
    assert.equal((await alice.locator(tid('entity-name')).innerText()).trim(), 'Alice Martin');
    assert.match(await alice.locator(tid('entity-description')).innerText(), /owner of the shop/);
    assert.equal(await alice.locator(tid('entity-relationship')).count(), 2, 'the edit kept the relationships');
    assert.equal(await page.locator(tid('entity-node')).count(), ENTITIES.length - 1);
    assert.equal(await page.locator(tid('entity-node', `[data-entity-id="${flourId}"]`)).count(), 0);

    // A second update, then restore the first summary.
    await chatTurn(page, agent, 'She ordered the flour.', 'Good.');
    await updateMemory(page, agent, { summary: SUMMARY_2, entities: [] });
    assert.equal((await page.locator(tid('summary-text')).innerText()).trim(), `${SUMMARY_1} ${SUMMARY_2}`, 'the first summary\'s facts are kept');
    await page.locator(tid('summary-versions-toggle')).click();
    const versions = page.locator(tid('summary-versions'));
    await versions.waitFor();
    assert.match(await versions.innerText(), /sourdough bakery/);
    await versions.locator(tid('restore-summary')).first().click();
    await page.waitForFunction((t) => document.querySelector('[data-testid="summary-text"]')?.textContent.trim() === t, SUMMARY_1);
    await reopen(page, id);
    await page.waitForFunction((t) => document.querySelector('[data-testid="summary-text"]')?.textContent.trim() === t, SUMMARY_1);
  }));

/** Waits until the inspector's sections add up to its total and the history has `n` messages; returns the numbers. */
async function inspectorNumbers(page, historyCount) {
  await page.waitForFunction((n) => {
    const rows = [...document.querySelectorAll('[data-testid="inspector-section"]')];
    const total = document.querySelector('[data-testid="inspector-total"]');
    const hist = rows.find((r) => r.getAttribute('data-section') === 'history');
    const count = hist ? Number(/(\d+) messages/.exec(hist.textContent)?.[1]) : 0;
    return total && rows.length > 0 && count === n;
  }, historyCount);
  return page.evaluate(() => ({
    sections: Object.fromEntries([...document.querySelectorAll('[data-testid="inspector-section"]')].map((r) => [r.getAttribute('data-section'), Number(r.getAttribute('data-tokens'))])),
    total: Number(document.querySelector('[data-testid="inspector-total"]').getAttribute('data-tokens')),
    totalText: document.querySelector('[data-testid="inspector-total"]').textContent.trim(),
    path: document.querySelector('[data-testid="inspector-plan"]').getAttribute('data-path'),
    plan: document.querySelector('[data-testid="inspector-plan"]').textContent,
    format: document.querySelector('[data-testid="inspector-format"]').textContent.trim(),
    dropped: [...document.querySelectorAll('[data-testid="inspector-dropped-item"]')].map((d) => ({ seq: Number(d.getAttribute('data-seq')), text: d.textContent })),
  }));
}

const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);

test('a changed fact is kept as past: struck through with its days in the memory pane, and never current in the next request', () =>
  journey('changed-fact', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'I live in Lisbon.', 'Lisbon is lovely.');
    await updateMemory(page, agent, { summary: 'The user lives in Lisbon.', entities: [] });
    await chatTurn(page, agent, 'I moved to Oslo last month, so I live in Oslo now.', 'Oslo it is.');
    agent.scriptMemory({ text: memoryReplyText({ summary: 'The user lives in Oslo now.', entities: [] }) });
    await page.locator(tid('update-memory')).click();
    const summary = page.locator(tid('memory-summary'));
    const past = summary.locator(tid('summary-sentence', '[data-status="past"]'));
    await past.filter({ hasText: 'Lisbon' }).first().waitFor();

    // Every sentence with Lisbon is past: struck through, "no longer true" for screen readers, its days.
    const sentences = await summary.locator(tid('summary-sentence')).evaluateAll((els) => els.map((e) => ({
      status: e.getAttribute('data-status'),
      text: e.textContent,
      struck: [...e.querySelectorAll('s')].map((s) => getComputedStyle(s).textDecorationLine),
      hidden: e.querySelector('.visually-hidden')?.textContent ?? '',
      dates: e.querySelector('.fact-dates')?.textContent ?? '',
    })));
    const lisbon = sentences.filter((s) => s.text.includes('Lisbon'));
    assert.ok(lisbon.length > 0, JSON.stringify(sentences));
    for (const s of lisbon) {
      assert.equal(s.status, 'past', JSON.stringify(s));
      assert.deepEqual(s.struck, ['line-through'], JSON.stringify(s));
      assert.match(s.hidden, /no longer true/);
      assert.match(s.dates, /until \d{1,2} [A-Z][a-z]{2} \d{4}/);
    }
    const oslo = sentences.filter((s) => s.text.includes('Oslo'));
    assert.ok(oslo.length > 0 && oslo.every((s) => s.status === 'current' && s.struck.length === 0), JSON.stringify(sentences));

    // The next request carries Lisbon only with its "until" note.
    await chatTurn(page, agent, 'Where do I live?', 'In Oslo.');
    const request = agent.chatRequests().at(-1);
    const system = request.body.messages.find((m) => m.role === 'system')?.content ?? '';
    assert.match(system, /Oslo/);
    const withLisbon = system.split(/(?<=[.!?])\s+|\n/).filter((s) => s.includes('Lisbon'));
    assert.ok(withLisbon.length > 0, system);
    for (const s of withLisbon) assert.match(s, /until \d{4}-\d{2}-\d{2}/, `Lisbon as current in the system text: ${s}`);
  }));

test('context inspector: section tokens add up, history counts messages, dropped messages with reasons, the plan', () =>
  journey('inspector', async (page) => {
    await showInspector(page);
    const { agent } = harness;
    await page.locator(tid('new-conversation')).click();
    let n = await inspectorNumbers(page, 0);
    assert.equal(n.path, 'fresh');
    assert.match(n.plan, /Nothing came before/);
    assert.ok(n.sections.system > 0 && 'new-message' in n.sections);
    assert.equal(sum(n.sections), n.total, JSON.stringify(n));
    assert.equal(n.totalText, String(n.total));

    await chatTurn(page, agent, 'A first question about the weather.', 'It is sunny today.');
    n = await inspectorNumbers(page, 2);
    assert.equal(n.path, 'reinjected', 'a stateless endpoint gets the context again');
    assert.match(n.plan, /does not have this conversation/);
    assert.ok(n.sections.history > 0);
    assert.equal(sum(n.sections), n.total, JSON.stringify(n));
    assert.equal(n.format, 'messages');
    assert.deepEqual(n.dropped, []);

    // A small budget: older messages are dropped, each with its reason.
    await openSettings(page);
    await openAdvanced(page);
    await page.locator(tid('settings-context-tokens')).fill('600');
    await page.locator(tid('settings-reply-reserve')).fill('100');
    await saveSettings(page);
    const long = (w) => `${w} `.repeat(120).trim();
    await chatTurn(page, agent, long('alpha'), long('beta'));
    await chatTurn(page, agent, long('gamma'), long('delta'));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="inspector-dropped-item"]').length > 0);
    const rows = /(\d+) messages/.exec(await page.locator(tid('inspector-section', '[data-section="history"]')).innerText())[1];
    n = await inspectorNumbers(page, Number(rows));
    assert.ok(n.dropped.length >= 2, JSON.stringify(n.dropped));
    assert.equal(Number(rows) + n.dropped.length, 6, 'kept + dropped = every message');
    for (const d of n.dropped) assert.match(d.text, /token budget|summary|size cap/);
    assert.deepEqual(n.dropped.map((d) => d.seq), [...n.dropped.map((d) => d.seq)].sort((a, b) => a - b));
    assert.equal(sum(n.sections), n.total, JSON.stringify(n));
    assert.match(await page.locator(tid('context-inspector')).innerText(), /of 500 budget/);
  }));

test('settings persist across a reload; per-conversation overrides; the API key is never shown', () =>
  journey('settings', async (page) => {
    const { agent } = harness;
    const secret = 'sk-test-SECRET-4242';
    await chatTurn(page, agent, 'Hello there', 'Hi.');
    const first = await currentConversationId(page);
    await openSettings(page);
    await page.locator(tid('settings-protocol')).selectOption('ollama');
    await page.locator(tid('settings-endpoint-url')).fill(endpointBase(agent, 'ollama'));
    await page.locator(tid('settings-model')).fill('llama-test');
    await page.locator(tid('settings-api-key')).fill(secret);
    await page.locator(tid('settings-recent-count')).fill('7');
    await page.locator(tid('settings-summary-frequency')).fill('3');
    await openAdvanced(page);
    await page.locator(tid('settings-context-tokens')).fill('4096');
    await page.locator(tid('settings-reply-reserve')).fill('512');
    await page.locator(tid('settings-history-format')).selectOption('transcript');
    assert.ok(!(await page.evaluate(() => document.body.innerText)).includes(secret));
    await saveSettings(page);

    const check = async () => {
      await openSettings(page);
      assert.equal(await page.locator(tid('settings-protocol')).inputValue(), 'ollama');
      assert.equal(await page.locator(tid('settings-endpoint-url')).inputValue(), endpointBase(agent, 'ollama'));
      assert.equal(await page.locator(tid('settings-model')).inputValue(), 'llama-test');
      assert.equal(await page.locator(tid('settings-recent-count')).inputValue(), '7');
      assert.equal(await page.locator(tid('settings-summary-frequency')).inputValue(), '3');
      assert.equal(await page.locator(tid('settings-context-tokens')).inputValue(), '4096');
      assert.equal(await page.locator(tid('settings-reply-reserve')).inputValue(), '512');
      assert.equal(await page.locator(tid('settings-history-format')).inputValue(), 'transcript');
      assert.equal(await page.locator(tid('settings-api-key')).getAttribute('type'), 'password');
      const html = await page.content();
      const text = await page.evaluate(() => document.body.innerText);
      assert.ok(!html.includes(secret) && !text.includes(secret), 'the API key is not in the page');
      await page.keyboard.press('Escape');
      await page.locator(tid('settings-dialog')).waitFor({ state: 'detached' });
    };
    await check();
    await page.reload();
    await waitForAppReady(page);
    await check();

    // The next request uses them: ollama, transcript, the key sent as a header only.
    agent.script('Ollama says hi.');
    await page.locator(tid('composer-input')).fill('Via ollama now');
    await page.locator(tid('send-button')).click();
    await waitForAssistantCount(page, 2);
    const req = agent.chatRequests().at(-1);
    assert.equal(req.path, '/api/chat');
    assert.equal(req.body.model, 'llama-test');
    assert.match(JSON.stringify(req.body.messages), /conversation_history/);

    // Per-conversation overrides: this conversation goes back to messages, the other stays transcript.
    await openSettings(page);
    await page.locator(tid('settings-scope-conversation')).check();
    await page.locator(tid('settings-override-history-format')).selectOption('messages');
    await page.locator(tid('settings-override-recent-count')).fill('4');
    assert.equal(await page.locator(tid('settings-recent-count')).count(), 0, 'one field per testid on the page');
    await saveSettings(page);
    await page.waitForFunction(() => document.querySelector('[data-testid="inspector-format"]')?.textContent.trim() === 'messages');
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction((f) => location.hash !== `#/c/${f}`, first);
    await page.waitForFunction(() => document.querySelector('[data-testid="inspector-format"]')?.textContent.trim() === 'transcript');
    await page.reload();
    await waitForAppReady(page);
    await conversationItem(page, first).locator(tid('conversation-open')).click();
    await page.waitForFunction(() => document.querySelector('[data-testid="inspector-format"]')?.textContent.trim() === 'messages');
    await openSettings(page);
    assert.equal(await page.locator(tid('settings-history-format')).inputValue(), 'transcript', 'the global value is unchanged');
    await page.locator(tid('settings-scope-conversation')).check();
    assert.equal(await page.locator(tid('settings-override-history-format')).inputValue(), 'messages');
    assert.equal(await page.locator(tid('settings-override-recent-count')).inputValue(), '4');
    assert.equal(await page.locator(tid('settings-override-context-tokens')).inputValue(), '', 'empty = the global value');
    await page.keyboard.press('Escape');
  }));

test('first run without an endpoint: the app explains how to connect, and browsing works', () =>
  journey('first-run', async (page) => {
    const empty = page.locator(tid('empty-state'));
    await empty.waitFor();
    const text = await empty.innerText();
    assert.match(text, /Connect a model/);
    assert.match(text, /[Ss]ettings/);
    // Plain words first: the CORS fix is behind "Help", opened on demand.
    assert.doesNotMatch(text, /CORS|OLLAMA_ORIGINS/);
    await empty.locator(tid('empty-state-help')).locator('summary').click();
    assert.match(await empty.innerText(), /OLLAMA_ORIGINS/);
    await page.locator(tid('new-conversation')).click();
    assert.equal(await page.locator(tid('conversation-item')).count(), 0, 'New stores nothing');
    await page.locator(tid('conversation-search')).fill('anything');
    await page.locator(tid('search-results')).waitFor();
    await page.locator(tid('conversation-search')).fill('');
    await page.locator(tid('composer-input')).fill('Hello?');
    await page.locator(tid('send-button')).click();
    await page.locator(tid('error-banner')).waitFor();
    assert.match(await page.locator(tid('error-banner')).innerText(), /Settings/);
    await page.locator(tid('settings-dialog')).waitFor();
    assert.equal(await page.locator(tid('composer-input')).inputValue(), 'Hello?', 'the message is kept');
    assert.equal(harness.agent.requests.length, 0);
    await page.keyboard.press('Escape');
    await page.locator(tid('empty-state-settings')).click();
    await page.locator(tid('settings-dialog')).waitFor();
  }, { endpoint: false }));

test('/clear asks first; cancel keeps everything; confirm clears this conversation only', () =>
  journey('clear', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'About the other one', 'Noted: Paris is the capital of France.');
    const other = await currentConversationId(page);
    await updateMemory(page, agent, { summary: 'Other summary.', entities: [ENTITIES[1]] });
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => location.hash === '');
    await chatTurn(page, agent, 'About this one', TOLD);
    const id = await currentConversationId(page);
    assert.notEqual(id, other);
    await updateMemory(page, agent, { summary: 'This summary.', entities: [ENTITIES[0]] });
    const chats = agent.chatRequests().length;

    const input = page.locator(tid('composer-input'));
    await input.fill('/clear');
    await input.press('Enter');
    await page.locator(tid('confirm-clear')).waitFor();
    await page.locator(tid('cancel-clear')).click();
    await page.locator(tid('confirm-clear')).waitFor({ state: 'detached' });
    assert.equal(await messages(page).count(), 2);
    assert.equal(await page.locator(tid('summary-text')).innerText(), 'This summary.');
    assert.equal(agent.chatRequests().length, chats, '/clear is never sent');

    await input.fill('/clear');
    await page.locator(tid('send-button')).click();
    await page.locator(tid('confirm-clear')).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="message"]').length === 0 && !document.querySelector('[data-testid="summary-text"]') && !document.querySelector('[data-testid="entity-node"]'));
    assert.equal(agent.chatRequests().length, chats);
    assert.equal(await conversationItem(page, id).locator(tid('conversation-count')).getAttribute('data-count'), '0');

    await conversationItem(page, other).locator(tid('conversation-open')).click();
    await waitForAssistantCount(page, 1);
    await page.waitForFunction(() => document.querySelector('[data-testid="summary-text"]')?.textContent.trim() === 'Other summary.');
    assert.equal(await page.locator(tid('entity-node')).count(), 1);
    await page.reload();
    await waitForAppReady(page);
    await conversationItem(page, id).locator(tid('conversation-open')).click();
    await page.waitForFunction((id) => location.hash === `#/c/${id}`, id);
    await page.locator(tid('empty-state')).waitFor();
    assert.equal(await messages(page).count(), 0);
    assert.equal(await page.locator(tid('summary-text')).count(), 0);
  }));

test('layout and keyboard: narrow memory toggle, #/c/<id> routing with back, Ctrl+K, settings focus trap, accessible names, unique testids', () =>
  journey('layout', async (page) => {
    const { agent } = harness;
    await chatTurn(page, agent, 'Conversation A', 'Reply A.');
    const a = await currentConversationId(page);
    await page.locator(tid('new-conversation')).click();
    await page.waitForFunction(() => location.hash === '');
    await chatTurn(page, agent, 'Conversation B', 'Reply B.');
    const b = await currentConversationId(page);
    assert.equal(await conversationItem(page, b).getAttribute('aria-current'), 'page');

    // Routing: the back button returns to A; a reload keeps it.
    await page.goBack();
    await page.waitForFunction((a) => location.hash === `#/c/${a}`, a);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message-content"]')].some((e) => e.innerText.includes('Reply A.')));
    assert.equal(await conversationItem(page, a).getAttribute('aria-current'), 'page');
    assert.equal(await messages(page).count(), 2);
    await page.reload();
    await waitForAppReady(page);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message-content"]')].some((e) => e.innerText.includes('Reply A.')));
    await page.goForward().catch(() => {});

    // Ctrl+K focuses search (Meta+K too).
    await page.locator(tid('composer-input')).focus();
    await page.keyboard.press('Control+k');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'conversation-search');
    await page.locator(tid('composer-input')).focus();
    await page.keyboard.press('Meta+k');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'conversation-search');

    // Every testid that names one thing appears once.
    const repeated = new Set(['conversation-item', 'conversation-open', 'conversation-title', 'conversation-count', 'conversation-time', 'conversation-badge', 'conversation-badge-info',
      'rename-conversation', 'delete-conversation', 'message', 'message-content', 'edit-message', 'entity-node', 'entity-group', 'entity-name',
      'entity-description', 'entity-relationship', 'entity-edit', 'entity-delete', 'graph-node', 'graph-edge', 'inspector-section',
      'inspector-dropped-item', 'copy-code', 'search-hit', 'restore-summary', 'recent-message', 'copy-message', 'message-model', 'message-tokens',
      'graph-edge-label', 'search-snippet', 'search-hit-role', 'delete-message', 'confirm-delete-message', 'cancel-delete-message', 'regenerate-button',
      'alternative-prev', 'alternative-next', 'alternative-position', 'message-time', 'day-separator']);
    const duplicates = async () => page.evaluate((repeated) => {
      const seen = {};
      for (const el of document.querySelectorAll('[data-testid]')) seen[el.getAttribute('data-testid')] = (seen[el.getAttribute('data-testid')] ?? 0) + 1;
      return Object.entries(seen).filter(([k, n]) => n > 1 && !repeated.includes(k));
    }, [...repeated]);
    assert.deepEqual(await duplicates(), []);

    // Accessible names on every control.
    const unnamed = () => page.evaluate(() => {
      const name = (el) => {
        if (el.getAttribute('aria-label')?.trim()) return true;
        const by = el.getAttribute('aria-labelledby');
        if (by && by.split(/\s+/).some((id) => document.getElementById(id)?.textContent.trim())) return true;
        if (el.labels && [...el.labels].some((l) => l.textContent.trim())) return true;
        if (['BUTTON', 'A', 'SUMMARY'].includes(el.tagName) && el.textContent.trim()) return true;
        return !!el.getAttribute('title')?.trim();
      };
      return [...document.querySelectorAll('button, input, select, textarea, a[href], summary, [role="button"]')]
        .filter((el) => el.getClientRects().length > 0 || el.type === 'file')
        .filter((el) => !name(el))
        .map((el) => el.outerHTML.slice(0, 120));
    });
    assert.deepEqual(await unnamed(), []);

    // Settings: focus moves in, Tab stays in, Esc closes, focus returns to the opener.
    await page.locator(tid('settings-open')).focus();
    await page.keyboard.press('Enter');
    const dialog = page.locator(tid('settings-dialog'));
    await dialog.waitFor();
    assert.deepEqual(await duplicates(), []);
    assert.deepEqual(await unnamed(), []);
    assert.equal(await dialog.getAttribute('role'), 'dialog');
    assert.equal(await dialog.getAttribute('aria-modal'), 'true');
    const inside = () => page.evaluate(() => !!document.activeElement?.closest('[data-testid="settings-dialog"]'));
    await page.waitForFunction(() => !!document.activeElement?.closest('[data-testid="settings-dialog"]'));
    for (let i = 0; i < 30; i += 1) {
      await page.keyboard.press('Tab');
      assert.ok(await inside(), `Tab ${i + 1} stays in the dialog`);
    }
    for (let i = 0; i < 5; i += 1) {
      await page.keyboard.press('Shift+Tab');
      assert.ok(await inside(), `Shift+Tab ${i + 1} stays in the dialog`);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'settings-open');

    // Narrow screens: the memory pane collapses behind a toggle (there on every width: on a wide
    // one, it says the panel beside the chat is open).
    const pane = page.locator(tid('memory-pane'));
    assert.ok(await pane.isVisible());
    assert.equal(await page.locator(tid('memory-toggle')).getAttribute('aria-expanded'), 'true');
    await page.setViewportSize({ width: 760, height: 800 });
    await pane.waitFor({ state: 'hidden' });
    await page.locator(tid('memory-toggle')).click();
    await pane.waitFor({ state: 'visible' });
    assert.equal(await page.locator(tid('memory-toggle')).getAttribute('aria-expanded'), 'true');
    await page.locator(tid('memory-close')).click();
    await pane.waitFor({ state: 'hidden' });
    assert.ok(await page.locator(tid('composer-input')).isVisible(), 'the chat stays usable');
    assert.deepEqual(await conversationIds(page), [b, a]);
  }));
