// Importing other apps' exports (issue 13), through the real import-input:
// - for each source (tests/fixtures/import/), the preview (import-preview) shows the conversations and
//   messages found; after import-confirm the stored conversations (read back through export-all-json)
//   hold exactly the shown branch, with the source's system prompt as the conversation's own (listed
//   as `s:` first; never a stored system message), and nothing
//   hidden, abandoned, failed or secret;
// - ChatGPT's ZIP (conversations.json inside, deflated) is read in the browser;
// - importing the same file again adds nothing; a cancel writes nothing; a broken file (a
//   current_node that does not exist) gives an error naming the file and writes nothing.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startHarness, newAppPage, openApp, assertNoPageProblems, withDiagnostics, tid, zip } from './helpers.mjs';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'import');

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const items = (page) => page.locator(tid('conversation-list')).locator(tid('conversation-item'));

async function openMenu(page) {
  if (!(await page.locator(tid('export-all-json')).isVisible())) await page.locator(tid('export-button')).click();
}

/** Everything stored, as Memoire's own export: title -> message lines (`u: text`), the conversation's
 * own system prompt first as `s: text`. */
async function stored(page) {
  await openMenu(page);
  const [file] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-all-json')).click()]);
  const backup = JSON.parse(await readFile(await file.path(), 'utf8'));
  const out = {};
  for (const b of backup.conversations) {
    const role = { user: 'u', assistant: 'a', system: 's', tool: 't' };
    assert.ok(b.messages.every((m) => m.role !== 'system'), 'an imported system prompt is no stored message');
    const prompt = b.conversation.memory_overrides?.system_prompt;
    out[b.conversation.title] = [
      ...(prompt ? [`s: ${prompt}`] : []),
      ...b.messages.sort((x, y) => x.seq - y.seq).map((m) => `${role[m.role]}: ${m.content}`),
    ];
  }
  return out;
}

/** Chooses a file with the import control and waits for the preview; returns its text. */
async function preview(page, file) {
  await openMenu(page);
  await page.locator(tid('import-input')).setInputFiles(file);
  const p = page.locator(tid('import-preview'));
  await p.waitFor({ state: 'visible' });
  return p.innerText();
}

async function confirm(page) {
  await page.locator(tid('import-confirm')).click();
  await page.locator(tid('import-preview')).waitFor({ state: 'detached' });
  const notice = page.locator(tid('notice')).filter({ hasText: 'Imported' });
  await notice.waitFor({ state: 'visible' });
  const text = await notice.innerText();
  await page.locator(tid('notice')).getByRole('button', { name: 'Dismiss' }).click();
  return text;
}

const fixture = async (name) => ({ name, mimeType: 'application/octet-stream', buffer: await readFile(join(FIXTURES, name)) });

