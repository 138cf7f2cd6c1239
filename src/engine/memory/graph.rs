//! The entity graph with its indexes: id -> node and normalised name/alias -> node, so merging and
//! lookups are not quadratic. Plain `EntityNode`s in, plain `EntityNode`s out. Also the memory
//! pane's edits of a scope's nodes: an entity saved ([`put_entity`]) or deleted with the
//! relationships that point at it ([`remove_entity`]).
//! Must not import anything outside `crate::engine`.

use super::normalize::{name_key, FastMap};
use crate::engine::model::EntityNode;

/// The entity-memory graph of one scope.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub(super) nodes: Vec<EntityNode>,
    pub(super) by_id: FastMap<String, usize>,
    /// Normalised name or alias -> node. Names are indexed before aliases; the first claim wins.
    pub(super) by_key: FastMap<String, usize>,
}

impl PartialEq for Graph {
    fn eq(&self, other: &Self) -> bool {
        self.nodes == other.nodes
    }
}

impl Graph {
    /// Builds the indexes. With duplicate ids, lookups find the first node.
    pub fn new(nodes: Vec<EntityNode>) -> Graph {
        let mut g = Graph {
            by_id: FastMap::with_capacity_and_hasher(nodes.len(), Default::default()),
            by_key: FastMap::with_capacity_and_hasher(nodes.len() * 2, Default::default()),
            nodes,
        };
        for (i, n) in g.nodes.iter().enumerate() {
            g.by_id.entry(n.id.clone()).or_insert(i);
            let k = name_key(&n.name);
            if !k.is_empty() {
                g.by_key.entry(k).or_insert(i);
            }
        }
        for (i, n) in g.nodes.iter().enumerate() {
            for a in &n.aliases {
                let k = name_key(a);
                if !k.is_empty() {
                    g.by_key.entry(k).or_insert(i);
                }
            }
        }
        g
    }

    pub fn nodes(&self) -> &[EntityNode] {
        &self.nodes
    }

    pub fn into_nodes(self) -> Vec<EntityNode> {
        self.nodes
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn get(&self, id: &str) -> Option<&EntityNode> {
        self.by_id.get(id).map(|&i| &self.nodes[i])
    }

    /// The node whose name or alias is the same as `name` (case, whitespace and punctuation ignored).
    pub fn find_by_name(&self, name: &str) -> Option<&EntityNode> {
        self.by_key.get(&name_key(name)).map(|&i| &self.nodes[i])
    }

    pub(super) fn index_of_key(&self, key: &str) -> Option<usize> {
        if key.is_empty() {
            None
        } else {
            self.by_key.get(key).copied()
        }
    }

    pub(super) fn claim_key(&mut self, key: String, idx: usize) {
        if !key.is_empty() {
            self.by_key.entry(key).or_insert(idx);
        }
    }

    /// Like `claim_key`, allocating only when the key is free.
    pub(super) fn claim_key_ref(&mut self, key: &str, idx: usize) {
        if !key.is_empty() && !self.by_key.contains_key(key) {
            self.by_key.insert(key.to_string(), idx);
        }
    }
}

/// A user's edit of an entity: replaces the node with its id, or adds it when there is none.
pub fn put_entity(nodes: &mut Vec<EntityNode>, node: EntityNode) {
    match nodes.iter_mut().find(|n| n.id == node.id) {
        Some(n) => *n = node,
        None => nodes.push(node),
    }
}

/// Deletes entity `id` from a scope's nodes, with every relationship that points at it (from any
/// node). True when anything changed (the scope must then be saved).
pub fn remove_entity(nodes: &mut Vec<EntityNode>, id: &str) -> bool {
    let before = nodes.len();
    nodes.retain(|n| n.id != id);
    let mut touched = nodes.len() != before;
    for n in nodes.iter_mut() {
        let had = n.relationships.len();
        n.relationships.retain(|r| r.target_id != id);
        touched |= n.relationships.len() != had;
    }
    touched
}
