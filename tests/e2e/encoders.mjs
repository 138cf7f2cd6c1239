// Wire encoders for the four agent protocols the local test endpoint speaks.
//
// Each protocol is one object with the same shape, so the server never branches on the protocol:
//   streamFrames(ctx)        -> { head: string[], deltas: string[], tail: string[] }
//   streamErrorFrames(ctx,e) -> string[]   (an error reported inside a stream that already started)
//   completeBody(ctx)        -> string     (the reply when the request asked for no streaming)
//   errorBody(status, msg)   -> string     (the JSON body of an HTTP error, as that server family sends it)
//   wantsStream(body)        -> boolean    (the protocol's default for the `stream` flag)
// A reply may think first (`ctx.reasoningPieces`): each protocol streams that in its own form before the
// text: openai-chat `delta.reasoning_content` (llama.cpp, DeepSeek, vLLM; or `delta.reasoning` with
// `ctx.reasoningField`), openai-responses a reasoning item with its summary deltas, ollama
// `message.thinking`, anthropic a `thinking` block with `thinking_delta`s and a `signature_delta`. (The
// `<think>` form is plain content, see agent-server.mjs.)
// Frames are complete wire units (one SSE event, one NDJSON line) so the server can drop or stall between
// them. The JSON style of each family is reproduced too: llama-cpp-python (Python json.dumps, ensure_ascii),
// OpenAI and Anthropic (compact JSON, raw UTF-8), Ollama (Go encoding/json: HTML-safe escapes).

import { randomBytes, randomUUID } from 'node:crypto';

/** Python's `json.dumps(value)` with its default separators and `ensure_ascii=True`. */
export function pythonJson(value) {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return pythonString(value);
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  const fields = Object.entries(value).filter(([, v]) => v !== undefined);
  return `{${fields.map(([k, v]) => `${pythonString(k)}: ${pythonJson(v)}`).join(', ')}}`;
}

const PY_SHORT_ESCAPES = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** A JSON string the way Python's ensure_ascii writes it: everything outside ' '..'~' as \uXXXX (UTF-16). */
function pythonString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const code = s.charCodeAt(i);
    if (PY_SHORT_ESCAPES[ch]) out += PY_SHORT_ESCAPES[ch];
    else if (code < 0x20 || code > 0x7e) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Go's `json.Marshal`: compact, and `<`, `>`, `&`, U+2028, U+2029 escaped as \u003c etc. */
export function goJson(value) {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Go's RFC3339Nano rendering of a UTC instant (fraction without trailing zeros). */
export function goTime(date) {
  const iso = date.toISOString(); // 2026-01-02T03:04:05.678Z
  const [whole, frac] = iso.slice(0, -1).split('.');
  const trimmed = (frac ?? '').replace(/0+$/, '');
  return `${whole}${trimmed ? `.${trimmed}` : ''}Z`;
}

const TOKEN_PATTERN = /'\p{L}+| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+/gu;

/**
 * Splits reply text into stream pieces.
 * Default: a word-level split like a BPE tokenizer's (leading space kept on words, punctuation and
 * newlines on their own), which reproduces the recorded llama.cpp fixture. `chunkSize` splits into
 * pieces of that many code points instead; `chunks` gives the pieces verbatim.
 * @param {string} text
 * @param {{chunks?: string[], chunkSize?: number}} [opts]
 * @returns {string[]}
 */
export function splitText(text, opts = {}) {
  if (Array.isArray(opts.chunks)) return opts.chunks.slice();
  if (opts.chunkSize > 0) return chunkByCodePoints(text, opts.chunkSize);
  const pieces = text.match(TOKEN_PATTERN) ?? [];
  return pieces.join('') === text ? pieces : [text];
}

function chunkByCodePoints(text, size) {
  const points = Array.from(text);
  const out = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(''));
  return out;
}

const sseData = (json) => `data: ${json}\n\n`;
const sseEvent = (type, json) => `event: ${type}\ndata: ${json}\n\n`;
const hex = (bytes) => randomBytes(bytes).toString('hex');
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const base62 = (n) => Array.from(randomBytes(n), (b) => BASE62[b % 62]).join('');

// ---------------------------------------------------------------------------------------------------
// openai-chat (as llama-cpp-python's OpenAI-compatible server sends it; see shared/fixtures/)

