// Memory on a real model (issue 12): chat goes to the scripted local agent, memory updates to a
// separate memory endpoint, llama-cpp-python's server with SmolLM2-135M (real-model.mjs), through a
// recording proxy. What a 135M model can be held to:
// - the server refuses the `json_schema` form (HTTP 500, as llama-cpp-python 0.3.36 does), the same
//   update is sent again as `json_object` + `schema`, and later updates start with that form, also
//   after a reload;
// - every memory update parses (no failure is shown; one summary version per answered update);
// - the entity named in the first message ("Zorblax") is in the graph after the first update;
// - after a reload and enough turns that the history cannot fit the budget, the last chat request
//   carries the early facts through memory, while the messages that stated them are left out;
// - memory from the past (issue 13): an imported ChatGPT conversation's memory is built on the real
//   model through "Build memory for the imported conversations": the build ends done, and the
//   stored summary and entities hold the import's own facts (names only the import states);
// - memory at a user's pace (issue 25): one server for chat and memory, at its default settings (no
//   --n_ctx: 2,048 tokens, under the app's default 8,192), the next message 1.5 s after each reply: updates give way to the chat turns (no memory failure is shown and
//   none is recorded) and land once the server is idle, a summary and entities in the end;
// - memory about you (issue 26): what she said about herself in one conversation, at her pace, is in
//   the first request of a new one, in its "About the user" section (the facts are taken by rules from
//   her messages, not by the model, so a 135M model loses none);
// - a server at its default settings (issue 41): llama-cpp-python holds 2,048 tokens where Settings
//   say 8,192; the prompt that outgrows it gets an empty stream, the page asks why (one token, not
//   streamed), learns the window from the refusal and sends the same turn again, fitted.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer, startRecordingProxy } from './real-model.mjs';
import { TITLE_OPENING } from './agent-server.mjs';
import {
  startHarness,
  newAppPage,
  openApp,
  configureSettings,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  waitForAssistantCount,
  REPLY_ENDED,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
  BROWSER_NETWORK_NOISE,
  openAdvanced,
} from './helpers.mjs';

const LONG_REPLY = Array.from({ length: 12 }, (_, i) =>
  `Point ${i + 1}: that depends on the conditions around you, on how much time you have and on what you want in the end, so start small and adjust.`,
).join(' ');
const FACTS = ['I have a cat called Zorblax.', 'I live in Trondheim, in Norway.'];
const FILLER = [
  'How do ocean tides work, and why are there two of them each day?',
  'What is the difference between baking soda and baking powder?',
  'How do I keep basil alive on a windowsill in winter?',
  'Why is the sky blue during the day and red at sunset?',
];
const FINAL = 'Before we stop: what do you remember about me?';
// One update of a looping 135M model under a grammar can take minutes on a busy 2-core machine.
const UPDATE_TIMEOUT = 600_000;

let harness;
let model;
let proxy;
before(async () => {
  model = await startModelServer();
  proxy = await startRecordingProxy(model.url);
  harness = await startHarness();
});
after(async () => {
  await harness?.close();
  await proxy?.close();
  await model?.close();
});

/** The title the model writes after a first reply goes where memory updates go: it is neither a chat
 * turn nor a memory update. */
const isTitle = (r) => r.body?.messages?.some((m) => typeof m.content === 'string' && m.content.startsWith(TITLE_OPENING)) ?? false;
const memoryRecords = () => proxy.records.filter((r) => r.method === 'POST' && !isTitle(r));
const formOf = (r) => r.body?.response_format?.type ?? 'none';

/** Waits until no memory update runs and every memory request has been answered. */
async function memorySettled(page, count) {
  await eventually(
    async () => memoryRecords().length >= count && memoryRecords().every((r) => r.status !== null)
      && (await page.locator(tid('memory-updating')).count()) === 0,
    { timeout: UPDATE_TIMEOUT, interval: 250, what: `${count} memory request(s) answered` },
  );
}

