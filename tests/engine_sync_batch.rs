#![cfg(not(target_arch = "wasm32"))]
//! Sync: a merged batch turned into one write plan (`engine::sync::batch`), the decisions the
//! driver used to make one document at a time: messages appended once at the next seq, held in a
//! placeholder until their conversation arrives, never added to a deleted conversation; copies the
//! server confirmed change nothing; a merged copy the server lacks is pushed again; messages and
//! conversations deleted elsewhere are blanked and removed in the same plan (one transaction per
//! page); the memory is left for after the transaction.

use std::collections::BTreeMap;

use memoire::engine::model::*;
use memoire::engine::sync::batch::{plan, wanted_docs, wanted_records, Held, Plan};
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::track::{self, Effect};
use memoire::engine::sync::*;

fn at(n: i64) -> Hlc {
    Hlc::new(n, 0, "a")
}

fn conv(id: &str, title: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: title.into(),
        title_is_custom: true,
        created_at: 5,
        updated_at: 5,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

fn cdoc(id: &str, title: &str) -> Doc {
    Doc::new(Body::Conversation(conversation_doc(
        &conv(id, title),
        &at(1),
    )))
}

fn mdoc(c: &str, id: &str, replaces: Option<&str>) -> Doc {
    let m = Message {
        id: id.into(),
        conversation_id: c.into(),
        seq: 1,
        role: Role::User,
        content: format!("text of {id}"),
        status: MessageStatus::Complete,
        created_at: 10,
        meta: MessageMeta {
            replaces: replaces.map(str::to_string),
            ..Default::default()
        },
    };
    Doc::new(Body::Message(message_doc(&m, &at(2)).expect("final")))
}

fn tomb(id: &str) -> Doc {
    Doc::tombstone(id, &at(9)).expect("a tombstone")
}

fn revs(docs: &[Doc]) -> Vec<(Doc, String)> {
    docs.iter()
        .enumerate()
        .map(|(k, d)| (d.clone(), format!("1-{k}")))
        .collect()
}

fn held(docs: &[Doc], conversations: &[(Conversation, u64)], messages: &[&str]) -> Held {
    Held {
        docs: docs
            .iter()
            .map(|d| {
                (
                    d.id.clone(),
                    (
                        LocalDoc {
                            doc: d.clone(),
                            rev: Some("1-0".into()),
                        },
                        false,
                    ),
                )
            })
            .collect(),
        conversations: conversations
            .iter()
            .map(|(c, s)| (c.id.clone(), (c.clone(), *s)))
            .collect(),
        messages: messages
            .iter()
            .map(|m| (m.to_string(), stored_message(m)))
            .collect(),
    }
}

/// A stored message `c1`'s (its id as given, "c2:m4" for conversation `c2`'s).
fn stored_message(id: &str) -> Message {
    let (c, id) = id.split_once(':').unwrap_or(("c1", id));
    Message {
        id: id.into(),
        conversation_id: c.into(),
        seq: 1,
        role: Role::Assistant,
        content: format!("text of {id}"),
        status: MessageStatus::Complete,
        created_at: 10,
        meta: MessageMeta {
            tool_calls: vec![ToolCall {
                id: "t".into(),
                name: "lookup".into(),
                arguments: "{}".into(),
                result: None,
                status: None,
            }],
            ..Default::default()
        },
    }
}

/// Each change as `title last_seq [message@seq ...] branched?`.
fn changes(p: &Plan) -> Vec<String> {
    p.changes
        .iter()
        .map(|c| {
            let added: Vec<String> = c
                .added
                .iter()
                .map(|m| format!("{}@{}", m.id, m.seq))
                .collect();
            format!(
                "{}:{} {} n{} [{}]{}",
                c.conversation.id,
                c.conversation.title,
                c.last_seq,
                c.conversation.message_count,
                added.join(" "),
                if c.branched { " branched" } else { "" }
            )
        })
        .collect()
}

fn check(batch: &[Doc], h: &Held, want: &[&str], later: usize, requeue: usize) {
    let p = plan(revs(batch), h);
    assert_eq!(changes(&p), want, "{p:#?}");
    assert_eq!(p.later.len(), later, "later: {:?}", p.later);
    assert_eq!(p.requeue.len(), requeue, "requeue: {:?}", p.requeue);
    let ids: std::collections::BTreeSet<&String> = batch.iter().map(|d| &d.id).collect();
    let kept: std::collections::BTreeSet<&String> = p.docs.iter().map(|(d, _)| &d.doc.id).collect();
    assert_eq!(kept.len(), p.docs.len(), "one stored document per _id");
    assert!(kept.is_subset(&ids));
}

#[test]
fn messages_before_their_conversation_wait_in_a_placeholder_it_fills_in() {
    let batch = [
        mdoc("c1", "m1", None),
        mdoc("c1", "m2", None),
        cdoc("c1", "Trip"),
    ];
    check(
        &batch,
        &Held::default(),
        &["c1:Trip 2 n2 [m1@1 m2@2]"],
        0,
        0,
    );
    check(&batch[..1], &Held::default(), &["c1: 1 n1 [m1@1]"], 0, 0);
    let batch = [cdoc("c1", "Trip"), mdoc("c1", "m1", None)];
    check(&batch, &Held::default(), &["c1:Trip 1 n1 [m1@1]"], 0, 0);
}

#[test]
fn messages_take_the_next_seq_and_stored_ones_are_not_added_again() {
    let mut c = conv("c1", "Trip");
    c.message_count = 3;
    let h = held(&[], &[(c, 7)], &["m1"]);
    let batch = [
        mdoc("c1", "m1", None),
        mdoc("c1", "m9", None),
        mdoc("c1", "m9", None),
    ];
    check(&batch, &h, &["c1:Trip 8 n4 [m9@8]"], 0, 0);
}

#[test]
fn a_deleted_conversation_gets_no_messages_and_is_deleted_after() {
    let gone = tomb(&conversation_id("c1"));
    check(
        &[mdoc("c1", "m1", None)],
        &held(std::slice::from_ref(&gone), &[], &[]),
        &[],
        0,
        0,
    );
    check(&[gone, mdoc("c1", "m1", None)], &Held::default(), &[], 0, 0);
}

/// What a batch deletes: the conversations removed, the messages blanked (as `id:content`).
fn check_deletes(batch: &[Doc], h: &Held, removed: &[&str], blanked: &[&str]) {
    let p = plan(revs(batch), h);
    assert_eq!(p.removed, removed, "{p:#?}");
    let got: Vec<String> = p
        .blanked
        .iter()
        .map(|m| {
            assert!(m.meta.deleted && m.meta.tool_calls.is_empty() && m.meta.error.is_none());
            format!("{}:{}", m.id, m.content)
        })
        .collect();
    assert_eq!(got, blanked, "{p:#?}");
    assert!(p.later.is_empty(), "{:?}", p.later);
}

#[test]
fn deletions_are_part_of_the_plan_one_transaction_per_page() {
    let c1 = (conv("c1", "Trip"), 3);
    let c2 = (conv("c2", "Work"), 1);
    let both = || held(&[], &[c1.clone(), c2.clone()], &["m1", "m2", "c2:m4"]);
    // Stored messages are blanked once; one not stored is nothing to delete.
    check_deletes(
        &[tomb("m:m1"), tomb("m:m2"), tomb("m:m9")],
        &both(),
        &[],
        &["m1:", "m2:"],
    );
    // A stored conversation is removed; one never stored is nothing to delete.
    check_deletes(&[tomb("c:c2"), tomb("c:c7")], &both(), &["c2"], &[]);
    // Deleted together: the conversation's own blanked messages go with it.
    check_deletes(
        &[tomb("m:m1"), tomb("m:m4"), tomb("c:c2")],
        &both(),
        &["c2"],
        &["m1:"],
    );
    // A message already deleted here (its tombstone pulled again, or deleted here first).
    let mut h = both();
    h.messages.get_mut("m1").expect("held").meta.deleted = true;
    check_deletes(&[tomb("m:m1")], &h, &[], &[]);
    // A tombstone already stored as such changes nothing.
    let h = held(&[tomb("m:m2")], std::slice::from_ref(&c1), &["m2"]);
    check_deletes(&[tomb("m:m2")], &h, &[], &[]);
    // The records a page of tombstones needs: the messages and conversations they delete.
    let batch = revs(&[tomb("m:m1"), tomb("c:c2"), tomb("e:~:e1")]);
    let (conversations, messages) = wanted_records(&batch, &Held::default().docs);
    assert_eq!(
        (conversations, messages),
        (vec!["c2".to_string()], vec!["m1".to_string()])
    );
}

#[test]
fn a_copy_the_server_confirmed_changes_nothing_and_a_richer_local_copy_is_pushed_again() {
    let c = cdoc("c1", "Trip");
    check(
        std::slice::from_ref(&c),
        &held(std::slice::from_ref(&c), &[], &[]),
        &[],
        0,
        0,
    );
    // Its own page coming back through `_changes` at the revision stored: nothing is written.
    assert!(plan(
        revs(std::slice::from_ref(&c)),
        &held(std::slice::from_ref(&c), &[], &[])
    )
    .docs
    .is_empty());
    // Renamed later on one side: the merge keeps the later title.
    let mut renamed = conv("c1", "Trip");
    renamed.title = "Trip to Oslo".into();
    let later = Doc::new(Body::Conversation(conversation_doc(&renamed, &at(5))));
    let h = held(std::slice::from_ref(&later), &[(renamed.clone(), 0)], &[]);
    check(std::slice::from_ref(&c), &h, &[], 0, 1);
    let h = held(&[c], &[(conv("c1", "Trip"), 0)], &[]);
    check(&[later], &h, &["c1:Trip to Oslo 0 n0 []"], 0, 0);
}

#[test]
fn an_alternative_marks_its_conversation_branched() {
    let h = held(&[], &[(conv("c1", "Trip"), 1)], &["m1"]);
    check(
        &[mdoc("c1", "m2", Some("m1"))],
        &h,
        &["c1:Trip 2 n1 [m2@2] branched"],
        0,
        0,
    );
}

#[test]
fn the_memory_is_left_for_after_the_transaction() {
    let node = EntityNode {
        id: "e1".into(),
        scope: EntityScope::Shared,
        entity_type: EntityType::Person,
        name: "Ingrid".into(),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: 0,
    };
    let entity = Doc::new(Body::Entity(entity_docs(&node, &at(3)).0));
    let batch = [
        entity,
        tomb(&message_id("m1")),
        tomb(&entity_id(None, "e2")),
    ];
    let p = plan(
        revs(&batch),
        &held(&[], &[(conv("c1", "Trip"), 1)], &["m1"]),
    );
    assert!(p.changes.is_empty());
    assert_eq!(p.blanked.len(), 1);
    assert!(
        matches!(
            p.later.as_slice(),
            [
                Effect::Entity(_),
                Effect::Delete {
                    kind: Kind::Entity,
                    ..
                }
            ]
        ),
        "{:?}",
        p.later
    );
}

#[test]
fn the_store_reads_the_batch_and_only_the_records_of_documents_that_change() {
    let batch = revs(&[
        mdoc("c1", "m1", None),
        cdoc("c1", "T"),
        mdoc("c2", "m2", None),
    ]);
    assert_eq!(wanted_docs(&batch), ["m:m1", "c:c1", "m:m2", "c:c2"]);
    let none = Held::default();
    let (conversations, messages) = wanted_records(&batch, &none.docs);
    assert_eq!(
        (conversations, messages),
        (
            vec!["c1".to_string(), "c2".into()],
            vec!["m1".to_string(), "m2".into()]
        )
    );
    // A pushed page the server confirmed: every stored copy already says the same.
    let confirmed = held(
        &[
            mdoc("c1", "m1", None),
            cdoc("c1", "T"),
            mdoc("c2", "m2", None),
        ],
        &[],
        &[],
    );
    let (conversations, messages) = wanted_records(&batch, &confirmed.docs);
    assert!(conversations.is_empty() && messages.is_empty());
}

// ---------------------------------------------------------------- what the user deletes syncs

fn node(id: &str, rels: &[&str]) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: EntityType::Person,
        name: format!("name of {id}"),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: rels
            .iter()
            .map(|t| Relationship {
                target_id: t.to_string(),
                relationship: "knows".into(),
                strength: 0.5,
                valid_from: 1,
                valid_to: None,
            })
            .collect(),
        source_message_ids: vec![],
        updated_at: 0,
    }
}

