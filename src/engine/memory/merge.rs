//! Merging a parsed update into the entity graph.
//!
//! Rules, in order:
//! 1. **Resolution.** The engine owns ids: an entity goes to the node with the same id (a known
//!    one); else to the node whose normalised name or alias equals its name, then any of its aliases;
//!    else a new node whose id comes from the caller's generator. A model id that names no node is
//!    remembered for this update only (for the first entity that gives it), so its relationships
//!    resolve; two entities that share one (a small model gives all of them `1234567890`) never
//!    become one node. Entries of one
//!    update that land on the same node are combined first (later fields win), then applied once.
//! 2. **Content.** Only an id match renames a node (the old name becomes an alias); any other differing
//!    name becomes an alias. A non-empty description replaces the old one; properties are upserted
//!    (never removed): a new value keeps the old one as a past property (`valid_from` its
//!    `property_since`, `valid_to` the day the new one was said) and becomes current from that day; a
//!    type of `other` never overwrites a known type. Identical content is no change.
//!    "The day it was said" is the entries' `said_at` (their latest source message, see
//!    `super::ground`), else `now`; relationships use it too for `valid_from` and `valid_to`.
//! 3. **Relationships** (target = an id, a model id of this update, or a name/alias; unknown targets and
//!    self-loops are dropped with a note). Per (target, label) the last statement of the update counts.
//!    - Same live (target, label): the stronger strength is kept (weakening is done by ending).
//!    - Ended (`strength` 0 or `ended: true`): the live (target, label) edge is closed with
//!      `valid_to = now`.
//!    - Functional labels ([`FUNCTIONAL_LABELS`], e.g. `lives_in`): a new target closes the live edges
//!      with that label to other targets.
//!    - Exclusive label groups ([`EXCLUSIVE_GROUPS`], e.g. `likes`/`dislikes`): a new label closes the
//!      live edges to the same target with another label of the group.
//!    - A closed edge that is asserted again gets a new live edge (history is kept). Edges are never
//!      deleted, and an entity that leaves an edge out does not end it.
//! 4. Every changed node gets its entries' source message ids (the messages that name it, see
//!    `super::ground`; the update's whole span when grounding gave none), deduplicated, and
//!    `updated_at = now`.
//!
//! Merging the same update twice equals merging it once (tested with proptest).
//! Must not import anything outside `crate::engine`.

use std::collections::BTreeMap;

use super::graph::Graph;
use super::normalize::{label_key, name_key, FastMap};
use super::parse::{ParsedEntity, ParsedRelationship};
use crate::engine::model::{
    EntityNode, EntityScope, EntityType, Millis, PastProperty, Relationship,
};

/// Labels an entity has with at most one target at a time.
pub const FUNCTIONAL_LABELS: &[&str] = &[
    "lives_in",
    "located_in",
    "based_in",
    "works_at",
    "works_for",
    "employed_by",
    "married_to",
    "reports_to",
    "assigned_to",
    "owned_by",
    "born_in",
    "status",
];

/// Groups of labels that contradict each other between the same two entities.
pub const EXCLUSIVE_GROUPS: &[&[&str]] = &[
    &["likes", "dislikes", "loves", "hates"],
    &["friend_of", "enemy_of"],
    &["married_to", "divorced_from", "engaged_to", "dating"],
    &["supports", "opposes"],
    &["trusts", "distrusts"],
    &["agrees_with", "disagrees_with"],
];

/// At most this many aliases and properties per node; more are dropped with a note.
pub const MAX_NODE_ALIASES: usize = 32;
pub const MAX_NODE_PROPERTIES: usize = 64;

/// What the merge needs from the world.
#[derive(Debug, Clone)]
pub struct MergeContext<'a> {
    pub now: Millis,
    /// The messages the update came from ([`super::UpdateSpan::message_ids`]).
    pub source_message_ids: &'a [String],
    /// Scope of nodes created by this merge.
    pub scope: EntityScope,
}

