// A large library for the library journey (library.test.mjs) and its benchmark
// (bench/library.bench.mjs): `n` conversations of two messages each, as one backup file that the app's
// own Import control writes in one transaction (no clicking through the UI one by one). Conversation 0
// is the oldest; conversation i was last active i minutes after it. Only conversation 0 holds the
// word "quetzal" (in a message) and the title "Lighthouse keeper"; every message holds a few words of
// a small vocabulary, so a common word matches thousands of messages.

const WORDS = [
  'garden', 'harbour', 'violin', 'recipe', 'mountain', 'python', 'budget', 'planet', 'river', 'poetry',
  'kitchen', 'engine', 'meadow', 'museum', 'theory', 'winter', 'library', 'coffee', 'window', 'silver',
  'market', 'forest', 'travel', 'number', 'letter', 'camera', 'bridge', 'island', 'shadow', 'sunset',
];
const word = (i, k) => WORDS[(i * 7 + k * 13) % WORDS.length];
export const START = Date.UTC(2023, 0, 1);
export const OLD_WORD = 'quetzal';
export const OLD_TITLE = 'Lighthouse keeper';

const overrides = {
  recent_messages: null, summary_every_pairs: null, context_tokens: null, reply_reserve_tokens: null,
  max_message_chars: null, history_format: null,
};

/** The id of conversation `i`. */
export const libraryId = (i) => `lib-${String(i).padStart(5, '0')}`;

/** The backup file (engine/backup, version 1) of a library of `n` conversations, as JSON text. */
export function libraryBackup(n) {
  const conversations = [];
  for (let i = 0; i < n; i += 1) {
    const id = libraryId(i);
    const at = START + i * 60_000;
    const messages = [
      `About the ${word(i, 0)} and the ${word(i, 1)}: what would you do first? (note ${i})`,
      `I would start with the ${word(i, 2)}, then the ${word(i, 3)}${i === 0 ? `; the ${OLD_WORD} can wait` : ''}.`,
    ].map((content, k) => ({
      id: `${id}-m${k + 1}`, conversation_id: id, seq: k + 1, role: k ? 'assistant' : 'user', content, status: 'complete',
      created_at: at - 1000 + k * 1000, tool_calls: [], usage: null, error: null, path: null, model: null,
    }));
    conversations.push({
      conversation: {
        id, title: i === 0 ? OLD_TITLE : `Library ${word(i, 4)} ${i}`, title_is_custom: true, created_at: at - 1000, updated_at: at,
        message_count: 2, endpoint_profile_id: null, remote_handle: null, last_path: null, memory_overrides: overrides,
      },
      messages, summaries: [], entities: [],
    });
  }
  return JSON.stringify({ format: 'memoire-backup', version: 1, exported_at: START + n * 60_000, shared_entities: [], conversations });
}

/** Imports the library through the backup menu (confirming its preview) and waits for the notice that reports it. */
export async function importLibrary(page, n, { timeout = 20_000 } = {}) {
  await page.locator('[data-testid="export-button"]').click();
  await page.locator('[data-testid="import-input"]').setInputFiles({ name: 'library.json', mimeType: 'application/json', buffer: Buffer.from(libraryBackup(n)) });
  await page.locator('[data-testid="import-preview"]').waitFor({ state: 'visible', timeout });
  await page.locator('[data-testid="import-confirm"]').click();
  await page.locator('[data-testid="notice"]').waitFor({ state: 'visible', timeout });
}

/** How many conversation rows the sidebar has mounted. */
export function mountedItems(page) {
  return page.evaluate(() => document.querySelectorAll('[data-testid="conversation-list"] [data-testid="conversation-item"]').length);
}

/**
 * Types `text` into the search field (one input event, as a paste or the last key of a word does) and
 * returns the milliseconds until the first result (a conversation by its title, or a message) is in
 * the page.
 */
export function timeSearch(page, text) {
  return page.evaluate(async (text) => {
    const input = document.querySelector('[data-testid="conversation-search"]');
    const t0 = performance.now();
    input.value = text;
    input.dispatchEvent(new Event('input', { bubbles: true }));
    return new Promise((resolve, reject) => {
      setTimeout(() => reject(new Error(`no search result for "${text}" within 15 s`)), 15_000);
      const seen = () => document.querySelector('[data-testid="search-hit"], [data-testid="search-results"] [data-testid="conversation-item"]');
      if (seen()) return resolve(performance.now() - t0);
      const obs = new MutationObserver(() => {
        if (seen()) {
          obs.disconnect();
          resolve(performance.now() - t0);
        }
      });
      obs.observe(document.body, { childList: true, subtree: true });
    });
  }, text);
}
