//! Sync's driver for the memory: the summary versions and entity graphs a memory update (or an
//! edit in the memory pane) leaves become documents, and so do the facts about the user; pulled
//! entity, edge, summary, fact and tombstone documents are written to the store, then one entity
//! learned on two devices is unified into one. Pulled facts are written under the facts' Web Lock
//! (every change of them is), and reported so the Memory page and the prompts read them again.
//! The engine decides (`engine::sync::memory`, `track`, `unify`); this moves data.
//! Must not import `ui`.

use super::replication::{clock, keep_clock, record, report, stored, Inner, SyncError};
use crate::engine::model::UserFact;
use crate::engine::model::{EntityScope, Millis};
use crate::engine::sync::doc::{
    entity_id, fact_id, id_part, scope_part, EdgeDoc, EntityDoc, SummaryDoc,
};
use crate::engine::sync::memory::{
    cleared_versions, pulled_fact, pulled_summary, put_edge, put_entity, remove_edge,
    remove_entity, untracked_summaries,
};
use crate::engine::sync::track::{self, Effect};
use crate::engine::sync::unify::unify;
use crate::engine::sync::{Body, Clock, Doc, Hlc, Kind};
use crate::engine::tabs::Change;
use crate::session::shared::{now, tabs};
use std::collections::HashMap;

fn scope_id(scope: &EntityScope) -> Option<&str> {
    match scope {
        EntityScope::Conversation(c) => Some(c),
        EntityScope::Shared => None,
    }
}

fn scope_of(id: Option<&String>) -> EntityScope {
    id.cloned()
        .map_or(EntityScope::Shared, EntityScope::Conversation)
}

/// The stored documents under an `_id` prefix, by id (what tracking compares each record with).
pub(super) async fn stored_by_id(
    i: &Inner,
    prefix: &str,
) -> Result<HashMap<String, Doc>, SyncError> {
    Ok(i.store
        .sync_docs_with_prefix(prefix)
        .await?
        .into_iter()
        .map(|d| (d.local.doc.id.clone(), d.local.doc))
        .collect())
}

/// The live synced documents under an `_id` prefix, as `pick` reads them.
async fn live<T>(
    i: &Inner,
    prefix: &str,
    pick: impl Fn(Body) -> Option<T>,
) -> Result<Vec<T>, SyncError> {
    Ok(i.store
        .sync_docs_with_prefix(prefix)
        .await?
        .into_iter()
        .filter_map(|d| pick(d.local.doc.body))
        .collect())
}

fn edge(b: Body) -> Option<EdgeDoc> {
    match b {
        Body::Edge(e) => Some(e),
        _ => None,
    }
}

/// The documents memory produces: a conversation's summary versions not yet tracked and its
/// entities, and the shared entities when `shared`, each new or changed since its stored document.
pub(super) async fn track_memory(
    i: &Inner,
    conversation: Option<&str>,
    shared: bool,
    clock: &mut Clock,
    at: Millis,
) -> Result<Vec<Doc>, SyncError> {
    let mut docs = Vec::new();
    let mut scopes = Vec::new();
    if let Some(conversation) = conversation.filter(|c| !c.is_empty()) {
        let synced: Vec<SummaryDoc> =
            live(i, &format!("s:{}:", id_part(conversation)), |b| match b {
                Body::Summary(s) => Some(s),
                _ => None,
            })
            .await?;
        let local = i.store.load_summaries(conversation).await?;
        for s in untracked_summaries(&synced, &local) {
            docs.extend(track::track_summary(None, s, clock, at));
        }
        scopes.push(EntityScope::Conversation(conversation.to_string()));
    }
    if shared {
        scopes.push(EntityScope::Shared);
    }
    for scope in scopes {
        for n in i.store.load_entities(&scope).await? {
            let sid = scope_id(&scope);
            let prev = stored(i, &entity_id(sid, &n.id)).await?;
            let prefix = format!("r:{}:{}:", scope_part(sid), id_part(&n.id));
            let edges = live(i, &prefix, edge).await?;
            docs.extend(track::track_entity(
                prev.as_ref().map(|p| &p.local.doc),
                &edges,
                &n,
                clock,
                at,
            ));
        }
    }
    Ok(docs)
}

