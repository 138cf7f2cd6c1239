#![cfg(not(target_arch = "wasm32"))]
//! Decisions the session (the wasm-only driver) used to make itself, now the engine's and tested
//! natively: which messages a page of the chat holds (`engine::page`), the order a sync batch's
//! merges are applied in and the stamp the clock observes for them (`engine::sync::order`), the
//! memory pane's edits of an entity graph (`engine::memory::graph`), restoring a summary version
//! (`engine::memory::restore_version`) and how an update's run ends for the scheduler
//! (`UpdateEnd::of_run`).
//!
//! Messages are written one word each, `<id><seq>` (`c4`: message `c` at seq 4), with `!` for a
//! deleted one and `*` for one that has alternatives; entity graphs one word per node, `a>b,c`
//! (node `a` with relationships to `b` and `c`).

use std::collections::BTreeMap;

use memoire::engine::branch::Alternatives;
use memoire::engine::memory::graph::{put_entity, remove_entity};
use memoire::engine::model::*;
use memoire::engine::page::{
    focus_outside, half_around, page_after, page_around, page_before, page_of_branch, Page, PageAsk,
};
use memoire::engine::sync::convert::{conversation_doc, message_doc};
use memoire::engine::sync::order::{in_order, latest_stamp};
use memoire::engine::sync::{Body, Doc, Hlc, Write};

// ---------------------------------------------------------------- pages of the chat

fn message(word: &str) -> Message {
    let deleted = word.contains('!');
    let word = word.trim_end_matches(['!', '*']);
    let (id, seq) = word.split_at(1);
    Message {
        id: id.into(),
        conversation_id: "c".into(),
        seq: seq.parse().expect("a seq"),
        role: Role::User,
        content: id.into(),
        status: MessageStatus::Complete,
        created_at: 0,
        meta: MessageMeta {
            deleted,
            ..Default::default()
        },
    }
}

fn messages(spec: &str) -> Vec<Message> {
    spec.split_whitespace().map(message).collect()
}

/// The ids `*` marks as having alternatives.
fn alternatives(spec: &str) -> BTreeMap<String, Alternatives> {
    spec.split_whitespace()
        .filter(|w| w.ends_with('*'))
        .map(|w| {
            let alt = Alternatives {
                position: 1,
                count: 2,
                prev: None,
                next: Some("x".into()),
            };
            (w[..1].to_string(), alt)
        })
        .collect()
}

/// `ask`: words `before <seq>`, `after <seq>`, `focus <id>`; none: the last `k`.
fn ask(words: &str, k: usize) -> PageAsk<'_> {
    let mut a = PageAsk {
        k,
        ..Default::default()
    };
    let w: Vec<&str> = words.split_whitespace().collect();
    for pair in w.chunks(2) {
        match pair {
            ["before", n] => a.before = Some(n.parse().unwrap()),
            ["after", n] => a.after = Some(n.parse().unwrap()),
            ["focus", id] => a.focus = Some(*id),
            _ => panic!("bad ask {words:?}"),
        }
    }
    a
}

/// A page: its message ids (the starred ones, those it reports alternatives for), and whether
/// there are older and newer messages.
fn check_page(page: Page, want: &str, older: bool, newer: bool) {
    let ids: Vec<String> = page
        .messages
        .iter()
        .map(|m| {
            let star = if page.alternatives.contains_key(&m.id) {
                "*"
            } else {
                ""
            };
            format!("{}{star}", m.id)
        })
        .collect();
    assert_eq!(ids.join(" "), want, "messages");
    assert_eq!(
        (page.has_older, page.has_newer),
        (older, newer),
        "older, newer"
    );
}

/// A page of a branch (`spec`, root first) as `words` asks, `k` messages.
fn check_branch(spec: &str, words: &str, k: usize, want: &str, older: bool, newer: bool) {
    let all = messages(spec);
    let page = page_of_branch(&all, &alternatives(spec), ask(words, k));
    check_page(page, want, older, newer);
}

const BRANCH: &str = "a1 b3* c4 d7* e9";

#[test]
fn a_page_of_a_branch_goes_by_seq_then_by_focus() {
    check_branch(BRANCH, "", 2, "d* e", true, false);
    check_branch(BRANCH, "", 9, "a b* c d* e", false, false);
    check_branch(BRANCH, "", 0, "", true, false);
    check_branch(BRANCH, "before 7", 2, "b* c", true, true);
    check_branch(BRANCH, "before 4", 2, "a b*", false, true);
    check_branch(BRANCH, "before 5", 2, "b* c", true, true);
    check_branch(BRANCH, "before 1", 2, "", false, true);
    check_branch(BRANCH, "before 99", 2, "d* e", true, false);
    check_branch(BRANCH, "after 3", 2, "c d*", true, true);
    check_branch(BRANCH, "after 0", 2, "a b*", false, true);
    check_branch(BRANCH, "after 7", 2, "d* e", true, false);
    check_branch(BRANCH, "after 9", 2, "d* e", true, false);
    check_branch(BRANCH, "focus b", 2, "b* c", true, true);
    check_branch(BRANCH, "focus a", 3, "a b*", false, true);
    check_branch(BRANCH, "focus a", 4, "a b* c", false, true);
    check_branch(BRANCH, "focus d", 2, "d* e", true, false);
    check_branch(BRANCH, "focus c", 3, "c d* e", true, false);
    check_branch(BRANCH, "focus z", 2, "d* e", true, false);
    check_branch(BRANCH, "before 7 focus a", 2, "b* c", true, true);
    check_branch(BRANCH, "after 1 focus e", 2, "b* c", true, true);
    check_branch("", "", 2, "", false, false);
}

