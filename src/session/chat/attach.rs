//! Attaching images, text files and PDFs to a message: a picked, pasted or dropped `File` becomes an
//! [`Attachment`] (`engine::attach` says whether it may, and the size an image is stored at); an
//! image is decoded and resized by the browser off the main thread (`shared::image`), hashed
//! (SHA-256, WebCrypto) and its Blob stored at once, content-addressed; a text file's text is read;
//! a PDF's text is read by `engine::pdf` a page at a time, yielding to the browser between slices.
//! What only attaching reaches is behind split point `attach` (images and text files) or `pdf` (the
//! PDF reader), wasm chunks fetched the first time a file of the kind is attached; a chunk that
//! cannot be fetched is [`ChatError::Unavailable`]. Also reads the Blobs back (a thumbnail, a
//! request's images as base64), which stays in the main wasm, and frees the images no message uses
//! (one the composer let go of; the start-up sweep). Must not import `ui`.

use web_sys::{Blob, File};

use super::service::{Chat, ChatError};
use crate::engine::attach::{self, Intake};
use crate::engine::model::{Attachment, AttachmentKind};
use crate::engine::pdf;
use crate::session::shared::error::Boxed;
use crate::session::shared::{digest, image, now, pace};

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
    /// Refused (with words a user can act on) when `engine::attach::intake` says so, or when a
    /// PDF gives no text (`engine::pdf`).
    pub async fn attach(&self, file: File) -> Result<Prepared, ChatError> {
        let name = attach::short_name(&file.name());
        match attach::intake(&name, &file.type_(), file.size() as u64) {
            Intake::Refused(why) => Err(ChatError::Invalid(why)),
            Intake::Pdf => pdf_split(file, name).await,
            Intake::Text => attach_split(self, file, name, false).await,
            Intake::Image => attach_split(self, file, name, true).await,
        }
    }

    /// An image (stored at once) or a text file (read) as an attachment.
    async fn attach_now(
        &self,
        file: File,
        name: String,
        image: bool,
    ) -> Result<Prepared, ChatError> {
        if !image {
            let bytes = bytes_of(&file).await?;
            let text = String::from_utf8(bytes).map_err(|_| {
                ChatError::Invalid(format!(
                    "“{name}” is not UTF-8 text, so it cannot be attached."
                ))
            })?;
            return text_attachment(name, file.type_(), text).await;
        }
        let image::Ready {
            blob,
            mime,
            width,
            height,
        } = image::stored_image(&file, &name, &file.type_())
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

/// A file attachment holding `text` (a text file's, or a PDF's as `engine::pdf` read it).
async fn text_attachment(name: String, mime: String, text: String) -> Result<Prepared, ChatError> {
    let attachment = Attachment {
        kind: AttachmentKind::File,
        mime,
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

/// Split point `attach` (scripts/build-wasm.sh): reading a text file, and decoding, resizing,
/// encoding, hashing and storing an image, in the attach chunk fetched on first use; a failed
/// fetch is a [`ChatError::Unavailable`], and the next try fetches again.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(attach, fallible, return_wrapper(let future = _; { future.await } -> Result<Prepared, ChatError>)))]
fn attach_split(
    chat: &Chat,
    file: File,
    name: String,
    image: bool,
) -> Boxed<'_, Prepared, ChatError> {
    Box::pin(chat.attach_now(file, name, image))
}

/// Split point `pdf`: a PDF's text (`engine::pdf`, the reader and its inflate) as a file
/// attachment, in the pdf chunk fetched the first time a PDF is attached.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(pdf, fallible, return_wrapper(let future = _; { future.await } -> Result<Prepared, ChatError>)))]
fn pdf_split(file: File, name: String) -> Boxed<'static, Prepared, ChatError> {
    Box::pin(pdf_attachment(file, name))
}

/// Reads a PDF's text a page at a time, yielding to the browser every [`pdf::SLICE_MS`].
async fn pdf_attachment(file: File, name: String) -> Result<Prepared, ChatError> {
    let bytes = bytes_of(&file).await?;
    let fail = |e: pdf::PdfError| ChatError::Invalid(e.message(&name));
    let mut reading = pdf::Extraction::open(bytes, pdf::LIMITS).map_err(fail)?;
    let mut slice = pace::perf_now();
    while reading.step().map_err(fail)? {
        if pace::perf_now() - slice > pdf::SLICE_MS {
            pace::yield_now().await;
            slice = pace::perf_now();
        }
    }
    let text = reading.finish(&name).map_err(fail)?;
    text_attachment(name, "application/pdf".into(), text).await
}