async function setMemoryEndpoint(page) {
  await page.locator(tid('settings-open')).click();
  await openAdvanced(page);
  await page.locator(tid('settings-context-tokens')).fill('1400');
  await page.locator(tid('settings-reply-reserve')).fill('400');
  await page.locator(tid('settings-memory-model-section')).locator('summary').click();
  await page.locator(tid('settings-memory-endpoint-url')).fill(`${proxy.url}/v1`);
  await page.locator(tid('settings-memory-model')).fill(model.model);
  await page.locator(tid('settings-save')).click();
  await page.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden' });
}

async function turn(page, text, count) {
  await sendMessage(page, text);
  await waitForAssistantCount(page, count, { status: REPLY_ENDED });
}

/** Every update parsed: a failed one stays in the memory pane until the next one succeeds, and each
 * update is waited for before the next turn. */
async function noFailure(page, what) {
  assert.equal(await page.locator(tid('memory-failure')).count(), 0, `no memory update failed (${what})`);
}

test('memory on SmolLM2-135M: constrained updates parse, the form is remembered, early facts survive through memory', { timeout: 2_400_000 }, async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1, recentCount: 2 });
  try {
    await withDiagnostics(page, issues, 'real-model-memory', async () => {
      agent.setDefault(LONG_REPLY);
      await setMemoryEndpoint(page);

      // First update: json_schema is refused, the same update goes out as json_object + schema.
      await turn(page, FACTS[0], 1);
      await memorySettled(page, 2);
      await noFailure(page, 'first update');
      assert.deepEqual(memoryRecords().map((r) => [formOf(r), r.status]), [['json_schema', 500], ['json_object', 200]]);
      assert.equal(memoryRecords()[1].body.temperature, 0);
      assert.ok(memoryRecords()[1].body.max_tokens > 0, 'the memory request always bounds its reply');
      assert.equal(agent.memoryRequests().length, 0, 'memory goes to the memory endpoint, not the chat endpoint');
      await page.locator(tid('memory-entities')).locator(tid('entity-node')).first().waitFor({ state: 'visible' });
      const names = await page.locator(tid('memory-entities')).locator(tid('entity-name')).allInnerTexts();
      assert.ok(names.some((n) => /zorblax/i.test(n)), `Zorblax is in the graph after the first update: ${names}`);

      // The form that worked is remembered, also after a reload.
      await turn(page, FACTS[1], 2);
      await memorySettled(page, 3);
      await noFailure(page, 'second update');
      assert.equal(formOf(memoryRecords()[2]), 'json_object');
      await reloadAndReopen(page);
      let n = 2;
      for (const text of FILLER) {
        n += 1;
        const before = memoryRecords().length;
        await turn(page, text, n);
        await memorySettled(page, before + 1);
        await noFailure(page, text);
      }
      const memory = memoryRecords().slice(1);
      assert.ok(memory.every((r) => formOf(r) === 'json_object' && r.status === 200), 'one form, no refusal after the first');

      assert.ok(memory.length >= 5, `every turn's update ran: ${memory.length}`);

      // The last chat request carries the early facts through memory, not through history.
      const chatBefore = agent.chatRequests().length;
      await turn(page, FINAL, n + 1);
      await eventually(() => agent.chatRequests().length > chatBefore, { what: 'the final chat request' });
      const last = agent.chatRequests().at(-1).body.messages;
      const users = last.filter((m) => m.role === 'user').map((m) => m.content);
      for (const fact of FACTS) assert.ok(!users.includes(fact), `"${fact}" was dropped from the history`);
      // Only memory can carry them now: the scripted replies never name them.
      const memoryText = last.map((m) => m.content).join('\n');
      assert.match(memoryText, /Zorblax/i, 'the cat is remembered');
      assert.match(memoryText, /Trondheim/i, 'the city is remembered');
      // The one refused request (json_schema, HTTP 500) is the browser's only console complaint.
      assertNoPageProblems(issues, { allowConsole: [/status of 500/] });
    });
  } finally {
    await context.close();
  }
});