/// A relationship the merge closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedRelationship {
    pub source_id: String,
    pub target_id: String,
    pub relationship: String,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MergeReport {
    /// Ids of new nodes.
    pub added: Vec<String>,
    /// Ids of existing nodes that changed (content or relationships).
    pub updated: Vec<String>,
    /// Ids of existing nodes the update mentioned without changing anything.
    pub unchanged: Vec<String>,
    /// Relationships closed with `valid_to = now`.
    pub closed: Vec<ClosedRelationship>,
    /// What was left out, and why.
    pub dropped: Vec<String>,
}

impl MergeReport {
    /// Number of nodes added or changed.
    pub fn changes(&self) -> usize {
        self.added.len() + self.updated.len()
    }
    pub fn is_noop(&self) -> bool {
        self.changes() == 0
    }
}

fn is_functional(label: &str) -> bool {
    FUNCTIONAL_LABELS.contains(&label)
}

fn exclusive_group(label: &str) -> Option<&'static [&'static str]> {
    EXCLUSIVE_GROUPS
        .iter()
        .copied()
        .find(|g| g.contains(&label))
}

/// The entries of one update that landed on one node.
struct Group<'e> {
    node: usize,
    is_new: bool,
    entries: Vec<&'e ParsedEntity>,
    /// Per entry: the keys of its name and aliases.
    keys: Vec<Vec<String>>,
}

struct Statement<'e> {
    target: usize,
    label: String,
    rel: &'e ParsedRelationship,
}

fn fresh_id(graph: &Graph, new_id: &mut impl FnMut() -> String) -> String {
    let mut id = new_id();
    let mut tries = 0;
    while graph.by_id.contains_key(&id) || id.is_empty() {
        tries += 1;
        id = if tries < 16 {
            new_id()
        } else {
            format!("{id}~{}", graph.nodes.len())
        };
    }
    id
}

/// Merges `entities` into `graph`. Never fails: what cannot be used is reported in `dropped`.
pub fn merge(
    graph: &mut Graph,
    entities: &[ParsedEntity],
    ctx: &MergeContext<'_>,
    mut new_id: impl FnMut() -> String,
) -> MergeReport {
    let mut report = MergeReport::default();
    // Pass 1: resolve every entry to a node, creating skeletons for new ones.
    let (groups, model_ids) = resolve_entries(graph, entities, ctx, &mut new_id);

    // Pass 2: content.
    let mut changed = vec![false; groups.len()];
    for (gi, group) in groups.iter().enumerate() {
        changed[gi] = apply_content(graph, group, ctx.now, &mut report);
    }

    // Pass 3: relationships (all nodes exist now, so forward references resolve).
    for (gi, group) in groups.iter().enumerate() {
        let statements = resolve_statements(graph, group, &model_ids, &mut report);
        let said = group.said_at(ctx.now);
        if apply_relationships(graph, group.node, &statements, said, &mut report) {
            changed[gi] = true;
        }
    }

    // Sources, timestamps and the report.
    for (gi, group) in groups.iter().enumerate() {
        let node = &mut graph.nodes[group.node];
        if group.is_new || changed[gi] {
            let own: Vec<&String> = group.entries.iter().flat_map(|e| &e.sources).collect();
            let sources: Vec<&String> = if own.is_empty() {
                ctx.source_message_ids.iter().collect()
            } else {
                own
            };
            for s in sources {
                if !node.source_message_ids.contains(s) {
                    node.source_message_ids.push(s.clone());
                }
            }
            node.updated_at = ctx.now;
        }
        let id = node.id.clone();
        if group.is_new {
            report.added.push(id);
        } else if changed[gi] {
            report.updated.push(id);
        } else {
            report.unchanged.push(id);
        }
    }
    report
}

