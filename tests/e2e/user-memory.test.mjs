// Memory about you, across conversations (issue 26; in German and proposed by the model, issue 42): what the user says about
// themselves in one conversation is in the first request of a new one; forgetting it on the Memory page takes it out
// of the next request; with "Remember me across conversations" off, no request carries it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startHarness,
  openConfiguredApp,
  chatTurn,
  openSettings,
  saveSettings,
  assertNoPageProblems,
  withDiagnostics,
  eventually,
  tid,
  showInspector,
  requestText,
  factsSent,
  currentConversationId,
} from './helpers.mjs';
import { memoryReplyText } from './agent-server.mjs';

let harness;
before(async () => {
  harness = await startHarness();
});
after(() => harness?.close());

const NAME = 'My name is Marta and I live in Lisbon.';


async function newConversation(page) {
  await page.locator(tid('new-conversation')).click();
  await page.locator(tid('message')).first().waitFor({ state: 'detached' });
}

test('user memory: a fact said in one conversation reaches the next; forgotten, it leaves every prompt', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'user-memory', async () => {
      await chatTurn(page, agent, NAME, 'Nice to meet you, Marta.');
      // The fact lands in the background, after the request went out.
      await page.locator(tid('memory-page-open')).click();
      const facts = page.locator(tid('memory-page')).locator(tid('user-fact'));
      // The page reads the facts again when they change, so one that lands after it opened shows.
      await facts.first().waitFor({ state: 'visible' });
      await eventually(async () => (await facts.allInnerTexts()).join(' ').includes('Lisbon'), { what: 'both facts on the Memory page' });
      const texts = await facts.allInnerTexts();
      assert.ok(texts.some((t) => t.includes('Marta')), `the name is a fact: ${texts}`);
      assert.ok(texts.some((t) => t.includes('Lisbon')), `the city is a fact: ${texts}`);
      await page.keyboard.press('Escape');

      await newConversation(page);
      await chatTurn(page, agent, 'What is my name and where do I live?', 'You are Marta, in Lisbon.');
      const first = agent.chatRequests().at(-1);
      const carried = factsSent(first).join('\n');
      assert.ok(carried.includes('Marta') && carried.includes('Lisbon'), `the new conversation's first request carries the facts: ${requestText(first)}`);
      assert.ok(!first.body.messages.some((m) => m.content === NAME), 'not as history: the other conversation is not replayed');
      // The inspector says where each fact came from: the day and the conversation.
      const source = page.locator(tid('inspector-source', '[data-section="user-facts"]')).filter({ hasText: 'Marta' }).first();
      await source.waitFor({ state: 'attached' });
      assert.match(await source.textContent(), /\d{4}-\d{2}-\d{2} · in “My name is Marta/, 'said on a day, in the first conversation');

      // Forget the name: the next request of any conversation leaves it out.
      await page.locator(tid('memory-page-open')).click();
      const marta = page.locator(tid('user-fact')).filter({ hasText: 'Marta' }).first();
      await marta.locator(tid('user-fact-forget')).click();
      await marta.locator(tid('confirm-forget')).click();
      await page.locator(tid('user-fact')).filter({ hasText: 'Marta' }).waitFor({ state: 'detached' });
      await page.keyboard.press('Escape');
      await chatTurn(page, agent, 'And now?', 'I do not know your name.');
      const after = factsSent(agent.chatRequests().at(-1));
      assert.ok(after.length > 0 && !after.join('\n').includes('Marta'), `a forgotten fact is in no prompt, the others stay: ${after}`);

      // Off in Settings: no request carries a fact about the user.
      await openSettings(page);
      await page.locator(tid('settings-memory-across')).uncheck();
      await saveSettings(page);
      await newConversation(page);
      await chatTurn(page, agent, 'Where do I live?', 'I cannot say.');
      const off = agent.chatRequests().at(-1);
      assert.deepEqual(factsSent(off), [], `with memory about you off, the prompt carries none: ${requestText(off)}`);
      assert.ok(!requestText(off).includes('Lisbon'), 'not a word of them');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

// Issue 42: beyond English, by the rules' German table (engine/memory/lang/de.rs).
const GERMAN = 'Ich heiße Lukas und wohne in Köln. Ich arbeite als Tischler. Meine Tochter heißt Emma.';

test('user memory in German: name, city, job and child reach the next conversation, listed with their source', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'user-memory-german', async () => {
      await chatTurn(page, agent, GERMAN, 'Freut mich, Lukas.');
      await page.locator(tid('memory-page-open')).click();
      const facts = page.locator(tid('memory-page')).locator(tid('user-fact'));
      const words = ['Lukas', 'Köln', 'Tischler', 'Emma'];
      await eventually(async () => {
        const all = (await facts.allInnerTexts()).join(' ');
        return words.every((w) => all.includes(w));
      }, { what: 'the four German facts on the Memory page' });
      for (const w of words) {
        const item = facts.filter({ hasText: w }).first();
        assert.equal(await item.getAttribute('data-status'), 'current', `${w}: current`);
        assert.equal(await item.locator(tid('user-fact-source')).count(), 1, `${w}: listed with its source`);
      }
      await page.keyboard.press('Escape');

      await newConversation(page);
      await chatTurn(page, agent, 'Was weißt du über mich?', 'Du bist Lukas aus Köln.');
      const first = agent.chatRequests().at(-1);
      const carried = factsSent(first).join('\n');
      for (const w of words) {
        assert.ok(carried.includes(w), `the first request of the next conversation carries ${w} in "About the user": ${requestText(first)}`);
      }
      assert.ok(!first.body.messages.some((m) => m.content === GERMAN), 'as facts, not as history');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

// Issue 42: a language the rules do not know (Polish). The memory model proposes facts
// (engine/memory/proposed.rs); one is stored only when the user's message holds it, in the user's words.
const POLISH = 'Cześć! Od pięciu lat mieszkam w Gdańsku nad morzem.';

test("user memory in a language the rules do not know: a fact the model proposes is kept only when the user's message holds it", async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat', { summaryFrequency: 1 });
  try {
    await withDiagnostics(page, issues, 'user-memory-proposed', async () => {
      agent.scriptMemory({
        text: memoryReplyText({ summary: 'Użytkownik mieszka w Gdańsku.' }),
        userFacts: [
          // The user's words, reordered and without accents: grounded.
          { quote: 'mieszkam w Gdansku nad morzem od pieciu lat', kind: 'home' },
          // Invented: the user said nothing of a job.
          { quote: 'Pracuję jako pielęgniarka', kind: 'work' },
          // The model's own wording: not the user's.
          { quote: 'Użytkownik mieszka w Gdańsku', kind: 'home' },
        ],
      });
      await chatTurn(page, agent, POLISH, 'Miło mi!');
      const [update] = await agent.waitForRequests(1, { filter: (r) => r.kind === 'memory' });
      const schema = update.body.response_format.json_schema.schema;
      assert.ok(schema.required.includes('user_facts') && schema.required.includes('user_facts_ended'), 'the update asks for the facts about the user');

      await page.locator(tid('memory-page-open')).click();
      const facts = page.locator(tid('memory-page')).locator(tid('user-fact'));
      await eventually(async () => (await facts.allInnerTexts()).join(' ').includes('Gdańsku'), { what: 'the proposed fact on the Memory page' });
      const texts = await facts.allInnerTexts();
      assert.equal(texts.length, 1, `one fact, the grounded one: ${texts}`);
      assert.ok(texts[0].includes('Od pięciu lat mieszkam w Gdańsku nad morzem.'), `stored in the user's words, not the model's: ${texts}`);
      assert.ok(!texts.join(' ').includes('pielęgniarka') && !texts.join(' ').includes('Użytkownik'), 'the invention and the model\'s wording are not stored');
      const item = facts.first();
      assert.equal(await item.getAttribute('data-status'), 'current');
      assert.equal(await item.locator(tid('user-fact-source')).count(), 1, 'listed with its source');
      await page.keyboard.press('Escape');

      await newConversation(page);
      await chatTurn(page, agent, 'Co o mnie wiesz?', 'Mieszkasz w Gdańsku.');
      const first = agent.chatRequests().at(-1);
      const carried = factsSent(first).join('\n');
      assert.ok(carried.includes('Od pięciu lat mieszkam w Gdańsku nad morzem.'), `the next conversation's first request carries it in "About the user": ${requestText(first)}`);
      assert.ok(!carried.includes('pielęgniarka'), 'never the invented one');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('user memory: off for one conversation, or for the endpoint, no request carries a fact', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'user-memory-switches', async () => {
      await chatTurn(page, agent, 'I work as a nurse in Porto.', 'A demanding job.');
      await page.locator(tid('memory-page-open')).click();
      await page.locator(tid('user-fact')).filter({ hasText: 'nurse' }).first().waitFor({ state: 'visible' });
      await page.keyboard.press('Escape');

      // A new conversation carries it, until its own switch is off.
      await newConversation(page);
      await chatTurn(page, agent, 'Hello again.', 'Hello.');
      assert.ok(factsSent(agent.chatRequests().at(-1)).join('\n').includes('nurse'), 'carried by default');
      const own = page.locator(tid('conversation-use-user-memory'));
      await own.waitFor({ state: 'visible' });
      assert.equal(await own.getAttribute('aria-checked'), 'true', 'on, as Settings say');
      await own.click();
      await eventually(async () => (await own.getAttribute('aria-checked')) === 'false', { what: 'the switch saved' });
      await chatTurn(page, agent, 'What do I do for a living?', 'I cannot say.');
      assert.deepEqual(factsSent(agent.chatRequests().at(-1)), [], 'off for this conversation: none');

      // Another conversation still has them; with the endpoint's switch on, none goes to it.
      await openSettings(page);
      await page.locator(tid('settings-endpoint-no-user-memory')).check();
      await saveSettings(page);
      await newConversation(page);
      await chatTurn(page, agent, 'Where do I work?', 'I do not know.');
      const sentTo = agent.chatRequests().at(-1);
      assert.deepEqual(factsSent(sentTo), [], 'not sent to this endpoint');
      assert.ok(!requestText(sentTo).includes('nurse'), 'not a word of them');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('user memory: the Memory page mounts its facts a page at a time, counts them all, and searches all', async () => {
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'user-memory-pages', async () => {
      await page.locator(tid('memory-page-open')).waitFor({ state: 'visible' });
      await page.evaluate(async () => {
        const db = await new Promise((res, rej) => { const r = indexedDB.open('memoire'); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
        await new Promise((res, rej) => {
          const tx = db.transaction('user_facts', 'readwrite');
          const s = tx.objectStore('user_facts');
          for (let i = 0; i < 250; i += 1) {
            s.put({ id: `f${i}`, text: `I like thing number ${i}.`, kind: 'preference', claim_key: `likes thing${i}`, source: null, valid_from: i, valid_to: null, forgotten: null, scope: null, updated_at: i });
          }
          tx.oncomplete = res;
          tx.onerror = () => rej(tx.error);
        });
        db.close();
      });
      await page.reload();
      await page.locator(tid('memory-page-open')).click();
      const facts = page.locator(tid('user-fact'));
      await page.locator(tid('memory-page-count')).filter({ hasText: '250 facts' }).waitFor();
      await eventually(async () => (await facts.count()) === 200, { what: 'the first page of facts' });
      await page.locator(tid('memory-page-more')).click();
      await eventually(async () => (await facts.count()) === 250, { what: 'every fact after Show more' });
      assert.equal(await page.locator(tid('memory-page-more')).count(), 0, 'nothing more to show');
      // Every word of the search, in any case, over every fact: "49." is in 49, 149 and 249 (the
      // page opened newest first with 249 down to 50; 49 came only with Show more).
      await page.reload();
      await page.locator(tid('memory-page-open')).click();
      await page.locator(tid('memory-page-search')).fill('Number 49.');
      await eventually(async () => (await facts.count()) === 3, { what: 'the search over every fact' });
      assert.ok((await facts.allInnerTexts()).some((t) => t.includes('thing number 49.')), 'a fact past the first page is found');
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});

test('recall: a message that refers back gets the passage from the other conversation, cited; off with the switch', async () => {
  const { agent } = harness;
  const { context, page, issues } = await openConfiguredApp(harness, 'openai-chat');
  try {
    await withDiagnostics(page, issues, 'recall', async () => {
      await chatTurn(page, agent, 'Garden plan: the tomatoes go along the south fence, basil between them.', 'A sunny spot, good.');
      const garden = await currentConversationId(page);
      await newConversation(page);
      await chatTurn(page, agent, 'Do you remember where the tomatoes go in the garden?', 'Yes, I remember.');
      const asked = requestText(agent.chatRequests().at(-1));
      const at = asked.indexOf("## From the user's other conversations");
      assert.ok(at >= 0, `the passage is carried: ${asked}`);
      const section = asked.slice(at).split('\n\n')[0];
      assert.ok(section.includes('south fence'), `the words said then: ${section}`);
      assert.ok(section.includes('“Garden plan'), `cited by its conversation's title: ${section}`);
      assert.match(section, /on \d{4}-\d{2}-\d{2}:/, 'and its day');
      // The inspector shows it as its own section, with where and when it was said.
      await showInspector(page);
      await page.locator(tid('composer-input')).fill('Do you remember the basil and the tomatoes?');
      const row = page.locator(tid('inspector-section', '[data-section="recall"]'));
      await row.waitFor({ state: 'attached' });
      await eventually(async () => (await row.textContent()).includes('Garden plan'), { what: 'the recall row names the conversation' });
      // A message that does not refer back carries none.
      await chatTurn(page, agent, 'What grows well next to tomatoes?', 'Basil.');
      assert.ok(!requestText(agent.chatRequests().at(-1)).includes("other conversations"), 'no cue, no recall');
      // Off for this conversation: none.
      const own = page.locator(tid('conversation-use-user-memory'));
      await own.click();
      await eventually(async () => (await own.getAttribute('aria-checked')) === 'false', { what: 'the switch saved' });
      await chatTurn(page, agent, 'Remember where the tomatoes go in the garden?', 'I cannot say.');
      const off = requestText(agent.chatRequests().at(-1));
      assert.ok(!off.includes('other conversations') && !off.includes('south fence'), `off: nothing recalled: ${off}`);
      // Back on, the inspector's passage opens the conversation it was said in.
      await own.click();
      await eventually(async () => (await own.getAttribute('aria-checked')) === 'true', { what: 'the switch saved' });
      await page.locator(tid('composer-input')).fill('Do you remember the south fence?');
      const passage = page.locator(tid('inspector-source', '[data-section="recall"]')).first();
      await passage.waitFor({ state: 'attached' });
      await passage.locator(tid('inspector-source-open')).click();
      await eventually(async () => (await currentConversationId(page)) === garden, { what: 'the garden conversation opened' });
      assertNoPageProblems(issues);
    });
  } finally {
    await context.close();
  }
});
