#![cfg(not(target_arch = "wasm32"))]
//! Memory about the user across conversations (`engine::memory::user`, issue 26 item 1): what is
//! extracted from a user's message, how a newer fact makes an older one past, duplicates, the
//! user's controls (forget, edit, add), which facts a prompt carries within its budget, and the
//! assembly's "About you" section (`engine::assemble`, `SectionKind::UserFacts`).

use memoire::engine::assemble::{
    assemble, Assembly, AssemblyInput, DropReason, SectionKind, USER_FACTS_SHARE_PERCENT,
};
use memoire::engine::memory::user::*;
use memoire::engine::model::*;
use memoire::engine::tokens::{HeuristicEstimator, TokenEstimator};
use proptest::prelude::*;

const DAY: i64 = 86_400_000;
/// 2026-11-20 00:00 UTC.
const NOV_20: i64 = 1_795_132_800_000;

/// Ids `f1`, `f2`, … in order.
fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("f{n}")
    }
}

/// The facts after each of `said` (text, day from NOV_20) as messages `m0`, `m1`, … of conversation
/// `c` (or `c<k>` for message k when `spread`).
fn facts_after(said: &[(&str, i64)]) -> Vec<UserFact> {
    let mut facts = Vec::new();
    let mut id = ids();
    for (k, (text, day)) in said.iter().enumerate() {
        handle_said(
            &mut facts,
            &format!("c{k}"),
            &format!("m{k}"),
            text,
            NOV_20 + day * DAY,
            &mut id,
        );
    }
    facts
}

fn current(facts: &[UserFact]) -> Vec<&str> {
    facts
        .iter()
        .filter(|f| f.is_current())
        .map(|f| f.text.as_str())
        .collect()
}

fn past(facts: &[UserFact]) -> Vec<&str> {
    facts
        .iter()
        .filter(|f| f.valid_to.is_some() && f.forgotten.is_none())
        .map(|f| f.text.as_str())
        .collect()
}

// ---------- extraction ----------

fn check_said(text: &str, want: &[(&str, FactKind)]) {
    let got: Vec<(String, FactKind)> = facts_said(text, &[])
        .into_iter()
        .map(|c| (c.text, c.kind))
        .collect();
    let want: Vec<(String, FactKind)> = want.iter().map(|(t, k)| (t.to_string(), *k)).collect();
    assert_eq!(got, want, "facts said in {text:?}");
}

#[test]
fn statements_about_the_user_are_facts() {
    use FactKind::*;
    check_said("My name is Marta.", &[("My name is Marta.", Name)]);
    check_said("Hi! I'm Ingrid.", &[("I'm Ingrid.", Name)]);
    check_said("Please call me Tomas", &[("Please call me Tomas.", Name)]);
    check_said("I live in Oslo now.", &[("I live in Oslo now.", Home)]);
    check_said(
        "By the way, I moved to Oslo last month.",
        &[("I moved to Oslo last month.", Home)],
    );
    check_said("I grew up in Bergen.", &[("I grew up in Bergen.", Home)]);
    check_said("No, I live in Oslo.", &[("I live in Oslo.", Home)]);
    check_said(
        "No pets are allowed in my flat.",
        &[("No pets are allowed in my flat.", Home)],
    );
    check_said(
        "I work as a nurse at the children's hospital.",
        &[("I work as a nurse at the children's hospital.", Work)],
    );
    check_said("I'm a pilot.", &[("I'm a pilot.", Work)]);
    check_said(
        "My daughter Sofia is seven.",
        &[("My daughter Sofia is seven.", People)],
    );
    check_said(
        "My sister lives in Bergen.",
        &[("My sister lives in Bergen.", People)],
    );
    check_said("I'm married.", &[("I'm married.", People)]);
    check_said(
        "I have a dog called Biscuit.",
        &[("I have a dog called Biscuit.", Pets)],
    );
    check_said(
        "Our cat Zorblax hates the rain.",
        &[("Our cat Zorblax hates the rain.", Pets)],
    );
    check_said(
        "I love hiking in the mountains.",
        &[("I love hiking in the mountains.", Preference)],
    );
    check_said(
        "My favourite food is sushi.",
        &[("My favourite food is sushi.", Preference)],
    );
    check_said("I'm vegetarian.", &[("I'm vegetarian.", Preference)]);
    check_said(
        "I'm allergic to peanuts.",
        &[("I'm allergic to peanuts.", Health)],
    );
    check_said("I can't eat gluten.", &[("I can't eat gluten.", Health)]);
    check_said(
        "I'm writing a novel about glassblowers.",
        &[("I'm writing a novel about glassblowers.", Project)],
    );
    check_said(
        "I'm learning Norwegian",
        &[("I'm learning Norwegian.", Project)],
    );
    check_said(
        "I drive an old green Volvo.",
        &[("I drive an old green Volvo.", Other)],
    );
    check_said("I'm 34 years old.", &[("I'm 34 years old.", Other)]);
    check_said("I don't eat meat.", &[("I don't eat meat.", Preference)]);
    // A sentence of several facts is cut where a new one starts, so each changes on its own.
    check_said(
        "Hi there! I'm Marta, I live in Lisbon and I work as a nurse.",
        &[
            ("I'm Marta.", Name),
            ("I live in Lisbon.", Home),
            ("I work as a nurse.", Work),
        ],
    );
    check_said(
        "I love cats but my sister hates them.",
        &[
            ("I love cats.", Preference),
            ("My sister hates them.", People),
        ],
    );
    check_said(
        "My wife and I live in Oslo.",
        &[("My wife and I live in Oslo.", Home)],
    );
    check_said(
        "Since I moved, I live in Oslo.",
        &[("Since I moved, I live in Oslo.", Home)],
    );
    check_said(
        "I have two cats, Mochi and Pixel.",
        &[("I have two cats, Mochi and Pixel.", Pets)],
    );
    // Several in one message, each once.
    check_said(
        "Hi! My name is Marta. I live in Lisbon. I live in Lisbon.",
        &[("My name is Marta.", Name), ("I live in Lisbon.", Home)],
    );
}

#[test]
fn questions_requests_hypotheticals_and_others_are_not() {
    check_said("What is my name and where do I live?", &[]);
    check_said("Where do I live", &[]);
    check_said("Can you tell me about Oslo?", &[]);
    check_said("Please give me a recipe for my dog.", &[]);
    check_said("Tell me a joke about my job.", &[]);
    check_said("I want you to remember my sister.", &[]);
    check_said("If I lived in Oslo I would ski every day.", &[]);
    check_said("I would love to live in Paris.", &[]);
    check_said("I want to move to Oslo.", &[]);
    check_said("Maybe I'll get a dog.", &[]);
    check_said("I'm going to be a pilot.", &[]);
    check_said("Ingrid lives in Trondheim.", &[]);
    check_said("He works as a nurse.", &[]);
    check_said("The weather is nice today.", &[]);
    check_said("You are a helpful assistant.", &[]);
    check_said("My friend says you are great.", &[]);
    check_said("I think so.", &[]);
    check_said("I'm not sure.", &[]);
    check_said("I agree with you.", &[]);
    check_said("I'm Norwegian.", &[]);
    check_said("Thanks!", &[]);
    check_said("```\n# my name is root\nI live in /home\n```", &[]);
    check_said("> I live in Lisbon.", &[]);
    check_said("Jeg bor i Oslo.", &[]);
    check_said("The name is on the door.", &[]);
    check_said("If I had a garden I could sit in it all day.", &[]);
    check_said("I could move abroad some day.", &[]);
    check_said("The soup is delicious.", &[]);
}

