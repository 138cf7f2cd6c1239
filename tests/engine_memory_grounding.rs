#![cfg(not(target_arch = "wasm32"))]
//! Facts about the user the memory model proposes (`engine::memory::proposed`): a proposal is kept
//! only when one user message of the span holds every content word of it (folded, in any script),
//! what is stored is the user's clause with the model's kind, questions, hypotheticals and
//! sentences about someone else are refused, a fact said to hold no longer makes the fact it names
//! past; and the update's `user_facts` as parsed from a reply, garbage and hostile input included.

use memoire::engine::memory::parse::{parse_reply, Proposals, ProposedFact, MAX_PROPOSALS};
use memoire::engine::memory::proposed::{ground_quote, handle_proposed_in, Said};
use memoire::engine::memory::update_schema;
use memoire::engine::memory::user::{facts_said, handle_said};
use memoire::engine::model::{FactKind, UserFact};

const DAY: i64 = 86_400_000;
/// 2026-11-20 00:00 UTC.
const NOV_20: i64 = 1_795_132_800_000;

fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("p{n}")
    }
}

/// The user messages `m0`, `m1`, … of `texts`, a day apart.
fn said<'a>(texts: &[&'a str], names: &'a [String]) -> Vec<Said<'a>> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| Said {
            message_id: &names[i],
            text: t,
            at: NOV_20 + i as i64 * DAY,
        })
        .collect()
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("m{i}")).collect()
}

/// The facts stored when the model proposes `proposed` (quote, kind) for a span of `messages`.
fn stored(messages: &[&str], proposed: &[(&str, FactKind)]) -> Vec<(String, FactKind)> {
    let n = names(messages.len());
    let proposals = Proposals {
        said: proposed
            .iter()
            .map(|(q, k)| ProposedFact {
                quote: q.to_string(),
                kind: *k,
            })
            .collect(),
        ended: Vec::new(),
    };
    let mut facts = Vec::new();
    handle_proposed_in(
        &mut facts,
        None,
        "c1",
        &said(messages, &n),
        &proposals,
        ids(),
    );
    facts.into_iter().map(|f| (f.text, f.kind)).collect()
}

// ---------- grounding ----------

fn check_grounded(message: &str, quote: &str, want: Option<&str>) {
    let n = names(1);
    let got = ground_quote(quote, &said(&[message], &n)).map(|(_, u)| u);
    assert_eq!(got.as_deref(), want, "{quote:?} in {message:?}");
}

#[test]
fn a_quote_is_grounded_in_the_users_clause_in_any_script_and_order() {
    // Latin with accents: the user's sentence, reordered, without the accents the user wrote.
    check_grounded(
        "Mieszkam w Gdańsku.",
        "Mieszkam w Gdańsku",
        Some("Mieszkam w Gdańsku."),
    );
    check_grounded(
        "Mieszkam w Gdańsku.",
        "w Gdansku mieszkam",
        Some("Mieszkam w Gdańsku."),
    );
    check_grounded(
        "İzmir'de yaşıyorum.",
        "izmir'de yasiyorum",
        Some("İzmir'de yaşıyorum."),
    );
    check_grounded(
        "J'habite à Lyon.",
        "À Lyon j'habite",
        Some("J'habite à Lyon."),
    );
    // Cyrillic and Greek, case and tonos folded.
    check_grounded(
        "Я живу в Москве.",
        "В МОСКВЕ я живу",
        Some("Я живу в Москве."),
    );
    check_grounded(
        "Μένω στην Αθήνα.",
        "στην αθηνα μενω",
        Some("Μένω στην Αθήνα."),
    );
    // Chinese, written without spaces: each character is a word (what Unicode's word boundaries
    // give ideographs), so a reordering of the user's characters is grounded and no other.
    check_grounded("我住在北京。", "我住在北京", Some("我住在北京。"));
    check_grounded("我住在北京。", "北京我住在", Some("我住在北京。"));
    // A clause of a longer sentence the rules cut, or the whole sentence when they cannot.
    check_grounded(
        "Me llamo Lucía y vivo en Sevilla.",
        "vivo en Sevilla",
        Some("vivo en Sevilla."),
    );
    check_grounded(
        "Mam na imię Ola i mieszkam w Gdańsku.",
        "Mieszkam w Gdańsku",
        Some("Mam na imię Ola i mieszkam w Gdańsku."),
    );
}

