//! The store: Memoire's IndexedDB persistence. Owns the schema and its versions (`schema.rs`), the
//! guarded data migrations (`migrate.rs`), the on-disk record types and their conversions to engine
//! types (`records.rs`), and the async API used by the session layer: conversations, messages, memory
//! (summaries + entity graph), facts about the user, projects, settings, sync documents and state,
//! and storage persistence/quota.
//!
//! Must not import: `ui`, `session`, `transport`, leptos. Imports `crate::engine::model` types only
//! (and, in `sync_docs.rs`, the synced document types of `crate::engine::sync`).
//!
//! Talks to IndexedDB through raw `web-sys` (see `idb.rs` for why rexie 0.6 cannot be used for the
//! connection: no access to `onversionchange`, `onblocked`, `transaction.error` or store renames).
//!
//! Guarantees:
//! - writes that belong together are one transaction; a failed transaction (including a full disk,
//!   `QuotaExceededError` -> [`StoreError::Full`]) is aborted, so nothing is half-written;
//! - message `seq` is assigned inside the appending readwrite transaction from the conversation's
//!   `last_seq`; IndexedDB serialises overlapping readwrite transactions, even across connections and
//!   tabs, so seqs are unique and gap-free (a unique `[conversation_id, seq]` index backs this up);
//! - when another tab upgrades the database, this connection closes itself at once (so that tab is not
//!   blocked), [`Store::closed_by_other_tab`] turns true and the registered callback runs; every later
//!   call returns [`StoreError::ClosedByOtherTab`];
//! - opening never waits for other tabs: if an upgrade is blocked, `open` returns [`StoreError::Blocked`]
//!   (a connection that opens later anyway is closed immediately).

mod attachments;
mod conversations;
mod edits;
mod error;
mod idb;
mod mcp;
mod memory;
mod memory_state;
mod memory_update;
mod messages;
mod migrate;
mod projects;
mod quota;
pub mod records;
pub mod schema;
mod search;
mod settings;
mod sync_batch;
mod sync_docs;
mod sync_keys;
mod turns;
mod user_facts;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, IdbDatabase, IdbFactory, IdbOpenDbRequest, IdbVersionChangeEvent};

pub use attachments::{BlobInventory, BlobUsage, StoredBlob};
pub use conversations::ConversationPatch;
pub use edits::WritePace;
pub use error::StoreError;
pub use idb::Span;
pub use mcp::McpServer;
pub use memory_update::MemorySpan;
pub use messages::AppendOutcome;
pub use migrate::MigrationRecord;
pub use quota::StorageUsage;
pub use search::SearchHit;
pub use sync_docs::{SavedPassword, SyncSettings, SyncState, SyncedDoc};
pub use sync_keys::{OldKeys, SyncKeys};

use idb::{dom_error, js_error, request, Tx};

/// Shared state of one connection, visible to the `onversionchange` handler.
struct Shared {
    db: RefCell<Option<IdbDatabase>>,
    closed_by_other: Cell<bool>,
    listeners: RefCell<Vec<Rc<dyn Fn()>>>,
}

impl Shared {
    fn close_for_other_tab(&self) {
        if let Some(db) = self.db.borrow_mut().take() {
            db.close();
        }
        self.closed_by_other.set(true);
        let listeners: Vec<Rc<dyn Fn()>> = self.listeners.borrow().clone();
        for l in listeners {
            l();
        }
    }
}

struct Inner {
    name: String,
    shared: Rc<Shared>,
    _on_version_change: Closure<dyn FnMut(JsValue)>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone: close the connection so it never blocks another tab's upgrade.
        if let Some(db) = self.shared.db.borrow_mut().take() {
            db.set_onversionchange(None);
            db.close();
        }
    }
}

/// A handle on one open Memoire database. Cheap to clone (all clones share one connection).
#[derive(Clone)]
pub struct Store {
    inner: Rc<Inner>,
}