// ---------- supersession ----------

/// After `said` (text, day), the current facts and the past ones.
fn check_supersede(said: &[(&str, i64)], now: &[&str], was: &[&str]) {
    let facts = facts_after(said);
    assert_eq!(current(&facts), now, "current after {said:?}");
    assert_eq!(past(&facts), was, "past after {said:?}");
}

#[test]
fn a_newer_fact_makes_the_older_one_past() {
    // Moved.
    check_supersede(
        &[("I live in Lisbon.", 0), ("I moved to Oslo.", 3)],
        &["I moved to Oslo."],
        &["I live in Lisbon."],
    );
    // Changed jobs.
    check_supersede(
        &[
            ("I work as a nurse.", 0),
            ("I changed careers: I am a pilot now.", 2),
        ],
        &["I changed careers: I am a pilot now."],
        &["I work as a nurse."],
    );
    // A pet that died: every fact naming it.
    check_supersede(
        &[
            ("I have a dog called Biscuit.", 0),
            ("Biscuit loves the beach.", 0),
            ("My dog Biscuit loves the beach.", 1),
            ("Biscuit died last week.", 5),
        ],
        &["Biscuit died last week."],
        &[
            "I have a dog called Biscuit.",
            "My dog Biscuit loves the beach.",
        ],
    );
    // Renamed.
    check_supersede(
        &[("My name is Marta.", 0), ("Call me Maria.", 4)],
        &["Call me Maria."],
        &["My name is Marta."],
    );
    check_supersede(
        &[("My name is Marta.", 0), ("My name is now Maria.", 4)],
        &["My name is now Maria."],
        &["My name is Marta."],
    );
    // A move leaves the name and the job said in the same sentence current.
    check_supersede(
        &[
            ("I'm Marta, I live in Lisbon and I work as a nurse.", 0),
            ("I moved to Oslo.", 3),
        ],
        &["I'm Marta.", "I work as a nurse.", "I moved to Oslo."],
        &["I live in Lisbon."],
    );
    check_supersede(
        &[("I'm Tomas.", 0), ("My name is Tom.", 4)],
        &["My name is Tom."],
        &["I'm Tomas."],
    );
    // A negated fact and its opposite.
    check_supersede(
        &[
            ("I don't have a cat.", 0),
            ("I have a cat called Mochi.", 2),
        ],
        &["I have a cat called Mochi."],
        &["I don't have a cat."],
    );
    check_supersede(
        &[("I love coffee.", 0), ("I don't like coffee anymore.", 2)],
        &["I don't like coffee anymore."],
        &["I love coffee."],
    );
    // Someone else's fact changes only theirs.
    check_supersede(
        &[
            ("I live in Oslo.", 0),
            ("My sister lives in Bergen.", 0),
            ("My sister moved to Rome.", 1),
        ],
        &["I live in Oslo.", "My sister moved to Rome."],
        &["My sister lives in Bergen."],
    );
    // A new amount of the same thing.
    check_supersede(
        &[
            ("At the moment I run about 40 kilometres a week.", 0),
            ("I sleep 7 hours a night.", 0),
            ("These days I run about 60 kilometres a week.", 3),
        ],
        &[
            "I sleep 7 hours a night.",
            "These days I run about 60 kilometres a week.",
        ],
        &["At the moment I run about 40 kilometres a week."],
    );
    // A habit given up.
    check_supersede(
        &[
            ("I drink my coffee black.", 0),
            ("I switched from coffee to green tea in the mornings.", 2),
        ],
        &["I switched from coffee to green tea in the mornings."],
        &["I drink my coffee black."],
    );
    // A fact of another kind that names the old place tells something else: it stays.
    check_supersede(
        &[
            ("I live in Bergen.", 0),
            ("My flat in Bergen is near the fish market.", 0),
            ("I'm training for the Bergen City Marathon.", 1),
            ("I moved to Stavanger.", 3),
        ],
        &[
            "I'm training for the Bergen City Marathon.",
            "I moved to Stavanger.",
        ],
        &[
            "I live in Bergen.",
            "My flat in Bergen is near the fish market.",
        ],
    );
    // Unrelated facts stay.
    check_supersede(
        &[
            ("I live in Lisbon.", 0),
            ("I work as a nurse.", 0),
            ("I moved to Oslo.", 3),
        ],
        &["I work as a nurse.", "I moved to Oslo."],
        &["I live in Lisbon."],
    );
}

/// Issue 42's phrasings: dislikes, "from … to …" moves, "we" as the household, a perfect that
/// holds ("since 2015"), "these days" and "by day".
#[test]
fn phrasings_of_dislikes_moves_and_the_household() {
    use FactKind::*;
    check_said(
        "I can't stand cilantro.",
        &[("I can't stand cilantro.", Preference)],
    );
    check_said(
        "I cannot bear jazz.",
        &[("I cannot bear jazz.", Preference)],
    );
    check_said("I loathe olives.", &[("I loathe olives.", Preference)]);
    check_said(
        "I've lived in Ghent since 2015.",
        &[("I've lived in Ghent since 2015.", Home)],
    );
    check_said(
        "I'm based in Ghent these days.",
        &[("I'm based in Ghent these days.", Home)],
    );
    check_said(
        "By day I'm a pastry chef.",
        &[("By day I'm a pastry chef.", Work)],
    );
    check_said(
        "Our son Milo turned four.",
        &[("Our son Milo turned four.", People)],
    );
    // Found by the paraphrase set of benches/memory_eval (said otherwise there).
    check_said("Hi there, my name is Ada.", &[("My name is Ada.", Name)]);
    check_said("I adore jazz.", &[("I adore jazz.", Preference)]);
    check_said(
        "I make a living as a plumber.",
        &[("I make a living as a plumber.", Work)],
    );
    check_said(
        "Olives are something I can't stand.",
        &[("Olives are something I can't stand.", Preference)],
    );
    check_said(
        "Our tabby sleeps on the sofa.",
        &[("Our tabby sleeps on the sofa.", Pets)],
    );
    check_said(
        "Shellfish gives me hives.",
        &[("Shellfish gives me hives.", Health)],
    );
    check_said(
        "Nothing beats cold lemonade for me.",
        &[("Nothing beats cold lemonade for me.", Preference)],
    );
    check_said("The name's Oskar.", &[("The name's Oskar.", Name)]);
    check_said("Name's Tove, hi.", &[("Name's Tove, hi.", Name)]);
    check_said(
        "My two rabbits are called Bo and Pip.",
        &[("My two rabbits are called Bo and Pip.", Pets)],
    );
    check_said(
        "We look after three hamsters.",
        &[("We look after three hamsters.", Pets)],
    );
    check_said(
        "I could drink mango lassi all day.",
        &[("I could drink mango lassi all day.", Preference)],
    );
    check_said(
        "Olives are revolting to me.",
        &[("Olives are revolting to me.", Preference)],
    );
    check_said(
        "I find coriander vile.",
        &[("I find coriander vile.", Preference)],
    );
    check_supersede(
        &[("Home for me is Oslo now.", 0), ("I moved to Bergen.", 3)],
        &["I moved to Bergen."],
        &["Home for me is Oslo now."],
    );
    check_supersede(
        &[
            ("I make a living as a plumber.", 0),
            ("I'm a nurse now.", 3),
        ],
        &["I'm a nurse now."],
        &["I make a living as a plumber."],
    );
    check_supersede(
        &[
            ("I adore jazz.", 0),
            ("Jazz is something I can't stand.", 3),
        ],
        &["Jazz is something I can't stand."],
        &["I adore jazz."],
    );
    check_supersede(
        &[
            ("I live in Ghent.", 0),
            ("Update: we moved from Ghent to Utrecht in the summer.", 3),
        ],
        &["We moved from Ghent to Utrecht in the summer."],
        &["I live in Ghent."],
    );
    check_supersede(
        &[("I live in Ghent.", 0), ("We relocated to Utrecht.", 3)],
        &["We relocated to Utrecht."],
        &["I live in Ghent."],
    );
    check_supersede(
        &[("I love cilantro.", 0), ("I can't stand cilantro.", 3)],
        &["I can't stand cilantro."],
        &["I love cilantro."],
    );
    check_supersede(
        &[
            ("I work as a nurse.", 0),
            ("Since 2015 I've worked as a pilot.", 3),
        ],
        &["Since 2015 I've worked as a pilot."],
        &["I work as a nurse."],
    );
    check_supersede(
        &[("I live in Oslo.", 0), ("I moved in with my partner.", 3)],
        &["I live in Oslo.", "I moved in with my partner."],
        &[],
    );
}