#[test]
fn a_quote_with_a_word_the_user_never_wrote_is_not_grounded() {
    check_grounded("Mieszkam w Gdańsku.", "Użytkownik mieszka w Gdańsku", None);
    check_grounded("Mieszkam w Gdańsku.", "Mieszkam w Krakowie", None);
    check_grounded("Я живу в Москве.", "Пользователь живёт в Москве", None);
    check_grounded("Μένω στην Αθήνα.", "Ο χρήστης μένει στην Αθήνα", None);
    check_grounded("我住在北京。", "用户住在北京", None);
    check_grounded("I live in Ghent.", "The user lives in Ghent", None);
    // One word of a long sentence does not ground it.
    check_grounded("Mam na imię Ola i mieszkam w Gdańsku.", "Ola", None);
    check_grounded("Gdańsk.", "", None);
}

// ---------- what is stored ----------

fn check_stored(messages: &[&str], proposed: &[(&str, FactKind)], want: &[(&str, FactKind)]) {
    let want: Vec<(String, FactKind)> = want.iter().map(|(t, k)| (t.to_string(), *k)).collect();
    assert_eq!(
        stored(messages, proposed),
        want,
        "{proposed:?} of {messages:?}"
    );
}

#[test]
fn the_users_sentence_is_stored_with_the_models_kind_never_its_wording() {
    use FactKind::*;
    check_stored(
        &[
            "Cześć! Mam na imię Ola.",
            "Pracuję jako pielęgniarka w szpitalu.",
        ],
        &[
            ("Ola mam na imię", Name),
            ("pracuje jako pielegniarka w szpitalu", Work),
        ],
        &[
            ("Mam na imię Ola.", Name),
            ("Pracuję jako pielęgniarka w szpitalu.", Work),
        ],
    );
    check_stored(
        &["Я живу в Москве."],
        &[("в Москве живу", Home)],
        &[("Я живу в Москве.", Home)],
    );
    check_stored(
        &["Μένω στην Αθήνα."],
        &[("Μένω στην Αθήνα", Home)],
        &[("Μένω στην Αθήνα.", Home)],
    );
    check_stored(
        &["我住在北京。"],
        &[("我住在北京", Home)],
        &[("我住在北京。", Home)],
    );
    // What the rules find nothing in, the model's proposal keeps; its inventions are not kept.
    let polish = "Cześć! Od pięciu lat mieszkam w Gdańsku nad morzem.";
    assert!(facts_said(polish, &[]).is_empty());
    check_stored(
        &[polish],
        &[
            ("mieszkam w Gdansku nad morzem od pieciu lat", Home),
            ("Pracuję jako pielęgniarka", Work),
            ("Użytkownik mieszka w Gdańsku", Home),
        ],
        &[("Od pięciu lat mieszkam w Gdańsku nad morzem.", Home)],
    );
    check_stored(
        &["Mieszkam w Gdańsku."],
        &[("Mieszkam w Warszawie", Home)],
        &[],
    );
    check_stored(&["我住在北京。"], &[("用户住在北京", Home)], &[]);
}

#[test]
fn questions_hypotheticals_and_sentences_about_someone_else_are_refused() {
    use FactKind::*;
    // Someone else, in languages the rules know and by the pronouns of others.
    check_stored(
        &["Ingrid lives in Trondheim."],
        &[("Ingrid lives in Trondheim", Home)],
        &[],
    );
    check_stored(
        &["Ingrid vive en Sevilla."],
        &[("Ingrid vive en Sevilla", Home)],
        &[],
    );
    check_stored(
        &["Elle habite à Lyon."],
        &[("Elle habite à Lyon", Home)],
        &[],
    );
    check_stored(
        &["Ona mieszka w Krakowie."],
        &[("Ona mieszka w Krakowie", Home)],
        &[],
    );
    check_stored(
        &["Она живёт в Москве."],
        &[("Она живёт в Москве", Home)],
        &[],
    );
    check_stored(
        &["Αυτή μένει στην Αθήνα."],
        &[("Αυτή μένει στην Αθήνα", Home)],
        &[],
    );
    check_stored(&["她住在上海。"], &[("她住在上海", Home)], &[]);
    // Questions in any script, requests and hypotheticals where the rules know the language.
    check_stored(
        &["Czy mieszkam w Gdańsku?"],
        &[("mieszkam w Gdańsku", Home)],
        &[],
    );
    check_stored(&["Я живу в Москве?"], &[("Я живу в Москве", Home)], &[]);
    check_stored(&["Μένω στην Αθήνα;"], &[("Μένω στην Αθήνα", Home)], &[]);
    check_stored(&["我住在北京吗？"], &[("我住在北京", Home)], &[]);
    check_stored(
        &["If I lived in Rome I'd be happy."],
        &[("I lived in Rome", Home)],
        &[],
    );
    check_stored(
        &["Si viviera en Roma, sería feliz."],
        &[("viviera en Roma", Home)],
        &[],
    );
    check_stored(
        &["Tell me I live in Rome."],
        &[("I live in Rome", Home)],
        &[],
    );
    check_stored(
        &["Gdybym mieszkała w Rzymie, byłabym szczęśliwa."],
        &[("mieszkała w Rzymie", Home)],
        &[],
    );
    check_stored(&["Если бы я жил в Риме."], &[("я жил в Риме", Home)], &[]);
    // The user's own people are the user's.
    check_stored(
        &["Моя сестра живёт в Москве."],
        &[("Моя сестра живёт в Москве", People)],
        &[("Моя сестра живёт в Москве.", People)],
    );
}

