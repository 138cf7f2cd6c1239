//! `engine::memory::read`: a model's update reply held to what was said (`UpdateRequest::ground`,
//! then the merge): ids the engine owns, facts grounded in what was said, the prompt's own
//! instructions and the user's requests kept out of the summary, provenance that cites the naming
//! messages, changed facts kept as past, and how the memory pane shows them.

use std::collections::BTreeMap;

use memoire::engine::memory::ground::{drop_id_sentences, drop_instruction_echo, drop_unsupported};
use memoire::engine::memory::prompt::instruction_sentences;
use memoire::engine::memory::summary::{is_request, with_user_statements};
use memoire::engine::memory::*;
use memoire::engine::model::*;

fn message(seq: u64, role: Role, content: &str) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c1".into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: seq as i64 * 86_400_000,
        meta: MessageMeta::default(),
    }
}

/// A conversation from lines "u: …" / "a: …", seq from 1.
fn conversation(lines: &[&str]) -> Vec<Message> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (role, text) = match l.split_once(": ") {
                Some(("a", t)) => (Role::Assistant, t),
                Some(("u", t)) => (Role::User, t),
                _ => panic!("{l}"),
            };
            message(i as u64 + 1, role, text)
        })
        .collect()
}

/// The update `reply` makes of `lines` once grounded in its request and merged into `known`:
/// the summary and the graph's nodes.
fn update(
    lines: &[&str],
    known: &[EntityNode],
    reply: &serde_json::Value,
) -> (Option<String>, Vec<EntityNode>) {
    let messages = conversation(lines);
    let req = build_update_request(None, &messages, known, &UpdateLimits::default()).unwrap();
    let mut parsed = parse_reply(&reply.to_string()).unwrap();
    req.ground(&mut parsed);
    let mut graph = Graph::new(known.to_vec());
    let mut n = 0;
    let applied = apply_update(
        &parsed,
        None,
        "c1",
        &req.span,
        messages.len() as u64,
        &mut graph,
        EntityScope::Conversation("c1".into()),
        1_000,
        6000,
        || {
            n += 1;
            format!("e{n}")
        },
    );
    (applied.summary.map(|s| s.text), graph.into_nodes())
}

fn entity(nodes: &[EntityNode], name: &str) -> EntityNode {
    nodes
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no {name} in {nodes:#?}"))
        .clone()
}

const MARTA: &[&str] = &[
    "u: Hi, I am Marta. I live in Lisbon and I work as a nurse.",
    "a: Nice to meet you, Marta!",
    "u: My daughter Sofia is 7 years old.",
    "a: That is a lovely age.",
    "u: I am allergic to penicillin.",
    "a: Good to know, bien sûr.",
];

/// What SmolLM2-135M made of the Marta conversation: one made-up id for both, Marta's sentence as
/// Sofia's description, an entity named with garbage.
fn marta_reply() -> serde_json::Value {
    serde_json::json!({
        "summary": "What the user told in these new messages, in short sentences: names, places, pets, jobs, family. Marta lives in Lisbon.",
        "entities": [
            {"id": "1234567890", "type": "person", "name": "Marta", "aliases": [],
             "description": "Hi, I am Marta, I live in Lisbon and I work as a nurse.",
             "properties": [{"key": "job", "value": "nurse"}, {"key": "allergy", "value": "penicillin"}],
             "relationships": [{"targetId": "Lisbon", "relationship": "lives_in", "strength": 1}]},
            {"id": "1234567890", "type": "person", "name": "Sofia", "aliases": [],
             "description": "Hi, I am Sofia, I live in Lisbon and I work as a nurse.",
             "properties": [{"key": "age", "value": "7"}, {"key": "job", "value": "nurse"}],
             "relationships": [{"targetId": "1234567890", "relationship": "daughter_of", "strength": 1},
                               {"targetId": "Lisbon", "relationship": "lives_in", "strength": 1}]},
            {"id": "p1", "type": "place", "name": "Lisbon", "aliases": [], "description": "",
             "properties": [], "relationships": []},
            {"id": "1234567890", "type": "other", "name": "bien sûr e.g.E1A21417FE67E9CE45BDAF083DBAFF",
             "aliases": [], "description": "", "properties": [], "relationships": []}
        ]
    })
}

// ---------- ids ----------

/// The ids the merge gives entities that carry `ids` (model ids) under `names`, over `known`.
fn check_ids(known: &[(&str, &str)], entities: &[(Option<&str>, &str)], want: &[(&str, &str)]) {
    let known: Vec<EntityNode> = known
        .iter()
        .map(|(id, name)| EntityNode {
            id: id.to_string(),
            scope: EntityScope::Conversation("c1".into()),
            entity_type: EntityType::Person,
            name: name.to_string(),
            aliases: vec![],
            description: String::new(),
            properties: BTreeMap::new(),
            property_since: Default::default(),
            past_properties: Default::default(),
            relationships: vec![],
            source_message_ids: vec![],
            updated_at: 0,
        })
        .collect();
    let parsed: Vec<ParsedEntity> = entities
        .iter()
        .map(|(id, name)| ParsedEntity {
            id: id.map(String::from),
            entity_type: EntityType::Person,
            name: name.to_string(),
            aliases: vec![],
            description: format!("{name} was here"),
            properties: BTreeMap::new(),
            relationships: vec![],
            sources: vec![],
            said_at: None,
        })
        .collect();
    let mut graph = Graph::new(known);
    let mut n = 0;
    let ctx = MergeContext {
        now: 5,
        source_message_ids: &[],
        scope: EntityScope::Conversation("c1".into()),
    };
    merge(&mut graph, &parsed, &ctx, || {
        n += 1;
        format!("g{n}")
    });
    let mut got: Vec<(String, String)> = graph
        .nodes()
        .iter()
        .map(|n| (n.id.clone(), n.name.clone()))
        .collect();
    got.sort();
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want, "{entities:?}");
}