/** The text of a streamed openai-chat reply (its `data:` chunks' content). */
/** One line per request, for a failure's message: when, what kind, how it ended, what came back. */
/**
 * `waitForAssistantCount` for `n` replies; on a timeout, the failure says what the server was sent
 * since `from` (the proxy's records), each request's span, kind, status and first words, and the tail
 * of the server's own output: what held the reply up.
 */
async function repliesShown(page, n, from = 0, { via = proxy, server = model } = {}) {
  try {
    await waitForAssistantCount(page, n, { status: REPLY_ENDED, timeout: UPDATE_TIMEOUT });
  } catch (e) {
    assert.fail(`${e.message}\nrequests:\n${requestLog(via.records.slice(from))}\nserver:\n${server.log().slice(-2000)}`);
  }
}

function requestLog(records) {
  const t0 = records[0]?.at ?? 0;
  return records.filter((r) => r.method === 'POST').map((r) => {
    const kind = isTitle(r) ? 'title' : r.body?.response_format ? `update(${formOf(r)})` : 'chat';
    const span = `${((r.at - t0) / 1000).toFixed(1)}s..${r.ended ? ((r.ended - t0) / 1000).toFixed(1) : '?'}s`;
    return `  ${span} ${kind} ${r.status}${r.left ? ' (client left)' : ''} ${JSON.stringify((replyText(r.response) || r.response).slice(0, 160))}`;
  }).join('\n');
}

function replyText(sse) {
  return sse.split('\n').filter((l) => l.startsWith('data: {')).map((l) => {
    try {
      return JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? '';
    } catch {
      return '';
    }
  }).join('');
}

/** A ChatGPT export of one conversation: two exchanges stating facts nothing else in the test says. */
function importedChat() {
  const turns = [
    ['user', 'My name is Ingrid and I keep alpacas on a farm near Tromsø.'],
    ['assistant', 'Alpacas near Tromsø, that sounds lovely. How many do you have?'],
    ['user', 'Eleven alpacas. The oldest one is called Biscuit.'],
    ['assistant', 'Biscuit must be well known on the farm, then.'],
  ];
  const mapping = { root: { id: 'root', parent: null, children: ['m0'], message: null } };
  turns.forEach(([role, text], i) => {
    mapping[`m${i}`] = {
      id: `m${i}`, parent: i ? `m${i - 1}` : 'root', children: i + 1 < turns.length ? [`m${i + 1}`] : [],
      message: { id: `m${i}`, author: { role }, create_time: 1_700_000_000 + i, content: { content_type: 'text', parts: [text] }, metadata: {}, recipient: 'all' },
    };
  });
  return { turns, file: JSON.stringify([{ id: 'farm', title: 'The farm', create_time: 1_700_000_000, mapping, current_node: `m${turns.length - 1}` }]) };
}

