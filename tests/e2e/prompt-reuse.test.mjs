// Prompts a server can reuse (issue 41, engine::prefix), as the app sends them: once a conversation's
// prompt is long enough, each chat request starts with the one before it (its system text, memory
// sections and history unchanged, then the reply and the new message): a summary that lands meanwhile
// waits, since history still carries what it covers; a memory update sent to the chat's own server
// is the chat prompt it follows, its reply, then the update's instruction; and a fact forgotten on the
// Memory page leaves the very next request (the prompt moves on instead of holding it).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { memoryReplyText, MEMORY_OPENING } from './agent-server.mjs';
import {
  startHarness,
  openConfiguredApp,
  sendMessage,
  waitForAssistantCount,
  assertNoPageProblems,
  withDiagnostics,
} from './helpers.mjs';

// About 400 tokens: two turns pass the 512 tokens from which a prompt holds its start.
const LONG_REPLY = Array.from({ length: 12 }, (_, i) =>
  `Step ${i + 1}: keep the starter warm, feed it twice a day, and watch how far it rises before you bake with it.`,
).join(' ');
const TURNS = [
  'I bake sourdough in Porto. How warm should my kitchen be?',
  'How often should I feed the starter?',
  'What flour is best for a first loaf?',
  'How long should the dough rest in the fridge?',
  'How do I know the dough is ready to bake?',
];
const SUMMARY = 'The user bakes sourdough in Porto.';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** Whether `later` (a request's messages) starts with every message of `earlier`. */
function startsWith(later, earlier) {
  return earlier.every((m, i) => JSON.stringify(later[i]) === JSON.stringify(m));
}

test('a long conversation keeps its prompt start for the server; a memory update continues the chat prompt', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 2 });
  try {
    await withDiagnostics(page, issues, 'prompt-reuse', async () => {
      agent.setDefault(LONG_REPLY);
      agent.setMemoryDefault({ text: memoryReplyText({ summary: SUMMARY, entities: [] }) });
      for (const [i, text] of TURNS.entries()) {
        await sendMessage(page, text);
        await waitForAssistantCount(page, i + 1);
        // The update due after the second and fourth pair runs before the next turn goes.
        if (i === 1 || i === 3) await agent.waitForRequests(i === 1 ? 1 : 2, { filter: (r) => r.kind === 'memory' });
      }
      const chats = agent.chatRequests().map((r) => r.body);
      const memory = agent.memoryRequests().map((r) => r.body);
      assert.equal(chats.length, TURNS.length);
      assert.ok(memory.length >= 2, `two memory updates (got ${memory.length})`);

      // Each chat request starts with the one before it, its reply after it.
      for (let i = 1; i < chats.length; i++) {
        const [before, now] = [chats[i - 1].messages, chats[i].messages];
        assert.ok(startsWith(now, before), `chat request ${i + 1} starts with request ${i}`);
        assert.equal(now[before.length].role, 'assistant', 'then the reply');
        assert.equal(now[before.length].content, LONG_REPLY);
      }
      // The summary landed after the second turn, yet the held prompts do not carry it: their
      // history holds what it covers, word for word.
      assert.ok(!JSON.stringify(chats[3].messages).includes(SUMMARY), 'the landed summary waits');
      assert.ok(JSON.stringify(chats[3].messages).includes(TURNS[0]), 'history still carries the first message');

      // The second update continues the chat prompt of the fourth turn: that prompt, its reply, then
      // the instruction (which opens like every memory request's).
      const second = memory[1].messages;
      assert.ok(startsWith(second, chats[3].messages), 'the update starts with the chat prompt it follows');
      assert.deepEqual(second[chats[3].messages.length], { role: 'assistant', content: LONG_REPLY });
      const ask = second.at(-1);
      assert.equal(ask.role, 'user');
      assert.ok(ask.content.startsWith(MEMORY_OPENING), 'the instruction comes last');
      assert.ok(ask.content.includes(TURNS[3]) && !ask.content.includes(TURNS[0]), 'it lists the new messages only');
      assert.ok(!ask.content.includes(LONG_REPLY), "the replies are in the prompt above, not listed again");
      // The turn after it starts with the same prompt the update did, so the server reads only the
      // new message.
      assert.ok(startsWith(chats[4].messages, second.slice(0, -1)), 'the next turn continues where the update began');

      // This server's replies carry no llama.cpp `timings`: it is never asked for its slots, and no
      // request carries llama.cpp's fields, which other servers may refuse.
      assert.equal(agent.requests.filter((r) => r.path === '/props').length, 0, '/props never asked');
      for (const body of [...chats, ...memory]) {
        assert.ok(!('cache_prompt' in body) && !('id_slot' in body), 'no llama.cpp fields');
      }
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('a llama.cpp server with two slots (known by its timings, then its /props): chat turns on slot 0, memory updates on slot 1, each asking for its cache', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 2 });
  try {
    await withDiagnostics(page, issues, 'prompt-reuse-slots', async () => {
      agent.setSlots(2);
      agent.setDefault({ text: 'Keep it near 24 degrees.', llamaTimings: true });
      agent.setMemoryDefault({ text: memoryReplyText({ summary: SUMMARY, entities: [] }) });
      for (const [i, text] of TURNS.slice(0, 3).entries()) {
        await sendMessage(page, text);
        await waitForAssistantCount(page, i + 1);
        if (i === 0) {
          // Its first reply showed llama.cpp's timings: the page asks the server what it has, and
          // knows it a moment later.
          await agent.waitForRequests(1, { filter: (r) => r.path === '/props' });
          await page.waitForTimeout(100);
        }
        if (i === 1) await agent.waitForRequests(1, { filter: (r) => r.kind === 'memory' });
      }
      const props = agent.requests.filter((r) => r.path === '/props');
      assert.equal(props.length, 1, 'the server is asked once');
      const [first, ...later] = agent.chatRequests();
      assert.ok(props[0].index > first.index, 'asked after its first reply showed llama.cpp timings');
      assert.ok(!('id_slot' in first.body) && !('cache_prompt' in first.body), 'the first turn went before it was known');
      for (const body of later.map((r) => r.body)) {
        assert.equal(body.cache_prompt, true, 'a chat turn asks for its cache');
        assert.equal(body.id_slot, 0, 'on the chat slot');
      }
      const memory = agent.memoryRequests().map((r) => r.body);
      assert.ok(memory.length >= 1, 'a memory update went');
      for (const body of memory) {
        assert.equal(body.cache_prompt, true, 'an update asks for its cache');
        assert.equal(body.id_slot, 1, 'on a slot of its own');
      }
      // The title goes right after the first reply, often before the server has answered: when it
      // knows the slots, beside memory.
      for (const body of agent.titleRequests().map((r) => r.body)) {
        assert.ok(!('id_slot' in body) || body.id_slot === 1, 'a title, if named, beside memory (two slots)');
      }
      assertNoPageProblems(issues);
    });
  } finally {
    agent.setSlots(1);
    await context.close();
  }
});
