#![cfg(not(target_arch = "wasm32"))]
//! `engine::memory::graph`: the memory pane's edits of an entity graph (an entity deleted with the
//! relationships to it, an entity saved).
//!
//! Entity graphs are written one word per node, `a>b,c` (node `a` with relationships to `b` and
//! `c`).

use std::collections::BTreeMap;

use memoire::engine::memory::graph::{put_entity, remove_entity};
use memoire::engine::model::*;

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