function chatChunk(ctx, delta, finishReason) {
  return pythonJson({
    id: ctx.id,
    model: ctx.model,
    created: ctx.created,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
}

function chatUsage(ctx) {
  const { input, output, cached } = ctx.usage;
  const usage = { prompt_tokens: input, completion_tokens: output, total_tokens: input + output };
  // OpenAI's (and vLLM's) count of prompt tokens read from the cache, when the reply sets one.
  if (cached !== undefined) usage.prompt_tokens_details = { cached_tokens: cached, audio_tokens: 0 };
  return usage;
}

/** llama-server's `timings` of its final chunk, its cached prompt tokens in `cache_n`. */
function llamaTimings(ctx) {
  const { input, output, cached = 0 } = ctx.usage;
  return { cache_n: cached, prompt_n: Math.max(0, input - cached), prompt_ms: 38.114, prompt_per_token_ms: 3.176, prompt_per_second: 314.8, predicted_n: output, predicted_ms: 96.5, predicted_per_token_ms: 8.04, predicted_per_second: 124.3 };
}

/** @type {ProtocolEncoder} */
export const openaiChat = {
  name: 'openai-chat',
  contentType: 'text/event-stream; charset=utf-8',
  newIds: () => ({ id: `chatcmpl-${randomUUID()}` }),
  wantsStream: (body) => body?.stream === true,
  streamFrames(ctx) {
    const head = [sseData(chatChunk(ctx, { role: 'assistant' }, null))];
    const field = ctx.reasoningField ?? 'reasoning_content';
    const deltas = [
      ...ctx.reasoningPieces.map((p) => sseData(chatChunk(ctx, { [field]: p }, null))),
      ...ctx.pieces.map((p) => sseData(chatChunk(ctx, { content: p }, null))),
      ...chatToolDeltas(ctx),
    ];
    const last = chatChunk(ctx, {}, ctx.finishReason ?? (ctx.toolCall ? 'tool_calls' : 'stop'));
    // llama-server: its timings ride on the chunk that finishes the reply.
    const tail = [sseData(ctx.llamaTimings ? `${last.slice(0, -1)}, "timings": ${JSON.stringify(llamaTimings(ctx))}}` : last)];
    if (ctx.includeUsage) {
      const usageChunk = { id: ctx.id, model: ctx.model, created: ctx.created, object: 'chat.completion.chunk', choices: [], usage: chatUsage(ctx) };
      tail.push(sseData(pythonJson(usageChunk)));
    }
    tail.push('data: [DONE]\n\n');
    return { head, deltas, tail };
  },
  streamErrorFrames(ctx, err) {
    return [sseData(pythonJson({ error: { message: err.message, type: err.type ?? 'server_error', code: err.code ?? 500 } }))];
  },
  completeBody(ctx) {
    return pythonJson({
      id: ctx.id,
      object: 'chat.completion',
      created: ctx.created,
      model: ctx.model,
      choices: [{ index: 0, message: { content: ctx.text, role: 'assistant' }, logprobs: null, finish_reason: ctx.finishReason ?? 'stop' }],
      usage: chatUsage(ctx),
    });
  },
  errorBody(status, message) {
    if (status >= 500) return JSON.stringify({ error: { code: status, message, type: 'server_error' } });
    return JSON.stringify({ error: { message, type: openaiErrorType(status), param: null, code: openaiErrorCode(status) } });
  },
};

/** A tool call (`reply.toolCall`: {name, arguments}) as OpenAI streams it: the call with its id and
 * name, then its arguments (a JSON string) in pieces. */
function chatToolDeltas(ctx) {
  const call = ctx.toolCall;
  if (!call) return [];
  const args = JSON.stringify(call.arguments);
  const open = { tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] };
  const pieces = chunkByCodePoints(args, 8).map((a) => ({ tool_calls: [{ index: 0, function: { arguments: a } }] }));
  return [open, ...pieces].map((d) => sseData(chatChunk(ctx, d, null)));
}

function openaiErrorType(status) {
  if (status === 429) return 'requests';
  return 'invalid_request_error';
}

function openaiErrorCode(status) {
  return { 401: 'invalid_api_key', 403: 'unsupported_country_region_territory', 404: 'model_not_found', 429: 'rate_limit_exceeded' }[status] ?? null;
}

// ---------------------------------------------------------------------------------------------------
// openai-responses (OpenAI Responses API streaming events)

function responseObject(ctx, status, output, usage) {
  return {
    id: ctx.id,
    object: 'response',
    created_at: ctx.created,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: ctx.instructions ?? null,
    max_output_tokens: ctx.maxOutputTokens ?? null,
    model: ctx.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: ctx.previousResponseId ?? null,
    reasoning: { effort: null, summary: null },
    store: ctx.store !== false,
    temperature: ctx.temperature ?? 1.0,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1.0,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: {},
  };
}

function responsesUsage(ctx) {
  const { input, output, cached } = ctx.usage;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: ctx.reasoningPieces.length },
    total_tokens: input + output,
  };
}

