// End-to-end chat journeys against the built app (DIST) and the local agent: streaming on each of the
// four protocols (with the exact request the browser sent), stop mid-stream (button and Esc), HTTP
// errors and a garbage body with retry, a connection dropped mid-stream, and a slow stream.
// Every test opens a fresh browser context (fresh IndexedDB) and resets the agent.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openConfiguredApp,
  reloadAndReopen,
  sendMessage,
  messages,
  messageText,
  waitForAssistant,
  waitForPartialReply,
  waitForLongerPartial,
  errorBannerText,
  eventually,
  assertNoPageProblems,
  withDiagnostics,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';

const SYSTEM = 'You are the end-to-end test assistant. Answer briefly.';
const QUESTION = 'What are the first few numbers?';
const REPLY = 'Here they are: one two three four five six seven eight nine ten eleven twelve thirteen fourteen.';
const KEY = 'sk-test-e2e-1234';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

/** Runs a journey in a fresh context configured for `protocol`; closes it whatever happens. */
async function journey(name, protocol, settings, fn) {
  const opened = await openConfiguredApp(harness, protocol, { systemPrompt: SYSTEM, ...settings });
  try {
    await withDiagnostics(opened.page, opened.issues, name, () => fn(opened));
  } finally {
    await opened.context.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// 1. Streaming on each protocol, and the exact request.

const userMsg = { role: 'user', content: QUESTION };

/** What each protocol's request must look like: path, headers, body. */
const PROTOCOL_CASES = {
  'openai-chat': {
    apiKey: KEY,
    path: '/v1/chat/completions',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    absentHeaders: ['x-api-key', 'anthropic-version'],
    body: (b) => {
      assert.equal(b.stream, true);
      assert.deepEqual(b.stream_options, { include_usage: true });
      assert.deepEqual(b.messages, [{ role: 'system', content: SYSTEM }, userMsg]);
    },
  },
  'openai-responses': {
    apiKey: KEY,
    path: '/v1/responses',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    absentHeaders: ['x-api-key'],
    body: (b) => {
      assert.equal(b.stream, true);
      assert.equal(b.instructions, SYSTEM);
      assert.deepEqual(b.input, [userMsg]);
      assert.equal(b.previous_response_id, undefined, 'a first turn resumes nothing');
      assert.equal(b.messages, undefined);
    },
  },
  ollama: {
    path: '/api/chat',
    headers: { 'content-type': 'application/json' },
    absentHeaders: ['authorization', 'x-api-key'],
    body: (b) => {
      assert.equal(b.stream, true);
      assert.equal(b.stream_options, undefined, 'ollama has no stream_options');
      assert.deepEqual(b.messages, [{ role: 'system', content: SYSTEM }, userMsg]);
    },
  },
  anthropic: {
    apiKey: KEY,
    path: '/v1/messages',
    headers: {
      'x-api-key': KEY,
      'anthropic-version': '2023-06-01',
      'anthropic-dangerous-direct-browser-access': 'true',
      'content-type': 'application/json',
    },
    absentHeaders: ['authorization'],
    body: (b) => {
      assert.equal(b.stream, true);
      // The system text is Anthropic's first cache breakpoint (engine::prefix keeps it stable).
      assert.deepEqual(b.system, [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }]);
      assert.deepEqual(b.messages, [userMsg]);
      assert.ok(Number.isInteger(b.max_tokens) && b.max_tokens > 0, 'anthropic requires max_tokens');
    },
  },
};

async function checkStreaming(protocol) {
  const want = PROTOCOL_CASES[protocol];
  await journey(`stream-${protocol}`, protocol, { apiKey: want.apiKey }, async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ text: REPLY, delayMs: 40 });
    await sendMessage(page, QUESTION);
    const partial = await waitForPartialReply(page, REPLY);
    assert.ok(REPLY.startsWith(partial), `streamed part is a prefix: ${JSON.stringify(partial)}`);
    assert.equal(await waitForAssistant(page), REPLY);
    assert.equal(await messageText(messages(page, 'user').last()), QUESTION);

    const requests = agent.chatRequests();
    assert.equal(requests.length, 1, 'one request per turn');
    const [req] = requests;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, want.path);
    assert.equal(req.protocol, protocol);
    for (const [name, value] of Object.entries(want.headers)) assert.equal(req.headers[name], value, `header ${name}`);
    for (const name of want.absentHeaders) assert.equal(req.headers[name], undefined, `no ${name} header`);
    assert.equal(req.body.model, 'test-model');
    want.body(req.body);
    assert.equal(req.outcome, 'complete');
    assertNoPageProblems(issues);
  });
}

