//! The transfer store: exports (a conversation as JSON or Markdown, or everything), an import from
//! its reading to its confirmation (progress with Cancel, then the preview), and the storage figure
//! Settings shows. Its signals are private: views read them and call its actions, each making its
//! session calls through the backend. An import's outcome goes to the banner's notice, and the ids it
//! wrote to the caller (`ui/flow.rs`: the memory's build offer). Must not import `crate::store` or `crate::transport`.

use crate::engine::format::export_file_name;
use crate::engine::import::slice::{Phase, Progress};
use crate::session::{ImportCancel, ImportStep, PreparedImport, StorageInfo};
use crate::ui::backend::Backend;
use crate::ui::behaviour::save_file;
use crate::ui::time::now_ms;
use leptos::prelude::*;
use std::sync::atomic::Ordering;

/// What to export.
#[derive(Clone, Copy, PartialEq)]
pub enum Export {
    /// The open conversation, as a backup file.
    ConversationJson,
    /// The open conversation, as Markdown to read.
    ConversationMarkdown,
    /// Every conversation and its memory.
    Everything,
}

/// Where an import stands.
#[derive(Clone, Default)]
pub enum ImportState {
    /// No import.
    #[default]
    Idle,
    /// A file is being read or written: how far it is, and the switch its Cancel sets.
    Running(Progress, ImportCancel),
    /// A file read and checked, waiting for the user to confirm.
    Preview(PreparedImport),
}

/// Export, import, storage. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct TransferStore {
    backend: Backend,
    import: RwSignal<ImportState>,
    /// How much the browser stores and may store (`None` until measured).
    storage: RwSignal<Option<StorageInfo>>,
}

impl TransferStore {
    /// No import, storage not measured yet.
    pub fn new(backend: Backend) -> Self {
        TransferStore {
            backend,
            import: RwSignal::new(ImportState::Idle),
            storage: RwSignal::new(None),
        }
    }

    /// Reads where the import stands (never cloned: a preview holds every record of the file).
    pub fn with_import<R>(&self, f: impl FnOnce(&ImportState) -> R) -> R {
        self.import.with(f)
    }

    /// The storage figure, once measured.
    pub fn storage(&self) -> Option<StorageInfo> {
        self.storage.get()
    }

    /// Exports conversation `id` (the open one, titled `title`) or everything as a file download,
    /// named after the conversation and the day.
    pub fn export(&self, what: Export, id: Option<String>, title: Option<String>) {
        self.backend.run(move |s| async move {
            let now = now_ms();
            let (name, mime, text) = match (what, id) {
                (Export::ConversationMarkdown, Some(id)) => (
                    export_file_name(title.as_deref(), now, "md"),
                    "text/markdown",
                    s.transfer().export_markdown(&id).await?,
                ),
                (Export::ConversationJson, Some(id)) => (
                    export_file_name(title.as_deref(), now, "json"),
                    "application/json",
                    s.transfer().export_json(Some(&id)).await?,
                ),
                _ => (
                    export_file_name(None, now, "json"),
                    "application/json",
                    s.transfer().export_json(None).await?,
                ),
            };
            save_file(&name, mime, &text);
            Ok(())
        });
    }

    /// Reads a backup or another app's export and holds it for the user to confirm, showing its
    /// progress meanwhile. New conversations arrive as session events.
    pub fn import_file(&self, file: web_sys::File) {
        let cancel = self.start_import();
        let (import, backend) = (self.import, self.backend);
        self.backend.run(move |s| async move {
            let step = s.transfer().open_import(file, &cancel).await;
            import.set(ImportState::Idle);
            match step? {
                ImportStep::Preview(p) => import.set(ImportState::Preview(p)),
                ImportStep::Cancelled(notice) => backend.notify(notice),
            }
            Ok(())
        });
    }

    /// Writes the import waiting for confirmation, showing its progress; `written` hears the ids of
    /// the conversations it wrote.
    pub fn confirm_import(&self, written: impl FnOnce(Vec<String>) + 'static) {
        // Taken, not cloned: a preview holds every record of the file.
        let taken = self.import.try_update_untracked(std::mem::take);
        let p = match taken {
            Some(ImportState::Preview(p)) => p,
            Some(other) => return self.import.set(other),
            None => return,
        };
        let cancel = self.start_import();
        let (import, backend) = (self.import, self.backend);
        self.backend.run(move |s| async move {
            let done = s.transfer().confirm_import(p, &cancel).await;
            import.set(ImportState::Idle);
            let (report, ids) = done?;
            backend.notify(report);
            written(ids);
            Ok(())
        });
    }

    /// The import shows as running (reading, before any progress arrives); its Cancel's switch.
    fn start_import(&self) -> ImportCancel {
        let cancel = ImportCancel::default();
        let reading = Progress {
            phase: Phase::Reading,
            done: 0,
            total: 0,
        };
        self.import
            .set(ImportState::Running(reading, cancel.clone()));
        cancel
    }

    /// Cancel on the preview (nothing was written) or on a running import (it stops at its next
    /// slice and writes nothing).
    pub fn cancel_import(&self) {
        match self.import.get_untracked() {
            ImportState::Running(_, cancel) => cancel.store(true, Ordering::Relaxed),
            ImportState::Preview(_) => self.import.set(ImportState::Idle),
            ImportState::Idle => {}
        }
    }

    /// How far the running import is (`ImportProgress`).
    pub fn progress(&self, p: Progress) {
        self.import.update(|i| {
            if let ImportState::Running(progress, _) = i {
                *progress = p;
            }
        });
    }

    /// Measures the storage again.
    pub fn refresh_storage(&self) {
        let storage = self.storage;
        self.backend.run(move |s| async move {
            storage.set(Some(s.preferences().storage().await?));
            Ok(())
        });
    }
}
