// Checks the harness itself (helpers, agent endpoint, static server, Chromium) by running the smoke
// journey against contract-app/, a minimal page that follows the ARCHITECTURE.md testid contract. A failure
// here is the harness's fault; a failure only in smoke.test.mjs is the app's.

import { test, before, after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startHarness } from './helpers.mjs';
import { chatSurvivesReload } from './journeys.mjs';

let harness;
before(async () => {
  harness = await startHarness({ root: fileURLToPath(new URL('./contract-app/', import.meta.url)) });
});
after(() => harness?.close());

test('harness: the smoke journey passes against the contract page', () => chatSurvivesReload(harness));