const outputText = (text) => ({ type: 'output_text', annotations: [], logprobs: [], text });
const messageItem = (ctx, status, content) => ({ id: ctx.itemId, type: 'message', status, content, role: 'assistant' });

/** A reasoning item at output 0 whose one summary part streams `ctx.reasoningPieces`. */
function reasoningFrames(ctx, ev) {
  const id = `rs_${ctx.itemId.slice(4)}`;
  const text = ctx.reasoningPieces.join('');
  const at = { item_id: id, output_index: 0, summary_index: 0 };
  const item = { id, type: 'reasoning', summary: [{ type: 'summary_text', text }] };
  return {
    item,
    head: [
      ev('response.output_item.added', { output_index: 0, item: { id, type: 'reasoning', summary: [] } }),
      ev('response.reasoning_summary_part.added', { ...at, part: { type: 'summary_text', text: '' } }),
    ],
    deltas: ctx.reasoningPieces.map((delta) => ev('response.reasoning_summary_text.delta', { ...at, delta })),
    tail: [
      ev('response.reasoning_summary_text.done', { ...at, text }),
      ev('response.reasoning_summary_part.done', { ...at, part: { type: 'summary_text', text } }),
      ev('response.output_item.done', { output_index: 0, item }),
    ],
  };
}

/** Numbers events in order, as `sequence_number` requires. */
function sequencer() {
  let n = 0;
  return (type, fields) => sseEvent(type, JSON.stringify({ type, sequence_number: n++, ...fields }));
}

/** @type {ProtocolEncoder} */
export const openaiResponses = {
  name: 'openai-responses',
  contentType: 'text/event-stream; charset=utf-8',
  newIds: () => ({ id: `resp_${hex(24)}`, itemId: `msg_${hex(24)}` }),
  wantsStream: (body) => body?.stream === true,
  streamFrames(ctx) {
    if (ctx.toolCall) return responsesToolFrames(ctx);
    const ev = sequencer();
    const thinks = ctx.reasoningPieces.length > 0;
    const at = thinks ? 1 : 0;
    const part = { item_id: ctx.itemId, output_index: at, content_index: 0 };
    const head = [
      ev('response.created', { response: responseObject(ctx, 'in_progress', [], null) }),
      ev('response.in_progress', { response: responseObject(ctx, 'in_progress', [], null) }),
    ];
    const opening = () => [
      ev('response.output_item.added', { output_index: at, item: messageItem(ctx, 'in_progress', []) }),
      ev('response.content_part.added', { ...part, part: outputText('') }),
    ];
    // Thinking first: the message item opens once its summary is done (as OpenAI sends it).
    const reasoning = thinks ? reasoningFrames(ctx, ev) : null;
    const deltas = [];
    if (reasoning) {
      head.push(...reasoning.head);
      deltas.push(...reasoning.deltas, ...reasoning.tail, ...opening());
    } else {
      head.push(...opening());
    }
    deltas.push(...ctx.pieces.map((delta) => ev('response.output_text.delta', { ...part, delta, logprobs: [] })));
    const done = messageItem(ctx, 'completed', [outputText(ctx.text)]);
    const output = reasoning ? [reasoning.item, done] : [done];
    const tail = [
      ev('response.output_text.done', { ...part, text: ctx.text, logprobs: [] }),
      ev('response.content_part.done', { ...part, part: outputText(ctx.text) }),
      ev('response.output_item.done', { output_index: at, item: done }),
      ctx.finishReason === 'length'
        // Cut by max_output_tokens: the response ends incomplete, saying why.
        ? ev('response.incomplete', { response: { ...responseObject(ctx, 'incomplete', output, responsesUsage(ctx)), incomplete_details: { reason: 'max_output_tokens' } } })
        : ev('response.completed', { response: responseObject(ctx, 'completed', output, responsesUsage(ctx)) }),
    ];
    return { head, deltas, tail };
  },
  streamErrorFrames(ctx, err, sentDeltas) {
    const body = { type: 'error', code: err.code ?? 'server_error', message: err.message, param: null, sequence_number: 4 + sentDeltas };
    return [sseEvent('error', JSON.stringify(body))];
  },
  completeBody(ctx) {
    return JSON.stringify(responseObject(ctx, 'completed', [messageItem(ctx, 'completed', [outputText(ctx.text)])], responsesUsage(ctx)));
  },
  errorBody(status, message) {
    if (status >= 500) return JSON.stringify({ error: { message, type: 'server_error', param: null, code: 'server_error' } });
    return JSON.stringify({ error: { message, type: openaiErrorType(status), param: null, code: openaiErrorCode(status) } });
  },
};

