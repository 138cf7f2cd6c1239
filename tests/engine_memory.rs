#![cfg(not(target_arch = "wasm32"))]
//! Memory protocol, part 1: when the update runs, the update request, parsing the reply, summary
//! versions. Merging and retrieval are in `engine_memory_merge.rs`.

use memoire::engine::memory::parse::{
    DEFAULT_STRENGTH, MAX_DESCRIPTION_CHARS, MAX_ENTITIES, MAX_NAME_CHARS,
};
use memoire::engine::memory::prompt::NO_PREVIOUS;
use memoire::engine::memory::*;
use memoire::engine::model::*;
use proptest::prelude::*;

mod memory_spec;
use memory_spec::msgs;

// ---------- fixtures ----------

fn summary(version: u32, text: &str, covers: u64) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c1".into(),
        version,
        text: text.into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: 100,
    }
}

fn node(id: &str, name: &str, t: EntityType) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: t,
        name: name.into(),
        aliases: vec![],
        description: String::new(),
        properties: Default::default(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: 0,
    }
}

// ---------- due ----------

fn check_due(spec: &str, covers: Option<u64>, every: usize, over: bool, want: Due) {
    let messages = msgs(spec);
    let got = due(DueInput {
        messages: &messages,
        covers_up_to_seq: covers,
        every_pairs: every,
        over_budget: over,
    });
    assert_eq!(
        got, want,
        "spec {spec:?} covers {covers:?} M={every} over={over}"
    );
}

#[rustfmt::skip]
#[test]
fn due_table() {
    use DueReason::*;
    check_due("uauauauaua", None, 5, false, Due::Yes(Pairs { pairs: 5 }));
    check_due("uauauaua", None, 5, false, Due::No { pairs: 4 });
    check_due("uauauauaua", Some(2), 5, false, Due::No { pairs: 4 });
    check_due("uauauauauaua", Some(2), 5, false, Due::Yes(Pairs { pairs: 5 }));
    // errored, empty and streaming messages neither open nor close a pair
    check_due("uAuauauaua", None, 5, false, Due::No { pairs: 4 });
    check_due("uUauauauaua", None, 5, false, Due::Yes(Pairs { pairs: 5 }));
    check_due("ueuauauaua", None, 5, false, Due::No { pairs: 4 });
    check_due("uauauauaus", None, 5, false, Due::No { pairs: 4 });
    // two tabs: pairs after a reply still streaming wait until it is written
    check_due("uausua", None, 2, false, Due::No { pairs: 1 });
    check_due("uausua", Some(2), 1, false, Due::No { pairs: 0 });
    check_due("usua", Some(0), 1, true, Due::Yes(OverBudget { pairs: 0 }));
    check_due("sua", None, 1, true, Due::No { pairs: 0 });
    // interrupted replies count; tool and system messages are not pairs
    check_due("uiuiuiuiui", None, 5, false, Due::Yes(Pairs { pairs: 5 }));
    check_due("utyatua", None, 2, false, Due::Yes(Pairs { pairs: 2 }));
    check_due("uuuuua", None, 1, false, Due::Yes(Pairs { pairs: 1 }));
    check_due("aaaa", None, 1, false, Due::No { pairs: 0 });
    // M = 0 behaves as 1
    check_due("ua", None, 0, false, Due::Yes(Pairs { pairs: 1 }));
    // over budget: due as soon as something is new
    check_due("uau", None, 5, true, Due::Yes(OverBudget { pairs: 1 }));
    check_due("uaua", Some(4), 5, true, Due::No { pairs: 0 });
    check_due("uauA", Some(3), 5, true, Due::No { pairs: 0 });
}

#[test]
fn due_ignores_message_order() {
    let mut m = msgs("uauauauaua");
    m.reverse();
    assert_eq!(count_pairs(&m, None), 5);
}

// ---------- the update request ----------

