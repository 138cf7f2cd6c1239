//! Importing any file the Import control accepts, our backup or another chat app's export (ZIP or
//! not): read, checked and shown as a preview (what the file holds, what is new here and what is
//! already here), then written in one transaction once the user confirms. Both halves run in
//! slices with a yield to the browser between them, reporting [`Local::ImportProgress`]
//! (reading -> checking -> writing), and stop at the next slice when cancelled (a cancelled write
//! is aborted: nothing is written). Detection, reading, every check, the plan and the slice sizes
//! are the engine's (`engine::import::slice`); this file reads the file's bytes and the clock,
//! looks up what is stored, yields and writes the plan. A backup's facts about the user are
//! written in the same transaction, joined once more with those stored at the confirm under the
//! facts' Web Lock (`engine::backup::join_user_facts`), so nothing forgotten since comes back.
//! A ChatGPT ZIP's images are resized and hashed as the engine hands them out while the file is
//! read (`shared::image`), and stored with a backup's at the confirm.
//! Must not import `ui`.

use super::service::{Transfer, TransferError};
use crate::engine::backup::{join_user_facts, ImageBlob, ImportLimits, ImportPlan};
use crate::engine::format::plural;
use crate::engine::import::slice::{
    FoundImage, Pace, Phase, Prepare, Prepared, Progress, StoredImage,
};
use crate::engine::import::{describe, describe_backup, ImportError, Source};
use crate::engine::project::join_all;
use crate::engine::tabs::Change;
use crate::session::shared::error::Boxed;
use crate::session::shared::events::Local;
use crate::session::shared::pace::{in_slices, perf_now, yield_now};
use crate::session::shared::{digest, image, now, tabs};
use crate::store::{StoreError, WritePace};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wasm_bindgen_futures::JsFuture;

/// Set to stop a running import at its next slice; nothing is written.
pub type ImportCancel = Arc<AtomicBool>;

/// What the notice says after a cancel.
const CANCELLED: &str = "Import cancelled: nothing was written.";

/// A file read, checked and planned, waiting for the user to confirm.
#[derive(Debug, Clone)]
pub struct PreparedImport {
    /// The plan the preview was made from, written as it is on confirm: planning again would
    /// repeat the lookups (and, at 10k messages, tens of ms) for the same answer. Anything stored
    /// since that it would collide with (another tab importing the same file) fails the write's
    /// `add`s, which aborts the transaction: nothing is written and the user is told to choose
    /// the file again.
    plan: ImportPlan,
    /// `None`: our own backup.
    source: Option<Source>,
    /// What the preview shows: what was found, what was left out and why, what is new here.
    pub preview: String,
    /// What the file brings that acts beyond its own messages, a line per kind (shared
    /// entities, system prompts and models, project instructions, system messages:
    /// `engine::backup::ImportReach`), listed before the user confirms.
    pub reach: Vec<String>,
    pub file_name: String,
    /// The images' bytes a backup carries, stored (each checked against its hash) before the
    /// import is written.
    images: Vec<ImageBlob>,
}

/// What reading a file led to.
pub enum ImportStep {
    /// Read and checked, waiting for confirmation.
    Preview(PreparedImport),
    /// Cancelled while it was read; the notice for the user.
    Cancelled(String),
}

impl Transfer {
    /// Reads a chosen file, checks it a slice at a time and prepares its preview (our backup as
    /// much as another app's export). Errors name the file.
    pub async fn open_import(
        &self,
        file: web_sys::File,
        cancel: &ImportCancel,
    ) -> Result<ImportStep, TransferError> {
        open_import_split(self, file, cancel).await
    }

    async fn open_import_now(
        &self,
        file: web_sys::File,
        cancel: &ImportCancel,
    ) -> Result<ImportStep, TransferError> {
        let name = file.name();
        let named = |e: String| TransferError::Invalid(format!("{name}: {e}"));
        let limits = ImportLimits::default();
        let size = file.size();
        if size > limits.max_bytes as f64 {
            return Err(named(
                ImportError::TooLarge {
                    size: size as usize,
                    limit: limits.max_bytes,
                }
                .to_string(),
            ));
        }
        self.import_progress(Phase::Reading, 0, size as u64);
        let buf = JsFuture::from(file.array_buffer()).await.map_err(|e| {
            named(format!(
                "Could not read the file: {}",
                crate::transport::js_text(e)
            ))
        })?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        self.import_progress(Phase::Reading, size as u64, size as u64);
        let (prepared, zip_images) = match self.prepare_sliced(bytes, &limits, cancel).await {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(ImportStep::Cancelled(CANCELLED.into())),
            Err(e) => return Err(named(e.to_string())),
        };
        let (checked, source, mut preview) = match prepared {
            Prepared::Backup(c) => {
                let text = describe_backup(&c);
                (c, None, text)
            }
            Prepared::Foreign { imported, checked } => {
                (checked, Some(imported.source), describe(&imported))
            }
        };
        // What is already here, for the preview (and the plan the confirm writes).
        let existing = self.core.store.existing_ids_for(&checked).await?;
        if cancel.load(Ordering::Relaxed) {
            return Ok(ImportStep::Cancelled(CANCELLED.into()));
        }
        let mut images = checked.images();
        images.extend(zip_images);
        let plan = checked.plan(&existing).map_err(|e| named(e.to_string()))?;
        preview.push_str(&format!(
            " New here: {} and {}; already here: {}.",
            plural(plan.added.conversations, "conversation", "conversations"),
            plural(plan.added.messages, "message", "messages"),
            plural(plan.skipped.messages, "message", "messages")
        ));
        if let Some(facts) = plan.facts_preview() {
            preview.push(' ');
            preview.push_str(&facts);
        }
        if let Some(projects) = plan.projects_preview() {
            preview.push(' ');
            preview.push_str(&projects);
        }
        Ok(ImportStep::Preview(PreparedImport {
            images,
            reach: plan.reach().lines(),
            plan,
            source,
            preview,
            file_name: name,
        }))
    }

