//! The composer's attachments (picked, pasted or dropped; shown as thumbnails and chips, removable
//! until sent) and the thumbnails of sent images (object URLs of their stored Blobs, made once per
//! image and kept while the page lives). A removed image is freed unless a message uses it; the
//! start-up sweep frees the older ones no message uses. Its signals are private; the composer's
//! store (`composer.rs`) uses it.
//! Must not import `crate::store` or `crate::transport`.

use std::collections::HashMap;

use crate::engine::model::{Attachment, AttachmentKind};
use crate::session::Prepared;
use crate::ui::backend::Backend;
use leptos::prelude::*;

/// One attachment in the composer: what will be sent, and its thumbnail's URL (images).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingFile {
    pub attachment: Attachment,
    pub url: Option<String>,
}

/// The composer's attachments and the sent images' thumbnails.
#[derive(Clone, Copy)]
pub struct Pending {
    files: RwSignal<Vec<PendingFile>>,
    /// Files being prepared (read, resized, hashed, stored).
    busy: RwSignal<u32>,
    /// Object URLs of stored images, by hash.
    thumbs: RwSignal<HashMap<String, String>>,
}

/// A thumbnail's place when its image was not stored here (another device's, not synced yet).
const ABSENT: &str = "-";

fn object_url(blob: &web_sys::Blob) -> Option<String> {
    web_sys::Url::create_object_url_with_blob(blob).ok()
}

impl Pending {
    pub fn new() -> Self {
        Pending {
            files: RwSignal::new(Vec::new()),
            busy: RwSignal::new(0),
            thumbs: RwSignal::new(HashMap::new()),
        }
    }

    /// True while nothing is attached (tracked).
    pub fn is_empty(&self) -> bool {
        self.files.with(Vec::is_empty)
    }

    /// Takes what is attached for sending (the thumbnails' URLs stay with the sent images).
    pub fn take(&self) -> Vec<Attachment> {
        let files = self.files.try_update(std::mem::take).unwrap_or_default();
        self.thumbs.update(|t| {
            for f in &files {
                if let Some(url) = &f.url {
                    t.entry(f.attachment.hash.clone())
                        .or_insert_with(|| url.clone());
                }
            }
        });
        files.into_iter().map(|f| f.attachment).collect()
    }
}

impl Pending {
    /// The composer's attachments, in order.
    pub fn with_files<R>(&self, f: impl FnOnce(&[PendingFile]) -> R) -> R {
        self.files.with(|v| f(v))
    }

    /// True while a file is being prepared.
    pub fn attaching(&self) -> bool {
        self.busy.get() > 0
    }

    /// Attaches `files` (picked, pasted or dropped): each is prepared by the session (an image
    /// resized and stored); one that cannot be attached says why in the banner.
    pub fn attach(&self, backend: Backend, files: Vec<web_sys::File>) {
        for file in files {
            let pending = *self;
            pending.busy.update(|n| *n += 1);
            backend.run(move |s| async move {
                let made = s.chat().attach(file).await;
                pending.busy.update(|n| *n = n.saturating_sub(1));
                let Prepared { attachment, blob } = made?;
                let url = blob.as_ref().and_then(object_url);
                pending.files.update(|v| {
                    let taken = v.len() >= crate::engine::attach::MAX_ATTACHMENTS;
                    if !taken {
                        v.push(PendingFile { attachment, url });
                    }
                });
                Ok(())
            });
        }
    }

    /// Removes the `i`-th attachment from the composer; its stored image is freed unless a
    /// message uses it or the composer still holds it (`engine::attach::let_go`).
    pub fn remove(&self, backend: Backend, i: usize) {
        let mut freed = None;
        self.files.update(|v| {
            if i < v.len() {
                let gone = v.remove(i);
                let held: Vec<Attachment> = v.iter().map(|f| f.attachment.clone()).collect();
                freed = crate::engine::attach::let_go(&gone.attachment, &held);
                let shown = self
                    .thumbs
                    .with_untracked(|t| t.contains_key(&gone.attachment.hash));
                if let (Some(url), false) = (gone.url, shown) {
                    let _ = web_sys::Url::revoke_object_url(&url);
                }
            }
        });
        if let (Some(hash), Some(s)) = (freed, backend.session()) {
            leptos::task::spawn_local(async move {
                let _ = s.chat().release_image(&hash).await;
            });
        }
    }

    /// Frees the stored images no message uses past their grace, quietly (housekeeping at
    /// start-up idle: a failure leaves them for the next start).
    pub fn sweep_unused(&self, backend: Backend) {
        if let Some(s) = backend.session() {
            leptos::task::spawn_local(async move {
                let _ = s.chat().sweep_unused_images().await;
            });
        }
    }

    /// Reads again the sent images that were not stored here when last asked for (sync may have
    /// brought them since: it reports their conversation's `BranchChanged`).
    pub fn retry_absent(&self) {
        if self
            .thumbs
            .with_untracked(|t| t.values().any(|u| u == ABSENT))
        {
            self.thumbs.update(|t| t.retain(|_, u| u != ABSENT));
        }
    }

    /// The thumbnail URL of a sent image (tracked): read from the store the first time it is
    /// asked for; `None` until then, or when the image is not stored (another device's message).
    pub fn thumbnail(&self, backend: Backend, a: &Attachment) -> Option<String> {
        if a.kind != AttachmentKind::Image {
            return None;
        }
        if let Some(url) = self.thumbs.with(|t| t.get(&a.hash).cloned()) {
            // An empty URL: being read; `ABSENT`: not stored here when last read.
            return Some(url).filter(|u| !u.is_empty() && u != ABSENT);
        }
        let (thumbs, hash) = (self.thumbs, a.hash.clone());
        thumbs.update_untracked(|t| {
            t.insert(hash.clone(), String::new());
        });
        if let Some(s) = backend.session() {
            leptos::task::spawn_local(async move {
                if let Ok(Some(blob)) = s.chat().attachment_blob(&hash).await {
                    if let Some(url) = object_url(&blob) {
                        thumbs.update(|t| {
                            t.insert(hash, url);
                        });
                    }
                } else {
                    thumbs.update_untracked(|t| {
                        t.insert(hash, ABSENT.to_string());
                    });
                }
            });
        }
        None
    }
}