test('memory from the past on SmolLM2-135M: an imported conversation becomes a summary and entities of its own facts', { timeout: 1_200_000 }, async () => {
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 5, recentCount: 2 });
  try {
    await withDiagnostics(page, issues, 'real-model-memory-build', async () => {
      await setMemoryEndpoint(page);
      const before = memoryRecords().length;
      const { turns, file } = importedChat();
      await page.locator(tid('export-button')).click();
      await page.locator(tid('import-input')).setInputFiles({ name: 'conversations.json', mimeType: 'application/json', buffer: Buffer.from(file) });
      await page.locator(tid('import-confirm')).click();
      await page.locator(tid('notice')).filter({ hasText: 'Imported 1 conversation' }).waitFor({ state: 'visible' });
      await page.locator(tid('memory-build-all')).click();
      const line = page.locator(`${tid('memory-build-progress')}[data-state="done"]`);
      await line.waitFor({ state: 'visible', timeout: UPDATE_TIMEOUT });
      assert.match(await line.innerText(), /1 conversation up to date, 1 update written/);
      // Two exchanges are one part: one update (a refused json_schema form first, then json_object).
      const sent = memoryRecords().slice(before);
      assert.ok(sent.length >= 1 && sent.length <= 2, `${sent.length} memory request(s)`);
      assert.equal(sent.at(-1).status, 200);
      assert.ok(JSON.stringify(sent.at(-1).body).includes('Biscuit'), 'the update read the imported messages');

      await page.locator(tid('conversation-item')).filter({ hasText: 'The farm' }).click();
      await page.locator(tid('summary-text')).waitFor({ state: 'visible' });
      const summary = await page.locator(tid('summary-text')).innerText();
      assert.match(summary, /Ingrid|alpaca|Troms|Biscuit/i, `the summary holds the import's facts: ${summary}`);
      await page.locator(tid('memory-entities')).locator(tid('entity-node')).first().waitFor({ state: 'visible' })
        .catch(() => assert.fail(`no entity; the model replied: ${replyText(sent.at(-1).response)}`));
      const names = await page.locator(tid('memory-entities')).locator(tid('entity-name')).allInnerTexts();
      const said = turns.map(([, text]) => text).join(' ').toLowerCase();
      const grounded = names.filter((n) => n.trim() && said.includes(n.trim().toLowerCase()));
      assert.ok(grounded.length > 0, `an entity named in the import: ${JSON.stringify(names)}`);
      assert.equal(await page.locator(tid('memory-failure')).count(), 0, 'the update did not fail');
      assertNoPageProblems(issues, { allowConsole: [/status of 500/] });
    });
  } finally {
    await context.close();
  }
});

/** A user who tells the agent about herself, and later that two things changed. */
const PACE = [
  'Hi, I am Marta. I live in Lisbon and I work as a nurse.',
  'My daughter Sofia is seven and she loves drawing horses.',
  'I am allergic to penicillin, so I always tell my doctors.',
  'Give me one tip for sleeping better.',
  'I moved to Oslo last month, so I live in Oslo now.',
  'I am a pilot now; I changed careers this year.',
];