    /// Writes a confirmed import in one transaction (all of it or nothing), the plan its preview
    /// showed, its messages in slices; a cancel aborts it. Returns the report for the user and
    /// the ids of the conversations written.
    pub async fn confirm_import(
        &self,
        p: PreparedImport,
        cancel: &ImportCancel,
    ) -> Result<(String, Vec<String>), TransferError> {
        confirm_import_split(self, p, cancel).await
    }

    async fn confirm_import_now(
        &self,
        p: PreparedImport,
        cancel: &ImportCancel,
    ) -> Result<(String, Vec<String>), TransferError> {
        let mut plan = p.plan;
        // Facts about the user change in other tabs too: the write runs under their lock, the
        // plan's joined again with those stored now (a fact forgotten since the preview stays so).
        let _facts_lock = self.join_facts_now(&mut plan).await?;
        let _projects_lock = self.join_projects_now(&mut plan).await?;
        // The images first: a Blob no message uses yet harms nothing, a message without its
        // image would show none.
        self.store_images(&p.images, &p.file_name).await?;
        let mut pace = Paced {
            session: self,
            pace: Pace::write(),
            cancel,
            started: 0.0,
        };
        let written = match self.core.store.write_import_paced(&plan, &mut pace).await {
            Err(StoreError::Cancelled) => return Ok((CANCELLED.into(), Vec::new())),
            Err(e) if e.is_conflict() => {
                return Err(TransferError::Invalid(format!(
                    "{}: some of it was stored since the preview (in another tab?), so nothing \
                     was written. Choose the file again to import what is new.",
                    p.file_name
                )))
            }
            other => other?,
        };
        if p.source.is_none() {
            self.core.note_alternatives(&plan.messages).await?;
        }
        self.core.cache.borrow_mut().forget_all();
        if !plan.user_facts.is_empty() {
            self.core.emit(Change::UserFacts);
        }
        if !plan.projects.is_empty() {
            self.core.emit(Change::Projects);
        }
        let ids = written.iter().map(|c| c.id.clone()).collect();
        self.announce(written).await;
        let Some(source) = p.source else {
            return Ok((plan.report(), ids));
        };
        let report = format!(
            "Imported {} and {} from {}; {} already here. Settings and API keys were not imported.",
            plural(plan.added.conversations, "conversation", "conversations"),
            plural(plan.added.messages, "message", "messages"),
            source.name(),
            plural(plan.skipped.messages, "message was", "messages were")
        );
        Ok((report, ids))
    }

    /// Stores a backup's images, each only if its bytes hash to the key it came under (a file
    /// that lies about one is refused whole, before anything is written).
    async fn store_images(&self, images: &[ImageBlob], file: &str) -> Result<(), TransferError> {
        let mut blobs = Vec::with_capacity(images.len());
        for i in images {
            let bad = |e: String| TransferError::Invalid(format!("{file}: {e}"));
            if digest::sha256_hex(&i.bytes).await.map_err(bad)? != i.hash {
                return Err(bad(format!(
                    "the image stored under {} does not hold the bytes its name says, so nothing was imported",
                    &i.hash[..12]
                )));
            }
            blobs.push((
                i.hash.clone(),
                i.mime.clone(),
                digest::blob_of(&i.bytes, &i.mime).map_err(bad)?,
            ));
        }
        if !blobs.is_empty() {
            self.core.store.put_attachment_blobs(&blobs).await?;
        }
        Ok(())
    }

    /// Joins the plan's facts about the user with those stored now, under the facts' lock, which
    /// the caller holds until the write is done (none when the plan has no facts).
    async fn join_facts_now(
        &self,
        plan: &mut ImportPlan,
    ) -> Result<Option<tabs::LockGuard>, TransferError> {
        if plan.user_facts.is_empty() {
            return Ok(None);
        }
        let store = &self.core.store;
        let lock = tabs::lock_user_facts(store.name()).await;
        plan.user_facts = join_user_facts(&store.load_user_facts().await?, &plan.user_facts).write;
        Ok(Some(lock))
    }

