// End-to-end journeys as plain async functions of a harness, so the same journey runs against the real
// app (smoke.test.mjs) and against the minimal contract page that checks the harness itself
// (harness.test.mjs).

import assert from 'node:assert/strict';
import {
  newAppPage,
  openApp,
  waitForAppReady,
  configureEndpoint,
  endpointBase,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForPartialReply,
  assertNoPageProblems,
  withDiagnostics,
  tid,
} from './helpers.mjs';

const REPLY = 'Streaming works fine: one two three four five six seven eight nine ten eleven twelve.';
const QUESTION = 'Hello, Memoire! Can you hear me?';

/**
 * Open the app, point it at the local endpoint (openai-chat), send a message, see the reply stream in
 * (an intermediate `streaming` state with partial text), reload, open the conversation again and find
 * both messages; the browser sent exactly one request, carrying the question.
 * @param {{agent: import('./agent-server.mjs').AgentServer, site: import('./static-server.mjs').StaticServer, browser: import('playwright-core').Browser}} harness
 */
export async function chatSurvivesReload({ agent, site, browser }) {
  agent.reset();
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'chat-survives-reload', async () => {
      await openApp(page, site.url);
      await configureEndpoint(page, { url: endpointBase(agent, 'openai-chat'), protocol: 'openai-chat', model: 'test-model' });

      agent.script({ text: REPLY, delayMs: 120 });
      await sendMessage(page, QUESTION);
      const partial = await waitForPartialReply(page, REPLY);
      assert.ok(REPLY.startsWith(partial), `the streamed part is a prefix of the reply: ${JSON.stringify(partial)}`);
      assert.equal(await waitForAssistant(page), REPLY);
      assert.equal(await messageText(messages(page, 'user').last()), QUESTION);
      checkSingleRequest(agent);

      await page.reload();
      await waitForAppReady(page);
      await reopenOnlyConversation(page);
      assert.equal(await waitForAssistant(page), REPLY);
      assert.equal(await messageText(messages(page, 'user').last()), QUESTION);
      assert.equal(await messages(page).count(), 2);
      assert.equal(agent.chatRequests().length, 1, 'the reload sent nothing to the agent');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
}

function checkSingleRequest(agent) {
  const requests = agent.chatRequests();
  assert.equal(requests.length, 1);
  const [request] = requests;
  assert.equal(request.path, '/v1/chat/completions');
  assert.equal(request.body.stream, true);
  assert.equal(request.body.model, 'test-model');
  assert.deepEqual(request.body.messages.at(-1), { role: 'user', content: QUESTION });
}

async function reopenOnlyConversation(page) {
  const items = page.locator(tid('conversation-list')).locator(tid('conversation-item'));
  await items.first().waitFor({ state: 'visible' });
  assert.equal(await items.count(), 1);
  await items.first().click();
}