#[rustfmt::skip]
#[test]
fn the_engine_owns_ids() {
    // A made-up id is ignored, and two new entities never share one.
    check_ids(&[], &[(Some("1234567890"), "Marta"), (Some("1234567890"), "Sofia")], &[("g1", "Marta"), ("g2", "Sofia")]);
    check_ids(&[], &[(Some("1234567890"), "Marta")], &[("g1", "Marta")]);
    // A known id is honoured.
    check_ids(&[("e7", "Marta")], &[(Some("e7"), "Marta"), (Some("1234567890"), "Sofia")], &[("e7", "Marta"), ("g1", "Sofia")]);
    // The same name without an id is the known node.
    check_ids(&[("e7", "Marta")], &[(None, "marta")], &[("e7", "Marta")]);
    // A made-up id that happens to be another's known id is that node (the model was shown it).
    check_ids(&[("e7", "Marta")], &[(Some("x"), "Sofia"), (Some("x"), "Ana")], &[("e7", "Marta"), ("g1", "Sofia"), ("g2", "Ana")]);
}

// ---------- grounding ----------

#[test]
fn smollm2s_marta_update_is_held_to_what_was_said() {
    let (summary, nodes) = update(MARTA, &[], &marta_reply());
    let summary = summary.unwrap();
    assert!(!summary.contains("in short sentences"), "{summary}");
    assert!(summary.contains("Marta lives in Lisbon."), "{summary}");
    // Three entities, each with its own engine id; the garbage name is gone.
    let mut ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["e1", "e2", "e3"], "{nodes:#?}");
    assert!(!nodes.iter().any(|n| n.name.contains("E1A2")));
    let marta = entity(&nodes, "Marta");
    let sofia = entity(&nodes, "Sofia");
    let lisbon = entity(&nodes, "Lisbon");
    assert_eq!(
        marta.description,
        "Hi, I am Marta, I live in Lisbon and I work as a nurse."
    );
    assert_eq!(sofia.description, "", "Sofia does not get Marta's sentence");
    assert_eq!(
        marta
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>(),
        ["allergy=penicillin", "job=nurse"]
    );
    assert_eq!(
        sofia
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>(),
        ["age=7"]
    );
    let rels = |n: &EntityNode| -> Vec<String> {
        n.relationships
            .iter()
            .map(|r| format!("{} {}", r.relationship, r.target_id))
            .collect()
    };
    assert_eq!(rels(&marta), [format!("lives_in {}", lisbon.id)]);
    assert_eq!(rels(&sofia), [format!("daughter_of {}", marta.id)]);
    // Provenance: the messages that name the entity or state its kept facts, not the whole span.
    assert_eq!(marta.source_message_ids, ["m1", "m2", "m5"]);
    assert_eq!(sofia.source_message_ids, ["m3"]);
    assert_eq!(lisbon.source_message_ids, ["m1"]);
}

