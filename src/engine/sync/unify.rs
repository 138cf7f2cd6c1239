//! One entity learned on two devices: each device's memory update gave it its own id, so after a
//! sync a scope holds two live entity documents with the same normalised name. `unify` turns them
//! into one, the same way on every device: the smallest id is kept and takes in the others' content
//! through the one merge (their names become aliases), the others become tombstones, and their edges
//! are re-pointed (new edge documents, the old ones tombstoned; an edge that would point at itself is
//! only tombstoned). The kept node's content does not depend on the device or the time, so two
//! devices unifying at once write the same document; running it again on its own result writes
//! nothing. Must not import anything outside `crate::engine`.

use std::collections::{BTreeMap, BTreeSet};

use super::doc::{Body, Doc, EdgeDoc, EntityDoc};
use super::hlc::Hlc;
use super::merge::merge;
use crate::engine::memory::normalize::name_key;

/// The documents to write so that no scope holds two live entities with the same normalised name.
/// `entities` and `edges` are the live documents (tombstones left out); `at` stamps the tombstones.
pub fn unify(entities: &[EntityDoc], edges: &[EdgeDoc], at: &Hlc) -> Vec<Doc> {
    let mut groups: BTreeMap<(Option<String>, String), Vec<&EntityDoc>> = BTreeMap::new();
    for e in entities {
        let key = name_key(&e.name.v);
        if !key.is_empty() {
            groups.entry((e.scope.clone(), key)).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    // (scope, old id) -> kept id
    let mut moved: BTreeMap<(Option<String>, String), String> = BTreeMap::new();
    for ((scope, _), mut group) in groups {
        if group.len() < 2 {
            continue;
        }
        crate::engine::sort::sort_by(&mut group, |a, b| a.id.cmp(&b.id));
        let kept = group[0];
        let as_kept = |e: &EntityDoc| {
            Doc::new(Body::Entity(EntityDoc {
                id: kept.id.clone(),
                ..e.clone()
            }))
        };
        let mut merged = as_kept(kept);
        for other in &group[1..] {
            merged = merge(&merged, &as_kept(other));
        }
        if let Body::Entity(m) = &mut merged.body {
            let names: BTreeSet<String> = group.iter().map(|e| e.name.v.clone()).collect();
            m.aliases
                .extend(names.into_iter().filter(|n| *n != m.name.v));
        }
        out.push(merged);
        for other in &group[1..] {
            let id = Doc::new(Body::Entity((*other).clone())).id;
            out.extend(Doc::tombstone(&id, at));
            moved.insert((scope.clone(), other.id.clone()), kept.id.clone());
        }
    }
    for e in edges {
        let to = |id: &String| {
            moved
                .get(&(e.scope.clone(), id.clone()))
                .cloned()
                .unwrap_or_else(|| id.clone())
        };
        let (source, target) = (to(&e.source), to(&e.target));
        if source == e.source && target == e.target {
            continue;
        }
        let old = Doc::new(Body::Edge(e.clone()));
        out.extend(Doc::tombstone(&old.id, at));
        if source != target {
            out.push(Doc::new(Body::Edge(EdgeDoc {
                source,
                target,
                ..e.clone()
            })));
        }
    }
    out
}
