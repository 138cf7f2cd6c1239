#![cfg(not(target_arch = "wasm32"))]
//! Sync, part 1: the document model and the one merge. Property tests (commutativity, associativity,
//! idempotence over every kind, tombstones included), then one-line cases for each rule.

use std::collections::{BTreeMap, BTreeSet};

use memoire::engine::model::*;
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::*;
use proptest::prelude::*;

fn hlc(t: Millis, c: u32, d: &str) -> Hlc {
    Hlc::new(t, c, d)
}

// ---------------------------------------------------------------- generators (one `_id` per kind)

fn stamp() -> impl Strategy<Value = Hlc> {
    (0i64..4, 0u32..2, prop::sample::select(vec!["a", "b"])).prop_map(|(t, c, d)| hlc(t, c, d))
}
fn text() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "x", "y", "Zed"]).prop_map(String::from)
}
fn reg<T: std::fmt::Debug + Clone>(v: impl Strategy<Value = T>) -> impl Strategy<Value = Lww<T>> {
    (v, stamp()).prop_map(|(v, at)| Lww { v, at })
}
fn small_set() -> impl Strategy<Value = BTreeSet<String>> {
    prop::collection::btree_set(text(), 0..3)
}
fn registers<T: std::fmt::Debug + Clone>(
    v: impl Strategy<Value = T>,
) -> impl Strategy<Value = BTreeMap<String, Lww<T>>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["k1".to_string(), "k2".to_string()]),
        reg(v),
        0..3,
    )
}

fn conversation() -> impl Strategy<Value = Body> {
    (
        0i64..3,
        reg((text(), any::<bool>()).prop_map(|(text, custom)| Title { text, custom })),
        registers(prop::option::of(text())),
        prop::option::of(stamp()),
    )
        .prop_map(|(created_at, title, fields, cleared)| {
            Body::Conversation(ConversationDoc {
                id: "c1".into(),
                created_at,
                title,
                fields,
                cleared,
            })
        })
}

fn message() -> impl Strategy<Value = Body> {
    (
        text(),
        prop::sample::select(vec!["complete", "streaming", "error"]),
        stamp(),
    )
        .prop_map(|(content, status, at)| {
            Body::Message(MessageDoc {
                id: "m1".into(),
                conversation_id: "c1".into(),
                seq: 1,
                role: Role::User,
                content,
                status: status.into(),
                created_at: 5,
                replaces: None,
                after: None,
                tool_calls: vec![],
                usage: None,
                error: None,
                path: None,
                model: None,
                hidden: false,
                reasoning: None,
                stats: None,
                cached: None,
                capped: false,
                attachments: vec![],
                at,
            })
        })
}

fn entity() -> impl Strategy<Value = Body> {
    (
        reg(prop::sample::select(EntityType::ALL.to_vec())),
        reg(text()),
        reg(text()),
        small_set(),
        registers(text()),
        small_set(),
        0i64..3,
    )
        .prop_map(
            |(entity_type, name, description, aliases, properties, sources, updated_at)| {
                Body::Entity(EntityDoc {
                    id: "p1".into(),
                    scope: Some("c1".into()),
                    entity_type,
                    name,
                    description,
                    aliases,
                    property_since: properties
                        .iter()
                        .map(|(k, r)| {
                            (
                                k.clone(),
                                Lww {
                                    v: updated_at,
                                    at: r.at.clone(),
                                },
                            )
                        })
                        .collect(),
                    past_properties: properties
                        .iter()
                        .map(|(k, r)| PastPropertyDoc {
                            key: k.clone(),
                            value: r.v.clone(),
                            valid_from: 0,
                            valid_to: updated_at,
                        })
                        .collect(),
                    properties,
                    sources,
                    updated_at,
                })
            },
        )
}

fn edge() -> impl Strategy<Value = Body> {
    (
        prop::sample::select(vec![0.0f32, 0.5, 1.0]),
        prop::option::of(0i64..3),
    )
        .prop_map(|(strength, valid_to)| {
            Body::Edge(EdgeDoc {
                scope: Some("c1".into()),
                source: "p1".into(),
                label: "likes".into(),
                target: "p2".into(),
                valid_from: 1,
                strength,
                valid_to,
            })
        })
}

fn summary() -> impl Strategy<Value = Body> {
    (text(), 0u64..3).prop_map(|(text, covers_up_to_seq)| {
        Body::Summary(SummaryDoc {
            conversation_id: "c1".into(),
            made: hlc(1, 0, "a"),
            version: 1,
            covers_up_to_seq,
            message_count: 2,
            updated_at: 1,
            text,
        })
    })
}

