// A local agent endpoint for the end-to-end tests.
//
// It speaks openai-chat, openai-responses, ollama and anthropic the way real servers do (the wire
// formats live in encoders.mjs), answers CORS for any origin, records every request, and replies from a
// per-test script: a queue of replies plus a default, and separate queues for memory-update requests and
// title requests (the model-written title after a first reply; by default answered with nothing, which
// leaves the first-message title).
// It only ever listens on 127.0.0.1.

import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { PROTOCOLS, splitText, previousResponseNotFound } from './encoders.mjs';

const hex12 = () => randomBytes(6).toString('hex');

/** The heading of the two-section memory reply (ARCHITECTURE.md, "Memory update"). */
export const MEMORY_MARKER = '=== CONVERSATION MEMORY ===';
const ENTITY_MARKER = '=== ENTITY MEMORY ===';
/** The opening of every memory-update system text (engine::memory::MEMORY_REQUEST_OPENING). */
export const MEMORY_OPENING = 'You maintain the long-term memory of a conversation between a user and an assistant.';
/** The opening of every title request's system text (engine::title::TITLE_REQUEST_OPENING). */
export const TITLE_OPENING = 'You write the title of a conversation.';

/** What llama-cpp-python 0.3.36 answers (HTTP 500) to `response_format: {"type": "json_schema"}` (recorded). */
export const LLAMA_CPP_PYTHON_REFUSAL = "{\"error\":{\"message\":\"1 validation error:\\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \\\"Input should be 'text' or 'json_object'\\\", 'input': 'json_schema', 'ctx': {'expected': \\\"'text' or 'json_object'\\\"}}\\n\\n  File \\\"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\\\", line 376, in create_chat_completion\\n    POST /v1/chat/completions\",\"type\":\"internal_server_error\",\"param\":null,\"code\":null}}";

/**
 * The output form a request asks for: 'json_schema', 'json_object', 'ollama_format', 'forced_tool',
 * 'text_format', or null (the two-section text).
 */
export function memoryFormOf(body) {
  if (!body || typeof body !== 'object') return null;
  if (body.response_format?.type === 'json_schema') return 'json_schema';
  if (body.response_format?.type === 'json_object') return 'json_object';
  if (body.format && typeof body.format === 'object') return 'ollama_format';
  if (body.tool_choice?.type === 'tool') return 'forced_tool';
  if (body.text?.format?.type === 'json_schema') return 'text_format';
  return null;
}

/** The update a two-section reply text holds, as the constrained forms' JSON object, or null. */
function sectionsToObject(text) {
  const start = text.indexOf(MEMORY_MARKER);
  const split = text.indexOf(ENTITY_MARKER);
  if (start < 0 || split < start) return null;
  const summary = text.slice(start + MEMORY_MARKER.length, split).trim();
  let entities;
  try {
    entities = JSON.parse(text.slice(split + ENTITY_MARKER.length));
  } catch {
    return null;
  }
  if (!Array.isArray(entities)) return null;
  return {
    summary,
    entities: entities.map((e) => ({
      id: e.id ?? '',
      type: e.type ?? 'other',
      name: e.name ?? '',
      aliases: e.aliases ?? [],
      description: e.description ?? '',
      properties: Object.entries(e.properties ?? {}).map(([key, value]) => ({ key, value: String(value) })),
      relationships: (e.relationships ?? []).map((r) => ({ targetId: r.targetId ?? '', relationship: r.relationship ?? '', strength: r.strength ?? 0.5 })),
    })),
  };
}

/**
 * A scripted memory reply, shaped for the form the request asked in: two-section text replies become
 * the JSON object a constrained server would send (a forced tool's input for anthropic), with the
 * reply's `userFacts` and `userFactsEnded` ([{quote, kind}]) when it has them; anything else
 * (garbage, errors) goes out as scripted.
 */
function memoryReplyFor(reply, record) {
  const form = memoryFormOf(record.body);
  if (!form || reply.status || reply.garbage || typeof reply.text !== 'string') return reply;
  const object = sectionsToObject(reply.text);
  if (!object) return reply;
  // The facts about the user the model proposes (the schema's user_facts, user_facts_ended): only
  // the constrained forms carry them.
  if (reply.userFacts || reply.userFactsEnded) {
    Object.assign(object, { no_longer_true: [], user_facts: reply.userFacts ?? [], user_facts_ended: reply.userFactsEnded ?? [] });
  }
  const text = JSON.stringify(object);
  return form === 'forced_tool' ? { ...reply, text, toolUse: record.body.tool_choice.name } : { ...reply, text };
}

