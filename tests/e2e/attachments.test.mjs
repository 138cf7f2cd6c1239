// Images and files in messages (issue 29, items 3-5), against the built app and the local agent:
// - an image picked in the composer (composer-attach) shows as a thumbnail, is sent in each
//   protocol's exact shape (the recorded request holds the stored bytes as base64), and shows on
//   the sent message (attachment, data-kind="image"), also after a reload;
// - an endpoint that refuses images (HTTP 400 naming them) gives the "cannot see images" error and
//   the message is kept with its image;
// - a text file reaches the request as a fenced block with its name, shown as a chip
//   (data-kind="file");
// - a PDF (picked or dropped) reaches each protocol's request as its text in the same block; a
//   broken, encrypted, scanned or fake one says why in the banner and the typed message stays;
// - the attach and pdf chunks are fetched on first use (a PDF needs only its own); a refused fetch
//   says so in the banner, and the next try works;
// - a backup export carries the image, and importing it after deleting the conversation brings the
//   image back.
// - an image removed from the composer before sending is freed from the database; a sent one stays;
// - a ChatGPT export ZIP (tests/fixtures/import/chatgpt-images.mjs) brings its images onto their
//   messages, and the next turn's history sends the user's image as the composer's would.
// Every test opens a fresh browser context (fresh IndexedDB) and resets the agent.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import {
  startHarness,
  openApp,
  openConfiguredApp,
  reloadAndReopen,
  messages,
  waitForAssistant,
  errorBannerText,
  confirmImport,
  assertNoPageProblems,
  withDiagnostics,
  tid,
  BROWSER_NETWORK_NOISE,
} from './helpers.mjs';
import { png } from './png.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

async function journey(name, protocol, fn) {
  const opened = await openConfiguredApp(harness, protocol, {});
  try {
    await withDiagnostics(opened.page, opened.issues, name, () => fn(opened));
  } finally {
    await opened.context.close();
  }
}

const IMAGE = png(4, 3);
const B64 = IMAGE.toString('base64');
const QUESTION = 'What is in this picture?';

/** Attaches files through the composer's picker and waits until each shows in the composer. */
async function attach(page, files, kind) {
  await page.locator(tid('composer-attach')).setInputFiles(files);
  const shown = page.locator('.composer').locator(tid('attachment', `[data-kind="${kind}"]`));
  await shown.nth(files.length - 1).waitFor({ state: 'visible' });
  if (kind === 'image') await shown.first().locator('img').waitFor({ state: 'visible' });
}

async function send(page, text) {
  await page.locator(tid('composer-input')).fill(text);
  await page.locator(tid('send-button')).click();
}

/** The last user message in each protocol's recorded body. */
const LAST_USER = {
  'openai-chat': (b) => b.messages.at(-1),
  'openai-responses': (b) => b.input.at(-1),
  ollama: (b) => b.messages.at(-1),
  anthropic: (b) => b.messages.at(-1),
};

const SHAPES = {
  'openai-chat': {
    role: 'user',
    content: [
      { type: 'text', text: QUESTION },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${B64}` } },
    ],
  },
  'openai-responses': {
    role: 'user',
    content: [
      { type: 'input_text', text: QUESTION },
      { type: 'input_image', image_url: `data:image/png;base64,${B64}` },
    ],
  },
  ollama: { role: 'user', content: QUESTION, images: [B64] },
  anthropic: {
    role: 'user',
    content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: B64 } },
      { type: 'text', text: QUESTION },
    ],
  },
};

for (const protocol of Object.keys(SHAPES)) {
  test(`an image reaches the ${protocol} request in its exact shape and stays on the message`, () =>
    journey(`image-${protocol}`, protocol, async ({ page, issues }) => {
      const { agent } = harness;
      agent.script({ text: 'A small gradient.' });
      await attach(page, [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }], 'image');
      await send(page, QUESTION);
      assert.equal(await waitForAssistant(page), 'A small gradient.');
      const [req] = agent.chatRequests();
      assert.deepEqual(LAST_USER[protocol](req.body), SHAPES[protocol]);
      const sent = messages(page, 'user').last().locator(tid('attachment', '[data-kind="image"]'));
      await sent.locator('img').waitFor({ state: 'visible' });
      assert.equal(await page.locator('.composer').locator(tid('attachment')).count(), 0, 'the composer is empty again');
      await reloadAndReopen(page);
      const again = messages(page, 'user').last().locator(tid('attachment', '[data-kind="image"]'));
      await again.locator('img').waitFor({ state: 'visible' });
      assertNoPageProblems(issues);
    }));
}

test('an endpoint that refuses images: the model cannot see images, and the message is kept', () =>
  journey('image-refused', 'openai-chat', async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ status: 400, message: 'Invalid content type. image_url is only supported by certain models.' });
    await attach(page, [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }], 'image');
    await send(page, QUESTION);
    const banner = await errorBannerText(page);
    assert.match(banner, /cannot see images/i);
    assert.match(banner, /message is kept/i);
    const user = messages(page, 'user').last();
    assert.match(await user.locator(tid('message-content')).innerText(), /What is in this picture\?/);
    await user.locator(tid('attachment', '[data-kind="image"]')).waitFor({ state: 'visible' });
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  }));

test('a text file reaches the request as a fenced block with its name', () =>
  journey('text-file', 'openai-chat', async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ text: 'Two rows.' });
    const csv = 'name,count\napples,3\npears,5\n';
    await attach(page, [{ name: 'fruit.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) }], 'file');
    // Removing before sending works: attach a second one and take it away again.
    await page.locator(tid('composer-attach')).setInputFiles([{ name: 'extra.txt', mimeType: 'text/plain', buffer: Buffer.from('drop me') }]);
    const pending = page.locator('.composer').locator(tid('attachment'));
    await pending.nth(1).waitFor({ state: 'visible' });
    await pending.nth(1).locator(tid('attachment-remove')).click();
    await assert.doesNotReject(() => pending.nth(1).waitFor({ state: 'detached' }));
    await send(page, 'How many rows?');
    assert.equal(await waitForAssistant(page), 'Two rows.');
    const [req] = agent.chatRequests();
    assert.equal(req.body.messages.at(-1).content, `How many rows?\n\n\`\`\`csv fruit.csv\n${csv}\`\`\``);
    assert.ok(!JSON.stringify(req.body).includes('drop me'), 'a removed file is not sent');
    await messages(page, 'user').last().locator(tid('attachment', '[data-kind="file"]')).waitFor({ state: 'visible' });
    assertNoPageProblems(issues);
  }));