fn check_request(
    spec: &str,
    previous: Option<ConversationSummary>,
    limits: UpdateLimits,
    contains: &[&str],
    absent: &[&str],
    want_ids: &[&str],
) {
    let messages = msgs(spec);
    let mut e1 = node("p1", "Alice", EntityType::Person);
    e1.aliases = vec!["Ally".into()];
    let entities = vec![e1, node("pl1", "Paris", EntityType::Place)];
    let req = build_update_request(previous.as_ref(), &messages, &entities, &limits).unwrap();
    assert_eq!(req.options.temperature, 0.0);
    assert!((MEMORY_MIN_TOKENS..=MEMORY_MAX_TOKENS).contains(&req.options.max_tokens));
    assert!(req.prompt.system.contains("=== CONVERSATION MEMORY ==="));
    assert!(req.prompt.system.contains("=== ENTITY MEMORY ==="));
    assert!(req.prompt.system.contains("targetId"));
    assert_eq!(req.prompt.messages.len(), 1);
    assert_eq!(req.prompt.messages[0].role, Role::User);
    let text = &req.prompt.messages[0].content;
    for c in contains {
        assert!(text.contains(c), "{spec}: missing {c:?} in\n{text}");
    }
    for a in absent {
        assert!(!text.contains(a), "{spec}: unexpected {a:?} in\n{text}");
    }
    let ids: Vec<&str> = req.span.message_ids.iter().map(String::as_str).collect();
    assert_eq!(ids, want_ids, "{spec}: covered ids");
    let seqs: Vec<u64> = messages
        .iter()
        .filter(|m| want_ids.contains(&m.id.as_str()))
        .map(|m| m.seq)
        .collect();
    assert_eq!(req.span.from_seq, *seqs.first().unwrap());
    assert_eq!(req.span.to_seq, *seqs.last().unwrap());
}

#[rustfmt::skip]
#[test]
fn request_table() {
    let d = UpdateLimits::default();
    check_request("uaua", None, d, &[NO_PREVIOUS, "[USER]: user says 1", "[ASSISTANT]: assistant says 4", "p1 | person | Alice | Ally", "pl1 | place | Paris"], &[], &["m1", "m2", "m3", "m4"]);
    check_request("uaua", Some(summary(3, "They talked about cheese.", 2)), d, &["They talked about cheese.", "user says 3", "(seq 3 to 4)"], &[NO_PREVIOUS, "user says 1"], &["m3", "m4"]);
    // two tabs: never past a reply still streaming (it would never be summarised)
    check_request("uusa", None, d, &["user says 1", "user says 2"], &["partial", "assistant says 4"], &["m1", "m2"]);
    check_request("uauasua", Some(summary(1, "x", 2)), d, &["user says 3", "assistant says 4"], &["partial", "user says 6"], &["m3", "m4"]);
    check_request("uAuaeyts", None, d, &["user says 3", "[TOOL]: tool result 7"], &["assistant failed", "system note", "partial"], &["m1", "m3", "m4", "m7"]);
    check_request("uaua", Some(summary(1, "   ", 0)), d, &[NO_PREVIOUS], &[], &["m1", "m2", "m3", "m4"]);
    // transcript limit: the first message always goes in, the rest wait for the next update
    let tight = UpdateLimits {
        max_transcript_chars: 60,
        ..d
    };
    check_request("uaua", None, tight, &["user says 1", "assistant says 2"], &["user says 3"], &["m1", "m2"]);
    let tiny = UpdateLimits {
        max_transcript_chars: 1,
        ..d
    };
    check_request("uaua", None, tiny, &["user says 1"], &["assistant says 2"], &["m1"]);
    // long messages are cut with a visible marker
    let short = UpdateLimits {
        max_message_chars: 6,
        ..d
    };
    check_request("ua", None, short, &["[USER]: user s [truncated]"], &["user says"], &["m1", "m2"]);
}

