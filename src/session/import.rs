//! Importing any file the Import control accepts: our backup (written at once, as before) or another
//! chat app's export, ZIP or not (read and checked by `engine::import`, shown as a preview, written
//! in one transaction only once the user confirms). Detection, reading and every check are the
//! engine's; this file reads the file's bytes, looks up what is stored and writes the plan.
//! Must not import `ui`.

use super::{now, Session, SessionError, SessionEvent};
use crate::engine::backup::{CheckedImport, ImportLimits};
use crate::engine::format::plural;
use crate::engine::import::{describe, detect, to_checked, Detected, Source};
use wasm_bindgen_futures::JsFuture;

/// Another app's export, read and checked, waiting for the user to confirm.
#[derive(Debug, Clone)]
pub struct PreparedImport {
    checked: CheckedImport,
    source: Source,
    /// What the preview shows: what was found, what was left out and why, what is new here.
    pub preview: String,
    pub file_name: String,
}

/// What reading a file led to.
pub enum ImportStep {
    /// A Memoire backup, already written; the report for the user.
    Written(String),
    /// Another app's export, waiting for confirmation.
    Preview(PreparedImport),
}

impl Session {
    /// Reads a chosen file and either imports it (a Memoire backup) or prepares its preview
    /// (another app's export). Errors name the file.
    pub async fn open_import(&self, file: web_sys::File) -> Result<ImportStep, SessionError> {
        let name = file.name();
        let named = |e: String| SessionError::Invalid(format!("{name}: {e}"));
        let limits = ImportLimits::default();
        if file.size() > limits.max_bytes as f64 {
            return Err(named(
                crate::engine::import::ImportError::TooLarge {
                    size: file.size() as usize,
                    limit: limits.max_bytes,
                }
                .to_string(),
            ));
        }
        let buf = JsFuture::from(file.array_buffer()).await.map_err(|e| {
            named(format!(
                "Could not read the file: {}",
                crate::transport::js_text(e)
            ))
        })?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        match detect(&bytes, &limits).map_err(|e| named(e.to_string()))? {
            Detected::Backup(checked) => Ok(ImportStep::Written(
                self.import_checked(checked)
                    .await
                    .map_err(|e| named(e.to_string()))?,
            )),
            Detected::Foreign(imported) => {
                let checked =
                    to_checked(&imported, now(), &limits).map_err(|e| named(e.to_string()))?;
                // What is already here, for the preview (planned again on confirm).
                let existing = self.store.existing_ids_for(&checked).await?;
                let plan = checked.clone().plan(&existing)?;
                let mut preview = describe(&imported);
                preview.push_str(&format!(
                    " New here: {} and {}; already here: {}.",
                    plural(plan.added.conversations, "conversation", "conversations"),
                    plural(plan.added.messages, "message", "messages"),
                    plural(plan.skipped.messages, "message", "messages")
                ));
                Ok(ImportStep::Preview(PreparedImport {
                    checked,
                    source: imported.source,
                    preview,
                    file_name: name,
                }))
            }
        }
    }

    /// Writes a confirmed import in one transaction (all of it or nothing), planned against what is
    /// stored now. Returns the report for the user and the ids of the conversations written.
    pub async fn confirm_import(
        &self,
        p: PreparedImport,
    ) -> Result<(String, Vec<String>), SessionError> {
        let existing = self.store.existing_ids_for(&p.checked).await?;
        let plan = p
            .checked
            .plan(&existing)
            .map_err(|e| SessionError::Invalid(format!("{}: {e}", p.file_name)))?;
        let written = self.store.write_import(&plan).await?;
        self.cache.borrow_mut().forget_all();
        let ids = written.iter().map(|c| c.id.clone()).collect();
        for c in written {
            self.emit(SessionEvent::ConversationChanged(c));
        }
        let skipped = plan.skipped.messages;
        let report = format!(
            "Imported {} and {} from {}; {} already here. Settings and API keys were not imported.",
            plural(plan.added.conversations, "conversation", "conversations"),
            plural(plan.added.messages, "message", "messages"),
            p.source.name(),
            plural(skipped, "message was", "messages were")
        );
        Ok((report, ids))
    }
}