const DEFAULT_TEXT = 'Hello from the local test agent.';
const DEFAULT_MODEL = 'test-model';
const DEFAULT_GARBAGE = Buffer.from('\u0000\u00ff<html><body>502 Bad Gateway</body></html>\r\nnot a stream {{{\n', 'latin1');
const ALLOWED_HEADERS = 'authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, anthropic-beta, openai-organization, openai-project, x-stainless-os';

/** Route table: method + path -> handler name and protocol. */
const ROUTES = {
  'POST /v1/chat/completions': 'openai-chat',
  'POST /chat/completions': 'openai-chat',
  'POST /v1/responses': 'openai-responses',
  'POST /responses': 'openai-responses',
  'POST /api/chat': 'ollama',
  'POST /v1/messages': 'anthropic',
};

/**
 * Builds the text of a well-formed memory-update reply (ARCHITECTURE.md format).
 * @param {{summary: string, entities?: object[]}} memory
 * @returns {string}
 */
export function memoryReplyText({ summary, entities = [] }) {
  return `${MEMORY_MARKER}\n${summary}\n=== ENTITY MEMORY ===\n${JSON.stringify(entities, null, 2)}\n`;
}

/**
 * Starts the agent endpoint on 127.0.0.1 at a random port.
 * @param {{models?: string[], cors?: boolean}} [options]
 * @returns {Promise<AgentServer>}
 */