#[test]
fn an_older_message_taken_in_late_is_past_already() {
    let mut facts = facts_after(&[("I moved to Oslo.", 5)]);
    handle_said(&mut facts, "c9", "m9", "I live in Lisbon.", NOV_20, ids());
    assert_eq!(current(&facts), ["I moved to Oslo."]);
    let lisbon = facts
        .iter()
        .find(|f| f.text == "I live in Lisbon.")
        .unwrap();
    assert_eq!(lisbon.valid_to, Some(NOV_20 + 5 * DAY));
    assert_eq!(lisbon.valid_from, NOV_20);
}

#[test]
fn a_fact_keeps_its_source_and_claim() {
    let facts = facts_after(&[("I live in Lisbon.", 0), ("I moved to Oslo.", 3)]);
    let oslo = &facts[1];
    assert_eq!(
        oslo.source,
        Some(FactSource {
            conversation_id: "c1".into(),
            message_id: "m1".into(),
            said_at: NOV_20 + 3 * DAY
        })
    );
    assert_eq!(
        (oslo.claim_key.as_str(), oslo.kind),
        ("lives_in", FactKind::Home)
    );
    assert_eq!(facts[0].valid_to, Some(NOV_20 + 3 * DAY));
    assert_eq!(
        claim_key("My sister lives in Bergen."),
        "user's sister/lives_in"
    );
    assert_eq!(claim_key("I have a dog called Biscuit."), "has dog");
    assert_eq!(claim_key("I'm allergic to peanuts."), "");
}

#[test]
fn a_memory_updates_messages_are_taken_in_the_users_only() {
    let mut deleted = msg(3, Role::User, "I work as a nurse.", 0);
    deleted.meta.deleted = true;
    let mut failed = msg(4, Role::User, "I have a cat.", 0);
    failed.status = MessageStatus::Error;
    let span = [
        msg(1, Role::User, "I live in Lisbon.", 0),
        msg(
            2,
            Role::Assistant,
            "My name is Assistant and I live in the cloud.",
            0,
        ),
        deleted,
        failed,
        msg(5, Role::User, "I moved to Oslo.", 2),
    ];
    let mut facts = Vec::new();
    assert!(handle_messages(&mut facts, &span, ids()));
    assert_eq!(current(&facts), ["I moved to Oslo."]);
    assert_eq!(past(&facts), ["I live in Lisbon."]);
    assert_eq!(facts[1].source.as_ref().unwrap().message_id, "m5");
    assert!(
        !handle_messages(&mut facts, &span, ids()),
        "a second time changes nothing"
    );
}

// ---------- duplicates ----------

fn check_duplicates(said: &[(&str, i64)], kept: &[&str]) {
    let facts = facts_after(said);
    let all: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(all, kept, "after {said:?}");
}

#[test]
fn a_fact_already_current_is_not_added_again() {
    check_duplicates(
        &[("I live in Oslo.", 0), ("I live in Oslo.", 1)],
        &["I live in Oslo."],
    );
    check_duplicates(
        &[("I live in Oslo.", 0), ("I live in Oslo now.", 1)],
        &["I live in Oslo."],
    );
    check_duplicates(
        &[("I live in Oslo.", 0), ("i live in oslo", 1)],
        &["I live in Oslo."],
    );
    // More said about it is a fact of its own.
    check_duplicates(
        &[
            ("I live in Oslo.", 0),
            ("I live in Oslo with my wife Kari.", 1),
        ],
        &["I live in Oslo.", "I live in Oslo with my wife Kari."],
    );
    // A past fact said again is current again.
    let facts = facts_after(&[
        ("I live in Lisbon.", 0),
        ("I moved to Oslo.", 1),
        ("I live in Lisbon.", 2),
    ]);
    assert_eq!(current(&facts), ["I live in Lisbon."]);
    // The same message taken in twice changes nothing.
    let mut facts = facts_after(&[("I live in Lisbon.", 0), ("I moved to Oslo.", 1)]);
    let before = facts.clone();
    assert!(!handle_said(
        &mut facts,
        "c0",
        "m0",
        "I live in Lisbon.",
        NOV_20,
        ids()
    ));
    assert_eq!(facts, before);
}

// ---------- forgetting ----------

#[test]
fn a_forgotten_fact_leaves_and_stays_gone_from_its_source() {
    let mut facts = facts_after(&[("My name is Marta.", 0), ("I live in Oslo.", 0)]);
    assert!(forget(&mut facts, "f1", NOV_20 + DAY));
    assert!(!forget(&mut facts, "f1", NOV_20 + 2 * DAY), "once");
    assert!(!forget(&mut facts, "nope", NOV_20), "no such fact");
    assert_eq!(facts[0].forgotten, Some(NOV_20 + DAY));
    assert_eq!(current(&facts), ["I live in Oslo."]);
    // The same message taken in again (a catch-up, another device) does not bring it back.
    assert!(!handle_said(
        &mut facts,
        "c0",
        "m0",
        "My name is Marta.",
        NOV_20,
        ids()
    ));
    assert_eq!(current(&facts), ["I live in Oslo."]);
    // Said again in a new message, it is a new fact.
    assert!(handle_said(
        &mut facts,
        "c5",
        "m5",
        "My name is Marta.",
        NOV_20 + 3 * DAY,
        || "new".into()
    ));
    assert_eq!(current(&facts), ["I live in Oslo.", "My name is Marta."]);
    assert_eq!(facts.last().unwrap().id, "new");
    // A forgotten fact cannot be edited, and never goes into a prompt.
    assert!(!edit(
        &mut facts,
        "f1",
        "My name is Marte.",
        NOV_20 + 4 * DAY
    ));
    let picked = facts_for_prompt(&facts, None, &[], 1000, &HeuristicEstimator);
    assert!(picked.iter().all(|f| f.id != "f1"));
}