#[test]
fn a_page_without_alternatives_is_what_the_store_read_less_the_deleted() {
    check_page(
        page_before(messages("a1 b2 c3"), None, 2),
        "b c",
        true,
        false,
    );
    check_page(page_before(messages("a1 b2"), None, 2), "a b", false, false);
    check_page(
        page_before(messages("a1 b2 c3"), Some(4), 2),
        "b c",
        true,
        true,
    );
    check_page(
        page_before(messages("a1 b2!"), Some(3), 2),
        "a",
        false,
        true,
    );
    check_page(
        page_before(messages("a1! b2 c3"), None, 2),
        "b c",
        true,
        false,
    );
    check_page(page_after(messages("d4 e5 f6"), 2), "d e", true, true);
    check_page(page_after(messages("d4 e5"), 2), "d e", true, false);
    check_page(page_after(messages("d4 e5! f6"), 2), "d", true, true);
    check_page(page_after(messages(""), 2), "", true, false);
    check_page(
        page_around(messages("a1 b2 c3"), messages("d4 e5"), 2),
        "b c d e",
        true,
        false,
    );
    check_page(
        page_around(messages("b2 c3"), messages("d4 e5 f6"), 2),
        "b c d e",
        false,
        true,
    );
    check_page(
        page_around(messages("c3"), messages(""), 1),
        "c",
        false,
        false,
    );
    check_page(
        page_around(messages("b2! c3"), messages("d4!"), 2),
        "c",
        false,
        false,
    );
}

#[test]
fn a_page_is_read_again_around_a_message_it_does_not_hold() {
    let page = page_before(messages("b2 c3"), None, 2);
    assert_eq!(focus_outside(&page, Some("a")), Some("a"));
    assert_eq!(focus_outside(&page, Some("b")), None);
    assert_eq!(focus_outside(&page, None), None);
    assert_eq!(
        [0, 1, 2, 3, 4, 30, 31].map(half_around),
        [1, 1, 1, 1, 2, 15, 15]
    );
}

// ---------------------------------------------------------------- a sync batch's order

fn at(wall: i64) -> Hlc {
    Hlc::new(wall, 0, "d")
}