/// Pass 1 of [`merge`]: every entry resolved to a node (a skeleton for a new one) and grouped by
/// node, and the model's own ids of this update with the node each names.
fn resolve_entries<'e>(
    graph: &mut Graph,
    entities: &'e [ParsedEntity],
    ctx: &MergeContext<'_>,
    new_id: &mut impl FnMut() -> String,
) -> (Vec<Group<'e>>, FastMap<&'e str, usize>) {
    let mut model_ids: FastMap<&str, usize> = FastMap::default();
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: FastMap<usize, usize> = FastMap::default();
    for e in entities {
        // Keys of the entry's name, then of its aliases.
        let entry_keys: Vec<String> = std::iter::once(&e.name)
            .chain(e.aliases.iter())
            .map(|n| name_key(n))
            .collect();
        let by_id = e.id.as_deref().and_then(|id| graph.by_id.get(id).copied());
        // A model's own id (not a known one) never joins two entries: a small model gives every
        // entity the same made-up id. It only lets this update's relationships find the first.
        let found = by_id.or_else(|| entry_keys.iter().find_map(|k| graph.index_of_key(k)));
        let (idx, is_new) = match found {
            Some(i) => (i, false),
            None => (new_node(graph, e, ctx, new_id), true),
        };
        if by_id.is_none() {
            if let Some(mid) = e.id.as_deref() {
                model_ids.entry(mid).or_insert(idx);
            }
        }
        for k in &entry_keys {
            graph.claim_key_ref(k, idx);
        }
        match group_of.get(&idx) {
            Some(&g) => {
                groups[g].entries.push(e);
                groups[g].keys.push(entry_keys);
            }
            None => {
                group_of.insert(idx, groups.len());
                groups.push(Group {
                    node: idx,
                    is_new,
                    entries: vec![e],
                    keys: vec![entry_keys],
                });
            }
        }
    }
    (groups, model_ids)
}

/// A new node for entry `e` (its type and name, a fresh id), added to `graph`; its index.
fn new_node(
    graph: &mut Graph,
    e: &ParsedEntity,
    ctx: &MergeContext<'_>,
    new_id: &mut impl FnMut() -> String,
) -> usize {
    let id = fresh_id(graph, new_id);
    let idx = graph.nodes.len();
    graph.by_id.insert(id.clone(), idx);
    graph.nodes.push(EntityNode {
        id,
        scope: ctx.scope.clone(),
        entity_type: e.entity_type,
        name: e.name.clone(),
        aliases: Vec::new(),
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: Vec::new(),
        source_message_ids: Vec::new(),
        updated_at: ctx.now,
    });
    idx
}

impl Group<'_> {
    /// When the group's facts were said (its entries' latest `said_at`), else `now`.
    fn said_at(&self, now: Millis) -> Millis {
        self.entries
            .iter()
            .filter_map(|e| e.said_at)
            .max()
            .unwrap_or(now)
    }
}

/// Applies the combined content of a group. Returns whether the node changed.
fn apply_content(
    graph: &mut Graph,
    group: &Group<'_>,
    now: Millis,
    report: &mut MergeReport,
) -> bool {
    let idx = group.node;
    // Combine the entries: later fields win.
    let node_id = graph.nodes[idx].id.as_str();
    let rename: Option<&str> = group
        .entries
        .iter()
        .rev()
        .find(|e| e.id.as_deref() == Some(node_id))
        .map(|e| e.name.as_str());
    let entity_type = group
        .entries
        .iter()
        .rev()
        .map(|e| e.entity_type)
        .find(|t| *t != EntityType::Other);
    let description = group
        .entries
        .iter()
        .rev()
        .map(|e| e.description.as_str())
        .find(|d| !d.is_empty());

    let node = &mut graph.nodes[idx];
    let (mut changed, keys) = apply_names(node, group, rename, report);
    if let Some(t) = entity_type {
        if node.entity_type != t {
            node.entity_type = t;
            changed = true;
        }
    }
    if let Some(d) = description {
        if node.description != d {
            node.description = d.to_string();
            changed = true;
        }
    }
    if apply_properties(node, group, now, report) {
        changed = true;
    }
    if changed {
        // The (possibly new) name and aliases claim their keys; `keys` holds exactly these.
        for k in keys {
            graph.claim_key(k, idx);
        }
    }
    changed
}

