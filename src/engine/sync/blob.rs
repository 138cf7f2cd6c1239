//! Images' bytes in sync: one CouchDB document per content hash, `a:{sha-256}`, whose bytes are its
//! CouchDB attachment `blob`. Message documents name their images by hash (`doc::AttachmentDoc`);
//! the bytes travel apart, once per hash however many messages use them, and never in a
//! `_changes` page (CouchDB sends attachment stubs there unless asked): the replicator skips these
//! ids, and the session moves the bytes with the requests this module describes.
//!
//! Push: a Blob some local message uses and that is stored here goes up once, unless the server
//! holds its document already (asked with `_all_docs` and `keys`, a batch at a time; a `409` on the
//! put means another device was first, which is as good). Pull: an image some local message uses
//! and that is not stored here is fetched (`?attachments=true`, the bytes as base64 in JSON, read
//! under a byte cap), and [`check_bytes`] holds it to its name (SHA-256), its message's size and
//! type, the bytes' own signature and [`MAX_BLOB_BYTES`]; a refused blob is not stored and not
//! asked for again this session, its message keeps its text and shows the image as missing.
//!
//! With end-to-end encryption the document's id is sealed like every other (HMAC of `a:{hash}`,
//! so two devices still meet on the same id and the server cannot tell which image it is), its
//! body is the usual envelope, and the attachment's bytes are `iv ‖ AES-256-GCM(bytes)` bound to
//! [`sealed_aad`], typed `application/octet-stream`: the server sees a size and ciphertext.
//! Must not import anything outside `crate::engine`.

use std::collections::{HashMap, HashSet};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use super::wire::{encode, Method, Reply, Request};
use crate::engine::attach::{self, human_bytes, is_hash, IMAGE_TYPES};
use crate::engine::model::{Attachment, AttachmentKind, Millis};

/// What blob documents' ids start with.
pub const PREFIX: &str = "a:";
/// The name of the CouchDB attachment holding the bytes.
pub const ATTACHMENT: &str = "blob";
/// The type a sealed blob's bytes are stored under.
pub const SEALED_TYPE: &str = "application/octet-stream";
/// The largest image taken from the server: an image is stored at most 1,568 px on its long edge
/// (`attach::MAX_IMAGE_EDGE`), which as a PNG of four bytes a pixel with no compression is 9.4 MiB;
/// anything past this is not an image this app stored.
pub const MAX_BLOB_BYTES: u64 = 12 * 1024 * 1024;
/// Ids asked about in one `_all_docs` request.
pub const ASK_BATCH: usize = 100;

/// The blob document of the image with SHA-256 `hash`.
pub fn blob_id(hash: &str) -> String {
    format!("{PREFIX}{hash}")
}

/// Whether `id` is a blob document's (`a:` and a lowercase SHA-256).
pub fn is_blob_id(id: &str) -> bool {
    hash_of(id).is_some()
}

/// The hash a blob document's id names.
pub fn hash_of(id: &str) -> Option<&str> {
    id.strip_prefix(PREFIX).filter(|h| is_hash(h))
}

/// The additional data a sealed blob's bytes are bound to: its server id and the attachment's
/// name (so neither the envelope's ciphertext nor another blob's can stand in for it).
pub fn sealed_aad(server_id: &str) -> String {
    format!("{server_id}/{ATTACHMENT}")
}

/// How long an image the server does not hold (yet), or could not give, waits before it is asked
/// for again: the device that has it may push it after its message.
pub const RETRY_MS: Millis = 30_000;

/// What to do about images this round.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Stored here, used, and not known to be on the server: ask the server, then push the absent.
    pub ask: Vec<String>,
    /// Used but not stored here, neither refused nor waiting: fetch.
    pub fetch: Vec<String>,
}

/// What this tab learnt about images while syncing: the ones the server holds, the ones refused
/// (never asked for again until a reload), and the ones to ask for again later.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ledger {
    on_server: HashSet<String>,
    refused: HashSet<String>,
    retry_at: HashMap<String, Millis>,
}

