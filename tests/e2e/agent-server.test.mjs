// Self-tests of the local agent endpoint (no browser): wire formats, scripting, errors, CORS, recording.

import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgentServer, memoryReplyText, MEMORY_MARKER, MEMORY_OPENING, TITLE_OPENING } from './agent-server.mjs';
import { splitText, pythonJson } from './encoders.mjs';
import { rawRequest, parseSse, parseNdjson } from './wire.mjs';

const FIXTURE_PATH = findFixture('openai-chat-llamacpp-python.sse');

/**
 * FIXTURES_DIR, else the nearest `shared/fixtures/` above this directory (shared/ sits beside the
 * repo), else the repo's own byte-for-byte copy in tests/fixtures/.
 */
function findFixture(name) {
  if (process.env.FIXTURES_DIR) return join(process.env.FIXTURES_DIR, name);
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; dirname(dir) !== dir; dir = dirname(dir)) {
    const candidate = join(dir, 'shared', 'fixtures', name);
    if (existsSync(candidate)) return candidate;
  }
  const copy = join(here, '..', 'fixtures', name);
  if (existsSync(copy)) return copy;
  throw new Error(`fixture ${name} not found: set FIXTURES_DIR`);
}

let agent;
before(async () => {
  agent = await startAgentServer();
});
after(() => agent.close());
beforeEach(() => agent.reset());

const chatBody = (extra = {}) => ({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }], ...extra });
const post = (path, body, headers) => rawRequest(agent.url, { path, body, headers });

/** The chunks of an openai-chat stream as JSON, `[DONE]` excluded (checked separately). */
function chatChunks(text) {
  const events = parseSse(text);
  assert.equal(events.at(-1).data, '[DONE]');
  return events.slice(0, -1).map((e) => JSON.parse(e.data));
}

const deltasOf = (chunks) => chunks.map((c) => c.choices[0]?.delta.content).filter((c) => c !== undefined);

function loadFixture() {
  const bytes = readFileSync(FIXTURE_PATH);
  const chunks = chatChunks(bytes.toString('utf8'));
  return { bytes, chunks, text: deltasOf(chunks).join('') };
}

// --- openai-chat -------------------------------------------------------------------------------------

test('openai-chat stream is byte-identical to the recorded llama-cpp-python fixture', async () => {
  const fixture = loadFixture();
  const { id, created, model } = fixture.chunks[0];
  agent.script({ text: fixture.text, id, created, model });
  const res = await post('/v1/chat/completions', chatBody({ stream_options: { include_usage: true } }));
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(res.bytes.toString('utf8'), fixture.bytes.toString('utf8'));
  assert.ok(res.bytes.equals(fixture.bytes));
});

test('the default word split reproduces the fixture token boundaries', () => {
  const fixture = loadFixture();
  assert.deepEqual(splitText(fixture.text), deltasOf(fixture.chunks));
});

function checkSplit(text, opts, expected) {
  const pieces = splitText(text, opts);
  assert.equal(pieces.join(''), text);
  if (expected) assert.deepEqual(pieces, expected);
}

test('splitText always joins back to the text', () => {
  checkSplit('', {}, []);
  checkSplit('héllo wörld 😀😀 日本語 — ok?', {});
  checkSplit('a\r\n\tb  c\u2028d', {});
  checkSplit('😀ab', { chunkSize: 1 }, ['😀', 'a', 'b']);
  checkSplit('abcde', { chunkSize: 2 }, ['ab', 'cd', 'e']);
  checkSplit('xy', { chunks: ['x', 'y'] }, ['x', 'y']);
});

test('pythonJson matches json.dumps(ensure_ascii=True)', () => {
  assert.equal(pythonJson({ a: 'é😀', b: [1, null, true], c: '\u0001"\\\n\u007f' }), '{"a": "\\u00e9\\ud83d\\ude00", "b": [1, null, true], "c": "\\u0001\\"\\\\\\n\\u007f"}');
});

