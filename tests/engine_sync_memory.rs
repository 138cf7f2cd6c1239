//! The memory's side of sync (`engine::sync::memory`): summary versions matched across devices,
//! pulled entities, edges and tombstones applied to the local graph.

use std::collections::BTreeMap;

use memoire::engine::model::*;
use memoire::engine::sync::convert::{edge_docs, summary_doc};
use memoire::engine::sync::memory::*;
use memoire::engine::sync::Hlc;

fn summary(version: u32, covers: u64, text: &str) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c1".into(),
        version,
        text: text.into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: covers as i64,
    }
}

fn node(id: &str, name: &str, rels: &[(&str, &str, i64)]) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: rels
            .iter()
            .map(|(t, l, from)| Relationship {
                target_id: t.to_string(),
                relationship: l.to_string(),
                strength: 0.5,
                valid_from: *from,
                valid_to: None,
            })
            .collect(),
        source_message_ids: vec![],
        updated_at: 0,
    }
}

fn stamp(n: i64) -> Hlc {
    Hlc {
        wall: n,
        counter: 0,
        device: "d".into(),
    }
}

/// (version stored or `None`) for a pulled version against the local ones.
fn check_pulled(local: &[ConversationSummary], pulled: ConversationSummary, want: Option<u32>) {
    let got = pulled_summary(local, &pulled);
    assert_eq!(got.as_ref().map(|s| s.version), want, "{pulled:?}");
    if let Some(s) = got {
        assert_eq!(
            (s.text, s.covers_up_to_seq),
            (pulled.text, pulled.covers_up_to_seq)
        );
    }
}

#[rustfmt::skip]
#[test]
fn pulled_summaries_are_stored_after_the_local_ones_when_they_cover_as_much() {
    let local = [summary(1, 4, "A."), summary(2, 8, "A. B.")];
    check_pulled(&[], summary(7, 4, "A."), Some(1));
    check_pulled(&local, summary(5, 12, "A. B. C."), Some(3));
    check_pulled(&local, summary(3, 8, "A and B."), Some(3)); // as much: the later one is active
    check_pulled(&local, summary(1, 8, "A. B."), None);       // the same version, another number
    check_pulled(&local, summary(9, 6, "Old."), None);        // the local one covers more
}

#[test]
fn only_versions_no_document_holds_are_tracked() {
    let local = [
        summary(1, 4, "A."),
        summary(2, 8, "A. B."),
        summary(3, 9, "A. B. C."),
    ];
    // A version pulled from another device was numbered 1 there.
    let synced = [
        summary_doc(&summary(1, 8, "A. B."), &stamp(1)),
        summary_doc(&summary(1, 4, "A."), &stamp(2)),
    ];
    let untracked: Vec<u32> = untracked_summaries(&synced, &local)
        .iter()
        .map(|s| s.version)
        .collect();
    assert_eq!(untracked, [3]);
    assert_eq!(untracked_summaries(&[], &local).len(), 3);
}

#[test]
fn pulled_entities_and_edges_join_the_graph_in_any_order() {
    let ana = node("e1", "Ana", &[("e2", "knows", 10)]);
    // The edge arrives before its source: held for the node's document.
    let mut nodes = vec![node("e2", "Bo", &[])];
    let edges = edge_docs(&ana);
    assert!(!put_edge(&mut nodes, &edges[0]));
    put_entity(&mut nodes, ana.clone());
    assert_eq!(nodes[1], ana);
    // The node again, renamed, without edges: its relationships stay.
    put_entity(&mut nodes, node("e1", "Ana Lima", &[]));
    assert_eq!(nodes[1].name, "Ana Lima");
    assert_eq!(nodes[1].relationships, ana.relationships);
    // The same edge, closed on the other device: replaced, not doubled.
    let mut closed = edges[0].clone();
    closed.valid_to = Some(20);
    assert!(put_edge(&mut nodes, &closed));
    assert_eq!(nodes[1].relationships.len(), 1);
    assert_eq!(nodes[1].relationships[0].valid_to, Some(20));
    // A new edge from the same node is added.
    let mut other = edges[0].clone();
    other.valid_from = 30;
    assert!(put_edge(&mut nodes, &other));
    assert_eq!(nodes[1].relationships.len(), 2);
}

#[test]
fn tombstones_remove_one_entity_or_one_edge() {
    let mut nodes = vec![
        node("e1", "Ana", &[("e2", "knows", 10), ("e2", "knows", 30)]),
        node("e2", "Bo", &[]),
    ];
    let parts = |s: &[&str]| s.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    assert!(remove_edge(
        &mut nodes,
        &parts(&["e1", "knows", "e2", "10"])
    ));
    assert_eq!(nodes[0].relationships.len(), 1);
    assert!(!remove_edge(
        &mut nodes,
        &parts(&["e1", "knows", "e2", "10"])
    ));
    assert!(!remove_edge(&mut nodes, &parts(&["e1", "knows", "e2"])));
    assert!(!remove_edge(
        &mut nodes,
        &parts(&["e1", "knows", "e2", "x"])
    ));
    assert!(remove_entity(&mut nodes, "e2"));
    assert!(!remove_entity(&mut nodes, "e2"));
    assert_eq!(nodes.len(), 1);
}

/// The local versions (by number) a clear at `at` deletes, given the synced documents made at
/// the stamps `made` (one per local version, `None`: not synced yet).
fn check_cleared(made: &[Option<i64>], at: i64, want: &[u32]) {
    let local: Vec<ConversationSummary> = (1..=made.len() as u32)
        .map(|v| summary(v, u64::from(v), &format!("version {v}")))
        .collect();
    let synced: Vec<_> = local
        .iter()
        .zip(made)
        .filter_map(|(s, m)| m.map(|m| summary_doc(s, &stamp(m))))
        .collect();
    assert_eq!(cleared_versions(&local, &synced, &stamp(at)), want);
}

#[test]
fn a_clear_deletes_the_versions_synced_before_it() {
    check_cleared(&[Some(1), Some(2)], 5, &[1, 2]);
    check_cleared(&[Some(1), Some(5), Some(6)], 5, &[1, 2]);
    check_cleared(&[Some(7)], 5, &[]);
    // A version not synced yet was made here since: it stays (and is pushed, stamped later).
    check_cleared(&[Some(1), None], 5, &[1]);
    check_cleared(&[], 5, &[]);
}

#[test]
fn property_validity_travels_in_entity_docs_and_old_docs_read_as_current() {
    use memoire::engine::sync::convert::{entity_docs, to_entity};
    let mut n = node("e1", "Marta", &[]);
    n.properties.insert("job".into(), "pilot".into());
    n.property_since.insert("job".into(), 40);
    n.past_properties.push(PastProperty {
        key: "job".into(),
        value: "nurse".into(),
        valid_from: 10,
        valid_to: 40,
    });
    let at = Hlc {
        wall: 50,
        counter: 0,
        device: "d1".into(),
    };
    let (doc, edges) = entity_docs(&n, &at);
    let json = serde_json::to_value(&doc).unwrap();
    let back: memoire::engine::sync::doc::EntityDoc = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(to_entity(&back, &edges), n);
    // A document written before validity: the same properties, all current.
    let mut old = json;
    old.as_object_mut().unwrap().remove("property_since");
    old.as_object_mut().unwrap().remove("past_properties");
    let old: memoire::engine::sync::doc::EntityDoc = serde_json::from_value(old).unwrap();
    let read = to_entity(&old, &edges);
    assert_eq!(read.properties, n.properties);
    assert!(read.property_since.is_empty() && read.past_properties.is_empty());
}