/// The documents the facts about the user produce: each fact new or changed since its stored
/// document (`track::track_fact`).
pub(super) async fn track_facts(
    i: &Inner,
    clock: &mut Clock,
    at: Millis,
) -> Result<Vec<Doc>, SyncError> {
    let stored = stored_by_id(i, "f:").await?;
    Ok(i.store
        .load_user_facts()
        .await?
        .iter()
        .filter_map(|f| track::track_fact(stored.get(&fact_id(&f.id)), f, clock, at))
        .collect())
}

/// Writes pulled facts about the user (under the facts' lock, read inside it), each joined with
/// the stored record of its id (`engine::sync::memory::pulled_fact`), and reports them.
async fn apply_facts(i: &Inner, pulled: Vec<UserFact>) -> Result<(), SyncError> {
    if pulled.is_empty() {
        return Ok(());
    }
    let _lock = tabs::lock_user_facts(i.store.name()).await;
    let stored: HashMap<String, UserFact> = i
        .store
        .load_user_facts()
        .await?
        .into_iter()
        .map(|f| (f.id.clone(), f))
        .collect();
    let mut out: Vec<UserFact> = Vec::new();
    for f in pulled {
        let here = out.iter().position(|o| o.id == f.id);
        let before = here.map(|k| &out[k]).or_else(|| stored.get(&f.id));
        if let Some(next) = pulled_fact(before, f) {
            match here {
                Some(k) => out[k] = next,
                None => out.push(next),
            }
        }
    }
    if out.is_empty() {
        return Ok(());
    }
    i.store
        .save_user_facts(&out.iter().collect::<Vec<_>>())
        .await?;
    report(i, Change::UserFacts);
    Ok(())
}

/// The scope a graph effect changes (`None`: not a graph effect).
fn graph_scope(e: &Effect) -> Option<EntityScope> {
    match e {
        Effect::Entity(n) => Some(n.scope.clone()),
        Effect::Edge(e) => Some(scope_of(e.scope.as_ref())),
        Effect::Delete {
            kind: Kind::Entity | Kind::Edge,
            scope,
            ..
        } => Some(scope_of(scope.as_ref())),
        _ => None,
    }
}

/// Writes what merged memory documents ask to the store: summary versions one by one, and each
/// scope's graph loaded, changed by all its effects in order, and saved once. Returns the scopes
/// whose entities changed, for [`unify_scope`].
pub(super) async fn apply_memory(
    i: &Inner,
    effects: Vec<Effect>,
) -> Result<Vec<EntityScope>, SyncError> {
    let mut graphs: Vec<(EntityScope, Vec<Effect>)> = Vec::new();
    let mut facts = Vec::new();
    let mut projects = Vec::new();
    for e in effects {
        if let Effect::Fact(f) = e {
            facts.push(f);
            continue;
        }
        if let Effect::Project(p) = e {
            projects.push(p);
            continue;
        }
        if let Effect::Summary(s) = e {
            let local = i.store.load_summaries(&s.conversation_id).await?;
            if let Some(v) = pulled_summary(&local, &s) {
                i.store.save_summary(&v).await?;
                report(i, Change::MemoryChanged(v.conversation_id));
            }
            continue;
        }
        if let Effect::SummariesCleared { conversation, at } = e {
            clear_summaries(i, &conversation, &at).await?;
            continue;
        }
        let Some(scope) = graph_scope(&e) else {
            continue;
        };
        match graphs.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, list)) => list.push(e),
            None => graphs.push((scope, vec![e])),
        }
    }
    apply_facts(i, facts).await?;
    super::projects::apply_projects(i, projects).await?;
    let mut changed = Vec::new();
    for (scope, list) in graphs {
        if change_graph(i, &scope, list).await? {
            changed.push(scope);
        }
    }
    Ok(changed)
}