// Per source: the file, what the preview counts, and the conversations stored (title -> messages).
const SOURCES = [
  ['chatgpt.json', 'ChatGPT export: 2 conversations, 6 messages', {
    'Rust and Leptos': ['u: What is Rust?', 'a: Rust is a systems programming language.', 'u: [image: file-abc]\n\nAnd Leptos? See the screenshot.', 'a: Leptos is a Rust web framework.'],
    'Bonjour, ça va ?': ['u: Bonjour, ça va ?', 'a: Très bien, merci !'],
  }],
  ['claude.json', 'Claude.ai export: 2 conversations, 4 messages', {
    'Packing for Iceland': ['u: What should I pack for Iceland in March?\n[attachment: itinerary.txt]', 'a: Layers: a waterproof shell, wool base layers and good boots.\n\nAlso bring a swimsuit for the hot springs.'],
    "Translate 'good morning' to German": ["u: Translate 'good morning' to German", 'a: Guten Morgen'],
  }],
  ['openwebui.json', 'Open WebUI export: 2 conversations, 6 messages', {
    'Sourdough help': ['s: You are a patient baking teacher.', 'u: Why is my sourdough flat?', 'a: Your starter may be weak; feed it twice a day.', 'u: How long should it proof?', 'a: About 4 to 6 hours at room temperature.'],
    'Old export without history': ['s: Answer in French.', 'u: Hello', 'a: Bonjour'],
  }],
  ['nextchat.json', 'NextChat export: 1 conversation, 4 messages', {
    'Garden planning': ['s: You are an expert gardener.', 'u: Which vegetables grow on a balcony?', 'a: Tomatoes, lettuce and herbs do well.', 'u: Is this pot big enough?\n\n[image]', 'a: Yes, 20 litres is enough for a tomato.'],
  }],
  ['lobechat.json', 'LobeChat export: 2 conversations, 5 messages', {
    'Weekend in Rome': ['s: You plan trips on a budget.', 'u: Plan a weekend in Rome.', 'a: Two days: the Colosseum, then Trastevere.', 'a: Book the Vatican museums ahead.'],
    'Hi there': ['u: Hi there', 'a: Hello! How can I help?'],
  }],
  ['llamacpp.json', 'llama.cpp web UI export: 1 conversation, 4 messages', {
    'Explain borrowing': ['u: Explain borrowing in Rust.\n[attachment: main.rs]', 'a: A borrow is a reference that does not own the value.', 'u: And mutable borrows?', 'a: Only one mutable borrow at a time.'],
  }],
  ['llamacpp.jsonl', 'llama.cpp web UI export: 1 conversation, 2 messages', {
    Haiku: ['u: Write a haiku about rain.', 'a: Soft rain on the roof\nthe kettle begins to sing\nnobody is home'],
  }],
  ['sillytavern.jsonl', 'SillyTavern export: 1 conversation, 6 messages', {
    'Seraphina and Ana': ['a: Welcome, Ana. I am Seraphina, guardian of this forest.', 'u: Where am I?', 'a: You are in the Glade, Ana. Rest here.',
      'a: *The fire crackles; Seraphina keeps watch.*', 'a: A wolf howls in the distance.', "u: (OOC: let's pause here)"],
  }],
  // Issue 29 item 6: what ChatGPT and Claude.ai showed, not their markup.
  ['chatgpt-citations.json', 'ChatGPT export: 1 conversation, 4 messages', {
    'Eiffel Tower': ['u: How tall is the Eiffel Tower?',
      'a: The Eiffel Tower is 330 m tall. ([Wikipedia](https://en.wikipedia.org/wiki/Eiffel_Tower)) It was finished in 1889 ([The Eiffel Tower official](https://www.toureiffel.paris/en)). The tower is in Paris. Tickets sell out in summer.',
      'u: What should I wear?',
      'a: Bring a jacket ([Visiting the Eiffel Tower](https://example.org/visit)); it can be windy on top ([Weather at 300 m](https://example.org/wind)). Your notes say the same.'],
  }],
  ['claude-artifacts.json', 'Claude.ai export: 2 conversations, 6 messages', {
    'Reverse a string in Python': ['u: Write a Python function to reverse a string.',
      'a: Here is the function:\n\n**Reverse a string**\n\n```python\ndef reverse(s):\n    return s[::-1]\n```\n\nCall it with any string.',
      'u: Make it handle None.',
      'a: **Reverse a string**\n\n````python\ndef reverse(s):\n    """Reverse s; None gives "".\n\n    ```\n    >>> reverse("abc")\n    \'cba\'\n    ```\n    """\n    return (s or "")[::-1]\n````\n\nDone: None now gives an empty string.'],
    'A poem about Rust': ['u: Write me a poem about Rust and a logo.',
      'a: Sure, here is a short poem.\n\n**Ode to Rust**\n\n```markdown\n# Ode to Rust\nNo null, no fear.\n```\n\nAnd a logo:\n\n**Crab**\n\n```svg\n<svg viewBox="0 0 10 10"><circle r="4"/></svg>\n```\n\nEnjoy!'],
  }],
  ['bigagi.agi.json', 'big-AGI export: 2 conversations, 4 messages', {
    'French Revolution causes': ['s: You are a concise research assistant.', 'u: Summarise the causes of the French Revolution.\n\n[attachment: notes.pdf]', 'a: Debt, inequality and Enlightenment ideas.'],
    Arithmetic: ['u: What is 2+2?', 'a: 4'],
  }],
];