// ---------- edit and add ----------

#[test]
fn an_edit_is_the_users_word() {
    let mut facts = facts_after(&[("I live in Lisbon.", 0), ("I have a cat.", 0)]);
    assert!(edit(&mut facts, "f1", "I live in Porto", NOV_20 + DAY));
    let f = &facts[0];
    assert_eq!(
        (f.text.as_str(), f.kind, f.claim_key.as_str()),
        ("I live in Porto.", FactKind::Home, "lives_in")
    );
    assert_eq!(
        f.source.as_ref().unwrap().message_id,
        "m0",
        "the source is kept"
    );
    assert_eq!((f.valid_from, f.updated_at), (NOV_20, NOV_20 + DAY));
    assert!(
        !edit(&mut facts, "f1", "I live in Porto.", NOV_20 + DAY),
        "unchanged"
    );
    assert!(
        !edit(&mut facts, "f9", "I live in Porto.", NOV_20 + DAY),
        "no such fact"
    );
    // An edit that contradicts another current fact makes that one past.
    assert!(edit(
        &mut facts,
        "f2",
        "I don't have a cat.",
        NOV_20 + 2 * DAY
    ));
    assert!(edit(
        &mut facts,
        "f1",
        "I have a cat called Mochi.",
        NOV_20 + 3 * DAY
    ));
    assert_eq!(current(&facts), ["I have a cat called Mochi."]);
    assert_eq!(facts[1].valid_to, Some(NOV_20 + 3 * DAY));
    // A text the rules know nothing of keeps the kind.
    assert!(edit(&mut facts, "f1", "Mochi is grey", NOV_20 + 4 * DAY));
    assert_eq!(facts[0].kind, FactKind::Pets);
}

fn check_add(text: &str, want: Option<(&str, FactKind)>) {
    let mut facts = Vec::new();
    let added = add(&mut facts, text, NOV_20, "a1".into());
    let got = facts.first().map(|f| (f.text.as_str(), f.kind));
    assert_eq!((added, got), (want.is_some(), want), "add {text:?}");
    if let Some(f) = facts.first() {
        assert_eq!(
            (f.source.clone(), f.valid_from, f.id.as_str()),
            (None, NOV_20, "a1")
        );
    }
}

#[test]
fn a_fact_added_by_hand() {
    use FactKind::*;
    check_add(
        "Remember that I live in Oslo",
        Some(("I live in Oslo.", Home)),
    );
    check_add(
        "remember: I'm allergic to cats.",
        Some(("I'm allergic to cats.", Health)),
    );
    check_add(
        "Please remember that my daughter is called Sofia.",
        Some(("My daughter is called Sofia.", People)),
    );
    check_add("I like green tea", Some(("I like green tea.", Preference)));
    check_add(
        "The blue notebook is in the attic",
        Some(("The blue notebook is in the attic.", Other)),
    );
    check_add("Remember that", None);
    check_add("   ", None);
    // It supersedes like any other, and a current one is not added twice.
    let mut facts = facts_after(&[("I live in Lisbon.", 0)]);
    assert!(add(
        &mut facts,
        "Remember that I live in Oslo now",
        NOV_20 + DAY,
        "a1".into()
    ));
    assert_eq!(current(&facts), ["I live in Oslo now."]);
    assert!(!add(
        &mut facts,
        "I live in Oslo.",
        NOV_20 + 2 * DAY,
        "a2".into()
    ));
    assert_eq!(facts.len(), 2);
}

// ---------- what a prompt carries ----------

/// A fact of `kind` said on day `day`, with id `id`.
fn fact(id: &str, text: &str, kind: FactKind, day: i64) -> UserFact {
    UserFact {
        id: id.into(),
        text: text.into(),
        kind,
        claim_key: claim_key(text),
        source: Some(FactSource {
            conversation_id: "c".into(),
            message_id: format!("m-{id}"),
            said_at: NOV_20 + day * DAY,
        }),
        valid_from: NOV_20 + day * DAY,
        valid_to: None,
        forgotten: None,
        scope: None,
        updated_at: NOV_20 + day * DAY,
    }
}

fn profile() -> Vec<UserFact> {
    use FactKind::*;
    let mut past = fact("lisbon", "I live in Lisbon.", Home, 0);
    past.valid_to = Some(NOV_20 + 3 * DAY);
    let mut gone = fact("secret", "I have diabetes.", Health, 1);
    gone.forgotten = Some(NOV_20 + 2 * DAY);
    let mut project = fact("proj", "I'm writing a thesis on fjords.", Project, 2);
    project.scope = Some("p1".into());
    vec![
        fact("tea", "I like green tea.", Preference, 1),
        fact("name", "My name is Marta.", Name, 0),
        past,
        gone,
        fact("oslo", "I moved to Oslo.", Home, 3),
        fact("dog", "I have a dog called Rex.", Pets, 2),
        fact("work", "I work as a nurse.", Work, 0),
        fact("climb", "I love climbing on weekends.", Preference, 4),
        project,
        fact("sofia", "My daughter Sofia is seven.", People, 1),
    ]
}

/// The ids `facts_for_prompt` picks of [`profile`] for `scope` and `recent`, within `budget`.
fn check_pick(scope: Option<&str>, recent: &[&str], budget: u32, want: &[&str]) {
    let facts = profile();
    let got: Vec<&str> = facts_for_prompt(&facts, scope, recent, budget, &HeuristicEstimator)
        .iter()
        .map(|f| f.id.as_str())
        .collect();
    assert_eq!(
        got, want,
        "scope {scope:?}, recent {recent:?}, budget {budget}"
    );
}

/// Tokens of the heading and the lines of `ids` of [`profile`].
fn cost(ids: &[&str]) -> u32 {
    let facts = profile();
    let est = HeuristicEstimator;
    ids.iter()
        .map(|id| facts.iter().find(|f| f.id == *id).unwrap())
        .map(|f| est.estimate(&fact_line(f)) + 1)
        .sum::<u32>()
        + heading_tokens(&est)
}

