// The local agent endpoint for the browser tests of the session (tests/browser_session*.rs).
//
// Starts tests/e2e/agent-server.mjs on a free 127.0.0.1 port, and next to it a small control server a
// test in the browser scripts it through (the agent server's own scripting is a Node API):
//   POST /script   {"replies": [...], "memory": false}   queue replies (JSON, as agent-server takes them);
//                  a reply with "model" only answers requests for that model, so tests cannot take
//                  each other's replies
//   GET  /requests                                       what the agent received (no raw bodies)
// Prints one line, `MEMOIRE_TEST_AGENT=<agent url> MEMOIRE_TEST_AGENT_CONTROL=<control url>`, then
// serves until it gets SIGTERM or SIGINT. scripts/test.sh starts it for the browser layer and passes
// the two URLs to the build (option_env!).

import http from 'node:http';
import { startAgentServer } from '../e2e/agent-server.mjs';

const agent = await startAgentServer();

function byModel(reply) {
  if (typeof reply !== 'object' || reply === null || reply.model === undefined) return reply;
  const { model, ...rest } = reply;
  return { ...rest, match: (record) => record.body?.model === model };
}

function summary(r) {
  return { path: r.path, kind: r.kind, protocol: r.protocol, model: r.body?.model ?? null, outcome: r.outcome, clientClosed: r.clientClosed, body: r.body ?? null };
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

const control = http.createServer(async (req, res) => {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Headers', 'content-type');
  const send = (status, value) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(value));
  try {
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    if (req.method === 'POST' && req.url === '/script') {
      const { replies = [], memory = false } = await readJson(req);
      const list = replies.map(byModel);
      if (memory) agent.scriptMemory(...list);
      else agent.script(...list);
      return send(200, { queued: list.length });
    }
    if (req.method === 'GET' && req.url === '/requests') return send(200, agent.requests.map(summary));
    return send(404, { detail: 'not found' });
  } catch (err) {
    return send(500, { detail: String(err?.stack ?? err) });
  }
});
await new Promise((resolve) => control.listen(0, '127.0.0.1', resolve));

console.log(`MEMOIRE_TEST_AGENT=${agent.url} MEMOIRE_TEST_AGENT_CONTROL=http://127.0.0.1:${control.address().port}`);

const stop = async () => {
  control.close();
  await agent.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