// PDFs (issue 29 item 4): read in the browser by the pdf chunk, attached as a named text file.
// The fixtures are written by scripts/make-pdf-fixtures.py; PDF_TEXT is what engine::pdf reads from
// plain.pdf (tests/engine_pdf.rs checks the reader itself).
const PDF_DIR = new URL('../fixtures/pdf/', import.meta.url);
const pdfFile = async (name) => ({ name, mimeType: 'application/pdf', buffer: await readFile(new URL(name, PDF_DIR)) });
const PDF_TEXT = 'Quarterly report\nRevenue grew by 12%, costs fell.\nWord gap\n\nSecond page: café (open)';
const PDF_BLOCK = `Summarise it.\n\n\`\`\`pdf plain.pdf\n${PDF_TEXT}\n\`\`\``;

/** The text of a user message in any protocol's shape (a string, or its text parts). */
const textOf = (m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join(''));

/** Drops `file` on the composer, as a file dragged from the desktop. */
async function dropOnComposer(page, { name, mimeType, buffer }) {
  await page.evaluate(
    ({ name, mimeType, b64 }) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], name, { type: mimeType }));
      document.querySelector('.composer').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    },
    { name, mimeType, b64: buffer.toString('base64') },
  );
}

for (const protocol of Object.keys(LAST_USER)) {
  test(`a PDF reaches the ${protocol} request as its text, a fenced block with its name`, () =>
    journey(`pdf-${protocol}`, protocol, async ({ page, issues }) => {
      const { agent } = harness;
      agent.script({ text: 'A report.' });
      const file = await pdfFile('plain.pdf');
      // Picked on one protocol, dropped on the others: both reach the same path.
      if (protocol === 'openai-chat') await page.locator(tid('composer-attach')).setInputFiles([file]);
      else await dropOnComposer(page, file);
      const chip = page.locator('.composer').locator(tid('attachment', '[data-kind="file"]'));
      await chip.waitFor({ state: 'visible' });
      assert.match(await chip.innerText(), /plain\.pdf/);
      await send(page, 'Summarise it.');
      assert.equal(await waitForAssistant(page), 'A report.');
      const [req] = agent.chatRequests();
      assert.equal(textOf(LAST_USER[protocol](req.body)), PDF_BLOCK);
      await messages(page, 'user').last().locator(tid('attachment', '[data-kind="file"]')).waitFor({ state: 'visible' });
      assertNoPageProblems(issues);
    }));
}

