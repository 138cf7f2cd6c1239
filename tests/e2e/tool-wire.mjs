// Tool calls in each protocol's own wire form, for the tests that script them (tools.test.mjs,
// mcp.test.mjs): the scripted reply that asks for a call (encoders.mjs: `toolCall`, Anthropic's
// `toolUse`), and what a request carries: the tools offered, the calls sent back, their results.

/** The scripted reply that asks for `call` in `protocol`'s wire form. */
export function asking(protocol, call) {
  if (protocol === 'anthropic') return { toolUse: call.name, text: JSON.stringify(call.arguments) };
  return { toolCall: call, text: '' };
}

/** The names of the tools request `body` offers, in `protocol`'s form. */
export function offered(protocol, body) {
  return (body.tools ?? []).map((t) => (protocol === 'openai-chat' || protocol === 'ollama' ? t.function.name : t.name));
}

/** The tool results request `body` carries, in `protocol`'s own form: [{id, name?, text}]. */
export function results(protocol, body) {
  if (protocol === 'openai-chat') return body.messages.filter((m) => m.role === 'tool').map((m) => ({ id: m.tool_call_id, text: m.content }));
  if (protocol === 'ollama') return body.messages.filter((m) => m.role === 'tool').map((m) => ({ name: m.tool_name, text: m.content }));
  if (protocol === 'openai-responses') return body.input.filter((i) => i.type === 'function_call_output').map((i) => ({ id: i.call_id, text: i.output }));
  return body.messages
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => m.content.filter((b) => b.type === 'tool_result'))
    .map((b) => ({ id: b.tool_use_id, text: typeof b.content === 'string' ? b.content : JSON.stringify(b.content), error: b.is_error === true }));
}

/** The calls request `body` carries back (the model's own turn), by name. */
export function callsSent(protocol, body) {
  if (protocol === 'openai-responses') return body.input.filter((i) => i.type === 'function_call').map((i) => i.name);
  if (protocol === 'anthropic') return body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_use').map((b) => b.name);
  return body.messages.flatMap((m) => m.tool_calls ?? []).map((c) => c.function.name);
}