fn factory() -> Result<IdbFactory, StoreError> {
    let global = js_sys::global();
    let f = js_sys::Reflect::get(&global, &JsValue::from_str("indexedDB"))
        .map_err(|_| StoreError::Unavailable("no indexedDB object".into()))?;
    if f.is_undefined() || f.is_null() {
        return Err(StoreError::Unavailable("indexedDB is undefined".into()));
    }
    f.dyn_into::<IdbFactory>()
        .map_err(|_| StoreError::Unavailable("indexedDB is not an IDBFactory".into()))
}

/// Runs the structural upgrade (`schema::upgrade`) when the open request needs one; a failed
/// upgrade aborts its transaction, so the open fails.
fn upgrade_when_needed(req: &IdbOpenDbRequest) {
    let upgrade_req = req.clone();
    let on_upgrade = Closure::once_into_js(move |ev: IdbVersionChangeEvent| {
        let old = ev.old_version() as u32;
        let db = upgrade_req
            .result()
            .ok()
            .and_then(|v| v.dyn_into::<IdbDatabase>().ok());
        let tx = upgrade_req.transaction();
        if let (Some(db), Some(tx)) = (db, tx) {
            let upgraded = schema::upgrade(&db, &tx, old).and_then(|()| match old {
                0 => migrate::born_applied(&tx),
                _ => Ok(()),
            });
            if let Err(e) = upgraded {
                web_sys::console::error_1(&JsValue::from_str(&format!(
                    "memoire store upgrade failed: {e}"
                )));
                let _ = tx.abort();
            }
        }
    });
    req.set_onupgradeneeded(Some(on_upgrade.unchecked_ref()));
}

/// The connection the open request gives, without waiting for other tabs: a blocked open is
/// [`StoreError::Blocked`] (and whatever it opens later is closed at once).
async fn opened(req: &IdbOpenDbRequest) -> Result<IdbDatabase, StoreError> {
    let opened = JsFuture::from(js_sys::Promise::new(&mut |resolve, reject| {
        req.set_onsuccess(Some(&resolve));
        req.set_onerror(Some(&reject));
        req.set_onblocked(Some(&reject));
    }))
    .await;
    req.set_onerror(None);
    req.set_onblocked(None);
    if let Err(ev) = opened {
        let blocked = ev
            .dyn_ref::<Event>()
            .map(|e| e.type_() == "blocked")
            .unwrap_or(false);
        if blocked {
            // The request stays queued; whenever it succeeds, close what it opens.
            let late = req.clone();
            let close_late = Closure::once_into_js(move |_: JsValue| {
                if let Ok(db) = late.result().and_then(|v| v.dyn_into::<IdbDatabase>()) {
                    db.close();
                }
            });
            req.set_onsuccess(Some(close_late.unchecked_ref()));
            return Err(StoreError::Blocked);
        }
        req.set_onsuccess(None);
        return Err(dom_error(
            req.error().ok().flatten(),
            "could not open the database",
        ));
    }
    req.set_onsuccess(None);
    req.result()
        .map_err(js_error)?
        .dyn_into()
        .map_err(|_| StoreError::Unavailable("open returned no database".into()))
}

impl Store {
    /// Opens (creating or upgrading) the database `name`, then runs pending data migrations.
    pub async fn open(name: &str) -> Result<Store, StoreError> {
        Store::open_in(&factory()?, name).await
    }

