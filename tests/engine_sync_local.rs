#![cfg(not(target_arch = "wasm32"))]
//! `engine::sync::local`: the decisions of this device's side of sync that the session's driver
//! used to make: which change is tracked and what it reads, the outbox's order, what a recorded
//! document becomes, what a batch reports, how the memory's effects group and change a graph.

use std::collections::BTreeMap;

use memoire::engine::model::*;
use memoire::engine::sync::batch::{self, Plan};
use memoire::engine::sync::doc::EdgeDoc;
use memoire::engine::sync::local::*;
use memoire::engine::sync::track::{self, Effect};
use memoire::engine::sync::{Clock, Doc, Hlc, Kind, LocalDoc};
use memoire::engine::tabs::Change;

fn message(id: &str, c: &str, status: MessageStatus, deleted: bool) -> Message {
    Message {
        id: id.into(),
        conversation_id: c.into(),
        seq: 1,
        role: Role::User,
        content: id.into(),
        status,
        created_at: 5,
        meta: MessageMeta {
            deleted,
            ..Default::default()
        },
    }
}

fn done(id: &str) -> Message {
    message(id, "c1", MessageStatus::Complete, false)
}

fn conv(id: &str) -> Conversation {
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

fn node(id: &str, scope: Option<&str>) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: scope.map_or(EntityScope::Shared, |c| EntityScope::Conversation(c.into())),
        entity_type: EntityType::Person,
        name: id.into(),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: 0,
    }
}

fn edge(scope: Option<&str>, source: &str, target: &str) -> EdgeDoc {
    EdgeDoc {
        scope: scope.map(str::to_string),
        source: source.into(),
        label: "knows".into(),
        target: target.into(),
        valid_from: 1,
        strength: 0.5,
        valid_to: None,
    }
}

fn fact(id: &str, text: &str, forgotten: Option<Millis>) -> UserFact {
    UserFact {
        id: id.into(),
        text: text.into(),
        kind: FactKind::Home,
        claim_key: String::new(),
        source: None,
        valid_from: 1,
        valid_to: None,
        forgotten,
        scope: None,
        updated_at: 1,
    }
}

fn clock() -> Clock {
    Clock::resume("d", None, 100, 1_000)
}

/// A short name for each tracked change, to compare lists in one line.
fn name(t: &Tracked) -> String {
    match t {
        Tracked::EntityDeleted { entity, .. } => format!("entity-deleted {entity}"),
        Tracked::Change(c) => match c {
            Change::Conversation(c) => format!("conversation {}", c.id),
            Change::MessageAdded(m) | Change::MessageProgress(m) => format!("message {}", m.id),
            Change::ConversationRemoved(id) => format!("removed {id}"),
            Change::MessagesCleared(id) => format!("cleared {id}"),
            Change::MemoryChanged(id) => format!("memory {id}"),
            Change::UserFacts => "facts".into(),
            Change::Projects => "projects".into(),
            other => format!("{other:?}"),
        },
    }
}

// -----------------------------------------------------------------------------------------------
// Which change is tracked.

fn check_observed(e: Change, tracked: &[&str]) {
    let got: Vec<String> = observed(&e).iter().map(name).collect();
    assert_eq!(got, tracked, "{e:?}");
}

#[test]
#[rustfmt::skip]
fn a_change_is_tracked_once_it_means_a_document() {
    check_observed(Change::Conversation(conv("c1")), &["conversation c1"]);
    check_observed(Change::Conversations(vec![conv("a"), conv("b")]), &["conversation a", "conversation b"]);
    check_observed(Change::MessageAdded(done("m1")), &["message m1"]);
    check_observed(Change::MessageProgress(message("m1", "c1", MessageStatus::Streaming, false)), &[]);
    check_observed(Change::MessageProgress(message("m1", "c1", MessageStatus::Streaming, true)), &["message m1"]);
    check_observed(Change::MessageProgress(message("m1", "c1", MessageStatus::Interrupted, false)), &["message m1"]);
    check_observed(Change::ConversationRemoved("c1".into()), &["removed c1"]);
    check_observed(Change::MessagesCleared("c1".into()), &["cleared c1"]);
    check_observed(Change::MemoryChanged("c1".into()), &["memory c1"]);
    check_observed(Change::UserFacts, &["facts"]);
    check_observed(Change::Projects, &["projects"]);
    check_observed(Change::BranchChanged("c1".into()), &[]);
    check_observed(Change::MemoryUpdating { conversation_id: "c1".into(), running: true }, &[]);
}