fn conversation(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: "t".into(),
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

/// One write: `conv:<id>:<stamp>`, `msg:<id>:<seq>:<time>` (stamped at its time),
/// `gone:<kind>:<id>:<stamp>` (the tombstone of document `<kind>:<id>`), or `checkpoint`.
fn write(token: &str) -> Write {
    let parts: Vec<&str> = token.split(':').collect();
    let n = |i: usize| parts[i].parse::<i64>().unwrap();
    let remote = match parts[0] {
        "checkpoint" => return Write::Checkpoint { since: "1".into() },
        "conv" => Doc::new(Body::Conversation(conversation_doc(
            &conversation(parts[1]),
            &at(n(2)),
        ))),
        "msg" => {
            let mut m = message(&format!("{}{}", parts[1], parts[2]));
            m.created_at = n(3);
            Doc::new(Body::Message(message_doc(&m, &at(n(3))).unwrap()))
        }
        "gone" => Doc::tombstone(&format!("{}:{}", parts[1], parts[2]), &at(n(3))).unwrap(),
        other => panic!("bad write {other:?}"),
    };
    Write::Merge {
        remote,
        rev: "1-a".into(),
    }
}

fn writes(spec: &str) -> Vec<Write> {
    spec.split_whitespace().map(write).collect()
}

/// The writes of `spec` in the order they are applied, by document `_id`.
fn check_order(spec: &str, want: &str) {
    let mut batch = writes(spec);
    in_order(&mut batch);
    let ids: Vec<String> = batch
        .iter()
        .map(|w| match w {
            Write::Merge { remote, .. } => remote.id.clone(),
            _ => "checkpoint".into(),
        })
        .collect();
    assert_eq!(ids.join(" "), want);
}

/// The wall time of the stamp the clock observes for `spec`.
fn check_latest(spec: &str, want: Option<i64>) {
    assert_eq!(latest_stamp(&writes(spec)).map(|h| h.wall), want);
}

#[test]
fn a_batch_applies_other_documents_first_then_messages_in_their_writers_order() {
    check_order("", "");
    check_order("conv:x:1 msg:a:1:10", "c:x m:a");
    check_order("msg:a:1:10 conv:x:1", "c:x m:a");
    check_order("msg:b:2:20 msg:a:1:10", "m:a m:b");
    check_order("msg:b:1:20 msg:a:1:10", "m:a m:b");
    check_order("msg:a:1:10 msg:b:1:10", "m:a m:b");
    check_order("msg:b:1:10 msg:a:1:10", "m:b m:a");
    check_order(
        "msg:c:3:5 gone:c:x:9 msg:a:1:50 conv:y:2",
        "c:x c:y m:a m:c",
    );
    check_order("conv:y:2 conv:x:1 gone:c:z:3", "c:y c:x c:z");
    // A deleted message is a tombstone, not a message: it goes with the other documents.
    check_order("msg:a:1:10 gone:m:q:3", "m:q m:a");
    check_order("msg:b:2:10 checkpoint msg:a:1:10", "checkpoint m:a m:b");
}

#[test]
fn the_clock_observes_the_latest_stamp_of_a_batch() {
    check_latest("", None);
    check_latest("checkpoint", None);
    check_latest("conv:x:4", Some(4));
    check_latest("conv:x:4 msg:a:1:10 gone:c:z:7", Some(10));
    check_latest("msg:a:1:10 gone:m:z:12 checkpoint", Some(12));
}

// ---------------------------------------------------------------- the memory pane's edits

fn node(word: &str) -> EntityNode {
    let (id, targets) = word.split_once('>').unwrap_or((word, ""));
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c".into()),
        entity_type: EntityType::Person,
        name: format!("name of {id}"),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: targets
            .split(',')
            .filter(|t| !t.is_empty())
            .map(|t| Relationship {
                target_id: t.into(),
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

fn graph(spec: &str) -> Vec<EntityNode> {
    spec.split_whitespace().map(node).collect()
}

fn spec_of(nodes: &[EntityNode]) -> String {
    let words: Vec<String> = nodes
        .iter()
        .map(|n| {
            let targets: Vec<&str> = n.relationships.iter().map(|r| &*r.target_id).collect();
            if targets.is_empty() {
                n.id.clone()
            } else {
                format!("{}>{}", n.id, targets.join(","))
            }
        })
        .collect();
    words.join(" ")
}

/// Deleting entity `id` from a scope's graph: what is left, and whether the scope must be saved.
fn check_delete(spec: &str, id: &str, want: &str, touched: bool) {
    let mut nodes = graph(spec);
    assert_eq!(remove_entity(&mut nodes, id), touched, "touched");
    assert_eq!(spec_of(&nodes), want);
}

/// Saving a user's edit of an entity (`edit`, one node) into a scope's graph.
fn check_save(spec: &str, edit: &str, want: &str) {
    let mut nodes = graph(spec);
    put_entity(&mut nodes, node(edit));
    assert_eq!(spec_of(&nodes), want);
}

#[test]
fn a_deleted_entity_takes_the_relationships_to_it_along() {
    check_delete("a>b b>a c", "a", "b c", true);
    check_delete("a>b b>a c", "b", "a c", true);
    check_delete("a>b,c b>c,a c>c", "c", "a>b b>a", true);
    check_delete("a>b b", "z", "a>b b", false);
    check_delete("a>z b", "z", "a b", true);
    check_delete("a>b,b b", "b", "a", true);
    check_delete("a a>b", "a", "", true);
    check_delete("", "a", "", false);
}

#[test]
fn a_saved_entity_replaces_the_one_with_its_id_or_joins_the_graph() {
    check_save("a b>a", "b>c", "a b>c");
    check_save("a b>a", "d>a", "a b>a d>a");
    check_save("", "a", "a");
    check_save("a>b b a>c", "a", "a b a>c");
}

// ---------------------------------------------------------------- memory: restore, an update's end

use memoire::engine::memory::{restore_version, MemoryError, UpdateEnd};

fn summary(version: u32, text: &str) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c".into(),
        version,
        text: text.into(),
        covers_up_to_seq: version as u64 * 10,
        message_count: version as u64 * 10,
        updated_at: version as i64,
    }
}

/// Restores `version` among versions 1..=3 (or none) and checks the text and version it makes, or the error.
fn check_restore(stored: u32, version: u32, expect: Result<(&str, u32), MemoryError>) {
    let versions: Vec<_> = (1..=stored).map(|v| summary(v, &format!("v{v}"))).collect();
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

#[test]
fn an_update_that_gave_way_runs_again_and_a_broken_one_backs_off() {
    assert_eq!(UpdateEnd::of_run(Ok(true)), UpdateEnd::Landed);
    assert_eq!(UpdateEnd::of_run(Ok(false)), UpdateEnd::Stopped);
    assert_eq!(UpdateEnd::of_run(Err(true)), UpdateEnd::Unusable);
    assert_eq!(UpdateEnd::of_run(Err(false)), UpdateEnd::Broken);
}
