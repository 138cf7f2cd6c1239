// MCP servers from the page (issue 44, item 2): `@modelcontextprotocol/server-everything` over
// Streamable HTTP, started by the test on a free loopback port, behind a small proxy on another
// port (so the page calls it across origins) that either answers CORS as a browser needs
// (Allow-Origin, Allow-Headers with mcp-protocol-version, mcp-session-id, authorization,
// last-event-id, Expose-Headers mcp-session-id, DELETE allowed) or sends no CORS header at all.
// - with CORS: Settings → Tools adds it with a bearer token (which reaches the server), it shows
//   connected with its tools (echo, get-sum, …); a tool turned off stays off across a reload;
//   Remove ends its session with DELETE;
// - without CORS: the server shows data-state="error" and the plain-words fix names the headers.
// - through a turn, on every protocol: the scripted model asks for `echo` and `get-sum` in its wire
//   form; Allow runs echo on the server and its result is the next request's, Deny refuses get-sum
//   (never sent to the server); a reload while `trigger-long-running-operation` runs leaves it
//   interrupted, and it is never called twice.
// The mixed-content text (an http server from an https page) is out of reach here: an engine test
// (tests/engine_mcp.rs) holds it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  startHarness,
  newAppPage,
  openConfiguredApp,
  sendMessage,
  waitForAssistant,
  currentConversationId,
  conversationItem,
  openApp,
  openSettings,
  waitForAppReady,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';
import { asking, results, callsSent } from './tool-wire.mjs';

const EVERYTHING = fileURLToPath(new URL('./node_modules/.bin/mcp-server-everything', import.meta.url));
const allow = { allowConsole: [...BROWSER_NETWORK_NOISE, /CORS policy/] };

let harness;
let everything;
before(async () => {
  harness = await startHarness();
  everything = await startEverything();
});
after(async () => {
  everything?.stop();
  await harness?.close();
});

/** A free loopback port. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** server-everything over Streamable HTTP on a free port, once it listens. */
async function startEverything() {
  const port = await freePort();
  const child = spawn(EVERYTHING, ['streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise((resolve, reject) => {
    const seen = (chunk) => {
      out += chunk;
      if (/listening on port/i.test(out)) resolve();
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => reject(new Error(`server-everything exited (${code}): ${out}`)));
    setTimeout(() => reject(new Error(`server-everything did not start: ${out}`)), 15_000);
  });
  return { port, stop: () => child.kill() };
}

const CORS = {
  'access-control-allow-headers': 'content-type, authorization, mcp-protocol-version, mcp-session-id, last-event-id',
  'access-control-expose-headers': 'mcp-session-id',
  'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
};

/**
 * A proxy on another loopback port in front of server-everything: its CORS headers dropped, ours
 * added when `cors`; every request but preflights recorded (method, url, headers).
 */
function startProxy(upstream, { cors }) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const ours = cors ? { 'access-control-allow-origin': req.headers.origin ?? '*', ...CORS } : {};
    if (req.method === 'OPTIONS') {
      res.writeHead(204, ours);
      res.end();
      return;
    }
    const entry = { method: req.method, url: req.url, headers: req.headers, body: '' };
    seen.push(entry);
    req.on('data', (chunk) => (entry.body += chunk));
    const up = http.request({
      host: '127.0.0.1',
      port: upstream,
      path: req.url,
      method: req.method,
      headers: { ...req.headers, host: `127.0.0.1:${upstream}` },
    }, (answer) => {
      const headers = Object.fromEntries(Object.entries(answer.headers).filter(([k]) => !k.startsWith('access-control-')));
      res.writeHead(answer.statusCode, { ...headers, ...ours });
      answer.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    seen,
    stop: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }),
  })));
}

/** Adds the server at `url` (with `token`) in Settings → Tools (the dialog open). */
async function addServer(page, url, token = '') {
  await page.locator(tid('settings-tools')).scrollIntoViewIfNeeded();
  await page.locator(tid('settings-mcp-url')).fill(url);
  await page.locator(tid('settings-mcp-token')).fill(token);
  await page.locator(tid('mcp-server-add')).click();
}

const tool = (page, name) => page.locator(tid('mcp-tool', `[data-tool="${name}"]`));