test('a broken, an encrypted or a scanned PDF says why, and the typed message stays', () =>
  journey('pdf-refused', 'openai-chat', async ({ page, issues }) => {
    const typed = 'What does this say?';
    await page.locator(tid('composer-input')).fill(typed);
    const plain = await readFile(new URL('plain.pdf', PDF_DIR));
    const cases = [
      [{ name: 'broken.pdf', mimeType: 'application/pdf', buffer: plain.subarray(0, 200) }, /“broken\.pdf” has no pages that could be read/],
      [await pdfFile('encrypted.pdf'), /“encrypted\.pdf” is encrypted/],
      [await pdfFile('scanned.pdf'), /“scanned\.pdf” has no text layer/],
      [{ name: 'fake.pdf', mimeType: 'application/pdf', buffer: Buffer.from('not a pdf at all') }, /“fake\.pdf” is not a PDF/],
    ];
    for (const [file, want] of cases) {
      await page.locator(tid('composer-attach')).setInputFiles([file]);
      await page.locator(tid('error-banner')).getByText(want).waitFor();
    }
    assert.equal(await page.locator('.composer').locator(tid('attachment')).count(), 0, 'nothing was attached');
    assert.equal(await page.locator(tid('composer-input')).inputValue(), typed, 'the typed message is kept');
    assertNoPageProblems(issues);
  }));

test('the attach and pdf chunks: fetched on the first attach, a refused fetch says so, and the next try works', async () => {
  // No service worker: nothing is precached, so a chunk can only come from the network.
  const context = await harness.browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  try {
    const asked = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    await openApp(page, harness.site.url);
    await page.locator(tid('composer-input')).fill('Keep me.');
    const pdfChunk = /\/split_pdf-[0-9a-f]{16}\.wasm$/;
    await page.route(pdfChunk, (route) => route.abort('internetdisconnected'));
    await page.locator(tid('composer-attach')).setInputFiles([await pdfFile('plain.pdf')]);
    await page.locator(tid('error-banner')).filter({ hasText: /could not be loaded/ }).waitFor();
    assert.ok(!asked.some((u) => /\/split_attach-/.test(u)), 'a PDF does not fetch the attach chunk');
    await page.unroute(pdfChunk);
    await page.locator(tid('composer-attach')).setInputFiles([await pdfFile('plain.pdf')]);
    await page.locator('.composer').locator(tid('attachment', '[data-kind="file"]')).waitFor();
    await page.locator(tid('composer-attach')).setInputFiles([{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }]);
    await page.locator('.composer').locator(tid('attachment', '[data-kind="image"]')).locator('img').waitFor();
    assert.ok(asked.some((u) => /\/split_attach-/.test(u)), 'an image fetches the attach chunk');
    assert.equal(await page.locator(tid('composer-input')).inputValue(), 'Keep me.');
  } finally {
    await context.close();
  }
});

const items = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'));

async function openMenu(page) {
  if (!(await page.locator(tid('export-all-json')).isVisible())) await page.locator(tid('export-button')).click();
}