#[test]
fn a_prompt_carries_the_core_then_the_relevant_then_the_rest() {
    let all = ["name", "oslo", "work", "sofia", "climb", "dog", "tea"];
    check_pick(None, &[], 10_000, &all);
    // What the recent messages speak of comes right after the core.
    check_pick(
        None,
        &["Any tips for my dog?"],
        10_000,
        &["name", "oslo", "work", "sofia", "dog", "climb", "tea"],
    );
    check_pick(
        None,
        &["We could drink some green tea"],
        10_000,
        &["name", "oslo", "work", "sofia", "tea", "climb", "dog"],
    );
    // A project's facts only in that project.
    check_pick(
        Some("p1"),
        &[],
        10_000,
        &[
            "name", "oslo", "work", "sofia", "climb", "dog", "proj", "tea",
        ],
    );
    check_pick(Some("p2"), &[], 10_000, &all);
    // Under a budget: the core within two thirds of it, then the relevant, then what else fits.
    let five = cost(&["name", "oslo", "work", "sofia", "dog"]);
    check_pick(
        None,
        &["Any tips for my dog?"],
        five,
        &["name", "oslo", "work", "dog", "sofia"],
    );
    // Sofia does not fit any more; the shorter tea fact does.
    check_pick(
        None,
        &["Any tips for my dog?"],
        five - 1,
        &["name", "oslo", "work", "dog", "tea"],
    );
    check_pick(None, &[], five, &["name", "oslo", "work", "sofia", "climb"]);
    check_pick(None, &[], cost(&["name"]), &["name"]);
    check_pick(None, &[], cost(&["name"]) - 1, &[]);
    check_pick(None, &[], 0, &[]);
    // Past and forgotten never.
    let facts = profile();
    let picked = facts_for_prompt(
        &facts,
        Some("p1"),
        &["lisbon diabetes"],
        10_000,
        &HeuristicEstimator,
    );
    assert!(picked.iter().all(|f| f.id != "lisbon" && f.id != "secret"));
}

#[test]
fn a_line_says_when_it_was_said() {
    let f = fact("oslo", "I live in Oslo now", FactKind::Home, 0);
    assert_eq!(fact_line(&f), "- I live in Oslo now. (said 2026-11-20)");
    let mut by_hand = fact("x", "I like tea.\nVery much.", FactKind::Preference, 2);
    by_hand.source = None;
    assert_eq!(
        fact_line(&by_hand),
        "- I like tea. Very much. (said 2026-11-22)"
    );
}

// ---------- in the prompt ----------

fn msg(seq: u64, role: Role, content: &str, day: i64) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c".into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: NOV_20 + day * DAY + seq as i64 * 60_000,
        meta: MessageMeta::default(),
    }
}

fn assembled(
    facts: &[UserFact],
    history: &[Message],
    summary: Option<&str>,
    new: &str,
    context_tokens: u32,
) -> Assembly {
    let config = MemoryConfig {
        context_tokens,
        reply_reserve_tokens: 0,
        ..MemoryConfig::default()
    };
    let summary = summary.map(|text| ConversationSummary {
        conversation_id: "c".into(),
        version: 1,
        text: text.into(),
        covers_up_to_seq: history.last().map_or(0, |m| m.seq),
        message_count: history.len() as u64,
        updated_at: NOV_20,
    });
    let new = msg(history.len() as u64 + 1, Role::User, new, 10);
    assemble(
        &AssemblyInput {
            system_prompt: "You are helpful.",
            summary: summary.as_ref(),
            entities: &[],
            history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: facts,
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    )
}

#[test]
fn the_prompt_has_an_about_you_section_after_the_system_prompt() {
    let a = assembled(
        &profile(),
        &[],
        Some("We spoke of fjords."),
        "What do you remember about me?",
        4096,
    );
    let kinds: Vec<SectionKind> = a.sections.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SectionKind::System,
            SectionKind::UserFacts,
            SectionKind::Summary,
            SectionKind::NewMessage
        ]
    );
    let s = a.section(SectionKind::UserFacts).unwrap();
    assert_eq!(
        s.fact_ids,
        ["name", "oslo", "work", "sofia", "climb", "dog", "tea"]
    );
    assert!(s.text.starts_with(USER_FACTS_HEADING));
    assert!(
        s.text.contains("- My name is Marta. (said 2026-11-20)"),
        "{}",
        s.text
    );
    assert!(
        !s.text.contains("Lisbon") && !s.text.contains("diabetes") && !s.text.contains("fjords")
    );
    let system = &a.prompt.system;
    let (facts_at, summary_at) = (
        system.find("My name is Marta").unwrap(),
        system.find("We spoke").unwrap(),
    );
    assert!(facts_at < summary_at, "{system}");
    assert_eq!((a.user_facts_dropped, a.user_facts_omitted), (None, 0));
    assert_eq!(
        (SectionKind::UserFacts.key(), SectionKind::UserFacts.label()),
        ("user-facts", "About you")
    );
    assert_eq!(a.user_facts_detail(), "7 facts");
    // Without facts, no section.
    let a = assembled(&[], &[], None, "Hello", 4096);
    assert!(a.section(SectionKind::UserFacts).is_none());
    assert_eq!(a.user_facts_dropped, None);
}

/// 200 facts of the same kind.
fn hobbies() -> Vec<UserFact> {
    (0..200)
        .map(|i| {
            fact(
                &format!("f{i}"),
                &format!("I have a hobby number {i} that I enjoy a lot."),
                FactKind::Other,
                0,
            )
        })
        .collect()
}

/// A conversation of `n` long messages (more than a 4k context holds).
fn long_history(n: u64) -> Vec<Message> {
    (1..=n)
        .map(|seq| {
            // The user asks (no statement memory must hold for them), the assistant answers long.
            if seq % 2 == 1 {
                msg(seq, Role::User, "Which ferry leaves first, and when?", 1)
            } else {
                let answer = "The ferry leaves the harbour early. ".repeat(20);
                msg(seq, Role::Assistant, &answer, 1)
            }
        })
        .collect()
}

#[test]
fn the_facts_stay_within_their_share() {
    // History wants the room: the facts keep to their share, and take only the room too small for
    // the next older message.
    let history = long_history(80);
    let a = assembled(&hobbies(), &history, None, "Hello", 4096);
    let s = a.section(SectionKind::UserFacts).unwrap();
    assert!(a.dropped.iter().any(|d| d.reason == DropReason::OverBudget));
    let message = HeuristicEstimator.estimate(&history[1].content) + 5;
    assert!(
        s.tokens <= 4096 * USER_FACTS_SHARE_PERCENT / 100 + message,
        "{} tokens",
        s.tokens
    );
    assert_eq!(a.user_facts_omitted, 200 - s.fact_ids.len());
    assert!(a.user_facts_omitted > 0);
    assert_eq!(
        a.user_facts_detail(),
        format!(
            "{} facts, {} left out for space",
            s.fact_ids.len(),
            a.user_facts_omitted
        )
    );
}

