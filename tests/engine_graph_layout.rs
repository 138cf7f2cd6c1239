#![cfg(not(target_arch = "wasm32"))]
//! The entity graph drawing: stable, inside the box, edges only between shown nodes and live.

use memoire::engine::graph_layout::layout;
use memoire::engine::model::{EntityNode, EntityScope, EntityType, Relationship};

fn node(id: &str, t: EntityType, updated_at: i64, rels: &[(&str, f32, bool)]) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Shared,
        entity_type: t,
        name: format!("name {id}"),
        aliases: vec![],
        description: String::new(),
        properties: Default::default(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: rels
            .iter()
            .map(|(to, s, closed)| Relationship {
                target_id: (*to).into(),
                relationship: "knows".into(),
                strength: *s,
                valid_from: 0,
                valid_to: closed.then_some(5),
            })
            .collect(),
        source_message_ids: vec![],
        updated_at,
    }
}

#[test]
fn nodes_stay_inside_and_the_picture_is_stable() {
    let g: Vec<_> = (0..30)
        .map(|i| node(&format!("e{i}"), EntityType::ALL[i % 6], i as i64, &[]))
        .collect();
    let a = layout(&g, 300.0, 100);
    assert_eq!(a.nodes.len(), 30);
    assert!(a
        .nodes
        .iter()
        .all(|n| (0.0..=300.0).contains(&n.x) && (0.0..=300.0).contains(&n.y)));
    let mut reversed = g.clone();
    reversed.reverse();
    assert_eq!(
        layout(&reversed, 300.0, 100),
        a,
        "input order must not move nodes"
    );
    let types: Vec<_> = a.nodes.iter().map(|n| n.entity_type).collect();
    let mut sorted = types.clone();
    sorted.sort();
    assert_eq!(types, sorted, "each type forms one arc");
}

#[test]
fn keeps_the_most_recent_nodes_when_capped() {
    let g: Vec<_> = (0..10)
        .map(|i| node(&format!("e{i}"), EntityType::Person, i, &[]))
        .collect();
    let ids: Vec<_> = layout(&g, 100.0, 3)
        .nodes
        .into_iter()
        .map(|n| n.id)
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.iter()
            .all(|id| ["e7", "e8", "e9"].contains(&id.as_str())),
        "{ids:?}"
    );
}

#[test]
fn edges_are_live_relationships_between_shown_nodes() {
    let g = vec![
        node(
            "a",
            EntityType::Person,
            3,
            &[
                ("b", 1.7, false),
                ("c", 0.5, true),
                ("zz", 0.5, false),
                ("a", 0.5, false),
            ],
        ),
        node("b", EntityType::Place, 2, &[]),
        node("c", EntityType::Task, 1, &[]),
    ];
    let l = layout(&g, 200.0, 10);
    assert_eq!(
        l.edges.len(),
        1,
        "closed, dangling and self edges are not drawn"
    );
    assert_eq!(l.edges[0].strength, 1.0, "strength is clamped");
    let single = layout(&g[1..2], 200.0, 10);
    assert_eq!((single.nodes[0].x, single.nodes[0].y), (100.0, 100.0));
    assert!(layout(&[], 200.0, 10).nodes.is_empty());
}