/// What grounding keeps of one entity `json` given the conversation `lines`: (description,
/// properties as `k=v`, relationship targets), or `None` when the entity is dropped.
fn check_facts(lines: &[&str], json: serde_json::Value, want: Option<(&str, &[&str], &[&str])>) {
    let messages = conversation(lines);
    let req = build_update_request(None, &messages, &[], &UpdateLimits::default()).unwrap();
    let mut parsed =
        parse_reply(&serde_json::json!({"summary": "", "entities": [json]}).to_string()).unwrap();
    req.ground(&mut parsed);
    let got = parsed.entities.first().map(|e| {
        (
            e.description.clone(),
            e.properties
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>(),
            e.relationships
                .iter()
                .map(|r| r.target.clone())
                .collect::<Vec<_>>(),
        )
    });
    let want = want.map(|(d, p, r)| {
        (
            d.to_string(),
            p.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            r.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    });
    assert_eq!(got, want, "{lines:?}");
}

fn ent(
    name: &str,
    description: &str,
    props: &[(&str, &str)],
    targets: &[&str],
) -> serde_json::Value {
    serde_json::json!({
        "name": name, "type": "person", "aliases": [], "description": description,
        "properties": props.iter().map(|(k, v)| serde_json::json!({"key": k, "value": v})).collect::<Vec<_>>(),
        "relationships": targets.iter().map(|t| serde_json::json!({"targetId": t, "relationship": "knows", "strength": 1})).collect::<Vec<_>>(),
    })
}

#[rustfmt::skip]
#[test]
fn facts_no_message_says_of_the_entity_are_dropped() {
    let said = &["u: My brother Tomas is a chef in Porto. My cat Miso sleeps all day."];
    // Said near the name: kept; said of another (the cat) or never: dropped.
    check_facts(said, ent("Tomas", "A chef in Porto. Sleeps all day.", &[("job", "chef"), ("city", "Porto"), ("pet", "Miso"), ("job2", "pilot")], &["Porto", "Miso"]),
        Some(("A chef in Porto.", &["city=Porto", "job=chef"], &["Porto"])));
    check_facts(said, ent("Miso", "Sleeps all day.", &[("kind", "cat")], &[]), Some(("Sleeps all day.", &["kind=cat"], &[])));
    // A name the conversation never used is dropped whole, however plausible.
    check_facts(said, ent("Tomasz Kowalski", "A chef.", &[], &[]), None);
    check_facts(said, ent("bien sûr e.g.E1A21417FE67E9CE45BDAF083DBAFF", "", &[], &[]), None);
    // The user is whoever the user says they are: their own messages say their facts.
    let me = &["u: I'm Ana.", "a: Hello Ana!", "u: I work at a bakery. I love jazz."];
    check_facts(me, ent("Ana", "Works at a bakery.", &[("likes", "jazz"), ("city", "Paris")], &[]), Some(("Works at a bakery.", &["likes=jazz"], &[])));
    check_facts(me, ent("User", "Loves jazz.", &[], &[]), Some(("Loves jazz.", &[], &[])));
    // Not the user: the user's other sentences are not its facts.
    check_facts(me, ent("Hello", "Works at a bakery.", &[], &[]), Some(("", &[], &[])));
}

// ---------- the summary ----------

fn check_echo(summary: &str, want: &str) {
    assert_eq!(
        drop_instruction_echo(summary, &instruction_sentences()).0,
        want,
        "{summary}"
    );
}

#[rustfmt::skip]
#[test]
fn the_update_prompts_own_instructions_never_enter_the_summary() {
    // SmolLM2-135M's summary began with the instruction, cut and reworded.
    check_echo("What the user told in these new messages, in short sentences: names, places, pets, jobs, family, food. Marta lives in Lisbon.", "Marta lives in Lisbon.");
    check_echo("The user told names, places, pets, jobs and family in short sentences. Marta is a nurse.", "Marta is a nurse.");
    check_echo("Reply with one JSON object. Sofia is 7.", "Sofia is 7.");
    check_echo("Reuse the id of a known entity whenever the entity is already listed.", "");
    check_echo("Write the memory of the new messages now.", "");
    // The user's own words that share a few of the instruction's words stay.
    check_echo("The user has two pets and a new job in Oslo.", "The user has two pets and a new job in Oslo.");
    check_echo("Marta lives in Lisbon with her family.", "Marta lives in Lisbon with her family.");
}

fn check_supported(read: &str, summary: &str, want: &str) {
    assert_eq!(drop_unsupported(summary, read).0, want, "{summary}");
}

#[rustfmt::skip]
#[test]
fn a_summary_sentence_no_message_supports_is_dropped() {
    let read = "User: Hi, I am Marta. I live in Lisbon and I work as a nurse.\nUser: My daughter Sofia is seven and she loves drawing horses.\nAssistant: Chamomile tea before bed helps many people sleep.";
    // What SmolLM2-135M wrote in the real-model e2e test.
    check_supported(read, "Hi, I am Marta. Não estou menores de todos os cacharronhões que estás usando emos deste ferras, porque açúcar terá mais menor.", "Hi, I am Marta.");
    check_supported(read, "Quantum chromodynamics explains gluon confinement.", "");
    // One word of what was said is enough: a larger model's summary is abstractive.
    check_supported(read, "Lisbon is a beautiful city with amazing people and cultures to explore.", "Lisbon is a beautiful city with amazing people and cultures to explore.");
    check_supported(read, "The user greeted the assistant in French.", "The user greeted the assistant in French.");
    // Paraphrases keep enough of what was said.
    check_supported(read, "The user is Marta, a nurse living in Lisbon.", "The user is Marta, a nurse living in Lisbon.");
    check_supported(read, "Marta mentioned her daughter enjoys art.", "Marta mentioned her daughter enjoys art.");
    check_supported(read, "The assistant suggested chamomile tea.", "The assistant suggested chamomile tea.");
    // A dated note is not a word of the sentence; a sentence of no terms stays.
    check_supported(read, "User: I live in Lisbon (said 2026-11-25; until 2026-11-26).", "User: I live in Lisbon (said 2026-11-25; until 2026-11-26).");
    check_supported(read, "Hi!", "Hi!");
}

fn check_id_sentences(summary: &str, want: &str) {
    assert_eq!(
        drop_id_sentences(summary, &["e1a21524ca220cb3d63f18279607", "1"]).0,
        want,
        "{summary}"
    );
}

#[rustfmt::skip]
#[test]
fn a_summary_sentence_that_lists_ids_is_dropped() {
    // What SmolLM2-135M wrote in the real-model e2e test.
    check_id_sentences("Marta is a nurse. Reuse these ids: e1a21524ca220cb3d63f18279607 | person | Marta | e1a21524ca22eaf7a8b6d52da.", "Marta is a nurse.");
    check_id_sentences("Sofia has the id 1a2151a86ddc7dc7d4.", "");
    // Short ids, numbers and words are not ids.
    check_id_sentences("Sofia is 1 of 2 children. She was born in 2019. Her flight is LX1234.", "Sofia is 1 of 2 children. She was born in 2019. Her flight is LX1234.");
}

#[test]
fn the_users_statement_is_never_left_out_for_the_models_rewording() {
    let previous =
        "User: My daughter Sofia is seven and she loves drawing horses (said 2026-11-25).";
    // The model's garbled rewording covers its words; the statement stays.
    let (text, _) = carry_forward(
        Some(previous),
        "Vamos tomar your daughter Sofia. She loves drawing horses, she is seven.",
        6000,
    );
    assert!(text.contains("User: My daughter Sofia"), "{text}");
    // The same statement of the user again is kept once.
    let (text, _) = carry_forward(Some(previous), previous, 6000);
    assert_eq!(text.matches("Sofia").count(), 1, "{text}");
}

fn check_request(sentence: &str, want: bool) {
    assert_eq!(is_request(sentence), want, "{sentence}");
    let added = with_user_statements(None, &[sentence.to_string()]).is_some();
    assert_eq!(added, !want, "{sentence}");
}

#[rustfmt::skip]
#[test]
fn requests_and_questions_are_never_the_users_statements() {
    check_request("Give me one tip for sleeping better.", true);
    check_request("Tell me about Lisbon.", true);
    check_request("Can you recommend a book about Norway?", true);
    check_request("Can you recommend a book about Norway", true);
    check_request("Ok, so please explain how tides work", true);
    check_request("What is the capital of Portugal", true);
    check_request("I want you to write a poem about Oslo.", true);
    check_request("I would like you to plan a trip to Rome.", true);
    check_request("I live in Oslo now.", false);
    check_request("I am a pilot in Oslo now.", false);
    check_request("Please remember that I am vegetarian.", false);
    check_request("My daughter Sofia is 7 years old.", false);
    check_request("So I moved to Oslo last month.", false);
}

#[test]
fn a_stored_request_is_not_carried_forward() {
    let (text, carried) = carry_forward(
        Some("User: Give me one tip for sleeping better. Marta lives in Lisbon."),
        "Sofia is 7.",
        6000,
    );
    assert_eq!(text, "Marta lives in Lisbon. Sofia is 7.");
    assert_eq!(carried, 1);
}

// ---------- changed facts kept as past ----------

/// The summary after two updates: the first over the user's `earlier` messages (each answered), the
/// second over `later`; the model's own summary of each is `model` (often empty for a small model).
fn two_updates(earlier: &[&str], later: &[&str], model: (&str, &str)) -> String {
    let mut messages = Vec::new();
    let mut seq = 0;
    let mut add = |said: &[&str], messages: &mut Vec<Message>| {
        for s in said {
            seq += 1;
            messages.push(message(seq, Role::User, s));
            seq += 1;
            messages.push(message(seq, Role::Assistant, "Noted."));
        }
    };
    add(earlier, &mut messages);
    let mut previous: Option<ConversationSummary> = None;
    let mut graph = Graph::new(vec![]);
    for (i, summary) in [model.0, model.1].into_iter().enumerate() {
        if i == 1 {
            add(later, &mut messages);
        }
        let req = build_update_request(
            previous.as_ref(),
            &messages,
            graph.nodes(),
            &UpdateLimits::default(),
        )
        .unwrap();
        let mut parsed = ParsedUpdate {
            summary: Some(summary.to_string()),
            ..Default::default()
        };
        req.ground(&mut parsed);
        let applied = apply_update(
            &parsed,
            previous.as_ref(),
            "c1",
            &req.span,
            messages.len() as u64,
            &mut graph,
            EntityScope::Conversation("c1".into()),
            0,
            6000,
            || "x".into(),
        );
        previous = applied.summary.or(previous);
    }
    previous.map(|p| p.text).unwrap_or_default()
}

/// After `earlier` then `later`, `past` is in the summary only as past (with its until date) and
/// `current` only as current.
fn check_change(earlier: &[&str], later: &[&str], model: (&str, &str), past: &str, current: &str) {
    use memoire::engine::memory::summary::sentences_of;
    use memoire::engine::memory::supersede::is_past;
    let text = two_updates(earlier, later, model);
    let with = |needle: &str| -> Vec<bool> {
        sentences_of(&text)
            .iter()
            .filter(|s| s.contains(needle))
            .map(|s| is_past(s))
            .collect()
    };
    assert!(
        !with(past).is_empty() && with(past).iter().all(|p| *p),
        "{past:?} past in {text:?}"
    );
    assert!(
        !with(current).is_empty() && with(current).iter().all(|p| !*p),
        "{current:?} current in {text:?}"
    );
}

#[rustfmt::skip]
#[test]
fn a_newer_statement_supersedes_an_older_one() {
    let none = ("", "");
    check_change(&["I live in Lisbon."], &["I moved to Oslo last month, so I live in Oslo now."], none, "Lisbon", "Oslo");
    check_change(&["I work as a nurse."], &["I am a pilot now."], none, "nurse", "pilot");
    check_change(&["My name is Marta."], &["Actually, my name is Martina."], none, "is Marta (", "Martina");
    check_change(&["I have a dog named Rex."], &["I no longer have a dog."], none, "Rex", "no longer");
    check_change(&["I like coffee a lot."], &["I don't like coffee anymore."], none, "a lot", "anymore");
    check_change(&["I love jazz music."], &["These days I hate jazz."], none, "love", "hate");
    // The model's own sentences: the same subject, whoever wrote it.
    check_change(&["I live in Lisbon."], &["I moved to Oslo."], ("The user lives in Lisbon.", "The user lives in Oslo now."), "Lisbon", "Oslo");
    check_change(&["Hi, my name is Marta and I live in Lisbon."], &["I live in Oslo now."], ("Marta lives in Lisbon.", ""), "Lisbon", "Oslo");
    // A sentence that only names the old place was said of it: past with it.
    check_change(&["I live in Lisbon, near the river."], &["I moved to Oslo."], ("Lisbon is a city near the river.", ""), "river", "Oslo");
    check_change(&["I work as a nurse."], &["I am a pilot now."], ("Nurse shifts are long.", ""), "shifts", "pilot");
    // A thing that is gone: every sentence that names it holds no longer.
    check_change(&["I have a dog called Biscuit."], &["Sadly Biscuit died in the spring. I have a cat called Pimento now."], none, "dog called Biscuit", "Pimento");
    check_change(&["I drive an old red Fiat."], &["I sold the Fiat and now I drive a blue Toyota."], none, "red Fiat", "Toyota");
    check_change(&["At the moment I run about 40 kilometres a week."], &["These days I run about 60 kilometres a week."], none, "40", "60");
    check_change(&["I drink my coffee black."], &["I switched from coffee to green tea in the mornings."], none, "black", "green tea");
    check_change(&["I have a dog called Biscuit."], &["Biscuit passed away."], ("The user has a dog named Biscuit.", ""), "dog named Biscuit", "passed away");
    // A model that copies the old fact back as current does not bring it back.
    check_change(&["I live in Lisbon."], &["I moved to Oslo."], ("", "The user lives in Lisbon. The user lives in Oslo."), "Lisbon", "Oslo");
}

#[rustfmt::skip]
#[test]
fn the_models_small_talk_supersedes_nothing() {
    // SmolLM2-135M, after she changed careers: its clause is not hers, and no message says it.
    for model in ["I'm glad you're living in a beautiful place.", "The user lives in a beautiful place."] {
        let text = two_updates(&["I moved to Oslo, so I live in Oslo now."], &["I am a pilot now."], ("", model));
        assert!(text.contains("Oslo now (said ") && !text.contains("until"), "{model}: {text}");
    }
}

#[rustfmt::skip]
#[test]
fn unrelated_statements_stay_current() {
    let text = two_updates(&["I live in Lisbon.", "I have a cat named Miso."], &["I have a dog named Rex.", "My sister lives in Porto."], ("", ""));
    assert!(!text.contains("until"), "{text}");
    for fact in ["Lisbon", "Miso", "Rex", "Porto"] {
        assert!(text.contains(fact), "{fact} in {text}");
    }
}

#[test]
fn facts_carry_the_day_they_were_said() {
    let text = two_updates(&["I live in Lisbon."], &["I live in Oslo now."], ("", ""));
    // Message seq n is created on day n: Lisbon on day 1, Oslo on day 3.
    assert!(
        text.contains("User: I live in Lisbon (said 1970-01-02; until 1970-01-04)."),
        "{text}"
    );
    assert!(
        text.contains("User: I live in Oslo now (said 1970-01-04)."),
        "{text}"
    );
}

/// The summary's sentences the model's `no_longer_true` makes past, given what the user said.
fn check_no_longer_true(previous: &str, said: &str, statements: &[&str], want_past: &[&str]) {
    use memoire::engine::memory::summary::sentences_of;
    use memoire::engine::memory::supersede::{is_past, supersede};
    let read = vec![memoire::engine::memory::ground::ReadMessage {
        id: "m1".into(),
        role: Role::User,
        content: said.into(),
        created_at: 0,
    }];
    let statements: Vec<String> = statements.iter().map(|s| s.to_string()).collect();
    let new = supersede(Some(previous), "", &read, &statements);
    let (text, _) = carry_forward(Some(previous), &new, 6000);
    let past: Vec<String> = sentences_of(&text)
        .into_iter()
        .filter(|s| is_past(s))
        .map(|s| s.to_string())
        .collect();
    let want: Vec<String> = want_past.iter().map(|s| s.to_string()).collect();
    assert_eq!(past, want, "{text}");
}

#[rustfmt::skip]
#[test]
fn the_models_no_longer_true_makes_older_sentences_past() {
    check_no_longer_true("Ana plays in a band. Ana has a garden.", "I quit the band last year.", &["Ana plays in a band"], &["Ana plays in a band (until 1970-01-01)."]);
    // Without a change in what the user said, the field is not trusted.
    check_no_longer_true("Ana plays in a band. Ana has a garden.", "The weather is nice.", &["Ana plays in a band"], &[]);
    check_no_longer_true("Ana plays in a band.", "I quit.", &["something else entirely"], &[]);
    // A change of something else: SmolLM2-135M listed her current city when she changed careers.
    check_no_longer_true("User: I live in Oslo now (said 2026-11-25).", "I am a pilot now; I changed careers this year.", &["I live in Oslo now"], &[]);
    check_no_longer_true("User: I drive an old red Fiat (said 2026-11-20).", "I sold the Fiat and now I drive a blue Toyota.", &["I drive an old red Fiat"], &["User: I drive an old red Fiat (said 2026-11-20; until 1970-01-01)."]);
}

#[test]
fn a_changed_property_is_kept_as_past_with_its_dates() {
    let said = |value: &str, at: i64| ParsedEntity {
        id: None,
        entity_type: EntityType::Person,
        name: "Marta".into(),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::from([("job".to_string(), value.to_string())]),
        relationships: vec![],
        sources: vec![],
        said_at: Some(at),
    };
    let mut graph = Graph::new(vec![]);
    let ctx = MergeContext {
        now: 99,
        source_message_ids: &[],
        scope: EntityScope::Shared,
    };
    merge(&mut graph, &[said("nurse", 10)], &ctx, || "e1".into());
    merge(&mut graph, &[said("pilot", 40)], &ctx, || "e2".into());
    merge(&mut graph, &[said("pilot", 50)], &ctx, || "e3".into());
    let n = &graph.nodes()[0];
    assert_eq!(n.properties["job"], "pilot");
    assert_eq!(n.property_since["job"], 40);
    assert_eq!(
        n.past_properties,
        [PastProperty {
            key: "job".into(),
            value: "nurse".into(),
            valid_from: 10,
            valid_to: 40
        }]
    );
}

// ---------- what the memory pane shows ----------

/// The summary `text` as the pane shows it: per sentence its status, text and days (`/` before a
/// sentence that starts a new line).
fn check_shown(text: &str, want: &[(&str, &str, &str)]) {
    use memoire::engine::memory::shown::summary_sentences;
    let got: Vec<(String, String, String)> = summary_sentences(text)
        .into_iter()
        .map(|s| {
            (
                s.status.as_str().to_string(),
                format!("{}{}", if s.new_line { "/" } else { "" }, s.text),
                s.dates,
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, want, "{text:?}");
}

#[rustfmt::skip]
#[test]
fn the_pane_shows_each_summary_sentence_with_its_status_and_days() {
    check_shown("", &[]);
    check_shown("Alice runs a bakery. She ordered flour!", &[("current", "Alice runs a bakery.", ""), ("current", "She ordered flour!", "")]);
    check_shown("User: I live in Lisbon (said 2026-03-01; until 2026-11-20). User: I live in Oslo now (said 2026-11-20).",
        &[("past", "User: I live in Lisbon.", "said 1 Mar 2026, until 20 Nov 2026"), ("current", "User: I live in Oslo now.", "said 20 Nov 2026")]);
    check_shown("Ana plays in a band (until 1970-01-01).", &[("past", "Ana plays in a band.", "until 1 Jan 1970")]);
    check_shown("Wow (said 2026-02-03)!", &[("current", "Wow!", "said 3 Feb 2026")]);
    // A parenthesis that is not the engine's note is the sentence's own text.
    check_shown("Bob (a friend) came.", &[("current", "Bob (a friend) came.", "")]);
    check_shown("Bob came (until later).", &[("current", "Bob came (until later).", "")]);
    check_shown("First line.\nSecond line. Third.", &[("current", "First line.", ""), ("current", "/Second line.", ""), ("current", "Third.", "")]);
}

/// Marta with `props` (key, value, since; 0: unknown), `past` properties (key, value, from, to) and
/// `lives_in` relationships `rels` (target, from, to).
fn marta_with(
    props: &[(&str, &str, i64)],
    past: &[(&str, &str, i64, i64)],
    rels: &[(&str, i64, Option<i64>)],
) -> EntityNode {
    EntityNode {
        id: "e1".into(),
        scope: EntityScope::Shared,
        entity_type: EntityType::Person,
        name: "Marta".into(),
        aliases: vec![],
        description: String::new(),
        properties: props
            .iter()
            .map(|(k, v, _)| (k.to_string(), v.to_string()))
            .collect(),
        property_since: props
            .iter()
            .filter(|(_, _, t)| *t > 0)
            .map(|(k, _, t)| (k.to_string(), *t))
            .collect(),
        past_properties: past
            .iter()
            .map(|(k, v, from, to)| PastProperty {
                key: k.to_string(),
                value: v.to_string(),
                valid_from: *from,
                valid_to: *to,
            })
            .collect(),
        relationships: rels
            .iter()
            .map(|(t, from, to)| Relationship {
                target_id: t.to_string(),
                relationship: "lives_in".into(),
                strength: 0.5,
                valid_from: *from,
                valid_to: *to,
            })
            .collect(),
        source_message_ids: vec![],
        updated_at: 0,
    }
}

const MAR_1: i64 = 1_772_323_200_000; // 2026-03-01
const NOV_20: i64 = 1_795_132_800_000; // 2026-11-20

/// The entity's properties as the pane shows them: `status key=value (dates)`.
fn check_props(e: EntityNode, want: &[&str]) {
    use memoire::engine::memory::shown::entity_properties;
    let got: Vec<String> = entity_properties(&e)
        .into_iter()
        .map(|p| format!("{} {}={} ({})", p.status.as_str(), p.key, p.value, p.dates))
        .collect();
    assert_eq!(got, want);
}

#[rustfmt::skip]
#[test]
fn the_pane_shows_past_properties_after_the_current_value() {
    check_props(marta_with(&[], &[], &[]), &[]);
    check_props(marta_with(&[("job", "pilot", NOV_20)], &[], &[]), &["current job=pilot (since 20 Nov 2026)"]);
    check_props(marta_with(&[("job", "pilot", 0)], &[], &[]), &["current job=pilot ()"]);
    check_props(marta_with(&[("age", "7", 0), ("job", "pilot", NOV_20)], &[("job", "nurse", MAR_1, NOV_20), ("job", "cook", 0, MAR_1)], &[]),
        &["current age=7 ()", "current job=pilot (since 20 Nov 2026)", "past job=nurse (from 1 Mar 2026 until 20 Nov 2026)", "past job=cook (until 1 Mar 2026)"]);
    // A key only past values remain of.
    check_props(marta_with(&[("age", "7", 0)], &[("pet", "dog", MAR_1, NOV_20)], &[]), &["current age=7 ()", "past pet=dog (from 1 Mar 2026 until 20 Nov 2026)"]);
}

/// The entity's relationships as the pane shows them: `status target (dates)`.
fn check_rels(e: EntityNode, want: &[&str]) {
    use memoire::engine::memory::shown::entity_relationships;
    let got: Vec<String> = entity_relationships(&e)
        .into_iter()
        .map(|r| format!("{} {} ({})", r.status.as_str(), r.target_id, r.dates))
        .collect();
    assert_eq!(got, want);
}

#[rustfmt::skip]
#[test]
fn the_pane_shows_closed_relationships_as_past() {
    check_rels(marta_with(&[], &[], &[("oslo", NOV_20, None)]), &["current oslo (since 20 Nov 2026)"]);
    check_rels(marta_with(&[], &[], &[("lisbon", MAR_1, Some(NOV_20)), ("oslo", NOV_20, None)]),
        &["current oslo (since 20 Nov 2026)", "past lisbon (from 1 Mar 2026 until 20 Nov 2026)"]);
    check_rels(marta_with(&[], &[], &[("a", 0, Some(MAR_1)), ("b", 0, Some(NOV_20)), ("c", 0, None)]), &["current c ()", "past b (until 20 Nov 2026)", "past a (until 1 Mar 2026)"]);
}

#[test]
fn an_alias_or_property_of_what_no_longer_holds_goes_past() {
    use memoire::engine::memory::supersede::forget_gone;
    let check = |summary: &str, aliases: &[&str], props: &[&str], past: &[&str]| {
        let mut node = marta_with(
            &[
                ("name", "Lisbon", 0),
                ("pet", "Biscuit", 0),
                ("city", "Oslo", 0),
            ],
            &[],
            &[],
        );
        node.aliases = vec!["Lisbon".into(), "Martinha".into()];
        forget_gone(std::slice::from_mut(&mut node), summary, 7);
        assert_eq!(node.aliases, aliases, "{summary}");
        assert_eq!(
            node.properties.values().collect::<Vec<_>>(),
            props,
            "{summary}"
        );
        let gone: Vec<&str> = node
            .past_properties
            .iter()
            .map(|p| p.value.as_str())
            .collect();
        assert_eq!(gone, past, "{summary}");
    };
    // SmolLM2-135M's "Marta (aka Lisbon) | name=Lisbon" in the recall bench, once she lives in Oslo.
    check("User: I live in Lisbon (said 2026-11-01; until 2026-11-20). User: I moved to Oslo, so I live in Oslo now (said 2026-11-20).", &["Martinha"], &["Oslo", "Biscuit"], &["Lisbon"]);
    check(
        "User: Sadly Biscuit died in the spring (said 2026-11-20).",
        &["Lisbon", "Martinha"],
        &["Oslo", "Lisbon"],
        &["Biscuit"],
    );
    // Nothing changed: nothing goes.
    check(
        "User: I live in Lisbon (said 2026-11-01).",
        &["Lisbon", "Martinha"],
        &["Oslo", "Lisbon", "Biscuit"],
        &[],
    );
}