test('mcp: a server behind a CORS proxy connects with its tools; a tool turned off stays off over a reload; Remove ends the session', async () => {
  const { site, browser } = harness;
  const proxy = await startProxy(everything.port, { cors: true });
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'mcp-connected', async () => {
      await openApp(page, site.url);
      await openSettings(page);
      await addServer(page, proxy.url, 'tok-4242');
      await page.locator(tid('mcp-server', '[data-state="connected"]')).waitFor();
      await tool(page, 'echo').waitFor();
      await tool(page, 'get-sum').waitFor();
      assert.equal(await tool(page, 'echo').getAttribute('data-enabled'), 'true', 'a listed tool starts on');
      const posts = proxy.seen.filter((r) => r.method === 'POST');
      assert.ok(posts.length >= 2, 'initialize and the tool list went out');
      assert.ok(posts.every((r) => r.headers.authorization === 'Bearer tok-4242'), 'the token went with every POST');
      assert.ok(posts.slice(1).every((r) => r.headers['mcp-session-id']), 'the session id the server gave came back');
      assert.ok(posts.slice(1).every((r) => r.headers['mcp-protocol-version']), 'with the protocol version agreed');

      await tool(page, 'echo').locator('input[type="checkbox"]').uncheck();
      await page.locator(tid('mcp-tool', '[data-tool="echo"][data-enabled="false"]')).waitFor();

      await page.locator(tid('settings-close')).click();
      await page.reload();
      await waitForAppReady(page);
      await openSettings(page);
      await page.locator(tid('mcp-server', '[data-state="connected"]')).waitFor();
      await tool(page, 'get-sum').waitFor();
      assert.equal(await tool(page, 'echo').getAttribute('data-enabled'), 'false', 'echo stayed off');
      assert.equal(await tool(page, 'get-sum').getAttribute('data-enabled'), 'true', 'get-sum stayed on');

      const deletes = () => proxy.seen.filter((r) => r.method === 'DELETE' && r.headers['mcp-session-id']).length;
      const before = deletes();
      await page.locator(tid('mcp-server')).getByRole('button', { name: 'Remove' }).click();
      await page.locator(tid('mcp-server')).waitFor({ state: 'detached' });
      await eventually(async () => deletes() > before, { what: 'a DELETE ending the session' });
      await page.locator(tid('settings-close')).click();
      await page.reload();
      await waitForAppReady(page);
      await openSettings(page);
      await page.locator(tid('settings-tools')).waitFor();
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(await page.locator(tid('mcp-server')).count(), 0, 'a removed server stays removed');
      assertNoPageProblems(issues, allow);
    });
  } finally {
    await context.close();
    await proxy.stop();
  }
});

test('mcp: a server without the CORS headers gets data-state="error" and the fix naming them', async () => {
  const { site, browser } = harness;
  const proxy = await startProxy(everything.port, { cors: false });
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'mcp-no-cors', async () => {
      await openApp(page, site.url);
      await openSettings(page);
      await addServer(page, proxy.url);
      const server = page.locator(tid('mcp-server', '[data-state="error"]'));
      await server.waitFor();
      assert.match(await server.innerText(), /Can't reach the MCP server at http:\/\/127\.0\.0\.1:\d+\./);
      const fix = await server.locator(tid('mcp-server-fix')).textContent();
      assert.match(fix, /How to fix/);
      assert.match(fix, /does not allow this page to call it \(CORS\)/);
      assert.match(fix, new RegExp(`Access-Control-Allow-Origin: ${new URL(site.url).origin.replace(/[.]/g, "\\.")}`));
      assert.match(fix, /Access-Control-Allow-Headers: content-type, authorization, mcp-protocol-version, mcp-session-id, last-event-id/);
      assert.match(fix, /Access-Control-Expose-Headers: mcp-session-id/);
      assert.match(fix, /Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS/);
      assert.equal(await page.locator(tid('mcp-tool')).count(), 0, 'no tools from a server the page cannot reach');
      assertNoPageProblems(issues, allow);
    });
  } finally {
    await context.close();
    await proxy.stop();
  }
});