/// A clear of `conversation` at `at` (on any device): its summary versions made until then go.
async fn clear_summaries(i: &Inner, conversation: &str, at: &Hlc) -> Result<(), SyncError> {
    let local = i.store.load_summaries(conversation).await?;
    if local.is_empty() {
        return Ok(());
    }
    let synced: Vec<SummaryDoc> = live(i, &format!("s:{}:", id_part(conversation)), |b| match b {
        Body::Summary(s) => Some(s),
        _ => None,
    })
    .await?;
    let versions = cleared_versions(&local, &synced, at);
    if versions.is_empty() {
        return Ok(());
    }
    i.store.delete_summaries(conversation, &versions).await?;
    report(i, Change::MemoryChanged(conversation.to_string()));
    Ok(())
}

/// Loads a scope's graph once, applies `effects` to it in order, and saves and reports it if any
/// changed it. A pulled entity takes the relationships its edge documents already hold.
async fn change_graph(
    i: &Inner,
    scope: &EntityScope,
    effects: Vec<Effect>,
) -> Result<bool, SyncError> {
    let mut nodes = i.store.load_entities(scope).await?;
    let edges = if effects.iter().any(|e| matches!(e, Effect::Entity(_))) {
        live(i, &format!("r:{}:", scope_part(scope_id(scope))), edge).await?
    } else {
        Vec::new()
    };
    let mut changed = false;
    for e in effects {
        changed |= match e {
            Effect::Entity(n) => {
                let id = n.id.clone();
                put_entity(&mut nodes, n);
                for e in edges.iter().filter(|e| e.source == id) {
                    put_edge(&mut nodes, e);
                }
                true
            }
            Effect::Edge(e) => put_edge(&mut nodes, &e),
            Effect::Delete {
                kind: Kind::Entity,
                parts,
                ..
            } => parts
                .first()
                .is_some_and(|id| remove_entity(&mut nodes, id)),
            Effect::Delete {
                kind: Kind::Edge,
                parts,
                ..
            } => remove_edge(&mut nodes, &parts),
            _ => false,
        };
    }
    if !changed {
        return Ok(false);
    }
    i.store.save_entities(scope, &nodes).await?;
    let conversation = scope_id(scope).unwrap_or_default().to_string();
    report(i, Change::MemoryChanged(conversation));
    Ok(true)
}

/// One entity learned on two devices becomes one (`engine::sync::unify`): the documents are
/// recorded for the server and applied here.
pub(super) async fn unify_scope(i: &Inner, scope: &EntityScope) -> Result<(), SyncError> {
    let part = scope_part(scope_id(scope));
    let entities: Vec<EntityDoc> = live(i, &format!("e:{part}:"), |b| match b {
        Body::Entity(e) => Some(e),
        _ => None,
    })
    .await?;
    let edges = live(i, &format!("r:{part}:"), edge).await?;
    let (mut c, _) = clock(i).await?;
    let docs = unify(&entities, &edges, &c.tick(now()));
    if docs.is_empty() {
        return Ok(());
    }
    keep_clock(i, &c).await?;
    record(i, docs.clone()).await?;
    apply_memory(i, docs.iter().filter_map(track::effect).collect()).await?;
    Ok(())
}

/// The user deleted entity `entity` from conversation `conversation`'s memory pane (its own scope
/// or the shared one): the tombstones of its document and relationships are recorded for the
/// server (`track::track_entity_delete`).
pub(super) async fn track_entity_deleted(
    i: &Inner,
    conversation: &str,
    entity: &str,
) -> Result<(), SyncError> {
    let (mut c, _) = clock(i).await?;
    let mut docs = Vec::new();
    for scope in [Some(conversation), None] {
        let prev = stored(i, &entity_id(scope, entity)).await?;
        let edges = live(i, &format!("r:{}:", scope_part(scope)), edge).await?;
        docs.extend(track::track_entity_delete(
            prev.as_ref().map(|p| &p.local.doc),
            &edges,
            entity,
            &mut c,
            now(),
        ));
    }
    if docs.is_empty() {
        return Ok(());
    }
    keep_clock(i, &c).await?;
    record(i, docs).await
}
