//! The settings store: the settings in force (changed only by the session's `Change::Settings`, here
//! or from another tab), whether the settings dialog is open, and the endpoint's model list for the
//! header's picker. Its signals are private: views read them and call its actions, each action
//! making one session call through the backend. Must not import `crate::store` or
//! `crate::transport`, nor another store.

use super::tools::ToolsStore;
use crate::engine::model::MemoryOverrides;
use crate::engine::settings::Settings;
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// The endpoint's models, for the header's model picker (listed when it is first opened).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ModelList {
    /// Not listed yet (or the settings changed since).
    #[default]
    Unknown,
    /// Being listed.
    Loading,
    /// The models the endpoint offers.
    Loaded(Vec<String>),
    /// Listing failed; the text says why.
    Failed(String),
}

/// The settings in force, the dialog, the model list. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct SettingsStore {
    backend: Backend,
    settings: RwSignal<Settings>,
    dialog_open: RwSignal<bool>,
    /// The endpoint's models (the header's picker); listed again after settings change.
    models: RwSignal<ModelList>,
}

impl SettingsStore {
    /// The built-in settings until the saved ones are read.
    pub fn new(backend: Backend) -> Self {
        SettingsStore {
            backend,
            settings: RwSignal::new(Settings::builtin()),
            dialog_open: RwSignal::new(false),
            models: RwSignal::new(ModelList::Unknown),
        }
    }

    /// Reads the settings in force (tracked: inside a reactive closure it re-runs on a change).
    pub fn with_settings<R>(&self, f: impl FnOnce(&Settings) -> R) -> R {
        self.settings.with(f)
    }

    /// Settings → Tools' own store, over the same backend (made when that section mounts).
    pub fn tools(&self) -> ToolsStore {
        ToolsStore::new(self.backend)
    }

    /// Whether the settings dialog is open.
    pub fn dialog_open(&self) -> bool {
        self.dialog_open.get()
    }

    /// The endpoint's models, as far as they are listed.
    pub fn models(&self) -> ModelList {
        self.models.get()
    }

    /// The database is open: the saved settings are the ones in force.
    pub fn load(&self) {
        if let Some(s) = self.backend.session() {
            self.settings.set(s.preferences().current());
        }
    }

    /// Opens the settings dialog.
    pub fn open_dialog(&self) {
        self.dialog_open.set(true);
    }

    /// Closes the settings dialog.
    pub fn close_dialog(&self) {
        self.dialog_open.set(false);
    }

    /// Saved settings (here or in another tab): the model list is asked again when needed.
    pub fn changed(&self, settings: Settings) {
        self.settings.set(settings);
        self.models.set(ModelList::Unknown);
    }

    /// Asks the endpoint for its models for the header's picker (the path Settings' "Test
    /// connection" takes), unless they are listed or being listed.
    pub fn load_models(&self) {
        let models = self.models;
        if models.with_untracked(|m| matches!(m, ModelList::Loading | ModelList::Loaded(_))) {
            return;
        }
        models.set(ModelList::Loading);
        let settings = self.settings.get_untracked();
        self.backend.run(move |s| async move {
            models.set(match s.preferences().test_connection(&settings).await {
                Ok(found) => ModelList::Loaded(found),
                Err(e) => ModelList::Failed(e.to_string()),
            });
            Ok(())
        });
    }

    /// Validates and saves settings, and a conversation's overrides when given (`(id, overrides)`);
    /// `on_done` hears how it went. The settings in force change through the session's
    /// `Change::Settings`.
    pub fn save(
        &self,
        settings: Settings,
        overrides: Option<(String, MemoryOverrides)>,
        on_done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        self.backend.run(move |s| async move {
            let mut r = s
                .preferences()
                .save_settings(settings)
                .await
                .map_err(crate::session::SessionError::from);
            if let (Ok(()), Some((id, o))) = (&r, overrides) {
                r = s
                    .library()
                    .set_overrides(&id, o)
                    .await
                    .map_err(crate::session::SessionError::from);
            }
            on_done(r.map_err(|e| e.to_string()));
            Ok(())
        });
    }

    /// Asks the endpoint of `settings` for its models; `on_done` gets them or what went wrong.
    pub fn test_connection(
        &self,
        settings: Settings,
        on_done: impl FnOnce(Result<Vec<String>, String>) + 'static,
    ) {
        self.backend.run(move |s| async move {
            on_done(
                s.preferences()
                    .test_connection(&settings)
                    .await
                    .map_err(|e| e.to_string()),
            );
            Ok(())
        });
    }
}