/// Renames `node` to `rename` (the old name becomes an alias) and adds the group's other names as
/// aliases; whether it changed, and the keys of its name and aliases.
fn apply_names(
    node: &mut EntityNode,
    group: &Group<'_>,
    rename: Option<&str>,
    report: &mut MergeReport,
) -> (bool, Vec<String>) {
    let mut changed = false;
    if let Some(new_name) = rename {
        if name_key(new_name) != name_key(&node.name) {
            let old = std::mem::replace(&mut node.name, new_name.to_string());
            let new_key = name_key(&node.name);
            node.aliases.retain(|a| name_key(a) != new_key);
            node.aliases.insert(0, old);
            changed = true;
        }
    }
    let mut keys: Vec<String> = std::iter::once(name_key(&node.name))
        .chain(node.aliases.iter().map(|a| name_key(a)))
        .collect();
    let names = group
        .entries
        .iter()
        .zip(&group.keys)
        .flat_map(|(e, ks)| std::iter::once(&e.name).chain(e.aliases.iter()).zip(ks));
    for (n, k) in names {
        if k.is_empty() || keys.contains(k) {
            continue;
        }
        if node.aliases.len() >= MAX_NODE_ALIASES {
            report
                .dropped
                .push(format!("{}: alias '{n}' (too many aliases)", node.id));
            continue;
        }
        keys.push(k.clone());
        node.aliases.push(n.clone());
        changed = true;
    }
    (changed, keys)
}

/// Upserts the group's combined properties into `node` (a changed value keeps the old one as past,
/// both dated by when the group's facts were said); whether it changed.
fn apply_properties(
    node: &mut EntityNode,
    group: &Group<'_>,
    now: Millis,
    report: &mut MergeReport,
) -> bool {
    let mut changed = false;
    // Later entries win; combine first so that a value set and then reset is no change.
    let mut props: BTreeMap<&str, &str> = BTreeMap::new();
    for e in &group.entries {
        props.extend(e.properties.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    let said = group.said_at(now);
    for (k, v) in props {
        if let Some(old) = node.properties.get_mut(k) {
            if old != v {
                // The old value is kept as past, from when it was said until now.
                let since = node.property_since.get(k).copied().unwrap_or(0);
                node.past_properties.push(PastProperty {
                    key: k.to_string(),
                    value: std::mem::replace(old, v.to_string()),
                    valid_from: since,
                    valid_to: said.max(since),
                });
                node.property_since.insert(k.to_string(), said);
                changed = true;
            }
        } else if node.properties.len() < MAX_NODE_PROPERTIES {
            node.properties.insert(k.to_string(), v.to_string());
            node.property_since.insert(k.to_string(), said);
            changed = true;
        } else {
            report
                .dropped
                .push(format!("{}: property '{k}' (too many properties)", node.id));
        }
    }
    changed
}

/// Resolves targets and reduces the group's statements so that none contradicts another.
fn resolve_statements<'e>(
    graph: &Graph,
    group: &Group<'e>,
    model_ids: &FastMap<&str, usize>,
    report: &mut MergeReport,
) -> Vec<Statement<'e>> {
    let source = &graph.nodes[group.node];
    let mut out: Vec<Statement<'e>> = Vec::new();
    for e in &group.entries {
        for rel in &e.relationships {
            let target = graph
                .by_id
                .get(rel.target.as_str())
                .copied()
                .or_else(|| model_ids.get(rel.target.as_str()).copied())
                .or_else(|| graph.index_of_key(&name_key(&rel.target)));
            let Some(target) = target else {
                report.dropped.push(format!(
                    "{}: relationship '{}' to unknown target '{}'",
                    source.id, rel.relationship, rel.target
                ));
                continue;
            };
            if target == group.node {
                report.dropped.push(format!(
                    "{}: relationship '{}' to itself",
                    source.id, rel.relationship
                ));
                continue;
            }
            let label = label_key(&rel.relationship);
            // The last statement about a (target, label) counts.
            out.retain(|s| !(s.target == target && s.label == label));
            out.push(Statement { target, label, rel });
        }
    }
    // Within one update, a functional label keeps its last target and an exclusive group its last
    // label per target; earlier contradicting statements are superseded.
    let mut keep = vec![true; out.len()];
    for i in 0..out.len() {
        if out[i].rel.ended {
            continue;
        }
        for j in i + 1..out.len() {
            if out[j].rel.ended {
                continue;
            }
            let (a, b) = (&out[i], &out[j]);
            let functional = a.label == b.label && is_functional(&a.label) && a.target != b.target;
            let exclusive = a.target == b.target
                && a.label != b.label
                && exclusive_group(&a.label).is_some_and(|g| g.contains(&b.label.as_str()));
            if functional || exclusive {
                keep[i] = false;
                report.dropped.push(format!(
                    "{}: relationship '{}' superseded by '{}' in the same update",
                    source.id, a.rel.relationship, b.rel.relationship
                ));
                break;
            }
        }
    }
    let mut k = keep.into_iter();
    out.retain(|_| k.next().unwrap_or(true));
    out
}

