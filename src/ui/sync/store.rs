//! The sync store: sync's state in this tab as the session reports it (the sidebar's indicator),
//! and the Settings section's actions (read the saved sync settings, save them, test a connection).
//! Its signal is private: views read it and call its actions. Must not import `crate::store` or
//! `crate::transport`, nor another store.

use crate::session::{SyncSettings, SyncView};
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// Sync in this tab. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct SyncStore {
    backend: Backend,
    /// Sync's state in this tab (`None` until the session reports it).
    view: RwSignal<Option<SyncView>>,
}

impl SyncStore {
    /// Nothing reported yet.
    pub fn new(backend: Backend) -> Self {
        SyncStore {
            backend,
            view: RwSignal::new(None),
        }
    }

    /// Reads sync's state in this tab, as last reported (tracked).
    pub fn with_view<R>(&self, f: impl FnOnce(&Option<SyncView>) -> R) -> R {
        self.view.with(f)
    }

    /// The session reported sync's state (`SyncStatus`).
    pub fn reported(&self, v: SyncView) {
        self.view.set(Some(v));
    }

    /// The saved sync settings (`None` while the database opens).
    pub fn saved(&self) -> Option<SyncSettings> {
        self.backend.session().map(|s| s.sync().settings())
    }

    /// The origin the saved sync password belongs to ("" while the database opens).
    pub fn password_origin(&self) -> String {
        self.backend
            .session()
            .map(|s| s.sync().password_origin())
            .unwrap_or_default()
    }

    /// Saves sync settings (`password`: `None` keeps the saved one for its own origin;
    /// `passphrase`: the encryption passphrase, checked first) and restarts sync.
    pub fn save(
        &self,
        settings: SyncSettings,
        password: Option<String>,
        passphrase: Option<String>,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        self.backend.run(move |s| async move {
            on_done(
                s.sync()
                    .save(settings, password, passphrase)
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }

    /// Changes the encryption passphrase from `current` to `new` (sync then seals every document
    /// again, its progress in the sync status): `Err` says why not.
    pub fn change_passphrase(
        &self,
        current: String,
        new: String,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        self.backend.run(move |s| async move {
            on_done(
                s.sync()
                    .change_passphrase(current, new)
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }

    /// "Test connection" with these settings: `Err` says what to fix.
    pub fn test(
        &self,
        settings: SyncSettings,
        password: Option<String>,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        self.backend.run(move |s| async move {
            on_done(
                s.sync()
                    .test(&settings, password.as_deref())
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }
}
