//! Sync's driver for the memory's summaries and entity graphs: the summary versions and entity
//! graphs a memory update (or an edit in the memory pane) leaves become documents; pulled entity,
//! edge, summary and tombstone documents are written to the store, then one entity learned on two
//! devices is unified into one. These are not register-like (summary versions are numbered per
//! device, a graph is changed by its edges and unified), so they keep moves of their own; the facts
//! about the user are a register-like kind and go the one path of `registers.rs`. The engine
//! decides (`engine::sync::memory`, `local`, `track`, `unify`); this moves data. Must not import
//! `ui`.

use super::error::SyncError;
use super::state::{clock, keep_clock, record, report, stored, Inner};
use crate::engine::model::{EntityScope, Millis};
use crate::engine::sync::doc::{entity_id, id_part, scope_part, EdgeDoc, EntityDoc, SummaryDoc};
use crate::engine::sync::local::{change_graph, group, needs_edges, scope_id};
use crate::engine::sync::memory::{cleared_versions, pulled_summary, untracked_summaries};
use crate::engine::sync::track::{self, Effect};
use crate::engine::sync::unify::unify;
use crate::engine::sync::{Body, Clock, Doc, Hlc};
use crate::engine::tabs::Change;
use crate::session::shared::now;

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

/// Writes pulled summary versions and clears of summaries (`Effect::Summary`,
/// `Effect::SummariesCleared`), in order.
pub(super) async fn apply_summaries(i: &Inner, effects: Vec<Effect>) -> Result<(), SyncError> {
    for e in effects {
        match e {
            Effect::Summary(s) => {
                let local = i.store.load_summaries(&s.conversation_id).await?;
                if let Some(v) = pulled_summary(&local, &s) {
                    i.store.save_summary(&v).await?;
                    report(i, Change::MemoryChanged(v.conversation_id));
                }
            }
            Effect::SummariesCleared { conversation, at } => {
                clear_summaries(i, &conversation, &at).await?
            }
            _ => {}
        }
    }
    Ok(())
}

/// Changes each scope's graph by its effects (loaded once, saved once); the scopes whose entities
/// changed, for [`unify_scope`].
pub(super) async fn apply_graphs(
    i: &Inner,
    graphs: Vec<(EntityScope, Vec<Effect>)>,
) -> Result<Vec<EntityScope>, SyncError> {
    let mut changed = Vec::new();
    for (scope, list) in graphs {
        if graph(i, &scope, list).await? {
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

/// Loads a scope's graph once, changes it by `effects` (`engine::sync::local::change_graph`), and
/// saves and reports it if they changed it.
async fn graph(i: &Inner, scope: &EntityScope, effects: Vec<Effect>) -> Result<bool, SyncError> {
    let mut nodes = i.store.load_entities(scope).await?;
    let edges = match needs_edges(&effects) {
        true => live(i, &format!("r:{}:", scope_part(scope_id(scope))), edge).await?,
        false => Vec::new(),
    };
    if !change_graph(&mut nodes, &edges, effects) {
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
    let effects = docs.iter().filter_map(track::effect).collect();
    apply_graphs(i, group(effects).graphs).await?;
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
