// Encrypted sync's settings as a test sets them (tests/e2e/sync-e2ee.test.mjs, sync-keys.test.mjs):
// the sync form's one Save, with or without encryption, and what it said.

import assert from 'node:assert/strict';
import { tid } from './helpers.mjs';

/** Sync settings on `page`: URL, database, the encryption switch and passphrase; the dialog's one
 *  Save; the result (`ok`: the dialog closed, everything saved; otherwise the sync line's reason). */
export async function saveSync(page, server, { encrypt, passphrase = '', enabled = true, db = 'memoire' }) {
  if (!(await page.locator(tid('settings-sync-url')).isVisible())) await page.locator(tid('settings-open')).click();
  await page.locator(tid('settings-sync-url')).fill(server.url);
  await page.locator(tid('settings-sync-database')).fill(db);
  await page.locator(tid('settings-sync-enabled')).setChecked(enabled);
  await page.locator(tid('settings-sync-encrypt')).setChecked(encrypt);
  if (encrypt) {
    await page.locator(tid('sync-passphrase-warning')).filter({ hasText: 'cannot be recovered' }).waitFor();
    await page.locator(tid('settings-sync-passphrase')).fill(passphrase);
  }
  const result = page.locator(tid('sync-result'));
  // This Save's words, not the last action's: they come after its "Checking…" or "Saving…".
  await result.evaluate((e) => {
    e.seenWorking = false;
    new MutationObserver(() => { if (/Checking|Saving/.test(e.textContent)) e.seenWorking = true; })
      .observe(e, { childList: true, characterData: true, subtree: true });
  });
  await page.locator(tid('settings-save')).click();
  await page.waitForFunction(() => {
    const e = document.querySelector('[data-testid="sync-result"]');
    if (!e) return true; // the dialog closed: everything was saved
    return e.seenWorking && e.getAttribute('data-ok') === 'false';
  }, null, { timeout: 30_000 });
  if ((await result.count()) === 0) return { ok: true, text: 'saved' };
  const text = await result.innerText();
  const said = await page.locator(tid('settings-dialog')).locator('.dialog-actions [role="alert"]').innerText();
  assert.match(said, /Sync was not saved/, 'the dialog says why it stays open');
  return { ok: false, text };
}