test('import: every source through the import control, exactly the shown branch; re-import, cancel and a broken file write nothing', async () => {
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'import', async () => {
      await openApp(page, harness.site.url);
      const want = {};
      let count = 0;
      for (const [file, found, conversations] of SOURCES) {
        const text = await preview(page, await fixture(file));
        assert.ok(text.includes(file), `${file}: the preview names the file`);
        assert.ok(text.includes(found), `${file}: preview says "${found}", got: ${text}`);
        assert.match(text, /never imported/, `${file}: the preview says settings and keys stay behind`);
        const n = Object.keys(conversations).length;
        assert.match(await confirm(page), new RegExp(`Imported ${n} conversation${n === 1 ? '' : 's'} and`), file);
        count += n;
        await page.waitForFunction((n) => document.querySelectorAll('[data-testid="conversation-item"]').length === n, count);
        Object.assign(want, conversations);
      }
      const all = await stored(page);
      assert.deepEqual(all, want, 'the stored conversations hold exactly the shown branches');
      const text = JSON.stringify(all);
      for (const bad of ['HIDDEN', 'ABANDONED', 'FAILED', 'SWIPE', 'SECRET', 'FEW-SHOT']) assert.ok(!text.includes(bad), `${bad} was imported`);
      assert.ok(!/[\ue200-\ue202]|【/.test(text), 'no citation marker was imported');

      // What SillyTavern kept out of its prompt is shown, marked as hidden from the model.
      await items(page).filter({ hasText: 'Seraphina and Ana' }).locator(tid('conversation-open')).click();
      await page.locator(tid('message')).nth(5).waitFor();
      const marked = await page.locator(tid('message')).evaluateAll((ms) => ms.map((m) => !!m.querySelector('[data-testid="message-hidden"]')));
      assert.deepEqual(marked, [false, false, false, true, false, true]);
      // A code artifact renders as code, not as its markup.
      await items(page).filter({ hasText: 'Reverse a string in Python' }).locator(tid('conversation-open')).click();
      await page.locator(tid('message')).nth(1).locator('pre code').first().waitFor();

      // The same file again: the preview and the write add nothing.
      const again = await preview(page, await fixture('chatgpt.json'));
      assert.match(again, /New here: 0 conversations and 0 messages; already here: 6 messages/);
      assert.match(await confirm(page), /Imported 0 conversations and 0 messages from ChatGPT; 6 messages were already here/);
      assert.equal(await items(page).count(), count);

      // A ZIP holding conversations.json, with a newer version of the ChatGPT export: one more exchange.
      const chatgpt = JSON.parse(await readFile(join(FIXTURES, 'chatgpt.json'), 'utf8'));
      const node = (id, role, parent, text) => ({ id, parent, children: [], message: { id, author: { role }, create_time: 1714000500, content: { content_type: 'text', parts: [text] }, metadata: {}, recipient: 'all' } });
      chatgpt[0].mapping.u4 = node('u4', 'user', 'a3', 'Thanks!');
      chatgpt[0].mapping.a4 = node('a4', 'assistant', 'u4', "You're welcome.");
      chatgpt[0].current_node = 'a4';
      const archive = zip([['user.json', Buffer.from('{"id":"user-1"}')], ['conversations.json', Buffer.from(JSON.stringify(chatgpt))]]);
      const fromZip = await preview(page, { name: 'chatgpt-export.zip', mimeType: 'application/zip', buffer: archive });
      assert.match(fromZip, /New here: 0 conversations and 2 messages/);
      await confirm(page);
      assert.deepEqual((await stored(page))['Rust and Leptos'].slice(-2), ['u: Thanks!', "a: You're welcome."]);
      assert.equal(await items(page).count(), count);

      // Cancel writes nothing.
      const fresh = JSON.parse(await readFile(join(FIXTURES, 'claude.json'), 'utf8'));
      fresh[0].uuid = 'another-claude-conversation';
      fresh[0].name = 'Never imported';
      await preview(page, { name: 'claude-new.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(fresh)) });
      await page.locator(tid('import-cancel')).click();
      await page.locator(tid('import-preview')).waitFor({ state: 'detached' });
      assert.equal(await items(page).count(), count);

      // A broken file: a clear error naming the file, nothing written.
      chatgpt[1].current_node = 'does-not-exist';
      chatgpt[1].conversation_id = chatgpt[1].id = 'a-new-one';
      await openMenu(page);
      await page.locator(tid('import-input')).setInputFiles({ name: 'broken-conversations.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(chatgpt)) });
      const banner = page.locator(tid('error-banner'));
      await banner.filter({ hasText: 'broken-conversations.json' }).filter({ hasText: '"current_node" does-not-exist is not in "mapping"' }).waitFor();
      assert.equal(await items(page).count(), count);
      assert.ok(!('Never imported' in (await stored(page))));
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

/** A ChatGPT export of `n` conversations of `per` messages (a hidden system node first in each). */
function bigChatgpt(n, per) {
  const out = [];
  for (let c = 0; c < n; c++) {
    const id = `big-${c}`;
    const mapping = { [`${id}-root`]: { id: `${id}-root`, parent: null, children: [], message: null } };
    let parent = `${id}-root`;
    for (let m = 0; m < per; m++) {
      const nid = `${id}-m${m}`;
      mapping[nid] = { id: nid, parent, children: [], message: { id: nid, author: { role: m % 2 ? 'assistant' : 'user' }, create_time: 1_700_000_000 + m,
        content: { content_type: 'text', parts: [`Conversation ${c}, message ${m}: some words to make the file a little larger than it would be.`] }, metadata: {}, recipient: 'all' } };
      parent = nid;
    }
    out.push({ id, title: `Big ${c}`, mapping, current_node: parent });
  }
  return Buffer.from(JSON.stringify(out));
}

/**
 * Chooses `file` and watches import-progress in the page: every (phase, value, max) it shows is
 * recorded, and when `cancelAt` is given ({ phase, after: fraction }), the page itself clicks
 * import-cancel as soon as the bar is that far in that phase (a click from here would come too late).
 */
async function watchImport(page, file, cancelAt) {
  await page.evaluate((cancelAt) => {
    const seen = (window.__progress = []);
    const obs = new MutationObserver(() => {
      const bar = document.querySelector('[data-testid="import-progress"]');
      if (!bar) return;
      const s = { phase: bar.dataset.phase, value: Number(bar.getAttribute('value')), max: Number(bar.getAttribute('max')) };
      const last = seen[seen.length - 1];
      if (!last || last.phase !== s.phase || last.value !== s.value || last.max !== s.max) seen.push(s);
      if (cancelAt && s.phase === cancelAt.phase && s.value > 0 && s.value >= s.max * cancelAt.after) {
        cancelAt = null;
        seen.push({ cancelled: true, ...s });
        document.querySelector('[data-testid="import-cancel"]').click();
      }
    });
    obs.observe(document, { childList: true, subtree: true, attributes: true });
    window.__stopWatching = () => obs.disconnect();
  }, cancelAt ?? null);
  await openMenu(page);
  await page.locator(tid('import-input')).setInputFiles(file);
}

const progressSeen = (page) => page.evaluate(() => {
  window.__stopWatching();
  return window.__progress;
});

async function cancelledNotice(page) {
  const notice = page.locator(tid('notice')).filter({ hasText: 'Import cancelled: nothing was written.' });
  await notice.waitFor({ state: 'visible' });
  await page.locator(tid('notice')).getByRole('button', { name: 'Dismiss' }).click();
}

test('import: a large export shows its progress (reading, checking, writing); a cancel while checking or writing writes nothing', async () => {
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'import-progress', async () => {
      await openApp(page, harness.site.url);
      const N = 300;
      const PER = 20;
      const file = { name: 'conversations.json', mimeType: 'application/json', buffer: bigChatgpt(N, PER) };

      // Cancelled halfway through checking: no preview, nothing written.
      await watchImport(page, file, { phase: 'checking', after: 0.5 });
      await cancelledNotice(page);
      let seen = await progressSeen(page);
      assert.ok(seen.some((s) => s.cancelled && s.phase === 'checking'), JSON.stringify(seen));
      assert.equal(await page.locator(tid('import-preview')).count(), 0);
      assert.equal(await items(page).count(), 0);

      // Cancelled while writing (after the preview's confirm): the transaction is aborted.
      await watchImport(page, file, { phase: 'writing', after: 0.3 });
      const text = await page.locator(tid('import-preview')).innerText();
      assert.match(text, new RegExp(`ChatGPT export: ${N} conversations, ${N * PER} messages`));
      assert.match(text, new RegExp(`New here: ${N} conversations and ${N * PER} messages`));
      await page.locator(tid('import-confirm')).click();
      await cancelledNotice(page);
      seen = await progressSeen(page);
      const cut = seen.find((s) => s.cancelled);
      assert.ok(cut && cut.phase === 'writing' && cut.value < cut.max, `cancelled mid-write: ${JSON.stringify(cut)}`);
      assert.equal(await items(page).count(), 0);
      assert.deepEqual(await stored(page), {}, 'nothing of the cancelled write was stored');

      // To the end: the bar goes reading -> checking -> writing, each phase only forward.
      await watchImport(page, file);
      await page.locator(tid('import-confirm')).click();
      const notice = page.locator(tid('notice')).filter({ hasText: 'Imported' });
      await notice.waitFor({ state: 'visible' });
      assert.match(await notice.innerText(), new RegExp(`Imported ${N} conversations and ${N * PER} messages from ChatGPT`));
      seen = await progressSeen(page);
      const phases = [...new Set(seen.map((s) => s.phase))];
      assert.deepEqual(phases, ['reading', 'checking', 'writing'], JSON.stringify(seen));
      for (const phase of ['checking', 'writing']) {
        const values = seen.filter((s) => s.phase === phase).map((s) => s.value);
        assert.ok(new Set(values).size >= 3, `${phase}: the bar moved (${values})`);
        assert.deepEqual(values, [...values].sort((a, b) => a - b), `${phase}: only forward`);
      }
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="conversation-item"]').length > 0, N);
      const all = await stored(page);
      assert.equal(Object.keys(all).length, N);
      assert.deepEqual(all['Big 7'].slice(0, 2), ['u: Conversation 7, message 0: some words to make the file a little larger than it would be.', 'a: Conversation 7, message 1: some words to make the file a little larger than it would be.']);
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

/** A NextChat backup of `n` sessions of `per` messages (and an access key, never imported). */
function bigNextChat(n, per) {
  const sessions = [];
  for (let s = 0; s < n; s++) {
    const messages = [];
    for (let m = 0; m < per; m++) {
      messages.push({ id: `nc-${s}-${m}`, date: '2024/5/3 10:00:00', role: m % 2 ? 'assistant' : 'user', content: `Session ${s}, message ${m}: words enough to make the backup large.` });
    }
    sessions.push({ id: `nc-${s}`, topic: `NextChat ${s}`, memoryPrompt: '', messages, mask: { context: [] }, lastUpdate: 1_715_000_000_000 + s });
  }
  return Buffer.from(JSON.stringify({ 'chat-next-web-store': { sessions }, 'access-control': { openaiApiKey: 'sk-never-imported' } }, null, 2));
}

/** Imports `file` to its preview while watching the bar; the checking values seen, and the preview text. */
async function checkedInSlices(page, file) {
  await watchImport(page, file);
  const p = page.locator(tid('import-preview'));
  await p.waitFor({ state: 'visible' });
  const text = await p.innerText();
  const checking = (await progressSeen(page)).filter((s) => s.phase === 'checking').map((s) => s.value);
  assert.ok(new Set(checking).size >= 3, `checked in slices, the bar moving: ${checking}`);
  // The bar's first 80% is unzipping and parsing (its last 20% checking): read whole, it would
  // jump from 0 past it in one task.
  assert.ok(new Set(checking.filter((v) => v > 0 && v < 800)).size >= 2, `parsed in slices: ${checking}`);
  assert.deepEqual(checking, [...checking].sort((a, b) => a - b), 'only forward');
  return text;
}

test('import: a large NextChat backup in a ZIP, and our own large backup, are read in slices with the whole file\'s result', async () => {
  const { context, page, issues } = await newAppPage(harness.browser);
  try {
    await withDiagnostics(page, issues, 'import-sliced-formats', async () => {
      await openApp(page, harness.site.url);
      const N = 200;
      const PER = 20;
      const archive = zip([['NextChat-backup.json', bigNextChat(N, PER)]]);
      const text = await checkedInSlices(page, { name: 'backup.zip', mimeType: 'application/zip', buffer: archive });
      assert.match(text, new RegExp(`NextChat export: ${N} conversations, ${N * PER} messages`));
      await confirm(page);
      const all = await stored(page);
      assert.equal(Object.keys(all).length, N);
      assert.deepEqual(all['NextChat 17'].slice(0, 2), ['u: Session 17, message 0: words enough to make the backup large.', 'a: Session 17, message 1: words enough to make the backup large.']);
      assert.ok(!JSON.stringify(all).includes('sk-never-imported'), 'the access key is not imported');

      // Our own backup of the same, into a fresh page: read in slices, the same conversations.
      await openMenu(page);
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator(tid('export-all-json')).click()]);
      const backup = await readFile(await download.path());
      const fresh = await newAppPage(harness.browser);
      try {
        await openApp(fresh.page, harness.site.url);
        const again = await checkedInSlices(fresh.page, { name: 'memoire-backup.json', mimeType: 'application/json', buffer: backup });
        assert.match(again, new RegExp(`Memoire backup: ${N} conversations, ${N * PER} messages`));
        await confirm(fresh.page);
        assert.deepEqual(await stored(fresh.page), all);
        assertNoPageProblems(fresh.issues);
      } finally {
        await fresh.context.close();
      }
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