fn check_reads(t: Tracked, reads: Option<Reads>) {
    assert_eq!(t.reads(), reads, "{t:?}");
}

#[test]
#[rustfmt::skip]
fn each_tracked_change_reads_what_its_documents_need() {
    let doc = |d: &str| d.to_string();
    check_reads(Tracked::Change(Change::Conversation(conv("c1"))), Some(Reads::Conversation { doc: doc("c:c1") }));
    check_reads(Tracked::Change(Change::ConversationRemoved("c1".into())), Some(Reads::Removed { doc: doc("c:c1") }));
    check_reads(Tracked::Change(Change::MessageAdded(done("m1"))), Some(Reads::Message { doc: doc("m:m1") }));
    check_reads(Tracked::Change(Change::MemoryChanged("c1".into())), Some(Reads::Memory { conversation: doc("c1") }));
    check_reads(Tracked::Change(Change::UserFacts), Some(Reads::Register(Kind::Fact)));
    check_reads(Tracked::Change(Change::Projects), Some(Reads::Register(Kind::Project)));
    check_reads(Tracked::Change(Change::MessagesCleared("c1".into())), Some(Reads::Cleared { conversation: doc("c1"), prefixes: vec![doc("m:"), doc("e:c1:"), doc("r:c1:")], doc: doc("c:c1") }));
    check_reads(Tracked::EntityDeleted { conversation: doc("c1"), entity: doc("e1") }, Some(Reads::EntityDeleted { conversation: doc("c1"), entity: doc("e1") }));
    check_reads(Tracked::Change(Change::BranchChanged("c1".into())), None);
}

fn check_removed(prev: Option<&Doc>, tombstone: bool) {
    let got = track_removed(prev, "c:c1", &mut clock(), 200);
    assert_eq!(got.is_some(), tombstone, "{prev:?}");
    if let Some(d) = got {
        assert!(d.body.is_tombstone() && d.id == "c:c1");
    }
}

#[test]
fn a_removed_record_is_a_tombstone_once() {
    let stone = Doc::tombstone("c:c1", &Hlc::new(50, 0, "d")).unwrap();
    let live = track::track_conversation(None, &conv("c1"), &mut clock(), 100).unwrap();
    check_removed(None, true);
    check_removed(Some(&live), true);
    check_removed(Some(&stone), false);
}

