//! Attaching images and text files to a message: a picked, pasted or dropped `File` becomes an
//! [`Attachment`] (`engine::attach` says whether it may, and the size an image is stored at); an
//! image is decoded and resized by the browser off the main thread (`shared::image`), hashed
//! (SHA-256, WebCrypto) and its Blob stored at once, content-addressed; a text file's text is read.
//! Also reads the Blobs back (a thumbnail, a request's images as base64), and frees the images no
//! message uses (one the composer let go of; the start-up sweep). Must not import `ui`.

use web_sys::{Blob, File};

use super::service::{Chat, ChatError};
use crate::engine::attach::{self, Intake};
use crate::engine::model::{Attachment, AttachmentKind};
use crate::session::shared::{digest, image, now};

/// An attachment made from a file, and its Blob (images) to show as a thumbnail.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub attachment: Attachment,
    pub blob: Option<Blob>,
}

async fn bytes_of(blob: &Blob) -> Result<Vec<u8>, ChatError> {
    digest::bytes_of(blob)
        .await
        .map_err(|e| ChatError::Invalid(format!("reading the file: {e}")))
}

async fn sha256(bytes: &[u8]) -> Result<String, ChatError> {
    digest::sha256_hex(bytes)
        .await
        .map_err(|e| ChatError::Invalid(format!("hashing: {e}")))
}

impl Chat {
    /// Makes an attachment of `file`; an image's Blob is stored at once (once per content).
    /// Refused (with words a user can act on) when `engine::attach::intake` says so.
    pub async fn attach(&self, file: File) -> Result<Prepared, ChatError> {
        let name = attach::short_name(&file.name());
        match attach::intake(&name, &file.type_(), file.size() as u64) {
            Intake::Refused(why) => Err(ChatError::Invalid(why)),
            Intake::Text => {
                let bytes = bytes_of(&file).await?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    ChatError::Invalid(format!(
                        "“{name}” is not UTF-8 text, so it cannot be attached."
                    ))
                })?;
                let attachment = Attachment {
                    kind: AttachmentKind::File,
                    mime: file.type_(),
                    size: text.len() as u64,
                    hash: sha256(text.as_bytes()).await?,
                    width: 0,
                    height: 0,
                    text,
                    name,
                };
                Ok(Prepared {
                    attachment,
                    blob: None,
                })
            }
            Intake::Image => {
                let image::Ready {
                    blob,
                    mime,
                    width,
                    height,
                } = image::stored_image(&file, &file.type_())
                    .await
                    .map_err(ChatError::Invalid)?;
                let hash = sha256(&bytes_of(&blob).await?).await?;
                self.core
                    .store
                    .put_attachment_blobs(&[(hash.clone(), mime.clone(), blob.clone())])
                    .await?;
                let attachment = Attachment {
                    kind: AttachmentKind::Image,
                    name,
                    mime,
                    size: blob.size() as u64,
                    hash,
                    width,
                    height,
                    text: String::new(),
                };
                Ok(Prepared {
                    attachment,
                    blob: Some(blob),
                })
            }
        }
    }

    /// Frees the stored image `hash` unless a message uses it (the composer let go of it:
    /// `engine::attach::let_go`).
    pub async fn release_image(&self, hash: &str) -> Result<(), ChatError> {
        Ok(self
            .core
            .store
            .free_attachment_blobs(&[hash.to_string()])
            .await?)
    }

    /// The start-up sweep: frees the stored images no message uses that are older than
    /// `engine::attach::UNUSED_GRACE_MS` (younger ones may be another tab's draft); how many.
    pub async fn sweep_unused_images(&self) -> Result<usize, ChatError> {
        Ok(self
            .core
            .store
            .sweep_attachment_blobs(now(), attach::UNUSED_GRACE_MS)
            .await?)
    }

    /// The stored Blob of an image (a sent message's thumbnail); `None` when it is not stored.
    pub async fn attachment_blob(&self, hash: &str) -> Result<Option<Blob>, ChatError> {
        let mut found = self
            .core
            .store
            .attachment_blobs(&[hash.to_string()])
            .await?;
        Ok(found.pop().flatten().map(|b| b.blob))
    }

    /// The bytes of each stored image among `hashes` (a request's images), by hash.
    pub(crate) async fn image_bytes(
        &self,
        hashes: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>, ChatError> {
        let mut out = std::collections::HashMap::new();
        if hashes.is_empty() {
            return Ok(out);
        }
        for b in self
            .core
            .store
            .attachment_blobs(hashes)
            .await?
            .into_iter()
            .flatten()
        {
            out.insert(b.hash.clone(), bytes_of(&b.blob).await?);
        }
        Ok(out)
    }
}