test('a backup carries the image: export, delete, import, and the image shows again', () =>
  journey('image-backup', 'openai-chat', async ({ page, issues }) => {
    const { agent } = harness;
    agent.script({ text: 'A gradient.' });
    await attach(page, [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }], 'image');
    await send(page, QUESTION);
    assert.equal(await waitForAssistant(page), 'A gradient.');
    await openMenu(page);
    const [file] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-all-json')).click()]);
    const exported = await readFile(await file.path(), 'utf8');
    const backup = JSON.parse(exported);
    const [att] = backup.conversations[0].messages.find((m) => m.role === 'user').attachments;
    assert.equal(att.kind, 'image');
    assert.deepEqual(backup.blobs, [{ hash: att.hash, mime: 'image/png', data: B64 }]);

    await items(page).first().hover();
    await items(page).first().locator(tid('delete-conversation')).click();
    await items(page).first().locator(tid('confirm-delete')).click();
    await items(page).first().waitFor({ state: 'detached' });

    await openMenu(page);
    await page.locator(tid('import-input')).setInputFiles({ name: 'backup.json', mimeType: 'application/json', buffer: Buffer.from(exported) });
    await confirmImport(page);
    await items(page).first().click();
    const img = messages(page, 'user').last().locator(tid('attachment', '[data-kind="image"]')).locator('img');
    await img.waitFor({ state: 'visible' });
    const stored = await page.evaluate(async () => {
      const db = await new Promise((resolve, reject) => {
        const r = indexedDB.open('memoire');
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
      const all = await new Promise((resolve, reject) => {
        const q = db.transaction('attachments').objectStore('attachments').getAll();
        q.onsuccess = () => resolve(q.result);
        q.onerror = () => reject(q.error);
      });
      db.close();
      return Promise.all(all.map(async (r) => [r.hash, btoa(String.fromCharCode(...new Uint8Array(await r.blob.arrayBuffer())))]));
    });
    assert.deepEqual(stored, [[att.hash, B64]], 'the imported image holds the same bytes');

    // A backup that lies about an image's bytes is refused whole.
    const lying = JSON.parse(exported);
    lying.blobs[0].data = png(2, 2).toString('base64');
    await openMenu(page);
    await page.locator(tid('import-input')).setInputFiles({ name: 'lying.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(lying)) });
    await confirmImport(page);
    await page.getByText(/does not hold the bytes its name says/).first().waitFor();
    assert.equal(await items(page).count(), 1, 'nothing of the lying file was written');
    assertNoPageProblems(issues, { allowConsole: BROWSER_NETWORK_NOISE });
  }));

/** The PNG files stored whole in a ZIP, in order (the fixture stores its images uncompressed). */
function storedPngs(archive) {
  const out = [];
  for (let at = archive.indexOf(PNG_MAGIC); at >= 0; at = archive.indexOf(PNG_MAGIC, at + 1)) {
    out.push(archive.subarray(at, archive.indexOf(Buffer.from('IEND'), at) + 8));
  }
  return out;
}
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

test("a ChatGPT export ZIP brings its images: shown on their messages, and the user's goes out with the history as a composer's does", () =>
  journey('import-zip-images', 'openai-chat', async ({ page, issues }) => {
    const { agent } = harness;
    // tests/fixtures/import/chatgpt-images.mjs: an upload and a DALL·E image in the ZIP, an upload
    // the ZIP lacks, and a text file named like an image.
    const archive = await readFile(new URL('../fixtures/import/chatgpt-images.zip', import.meta.url));
    const [red] = storedPngs(archive);
    await openMenu(page);
    await page.locator(tid('import-input')).setInputFiles({ name: 'chatgpt-export.zip', mimeType: 'application/zip', buffer: archive });
    const shown = await confirmImport(page);
    assert.match(shown, /Images: 2 brought in, 2 kept as a name/);
    await page.locator(tid('notice')).filter({ hasText: 'Imported 1 conversation' }).waitFor();
    await items(page).filter({ hasText: 'Squares' }).first().click();
    await messages(page).nth(8).waitFor();
    const upload = messages(page, 'user').first().locator(tid('attachment', '[data-kind="image"]'));
    await upload.locator('img').waitFor({ state: 'visible' });
    // The DALL·E image, on the assistant's side as ChatGPT shows it.
    const drawn = messages(page, 'assistant').nth(1).locator(tid('attachment', '[data-kind="image"]'));
    await drawn.locator('img').waitFor({ state: 'visible' });
    // What the ZIP lacks, or is not an image, stays a readable name.
    assert.match(await messages(page, 'user').nth(2).locator(tid('message-content')).innerText(), /\[image: lost\.jpg\]/);
    assert.match(await messages(page, 'user').nth(3).locator(tid('message-content')).innerText(), /\[image: notes\.png\]/);
    assert.equal(await page.locator(tid('message-list')).locator(tid('attachment')).count(), 2);

    // The next turn: history carries the user's image as the protocol's image part (the stored
    // bytes: a 2x2 PNG is kept as it came), the assistant's picture as its name, as for any message.
    agent.script({ text: 'Red, then blue.' });
    await send(page, 'Which colours were they?');
    await messages(page, 'assistant').nth(5).filter({ hasText: 'Red, then blue.' }).waitFor();
    const [req] = agent.chatRequests();
    const withImage = req.body.messages.filter((m) => Array.isArray(m.content));
    assert.deepEqual(withImage, [{
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${red.toString('base64')}` } },
      ],
    }]);
    assert.ok(req.body.messages.some((m) => m.role === 'assistant' && m.content === '[image: a blue square]'), JSON.stringify(req.body.messages));
    assertNoPageProblems(issues);
  }));

/** How many images the app's database holds. */
const storedImages = (page) => page.evaluate(async () => {
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open('memoire');
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const n = await new Promise((resolve, reject) => {
    const q = db.transaction('attachments').objectStore('attachments').count();
    q.onsuccess = () => resolve(q.result);
    q.onerror = () => reject(q.error);
  });
  db.close();
  return n;
});

test('an image removed from the composer before sending is freed; a sent one stays', () =>
  journey('image-removed', 'openai-chat', async ({ page, issues }) => {
    const { agent } = harness;
    await attach(page, [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }], 'image');
    assert.equal(await storedImages(page), 1, 'stored at once, as it is attached');
    await page.locator('.composer').locator(tid('attachment-remove')).click();
    await page.waitForFunction(async () => {
      const db = await new Promise((r) => { const q = indexedDB.open('memoire'); q.onsuccess = () => r(q.result); });
      const n = await new Promise((r) => { const q = db.transaction('attachments').objectStore('attachments').count(); q.onsuccess = () => r(q.result); });
      db.close();
      return n === 0;
    }, null, { timeout: 10_000, polling: 100 });
    // Attached again and sent: the message uses it, so it stays.
    agent.script({ text: 'A gradient.' });
    await attach(page, [{ name: 'grad.png', mimeType: 'image/png', buffer: IMAGE }], 'image');
    await send(page, QUESTION);
    assert.equal(await waitForAssistant(page), 'A gradient.');
    assert.equal(await storedImages(page), 1);
    assertNoPageProblems(issues);
  }));
