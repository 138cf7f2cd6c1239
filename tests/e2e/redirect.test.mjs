// No credential follows a redirect (issue 43, item 5): an endpoint that answers 307 to a recorder
// on another port (another origin) gets the request it was given, with its credential, and the
// recorder gets nothing: no `x-api-key`, no `Authorization`; the app says why and what to do.
// - the Anthropic endpoint: the send ends in the error banner's "answered with a redirect";
// - the sync server: "Test connection" says it, and the sync loop stops on it (sync-status
//   data-state="error", its title saying why), with the Basic password never reaching the recorder.
// On a build that follows redirects (before this change) the recorder receives the Anthropic key;
// the sync request reaches it too (Chromium drops `Authorization` on a cross-origin redirect, not
// `x-api-key`, nor anything on a same-origin one), and neither message appears.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  startHarness,
  newAppPage,
  openApp,
  configureSettings,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(async () => {
  await harness?.close();
});

const allow = { allowConsole: [...BROWSER_NETWORK_NOISE] };

/** Answers a CORS preflight for anything (any origin, method and header). */
function cors(req, res) {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Methods', 'GET, PUT, POST, DELETE, HEAD');
  res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? '*');
  res.setHeader('Access-Control-Expose-Headers', '*');
  if (req.method !== 'OPTIONS') return false;
  res.statusCode = 204;
  res.end();
  return true;
}

/**
 * A server on 127.0.0.1 that records every request but preflights (method, url, headers) and
 * answers with `answer(req, res)`.
 */
function startServer(answer) {
  const seen = [];
  const server = http.createServer((req, res) => {
    if (cors(req, res)) return;
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    req.resume();
    req.on('end', () => answer(req, res));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    stop: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }),
  })));
}

/** The recorder (refuses everything) and an endpoint that answers 307 to it, same path. */
async function startPair() {
  const recorder = await startServer((req, res) => {
    res.statusCode = 401;
    res.setHeader('content-type', 'application/json');
    res.end('{"error":"unauthorized","reason":"recorded"}');
  });
  const redirector = await startServer((req, res) => {
    res.statusCode = 307;
    res.setHeader('location', `${recorder.url}${req.url}`);
    res.end();
  });
  return { recorder, redirector, stop: async () => { await redirector.stop(); await recorder.stop(); } };
}

/** Requests that reached the recorder with a credential header. */
const credentialed = (seen) => seen.filter((r) => r.headers['x-api-key'] || r.headers.authorization);

test('redirect: an Anthropic endpoint that answers 307 never hands the key on, and the app says why', async () => {
  const { site, browser } = harness;
  const pair = await startPair();
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'redirect-anthropic', async () => {
      await openApp(page, site.url);
      const key = 'sk-ant-redirect-4242';
      await configureSettings(page, { url: pair.redirector.url, protocol: 'anthropic', model: 'claude-test', apiKey: key });
      await page.locator(tid('composer-input')).fill('hello');
      await page.locator(tid('send-button')).click();
      const banner = page.locator(tid('error-banner'));
      await banner.waitFor();
      await new Promise((r) => setTimeout(r, 500));
      assert.deepEqual(credentialed(pair.recorder.seen), [], 'no key reached the other origin');
      assert.deepEqual(pair.recorder.seen, [], 'nothing reached the other origin');
      const chat = pair.redirector.seen.filter((r) => r.url.endsWith('/v1/messages'));
      assert.equal(chat.length, 1, 'the request went to the address in Settings, once');
      assert.equal(chat[0].headers['x-api-key'], key, 'with its key, where the key was given');
      assert.match(await banner.innerText(), /answered with a redirect; Memoire does not follow it with your key\. Use the final address in Settings/);
      assertNoPageProblems(issues, allow);
    });
  } finally {
    await context.close();
    await pair.stop();
  }
});

test('redirect: a sync server that answers 307 never hands the password on; Test connection and the sync status say why', async () => {
  const { site, browser } = harness;
  const pair = await startPair();
  const { context, page, issues } = await newAppPage(browser);
  try {
    await withDiagnostics(page, issues, 'redirect-sync', async () => {
      await openApp(page, site.url);
      await page.locator(tid('settings-open')).click();
      await page.locator(tid('settings-sync-url')).fill(pair.redirector.url);
      await page.locator(tid('settings-sync-database')).fill('memoire');
      await page.locator(tid('settings-sync-user')).fill('ann');
      await page.locator(tid('settings-sync-password')).fill('sync-secret');
      const result = page.locator(tid('sync-result'));
      await page.locator(tid('sync-test')).click();
      await page.waitForFunction(() => document.querySelector('[data-testid="sync-result"]')?.getAttribute('data-ok') === 'false');
      await new Promise((r) => setTimeout(r, 500));
      assert.deepEqual(credentialed(pair.recorder.seen), [], 'Test connection: no password reached the other origin');
      assert.deepEqual(pair.recorder.seen, [], 'Test connection: nothing reached the other origin');
      assert.match(await result.innerText(), /answered with a redirect; Memoire does not follow it with your password\. Use the final address in Settings/);

      // Saved and on: the sync loop stops on the redirect and says so, with no retry.
      await page.locator(tid('settings-sync-enabled')).check();
      await page.locator(tid('settings-save')).click();
      await page.locator(tid('settings-dialog')).waitFor({ state: 'detached' });
      const status = page.locator(tid('sync-status', '[data-state="error"]'));
      await status.waitFor({ timeout: 30_000 });
      await eventually(async () => /answered with a redirect/.test((await status.getAttribute('title')) ?? ''), { what: 'the sync status saying why' });
      assert.doesNotMatch(await status.getAttribute('title'), /Retrying/, 'only a new address can fix it');

      const basic = `Basic ${Buffer.from('ann:sync-secret').toString('base64')}`;
      assert.ok(pair.redirector.seen.length >= 2, 'Test connection and the sync loop asked the address in Settings');
      assert.ok(pair.redirector.seen.every((r) => r.headers.authorization === basic), 'with the password, where it was given');
      await new Promise((r) => setTimeout(r, 500));
      assert.deepEqual(credentialed(pair.recorder.seen), [], 'no password reached the other origin');
      assert.deepEqual(pair.recorder.seen, [], 'nothing reached the other origin');
      assertNoPageProblems(issues, allow);
    });
  } finally {
    await context.close();
    await pair.stop();
  }
});