// -----------------------------------------------------------------------------------------------
// The outbox.

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Offered with sync on (`true`) or off with a server named (`false`).
    Offer(&'static str, bool),
    /// The session asks whether to start a task.
    Start(bool),
    /// The task takes the next change (its name, or none).
    Next(Option<&'static str>),
    /// Recording it went so; whether the task goes on.
    Went(&'static str, Recorded, bool),
}

fn tracked(n: &str) -> Tracked {
    match n {
        "removed" => Tracked::Change(Change::ConversationRemoved("c1".into())),
        "cleared" => Tracked::Change(Change::MessagesCleared("c1".into())),
        "entity" => Tracked::EntityDeleted {
            conversation: "c1".into(),
            entity: "e1".into(),
        },
        "facts" => Tracked::Change(Change::UserFacts),
        other => Tracked::Change(Change::MemoryChanged(other.into())),
    }
}

fn short(t: &Tracked) -> &'static str {
    match t {
        Tracked::Change(Change::ConversationRemoved(_)) => "removed",
        Tracked::Change(Change::MessagesCleared(_)) => "cleared",
        Tracked::EntityDeleted { .. } => "entity",
        Tracked::Change(Change::UserFacts) => "facts",
        _ => "memory",
    }
}

fn check_outbox(steps: &[Step]) {
    let mut o = Outbox::default();
    for (k, s) in steps.iter().enumerate() {
        match *s {
            Step::Offer(n, enabled) => o.handle_change(tracked(n), enabled, true),
            Step::Start(want) => assert_eq!(o.poll_start(), want, "step {k}: {steps:?}"),
            Step::Next(want) => {
                assert_eq!(
                    o.poll_next().as_ref().map(short),
                    want,
                    "step {k}: {steps:?}"
                )
            }
            Step::Went(n, r, goes_on) => {
                assert_eq!(
                    o.handle_recorded(tracked(n), r),
                    goes_on,
                    "step {k}: {steps:?}"
                )
            }
        }
    }
}

#[test]
#[rustfmt::skip]
fn the_outbox_records_in_order_one_task_at_a_time() {
    use Recorded::*;
    use Step::*;
    check_outbox(&[Start(false)]);
    check_outbox(&[Offer("facts", true), Start(true), Start(false), Next(Some("facts")), Next(None), Start(false)]);
    check_outbox(&[Offer("facts", true), Offer("removed", true), Start(true), Next(Some("facts")), Offer("entity", true), Next(Some("removed")), Next(Some("entity")), Next(None)]);
    check_outbox(&[Offer("facts", false), Start(false)]);
    check_outbox(&[Offer("removed", false), Offer("cleared", false), Offer("entity", false), Start(true), Next(Some("removed")), Next(Some("cleared")), Next(Some("entity"))]);
    check_outbox(&[Offer("facts", true), Start(true), Next(Some("facts")), Went("facts", Failed, true), Next(None)]);
    check_outbox(&[Offer("facts", true), Start(true), Next(Some("facts")), Went("facts", NoCode, true), Next(None), Start(false)]);
    check_outbox(&[Offer("removed", true), Offer("facts", true), Start(true), Next(Some("removed")), Went("removed", NoCode, false), Start(true), Next(Some("removed")), Went("removed", Done, true), Next(Some("facts"))]);
}

// -----------------------------------------------------------------------------------------------
// What a recorded document becomes.

fn check_recording(known: Vec<LocalDoc>, docs: Vec<Doc>, want: &[(&str, Option<&str>, &str)]) {
    let mut r = Recording::new(known);
    docs.into_iter().for_each(|d| r.handle_doc(d));
    let got: Vec<(String, Option<String>, String)> = r
        .finish()
        .into_iter()
        .map(|d| {
            let title = match &d.doc.body {
                memoire::engine::sync::Body::Conversation(c) => c.title.v.text.clone(),
                _ => String::new(),
            };
            (d.doc.id, d.rev, title)
        })
        .collect();
    let want: Vec<(String, Option<String>, String)> = want
        .iter()
        .map(|(id, rev, t)| (id.to_string(), rev.map(str::to_string), t.to_string()))
        .collect();
    assert_eq!(got, want);
}

fn titled(id: &str, title: &str, wall: i64) -> Doc {
    let mut c = conv(id);
    c.title = title.into();
    Doc::new(memoire::engine::sync::Body::Conversation(
        memoire::engine::sync::convert::conversation_doc(&c, &Hlc::new(wall, 0, "d")),
    ))
}

#[test]
#[rustfmt::skip]
fn a_recorded_document_merges_into_its_stored_copy_and_keeps_its_revision() {
    let stored = |d: Doc, rev: &str| LocalDoc { doc: d, rev: Some(rev.into()) };
    check_recording(vec![], vec![titled("a", "new", 2)], &[("c:a", None, "new")]);
    check_recording(vec![stored(titled("a", "old", 1), "1-x")], vec![titled("a", "new", 2)], &[("c:a", Some("1-x"), "new")]);
    check_recording(vec![stored(titled("a", "later", 9), "2-y")], vec![titled("a", "new", 2)], &[("c:a", Some("2-y"), "later")]);
    check_recording(vec![], vec![titled("a", "one", 2), titled("b", "b", 2), titled("a", "two", 3)], &[("c:a", None, "two"), ("c:b", None, "b")]);
}

// -----------------------------------------------------------------------------------------------
// What an applied batch reports.

fn change(id: &str, added: &[&str], branched: bool) -> batch::Change {
    batch::Change {
        conversation: conv(id),
        last_seq: 1,
        added: added.iter().map(|m| done(m)).collect(),
        branched,
    }
}

fn check_reports(plan: Plan, branched: &[&str], want: &[&str]) {
    let r = reports(&plan);
    assert_eq!(r.branched, branched);
    let got: Vec<String> = r
        .changes
        .iter()
        .map(|c| match c {
            Change::BranchChanged(id) => format!("branch {id}"),
            c => name(&Tracked::Change(c.clone())),
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
#[rustfmt::skip]
fn a_batch_reports_each_conversation_once_and_its_one_new_message() {
    let plan = |changes: Vec<batch::Change>, removed: &[&str], blanked: Vec<Message>| Plan {
        changes,
        removed: removed.iter().map(|s| s.to_string()).collect(),
        blanked,
        ..Plan::default()
    };
    let gone = |id: &str, c: &str| message(id, c, MessageStatus::Complete, true);
    check_reports(plan(vec![], &[], vec![]), &[], &[]);
    check_reports(plan(vec![change("a", &[], false)], &[], vec![]), &[], &["conversation a"]);
    check_reports(plan(vec![change("a", &["m1"], false)], &[], vec![]), &[], &["conversation a", "message m1"]);
    check_reports(plan(vec![change("a", &["m1", "m2"], false)], &[], vec![]), &[], &["conversation a", "branch a"]);
    check_reports(plan(vec![change("a", &["m1"], true)], &[], vec![]), &["a"], &["conversation a", "branch a"]);
    check_reports(plan(vec![], &["x"], vec![gone("m1", "b"), gone("m2", "b"), gone("m3", "c")]), &[], &["removed x", "branch b", "branch c"]);
}

#[test]
#[rustfmt::skip]
fn an_older_version_is_said_as_not_taken() {
    assert_eq!(older_refusals(&["f:1".into()]), ["f:1: older than the copy this device holds; not taken (this device's copy goes back up)"]);
}

// -----------------------------------------------------------------------------------------------
// The memory's effects.

fn summary(c: &str) -> Effect {
    Effect::Summary(ConversationSummary {
        conversation_id: c.into(),
        text: "s".into(),
        covers_up_to_seq: 1,
        message_count: 1,
        updated_at: 1,
        version: 1,
    })
}

fn delete(kind: Kind, scope: Option<&str>, parts: &[&str]) -> Effect {
    Effect::Delete {
        kind,
        scope: scope.map(str::to_string),
        parts: parts.iter().map(|s| s.to_string()).collect(),
    }
}

/// Effects grouped, each group as the count of its effects: (summaries, register-like documents,
/// [(scope, effects)]).
fn check_group(effects: Vec<Effect>, want: (usize, usize, &[(Option<&str>, usize)])) {
    let g = group(effects);
    let graphs: Vec<(Option<&str>, usize)> = g
        .graphs
        .iter()
        .map(|(s, l)| (scope_id(s), l.len()))
        .collect();
    assert_eq!(
        (g.summaries.len(), g.registers.len(), graphs.as_slice()),
        want
    );
}

#[test]
#[rustfmt::skip]
fn memory_effects_group_by_what_they_change() {
    let cleared = Effect::SummariesCleared { conversation: "c1".into(), at: Hlc::new(1, 0, "d") };
    let register = |f: UserFact| Effect::Register(track::track_fact(None, &f, &mut clock(), 100).unwrap());
    check_group(vec![], (0, 0, &[]));
    check_group(vec![summary("c1"), cleared, summary("c2")], (3, 0, &[]));
    check_group(vec![register(fact("f1", "I live in Oslo.", None)), register(fact("f2", "x", None))], (0, 2, &[]));
    check_group(vec![Effect::Entity(node("e1", Some("c1"))), Effect::Edge(edge(None, "e2", "e3")), Effect::Entity(node("e4", Some("c1")))], (0, 0, &[(Some("c1"), 2), (None, 1)]));
    check_group(vec![delete(Kind::Entity, Some("c1"), &["e1"]), delete(Kind::Edge, None, &["a", "knows", "b", "1"]), delete(Kind::Conversation, None, &["c1"])], (0, 0, &[(Some("c1"), 1), (None, 1)]));
}

/// A graph of `nodes` changed by `effects` with stored `edges`: whether it changed, and each
/// node's id with its relationships' targets.
fn check_graph(
    nodes: Vec<EntityNode>,
    edges: &[EdgeDoc],
    effects: Vec<Effect>,
    changed: bool,
    want: &[(&str, &[&str])],
) {
    let mut nodes = nodes;
    assert_eq!(
        needs_edges(&effects),
        effects.iter().any(|e| matches!(e, Effect::Entity(_)))
    );
    assert_eq!(change_graph(&mut nodes, edges, effects), changed);
    let got: Vec<(String, Vec<String>)> = nodes
        .iter()
        .map(|n| {
            (
                n.id.clone(),
                n.relationships
                    .iter()
                    .map(|r| r.target_id.clone())
                    .collect(),
            )
        })
        .collect();
    let want: Vec<(String, Vec<String>)> = want
        .iter()
        .map(|(id, ts)| (id.to_string(), ts.iter().map(|t| t.to_string()).collect()))
        .collect();
    assert_eq!(got, want);
}

#[test]
#[rustfmt::skip]
fn a_graph_changes_by_its_effects_in_order() {
    let s = Some("c1");
    check_graph(vec![], &[], vec![], false, &[]);
    check_graph(vec![], &[edge(s, "a", "b")], vec![Effect::Entity(node("a", s))], true, &[("a", &["b"])]);
    check_graph(vec![node("a", s)], &[], vec![Effect::Edge(edge(s, "a", "b"))], true, &[("a", &["b"])]);
    check_graph(vec![node("a", s)], &[], vec![delete(Kind::Entity, s, &["a"])], true, &[]);
    check_graph(vec![node("a", s)], &[], vec![delete(Kind::Entity, s, &["z"])], false, &[("a", &[])]);
    check_graph(vec![], &[], vec![Effect::Entity(node("a", s)), delete(Kind::Entity, s, &["a"])], true, &[]);
}

fn check_facts(stored: &[UserFact], pulled: Vec<UserFact>, want: &[(&str, bool)]) {
    let got: Vec<(String, bool)> = join_facts(stored, pulled)
        .iter()
        .map(|f| (f.id.clone(), f.forgotten.is_some()))
        .collect();
    let want: Vec<(String, bool)> = want.iter().map(|(id, g)| (id.to_string(), *g)).collect();
    assert_eq!(got, want);
}

#[test]
#[rustfmt::skip]
fn pulled_facts_join_the_stored_ones_and_each_other() {
    let f = |id: &str, gone: Option<Millis>| fact(id, "I live in Oslo.", gone);
    check_facts(&[], vec![], &[]);
    check_facts(&[], vec![f("a", None)], &[("a", false)]);
    check_facts(&[f("a", None)], vec![f("a", None)], &[]);
    check_facts(&[f("a", Some(3))], vec![f("a", None)], &[]);
    check_facts(&[f("a", None)], vec![f("a", Some(3))], &[("a", true)]);
    check_facts(&[], vec![f("a", Some(3)), f("a", None)], &[("a", true)]);
    check_facts(&[], vec![f("a", None), f("b", None)], &[("a", false), ("b", false)]);
}