/** The `tools/call`s the server was sent through `proxy`, by tool name. */
function called(proxy, name) {
  return proxy.seen.filter((r) => r.method === 'POST' && /"tools\/call"/.test(r.body) && r.body.includes(`"name":"${name}"`)).length;
}

/** The last reply's call waiting for Allow / Deny, once shown. */
async function waiting(page) {
  const call = page.locator(tid('message', '[data-role="assistant"]')).last().locator(tid('tool-call', '[data-status="waiting"]'));
  await call.waitFor({ state: 'visible' });
  return call;
}

for (const protocol of ['openai-chat', 'openai-responses', 'anthropic', 'ollama']) {
  test(`mcp (${protocol}): the model calls the server's tools; Allow runs one, Deny refuses one, a reload mid-call interrupts it`, async () => {
    const { agent } = harness;
    const proxy = await startProxy(everything.port, { cors: true });
    const { context, page, issues } = await openConfiguredApp(harness, protocol);
    try {
      await withDiagnostics(page, issues, `mcp-turn-${protocol}`, async () => {
        await openSettings(page);
        await addServer(page, proxy.url);
        await page.locator(tid('mcp-server', '[data-state="connected"]')).waitFor();
        await tool(page, 'get-sum').waitFor();
        await page.locator(tid('settings-close')).click();

        // Allow: echo runs on the server; its result is the next request's, in the protocol's form.
        agent.script(asking(protocol, { name: 'echo', arguments: { message: 'hello from the model' } }));
        agent.script({ text: 'It echoed.' });
        let before = agent.chatRequests().length;
        await sendMessage(page, 'Echo something.');
        let call = await waiting(page);
        assert.match(await call.textContent(), /echo.*hello from the model/s, 'name and arguments');
        const offeredNames = JSON.stringify(agent.chatRequests()[before].body.tools ?? []);
        assert.match(offeredNames, /get-sum/, "the server's tools are offered");
        await call.locator(tid('tool-approve')).click();
        assert.equal(await waitForAssistant(page), 'It echoed.');
        let next = agent.chatRequests().at(-1).body;
        assert.deepEqual(callsSent(protocol, next), ['echo'], 'the call goes back');
        assert.match(results(protocol, next).at(-1).text, /Echo: hello from the model/, "the server's answer");
        assert.equal(called(proxy, 'echo'), 1, 'called once');

        // Deny: get-sum is never sent to the server; the model reads the refusal.
        agent.script(asking(protocol, { name: 'get-sum', arguments: { a: 2, b: 40 } }));
        agent.script({ text: 'Fine.' });
        await sendMessage(page, 'Add two and forty.');
        call = await waiting(page);
        await call.locator(tid('tool-deny')).click();
        assert.equal(await waitForAssistant(page), 'Fine.');
        next = agent.chatRequests().at(-1).body;
        assert.match(results(protocol, next).at(-1).text, /denied/, 'the refusal');
        assert.equal(called(proxy, 'get-sum'), 0, 'not run');

        // A reload while a call runs: interrupted, never called twice, nothing sent after it.
        agent.script(asking(protocol, { name: 'trigger-long-running-operation', arguments: { duration: 3, steps: 3 } }));
        before = agent.chatRequests().length;
        await sendMessage(page, 'Run the long one.');
        call = await waiting(page);
        await call.locator(tid('tool-approve')).click();
        await eventually(async () => called(proxy, 'trigger-long-running-operation') === 1, { what: 'the call reached the server' });
        const id = await currentConversationId(page);
        await page.reload();
        await waitForAppReady(page);
        if ((await currentConversationId(page)) !== id) await conversationItem(page, id).click();
        const left = page.locator(tid('message', '[data-role="assistant"]')).last().locator(tid('tool-call'));
        await eventually(async () => (await left.getAttribute('data-status')) === 'interrupted', { what: 'interrupted' });
        await new Promise((r) => setTimeout(r, 3_500));
        assert.equal(called(proxy, 'trigger-long-running-operation'), 1, 'never called twice');
        assert.equal(agent.chatRequests().length, before + 1, 'its result was never sent');
        assertNoPageProblems(issues, allow);
      });
    } finally {
      await context.close();
      await proxy.stop();
    }
  });
}