fn fact() -> impl Strategy<Value = Body> {
    (
        reg(text()),
        prop::option::of(0i64..3),
        prop::option::of(0i64..3),
        0i64..3,
    )
        .prop_map(|(words, valid_to, forgotten, updated_at)| {
            Body::Fact(FactDoc {
                id: "f1".into(),
                words: Lww {
                    v: FactWords {
                        text: words.v,
                        kind: "home".into(),
                        claim_key: String::new(),
                        scope: None,
                    },
                    at: words.at,
                },
                source: None,
                valid_from: 0,
                valid_to,
                forgotten,
                updated_at,
            })
        })
}

/// Three versions of one document of one kind, some of them tombstones.
fn versions() -> impl Strategy<Value = [Doc; 3]> {
    let kinds: Vec<(&str, BoxedStrategy<Body>)> = vec![
        ("c:c1", conversation().boxed()),
        ("m:m1", message().boxed()),
        ("e:c1:p1", entity().boxed()),
        ("r:c1:p1:likes:p2:1", edge().boxed()),
        ("s:c1:x", summary().boxed()),
        ("f:f1", fact().boxed()),
    ];
    prop::sample::select((0..kinds.len()).collect::<Vec<_>>()).prop_flat_map(move |i| {
        let (id, body) = kinds[i].clone();
        let kind = Kind::of_id(id).unwrap();
        let version = prop_oneof![
            4 => body,
            1 => stamp().prop_map(move |at| Body::Tombstone(Tombstone { kind, at })),
        ];
        [version.clone(), version.clone(), version].prop_map(move |bodies| {
            bodies.map(|body| Doc {
                id: id.to_string(),
                body,
            })
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn merge_is_a_join([a, b, c] in versions()) {
        prop_assert_eq!(merge(&a, &b), merge(&b, &a), "commutative");
        prop_assert_eq!(merge(&merge(&a, &b), &c), merge(&a, &merge(&b, &c)), "associative");
        prop_assert_eq!(merge(&a, &a), a.clone(), "idempotent");
        prop_assert_eq!(merge(&merge(&a, &b), &b), merge(&a, &b), "absorbs what it merged");
    }

    #[test]
    fn json_round_trip([a, _b, _c] in versions()) {
        let back = Doc::from_json(&a.to_json(Some("1-x"))).map(|c| c.doc);
        // The generators use short ids that are not derived from the content; compare the body.
        match back {
            Ok(d) => prop_assert_eq!(d.body, a.body),
            Err(e) => prop_assert!(e.contains("does not match its _id"), "{}", e),
        }
    }
}

// ---------------------------------------------------------------- rules, one line each

fn conv(title: &str, custom: bool, created_at: Millis) -> Conversation {
    Conversation {
        id: "c1".into(),
        title: title.into(),
        title_is_custom: custom,
        created_at,
        updated_at: created_at,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

fn cdoc(d: ConversationDoc) -> Doc {
    Doc::new(Body::Conversation(d))
}

fn title_of(d: &Doc) -> String {
    match &d.body {
        Body::Conversation(c) => c.title.v.text.clone(),
        other => panic!("not a conversation: {other:?}"),
    }
}

/// Two devices edit the conversation created at stamp 1: `a_edit` at stamp `a_at`, `b_edit` at `b_at`.
fn check_concurrent_edits(
    a_at: (Millis, &str),
    a_edit: impl Fn(&mut Conversation),
    b_at: (Millis, &str),
    b_edit: impl Fn(&mut Conversation),
    expect: impl Fn(&Conversation),
) {
    let base = conversation_doc(&conv("Chat", false, 1), &hlc(1, 0, "a"));
    let edited = |(t, d): (Millis, &str), f: &dyn Fn(&mut Conversation)| {
        let mut c = new_conversation(&base);
        f(&mut c);
        cdoc(edit_conversation(&base, &c, &hlc(t, 0, d)))
    };
    let (a, b) = (edited(a_at, &a_edit), edited(b_at, &b_edit));
    let merged = merge(&a, &b);
    assert_eq!(merged, merge(&b, &a));
    let Body::Conversation(m) = &merged.body else {
        panic!("{merged:?}")
    };
    expect(&new_conversation(m));
}

fn rename(t: &'static str) -> impl Fn(&mut Conversation) {
    move |c| {
        c.title = t.into();
        c.title_is_custom = true;
    }
}

#[test]
fn later_rename_wins() {
    check_concurrent_edits((5, "a"), rename("A"), (6, "b"), rename("B"), |c| {
        assert_eq!(c.title, "B")
    });
}

#[test]
fn equal_wall_time_is_broken_by_device() {
    check_concurrent_edits((5, "b"), rename("B"), (5, "a"), rename("A"), |c| {
        assert_eq!(c.title, "B")
    });
}

#[test]
fn edits_of_different_fields_both_survive() {
    check_concurrent_edits(
        (5, "a"),
        rename("A"),
        (4, "b"),
        |c| c.memory_overrides.recent_messages = Some(3),
        |c| {
            assert_eq!(
                (c.title.as_str(), c.memory_overrides.recent_messages),
                ("A", Some(3))
            )
        },
    );
}

#[test]
fn delete_wins_over_a_later_edit() {
    let base = cdoc(conversation_doc(&conv("Chat", false, 1), &hlc(1, 0, "a")));
    let dead = Doc::tombstone(&base.id, &hlc(2, 0, "a")).unwrap();
    let mut c = conv("Renamed", true, 1);
    c.id = "c1".into();
    let Body::Conversation(bd) = &base.body else {
        unreachable!()
    };
    let renamed = cdoc(edit_conversation(bd, &c, &hlc(9, 0, "b")));
    assert!(merge(&renamed, &dead).body.is_tombstone());
    assert!(merge(&dead, &renamed).body.is_tombstone());
    assert_eq!(title_of(&merge(&base, &renamed)), "Renamed");
}

fn msg(id: &str, content: &str, status: MessageStatus) -> Message {
    Message {
        id: id.into(),
        conversation_id: "c1".into(),
        seq: 1,
        role: Role::Assistant,
        content: content.into(),
        status,
        created_at: 1,
        meta: Default::default(),
    }
}

#[test]
fn a_streaming_message_is_not_synced_until_final() {
    assert_eq!(
        message_doc(&msg("m1", "par", MessageStatus::Streaming), &hlc(1, 0, "a")),
        None
    );
    let d = message_doc(
        &msg("m1", "partial", MessageStatus::Interrupted),
        &hlc(1, 0, "a"),
    );
    assert_eq!(
        to_message(&d.unwrap()),
        msg("m1", "partial", MessageStatus::Interrupted)
    );
    // A message hidden from the model stays hidden on the other device; an older document
    // (without the field) reads as shown to it.
    let mut hidden = msg("m2", "(OOC: pause)", MessageStatus::Complete);
    hidden.meta.hidden = true;
    let d = message_doc(&hidden, &hlc(1, 0, "a")).unwrap();
    assert_eq!(to_message(&d), hidden);
    let mut older = serde_json::to_value(&d).unwrap();
    older.as_object_mut().unwrap().remove("hidden");
    let older: memoire::engine::sync::doc::MessageDoc = serde_json::from_value(older).unwrap();
    assert!(!to_message(&older).meta.hidden);
    // A reply cut by the reply cap stays so, with the cached prompt tokens its server reported;
    // both are fields of their own (the `stats` tuple keeps the shape older devices read), and an
    // older document reads as not capped, nothing cached.
    let mut capped = msg("m3", "Once upon a", MessageStatus::Complete);
    capped.meta.capped = true;
    capped.meta.stats = Some(GenerationStats {
        tokens: 3,
        first_token_ms: Some(420),
        tokens_per_s: None,
        cached_tokens: Some(2840),
    });
    let d = message_doc(&capped, &hlc(1, 0, "a")).unwrap();
    assert_eq!(to_message(&d), capped);
    let mut older = serde_json::to_value(&d).unwrap();
    assert_eq!(older["stats"], serde_json::json!([3, 420, null]));
    older.as_object_mut().unwrap().remove("capped");
    older.as_object_mut().unwrap().remove("cached");
    let older: memoire::engine::sync::doc::MessageDoc = serde_json::from_value(older).unwrap();
    let read = to_message(&older);
    assert!(!read.meta.capped);
    assert_eq!(read.meta.stats.unwrap().cached_tokens, None);
}

#[test]
fn an_edit_is_a_new_message_naming_the_old_one() {
    let old = message_doc(
        &msg("m1", "hello", MessageStatus::Complete),
        &hlc(1, 0, "a"),
    );
    let mut edit = msg("m2", "hello!", MessageStatus::Complete);
    edit.meta.replaces = Some("m1".into());
    let new = message_doc(&edit, &hlc(2, 0, "a"));
    let (old, new) = (
        Doc::new(Body::Message(old.unwrap())),
        Doc::new(Body::Message(new.unwrap())),
    );
    assert_ne!(old.id, new.id, "two documents, so they never conflict");
    assert!(matches!(&new.body, Body::Message(m) if m.replaces.as_deref() == Some("m1")));
}

#[test]
fn a_message_tombstone_wins_and_keeps_no_content() {
    let m = Doc::new(Body::Message(
        message_doc(
            &msg("m1", "secret", MessageStatus::Complete),
            &hlc(3, 0, "a"),
        )
        .unwrap(),
    ));
    let dead = Doc::tombstone(&m.id, &hlc(1, 0, "b")).unwrap();
    let merged = merge(&m, &dead);
    assert_eq!(merged, dead);
    assert!(!merged.to_json(None).to_string().contains("secret"));
}

fn node(id: &str, name: &str, aliases: &[&str], props: &[(&str, &str)]) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: aliases.iter().map(|s| s.to_string()).collect(),
        description: String::new(),
        properties: props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: 1,
    }
}

#[test]
fn entity_sets_union_and_facts_keep_every_key() {
    let base = node("p1", "Alice", &[], &[]);
    let (bd, _) = entity_docs(&base, &hlc(1, 0, "a"));
    let a = edit_entity(
        &bd,
        &node("p1", "Alice", &["Ally"], &[("job", "pilot")]),
        &hlc(2, 0, "a"),
    );
    let b = edit_entity(
        &bd,
        &node("p1", "Alice", &["Al"], &[("city", "Oslo")]),
        &hlc(2, 0, "b"),
    );
    let merged = merge(&Doc::new(Body::Entity(a)), &Doc::new(Body::Entity(b)));
    let Body::Entity(e) = &merged.body else {
        panic!()
    };
    let n = to_entity(e, &[]);
    assert_eq!(n.aliases, vec!["Al", "Ally"]);
    assert_eq!(n.properties.len(), 2);
}

#[test]
fn edges_are_their_own_documents_and_stay_closed() {
    let mut n = node("p1", "Alice", &[], &[]);
    n.relationships.push(Relationship {
        target_id: "p2".into(),
        relationship: "likes".into(),
        strength: 0.4,
        valid_from: 7,
        valid_to: None,
    });
    let (_, edges) = entity_docs(&n, &hlc(1, 0, "a"));
    let open = Doc::new(Body::Edge(edges[0].clone()));
    assert_eq!(open.id, "r:c1:p1:likes:p2:7");
    let closed = Doc::new(Body::Edge(EdgeDoc {
        valid_to: Some(9),
        strength: 0.2,
        ..edges[0].clone()
    }));
    let Body::Edge(m) = merge(&open, &closed).body else {
        panic!()
    };
    assert_eq!((m.valid_to, m.strength), (Some(9), 0.4));
}

#[test]
fn the_active_summary_covers_the_highest_seq() {
    let s = |covers: u64, t: Millis| SummaryDoc {
        conversation_id: "c1".into(),
        made: hlc(t, 0, "a"),
        version: 1,
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: t,
        text: format!("{covers}@{t}"),
    };
    assert_eq!(
        active_summary(&[s(8, 1), s(4, 9), s(8, 3)]).unwrap().text,
        "8@3"
    );
    assert_eq!(active_summary(&[]), None);
}

#[test]
fn ids_are_stable_and_escaped() {
    assert_eq!(conversation_id("chatgpt-1"), "c:chatgpt-1");
    assert_eq!(entity_id(None, "a:b"), "e:~:a%3Ab");
    assert_eq!(entity_id(Some("~x"), "p"), "e:%7Ex:p");
    assert_eq!(Kind::of_id("s:c1:x"), Some(Kind::Summary));
    assert_eq!(Kind::of_id("settings:key"), None);
}

#[test]
fn unreadable_or_foreign_documents_are_errors_not_deletes() {
    let check = |v: serde_json::Value, needle: &str| {
        let e = Doc::from_json(&v).unwrap_err();
        assert!(e.contains(needle), "{e}");
    };
    check(
        serde_json::json!({"_id": "m:1", "_rev": "1-a", "type": "message"}),
        "unreadable",
    );
    check(
        serde_json::json!({"_id": "x", "_rev": "1-a", "type": "tombstone", "kind": "message", "at": {"t":1,"c":0,"d":"a"}}),
        "not a Memoire document",
    );
    check(
        serde_json::json!({"_id": "c:1", "_rev": "1-a", "type": "tombstone", "kind": "message", "at": {"t":1,"c":0,"d":"a"}}),
        "does not match",
    );
    check(serde_json::json!({"_id": "m:1"}), "no _rev");
    check(
        serde_json::json!({"_id": "m:1", "_rev": "1-a"}),
        "unreadable",
    );
    check(
        serde_json::json!({"_id": "m:1", "_rev": "1-a", "type": "note"}),
        "unreadable",
    );
    check(
        serde_json::json!({"_id": "m:1", "_rev": "1-a", "type": 7}),
        "unreadable",
    );
}

#[test]
fn the_clock_orders_after_everything_it_saw() {
    let mut c = Clock::new("a", None);
    let t1 = c.tick(100);
    let t2 = c.tick(100);
    assert!(t2 > t1);
    c.observe(&hlc(500, 3, "b"), 0, MAX_SKEW_MS);
    let t3 = c.tick(200);
    assert!(t3 > hlc(500, 3, "b"), "{t3:?}");
    assert_eq!(Clock::new("a", Some(&t3)).tick(0), hlc(500, 5, "a"));
}

// ---------------------------------------------------------------- tracking local changes, effects

use memoire::engine::sync::track::*;

#[test]
fn ids_parse_back_to_their_parts() {
    let check = |id: String, kind: Kind, scope: Option<&str>, parts: &[&str]| {
        let (k, s, p) = parse_id(&id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(
            (
                k,
                s.as_deref(),
                p.iter().map(String::as_str).collect::<Vec<_>>()
            ),
            (kind, scope, parts.to_vec()),
            "{id}"
        );
    };
    check(
        conversation_id("a:b%c~"),
        Kind::Conversation,
        None,
        &["a:b%c~"],
    );
    check(message_id("m-1"), Kind::Message, None, &["m-1"]);
    check(entity_id(None, "p:1"), Kind::Entity, None, &["p:1"]);
    check(
        entity_id(Some("c~1"), "p"),
        Kind::Entity,
        Some("c~1"),
        &["p"],
    );
    let e = EdgeDoc {
        scope: Some("c1".into()),
        source: "a".into(),
        label: "lives_in".into(),
        target: "b:c".into(),
        valid_from: 7,
        strength: 1.0,
        valid_to: None,
    };
    check(
        edge_id(&e),
        Kind::Edge,
        Some("c1"),
        &["a", "lives_in", "b:c", "7"],
    );
    assert_eq!(parse_id("m:a:b"), None, "a message id has one part");
    assert_eq!(parse_id("m:%zz"), None);
}

#[test]
fn a_conversation_is_pushed_only_when_its_synced_fields_change() {
    let mut clock = Clock::new("a", None);
    let c = conv("Chat", false, 1);
    let first = track_conversation(None, &c, &mut clock, 10).expect("new");
    let mut counted = c.clone();
    counted.message_count = 9;
    counted.updated_at = 99;
    assert_eq!(
        track_conversation(Some(&first), &counted, &mut clock, 11),
        None,
        "counts are not synced"
    );
    let mut renamed = c.clone();
    renamed.title = "Trip".into();
    let second = track_conversation(Some(&first), &renamed, &mut clock, 12).expect("renamed");
    let (Body::Conversation(a), Body::Conversation(b)) = (&first.body, &second.body) else {
        panic!()
    };
    assert_eq!(b.title.at.wall, 12);
    assert_eq!(a.fields, b.fields, "untouched fields keep their stamps");
    let dead = track_delete(&first.id, &mut clock, 13).unwrap();
    assert_eq!(
        track_conversation(Some(&dead), &renamed, &mut clock, 14),
        None,
        "deleted stays deleted"
    );
}

#[test]
fn messages_and_summaries_are_written_once() {
    let mut clock = Clock::new("a", None);
    let m = msg("m1", "hi", MessageStatus::Complete);
    let d = track_message(None, &m, &mut clock, 1).unwrap();
    assert_eq!(track_message(Some(&d), &m, &mut clock, 2), None);
    assert_eq!(
        track_message(
            None,
            &msg("m2", "..", MessageStatus::Streaming),
            &mut clock,
            3
        ),
        None
    );
    let s = ConversationSummary {
        conversation_id: "c1".into(),
        version: 1,
        text: "t".into(),
        covers_up_to_seq: 2,
        message_count: 2,
        updated_at: 1,
    };
    let sd = track_summary(None, &s, &mut clock, 4).unwrap();
    assert_eq!(track_summary(Some(&sd), &s, &mut clock, 5), None);
    assert_eq!(effect(&sd), Some(Effect::Summary(s)));
}

#[test]
fn an_entity_pushes_the_node_and_only_new_or_changed_edges() {
    let mut clock = Clock::new("a", None);
    let mut n = node("p1", "Alice", &[], &[]);
    n.relationships.push(Relationship {
        target_id: "p2".into(),
        relationship: "knows".into(),
        strength: 0.5,
        valid_from: 1,
        valid_to: None,
    });
    let first = track_entity(None, &[], &n, &mut clock, 1);
    assert_eq!(first.len(), 2);
    let edges: Vec<EdgeDoc> = first
        .iter()
        .filter_map(|d| match &d.body {
            Body::Edge(e) => Some(e.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        track_entity(Some(&first[0]), &edges, &n, &mut clock, 2),
        vec![],
        "nothing changed"
    );
    n.relationships[0].valid_to = Some(5);
    let closed = track_entity(Some(&first[0]), &edges, &n, &mut clock, 3);
    assert_eq!(closed.len(), 1);
    assert!(matches!(&closed[0].body, Body::Edge(e) if e.valid_to == Some(5)));
}

#[test]
fn a_tombstone_asks_for_a_delete_of_its_record() {
    let mut clock = Clock::new("a", None);
    let d = track_delete(&entity_id(Some("c1"), "p:1"), &mut clock, 1).unwrap();
    assert_eq!(
        effect(&d),
        Some(Effect::Delete {
            kind: Kind::Entity,
            scope: Some("c1".into()),
            parts: vec!["p:1".into()]
        })
    );
    let m = track_message(
        None,
        &msg("m1", "hi", MessageStatus::Complete),
        &mut clock,
        2,
    )
    .unwrap();
    assert_eq!(
        effect(&m),
        Some(Effect::Message(msg("m1", "hi", MessageStatus::Complete)))
    );
}

#[test]
fn a_deleted_message_syncs_as_its_tombstone_once() {
    let mut clock = Clock::new("a", None);
    let mut gone = msg("m1", "", MessageStatus::Complete);
    gone.meta.deleted = true;
    let t = track_message(None, &gone, &mut clock, 1).unwrap();
    assert!(t.body.is_tombstone());
    assert!(!t.to_json(None).to_string().contains("hi"));
    assert_eq!(track_message(Some(&t), &gone, &mut clock, 2), None, "once");
    let live = track_message(
        None,
        &msg("m1", "hi", MessageStatus::Complete),
        &mut clock,
        3,
    )
    .unwrap();
    let later = track_message(Some(&live), &gone, &mut clock, 4).unwrap();
    assert!(
        later.body.is_tombstone(),
        "a message already synced can still be deleted"
    );
    assert!(matches!(
        effect(&later),
        Some(Effect::Delete { kind: Kind::Message, parts, .. }) if parts == vec!["m1".to_string()]
    ));
}

#[test]
fn branch_links_travel_in_the_message_document() {
    let mut m = msg("m2", "again", MessageStatus::Complete);
    m.meta.after = Some("m0".into());
    m.meta.replaces = Some("m1".into());
    let d = message_doc(&m, &hlc(1, 0, "a")).unwrap();
    assert_eq!(to_message(&d), m);
}

#[test]
fn use_memory_about_me_syncs_and_a_conversation_that_never_set_it_keeps_its_document() {
    let plain = conv("Chat", false, 1);
    assert!(!conversation_doc(&plain, &hlc(1, 0, "a"))
        .fields
        .contains_key("user_memory"));
    let off = |c: &mut Conversation| c.memory_overrides.user_memory = Some(false);
    check_concurrent_edits((5, "a"), rename("A"), (6, "b"), off, |c| {
        assert_eq!(
            (c.title.as_str(), c.memory_overrides.user_memory),
            ("A", Some(false))
        )
    });
    let on = |c: &mut Conversation| c.memory_overrides.user_memory = Some(true);
    check_concurrent_edits((5, "a"), off, (6, "b"), on, |c| {
        assert_eq!(c.memory_overrides.user_memory, Some(true))
    });
}