impl Ledger {
    /// The round's [`Plan`] at `now`, from the hashes local messages use (`used`) and the ones
    /// stored here (`stored`); each list sorted, each hash once.
    pub fn plan(&self, used: &[String], stored: &HashSet<String>, now: Millis) -> Plan {
        let mut used: Vec<&String> = used.iter().filter(|h| is_hash(h)).collect();
        used.sort();
        used.dedup();
        let mut p = Plan::default();
        for h in used {
            if self.retry_at.get(h).is_some_and(|at| *at > now) {
                continue;
            }
            if stored.contains(h) {
                if !self.on_server.contains(h) {
                    p.ask.push(h.clone());
                }
            } else if !self.refused.contains(h) {
                p.fetch.push(h.clone());
            }
        }
        p
    }
    /// The server holds `hash` (it said so, a put of it succeeded, or it was fetched from it).
    pub fn held(&mut self, hash: &str) {
        self.retry_at.remove(hash);
        self.on_server.insert(hash.to_string());
    }
    /// `hash` could not be pushed or fetched now (absent, a failure): again after [`RETRY_MS`].
    pub fn later(&mut self, hash: &str, now: Millis) {
        self.retry_at.insert(hash.to_string(), now + RETRY_MS);
    }
    /// The server's `hash` was refused: not fetched again.
    pub fn refuse(&mut self, hash: &str) {
        self.refused.insert(hash.to_string());
    }
    /// How many images were refused.
    pub fn refused(&self) -> usize {
        self.refused.len()
    }
}

/// Whether the session runs a round before sending `req` (a replicator request): before a push
/// (`_bulk_docs`), so an image reaches the server before the message that names it, and before a
/// longpoll, when the replicator has caught up and has nothing else to do.
pub fn round_first(req: &Request) -> bool {
    req.path.ends_with("/_bulk_docs")
        || req
            .query
            .iter()
            .any(|(k, v)| k == "feed" && v == "longpoll")
}

/// `POST /{db}/_all_docs` with `keys`: which of `ids` (server ids) the server holds.
pub fn ask_request(db: &str, ids: &[String]) -> Request {
    Request {
        method: Method::Post,
        path: format!("/{}/_all_docs", encode(db)),
        query: Vec::new(),
        body: Some(json!({ "keys": ids }).to_string()),
    }
}

/// The ids of an `_all_docs` answer the server holds live (a deleted or missing one is absent).
pub fn held(reply: &Reply) -> Result<HashSet<String>, String> {
    let parsed;
    let v = match reply {
        Reply::Json(v) => v,
        Reply::Text(t) => {
            parsed =
                serde_json::from_str::<Value>(t).map_err(|e| format!("unreadable answer ({e})"))?;
            &parsed
        }
    };
    let rows = v
        .get("rows")
        .and_then(Value::as_array)
        .ok_or("an answer without rows")?;
    Ok(rows
        .iter()
        .filter(|r| r.get("error").is_none())
        .filter(|r| r.pointer("/value/deleted") != Some(&Value::Bool(true)))
        .filter(|r| r.pointer("/value/rev").is_some())
        .filter_map(|r| r.get("key").and_then(Value::as_str).map(str::to_string))
        .collect())
}

/// The plain content of a blob document (what the envelope seals, with encryption on).
pub fn blob_doc(hash: &str, mime: &str, size: u64) -> Value {
    json!({ "_id": blob_id(hash), "type": "blob", "mime": mime, "size": size })
}