/** A reply that is one function call (`reply.toolCall`), as the Responses API streams it: the
 * `function_call` item added, its arguments in `response.function_call_arguments.delta` pieces, the
 * item done, the response completed with it as its output. */
function responsesToolFrames(ctx) {
  const ev = sequencer();
  const call = ctx.toolCall;
  const args = JSON.stringify(call.arguments);
  const itemId = `fc_${hex(24)}`;
  const item = (status, a) => ({ id: itemId, type: 'function_call', status, arguments: a, call_id: call.id, name: call.name });
  const done = item('completed', args);
  return {
    head: [
      ev('response.created', { response: responseObject(ctx, 'in_progress', [], null) }),
      ev('response.in_progress', { response: responseObject(ctx, 'in_progress', [], null) }),
      ev('response.output_item.added', { output_index: 0, item: item('in_progress', '') }),
    ],
    deltas: chunkByCodePoints(args, 8).map((delta) => ev('response.function_call_arguments.delta', { item_id: itemId, output_index: 0, delta })),
    tail: [
      ev('response.function_call_arguments.done', { item_id: itemId, output_index: 0, arguments: args }),
      ev('response.output_item.done', { output_index: 0, item: done }),
      ev('response.completed', { response: responseObject(ctx, 'completed', [done], responsesUsage(ctx)) }),
    ],
  };
}

/** The body OpenAI sends (HTTP 400) for an unknown or expired `previous_response_id`. */
export function previousResponseNotFound(id) {
  return JSON.stringify({
    error: {
      message: `Previous response with id '${id}' not found.`,
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    },
  });
}

// ---------------------------------------------------------------------------------------------------
// ollama (/api/chat NDJSON, Go JSON)

function ollamaLine(ctx, content, done, extra = {}, thinking = undefined, toolCalls = undefined) {
  const message = thinking === undefined ? { role: 'assistant', content } : { role: 'assistant', content, thinking };
  if (toolCalls) message.tool_calls = toolCalls;
  return `${goJson({ model: ctx.model, created_at: goTime(new Date()), message, done, ...extra })}\n`;
}

function ollamaFinal(ctx) {
  const evalDuration = ctx.pieces.length * 20_000_000 + 1_234_567;
  return {
    done_reason: ctx.finishReason === 'length' ? 'length' : 'stop',
    total_duration: evalDuration + 150_000_000,
    load_duration: 12_345_678,
    prompt_eval_count: ctx.usage.input,
    prompt_eval_duration: 98_765_432,
    eval_count: ctx.usage.output,
    eval_duration: evalDuration,
  };
}

/** @type {ProtocolEncoder} */
export const ollama = {
  name: 'ollama',
  contentType: 'application/x-ndjson',
  newIds: () => ({ id: '' }),
  wantsStream: (body) => body?.stream !== false,
  streamFrames(ctx) {
    return {
      head: [],
      deltas: [
        ...ctx.reasoningPieces.map((p) => ollamaLine(ctx, '', false, {}, p)),
        ...ctx.pieces.map((p) => ollamaLine(ctx, p, false)),
        // A tool call comes whole, its arguments an object, without an id.
        ...(ctx.toolCall ? [ollamaLine(ctx, '', false, {}, undefined, [{ function: { name: ctx.toolCall.name, arguments: ctx.toolCall.arguments } }])] : []),
      ],
      tail: [ollamaLine(ctx, '', true, ollamaFinal(ctx))],
    };
  },
  streamErrorFrames(ctx, err) {
    return [`${goJson({ error: err.message })}\n`];
  },
  completeBody(ctx) {
    return ollamaLine(ctx, ctx.text, true, ollamaFinal(ctx)).trimEnd();
  },
  errorBody(status, message) {
    return goJson({ error: message });
  },
};

// ---------------------------------------------------------------------------------------------------
// anthropic (Messages API streaming events)

const ANTHROPIC_ERROR_TYPES = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function anthropicStopReason(ctx) {
  if (ctx.toolUse) return 'tool_use';
  return ctx.finishReason === 'length' ? 'max_tokens' : 'end_turn';
}

