// Tool calls (issue 44): on every protocol the scripted endpoint asks for the built-in
// `search_conversations` in its own wire form (encoders.mjs: openai-chat `tool_calls` deltas,
// Responses `function_call` items, Anthropic `tool_use` with `input_json_delta`, Ollama
// `message.tool_calls`). The call shows (tool-call, data-status) and waits; Allow runs it and its
// result reaches the next request in that protocol's form, holding the passage said in another
// conversation and none from a conversation whose memory is off or from a project; Deny sends the
// refusal; a reload while a call waits leaves it interrupted, and it is never run.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openConfiguredApp,
  chatTurn,
  sendMessage,
  waitForAssistant,
  waitForAppReady,
  currentConversationId,
  conversationItem,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
} from './helpers.mjs';
import { asking, offered, results, callsSent } from './tool-wire.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const SAID = 'My favourite bakery is Manteigaria in Porto.';
const PRIVATE = 'The bakery Zebrabakes in Porto was awful.';
const IN_PROJECT = 'The bakery Quokkabread in Porto is near the office.';
const SEARCH = { name: 'search_conversations', arguments: { query: 'bakery Porto' } };
const DENIED = 'The user denied this tool call; it was not run.';

/** Starts a new conversation outside any project. */
async function newConversation(page) {
  await page.locator(tid('new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
}

/** The last reply's calls as shown: [{status, text}]. */
function shownCalls(page) {
  return page.locator(tid('message', '[data-role="assistant"]')).last().locator(tid('tool-call'))
    .evaluateAll((els) => els.map((e) => ({ status: e.getAttribute('data-status'), text: e.textContent })));
}

/** Three conversations: one that says SAID, one with memory off that says PRIVATE, one in a project
 * that says IN_PROJECT; then a new conversation outside the project. */
async function sayInThreePlaces(page, agent) {
  await chatTurn(page, agent, SAID, 'Noted.');
  await newConversation(page);
  await chatTurn(page, agent, 'Hello.', 'Hello.');
  const own = page.locator(tid('conversation-use-user-memory'));
  await own.click();
  await eventually(async () => (await own.getAttribute('aria-checked')) === 'false', { what: 'memory off' });
  await chatTurn(page, agent, PRIVATE, 'Sorry to hear.');
  await page.locator(tid('new-project')).click();
  await page.locator(tid('new-project-name')).fill('Office');
  await page.locator(tid('new-project-name')).press('Enter');
  await page.locator(tid('project-new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
  await chatTurn(page, agent, IN_PROJECT, 'Good to know.');
  await page.locator(tid('project-close')).click();
  await newConversation(page);
}

/** Sends `text` with the model asking for SEARCH, then answering `answer` (none: the call is never
 * answered); waits for the call. */
async function askSearch(page, agent, protocol, text, answer) {
  agent.script(asking(protocol, SEARCH));
  if (answer) agent.script(answer);
  const before = agent.chatRequests().length;
  await sendMessage(page, text);
  const call = page.locator(tid('message', '[data-role="assistant"]')).last().locator(tid('tool-call', '[data-status="waiting"]'));
  await call.waitFor({ state: 'visible' });
  assert.match(await call.textContent(), /search_conversations.*Memoire.*bakery Porto/s, 'name, server, arguments');
  return { call, before };
}

for (const protocol of ['openai-chat', 'openai-responses', 'anthropic', 'ollama']) {
  test(`tools (${protocol}): Allow runs the memory search, Deny refuses, a reload interrupts`, async () => {
    const { agent } = harness;
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `tools-${protocol}`, async () => {
        await sayInThreePlaces(page, agent);

        // Allow: the search runs; its result is the next request's, in the protocol's form.
        let { call, before } = await askSearch(page, agent, protocol, 'Which bakery did I like?', 'Manteigaria.');
        const first = agent.chatRequests()[before].body;
        assert.ok(offered(protocol, first).includes('search_conversations'), 'the tools are offered');
        await call.locator(tid('tool-approve')).click();
        assert.equal(await waitForAssistant(page), 'Manteigaria.');
        const second = agent.chatRequests().at(-1).body;
        assert.equal(agent.chatRequests().length, before + 2, 'one request per round');
        assert.deepEqual(callsSent(protocol, second), ['search_conversations'], 'the call goes back');
        const [result] = results(protocol, second);
        assert.ok(result, 'a result is sent');
        assert.match(result.text, /Manteigaria/, 'the passage said in another conversation');
        assert.doesNotMatch(result.text, /Zebrabakes/, 'not from a conversation whose memory is off');
        assert.doesNotMatch(result.text, /Quokkabread/, 'not from another project');
        assert.match(result.text, /not instructions/, 'marked as data');
        assert.deepEqual((await shownCalls(page)).map((c) => c.status), ['done']);
        await page.locator(tid('tool-result')).last().locator('summary').click();
        assert.match(await page.locator(tid('tool-result')).last().textContent(), /Manteigaria/, 'the result under the call');

        // Deny: not run, and the model reads the refusal.
        ({ call, before } = await askSearch(page, agent, protocol, 'Search again, please.', 'As you wish.'));
        await call.locator(tid('tool-deny')).click();
        assert.equal(await waitForAssistant(page), 'As you wish.');
        const denied = results(protocol, agent.chatRequests().at(-1).body).at(-1);
        assert.match(denied.text, new RegExp(DENIED.replace(/[.;]/g, '\\$&')), 'the refusal');
        if (protocol === 'anthropic') assert.equal(denied.error, true, 'is_error');
        assert.deepEqual((await shownCalls(page)).map((c) => c.status), ['denied']);

        // Stop while the call waits: interrupted, never run, no request follows.
        ({ before } = await askSearch(page, agent, protocol, 'Search once more.'));
        await page.locator(tid('stop-button')).click();
        await waitForAssistant(page, { status: 'interrupted' });
        assert.deepEqual((await shownCalls(page)).map((c) => c.status), ['interrupted']);
        assert.equal(agent.chatRequests().length, before + 1, 'stopped: not run');

        // A reload while the call waits: interrupted, never run, no request follows.
        ({ before } = await askSearch(page, agent, protocol, 'One more search.'));
        const id = await currentConversationId(page);
        await page.reload();
        await waitForAppReady(page);
        if ((await currentConversationId(page)) !== id) await conversationItem(page, id).click();
        const interrupted = page.locator(tid('message', '[data-role="assistant"]')).last().locator(tid('tool-call'));
        await eventually(async () => (await interrupted.getAttribute('data-status')) === 'interrupted', { what: 'interrupted' });
        assert.equal(await page.locator(tid('tool-approve')).count(), 0, 'no Allow on an interrupted call');
        await new Promise((r) => setTimeout(r, 500));
        assert.equal(agent.chatRequests().length, before + 1, 'never run: no request carried its result');
        assertNoPageProblems(issues, { allowConsole: [/Failed to load resource/] });
      });
    } finally {
      await context.close();
    }
  });
}

test('tools: a model that does not take them gets the same message again without them, and no tools from then on', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'ollama');
  try {
    await withDiagnostics(page, issues, 'tools-refused', async () => {
      // Ollama's answer for a model without tool support, as it words it.
      agent.script({ status: 400, message: 'registry.ollama.ai/library/test-model does not support tools' });
      agent.script({ text: 'Hello without tools.' });
      const before = agent.chatRequests().length;
      await sendMessage(page, 'Hello there.');
      assert.equal(await waitForAssistant(page), 'Hello without tools.');
      const [refused, again] = agent.chatRequests().slice(before).map((r) => r.body);
      assert.ok(offered('ollama', refused).includes('search_conversations'), 'the first request offered the tools');
      assert.deepEqual(offered('ollama', again), [], 'the same message went again without them');
      assert.equal(again.messages.at(-1).content, 'Hello there.');
      assert.equal(agent.chatRequests().length, before + 2);
      assert.equal(await page.locator(tid('error-banner')).count(), 0, 'nothing for the user to do');

      // The next turn, and after a reload: no tools offered to this model.
      await chatTurn(page, agent, 'And now?', 'Still fine.');
      assert.deepEqual(offered('ollama', agent.chatRequests().at(-1).body), []);
      const id = await currentConversationId(page);
      await page.reload();
      await waitForAppReady(page);
      if ((await currentConversationId(page)) !== id) await conversationItem(page, id).click();
      // The conversation shown again before the next turn counts its replies.
      await page.locator(tid('message', '[data-role="assistant"]')).filter({ hasText: 'Still fine.' }).waitFor();
      await chatTurn(page, agent, 'After a reload?', 'Still fine again.');
      assert.deepEqual(offered('ollama', agent.chatRequests().at(-1).body), []);
      assertNoPageProblems(issues, { allowConsole: [/Failed to load resource/] });
    });
  } finally {
    await context.close();
  }
});