for (const protocol of Object.keys(PROTOCOL_CASES)) {
  test(`streams a reply on ${protocol} and sends the protocol's exact request`, () => checkStreaming(protocol));
}

// ---------------------------------------------------------------------------------------------------
// 2. Stop mid-stream.

async function checkStop(name, stop) {
  await journey(name, 'openai-chat', {}, async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ text: REPLY, delayMs: 120 });
    await sendMessage(page, QUESTION);
    const partial = await waitForPartialReply(page, REPLY);
    await stop(page);
    const kept = await waitForAssistant(page, { status: 'interrupted' });
    assert.ok(kept.length >= partial.length, `the kept text (${kept.length}) is at least what was seen (${partial.length})`);
    assert.ok(kept.length < REPLY.length && REPLY.startsWith(kept), `a partial prefix is kept: ${JSON.stringify(kept)}`);
    await eventually(() => agent.chatRequests()[0].clientClosed, { what: 'the request to be aborted' });
    await page.locator(tid('send-button')).waitFor({ state: 'visible' });
    assert.equal(await page.locator(tid('error-banner')).count(), 0, 'a stop is not an error');

    await reloadAndReopen(page);
    assert.equal(await waitForAssistant(page, { status: 'interrupted' }), kept, 'the partial reply survives a reload');
    assert.equal(await messageText(messages(page, 'user').last()), QUESTION);
    assert.equal(agent.chatRequests().length, 1);
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  });
}

test('the stop button keeps the partial reply, marked interrupted, across a reload', () =>
  checkStop('stop-button', (page) => page.locator(tid('stop-button')).click()));

test('Esc in the composer stops the reply and keeps the partial text', () =>
  checkStop('stop-esc', (page) => page.locator(tid('composer-input')).press('Escape')));

test('a reload mid-stream keeps what was saved of the reply, marked interrupted', () =>
  journey('reload-mid-stream', 'openai-chat', {}, async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ text: REPLY, delayMs: 150 });
    await sendMessage(page, QUESTION);
    await waitForPartialReply(page, REPLY);
    await reloadAndReopen(page);
    const kept = await waitForAssistant(page, { status: 'interrupted' });
    assert.ok(kept.length > 0 && kept.length < REPLY.length && REPLY.startsWith(kept), `a saved prefix: ${JSON.stringify(kept)}`);
    await eventually(() => agent.chatRequests()[0].clientClosed, { what: 'the old page to drop its request' });
    assert.equal(agent.chatRequests().length, 1, 'the reload re-sent nothing');
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  }));

// ---------------------------------------------------------------------------------------------------
// 3. HTTP errors and a garbage body; retry re-sends the last user turn and succeeds.

async function checkErrorThenRetry(name, failure, expected, protocol = 'openai-chat') {
  await journey(name, protocol, { apiKey: KEY }, async ({ page, issues }) => {
    const { agent } = harness;
    agent.script(failure, { text: 'Recovered: the retry worked.', delayMs: 10 });
    await sendMessage(page, QUESTION);
    const banner = await errorBannerText(page);
    for (const re of expected) assert.match(banner, re);
    assert.equal(await messageText(messages(page, 'user').last()), QUESTION, 'the user message is kept');
    assert.equal(await messages(page, 'user').count(), 1);

    await page.locator(tid('retry-button')).click();
    assert.equal(await waitForAssistant(page), 'Recovered: the retry worked.');
    await page.locator(tid('error-banner')).waitFor({ state: 'hidden' });
    const requests = agent.chatRequests();
    assert.equal(requests.length, 2, 'the retry sent one more request');
    const sent = requests[1].body.messages;
    assert.deepEqual(sent.at(-1), userMsg, 'the retry re-sends the last user turn');
    assert.equal(sent.filter((m) => m.role === 'user' && m.content === QUESTION).length, 1, 'the question is sent once');
    assert.equal(sent.filter((m) => m.role === 'assistant').length, 0, 'the failed reply is not sent as history');
    assert.equal(await messages(page, 'user').count(), 1, 'retrying adds no user message');
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  });
}