    /// Joins the plan's projects with those stored now, under the projects' lock, which the caller
    /// holds until the write is done (none when the plan has no projects): a project deleted since
    /// the preview stays deleted.
    async fn join_projects_now(
        &self,
        plan: &mut ImportPlan,
    ) -> Result<Option<tabs::LockGuard>, TransferError> {
        if plan.projects.is_empty() {
            return Ok(None);
        }
        let store = &self.core.store;
        let lock = tabs::lock_projects(store.name()).await;
        plan.projects = join_all(&store.load_projects().await?, &plan.projects);
        Ok(Some(lock))
    }

    /// Reads and checks a file's bytes a slice at a time, timing each slice for the engine's pace,
    /// reporting progress and yielding between slices; `None` once cancelled. A ZIP's images the
    /// engine hands out on the way are made ready as a composer's ([`ready_image`]) and come back
    /// with the result, to be stored at the confirm.
    async fn prepare_sliced(
        &self,
        bytes: Vec<u8>,
        limits: &ImportLimits,
        cancel: &ImportCancel,
    ) -> Result<Option<(Prepared, Vec<ImageBlob>)>, ImportError> {
        let mut prepare = Prepare::new(bytes, now(), limits);
        let mut last = None;
        let mut images: Vec<ImageBlob> = Vec::new();
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let t0 = perf_now();
            let step = prepare.step(last)?;
            last = Some(perf_now() - t0);
            if let Some(done) = step {
                return Ok(Some((done, images)));
            }
            while let Some(found) = prepare.take_image() {
                let ready = ready_image(&found).await;
                let stored = ready.as_ref().map(|(s, _)| s.clone());
                prepare.give_image(&found.id, stored);
                if let Some((_, blob)) = ready {
                    if !images.iter().any(|i| i.hash == blob.hash) {
                        images.push(blob);
                    }
                }
            }
            self.core.emit(Local::ImportProgress(prepare.progress()));
            yield_now().await;
        }
    }

    /// The conversations written, one event per slice (each updates the sidebar once and goes to
    /// the other tabs as one message), with a yield between slices: thousands of conversations
    /// one event each cost the UI after a 500-conversation import ~40-150 ms.
    async fn announce(&self, written: Vec<crate::engine::model::Conversation>) {
        in_slices(&mut Pace::announce(), written.into_iter(), |slice| {
            self.core.emit(Change::Conversations(slice.collect()));
            true
        })
        .await;
    }

    fn import_progress(&self, phase: Phase, done: u64, total: u64) {
        self.core
            .emit(Local::ImportProgress(Progress { phase, done, total }));
    }
}

/// An image of a ZIP as a composer's would be stored (resized by the browser, off the main
/// thread, then hashed), and its bytes to store at the confirm; `None` when the browser cannot
/// decode it (the messages keep its placeholder).
async fn ready_image(found: &FoundImage) -> Option<(StoredImage, ImageBlob)> {
    let blob = digest::blob_of(&found.bytes, found.mime).ok()?;
    let ready = image::stored_image(&blob, &found.id, found.mime)
        .await
        .ok()?;
    let bytes = digest::bytes_of(&ready.blob).await.ok()?;
    let hash = digest::sha256_hex(&bytes).await.ok()?;
    let stored = StoredImage {
        hash: hash.clone(),
        mime: ready.mime.clone(),
        size: bytes.len() as u64,
        width: ready.width,
        height: ready.height,
    };
    Some((
        stored,
        ImageBlob {
            hash,
            mime: ready.mime,
            bytes,
        },
    ))
}

/// Split point `import` (scripts/build-wasm.sh): reading, checking and previewing a file, and
/// everything only it reaches (the readers, ZIP, checks, plan), is in the import chunk, fetched on
/// first use; a failed fetch is a [`TransferError::Unavailable`], and the next try fetches again.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(import, fallible, return_wrapper(let future = _; { future.await } -> Result<ImportStep, TransferError>)))]
fn open_import_split<'a>(
    session: &'a Transfer,
    file: web_sys::File,
    cancel: &'a ImportCancel,
) -> Boxed<'a, ImportStep, TransferError> {
    Box::pin(session.open_import_now(file, cancel))
}

/// Split point `import`: the confirmed write (plan, the paced transaction, the announcements).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(import, fallible, return_wrapper(let future = _; { future.await } -> Result<(String, Vec<String>), TransferError>)))]
fn confirm_import_split<'a>(
    session: &'a Transfer,
    p: PreparedImport,
    cancel: &'a ImportCancel,
) -> Boxed<'a, (String, Vec<String>), TransferError> {
    Box::pin(session.confirm_import_now(p, cancel))
}

/// The write's slices: sized by the engine's pace from the time each took, stopped by a cancel,
/// each reported as progress.
struct Paced<'a> {
    session: &'a Transfer,
    pace: Pace,
    cancel: &'a ImportCancel,
    started: f64,
}

impl WritePace for Paced<'_> {
    fn next(&mut self, done: usize, total: usize) -> Option<usize> {
        if self.cancel.load(Ordering::Relaxed) {
            return None;
        }
        self.session
            .import_progress(Phase::Writing, done as u64, total as u64);
        self.started = perf_now();
        Some(self.pace.size())
    }

    fn issued(&mut self, n: usize) {
        self.pace.observe(n, perf_now() - self.started);
    }
}