test('memory at a user\'s pace on SmolLM2-135M: one server for chat and memory, at its default settings, the next message 1.5 s after each reply', { timeout: 2_400_000 }, async () => {
  // llama-cpp-python as a user starts it: no --n_ctx, so it holds 2,048 tokens. The app's context is
  // set to 1,400 tokens, 400 for the reply: the conversation outgrows its history window within a few
  // turns, and each update after a reply is a prompt of its own (its span ends before the newest reply:
  // not a continuation of the chat prompt). At the app's default 8,192 the updates continue the chat
  // prompt, and SmolLM2-135M, reading a chat of its own looping replies, wrote (in both runs tried)
  // entities with looping ids that nothing grounds; the summary still landed, Lisbon past.
  const small = await startModelServer({ ctx: null });
  const front = await startRecordingProxy(small.url);
  const at = { via: front, server: small };
  const opened = await newAppPage(harness.browser);
  const { context, page, issues } = opened;
  try {
    await withDiagnostics(page, issues, 'real-model-pace', async () => {
      await openApp(page, harness.site.url);
      await configureSettings(page, { url: `${front.url}/v1`, protocol: 'openai-chat', model: small.model, summaryFrequency: 1, recentCount: 2 });
      await page.locator(tid('settings-open')).click();
      await openAdvanced(page);
      await page.locator(tid('settings-context-tokens')).fill('1400');
      await page.locator(tid('settings-reply-reserve')).fill('400');
      await page.locator(tid('settings-save')).click();
      await page.locator(tid('settings-endpoint-url')).waitFor({ state: 'hidden' });
      const before = front.records.length;
      let n = 0;
      for (const text of PACE) {
        n += 1;
        await sendMessage(page, text);
        await repliesShown(page, n, before, at);
        // The user reads the reply and sends the next message 1.5 s later.
        await new Promise((r) => setTimeout(r, 1500));
      }
      const sent = front.records.slice(before).filter((r) => r.method === 'POST' && !isTitle(r));
      const chats = sent.filter((r) => !r.body?.response_format);
      const asked = [...new Set(chats.filter((r) => r.body.stream).map((r) => r.body.messages.at(-1).content))];
      assert.deepEqual(asked, PACE, 'every message went to the one server');
      // A prompt that outgrew the server: the refusal was asked for once (not streamed, one token)
      // and the same message went again, fitted; nothing else went twice.
      const probes = chats.filter((r) => !r.body.stream);
      assert.ok(probes.every((r) => r.status === 400 && r.body.max_tokens === 1), `only probes went unstreamed:\n${requestLog(sent)}`);
      assert.equal(chats.length, PACE.length + 2 * probes.length, `each refused turn went again once:\n${requestLog(sent)}`);
      // Once the server is idle after the last reply, the update that gave way runs and lands.
      // At least up to her move (the fifth reply); later updates may still be on their way.
      const moved = 2 * PACE.findIndex((t) => t.includes('Oslo')) + 2;
      const upTo = async () => Number((/up to #(\d+)/.exec(await page.locator(tid('summary-meta')).innerText().catch(() => '')) ?? [])[1] ?? 0);
      await eventually(
        async () => (await page.locator(tid('memory-updating')).count()) === 0
          && front.records.slice(before).every((r) => r.status !== null)
          && (await upTo()) >= moved,
        { timeout: UPDATE_TIMEOUT, interval: 250, what: `a summary up to message #${moved} once the server is idle` },
      ).catch(async (e) => {
        const meta = await page.locator(tid('summary-meta')).innerText().catch(() => '(no summary)');
        const failure = await page.locator(tid('memory-failure')).innerText().catch(() => '(none)');
        assert.fail(`${e.message}\nsummary: ${meta}\nmemory failure: ${failure}\nrequests:\n${requestLog(front.records.slice(before))}`);
      });
      await noFailure(page, 'at a user\'s pace');
      assert.equal(await page.locator(tid('error-banner')).count(), 0, 'no error was shown');
      const summary = await page.locator(tid('summary-text')).innerText();
      assert.match(summary, /Marta|Sofia|penicillin|Oslo|pilot/i, `the summary holds what she said: ${summary}`);
      const replies = () => front.records.slice(before).filter((r) => r.body?.response_format?.type === 'json_object')
        .map((r) => `${r.status} ${r.body.messages.length} messages, last: ${JSON.stringify(r.body.messages.at(-1).content.slice(0, 200))}\n  => ${replyText(r.response)}`).join('\n');
      await page.locator(tid('memory-entities')).locator(tid('entity-node')).first().waitFor({ state: 'visible' })
        .catch((e) => assert.fail(`${e.message}\nrequests:\n${requestLog(front.records.slice(before))}\nthe updates:\n${replies()}`));
      const updates = sent.filter((r) => r.body?.response_format);
      assert.ok(updates.length >= 1, 'memory updates went to the same server');
      // She moved: Lisbon is shown as past (struck through), Oslo as current.
      const sentences = page.locator(tid('memory-summary')).locator(tid('summary-sentence'));
      const lisbon = await sentences.filter({ hasText: 'Lisbon' }).evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
      const shown = async () => {
        await page.locator(tid('summary-versions-toggle')).click().catch(() => {});
        const versions = await page.locator(tid('summary-versions')).innerText().catch(() => '');
        return `${await page.locator(tid('summary-text')).innerText()}\n${await page.locator(tid('summary-meta')).innerText()}\nversions:\n${versions}`;
      };
      assert.ok(lisbon.every((s) => s === 'past'), `every Lisbon sentence is past: ${lisbon}\n${await shown()}\nthe updates:\n${replies()}`);
      const oslo = await sentences.filter({ hasText: 'Oslo' }).evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
      assert.ok(oslo.includes('current'), `Oslo is current: ${oslo}\n${await shown()}\nthe updates:\n${replies()}`);
      // The next request carries what she said, and Lisbon only as past.
      const before2 = front.records.length;
      await sendMessage(page, 'Where do I live now, and what should my doctor know?');
      await repliesShown(page, PACE.length + 1, before, at);
      const next = front.records.slice(before2).find((r) => r.method === 'POST' && !r.body?.response_format);
      const text = next.body.messages.map((m) => m.content).join('\n');
      for (const fact of ['Marta', 'Sofia', 'penicillin', 'Oslo']) assert.ok(text.includes(fact), `the request carries ${fact}: ${text}`);
      // What memory carries (the system text; history is what was said, in order).
      const memoryText = next.body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
      const stale = memoryText.split(/(?<=[.!?])\s+|\n/).filter((x) => x.includes('Lisbon') && !x.includes('until'));
      assert.deepEqual(stale, [], 'Lisbon is never carried as current');
      // The server cuts a running update when a chat request waits (interrupt_requests=True): the app
      // stops it first, and what came back of those was never counted as a failure (checked above).
      assertNoPageProblems(issues, { allowConsole: [/status of 500/, ...BROWSER_NETWORK_NOISE] });
    });
  } finally {
    await context.close();
    await front.close();
    await small.close();
  }
});

/** What a user tells the agent about herself in one conversation, at her pace. */
const ABOUT_HER = [
  'Hi, I am Marta. I live in Lisbon and I work as a nurse.',
  'My daughter Sofia is seven and she loves drawing horses.',
  'I am allergic to penicillin, so I always tell my doctors.',
  'Give me one tip for sleeping better.',
];

test('memory about you on SmolLM2-135M: what she said in one conversation is in the first request of the next', { timeout: 2_400_000 }, async () => {
  const opened = await newAppPage(harness.browser);
  const { context, page, issues } = opened;
  try {
    await withDiagnostics(page, issues, 'real-model-cross', async () => {
      await openApp(page, harness.site.url);
      // One server for chat and memory, its default settings; the app's default settings (a budget
      // of 8,192 - 1,024 tokens, a tenth of it for the facts about her: all five fit).
      await configureSettings(page, { url: `${proxy.url}/v1`, protocol: 'openai-chat', model: model.model });
      let n = 0;
      for (const text of ABOUT_HER) {
        n += 1;
        await sendMessage(page, text);
        await repliesShown(page, n);
        await new Promise((r) => setTimeout(r, 1500));
      }
      // New, and the question the seed documents were written about.
      await page.locator(tid('new-conversation')).click();
      await page.locator(tid('message')).first().waitFor({ state: 'detached' });
      const before = proxy.records.length;
      await sendMessage(page, 'What is my name and where do I live? What do you remember about me?');
      await repliesShown(page, 1, before);
      const first = proxy.records.slice(before).find((r) => r.method === 'POST' && !r.body?.response_format);
      assert.ok(first, 'the new conversation sent its first request');
      const system = first.body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
      const at = system.indexOf('## About the user');
      assert.ok(at >= 0, `the first request carries the facts about her: ${system}`);
      const facts = system.slice(at);
      for (const fact of ['Marta', 'Lisbon', 'nurse', 'Sofia', 'penicillin']) {
        assert.ok(facts.includes(fact), `the first request of the new conversation carries ${fact}: ${facts}`);
      }
      assert.ok(!facts.includes('sleeping'), `a request is not a fact about her: ${facts}`);
      assert.equal(first.body.messages.filter((m) => m.role === 'user').length, 1, 'the other conversation is not replayed as history');
      // The inspector says so: "About you", with the facts counted.
      const row = page.locator(tid('inspector-section', '[data-section="user-facts"]'));
      await row.waitFor({ state: 'attached' });
      assert.match(await row.textContent(), /About you.*\d+ facts?/);
      assertNoPageProblems(issues, { allowConsole: [/status of 500/, ...BROWSER_NETWORK_NOISE] });
    });
  } finally {
    await context.close();
  }
});

/** About `tokens` tokens of plain English (SmolLM2's tokenizer reads about four characters a token). */
function prose(tokens, topic) {
  const sentences = [
    `The ${topic} was built on a rock at the edge of the harbour, and its light could be seen for miles.`,
    `Every evening the keeper climbed the stairs, cleaned the lens and checked the oil before dark.`,
    `In winter the storms came from the north, and the waves broke over the lower windows.`,
    `Ships passing the ${topic} would signal with their horns, and the keeper answered with the bell.`,
    `The logbook recorded the weather, the ships that passed, and every repair made to the lamp.`,
  ];
  let out = '';
  for (let i = 0; out.length < tokens * 4; i++) out += `${sentences[i % sentences.length]} (${i + 1}) `;
  return out.trim();
}

test('a server at its default settings on SmolLM2-135M: llama-cpp-python holds 2,048 tokens, the page learns it from the refusal and the turn goes again, fitted', { timeout: 1_800_000 }, async () => {
  const small = await startModelServer({ ctx: null });
  const front = await startRecordingProxy(small.url);
  const opened = await newAppPage(harness.browser);
  const { context, page, issues } = opened;
  try {
    await withDiagnostics(page, issues, 'real-model-window', async () => {
      await openApp(page, harness.site.url);
      // The app's own defaults: 8,192 tokens of context, 1,024 kept for the reply, a message carried
      // up to 2,000 characters (about 470 tokens here): the fifth prompt at the latest outgrows 2,048.
      await configureSettings(page, { url: `${front.url}/v1`, protocol: 'openai-chat', model: small.model });
      const topics = ['lighthouse', 'harbour', 'keeper', 'storm', 'logbook', 'bell'];
      const chats = () => front.records.filter((r) => r.method === 'POST' && !isTitle(r) && !r.body?.response_format);
      const refused = () => chats().some((r) => !r.body.stream && r.status === 400);
      let n = 0;
      for (const topic of topics) {
        n += 1;
        await sendMessage(page, `My notes on the ${topic}: ${prose(470, topic).slice(0, 1900)} What do you make of it?`);
        await waitForAssistantCount(page, n, { status: REPLY_ENDED, timeout: 600_000 }).catch((e) => {
          const log = front.records.map((r) => `${r.method} ${r.path} ${r.body?.stream ? 'stream' : 'plain'} ${r.body?.response_format ? 'memory ' : ''}${r.status} ${JSON.stringify(r.response.slice(0, 160))}`);
          assert.fail(`${e.message}\nrequests:\n${log.join('\n')}`);
        });
        if (refused()) break;
      }
      const sent = chats();
      const shape = sent.map((r) => `${r.body.stream ? 'stream' : 'plain'} ${r.status} ${r.body.stream && r.status === 200 && r.response.trim() === '' ? 'empty' : 'said'}`);
      // The prompt that outgrew the server: an empty stream, the probe's refusal, the same turn again.
      const at = shape.indexOf('stream 200 empty');
      assert.ok(at >= 1, `a prompt outgrew the server:\n${shape.join('\n')}`);
      assert.deepEqual(shape, [...Array(at).fill('stream 200 said'), 'stream 200 empty', 'plain 400 said', 'stream 200 said']);
      const [, probe, again] = sent.slice(at);
      assert.match(probe.response, /maximum context length is 2048 tokens/);
      assert.equal(probe.body.max_tokens, 1);
      const last = page.locator(tid('message', '[data-role="assistant"]')).last();
      assert.notEqual(await last.getAttribute('data-status'), 'error', 'the refused turn was answered');
      assert.equal(await page.locator(tid('error-banner')).count(), 0, 'no error was shown');
      assert.ok(again.body.max_tokens < 1024, `the reply cap fits the window: ${again.body.max_tokens}`);
      assert.equal(again.body.messages.at(-1).content, sent[at].body.messages.at(-1).content, 'the same question went again');
    });
    assertNoPageProblems(issues, { allowConsole: [/status of 400/, ...BROWSER_NETWORK_NOISE] });
  } finally {
    await context.close();
    await front.close();
    await small.close();
  }
});