test('HTTP 401 says to check the API key; retry succeeds', () =>
  checkErrorThenRetry('http-401', { status: 401 }, [/check the API key/i]));

test('HTTP 429 says rate limited and honours Retry-After; retry succeeds', () =>
  checkErrorThenRetry('http-429', { status: 429, retryAfter: 7 }, [/rate limit/i, /try again in 7 seconds/i]));

test('HTTP 500 says server error; retry succeeds', () =>
  checkErrorThenRetry('http-500', { status: 500 }, [/server error/i]));

test('a garbage 200 body is reported, not shown as a reply; retry succeeds', () =>
  checkErrorThenRetry('garbage-200', { garbage: true }, [/protocol/i]));

test('anthropic: HTTP 401 in its own error shape says to check the API key; retry succeeds', () =>
  checkErrorThenRetry('anthropic-401', { status: 401 }, [/check the API key/i], 'anthropic'));

test('ollama: a garbage 200 body is reported; retry succeeds', () =>
  checkErrorThenRetry('ollama-garbage', { garbage: true }, [/protocol/i], 'ollama'));

// ---------------------------------------------------------------------------------------------------
// 4. The connection dropped mid-stream.

test('a connection dropped mid-stream keeps the partial reply, marked interrupted, and explains', () =>
  journey('dropped', 'openai-chat', {}, async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ text: REPLY, delayMs: 60, dropAfter: 5 });
    await sendMessage(page, QUESTION);
    const kept = await waitForAssistant(page, { status: 'interrupted' });
    assert.ok(kept.length > 0 && kept.length < REPLY.length && REPLY.startsWith(kept), `partial prefix kept: ${JSON.stringify(kept)}`);
    assert.match(await errorBannerText(page), /connection dropped/i);
    assert.equal(agent.chatRequests()[0].outcome, 'dropped');
    await page.locator(tid('retry-button')).waitFor({ state: 'visible' });

    await reloadAndReopen(page);
    assert.equal(await waitForAssistant(page, { status: 'interrupted', index: 0 }), kept);

    // Retry re-asks the question; the cut-off reply is not sent as if it came before it.
    agent.script({ text: 'Complete this time.', delayMs: 5 });
    await page.locator(tid('retry-button')).click();
    assert.equal(await waitForAssistant(page), 'Complete this time.');
    const sent = agent.chatRequests()[1].body.messages;
    assert.deepEqual(sent.at(-1), userMsg);
    assert.equal(sent.filter((m) => m.role === 'user').length, 1);
    assert.equal(sent.filter((m) => m.role === 'assistant').length, 0, `nothing answered before the question: ${JSON.stringify(sent)}`);
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  }));

// ---------------------------------------------------------------------------------------------------
// 5. A slow stream: chunks 300 ms apart, multi-byte characters split across network chunks.

test('a slow stream shows progress while it grows, and the final text is exact', () =>
  // On ollama: its NDJSON carries raw UTF-8 (Go JSON), so 3-byte fragments split characters.
  journey('slow', 'ollama', {}, async ({ page, issues }) => {
    const { agent } = harness;
    const text = 'Slow café ☕ naïve 日本語 — done.';
    agent.script({ text, delayMs: 300, fragment: 3 });
    await sendMessage(page, QUESTION);
    const first = await waitForPartialReply(page, text);
    await page.locator(tid('stop-button')).waitFor({ state: 'visible' });
    const later = await waitForLongerPartial(page, text, first.length);
    assert.ok(later.startsWith(first) && text.startsWith(later), `grows by appending: ${JSON.stringify([first, later])}`);
    assert.equal(await waitForAssistant(page), text);
    assert.equal(await page.locator(tid('error-banner')).count(), 0);
    assertNoPageProblems(issues);
  }));
