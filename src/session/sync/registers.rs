//! Sync's one path for the register-like kinds of the engine's table (`engine::sync::kinds`: the
//! facts about the user, the projects): each record new or changed here becomes its document
//! (`Register::track` against the stored one), and pulled ones are written under the kind's Web
//! Lock, read inside it and joined with the stored records (`Register::join`: a fact forgotten or a
//! project deleted anywhere stays so), then reported (`Register::change`) so the UI and the prompts
//! read them again. The same moves for every kind, in the table's order (`registers!`); what is a
//! kind's own here is its one store impl, [`Shelf`]: the store's read and write of its records and
//! the lock their writers share. Decides nothing. Must not import `ui`.

use super::error::SyncError;
use super::state::{report, stored_by_id, Inner};
use crate::engine::model::{Millis, Project, UserFact};
use crate::engine::sync::kinds::Register;
use crate::engine::sync::{Clock, Doc, Kind};
use crate::session::shared::tabs::{self, LockGuard};
use crate::store::{Store, StoreError};

/// A register-like kind's records in the store: the one store impl a new kind adds here.
pub(super) trait Shelf: Register {
    /// Every record of the kind.
    async fn load(store: &Store) -> Result<Vec<Self>, StoreError>;
    /// Writes these records (new or changed), all or none.
    async fn save(store: &Store, records: &[&Self]) -> Result<(), StoreError>;
    /// The Web Lock every writer of these records holds (in every tab) while it reads and writes.
    async fn lock(db: &str) -> LockGuard;
}

impl Shelf for UserFact {
    async fn load(store: &Store) -> Result<Vec<Self>, StoreError> {
        store.load_user_facts().await
    }
    async fn save(store: &Store, records: &[&Self]) -> Result<(), StoreError> {
        store.save_user_facts(records).await
    }
    async fn lock(db: &str) -> LockGuard {
        tabs::lock_user_facts(db).await
    }
}

impl Shelf for Project {
    async fn load(store: &Store) -> Result<Vec<Self>, StoreError> {
        store.load_projects().await
    }
    async fn save(store: &Store, records: &[&Self]) -> Result<(), StoreError> {
        store.save_projects(records).await
    }
    async fn lock(db: &str) -> LockGuard {
        tabs::lock_projects(db).await
    }
}

/// The documents the register-like kinds produce (`only`: the one kind a change tracks; `None`:
/// every kind, for the first sync's seed), each record new or changed since its stored document.
pub(super) async fn track(
    i: &Inner,
    only: Option<Kind>,
    clock: &mut Clock,
    at: Millis,
) -> Result<Vec<Doc>, SyncError> {
    let mut docs = Vec::new();
    macro_rules! row {
        ($r:ty) => {
            if only.is_none_or(|k| k == <$r as Register>::KIND) {
                docs.extend(track_kind::<$r>(i, clock, at).await?);
            }
        };
    }
    crate::registers!(row);
    Ok(docs)
}

/// Writes the records pulled documents hold (`Grouped::registers`), each kind of the table in
/// turn.
pub(super) async fn apply(i: &Inner, pulled: Vec<Doc>) -> Result<(), SyncError> {
    if pulled.is_empty() {
        return Ok(());
    }
    macro_rules! row {
        ($r:ty) => {
            apply_kind::<$r>(i, &pulled).await?;
        };
    }
    crate::registers!(row);
    Ok(())
}

async fn track_kind<R: Shelf>(
    i: &Inner,
    clock: &mut Clock,
    at: Millis,
) -> Result<Vec<Doc>, SyncError> {
    let stored = stored_by_id(i, &format!("{}:", R::KIND.prefix())).await?;
    Ok(R::load(&i.store)
        .await?
        .iter()
        .filter_map(|r| R::track(stored.get(&r.doc_id()), r, clock, at))
        .collect())
}

/// Writes the pulled records of kind `R` (under its lock, read inside it), each joined with the
/// stored record of its id, and reports them.
async fn apply_kind<R: Shelf>(i: &Inner, pulled: &[Doc]) -> Result<(), SyncError> {
    let pulled: Vec<R> = pulled.iter().filter_map(R::of_doc).collect();
    if pulled.is_empty() {
        return Ok(());
    }
    let _lock = R::lock(i.store.name()).await;
    let write = R::join(&R::load(&i.store).await?, pulled);
    if write.is_empty() {
        return Ok(());
    }
    R::save(&i.store, &write.iter().collect::<Vec<_>>()).await?;
    report(i, R::change());
    Ok(())
}
