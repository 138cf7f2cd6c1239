//! Where the entity graph's nodes and edges go in the memory pane's SVG. A deterministic ring
//! layout: nodes sorted by type then name, so each type forms an arc and the picture does not jump
//! between renders; edges are the live relationships between shown nodes, weighted by strength.
//! Written here rather than with a force-directed crate: a few dozen nodes need no physics, and the
//! result must be stable and testable. Must not import anything outside `crate::engine`.

use crate::engine::model::{EntityNode, EntityType};
use crate::engine::sort::sort_by;
use std::collections::HashMap;

/// A placed node.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedNode {
    pub id: String,
    pub name: String,
    pub entity_type: EntityType,
    pub x: f32,
    pub y: f32,
}

/// A placed edge.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedEdge {
    pub from: (f32, f32),
    pub to: (f32, f32),
    pub label: String,
    /// 0..=1, drives the stroke width.
    pub strength: f32,
}

/// The drawing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layout {
    pub width: f32,
    pub height: f32,
    pub nodes: Vec<PlacedNode>,
    pub edges: Vec<PlacedEdge>,
}

/// Places at most `max_nodes` nodes (the most recently updated) on a ring in a `size` square.
pub fn layout(entities: &[EntityNode], size: f32, max_nodes: usize) -> Layout {
    let mut chosen: Vec<&EntityNode> = entities.iter().collect();
    sort_by(&mut chosen, |a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    chosen.truncate(max_nodes);
    sort_by(&mut chosen, |a, b| {
        a.entity_type
            .cmp(&b.entity_type)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
            .then_with(|| a.id.cmp(&b.id))
    });
    let n = chosen.len();
    let c = size / 2.0;
    let r = if n <= 1 { 0.0 } else { size * 0.38 };
    let mut at: HashMap<&str, (f32, f32)> = HashMap::with_capacity(n);
    let nodes: Vec<PlacedNode> = chosen
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let angle =
                std::f32::consts::TAU * i as f32 / n.max(1) as f32 - std::f32::consts::FRAC_PI_2;
            let (x, y) = (c + r * angle.cos(), c + r * angle.sin());
            at.insert(e.id.as_str(), (x, y));
            PlacedNode {
                id: e.id.clone(),
                name: e.name.clone(),
                entity_type: e.entity_type,
                x,
                y,
            }
        })
        .collect();
    let mut edges = Vec::new();
    for e in &chosen {
        for rel in e.relationships.iter().filter(|r| r.valid_to.is_none()) {
            if let (Some(&from), Some(&to)) =
                (at.get(e.id.as_str()), at.get(rel.target_id.as_str()))
            {
                if from != to {
                    edges.push(PlacedEdge {
                        from,
                        to,
                        label: rel.relationship.clone(),
                        strength: rel.strength.clamp(0.0, 1.0),
                    });
                }
            }
        }
    }
    Layout {
        width: size,
        height: size,
        nodes,
        edges,
    }
}