#[test]
fn request_lists_tool_calls_by_name_and_caps_entities() {
    let mut m = msgs("ua");
    m[1].meta.tool_calls = vec![ToolCall {
        id: "t".into(),
        name: "search_web".into(),
        arguments: "{\"q\":1}".into(),
        result: Some("secret".into()),
        status: None,
    }];
    let entities: Vec<EntityNode> = (0..10)
        .map(|i| {
            let mut n = node(&format!("e{i}"), &format!("Name{i}"), EntityType::Concept);
            n.updated_at = i;
            n
        })
        .collect();
    let limits = UpdateLimits {
        max_entities: 3,
        ..UpdateLimits::default()
    };
    let req = build_update_request(None, &m, &entities, &limits).unwrap();
    let text = &req.prompt.messages[0].content;
    assert!(text.contains("(called tools: search_web)"));
    assert!(!text.contains("secret"));
    for i in 0..10 {
        assert_eq!(
            text.contains(&format!("- e{i} |")),
            i >= 7,
            "entity e{i} (newest three only)"
        );
    }
}

#[test]
fn request_with_nothing_new_is_an_error() {
    let m = msgs("uaAe");
    assert_eq!(
        build_update_request(Some(&summary(1, "x", 2)), &m, &[], &UpdateLimits::default()),
        Err(MemoryError::NothingToSummarize)
    );
    assert_eq!(
        build_update_request(None, &[], &[], &UpdateLimits::default()),
        Err(MemoryError::NothingToSummarize)
    );
}

#[test]
fn limits_from_config_leave_room_for_the_reply() {
    let l = UpdateLimits::from_config(&MemoryConfig::default());
    assert_eq!(l.max_message_chars, 2000);
    assert_eq!(l.max_transcript_chars, (8192 - 2000 - 1500) * 3);
    let small = MemoryConfig {
        context_tokens: 1000,
        ..MemoryConfig::default()
    };
    assert_eq!(UpdateLimits::from_config(&small).max_transcript_chars, 2000);
}

// ---------- parsing ----------