/// The `_id`s of the tombstones `docs` (all must be tombstones).
fn tombstoned(docs: &[Doc]) -> Vec<String> {
    docs.iter()
        .map(|d| {
            assert!(d.body.is_tombstone(), "{d:?}");
            d.id.clone()
        })
        .collect()
}

fn check_entity_delete(stored: Option<&Doc>, entity: &str, want: &[&str]) {
    let edges: Vec<EdgeDoc> = [node("e1", &["e2"]), node("e2", &["e3"]), node("e3", &[])]
        .iter()
        .flat_map(edge_docs)
        .collect();
    let mut clock = Clock::new("a", None);
    let got = track::track_entity_delete(stored, &edges, entity, &mut clock, 50);
    assert_eq!(tombstoned(&got), want);
}

#[test]
fn a_deleted_entity_becomes_a_tombstone_with_every_relationship_from_or_to_it() {
    let e2 = Doc::new(Body::Entity(entity_docs(&node("e2", &[]), &at(1)).0));
    check_entity_delete(
        Some(&e2),
        "e2",
        &["e:c1:e2", "r:c1:e1:knows:e2:1", "r:c1:e2:knows:e3:1"],
    );
    check_entity_delete(Some(&tomb("e:c1:e3")), "e3", &["r:c1:e2:knows:e3:1"]);
    check_entity_delete(None, "e9", &[]);
}