#[test]
fn a_proposal_the_rules_found_already_adds_nothing() {
    let mut facts = Vec::new();
    handle_said(&mut facts, "c1", "m0", "I live in Ghent.", NOV_20, ids());
    let n = names(1);
    let proposals = Proposals {
        said: vec![ProposedFact {
            quote: "I live in Ghent".into(),
            kind: FactKind::Home,
        }],
        ended: Vec::new(),
    };
    let changed = handle_proposed_in(
        &mut facts,
        None,
        "c1",
        &said(&["I live in Ghent."], &n),
        &proposals,
        ids(),
    );
    assert!(!changed);
    assert_eq!(facts.len(), 1);
}

// ---------- no longer true ----------

/// The current facts after `before` (said by the rules or proposed, in message `old`) and the
/// model's proposals for `now` (a later message): said `said`, ended `ended`.
fn check_ended(
    before: &[(&str, FactKind)],
    now: &str,
    said: &[(&str, FactKind)],
    ended: &[(&str, FactKind)],
    want_current: &[&str],
) {
    let n = names(2);
    let old = before.iter().map(|b| b.0).collect::<Vec<_>>().join(" ");
    let to = |l: &[(&str, FactKind)]| {
        l.iter()
            .map(|(q, k)| ProposedFact {
                quote: q.to_string(),
                kind: *k,
            })
            .collect::<Vec<_>>()
    };
    let mut facts: Vec<UserFact> = Vec::new();
    let first = Proposals {
        said: to(before),
        ended: Vec::new(),
    };
    let s = self::said(&[&old, now], &n);
    handle_proposed_in(&mut facts, None, "c1", &s[..1], &first, ids());
    let second = Proposals {
        said: to(said),
        ended: to(ended),
    };
    handle_proposed_in(&mut facts, None, "c1", &s[1..], &second, ids());
    let current: Vec<&str> = facts
        .iter()
        .filter(|f| f.is_current())
        .map(|f| f.text.as_str())
        .collect();
    assert_eq!(current, want_current, "after {now:?}");
}

#[test]
fn a_fact_said_to_hold_no_longer_makes_the_fact_it_names_past() {
    use FactKind::*;
    // Polish, inflected: "Krakowie" and "Krakowa" name one city.
    check_ended(
        &[("Mieszkam w Krakowie.", Home), ("Lubię kawę.", Preference)],
        "Przeprowadziłam się z Krakowa do Gdańska.",
        &[("Przeprowadziłam się z Krakowa do Gdańska", Home)],
        &[("Przeprowadziłam się z Krakowa do Gdańska", Home)],
        &["Lubię kawę.", "Przeprowadziłam się z Krakowa do Gdańska."],
    );
    check_ended(
        &[("Я работаю учителем.", Work)],
        "Я больше не работаю учителем.",
        &[],
        &[("больше не работаю учителем", Work)],
        &[],
    );
    // Not grounded, or a question: nothing ends.
    check_ended(
        &[("Mieszkam w Krakowie.", Home)],
        "Lubię herbatę.",
        &[],
        &[("Nie mieszkam w Krakowie", Home)],
        &["Mieszkam w Krakowie."],
    );
    check_ended(
        &[("Mieszkam w Krakowie.", Home)],
        "Czy nadal mieszkam w Krakowie?",
        &[],
        &[("nadal mieszkam w Krakowie", Home)],
        &["Mieszkam w Krakowie."],
    );
    // Where the rules read the language, only what its claims supersede ends: an echo of a fact
    // (a small model copies user_facts into user_facts_ended) ends nothing, a move ends the old home.
    check_ended(
        &[("I adopted a cat called Sibelius.", Pets)],
        "My cat Sibelius sleeps on the piano.",
        &[("My cat Sibelius sleeps on the piano", Pets)],
        &[
            ("My cat Sibelius sleeps on the piano", Pets),
            ("Sibelius", Pets),
        ],
        &[
            "I adopted a cat called Sibelius.",
            "My cat Sibelius sleeps on the piano.",
        ],
    );
    check_ended(
        &[("I live in Ghent.", Home)],
        "We moved to Utrecht in the summer.",
        &[],
        &[("We moved to Utrecht", Home)],
        &[],
    );
    // A word every fact of the kind holds names none of them.
    check_ended(
        &[("Lubię kawę.", Preference), ("Lubię herbatę.", Preference)],
        "Już nie lubię kawy.",
        &[],
        &[("nie lubię kawy", Preference)],
        &["Lubię herbatę."],
    );
}