function anthropicMessage(ctx, content, stopReason, outputTokens) {
  return {
    id: ctx.id,
    type: 'message',
    role: 'assistant',
    model: ctx.model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: ctx.usage.input, cache_creation_input_tokens: 0, cache_read_input_tokens: ctx.usage.cached ?? 0, output_tokens: outputTokens },
  };
}

/** @type {ProtocolEncoder} */
export const anthropic = {
  name: 'anthropic',
  contentType: 'text/event-stream; charset=utf-8',
  newIds: () => ({ id: `msg_01${base62(22)}` }),
  wantsStream: (body) => body?.stream === true,
  streamFrames(ctx) {
    const ev = (type, fields) => sseEvent(type, JSON.stringify({ type, ...fields }));
    // A forced tool (tool_choice) streams its input as input_json_delta pieces of a tool_use block.
    const block = ctx.toolUse
      ? { type: 'tool_use', id: `toolu_01${ctx.id.slice(-22)}`, name: ctx.toolUse, input: {} }
      : { type: 'text', text: '' };
    // A thinking block (index 0) comes first when the reply thinks; the text block follows it.
    const thinks = ctx.reasoningPieces.length > 0;
    const index = thinks ? 1 : 0;
    const head = [
      ev('message_start', { message: anthropicMessage(ctx, [], null, 1) }),
      ev('content_block_start', { index: 0, content_block: thinks ? { type: 'thinking', thinking: '', signature: '' } : block }),
      sseEvent('ping', '{"type": "ping"}'),
    ];
    const thinking = !thinks ? [] : [
      ...ctx.reasoningPieces.map((thinking) => ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking } })),
      ev('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: `EqQBCgIYAhIM${base62(48)}` } }),
      ev('content_block_stop', { index: 0 }),
      ev('content_block_start', { index, content_block: block }),
    ];
    const deltas = [...thinking, ...ctx.pieces.map((text) => ev('content_block_delta', {
      index,
      delta: ctx.toolUse ? { type: 'input_json_delta', partial_json: text } : { type: 'text_delta', text },
    }))];
    const tail = [
      ev('content_block_stop', { index }),
      ev('message_delta', { delta: { stop_reason: anthropicStopReason(ctx), stop_sequence: null }, usage: { output_tokens: ctx.usage.output } }),
      ev('message_stop', {}),
    ];
    return { head, deltas, tail };
  },
  streamErrorFrames(ctx, err) {
    const type = err.type ?? 'overloaded_error';
    return [sseEvent('error', JSON.stringify({ type: 'error', error: { type, message: err.message } }))];
  },
  completeBody(ctx) {
    return JSON.stringify(anthropicMessage(ctx, [{ type: 'text', text: ctx.text }], anthropicStopReason(ctx), ctx.usage.output));
  },
  errorBody(status, message) {
    const type = ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    return JSON.stringify({ type: 'error', error: { type, message } });
  },
};

/** All encoders by protocol name. */
export const PROTOCOLS = {
  'openai-chat': openaiChat,
  'openai-responses': openaiResponses,
  ollama,
  anthropic,
};

/**
 * @typedef {object} StreamContext
 * @property {string} id           response/message id of the protocol
 * @property {string} [itemId]     output item id (openai-responses)
 * @property {number} created      unix seconds
 * @property {string} model
 * @property {string} text         full reply text
 * @property {string[]} pieces     text split into deltas (joins to `text`)
 * @property {string[]} reasoningPieces  the thinking streamed before the text, in the protocol's own form
 * @property {string} [reasoningField]  openai-chat: the delta field of the thinking (default `reasoning_content`)
 * @property {{input: number, output: number}} usage
 * @property {string} [finishReason]
 * @property {boolean} [includeUsage]
 * @property {string|null} [previousResponseId]
 *
 * @typedef {object} ProtocolEncoder
 * @property {string} name
 * @property {string} contentType
 * @property {() => {id: string, itemId?: string}} newIds
 * @property {(body: any) => boolean} wantsStream
 * @property {(ctx: StreamContext) => {head: string[], deltas: string[], tail: string[]}} streamFrames
 * @property {(ctx: StreamContext, err: {message: string, type?: string, code?: any}, sentDeltas: number) => string[]} streamErrorFrames
 * @property {(ctx: StreamContext) => string} completeBody
 * @property {(status: number, message: string) => string} errorBody
 */