#[test]
fn a_cleared_conversation_tombstones_its_messages_and_its_own_memory_only() {
    let own = Doc::new(Body::Entity(entity_docs(&node("e1", &[]), &at(1)).0));
    let mut shared_node = node("e5", &[]);
    shared_node.scope = EntityScope::Shared;
    let shared = Doc::new(Body::Entity(entity_docs(&shared_node, &at(1)).0));
    let edge = Doc::new(Body::Edge(edge_docs(&node("e1", &["e2"])).remove(0)));
    let docs = [
        mdoc("c1", "m1", None),
        mdoc("c2", "m2", None),
        mdoc("c1", "m3", None),
        own,
        shared,
        edge,
        cdoc("c1", "Trip"),
    ];
    let mut clock = Clock::new("a", None);
    let mut got = track::track_clear(&docs, "c1", &mut clock, 50);
    // Last, its own document with `cleared` stamped after every tombstone.
    let own = got.pop().expect("the conversation's document");
    let Body::Conversation(c) = &own.body else {
        panic!("{own:?}")
    };
    let last = got.iter().filter_map(|d| d.body.latest_stamp()).max();
    assert!(c.cleared.as_ref() > last, "{c:?}");
    assert_eq!(
        tombstoned(&got),
        ["m:m1", "m:m3", "e:c1:e1", "r:c1:e1:knows:e2:1"]
    );
    // Pulled on another device, each is a deletion (messages keep their record, blanked).
    for d in &got {
        assert!(
            matches!(track::effect(d), Some(Effect::Delete { .. })),
            "{d:?}"
        );
    }
}