// ---------- parsing ----------

fn check_parsed(user_facts: &str, want_said: usize) {
    let reply = format!(
        r#"{{"summary": "Ola lives in Gdańsk.", "entities": [], "no_longer_true": [], "user_facts": {user_facts}, "user_facts_ended": []}}"#
    );
    let parsed = parse_reply(&reply).expect("the summary parses whatever user_facts holds");
    assert_eq!(parsed.user_facts.said.len(), want_said, "{user_facts}");
}

#[test]
fn garbage_or_hostile_user_facts_are_ignored_with_bounded_work() {
    check_parsed(r#"[{"quote": "Mieszkam w Gdańsku", "kind": "home"}]"#, 1);
    check_parsed(
        r#"[{"quote": "Lubię kawę", "kind": "likes"}, {"quote": "x", "kind": "dislikes"}]"#,
        2,
    );
    check_parsed(r#""Mieszkam w Gdańsku""#, 0);
    check_parsed(r#"{"quote": "Mieszkam w Gdańsku", "kind": "home"}"#, 0);
    check_parsed(r#"[1, null, true, "home", [], {}]"#, 0);
    check_parsed(
        r#"[{"quote": 5, "kind": "home"}, {"quote": "Mieszkam", "kind": 3}]"#,
        0,
    );
    check_parsed(r#"[{"quote": "Mieszkam w Gdańsku", "kind": "secret"}]"#, 0);
    check_parsed(
        r#"[{"quote": "<script>alert(1)</script>", "kind": "name"}]"#,
        1,
    );
    let long = "słowo ".repeat(200);
    check_parsed(&format!(r#"[{{"quote": "{long}", "kind": "home"}}]"#), 0);
    let many = vec![r#"{"quote": "Mieszkam w Gdańsku", "kind": "home"}"#; 10_000].join(",");
    check_parsed(&format!("[{many}]"), MAX_PROPOSALS);
    // HTML in a quote is only words to ground: no user message holds them, nothing is stored.
    check_stored(
        &["Mieszkam w Gdańsku."],
        &[("<img src=x onerror=alert(1)>", FactKind::Name)],
        &[],
    );
}

#[test]
fn a_reply_with_only_user_facts_is_a_reply() {
    let reply = r#"{"summary": "", "entities": [], "no_longer_true": [], "user_facts": [{"quote": "Mieszkam w Gdańsku", "kind": "home"}], "user_facts_ended": []}"#;
    let parsed = parse_reply(reply).expect("proposals alone are an update");
    assert_eq!(parsed.user_facts.said.len(), 1);
}

#[test]
fn the_schema_asks_for_the_users_facts_with_their_kinds() {
    let schema: serde_json::Value = serde_json::from_str(&update_schema()).unwrap();
    let required = schema["required"].as_array().unwrap();
    for field in ["user_facts", "user_facts_ended"] {
        assert!(required.iter().any(|r| r == field), "{field} is required");
        let item = &schema["properties"][field]["items"];
        assert_eq!(item["required"], serde_json::json!(["quote", "kind"]));
        let kinds = item["properties"]["kind"]["enum"].as_array().unwrap();
        assert_eq!(kinds.len(), 9);
    }
}