/// `PUT /{db}/{server_id}`: the document `body` (the plain content, or its envelope) with the bytes
/// (`content_type`: the image's type, or [`SEALED_TYPE`]) as its attachment.
pub fn put_request(
    db: &str,
    server_id: &str,
    body: Value,
    content_type: &str,
    bytes: &[u8],
) -> Request {
    let mut body = body;
    body["_id"] = Value::String(server_id.to_string());
    body["_attachments"] = json!({
        ATTACHMENT: { "content_type": content_type, "data": STANDARD.encode(bytes) }
    });
    Request {
        method: Method::Put,
        path: format!("/{}/{}", encode(db), encode(server_id)),
        query: Vec::new(),
        body: Some(body.to_string()),
    }
}

/// Whether a put's answer means the server holds the blob now (`201`/`202`, or `409`: it held it).
pub fn put_done(status: u16) -> bool {
    matches!(status, 200..=202 | 409)
}

/// `GET /{db}/{server_id}?attachments=true`: the document with its bytes as base64.
pub fn get_request(db: &str, server_id: &str) -> Request {
    Request {
        method: Method::Get,
        path: format!("/{}/{}", encode(db), encode(server_id)),
        query: vec![("attachments".into(), "true".into())],
        body: None,
    }
}

/// The most an answer to [`get_request`] may be: base64 of [`MAX_BLOB_BYTES`] and a seal, and room
/// for the document around it.
pub fn max_answer_bytes() -> usize {
    (MAX_BLOB_BYTES as usize + 64).div_ceil(3) * 4 + 16 * 1024
}

/// What a fetch found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    /// The document and its attachment's bytes (still sealed, with encryption on).
    Bytes { doc: Value, bytes: Vec<u8> },
    /// The server does not hold it (yet: the device that has it may not have pushed it).
    Absent,
    /// Anything else, in words.
    Failed(String),
}

/// Reads an answer to [`get_request`].
pub fn read_got(status: u16, body: &str) -> Got {
    match status {
        404 => return Got::Absent,
        200 => {}
        s => return Got::Failed(format!("the server answered HTTP {s}")),
    }
    let Ok(mut doc) = serde_json::from_str::<Value>(body) else {
        return Got::Failed("the server's answer is not a document".into());
    };
    let data = doc
        .pointer(&format!("/_attachments/{ATTACHMENT}/data"))
        .and_then(Value::as_str)
        .map(|d| STANDARD.decode(d));
    match data {
        Some(Ok(bytes)) => {
            if let Some(o) = doc.as_object_mut() {
                o.remove("_attachments");
            }
            Got::Bytes { doc, bytes }
        }
        Some(Err(_)) => Got::Failed("its bytes are not base64".into()),
        None => Got::Failed("the document holds no image".into()),
    }
}

/// Whether fetched `bytes` (opened, with encryption on) whose SHA-256 is `sha256` may be stored as
/// the image `a` names; the reason when not.
pub fn check_bytes(a: &Attachment, bytes: &[u8], sha256: &str) -> Result<(), String> {
    let n = bytes.len() as u64;
    if a.kind != AttachmentKind::Image || !IMAGE_TYPES.contains(&a.mime.as_str()) {
        return Err(format!(
            "its message names it as {:?}, not an image",
            a.mime
        ));
    }
    if n > MAX_BLOB_BYTES {
        return Err(format!(
            "it is {}; images up to {} are taken",
            human_bytes(n),
            human_bytes(MAX_BLOB_BYTES)
        ));
    }
    if sha256 != a.hash {
        return Err("its bytes do not match its name (SHA-256)".into());
    }
    if n != a.size {
        return Err(format!("it is {n} bytes; its message says {}", a.size));
    }
    match attach::sniff_image(bytes) {
        Some(t) if t == a.mime => Ok(()),
        Some(t) => Err(format!("its bytes are {t}; its message says {}", a.mime)),
        None => Err("its bytes are not an image".into()),
    }
}

/// The status line's words for one refused image (`name`: the attachment's), for the console and
/// the sync status.
pub fn refused(a: &Attachment, reason: &str) -> String {
    format!(
        "the image “{}” from the sync server was refused ({reason}); its message is kept without it",
        attach::short_name(&a.name)
    )
}