// ---------------------------------------------------------------- a clear deletes summary versions

fn sdoc(c: &str, made: i64, text: &str) -> Doc {
    let s = ConversationSummary {
        conversation_id: c.into(),
        version: 1,
        text: text.into(),
        covers_up_to_seq: 2,
        message_count: 2,
        updated_at: made,
    };
    Doc::new(Body::Summary(summary_doc(&s, &at(made))))
}

fn cleared_doc(c: &str, at_: Option<i64>) -> Doc {
    let Body::Conversation(d) = cdoc(c, "Trip").body else {
        unreachable!()
    };
    Doc::new(Body::Conversation(ConversationDoc {
        cleared: at_.map(at),
        ..d
    }))
}

/// What a batch does to summary versions: `S:text` added, `X@t` versions until `t` cleared.
fn check_summaries(batch: &[Doc], stored: &[Doc], want: &[&str]) {
    let h = held(stored, &[(conv("c1", "Trip"), 2)], &[]);
    let p = plan(revs(batch), &h);
    let got: Vec<String> = p
        .later
        .iter()
        .map(|e| match e {
            Effect::Summary(s) => format!("S:{}", s.text),
            Effect::SummariesCleared { conversation, at } => format!("X{conversation}@{}", at.wall),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(got, want, "{p:#?}");
}

#[test]
fn a_clear_deletes_the_summary_versions_made_before_it_whenever_they_arrive() {
    let old = sdoc("c1", 3, "Ingrid lives in Trondheim.");
    let new = sdoc("c1", 8, "Ingrid moved.");
    // No clear: a pulled version is added.
    check_summaries(
        std::slice::from_ref(&old),
        &[],
        &["S:Ingrid lives in Trondheim."],
    );
    // The clear arrives: versions until then go, once (the same clear pulled again does nothing).
    check_summaries(
        &[cleared_doc("c1", Some(5))],
        &[cleared_doc("c1", None)],
        &["Xc1@5"],
    );
    check_summaries(
        &[cleared_doc("c1", Some(5))],
        &[cleared_doc("c1", Some(5))],
        &[],
    );
    check_summaries(
        &[cleared_doc("c1", Some(5))],
        &[cleared_doc("c1", Some(7))],
        &[],
    );
    // An old version arriving after the clear (stored, or in the same page) is never added; a
    // version made after the clear is.
    let cleared = [cleared_doc("c1", Some(5))];
    check_summaries(std::slice::from_ref(&old), &cleared, &[]);
    check_summaries(std::slice::from_ref(&new), &cleared, &["S:Ingrid moved."]);
    check_summaries(&[cleared_doc("c1", Some(5)), old.clone()], &[], &["Xc1@5"]);
    // Listed before the clear in one page: added, then deleted with the others, in that order.
    check_summaries(
        &[old, cleared_doc("c1", Some(5))],
        &[],
        &["S:Ingrid lives in Trondheim.", "Xc1@5"],
    );
    // The summaries' conversation documents are read with the page.
    let batch = revs(&[sdoc("c2", 3, "x")]);
    assert_eq!(
        wanted_docs(&batch),
        [sdoc("c2", 3, "x").id, "c:c2".to_string()]
    );
}

/// Whether a local change is recorded for sync (`track::records`).
fn check_records(enabled: bool, set_up: bool, change: track::Change, want: bool) {
    assert_eq!(
        track::records(enabled, set_up, change),
        want,
        "enabled {enabled}, set up {set_up}, {change:?}"
    );
}

#[test]
fn deletions_are_recorded_while_sync_is_off_once_a_server_is_set_up() {
    use track::Change::{Delete, Write};
    check_records(true, true, Write, true);
    check_records(true, true, Delete, true);
    // Off: the next start's seed finds writes in the store; a deletion leaves nothing to find.
    check_records(false, true, Write, false);
    check_records(false, true, Delete, true);
    // Never set up: nothing is recorded.
    check_records(false, false, Delete, false);
    check_records(false, false, Write, false);
}

#[test]
fn a_deletion_waits_for_syncs_code_and_a_write_is_left_to_the_next_seed() {
    use track::Change::{Delete, Write};
    // Sync's code could not be fetched: only a deletion leaves nothing for the seed to find.
    assert!(track::waits_for_code(Delete));
    assert!(!track::waits_for_code(Write));
}