    /// [`Store::open`] in another place than the origin's default storage: the `indexedDB` of a
    /// storage bucket (`navigator.storageBuckets`), which can have a quota of its own.
    pub async fn open_in(factory: &IdbFactory, name: &str) -> Result<Store, StoreError> {
        let store = Store::open_unmigrated_in(factory, name).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// [`Store::open`] without its data migrations, for a caller that reads what they do not touch
    /// (settings, sync state) while [`Store::migrate`] runs: it must not read conversations or
    /// messages before that is done.
    pub async fn open_unmigrated(name: &str) -> Result<Store, StoreError> {
        Store::open_unmigrated_in(&factory()?, name).await
    }

    async fn open_unmigrated_in(factory: &IdbFactory, name: &str) -> Result<Store, StoreError> {
        let req: IdbOpenDbRequest = factory
            .open_with_u32(name, schema::DB_VERSION)
            .map_err(|e| StoreError::Unavailable(format!("{:?}", js_error(e))))?;
        upgrade_when_needed(&req);
        let db = opened(&req).await?;
        Ok(Store::connected(name, db))
    }

    /// Runs the data migrations not yet applied (`migrate`); the connection is closed when one
    /// fails.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let run = migrate::run(self).await;
        if run.is_err() {
            self.close();
        }
        run
    }

    /// The numbers of the data migrations not yet applied, read in one read-only transaction.
    pub async fn pending_migrations(&self) -> Result<Vec<u32>, StoreError> {
        migrate::pending(self).await
    }

    /// Runs the migrations `pending` names ([`Store::pending_migrations`]); the connection is
    /// closed when one fails.
    pub async fn apply_migrations(&self, pending: &[u32]) -> Result<(), StoreError> {
        let run = migrate::apply(self, pending).await;
        if run.is_err() {
            self.close();
        }
        run
    }

    /// The store over an open connection, which closes itself when another tab upgrades the
    /// database.
    fn connected(name: &str, db: IdbDatabase) -> Store {
        let shared = Rc::new(Shared {
            db: RefCell::new(Some(db.clone())),
            closed_by_other: Cell::new(false),
            listeners: RefCell::new(Vec::new()),
        });
        let weak = Rc::downgrade(&shared);
        let on_version_change = Closure::<dyn FnMut(JsValue)>::new(move |_ev: JsValue| {
            if let Some(s) = weak.upgrade() {
                s.close_for_other_tab();
            }
        });
        db.set_onversionchange(Some(on_version_change.as_ref().unchecked_ref()));
        Store {
            inner: Rc::new(Inner {
                name: name.to_string(),
                shared,
                _on_version_change: on_version_change,
            }),
        }
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// True once another tab upgraded the database and this connection was closed.
    pub fn closed_by_other_tab(&self) -> bool {
        self.inner.shared.closed_by_other.get()
    }

    /// Runs `f` when another tab upgrades the database (show "Memoire was updated in another tab — reload").
    pub fn on_closed_by_other_tab(&self, f: impl Fn() + 'static) {
        self.inner.shared.listeners.borrow_mut().push(Rc::new(f));
    }

    /// Closes the connection; every later call returns [`StoreError::Closed`].
    pub fn close(&self) {
        if let Some(db) = self.inner.shared.db.borrow_mut().take() {
            db.close();
        }
    }

    /// Deletes a whole database (close every handle on it first, or this waits for them).
    pub async fn delete_database(name: &str) -> Result<(), StoreError> {
        let req = factory()?.delete_database(name).map_err(js_error)?;
        request(&req).await.map(|_| ())
    }

    fn db(&self) -> Result<IdbDatabase, StoreError> {
        if self.closed_by_other_tab() {
            return Err(StoreError::ClosedByOtherTab);
        }
        self.inner
            .shared
            .db
            .borrow()
            .clone()
            .ok_or(StoreError::Closed)
    }

    pub(crate) fn tx(&self, stores: &[&str], write: bool) -> Result<Tx, StoreError> {
        Tx::new(&self.db()?, stores, write)
    }
}

/// `fut` as a future of its own behind a pointer, polled through its vtable: its code becomes
/// functions of its own instead of being inlined into the caller's state machine. For work the
/// opening rarely does (a migration, marking replies left streaming): the browser compiles a wasm
/// function whole on its first call, and the opening's is called on every first start.
pub(crate) fn outlined<'a, T>(
    fut: impl std::future::Future<Output = T> + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>> {
    Box::pin(fut)
}
