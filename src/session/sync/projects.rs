//! Sync's driver for the projects: each project new or changed here becomes its `p:{project}`
//! document (`engine::sync::track::track_project`), and pulled ones are written under the
//! projects' Web Lock, joined with the stored record (`engine::project::join_project`: a deletion
//! anywhere wins), and reported so the sidebar and the prompts read them again. Must not import
//! `ui`.

use super::error::SyncError;
use super::state::{report, stored_by_id, Inner};
use crate::engine::model::{Millis, Project};
use crate::engine::project::join_all;
use crate::engine::sync::doc::project_id;
use crate::engine::sync::track;
use crate::engine::sync::{Clock, Doc};
use crate::engine::tabs::Change;
use crate::session::shared::tabs;

/// The documents the projects produce: each project new or changed since its stored document.
pub(super) async fn track_projects(
    i: &Inner,
    clock: &mut Clock,
    at: Millis,
) -> Result<Vec<Doc>, SyncError> {
    let stored = stored_by_id(i, "p:").await?;
    Ok(i.store
        .load_projects()
        .await?
        .iter()
        .filter_map(|p| track::track_project(stored.get(&project_id(&p.id)), p, clock, at))
        .collect())
}

/// Writes pulled projects (under the projects' lock, read inside it), each joined with the
/// stored record of its id, and reports them.
pub(super) async fn apply_projects(i: &Inner, pulled: Vec<Project>) -> Result<(), SyncError> {
    if pulled.is_empty() {
        return Ok(());
    }
    let _lock = tabs::lock_projects(i.store.name()).await;
    let stored = i.store.load_projects().await?;
    let write = join_all(&stored, &pulled);
    if write.is_empty() {
        return Ok(());
    }
    i.store
        .save_projects(&write.iter().collect::<Vec<_>>())
        .await?;
    report(i, Change::Projects);
    Ok(())
}