export async function startAgentServer(options = {}) {
  const state = newState(options);
  const server = http.createServer((req, res) => {
    handle(state, req, res).catch((err) => failRequest(res, err));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return makeHandle(state, server, port);
}

function newState(options) {
  return {
    models: options.models ?? [DEFAULT_MODEL],
    cors: options.cors !== false,
    queue: [],
    defaultReply: { text: DEFAULT_TEXT },
    memoryQueue: [],
    memoryDefault: { text: memoryReplyText({ summary: 'The user and the assistant are chatting.' }) },
    titleQueue: [],
    titleDefault: { text: '' },
    requests: [],
    waiters: [],
    isMemory: defaultIsMemory,
    refusedForms: new Set(),
    issuedResponseIds: new Set(),
    interruptRequests: false,
    streaming: new Set(),
    // A reply with llama.cpp's `timings` stands for llama-server, which always answers `/props`
    // (one slot by default); without timings no page asks.
    props: llamaProps(1),
    contextWindow: null,
  };
}

/** @returns {AgentServer} */
function makeHandle(state, server, port) {
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    requests: state.requests,
    script: (...replies) => void state.queue.push(...replies.map(normalizeReply)),
    setDefault: (reply) => void (state.defaultReply = normalizeReply(reply)),
    scriptMemory: (...replies) => void state.memoryQueue.push(...replies.map(normalizeReply)),
    setMemoryDefault: (reply) => void (state.memoryDefault = normalizeReply(reply)),
    scriptTitle: (...replies) => void state.titleQueue.push(...replies.map(normalizeReply)),
    setTitleDefault: (reply) => void (state.titleDefault = normalizeReply(reply)),
    setCors: (on) => void (state.cors = on),
    setMemoryDetector: (fn) => void (state.isMemory = fn ?? defaultIsMemory),
    /** Answer memory requests in these forms as llama-cpp-python answers `json_schema` (HTTP 500). */
    refuseMemoryForms: (...forms) => void (state.refusedForms = new Set(forms)),
    /** One slot, as llama-cpp-python's server with its default `interrupt_requests=True`: a request
     * that arrives while a reply streams ends that stream at once (openai-chat: `data: [DONE]` with no
     * finish reason, then the body is cut without its last chunk, as recorded). */
    interruptRequests: (on = true) => void (state.interruptRequests = on),
    /** Answer `GET /props` as llama.cpp's llama-server does, with `total_slots` slots (the default:
     * 1; null: 404, as llama-cpp-python, vLLM and OpenAI answer). */
    setSlots: (total) => void (state.props = total === null ? null : llamaProps(total)),
    /** Hold `tokens` of context (null: no limit), as llama-cpp-python 0.3 does (its default is 2,048):
     * an openai-chat prompt of that many tokens or more is refused, a streamed one with `200` and an
     * empty event stream, a non-streamed one with `400` and its `context_length_exceeded` body (both
     * recorded). Tokens are counted as the JSON of the messages, four characters a token. */
    setContextWindow: (tokens) => void (state.contextWindow = tokens),
    pending: () => state.queue.length,
    issuedResponseIds: () => [...state.issuedResponseIds],
    expireResponseIds: (ids) => expireIds(state, ids),
    waitForRequests: (count, opts) => waitForRequests(state, count, opts),
    chatRequests: () => state.requests.filter((r) => r.kind === 'chat'),
    memoryRequests: () => state.requests.filter((r) => r.kind === 'memory'),
    titleRequests: () => state.requests.filter((r) => r.kind === 'title'),
    reset: () => resetState(state),
    close: () => closeServer(server),
  };
}

/** llama-server's `GET /props` answer, in part (its fields as the server's README lists them). */
function llamaProps(totalSlots) {
  return {
    default_generation_settings: { id: 0, id_task: -1, n_ctx: 8192, speculative: false, is_processing: false, params: { n_predict: -1, temperature: 0.8, top_k: 40, top_p: 0.95 } },
    total_slots: totalSlots,
    model_path: 'models/test-model.gguf',
    modalities: { vision: false, audio: false },
    chat_template: "{% for message in messages %}{{ message['content'] }}{% endfor %}",
    bos_token: '<s>',
    eos_token: '</s>',
    build_info: 'b6500-0123abcd',
  };
}

/** A title request is one whose system text opens like the engine's title instruction. */
function isTitle(record) {
  return record.rawBody.includes(TITLE_OPENING);
}

/** A memory-update request is one whose system text opens like the engine's memory instruction. */
function defaultIsMemory(record) {
  return record.rawBody.includes(MEMORY_OPENING);
}

function resetState(state) {
  const fresh = newState({ models: state.models });
  state.requests.length = 0;
  state.queue.length = 0;
  state.memoryQueue.length = 0;
  state.titleQueue.length = 0;
  state.issuedResponseIds.clear();
  Object.assign(state, { defaultReply: fresh.defaultReply, memoryDefault: fresh.memoryDefault, titleDefault: fresh.titleDefault, cors: true, isMemory: defaultIsMemory, refusedForms: new Set(), interruptRequests: false, props: llamaProps(1), contextWindow: null });
}

function expireIds(state, ids) {
  const list = ids === undefined ? [...state.issuedResponseIds] : [].concat(ids);
  for (const id of list) state.issuedResponseIds.delete(id);
  return list;
}

function closeServer(server) {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Accepts a bare string as `{text}`. */
function normalizeReply(reply) {
  if (typeof reply === 'string') return { text: reply };
  if (reply === null || typeof reply !== 'object') throw new TypeError(`a scripted reply must be a string or an object, got ${reply}`);
  return { ...reply };
}

// ---------------------------------------------------------------------------------------------------
// Request handling

async function handle(state, req, res) {
  const record = await recordRequest(state, req);
  if (state.interruptRequests && record.protocol) {
    for (const running of state.streaming) {
      running.record.interrupted = true;
      running.res.emit('interrupt');
    }
  }
  if (state.cors) setCorsHeaders(req, res);
  if (req.method === 'OPTIONS') return answerPreflight(state, req, res);
  const protocol = ROUTES[`${req.method} ${record.path}`];
  if (protocol) return answerAgent(state, record, protocol, res);
  if (req.method === 'GET' && ['/v1/models', '/models'].includes(record.path)) return sendJson(res, 200, modelList(state));
  if (req.method === 'GET' && record.path === '/props' && state.props) return sendJson(res, 200, state.props);
  if (req.method === 'GET' && record.path === '/api/tags') return sendJson(res, 200, ollamaTags(state));
  if (req.method === 'GET' && record.path === '/api/version') return sendJson(res, 200, { version: '0.12.6' });
  return sendJson(res, 404, { detail: 'Not Found' });
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function recordRequest(state, req) {
  const rawBody = await readBody(req);
  const path = new URL(req.url, 'http://127.0.0.1').pathname;
  const record = {
    index: state.requests.length,
    at: Date.now(),
    method: req.method,
    path,
    url: req.url,
    headers: { ...req.headers },
    rawBody,
    body: parseJson(rawBody),
    protocol: ROUTES[`${req.method} ${path}`] ?? null,
    kind: 'other',
    status: null,
    outcome: null,
    clientClosed: false,
  };
  if (record.protocol) record.kind = isTitle(record) ? 'title' : state.isMemory(record) ? 'memory' : 'chat';
  state.requests.push(record);
  notifyWaiters(state);
  return record;
}

function notifyWaiters(state) {
  state.waiters = state.waiters.filter((w) => !w.check());
}

/**
 * Resolves when at least `count` requests match `filter` (default: agent requests of any kind).
 */
function waitForRequests(state, count, { timeoutMs = 10_000, filter = (r) => r.protocol !== null && r.kind !== 'title' } = {}) {
  return new Promise((resolve, reject) => {
    const waiter = {
      check() {
        const hits = state.requests.filter(filter);
        if (hits.length < count) return false;
        clearTimeout(timer);
        resolve(hits);
        return true;
      },
    };
    const timer = setTimeout(() => {
      state.waiters = state.waiters.filter((w) => w !== waiter);
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${count} request(s); saw ${state.requests.filter(filter).length}`));
    }, timeoutMs);
    if (!waiter.check()) state.waiters.push(waiter);
  });
}

function setCorsHeaders(req, res) {
  res.setHeader('Access-Control-Allow-Origin', req.headers.origin ?? '*');
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Expose-Headers', 'Retry-After, X-Request-Id');
}

function answerPreflight(state, req, res) {
  if (!state.cors) return sendJson(res, 405, { detail: 'Method Not Allowed' });
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
  res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? ALLOWED_HEADERS);
  res.setHeader('Access-Control-Max-Age', '600');
  if (req.headers['access-control-request-private-network'] === 'true') res.setHeader('Access-Control-Allow-Private-Network', 'true');
  res.writeHead(204).end();
}

function modelList(state) {
  return { object: 'list', data: state.models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'memoire-tests' })) };
}

function ollamaTags(state) {
  const models = state.models.map((name) => ({
    name,
    model: name,
    modified_at: '2026-01-01T00:00:00.000000000Z',
    size: 91_739_413,
    digest: 'a'.repeat(64),
    details: { parent_model: '', format: 'gguf', family: 'llama', families: ['llama'], parameter_size: '135M', quantization_level: 'Q8_0' },
  }));
  return { models };
}

function sendJson(res, status, value, headers = {}) {
  sendRaw(res, status, JSON.stringify(value), { 'Content-Type': 'application/json', ...headers });
}

function sendRaw(res, status, body, headers) {
  res.writeHead(status, { 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function failRequest(res, err) {
  if (res.headersSent) return res.destroy();
  sendJson(res, 500, { detail: `agent-server bug: ${err.stack ?? err}` });
}

// ---------------------------------------------------------------------------------------------------
// Agent replies

function chooseReply(state, record) {
  if (record.kind === 'memory') return state.memoryQueue.shift() ?? state.memoryDefault;
  if (record.kind === 'title') return state.titleQueue.shift() ?? state.titleDefault;
  const i = state.queue.findIndex((reply) => replyMatches(reply, record));
  return i >= 0 ? state.queue.splice(i, 1)[0] : state.defaultReply;
}

function replyMatches(reply, record) {
  if (reply.protocol && ![].concat(reply.protocol).includes(record.protocol)) return false;
  return reply.match ? Boolean(reply.match(record)) : true;
}

async function answerAgent(state, record, protocol, res) {
  const encoder = PROTOCOLS[protocol];
  if (record.body === undefined || record.body === null) {
    return finish(record, res, 400, encoder.errorBody(400, 'Could not parse the request body as JSON.'), 'bad-json');
  }
  if (protocol === 'openai-responses' && !previousIdKnown(state, record)) {
    return finish(record, res, 400, previousResponseNotFound(record.body.previous_response_id), 'previous-not-found');
  }
  if (record.kind === 'memory' && state.refusedForms.has(memoryFormOf(record.body))) {
    return finish(record, res, 500, LLAMA_CPP_PYTHON_REFUSAL, 'form-refused');
  }
  if (protocol === 'openai-chat' && state.contextWindow !== null) {
    const tokens = promptTokens(record.body);
    record.promptTokens = tokens;
    if (tokens >= state.contextWindow) return refuseForLength(state, record, encoder, res, tokens);
  }
  let reply = chooseReply(state, record);
  if (record.kind === 'memory') reply = memoryReplyFor(reply, record);
  record.reply = reply;
  res.on('close', () => {
    if (!res.writableFinished) record.clientClosed = true;
  });
  if (reply.headersDelayMs) await sleep(reply.headersDelayMs, res);
  if (reply.status) return answerError(record, res, encoder, reply);
  if (reply.garbage) return answerGarbage(record, res, encoder, reply);
  const ctx = streamContext(state, record, encoder, reply);
  if (protocol === 'openai-responses' && !reply.forget && record.body.store !== false) {
    state.issuedResponseIds.add(ctx.id);
    record.responseId = ctx.id;
  }
  if (!encoder.wantsStream(record.body)) return finish(record, res, 200, encoder.completeBody(ctx), 'complete');
  const running = { record, res };
  state.streaming.add(running);
  try {
    return await streamReply(record, res, encoder, reply, ctx);
  } finally {
    state.streaming.delete(running);
  }
}

/** The tokens of an openai-chat prompt, as this endpoint counts them (`setContextWindow`). */
export function promptTokens(body) {
  return Math.ceil(JSON.stringify(body.messages ?? []).length / 4);
}

/** llama-cpp-python's refusal of a prompt of `tokens` tokens, longer than its context: a streamed
 * request gets `200` and an event stream that ends before any event (the error goes to the server's
 * log), a non-streamed one `400` and this body. */
function refuseForLength(state, record, encoder, res, tokens) {
  if (encoder.wantsStream(record.body)) {
    record.status = 200;
    record.outcome = 'refused-for-length';
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    return res.end();
  }
  const completion = record.body.max_tokens ?? null;
  const message = `This model's maximum context length is ${state.contextWindow} tokens. However, you requested ${tokens + (completion ?? 0)} tokens (${tokens} in the messages, ${completion ?? 'None'} in the completion). Please reduce the length of the messages or completion.`;
  const body = { error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } };
  return finish(record, res, 400, JSON.stringify(body), 'refused-for-length');
}

function previousIdKnown(state, record) {
  const prev = record.body.previous_response_id;
  return prev === undefined || prev === null || state.issuedResponseIds.has(prev);
}

function finish(record, res, status, body, outcome, headers = {}) {
  record.status = status;
  record.outcome = outcome;
  sendRaw(res, status, body, { 'Content-Type': 'application/json', ...headers });
}

function answerError(record, res, encoder, reply) {
  const message = reply.message ?? defaultErrorMessage(reply.status);
  let body = reply.body ?? encoder.errorBody(reply.status, message);
  if (typeof body !== 'string') body = JSON.stringify(body);
  const headers = { ...(reply.retryAfter !== undefined ? { 'Retry-After': String(reply.retryAfter) } : {}), ...reply.headers };
  finish(record, res, reply.status, body, 'http-error', headers);
}

function defaultErrorMessage(status) {
  if (status === 401) return 'Incorrect API key provided.';
  if (status === 403) return 'You are not allowed to use this model.';
  if (status === 404) return 'The model `test-model` does not exist.';
  if (status === 429) return 'Rate limit reached. Please try again later.';
  if (status >= 500) return 'llama_decode returned -1: the server failed to evaluate the prompt.';
  return `HTTP ${status}`;
}

function answerGarbage(record, res, encoder, reply) {
  const body = reply.garbage === true ? DEFAULT_GARBAGE : Buffer.from(reply.garbage);
  record.status = 200;
  record.outcome = 'garbage';
  res.writeHead(200, { 'Content-Type': reply.contentType ?? encoder.contentType, 'Content-Length': body.length });
  res.end(body);
}

function streamContext(state, record, encoder, reply) {
  let text = reply.text ?? (reply.chunks ? reply.chunks.join('') : DEFAULT_TEXT);
  // The `<think>` form: the thinking opens the content itself (servers that do not split it).
  const thinkTags = reply.reasoning && reply.reasoningForm === 'think';
  if (thinkTags) text = `<think>\n${reply.reasoning}\n</think>\n\n${text}`;
  const pieces = splitText(text, thinkTags ? {} : reply);
  const reasoningPieces = reply.reasoningChunks?.slice() ?? (reply.reasoning && !thinkTags ? splitText(reply.reasoning) : []);
  const body = record.body;
  return {
    ...encoder.newIds(),
    ...(reply.id ? { id: reply.id } : {}),
    created: reply.created ?? Math.floor(Date.now() / 1000),
    model: reply.model ?? body.model ?? state.models[0],
    text,
    pieces,
    reasoningPieces,
    reasoningField: reply.reasoningForm === 'reasoning' ? 'reasoning' : undefined,
    usage: { input: reply.usage?.input ?? Math.max(1, Math.ceil(record.rawBody.length / 4)), output: reply.usage?.output ?? pieces.length + reasoningPieces.length, cached: reply.usage?.cached },
    llamaTimings: Boolean(reply.llamaTimings),
    finishReason: reply.finishReason,
    toolUse: reply.toolUse ?? null,
    toolCall: reply.toolCall ? { id: `call_${hex12()}`, ...reply.toolCall } : null,
    includeUsage: Boolean(reply.honourUsage && body.stream_options?.include_usage),
    previousResponseId: body.previous_response_id ?? null,
    instructions: body.instructions,
    temperature: body.temperature,
    maxOutputTokens: body.max_output_tokens,
    store: body.store,
  };
}

const STREAM_HEADERS = { 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' };

/** Writes head frames, the deltas (with delay / stall / drop / error), then the tail frames. */
async function streamReply(record, res, encoder, reply, ctx) {
  const { head, deltas, tail } = encoder.streamFrames(ctx);
  record.status = 200;
  record.outcome = 'streaming';
  res.writeHead(200, { 'Content-Type': encoder.contentType, ...STREAM_HEADERS });
  for (const frame of head) await writeFrame(res, frame, reply);
  for (let i = 0; i <= deltas.length; i++) {
    if (await beforeDelta(record, res, encoder, reply, ctx, i)) return;
    if (record.interrupted) return interrupt(record, res);
    if (res.destroyed) return void (record.outcome = 'client-closed');
    if (i < deltas.length) await writeFrame(res, deltas[i], reply);
  }
  for (const frame of tail) await writeFrame(res, frame, reply);
  record.outcome = res.destroyed ? 'client-closed' : 'complete';
  res.end();
}

/** Ends a stream another request interrupted (see `interruptRequests`). */
async function interrupt(record, res) {
  record.outcome = res.destroyed ? 'client-closed' : 'interrupted';
  if (!res.destroyed && record.protocol === 'openai-chat') await writeFrame(res, 'data: [DONE]\n\n', {});
  res.socket?.destroy();
}

/** Applies the scripted events that happen before delta `i` (i === deltas.length: before the tail). */
async function beforeDelta(record, res, encoder, reply, ctx, i) {
  if (reply.dropAfter === i) {
    record.outcome = 'dropped';
    res.socket?.destroy();
    return true;
  }
  if (reply.stall?.after === i) await sleep(reply.stall.ms, res);
  if (reply.streamError && (reply.streamError.after ?? 0) === i) {
    for (const frame of encoder.streamErrorFrames(ctx, reply.streamError, i)) await writeFrame(res, frame, reply);
    record.outcome = 'stream-error';
    res.end();
    return true;
  }
  if (reply.delayMs) await sleep(reply.delayMs, res);
  return false;
}

/** Writes one frame, optionally in `fragment`-byte pieces, and waits until it is handed to the socket. */
async function writeFrame(res, frame, reply) {
  if (res.destroyed) return;
  const bytes = Buffer.from(frame, 'utf8');
  const size = reply.fragment > 0 ? reply.fragment : bytes.length;
  for (let at = 0; at < bytes.length && !res.destroyed; at += size) {
    await new Promise((resolve) => res.write(bytes.subarray(at, at + size), () => resolve()));
    if (reply.fragmentDelayMs && at + size < bytes.length) await sleep(reply.fragmentDelayMs, res);
  }
}

/** Waits `ms`, or less if the client goes away first. */
function sleep(ms, res) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      res?.off('close', done);
      res?.off('interrupt', done);
      resolve();
    }
    res?.once('close', done);
    res?.once('interrupt', done);
  });
}

/**
 * @typedef {object} Reply  one scripted answer
 * @property {string} [text]              reply text (default: a greeting)
 * @property {string[]} [chunks]          the exact pieces to stream (overrides the word split)
 * @property {string} [reasoning]         think this first, streamed in the protocol's own form (word split)
 * @property {string[]} [reasoningChunks] the exact pieces of the thinking (overrides `reasoning`'s split)
 * @property {'think'|'reasoning'} [reasoningForm]  'think': as `<think>…</think>` opening the content;
 *                                        'reasoning': openai-chat's `delta.reasoning` (default `reasoning_content`)
 * @property {number} [chunkSize]         split the text into pieces of this many code points
 * @property {number} [delayMs]           wait before each piece and before the closing frames
 * @property {number} [headersDelayMs]    send nothing at all (not even headers) for this long
 * @property {{after: number, ms: number}} [stall]  after `after` pieces, send nothing for `ms`
 * @property {number} [dropAfter]         destroy the connection after this many pieces
 * @property {{after?: number, message: string, type?: string, code?: any}} [streamError]  protocol error event mid-stream
 * @property {number} [status]            answer with this HTTP error status instead
 * @property {string|object} [body]       the error body (default: the protocol family's own error JSON)
 * @property {string} [message]           the message inside the default error body
 * @property {number|string} [retryAfter] `Retry-After` header value
 * @property {Record<string,string>} [headers]  extra headers on an error reply
 * @property {true|string|Buffer} [garbage]  answer 200 with these non-protocol bytes
 * @property {string} [contentType]       content type for a garbage reply
 * @property {boolean} [honourUsage]      openai-chat: send the usage chunk when `stream_options.include_usage`
 * @property {{input?: number, output?: number, cached?: number}} [usage]  token counts to report; `cached`:
 *                                        prompt tokens read from the cache (openai-chat `prompt_tokens_details`,
 *                                        Responses `input_tokens_details`, anthropic `cache_read_input_tokens`)
 * @property {boolean} [llamaTimings]     openai-chat: llama-server's `timings` (with `cache_n`) on the finishing chunk
 * @property {string} [id]                pin the response id
 * @property {number} [created]           pin the creation time (unix seconds)
 * @property {string} [model]             pin the model name (default: the request's)
 * @property {string} [finishReason]      'stop' (default) or 'length' (cut by the cap, in each protocol's form)
 * @property {boolean} [forget]           openai-responses: do not remember the id issued
 * @property {number} [fragment]          write each frame in pieces of this many bytes
 * @property {number} [fragmentDelayMs]   wait between those pieces
 * @property {string|string[]} [protocol] only answer requests of this protocol
 * @property {(record: object) => boolean} [match]  only answer requests this accepts
 *
 * @typedef {object} AgentServer
 * @property {string} url                      http://127.0.0.1:PORT
 * @property {number} port
 * @property {object[]} requests               every request: method, path, headers, rawBody, body, kind (chat, memory, title, other), outcome, responseId (openai-responses)...
 * @property {(...replies: (Reply|string)[]) => void} script   queue replies for chat requests, in order
 * @property {(reply: Reply|string) => void} setDefault        the reply when the queue is empty
 * @property {(...replies: (Reply|string)[]) => void} scriptMemory  queue replies for memory-update requests
 * @property {(reply: Reply|string) => void} setMemoryDefault
 * @property {(...replies: (Reply|string)[]) => void} scriptTitle  queue replies for title requests
 * @property {(reply: Reply|string) => void} setTitleDefault  the title reply when its queue is empty (default: empty text)
 * @property {(on: boolean) => void} setCors   false: no CORS headers, preflight refused
 * @property {(fn?: (record: object) => boolean) => void} setMemoryDetector  replace the memory-request rule (default: the marker)
 * @property {(on?: boolean) => void} interruptRequests  one slot: a new request ends the reply streaming (llama-cpp-python's default)
 * @property {() => number} pending            replies still queued
 * @property {() => string[]} issuedResponseIds
 * @property {(ids?: string|string[]) => string[]} expireResponseIds  forget these (default: all) response ids
 * @property {(count: number, opts?: {timeoutMs?: number, filter?: (r: object) => boolean}) => Promise<object[]>} waitForRequests
 * @property {() => object[]} chatRequests
 * @property {() => object[]} memoryRequests
 * @property {() => object[]} titleRequests
 * @property {() => void} reset                clear requests, queues, ids, defaults
 * @property {() => Promise<void>} close
 */