fn close(node: &mut EntityNode, rel_index: usize, now: Millis, report: &mut MergeReport) {
    let r = &mut node.relationships[rel_index];
    r.valid_to = Some(now);
    report.closed.push(ClosedRelationship {
        source_id: node.id.clone(),
        target_id: r.target_id.clone(),
        relationship: r.relationship.clone(),
    });
}

/// Applies the statements to the node's edges. Returns whether anything changed.
fn apply_relationships(
    graph: &mut Graph,
    idx: usize,
    statements: &[Statement<'_>],
    now: Millis,
    report: &mut MergeReport,
) -> bool {
    if statements.is_empty() {
        return false;
    }
    let targets: Vec<String> = statements
        .iter()
        .map(|s| graph.nodes[s.target].id.clone())
        .collect();
    let node = &mut graph.nodes[idx];
    let mut keys: Vec<String> = node
        .relationships
        .iter()
        .map(|r| label_key(&r.relationship))
        .collect();
    let mut changed = false;
    for (s, target_id) in statements.iter().zip(&targets) {
        let live: Vec<usize> = node
            .relationships
            .iter()
            .enumerate()
            .filter(|(i, r)| {
                r.valid_to.is_none() && &r.target_id == target_id && keys[*i] == s.label
            })
            .map(|(i, _)| i)
            .collect();
        if s.rel.ended {
            for i in live {
                close(node, i, now, report);
                changed = true;
            }
            continue;
        }
        match live.first() {
            Some(&i) => {
                if s.rel.strength > node.relationships[i].strength {
                    node.relationships[i].strength = s.rel.strength;
                    changed = true;
                }
            }
            None => {
                node.relationships.push(Relationship {
                    target_id: target_id.clone(),
                    relationship: s.rel.relationship.clone(),
                    strength: s.rel.strength,
                    valid_from: now,
                    valid_to: None,
                });
                keys.push(s.label.clone());
                changed = true;
            }
        }
        if close_contradicted(node, &keys, s, target_id, now, report) {
            changed = true;
        }
    }
    changed
}

/// Closes the live edges of `node` (labels `keys`) that statement `s` to `target_id` contradicts:
/// of a functional label, to other targets; of its exclusive group, to the same target with another
/// label. Whether any was closed.
fn close_contradicted(
    node: &mut EntityNode,
    keys: &[String],
    s: &Statement<'_>,
    target_id: &str,
    now: Millis,
    report: &mut MergeReport,
) -> bool {
    let mut changed = false;
    let functional = is_functional(&s.label);
    let group = exclusive_group(&s.label);
    if functional || group.is_some() {
        let contradicted: Vec<usize> = node
            .relationships
            .iter()
            .zip(keys)
            .enumerate()
            .filter(|(_, (r, rk))| {
                r.valid_to.is_none()
                    && ((functional && **rk == s.label && r.target_id != target_id)
                        || (r.target_id == target_id
                            && **rk != s.label
                            && group.is_some_and(|g| g.contains(&rk.as_str()))))
            })
            .map(|(i, _)| i)
            .collect();
        for i in contradicted {
            close(node, i, now, report);
            changed = true;
        }
    }
    changed
}