enum Want<'a> {
    Ok(Option<&'a str>, &'a [&'a str]),
    Err(MemoryError),
}

fn check_parse(reply: &str, want: Want<'_>) {
    let got = parse_reply(reply);
    match (got, want) {
        (Ok(p), Want::Ok(summary, names)) => {
            assert_eq!(p.summary.as_deref(), summary, "summary of {reply:?}");
            let got_names: Vec<&str> = p.entities.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(got_names, names, "entities of {reply:?}");
        }
        (Err(e), Want::Err(w)) => assert_eq!(e, w, "error for {reply:?}"),
        (Ok(p), Want::Err(w)) => panic!("{reply:?}: wanted {w:?}, got {p:?}"),
        (Err(e), Want::Ok(..)) => panic!("{reply:?}: wanted Ok, got {e:?}"),
    }
}

const A: &str = r#"{"id":"p1","type":"person","name":"Alice","description":"d","properties":{},"relationships":[]}"#;
const B: &str = r#"{"id":"p2","type":"place","name":"Paris","relationships":[{"targetId":"p1","relationship":"home_of","strength":0.5}]}"#;

#[rustfmt::skip]
#[test]
fn parse_table() {
    let canon =
        format!("=== CONVERSATION MEMORY ===\nWe met Alice.\n=== ENTITY MEMORY ===\n[{A},{B}]\n");
    check_parse(&canon, Want::Ok(Some("We met Alice."), &["Alice", "Paris"]));
    check_parse(&format!("=== CONVERSATION MEMORY ===\nS.\n\n=== ENTITY MEMORY ===\n```json\n[{A}]\n```\n"), Want::Ok(Some("S."), &["Alice"]));
    check_parse(&format!("```\n{canon}```"), Want::Ok(Some("We met Alice."), &["Alice", "Paris"]));
    check_parse(&format!("Sure! Here is the memory:\n\n{canon}\nLet me know if you need more."), Want::Ok(Some("We met Alice."), &["Alice", "Paris"]));
    check_parse("=== CONVERSATION MEMORY ===\nOnly a summary.\n", Want::Ok(Some("Only a summary."), &[]));
    check_parse(&format!("=== ENTITY MEMORY ===\n[{A}]"), Want::Ok(None, &["Alice"]));
    check_parse(&format!("[{A}, {B}]"), Want::Ok(None, &["Alice", "Paris"]));
    check_parse(&format!("Here you go: [{B}] done"), Want::Ok(None, &["Paris"]));
    check_parse("I'm sorry, I can't help with that.", Want::Err(MemoryError::NoMemory));
    check_parse("", Want::Err(MemoryError::EmptyReply));
    check_parse(" \n\t ", Want::Err(MemoryError::EmptyReply));
    check_parse("=== CONVERSATION MEMORY ===\n\n=== ENTITY MEMORY ===\n[]", Want::Err(MemoryError::NoMemory));
    check_parse("=== CONVERSATION MEMORY ===\n   \n=== ENTITY MEMORY ===\nNone.", Want::Err(MemoryError::NoMemory));
    // trailing commas, stray whitespace, CRLF
    check_parse("=== CONVERSATION MEMORY ===\r\n  Spaces.  \r\n=== ENTITY MEMORY ===\r\n[ {\"name\": \"Alice\", \"properties\": {\"a\": 1,},}, ]\r\n", Want::Ok(Some("Spaces."), &["Alice"]));
    // heading variants and reversed order
    check_parse(&format!("## Conversation Memory\nMarkdown.\n## Entity Memory\n[{A}]"), Want::Ok(Some("Markdown."), &["Alice"]));
    check_parse(&format!("**ENTITY MEMORY:**\n[{A}]\n**CONVERSATION MEMORY:**\nReversed."), Want::Ok(Some("Reversed."), &["Alice"]));
    check_parse(&format!("===CONVERSATION MEMORY===\nTight.\n===ENTITY MEMORY===\n[{A}]"), Want::Ok(Some("Tight."), &["Alice"]));
    // an entity section that is present but broken is an error (nothing changes)
    check_parse("=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n[{\"name\": }]", Want::Err(MemoryError::BadEntityJson { detail: "expected value at line 1 column 10".into(), }));
    // one broken element among good ones is dropped, not fatal
    check_parse(&format!("=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n[{A}, {{\"name\": }}, {B}]"), Want::Ok(Some("S."), &["Alice", "Paris"]));
    // a number serde_json cannot hold drops that entity only
    check_parse(&format!("=== ENTITY MEMORY ===\n[{A}, {{\"name\":\"Big\",\"relationships\":[{{\"targetId\":\"p1\",\"relationship\":\"r\",\"strength\":1e400}}]}}]"), Want::Ok(None, &["Alice"]));
    // cut off by the token limit: complete entries survive
    check_parse(&format!("=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n[{A}, {{\"id\":\"x\",\"na"), Want::Ok(Some("S."), &["Alice"]));
    check_parse("=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\nNo entities changed.", Want::Ok(Some("S."), &[]));
    // wrapper object and a single object
    check_parse(&format!("=== ENTITY MEMORY ===\n{{\"entities\": [{A}, {B}]}}"), Want::Ok(None, &["Alice", "Paris"]));
    check_parse(&format!("=== ENTITY MEMORY ===\n{B}"), Want::Ok(None, &["Paris"]));
    // nameless and non-object entries are dropped; if nothing is left the reply is unusable
    check_parse("=== ENTITY MEMORY ===\n[{\"id\":\"x\",\"name\":\"  \"}, 3, \"str\", {\"name\":\"?!\"}]", Want::Err(MemoryError::NoMemory));
    check_parse("=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n[{\"id\":\"x\",\"name\":\"\"}, {\"name\":\"  Bob   Jones \"}]", Want::Ok(Some("S."), &["Bob Jones"]));
    // a summary with a fenced block keeps its text
    check_parse("=== CONVERSATION MEMORY ===\n```\nFenced summary.\n```\n=== ENTITY MEMORY ===\n[]", Want::Ok(Some("Fenced summary."), &[]));
    // a prose line that merely mentions the words is not a heading
    check_parse("Conversation memory is hard to get right, they said.", Want::Err(MemoryError::NoMemory));
}

#[test]
fn parse_reply_too_large_is_refused() {
    let big = format!("=== CONVERSATION MEMORY ===\n{}", "x".repeat(600 * 1024));
    assert!(matches!(
        parse_reply(&big),
        Err(MemoryError::ReplyTooLarge { .. })
    ));
}

fn one_entity(json: &str) -> ParsedEntity {
    let p = parse_reply(&format!("=== ENTITY MEMORY ===\n[{json}]"))
        .unwrap_or_else(|e| panic!("{json}: {e}"));
    assert_eq!(p.entities.len(), 1, "{json}");
    p.entities.into_iter().next().unwrap()
}

fn check_strength(raw: &str, want: Option<(f32, bool)>) {
    let e = one_entity(&format!(
        r#"{{"name":"A","relationships":[{{"targetId":"b","relationship":"knows"{raw}}}]}}"#
    ));
    let got = e.relationships.first().map(|r| (r.strength, r.ended));
    assert_eq!(got, want, "strength {raw:?}");
}

#[rustfmt::skip]
#[test]
fn relationship_strength_table() {
    check_strength(r#","strength":0.7"#, Some((0.7, false)));
    check_strength(r#","strength":1.7"#, Some((1.0, false)));
    check_strength(r#","strength":-0.3"#, Some((0.0, true)));
    check_strength(r#","strength":0"#, Some((0.0, true)));
    check_strength(r#","strength":"0.4""#, Some((0.4, false)));
    check_strength(r#","strength":"NaN""#, None);
    check_strength(r#","strength":"inf""#, None);
    check_strength(r#","strength":"strong""#, None);
    check_strength(r#","strength":[1]"#, None);
    check_strength(r#","strength":null"#, Some((DEFAULT_STRENGTH, false)));
    check_strength("", Some((DEFAULT_STRENGTH, false)));
    check_strength(r#","strength":0.9,"ended":true"#, Some((0.9, true)));
    check_strength(r#","strength":0.9,"valid":false"#, Some((0.9, true)));
}

#[test]
fn entity_validation() {
    let e = one_entity(
        r#"{"id": 42, "type": "Spaceship", "name": "Enterprise", "aliases": ["NCC-1701", "enterprise", "", 7],
        "properties": {"crew": 430, "active": true, "tags": ["a","b"], "none": null, "": "x", "class": " Constitution "},
        "relationships": [{"target": "Kirk", "type": "captained_by"}, {"relationship": "no target"}, "junk"]}"#,
    );
    assert_eq!(e.id.as_deref(), Some("42"));
    assert_eq!(e.entity_type, EntityType::Other);
    assert_eq!(e.aliases, vec!["NCC-1701".to_string(), "7".to_string()]);
    let props: Vec<(&str, &str)> = e
        .properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        props,
        vec![
            ("active", "true"),
            ("class", "Constitution"),
            ("crew", "430"),
            ("tags", "[\"a\",\"b\"]")
        ]
    );
    assert_eq!(e.relationships.len(), 1);
    assert_eq!(e.relationships[0].target, "Kirk");
    assert_eq!(e.relationships[0].relationship, "captained_by");
    assert_eq!(
        one_entity(r#"{"type":"PERSON","name":"x"}"#).entity_type,
        EntityType::Person
    );
    assert_eq!(
        one_entity(r#"{"name":"x","properties":[1,2]}"#)
            .properties
            .len(),
        0
    );
}

/// The name and aliases `parse_reply` keeps from a model's `name` and `aliases`; `None`: entity dropped.
fn check_name(name: &str, aliases: &[&str], want: Option<(&str, &[&str])>) {
    let json = serde_json::json!([{ "name": name, "aliases": aliases }]);
    let p = parse_reply(&format!(
        "=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n{json}"
    ))
    .unwrap();
    let got: Option<(String, Vec<String>)> = p
        .entities
        .first()
        .map(|e| (e.name.clone(), e.aliases.clone()));
    let want = want.map(|(n, a)| (n.to_string(), a.iter().map(|s| s.to_string()).collect()));
    assert_eq!(got, want, "{name:?} {aliases:?}");
}

#[rustfmt::skip]
#[test]
fn names_are_names_not_sentences() {
    check_name("Ingrid Valcourt", &[], Some(("Ingrid Valcourt", &[])));
    check_name("Ingrid Valcourt.", &[], Some(("Ingrid Valcourt", &[])));
    check_name("Ingrid Valcourt. I live in Trondheim, Norway.", &[], Some(("Ingrid Valcourt", &[])));
    check_name("Dr. Ada Lovelace", &[], Some(("Dr. Ada Lovelace", &[])));
    check_name("St. Louis", &["St. Louis, Missouri"], Some(("St. Louis", &["St. Louis, Missouri"])));
    check_name("Yahoo!", &[], Some(("Yahoo!", &[])));
    check_name("The user who said that she lives up in the north", &[], None);
    check_name("Ingrid", &["Hi! My name is Ingrid Valcourt.", "Ingrid V."], Some(("Ingrid", &["Ingrid V"])));
    check_name("Zorblax", &["Zorblax. I am a cat named Zorblax.", "the cat"], Some(("Zorblax", &["the cat"])));
    check_name("Ingrid", &["a person who lives far up in the cold north of Norway"], Some(("Ingrid", &[])));
}

/// The aliases an update keeps once grounded in what its request showed the model.
fn check_grounded(read: &str, aliases: &[&str], want: &[&str]) {
    let json = serde_json::json!({
        "summary": "S.",
        "entities": [{ "name": "Ingrid Valcourt", "type": "person", "aliases": aliases }]
    });
    let mut p = parse_reply(&json.to_string()).unwrap();
    memoire::engine::memory::ground::ground_aliases(&mut p, read);
    assert_eq!(p.entities[0].aliases, want, "{aliases:?} in {read:?}");
    let dropped = aliases.len() - want.len();
    assert_eq!(
        p.notes
            .iter()
            .filter(|n| n.contains("appears nowhere"))
            .count(),
        dropped
    );
}

#[rustfmt::skip]
#[test]
fn aliases_the_conversation_never_used_are_dropped() {
    let read = "user: Hi! My name is Ingrid Valcourt, call me Inge. I live in Trondheim.";
    check_grounded(read, &["Inge", "INGRID", "Ingrid V."], &["Inge", "INGRID", "Ingrid V"]);
    // SmolLM2-135M in the recall bench: names from nowhere, alone and as a list.
    check_grounded(read, &["Einar", "Sjøbenkarl", "Einar, Sjøbenkarl", "Inge"], &["Inge"]);
    check_grounded(read, &["Ingrid Sjøbenkarl"], &[]);
    check_grounded("", &["Inge"], &[]);
}

#[test]
fn the_request_grounds_in_the_previous_summary_and_the_known_entities() {
    let known = vec![{
        let mut n = node("e1", "Ingrid Valcourt", EntityType::Person);
        n.aliases = vec!["Inge".into()];
        n
    }];
    let mut messages = msgs("ua");
    messages[0].content = "I drive an old green Volvo.".into();
    let previous = summary(1, "Her sister is Odalys.", 0);
    let req =
        build_update_request(Some(&previous), &messages, &known, &UpdateLimits::default()).unwrap();
    let json = serde_json::json!({"summary": "S.", "entities": [{"name": "Ingrid Valcourt",
        "type": "person", "aliases": ["Inge", "Odalys", "Volvo", "Einar"]}]});
    let mut p = parse_reply(&json.to_string()).unwrap();
    req.ground(&mut p);
    assert_eq!(p.entities[0].aliases, ["Inge", "Odalys", "Volvo"]);
}

#[test]
fn size_limits_cap_garbage() {
    let long_name = "N".repeat(5000);
    let e = one_entity(&format!(
        r#"{{"name":"{long_name}","description":"{}"}}"#,
        "d".repeat(50_000)
    ));
    assert_eq!(e.name.chars().count(), MAX_NAME_CHARS);
    assert_eq!(e.description.chars().count(), MAX_DESCRIPTION_CHARS);
    let many: Vec<String> = (0..1000).map(|i| format!(r#"{{"name":"E{i}"}}"#)).collect();
    let p = parse_reply(&format!("=== ENTITY MEMORY ===\n[{}]", many.join(","))).unwrap();
    assert_eq!(p.entities.len(), MAX_ENTITIES);
    assert!(p.notes.iter().any(|n| n.contains("rest dropped")));
    let summary_text = "s".repeat(30_000);
    let p = parse_reply(&format!("=== CONVERSATION MEMORY ===\n{summary_text}")).unwrap();
    assert_eq!(p.summary.unwrap().len(), 20_000);
}

#[test]
fn large_adversarial_replies_are_linear() {
    let half = 250 * 1024;
    for unit in [
        "[",
        "{\"a\":",
        ",",
        "\"",
        "[{},",
        "{\"name\":\"x\",\"relationships\":[",
        ", \n",
        "=== ENTITY MEMORY ===\n[",
    ] {
        let body = unit.repeat(half / unit.len());
        let reply = format!("=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n[{body}");
        let _ = parse_reply(&reply);
        let _ = parse_reply(&body);
    }
}

#[test]
fn deep_nesting_does_not_overflow() {
    let deep = format!(
        "=== CONVERSATION MEMORY ===\nS.\n=== ENTITY MEMORY ===\n[{}{}, {A}]",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let p = parse_reply(&deep).unwrap();
    assert_eq!(p.entities.len(), 1);
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("=== CONVERSATION MEMORY ===\n".to_string()),
        Just("=== ENTITY MEMORY ===\n".to_string()),
        Just("```json\n".to_string()),
        Just("```\n".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(",".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just(":".to_string()),
        Just(A.to_string()),
        Just(B.to_string()),
        Just("\"strength\": 1e999".to_string()),
        Just("\"name\": \"東京\"".to_string()),
        "\\PC{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parser_never_panics_on_any_string(s in "\\PC*") {
        let _ = parse_reply(&s);
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]
    #[test]
    fn parser_never_panics_on_reply_shaped_input(parts in prop::collection::vec(fragment(), 0..40)) {
        let s = parts.concat();
        if let Ok(p) = parse_reply(&s) {
            prop_assert!(p.summary.is_some() || !p.entities.is_empty());
            for e in &p.entities {
                prop_assert!(!e.name.trim().is_empty());
                for r in &e.relationships {
                    prop_assert!((0.0..=1.0).contains(&r.strength));
                }
            }
        }
    }
}

// ---------- summary versions ----------

#[test]
fn summary_versions_grow() {
    let span = UpdateSpan {
        from_seq: 1,
        to_seq: 10,
        message_ids: vec!["m1".into()],
    };
    let v1 = next_summary(None, "c1", "first", &span, 10, 500);
    assert_eq!(
        (
            v1.version,
            v1.covers_up_to_seq,
            v1.message_count,
            v1.updated_at
        ),
        (1, 10, 10, 500)
    );
    let span2 = UpdateSpan {
        from_seq: 11,
        to_seq: 20,
        message_ids: vec![],
    };
    let v2 = next_summary(Some(&v1), "c1", "second", &span2, 21, 900);
    assert_eq!(
        (
            v2.version,
            v2.text.as_str(),
            v2.covers_up_to_seq,
            v2.message_count,
            v2.updated_at
        ),
        (2, "second", 20, 21, 900)
    );
    // covers never moves backwards
    let v3 = next_summary(Some(&v2), "c1", "third", &span, 21, 901);
    assert_eq!((v3.version, v3.covers_up_to_seq), (3, 20));
    let all = vec![v1.clone(), v3.clone(), v2.clone()];
    assert_eq!(latest(&all), Some(&v3));
    assert_eq!(latest(&[]), None);

    let restored = restore_summary(&v3, &v1, 1000).unwrap();
    assert_eq!(
        (
            restored.version,
            restored.text.as_str(),
            restored.covers_up_to_seq,
            restored.message_count,
            restored.updated_at
        ),
        (4, "first", 10, 10, 1000)
    );
    assert_eq!(
        restore_summary(&v2, &v3, 1),
        Err(MemoryError::RestoreNotOlder {
            older: 3,
            latest: 2
        })
    );
    assert_eq!(
        restore_summary(&v2, &v2, 1),
        Err(MemoryError::RestoreNotOlder {
            older: 2,
            latest: 2
        })
    );
    let other = ConversationSummary {
        conversation_id: "c2".into(),
        ..v1
    };
    assert_eq!(
        restore_summary(&v3, &other, 1),
        Err(MemoryError::RestoreOtherConversation)
    );
}

#[test]
fn restored_summary_makes_the_lost_messages_due_again() {
    let m = msgs("uauauauauauauauauaua"); // 10 pairs
    let v1 = summary(1, "old", 10);
    let v2 = summary(2, "bad", 20);
    let r = restore_summary(&v2, &v1, 5).unwrap();
    let input = DueInput {
        messages: &m,
        covers_up_to_seq: Some(r.covers_up_to_seq),
        every_pairs: 5,
        over_budget: false,
    };
    assert_eq!(due(input), Due::Yes(DueReason::Pairs { pairs: 5 }));
}

#[test]
fn errors_have_actionable_messages() {
    for e in [
        MemoryError::NoMemory,
        MemoryError::EmptyReply,
        MemoryError::BadEntityJson { detail: "x".into() },
    ] {
        assert!(e.to_string().contains("previous memory is kept"), "{e}");
    }
}

// ---------- reasoning ----------

#[test]
fn a_memory_update_never_reads_a_replys_reasoning() {
    let mut messages = msgs("uaua");
    for m in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        m.meta.reasoning = Some(Reasoning {
            text: format!("SECRET-THOUGHT of {}", m.id),
            started_at: 0,
            ended_at: Some(10),
        });
    }
    let req = build_update_request(None, &messages, &[], &UpdateLimits::default()).unwrap();
    let forms = [
        MemoryForm::Sections,
        MemoryForm::Constrained(memoire::engine::request::OutputForm::JsonSchema),
        MemoryForm::Constrained(memoire::engine::request::OutputForm::ForcedTool),
    ];
    for form in forms {
        let prompt = format!("{:?}", req.prompt_for(form));
        assert!(!prompt.contains("SECRET-THOUGHT"), "{form:?}: {prompt}");
    }
    assert!(!format!("{:?}", req.read).contains("SECRET-THOUGHT"));
    assert_eq!(req.span.message_ids.len(), 4);
}

// ---------- restoring a summary version ----------

/// Restores `version` among versions 1..=3 (or none) and checks the text and version it makes, or the error.
fn check_restore(stored: u32, version: u32, expect: Result<(&str, u32), MemoryError>) {
    let versions: Vec<_> = (1..=stored)
        .map(|v| summary(v, &format!("v{v}"), v as u64 * 10))
        .collect();
    let got =
        restore_version(&versions, version, 99).map(|s| (s.text, s.version, s.covers_up_to_seq));
    let expect = expect.map(|(t, v)| (t.to_string(), v, version as u64 * 10));
    assert_eq!(got, expect, "restore {version} of {stored}");
}

#[test]
fn restoring_a_summary_makes_a_new_version_of_the_older_text() {
    check_restore(3, 1, Ok(("v1", 4)));
    check_restore(3, 2, Ok(("v2", 4)));
    check_restore(
        3,
        3,
        Err(MemoryError::RestoreNotOlder {
            older: 3,
            latest: 3,
        }),
    );
    check_restore(3, 7, Err(MemoryError::RestoreMissing { version: 7 }));
    check_restore(0, 1, Err(MemoryError::RestoreMissing { version: 1 }));
}