test('openai-chat sends non-ASCII as \\uXXXX escapes with surrogate pairs', async () => {
  const text = 'Grüße 😀 日本';
  agent.script({ text, chunkSize: 2 });
  const res = await post('/chat/completions', chatBody());
  const raw = res.bytes.toString('utf8');
  assert.match(raw, /\\u00fc/);
  assert.match(raw, /\\ud83d\\ude00/);
  assert.ok(/^[\x00-\x7f]*$/.test(raw), 'the stream is pure ASCII');
  const chunks = chatChunks(raw);
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant' });
  assert.deepEqual(chunks.at(-1).choices[0], { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
  assert.equal(deltasOf(chunks).join(''), text);
});

test('openai-chat usage chunk only when asked and honoured', async () => {
  const check = async (honourUsage, include, expectUsage) => {
    agent.script({ text: 'one two', honourUsage, usage: { input: 7, output: 2 } });
    const res = await post('/v1/chat/completions', chatBody(include ? { stream_options: { include_usage: true } } : {}));
    const last = chatChunks(res.bytes.toString('utf8')).at(-1);
    if (expectUsage) assert.deepEqual([last.choices, last.usage], [[], { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 }]);
    else assert.equal(last.usage, undefined);
  };
  await check(true, true, true);
  await check(true, false, false);
  await check(false, true, false);
});

// --- non-streaming bodies ----------------------------------------------------------------------------

async function checkComplete(path, body, extract) {
  agent.script({ text: 'Plain <reply> & done' });
  const res = await post(path, body);
  assert.equal(res.status, 200);
  assert.equal(extract(JSON.parse(res.bytes.toString('utf8'))), 'Plain <reply> & done');
}

test('each protocol answers stream:false with one JSON body', async () => {
  const messages = [{ role: 'user', content: 'hi' }];
  await checkComplete('/v1/chat/completions', { model: 'm', messages }, (b) => b.choices[0].message.content);
  await checkComplete('/v1/responses', { model: 'm', input: 'hi' }, (b) => b.output[0].content[0].text);
  await checkComplete('/api/chat', { model: 'm', messages, stream: false }, (b) => b.message.content);
  await checkComplete('/v1/messages', { model: 'm', max_tokens: 9, messages }, (b) => b.content[0].text);
});

// --- openai-responses --------------------------------------------------------------------------------

const RESPONSES_ORDER = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.content_part.done',
  'response.output_item.done',
  'response.completed',
];

async function streamResponses(body) {
  const res = await post('/v1/responses', { model: 'm', stream: true, input: 'hi', ...body });
  if (res.status !== 200) return { res };
  const events = parseSse(res.bytes.toString('utf8'));
  const data = events.map((e) => JSON.parse(e.data));
  events.forEach((e, i) => assert.equal(e.event, data[i].type, 'event: line and data.type agree'));
  return { res, events, data, completed: data.at(-1).response };
}

test('openai-responses streams the documented events in order with sequence numbers', async () => {
  agent.script({ text: 'Bonjour à tous', usage: { input: 11, output: 3 } });
  const { data, completed } = await streamResponses({});
  const collapsed = data.map((d) => d.type).filter((t, i, all) => t !== all[i - 1]);
  assert.deepEqual(collapsed, RESPONSES_ORDER);
  assert.deepEqual(data.map((d) => d.sequence_number), data.map((_, i) => i));
  const deltas = data.filter((d) => d.type === 'response.output_text.delta').map((d) => d.delta);
  assert.equal(deltas.join(''), 'Bonjour à tous');
  assert.match(completed.id, /^resp_[0-9a-f]{48}$/);
  assert.equal(completed.status, 'completed');
  assert.equal(completed.output[0].content[0].text, 'Bonjour à tous');
  assert.deepEqual([completed.usage.input_tokens, completed.usage.output_tokens, completed.usage.total_tokens], [11, 3, 14]);
  assert.deepEqual(agent.issuedResponseIds(), [completed.id]);
});

test('openai-responses continues a known previous_response_id and refuses an unknown one', async () => {
  const first = await streamResponses({});
  const prev = first.completed.id;
  const resumed = await streamResponses({ previous_response_id: prev });
  assert.equal(resumed.completed.previous_response_id, prev);

  agent.script('queued reply survives the 400');
  const missing = await streamResponses({ previous_response_id: 'resp_doesnotexist' });
  assert.equal(missing.res.status, 400);
  assert.deepEqual(JSON.parse(missing.res.bytes.toString('utf8')), {
    error: {
      message: "Previous response with id 'resp_doesnotexist' not found.",
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    },
  });
  assert.equal(agent.pending(), 1);
  assert.equal(agent.requests.at(-1).outcome, 'previous-not-found');
});

test('openai-responses ids can be expired, forgotten, or not stored', async () => {
  const check = async (setup, expectedStatus) => {
    const first = await streamResponses(setup.body ?? {});
    setup.after?.(first.completed.id);
    const next = await streamResponses({ previous_response_id: first.completed.id });
    assert.equal(next.res.status, expectedStatus);
  };
  await check({}, 200);
  await check({ after: (id) => agent.expireResponseIds(id) }, 400);
  await check({ after: () => agent.expireResponseIds() }, 400);
  await check({ body: { store: false } }, 400);
  agent.script({ forget: true });
  await check({}, 400);
});

// --- ollama ------------------------------------------------------------------------------------------

test('ollama streams NDJSON lines and a final done line, with Go JSON escaping', async () => {
  agent.script({ text: 'a <b> & c', usage: { input: 5, output: 4 } });
  const res = await post('/api/chat', { model: 'llama3.2', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(res.headers['content-type'], 'application/x-ndjson');
  const raw = res.bytes.toString('utf8');
  for (const escaped of ['\\u003c', '\\u003e', '\\u0026']) assert.ok(raw.includes(escaped), escaped);
  assert.ok(!/[<>&]/.test(raw), 'no raw HTML characters');
  const lines = parseNdjson(raw);
  const final = lines.at(-1);
  assert.ok(lines.slice(0, -1).every((l) => l.done === false && l.model === 'llama3.2' && l.message.role === 'assistant'));
  assert.equal(lines.map((l) => l.message.content).join(''), 'a <b> & c');
  assert.deepEqual([final.done, final.done_reason, final.prompt_eval_count, final.eval_count], [true, 'stop', 5, 4]);
  for (const key of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration']) assert.ok(Number.isInteger(final[key]), key);
  assert.match(final.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
});

test('ollama GET /api/tags and openai GET /v1/models list the models', async () => {
  const tags = JSON.parse((await rawRequest(agent.url, { method: 'GET', path: '/api/tags' })).bytes);
  assert.deepEqual(tags.models.map((m) => m.name), ['test-model']);
  const models = JSON.parse((await rawRequest(agent.url, { method: 'GET', path: '/v1/models' })).bytes);
  assert.deepEqual([models.object, models.data[0].id, models.data[0].object], ['list', 'test-model', 'model']);
});

// --- anthropic ---------------------------------------------------------------------------------------

test('anthropic streams message_start .. message_stop with text deltas', async () => {
  agent.script({ text: 'Hi there, friend', usage: { input: 9, output: 4 } });
  const res = await post('/v1/messages', { model: 'claude-x', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const events = parseSse(res.bytes.toString('utf8'));
  const data = events.map((e) => JSON.parse(e.data));
  const collapsed = events.map((e) => e.event).filter((t, i, all) => t !== all[i - 1]);
  assert.deepEqual(collapsed, ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  events.forEach((e, i) => assert.equal(e.event, data[i].type));
  assert.match(data[0].message.id, /^msg_01/);
  assert.equal(data[0].message.usage.input_tokens, 9);
  const text = data.filter((d) => d.type === 'content_block_delta').map((d) => (assert.equal(d.delta.type, 'text_delta'), d.delta.text));
  assert.equal(text.join(''), 'Hi there, friend');
  const delta = data.find((d) => d.type === 'message_delta');
  assert.deepEqual([delta.delta.stop_reason, delta.usage.output_tokens], ['end_turn', 4]);
});

// --- errors, garbage, drop, stall, delay --------------------------------------------------------------

async function checkHttpError(path, reply, status, bodyCheck, headerCheck = () => {}) {
  agent.script(reply);
  const res = await post(path, path === '/api/chat' ? { model: 'm', messages: [] } : chatBody());
  assert.equal(res.status, status);
  bodyCheck(JSON.parse(res.bytes.toString('utf8')));
  headerCheck(res.headers);
  assert.equal(agent.requests.at(-1).outcome, 'http-error');
}

test('scripted HTTP errors carry each server family’s error body', async () => {
  await checkHttpError('/v1/chat/completions', { status: 401 }, 401, (b) => assert.equal(b.error.code, 'invalid_api_key'));
  await checkHttpError('/v1/chat/completions', { status: 429, retryAfter: 7 }, 429, (b) => assert.equal(b.error.code, 'rate_limit_exceeded'), (h) => {
    assert.equal(h['retry-after'], '7');
    assert.match(h['access-control-expose-headers'], /Retry-After/);
  });
  await checkHttpError('/v1/chat/completions', { status: 500 }, 500, (b) => assert.deepEqual(Object.keys(b.error), ['code', 'message', 'type']));
  await checkHttpError('/v1/messages', { status: 529 }, 529, (b) => assert.deepEqual([b.type, b.error.type], ['error', 'overloaded_error']));
  await checkHttpError('/api/chat', { status: 404, message: "model 'x' not found" }, 404, (b) => assert.deepEqual(b, { error: "model 'x' not found" }));
  await checkHttpError('/v1/responses', { status: 403, body: { custom: true } }, 403, (b) => assert.deepEqual(b, { custom: true }));
});

test('an unparsable request body gets a 400', async () => {
  const res = await post('/v1/chat/completions', '{not json');
  assert.equal(res.status, 400);
  assert.equal(agent.requests.at(-1).body, undefined);
});

test('garbage: 200 with non-protocol bytes', async () => {
  agent.script({ garbage: true }, { garbage: 'data: {broken json\n\n' });
  const first = await post('/v1/chat/completions', chatBody());
  assert.equal(first.status, 200);
  assert.ok(first.bytes.includes(Buffer.from('502 Bad Gateway')));
  assert.throws(() => chatChunks(first.bytes.toString('latin1')));
  const second = await post('/v1/chat/completions', chatBody());
  assert.equal(second.bytes.toString(), 'data: {broken json\n\n');
});

test('a dropped connection cuts the stream after K pieces, for every protocol', async () => {
  const cases = [
    ['/v1/chat/completions', chatBody(), 1, (raw) => parseSse(raw).length],
    ['/v1/responses', { model: 'm', stream: true, input: 'x' }, 4, (raw) => parseSse(raw).length],
    ['/api/chat', { model: 'm', messages: [] }, 0, (raw) => parseNdjson(raw).length],
    ['/v1/messages', { model: 'm', stream: true, max_tokens: 5, messages: [] }, 3, (raw) => parseSse(raw).length],
  ];
  for (const [path, body, headFrames, count] of cases) {
    agent.script({ text: 'one two three four five', dropAfter: 2 });
    const res = await post(path, body);
    assert.ok(res.error, `${path}: the response ends in an error`);
    assert.equal(count(res.bytes.toString('utf8')), headFrames + 2, path);
    assert.equal(agent.requests.at(-1).outcome, 'dropped');
  }
});

test('a mid-stream error event is sent in the protocol’s own shape', async () => {
  const check = async (path, body, parse) => {
    agent.script({ text: 'a b c', streamError: { after: 1, message: 'Overloaded' } });
    const res = await post(path, body);
    parse(res.bytes.toString('utf8'));
    assert.equal(agent.requests.at(-1).outcome, 'stream-error');
  };
  await check('/v1/messages', { model: 'm', stream: true, messages: [] }, (raw) => {
    const last = parseSse(raw).at(-1);
    assert.deepEqual([last.event, JSON.parse(last.data)], ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
  });
  await check('/v1/responses', { model: 'm', stream: true, input: 'x' }, (raw) => {
    const last = parseSse(raw).at(-1);
    assert.deepEqual([last.event, JSON.parse(last.data).message, JSON.parse(last.data).sequence_number], ['error', 'Overloaded', 5]);
  });
  await check('/api/chat', { model: 'm', messages: [] }, (raw) => assert.deepEqual(parseNdjson(raw).at(-1), { error: 'Overloaded' }));
  await check('/v1/chat/completions', chatBody(), (raw) => assert.equal(JSON.parse(parseSse(raw).at(-1).data).error.message, 'Overloaded'));
});

test('delay between pieces, stall, and first-byte delay shape the timing', async () => {
  agent.script({ text: 'a b c d', delayMs: 60 });
  const slow = await post('/v1/chat/completions', chatBody());
  assert.ok(slow.elapsedMs >= 4 * 60, `slow stream took ${slow.elapsedMs} ms`);
  assert.ok(slow.pieces.length >= 4, 'the pieces arrive separately');

  agent.script({ text: 'a b c d', stall: { after: 2, ms: 400 } });
  const stalled = await post('/v1/chat/completions', chatBody());
  const gaps = stalled.pieces.slice(1).map((p, i) => p.at - stalled.pieces[i].at);
  assert.ok(Math.max(...gaps) >= 380, `largest gap ${Math.max(...gaps)} ms`);

  agent.script({ text: 'x', headersDelayMs: 300 });
  const late = await post('/v1/chat/completions', chatBody());
  assert.ok(late.pieces[0].at >= 290, `first byte after ${late.pieces[0].at} ms`);
});

test('fragmented writes still carry the same bytes (split UTF-8 included)', async () => {
  agent.script({ text: 'é😀 ok', fragment: 5, fragmentDelayMs: 1 }, { text: 'é😀 ok' });
  const body = { model: 'm', stream: true, max_tokens: 5, messages: [] };
  const fragmented = await post('/v1/messages', body);
  const whole = await post('/v1/messages', body);
  const strip = (b) => b.toString('utf8').replace(/msg_01\w+/g, 'ID');
  assert.equal(strip(fragmented.bytes), strip(whole.bytes));
  assert.ok(fragmented.pieces.length > whole.pieces.length);
});

test('a client that goes away is recorded', async () => {
  agent.script({ text: 'a b c d e f', delayMs: 200 });
  const controller = new AbortController();
  const res = await fetch(`${agent.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chatBody()), signal: controller.signal });
  const reader = res.body.getReader();
  await reader.read();
  controller.abort();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(agent.requests.at(-1).clientClosed, true);
  assert.equal(agent.requests.at(-1).outcome, 'client-closed');
});

// --- CORS ----------------------------------------------------------------------------------------------

test('CORS preflight is answered for any origin and the requested headers', async () => {
  const requested = 'x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, authorization, content-type';
  const res = await rawRequest(agent.url, {
    method: 'OPTIONS',
    path: '/v1/messages',
    headers: {
      origin: 'http://127.0.0.1:9999',
      'access-control-request-method': 'POST',
      'access-control-request-headers': requested,
      'access-control-request-private-network': 'true',
    },
  });
  assert.equal(res.status, 204);
  assert.equal(res.headers['access-control-allow-private-network'], 'true');
  assert.equal(res.headers['access-control-allow-origin'], 'http://127.0.0.1:9999');
  assert.match(res.headers['access-control-allow-methods'], /POST/);
  for (const h of requested.split(', ')) assert.ok(res.headers['access-control-allow-headers'].includes(h), h);
});

test('every response carries Access-Control-Allow-Origin, unless CORS is switched off', async () => {
  const origin = { origin: 'http://localhost:1234' };
  for (const path of ['/v1/chat/completions', '/nope']) {
    const res = await post(path, chatBody(), origin);
    assert.equal(res.headers['access-control-allow-origin'], 'http://localhost:1234', path);
  }
  const noOrigin = await post('/v1/chat/completions', chatBody());
  assert.equal(noOrigin.headers['access-control-allow-origin'], '*');
  agent.setCors(false);
  const off = await post('/v1/chat/completions', chatBody(), origin);
  assert.equal(off.headers['access-control-allow-origin'], undefined);
  const preflight = await rawRequest(agent.url, { method: 'OPTIONS', path: '/v1/chat/completions', headers: origin });
  assert.notEqual(preflight.status, 204);
});

// --- recording and scripting ---------------------------------------------------------------------------

test('every request is recorded: method, path, headers, raw body, parsed JSON, kind', async () => {
  const body = chatBody({ messages: [{ role: 'user', content: 'Ünïcode & "quotes"' }] });
  await post('/v1/chat/completions?x=1', body, { authorization: 'Bearer sk-test' });
  const [rec] = agent.requests;
  assert.deepEqual([rec.method, rec.path, rec.url, rec.protocol, rec.kind], ['POST', '/v1/chat/completions', '/v1/chat/completions?x=1', 'openai-chat', 'chat']);
  assert.equal(rec.headers.authorization, 'Bearer sk-test');
  assert.equal(rec.rawBody, JSON.stringify(body));
  assert.deepEqual(rec.body, body);
  assert.equal(rec.outcome, 'complete');
});

test('the queue answers in order, honours protocol filters, then falls back to the default', async () => {
  agent.setDefault('default reply');
  agent.script({ text: 'for anthropic', protocol: 'anthropic' }, 'first', 'second');
  const texts = [];
  for (let i = 0; i < 3; i++) texts.push(deltasOf(chatChunks((await post('/v1/chat/completions', chatBody())).bytes.toString())).join(''));
  assert.deepEqual(texts, ['first', 'second', 'default reply']);
  assert.equal(agent.pending(), 1);
  const msg = await post('/v1/messages', { model: 'm', messages: [] });
  assert.equal(JSON.parse(msg.bytes).content[0].text, 'for anthropic');
});

test('memory-update requests get the memory script and leave the chat queue alone', async () => {
  agent.script('chat reply');
  agent.scriptMemory({ text: memoryReplyText({ summary: 'S1', entities: [{ id: 'e1', type: 'person', name: 'Ada' }] }) });
  const memoryBody = { model: 'm', stream: false, messages: [{ role: 'system', content: `${MEMORY_OPENING}\nReply with:\n${MEMORY_MARKER}\n...` }] };
  const first = JSON.parse((await post('/v1/chat/completions', memoryBody)).bytes).choices[0].message.content;
  assert.ok(first.startsWith(`${MEMORY_MARKER}\nS1\n=== ENTITY MEMORY ===\n`));
  assert.equal(JSON.parse(first.split('=== ENTITY MEMORY ===\n')[1])[0].name, 'Ada');
  const second = JSON.parse((await post('/v1/chat/completions', memoryBody)).bytes).choices[0].message.content;
  assert.match(second, /=== CONVERSATION MEMORY ===\nThe user and the assistant are chatting\./);
  assert.equal(agent.pending(), 1);
  assert.deepEqual([agent.memoryRequests().length, agent.chatRequests().length], [2, 0]);
});

test('title requests get the title script (empty by default), leave the chat queue alone and are not waited for as turns', async () => {
  agent.script('chat reply');
  agent.scriptTitle('Penicillin allergy');
  const titleBody = { model: 'm', stream: false, messages: [{ role: 'system', content: `${TITLE_OPENING} Answer with the title only.` }, { role: 'user', content: 'User: hi' }] };
  const first = JSON.parse((await post('/v1/chat/completions', titleBody)).bytes).choices[0].message.content;
  assert.equal(first, 'Penicillin allergy');
  const second = JSON.parse((await post('/v1/chat/completions', titleBody)).bytes).choices[0].message.content;
  assert.equal(second, '');
  assert.equal(agent.pending(), 1);
  assert.deepEqual([agent.titleRequests().length, agent.chatRequests().length, agent.memoryRequests().length], [2, 0, 0]);
  await assert.rejects(agent.waitForRequests(1, { timeoutMs: 100 }), /timed out/);
});

test('the memory-request rule can be replaced', async () => {
  agent.setMemoryDetector((record) => record.body?.temperature === 0.3);
  agent.scriptMemory('memory!');
  const memory = await post('/api/chat', { model: 'm', stream: false, temperature: 0.3, messages: [] });
  const chat = await post('/api/chat', { model: 'm', stream: false, messages: [{ role: 'user', content: MEMORY_OPENING }] });
  assert.equal(JSON.parse(memory.bytes).message.content, 'memory!');
  assert.deepEqual(agent.requests.map((r) => r.kind), ['memory', 'chat']);
  assert.notEqual(JSON.parse(chat.bytes).message.content, 'memory!');
});

test('waitForRequests resolves on arrival and times out otherwise', async () => {
  const waiting = agent.waitForRequests(2, { timeoutMs: 2000 });
  await post('/v1/chat/completions', chatBody());
  await post('/api/chat', { model: 'm', messages: [] });
  assert.deepEqual((await waiting).map((r) => r.protocol), ['openai-chat', 'ollama']);
  await assert.rejects(agent.waitForRequests(5, { timeoutMs: 100 }), /timed out/);
});

test('reset clears requests, queues and ids but keeps the same requests array', async () => {
  const list = agent.requests;
  agent.script('x');
  await post('/v1/responses', { model: 'm', input: 'x' });
  agent.reset();
  assert.equal(list.length, 0);
  assert.equal(agent.requests, list);
  assert.deepEqual([agent.pending(), agent.issuedResponseIds().length], [0, 0]);
});

test('memory requests are answered in the form they ask for, and a form can be refused like llama-cpp-python does', async () => {
  const update = { summary: 'Ada writes notes.', entities: [{ id: 'ada', type: 'person', name: 'Ada', properties: { role: 'author' } }] };
  agent.setMemoryDefault(memoryReplyText(update));
  const system = { role: 'system', content: `${MEMORY_OPENING}\nReply with one JSON object.` };
  const body = (extra) => ({ model: 'm', stream: false, messages: [system], ...extra });
  const object = (text) => JSON.parse(text);

  const schema = { type: 'object' };
  const chat = await post('/v1/chat/completions', body({ response_format: { type: 'json_schema', json_schema: { name: 'memory_update', strict: true, schema } } }));
  const got = object(JSON.parse(chat.bytes).choices[0].message.content);
  assert.equal(got.summary, 'Ada writes notes.');
  assert.deepEqual(got.entities[0].properties, [{ key: 'role', value: 'author' }], 'properties as key/value pairs');

  const ollama = await post('/api/chat', body({ format: schema }));
  assert.equal(object(JSON.parse(ollama.bytes).message.content).entities[0].name, 'Ada');

  // anthropic's forced tool: the update streams as input_json_delta of a tool_use block.
  const tool = await post('/v1/messages', body({ stream: true, max_tokens: 100, tools: [{ name: 'memory_update', input_schema: schema }], tool_choice: { type: 'tool', name: 'memory_update' } }));
  const events = parseSse(tool.bytes.toString('utf8')).map((e) => JSON.parse(e.data));
  assert.equal(events.find((e) => e.type === 'content_block_start').content_block.type, 'tool_use');
  const input = events.filter((e) => e.delta?.type === 'input_json_delta').map((e) => e.delta.partial_json).join('');
  assert.equal(object(input).summary, 'Ada writes notes.');
  assert.equal(events.find((e) => e.type === 'message_delta').delta.stop_reason, 'tool_use');

  // Unconstrained: the two-section text as scripted.
  const plain = await post('/v1/chat/completions', body({}));
  assert.ok(JSON.parse(plain.bytes).choices[0].message.content.startsWith(MEMORY_MARKER));

  agent.refuseMemoryForms('json_schema');
  const refused = await post('/v1/chat/completions', body({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }));
  assert.equal(refused.status, 500);
  assert.match(refused.bytes.toString('utf8'), /Input should be 'text' or 'json_object'/);
  const fallback = await post('/v1/chat/completions', body({ response_format: { type: 'json_object', schema } }));
  assert.equal(fallback.status, 200);
});
