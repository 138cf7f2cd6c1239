// The first end-to-end smoke test, against the built app (DIST): open the app, point it at the local
// endpoint, send a message, watch the reply stream in, reload, and find the conversation still there.

import { test, before, after } from 'node:test';
import { startHarness } from './helpers.mjs';
import { chatSurvivesReload } from './journeys.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

test('smoke: chat on openai-chat streams the reply and survives a reload', () => chatSurvivesReload(harness));