/// The facts about the user a prompt carries (their ids), and how many were left out.
fn check_room(
    facts: &[UserFact],
    history: &[Message],
    context: u32,
    reserve: u32,
    want: (&[&str], usize),
) {
    let config = MemoryConfig {
        context_tokens: context,
        reply_reserve_tokens: reserve,
        ..MemoryConfig::default()
    };
    let new = msg(
        history.len() as u64 + 1,
        Role::User,
        "What do you remember about me?",
        10,
    );
    let a = assemble(
        &AssemblyInput {
            system_prompt: "You are helpful.",
            summary: None,
            entities: &[],
            history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: facts,
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    let got = a
        .section(SectionKind::UserFacts)
        .map_or(Vec::new(), |s| s.fact_ids.clone());
    assert_eq!(
        (got, a.user_facts_omitted),
        (want.0.iter().map(|s| s.to_string()).collect(), want.1)
    );
    assert!(!a.over_budget, "{} of {}", a.total_tokens, a.budget_tokens);
}

/// Issue 42 item 4: the facts that did not fit their share go in the room the rest of the prompt
/// left, in `pick_for_prompt`'s order, before the entities' overflow.
#[test]
fn facts_beyond_their_share_take_the_room_left() {
    let four = [
        fact("name", "My name is Ingrid Solberg.", FactKind::Name, 0),
        fact(
            "home",
            "I live in Tromsø with my partner.",
            FactKind::Home,
            1,
        ),
        fact(
            "work",
            "I work as a marine biologist at the university.",
            FactKind::Work,
            2,
        ),
        fact(
            "kid",
            "My son Aksel is seven and loves football.",
            FactKind::People,
            3,
        ),
    ];
    // The issue's case: 1,400 tokens, 1,024 kept for the reply, a new conversation: every core fact.
    check_room(
        &four,
        &[],
        1400,
        1024,
        (&["name", "home", "work", "kid"], 0),
    );
    // Before: the share (37 tokens) held one.
    let share_only = &["name"][..];
    let history = long_history(20);
    check_room(&four, &history, 1400, 1024, (share_only, 3));
    // Room for some: as many as fit, in the same order.
    check_room(&hobbies(), &[], 1400, 1024, (&hobby_ids(14), 186));
}

/// The first `n` of [`hobbies`] in the order a prompt takes them (one day: by id).
fn hobby_ids(n: usize) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = (0..200)
        .map(|i| &*Box::leak(format!("f{i}").into_boxed_str()))
        .collect();
    ids.sort();
    ids[..n].to_vec()
}

#[test]
fn when_space_is_short_the_facts_give_way_before_the_summary() {
    let summary = "User: I am planning a long trip along the coast of Norway next summer with friends (said 2026-11-19).";
    let new = "Which ferry should we take first, and how early should we book it?";
    // Room for the summary and the new message, not for the facts as well.
    let tight = assembled(&profile(), &[], Some(summary), new, 4096);
    let needed = tight.total_tokens - tight.section(SectionKind::UserFacts).unwrap().tokens;
    let a = assembled(&profile(), &[], Some(summary), new, needed + 4);
    assert!(a.section(SectionKind::Summary).is_some());
    assert!(a.section(SectionKind::UserFacts).is_none());
    assert_eq!(a.user_facts_dropped, Some(DropReason::OverBudget));
    assert_eq!(a.user_facts_omitted, 7);
    assert_eq!(
        a.user_facts_detail(),
        "7 facts left out: no room in the token budget"
    );
    assert!(!a.over_budget);
}

#[test]
fn a_fact_the_conversation_just_changed_is_not_current_in_the_prompt() {
    // The user says they moved before any memory update took it in.
    let history = [
        msg(1, Role::User, "I moved to Bergen last week.", 9),
        msg(2, Role::Assistant, "Welcome to Bergen!", 9),
    ];
    let a = assembled(&profile(), &history, None, "Any tips?", 4096);
    let s = a.section(SectionKind::UserFacts).unwrap();
    assert!(
        !s.fact_ids.contains(&"oslo".to_string()),
        "{:?}",
        s.fact_ids
    );
    assert!(s.fact_ids.contains(&"name".to_string()));
    // A question claims nothing.
    let a = assembled(&profile(), &[], None, "Do I still live in Bergen?", 4096);
    assert!(a
        .section(SectionKind::UserFacts)
        .unwrap()
        .fact_ids
        .contains(&"oslo".to_string()));
    // The new message counts too.
    let a = assembled(
        &profile(),
        &[],
        None,
        "I don't work as a nurse anymore, I work as a pilot now.",
        4096,
    );
    let s = a.section(SectionKind::UserFacts).unwrap();
    assert!(
        !s.fact_ids.contains(&"work".to_string()),
        "{:?}",
        s.fact_ids
    );
}

/// The prompt of conversation `c` (history `m1`: "Hello") whose summary `text` was made on day
/// `made`, with `entities` and `facts`.
fn after_summary(facts: &[UserFact], text: &str, made: i64, entities: &[EntityNode]) -> Assembly {
    let config = MemoryConfig::default();
    let history = [msg(1, Role::User, "Hello", 0)];
    let summary = ConversationSummary {
        conversation_id: "c".into(),
        version: 1,
        text: text.into(),
        covers_up_to_seq: 1,
        message_count: 1,
        updated_at: NOV_20 + made * DAY,
    };
    let new = msg(2, Role::User, "Where do I live?", 10);
    assemble(
        &AssemblyInput {
            system_prompt: "You are helpful.",
            summary: Some(&summary),
            entities,
            history: &history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: facts,
            project: None,
            recall: &[],
        },
        &HeuristicEstimator,
    )
}

/// The summary section of [`after_summary`] is `want`.
fn check_summary_after(facts: &[UserFact], text: &str, made: i64, want: &str) {
    let a = after_summary(facts, text, made, &[]);
    let got = a.section(SectionKind::Summary).map(|s| s.text.clone());
    let want = format!("## Summary of the conversation so far\n{want}");
    assert_eq!(
        got.as_deref(),
        Some(want.as_str()),
        "{text:?} made on day {made}"
    );
}

#[test]
fn a_summary_sentence_a_fact_said_elsewhere_since_supersedes_is_past() {
    use FactKind::*;
    let lisbon = "User: I live in Lisbon (said 2026-11-20). Lisbon is sunny.";
    let moved = [fact("oslo", "I moved to Oslo.", Home, 3)];
    let past = "User: I live in Lisbon (said 2026-11-20; until 2026-11-23). Lisbon is sunny (until 2026-11-23).";
    check_summary_after(&moved, lisbon, 1, past);
    // Made after the fact was said: the summary may know better.
    check_summary_after(&moved, lisbon, 5, lisbon);
    // Memory about the user off: no facts.
    check_summary_after(&[], lisbon, 1, lisbon);
    // Said in this very conversation: its messages are the summary's to take in.
    let mut here = fact("oslo", "I moved to Oslo.", Home, 3);
    here.source.as_mut().unwrap().message_id = "m1".into();
    check_summary_after(&[here], lisbon, 1, lisbon);
    // A past or forgotten fact supersedes nothing.
    let mut gone = fact("oslo", "I moved to Oslo.", Home, 3);
    gone.forgotten = Some(NOV_20 + 4 * DAY);
    check_summary_after(&[gone], lisbon, 1, lisbon);
    check_summary_after(
        &[fact("pilot", "I work as a pilot now.", Work, 2)],
        "User: I work as a nurse. The user has a cat.",
        1,
        "User: I work as a nurse (until 2026-11-22). The user has a cat.",
    );
}

#[test]
fn what_was_said_elsewhere_since_is_the_newest_facts_that_claim() {
    use FactKind::*;
    let mut facts: Vec<UserFact> = (0..150)
        .map(|i| fact(&format!("f{i}"), &format!("I moved to Town{i}."), Home, i))
        .collect();
    facts.push(fact("novel", "I'm writing a novel.", Project, 200));
    let here = std::collections::HashSet::from(["m-f149"]);
    let got: Vec<&str> = said_after(&facts, NOV_20 + 10 * DAY, &here)
        .into_iter()
        .map(|(text, _)| text)
        .collect();
    assert_eq!(got.len(), MAX_FACTS_SAID_AFTER);
    assert_eq!(got.first(), Some(&"I moved to Town49."));
    assert_eq!(got.last(), Some(&"I moved to Town148."));
}

/// The entity `Sunniva` (alias `alias`, property `home`: `Lisbon`) in the prompt of
/// [`after_summary`] (a summary "User: I live in Lisbon. We have a cat called Mosel." made on day
/// `made`) with `facts`: its line is `want`.
fn check_entity_after(facts: &[UserFact], made: i64, alias: &str, want: &str) {
    let sunniva = EntityNode {
        id: "e1".into(),
        scope: EntityScope::Conversation("c".into()),
        entity_type: EntityType::Person,
        name: "Sunniva".into(),
        aliases: vec![alias.into()],
        description: "My daughter Sunniva is seven.".into(),
        properties: [("home".to_string(), "Lisbon".to_string())].into(),
        property_since: Default::default(),
        past_properties: Vec::new(),
        relationships: Vec::new(),
        source_message_ids: vec!["m1".into()],
        updated_at: NOV_20,
    };
    let summary = "User: I live in Lisbon. We have a cat called Mosel.";
    let a = after_summary(facts, summary, made, &[sunniva]);
    let got = a.section(SectionKind::Entities).map(|s| s.text.clone());
    let want = format!("## What you remember (entity memory)\n{want}");
    assert_eq!(got.as_deref(), Some(want.as_str()), "made on day {made}");
}

#[rustfmt::skip]
#[test]
fn an_entity_drops_what_a_fact_said_elsewhere_since_ends() {
    use FactKind::*;
    let died = [fact("mosel", "Sadly Mosel died last week.", Pets, 3)];
    check_entity_after(&died, 1, "Mosel", "- Sunniva (person): My daughter Sunniva is seven. | home=Lisbon");
    // Made after the fact was said, or without facts: as stored.
    check_entity_after(&died, 5, "Mosel", "- Sunniva (person; aka Mosel): My daughter Sunniva is seven. | home=Lisbon");
    check_entity_after(&[], 1, "Mosel", "- Sunniva (person; aka Mosel): My daughter Sunniva is seven. | home=Lisbon");
    // A place the summary's sentence, made past by the fact, names: its property is past.
    let moved = [fact("oslo", "I moved to Oslo.", Home, 3)];
    check_entity_after(&moved, 1, "Sunny", "- Sunniva (person; aka Sunny): My daughter Sunniva is seven.");
}

// ---------- properties ----------

const TEXTS: &[&str] = &[
    "My name is Marta.",
    "I live in Oslo.",
    "I moved to Bergen.",
    "I work as a nurse.",
    "I have a dog called Rex.",
    "Rex died.",
    "I'm allergic to peanuts.",
    "My sister lives in Rome.",
    "I love climbing.",
    "I'm writing a novel.",
];

/// An operation on the facts: take in a message, forget, edit, add.
#[derive(Debug, Clone)]
enum Op {
    Said(usize, usize),
    Forget(usize),
    Edit(usize, usize),
    Add(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..TEXTS.len(), 0..4usize).prop_map(|(t, m)| Op::Said(t, m)),
        (0..12usize).prop_map(Op::Forget),
        (0..12usize, 0..TEXTS.len()).prop_map(|(f, t)| Op::Edit(f, t)),
        (0..TEXTS.len()).prop_map(Op::Add),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A forgotten fact never appears in any assembled prompt, whatever was said, edited or added
    /// before or after, and whatever the budget.
    #[test]
    fn a_forgotten_fact_never_appears_in_any_prompt(
        ops in prop::collection::vec(op(), 1..24),
        context in 200u32..6000,
        new in 0..TEXTS.len(),
    ) {
        let mut facts: Vec<UserFact> = Vec::new();
        let mut n = 0;
        for (t, o) in ops.iter().enumerate() {
            let at = NOV_20 + t as i64 * DAY;
            n += 1;
            let id = format!("x{n}");
            match o {
                Op::Said(text, m) => {
                    let mut next = Some(id);
                    handle_said(&mut facts, "c", &format!("m{m}"), TEXTS[*text], at, || next.take().unwrap_or_default());
                }
                Op::Forget(f) => {
                    if let Some(id) = facts.get(*f).map(|f| f.id.clone()) {
                        forget(&mut facts, &id, at);
                    }
                }
                Op::Edit(f, text) => {
                    if let Some(id) = facts.get(*f).map(|f| f.id.clone()) {
                        edit(&mut facts, &id, TEXTS[*text], at);
                    }
                }
                Op::Add(text) => {
                    add(&mut facts, TEXTS[*text], at, id);
                }
            }
        }
        let a = assembled(&facts, &[], None, TEXTS[new], context);
        let carried: Vec<String> = a.section(SectionKind::UserFacts).map(|s| s.fact_ids.clone()).unwrap_or_default();
        for f in &facts {
            if f.forgotten.is_some() || f.valid_to.is_some() {
                prop_assert!(!carried.contains(&f.id), "{:?} carried", f);
            }
        }
        // And a forgotten fact's text is in the prompt only when a current fact says it too.
        for f in facts.iter().filter(|f| f.forgotten.is_some()) {
            let line = fact_line(f);
            let current_says = facts.iter().any(|g| g.is_current() && fact_line(g) == line);
            prop_assert!(current_says || !a.prompt.system.contains(&line), "{line} in {}", a.prompt.system);
        }
        prop_assert!(!a.over_budget || a.section(SectionKind::UserFacts).is_none());
    }
}

const PLACES: &[&str] = &["Oslo", "Lisbon", "Bergen"];
const JOBS: &[&str] = &["nurse", "pilot", "teacher"];
const NAMES: &[&str] = &["Marta", "Maria", "Ingrid"];

/// A message of one functional claim: where the user lives, their job, their name.
fn claim_text(kind: usize, value: usize) -> String {
    match kind {
        0 => format!("I live in {}.", PLACES[value]),
        1 => format!("I moved to {} last year.", PLACES[value]),
        2 => format!("I work as a {}.", JOBS[value]),
        3 => format!("I'm a {} now.", JOBS[value]),
        4 => format!("My name is {}.", NAMES[value]),
        _ => format!("Call me {}.", NAMES[value]),
    }
}

/// The facts after `said` (claim kind, value, day, added by hand?), message `m<k>` for the k-th.
fn take_in(said: &[(usize, usize, i64, bool)]) -> Vec<UserFact> {
    let mut facts: Vec<UserFact> = Vec::new();
    let mut id = ids();
    for (k, (kind, value, day, by_hand)) in said.iter().enumerate() {
        let text = claim_text(*kind, *value);
        if *by_hand {
            add(&mut facts, &text, NOV_20 + day * DAY, id());
        } else {
            handle_said(
                &mut facts,
                "c",
                &format!("m{k}"),
                &text,
                NOV_20 + day * DAY,
                &mut id,
            );
        }
    }
    facts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the order messages are taken in (a late catch-up, another device) and whatever the
    /// user adds by hand, the user has one current home, job and name at a time.
    #[test]
    fn one_current_value_per_claim(
        said in prop::collection::vec((0..6usize, 0..3usize, 0..30i64, any::<bool>()), 1..16),
    ) {
        let facts = take_in(&said);
        for key in ["lives_in", "job", "name"] {
            let mut values: Vec<String> = facts
                .iter()
                .filter(|f| f.is_current())
                .flat_map(|f| fact_claims(&f.text))
                .filter(|c| c.subject == "user" && c.attribute == key && !c.negated)
                .map(|c| c.value)
                .collect();
            values.sort();
            values.dedup();
            prop_assert!(values.len() <= 1, "{key}: {values:?} in {facts:#?}");
        }
    }

    /// Messages taken in again in their order (an update run again, a catch-up) change nothing.
    #[test]
    fn taking_the_same_messages_in_again_changes_nothing(
        said in prop::collection::vec((0..6usize, 0..3usize, 0..30i64, any::<bool>()), 1..16),
    ) {
        let mut said = said;
        said.sort_by_key(|s| s.2);
        let mut facts = take_in(&said);
        let before = facts.clone();
        for (k, (kind, value, day, by_hand)) in said.iter().enumerate() {
            if !by_hand {
                let text = claim_text(*kind, *value);
                handle_said(&mut facts, "c", &format!("m{k}"), &text, NOV_20 + day * DAY, ids());
            }
        }
        prop_assert_eq!(facts, before);
    }
}

#[test]
fn the_memory_page_says_when_a_fact_held() {
    use memoire::engine::memory::user::fact_days;
    const DAY: i64 = 86_400_000;
    let mut facts = Vec::new();
    assert!(memoire::engine::memory::user::add(
        &mut facts,
        "Remember that I like tea",
        20_000 * DAY,
        "f1".into()
    ));
    assert_eq!(fact_days(&facts[0]), "added 4 Oct 2024");
    facts[0].source = Some(FactSource {
        conversation_id: "c".into(),
        message_id: "m".into(),
        said_at: 20_000 * DAY,
    });
    assert_eq!(fact_days(&facts[0]), "said 4 Oct 2024");
    facts[0].valid_to = Some(20_001 * DAY);
    assert_eq!(fact_days(&facts[0]), "said 4 Oct 2024; until 5 Oct 2024");
}

#[test]
fn a_fact_said_in_this_conversations_history_is_not_repeated_as_about_you() {
    // "name" was said in message m-name of this conversation, still in its history; "tea" elsewhere.
    let facts = vec![
        fact("name", "My name is Marta.", FactKind::Name, 0),
        fact("tea", "I like green tea.", FactKind::Preference, 1),
    ];
    let mut said = msg(1, Role::User, "My name is Marta.", 0);
    said.id = "m-name".into();
    let a = assembled(&facts, &[said], None, "Any tea for me?", 4096);
    let about = a
        .sections
        .iter()
        .find(|s| s.kind == SectionKind::UserFacts)
        .expect("the fact said elsewhere is carried");
    assert!(about.text.contains("green tea"), "{}", about.text);
    assert!(!about.text.contains("Marta"), "{}", about.text);
    // Said in no message the prompt could carry: both go in.
    let a = assembled(&facts, &[], None, "Any tea for me?", 4096);
    let about = a
        .sections
        .iter()
        .find(|s| s.kind == SectionKind::UserFacts)
        .unwrap();
    assert!(
        about.text.contains("Marta") && about.text.contains("green tea"),
        "{}",
        about.text
    );
}

/// The ids the Memory page lists for `query` with `limit`, and how many match.
fn check_page(query: &str, limit: usize, ids: &[&str], matching: usize) {
    let facts = profile();
    let (page, all) = facts_for_page(&facts, query, limit);
    let got: Vec<&str> = page.iter().map(|f| f.id.as_str()).collect();
    assert_eq!((got.as_slice(), all), (ids, matching), "{query:?} {limit}");
}

#[test]
fn the_memory_page_lists_current_facts_first_and_searches_every_word() {
    // profile(): forgotten "secret" never listed; past "lisbon" after every current one.
    let all = [
        "climb", "oslo", "dog", "proj", "tea", "sofia", "name", "work", "lisbon",
    ];
    check_page("", 10, &all, 9);
    check_page("", 2, &all[..2], 9);
    check_page("I LIVE", 10, &["lisbon"], 1);
    check_page("dog rex", 10, &["dog"], 1);
    check_page("diabetes", 10, &[], 0);
}

/// Whether the prompt carries, as a fact about the user, what she said in this very conversation
/// (message m2), with a summary covering the whole history (`summary`) or none.
fn check_said_here(summary: Option<&str>, carried: bool) {
    let said = "I am allergic to penicillin, so I always tell my doctors.";
    let history = [
        msg(1, Role::User, "Hi, I am Marta.", 0),
        msg(2, Role::User, said, 0),
        msg(3, Role::Assistant, "Noted.", 0),
    ];
    let mut allergy = fact("allergy", said, FactKind::Health, 0);
    allergy.source.as_mut().unwrap().message_id = "m2".into();
    let a = assembled(
        &[allergy],
        &history,
        summary,
        "What should my doctor know?",
        4096,
    );
    let ids = a
        .section(SectionKind::UserFacts)
        .map(|s| s.fact_ids.clone())
        .unwrap_or_default();
    assert_eq!(
        ids.contains(&"allergy".to_string()),
        carried,
        "{summary:?}: {ids:?}"
    );
}

#[test]
fn a_fact_said_in_this_conversation_is_carried_once_and_never_lost_to_the_summary() {
    // Not covered yet: the history (or the pending statements) carries it.
    check_said_here(None, false);
    // Covered by a summary that holds it.
    check_said_here(
        Some("Marta is allergic to penicillin and always tells her doctors."),
        false,
    );
    // Covered by a summary that lost it (a small model's summary drops what it likes).
    check_said_here(
        Some("Marta greeted the assistant and talked about horses."),
        true,
    );
}

/// The ids the memory pane leads with for `scope` with `limit`, and how many there are in all.
fn check_pane(scope: Option<&str>, limit: usize, ids: &[&str], all: usize) {
    let facts = profile();
    let (pane, count) = facts_for_pane(&facts, scope, limit);
    let got: Vec<&str> = pane.iter().map(|f| f.id.as_str()).collect();
    assert_eq!((got.as_slice(), count), (ids, all), "{scope:?} {limit}");
}

#[test]
fn the_memory_pane_leads_with_who_the_user_is_then_the_newest() {
    // profile(): past "lisbon" and forgotten "secret" never; "proj" only in its project.
    let about = ["name", "oslo", "work", "sofia", "climb", "dog", "tea"];
    check_pane(None, 10, &about, 7);
    check_pane(None, 3, &about[..3], 7);
    check_pane(Some("p2"), 10, &about, 7);
    check_pane(
        Some("p1"),
        10,
        &[
            "name", "oslo", "work", "sofia", "climb", "dog", "proj", "tea",
        ],
        8,
    );
    check_pane(None, 0, &[], 7);
    assert_eq!(facts_for_pane(&[], None, 10), (vec![], 0));
}
