//! End-to-end encrypted sync, the pure half: the envelope a document travels in, the sealed
//! document ids, the plaintext marker that holds the salt and the key check, and which parts of
//! which CouchDB request and answer are sealed or opened. The session (`session/sync/seal.rs`)
//! does the cryptography through WebCrypto and calls these to know what to encrypt and where the
//! results go.
//!
//! The transform is at the wire: the replicator stays plain-text (plain ids, plain documents, the
//! same merges and conflict handling), and every request it describes is sealed just before it
//! goes out, every answer opened just after it comes in. On the server:
//! - a synced document `{kind}:{id}` is stored under `x:{HMAC-SHA-256(id key, plain id)}` (base64url):
//!   the id says nothing about its kind, title or text, and is the same on every device, so
//!   conflicts, `_all_docs` with `keys` after a 409, and `open_revs` work unchanged;
//! - its body is `{"_id", "_rev", "e2ee": 1, "d": base64(iv ‖ AES-256-GCM(plain document))}`, the
//!   plain document holding the plain `_id` and every field; the sealed id is the additional data,
//!   so a server cannot move a ciphertext to another id;
//! - the marker `memoire-e2ee` (a plain document, so it replicates with the database and survives a
//!   server-side backup) holds the KDF, its iteration count, the salt, and the key check: a known
//!   text sealed under the key, which tells a wrong passphrase before anything is written.
//!
//! What the server sees: ids, revisions, sizes, ciphertext, the marker, and the devices' `_local/`
//! checkpoints (an opaque `since` and a random device id).
//!
//! Nothing unopened is trusted (ARCHITECTURE `nothing-unopened-is-trusted`): an answer is cut to
//! the rows asked for before anything is decrypted; only a document that opened under the key,
//! under the sealed id its row or request names, is passed on as a document of ours; rows and
//! leaves of ids not asked for are dropped; everything else (a plain document under a sealed id,
//! ciphertext that does not open, a document neither ours nor the server's own) is refused and
//! counted ([`Opened::refused`]). A plain document under one of our plain ids (a copy from before
//! encryption was turned on, or one a server made up) is taken out ([`Opened::plain`]): the session
//! deletes it on the server, and keeps it only while it first encrypts the database, after the
//! checks of any pulled document (`check::plain_copies`). Sealing fails closed: a request with an
//! id not named or a document not encrypted is not sent ([`Unsealable`]).
//! Must not import anything outside `crate::engine`.

use std::collections::{HashMap, HashSet};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Map, Value};

use super::doc::Kind;
use super::keys::Kdf;
use super::wire::{encode, Reply, Request};

/// The marker document's id.
pub const MARKER_ID: &str = "memoire-e2ee";
/// PBKDF2-SHA-256 iterations for a new marker: OWASP's 2023 floor for PBKDF2-HMAC-SHA256 is
/// 600,000. The issue asks the derivation to take 300-1,500 ms here (`e2ee_unlock_ms`). v1 derived
/// 512 bits, two PBKDF2 blocks, with 1,800,000 rounds (about 420 ms), while a guess costs an
/// attacker one block (the key check is under the first); v2 derives one block (`keys.rs`), so the
/// same time buys 3,000,000 rounds, each of which the attacker pays too. The marker keeps the
/// rounds, so a database made with another count still unlocks.
pub const ITERATIONS: u32 = 3_000_000;
/// A marker asking for fewer is refused (a hostile server cannot weaken the key), and one asking
/// for more than this too (it cannot make a device derive for minutes either).
pub const MIN_ITERATIONS: u32 = 600_000;
pub const MAX_ITERATIONS: u32 = 10_000_000;
/// Salt bytes in a new marker; fewer are refused.
pub const SALT_LEN: usize = 16;
/// AES-GCM nonce and tag lengths.
pub const IV_LEN: usize = 12;
pub const TAG_LEN: usize = 16;
/// The key check's plaintext, sealed with [`MARKER_ID`] as additional data.
pub const CHECK: &[u8] = b"memoire: this passphrase opens this database";
/// What sealed ids start with.
const SEALED: &str = "x:";

/// Whether a document id is sealed (a synced document of ours, an image's blob document; not
/// `_local/`, not the marker).
pub fn seals(id: &str) -> bool {
    Kind::of_id(id).is_some() || super::blob::is_blob_id(id)
}

/// The server id of a document whose plain id's HMAC is `mac`.
pub fn sealed_id(mac: &[u8]) -> String {
    format!("{SEALED}{}", URL_SAFE_NO_PAD.encode(mac))
}

/// Whether `id` is a sealed id.
pub fn is_sealed_id(id: &str) -> bool {
    id.strip_prefix(SEALED)
        .is_some_and(|m| URL_SAFE_NO_PAD.decode(m).is_ok_and(|b| b.len() == 32))
}

/// The additional data a sealed document's ciphertext is bound to: its server id.
pub fn aad(sealed: &str) -> Vec<u8> {
    sealed.as_bytes().to_vec()
}

/// Why a marker cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkerError {
    #[error("the sync database's encryption marker is damaged or from a newer version of Memoire")]
    Unreadable,
    #[error("the sync database's encryption marker asks for {iterations} key-derivation rounds (allowed: {MIN_ITERATIONS} to {MAX_ITERATIONS}); it was not made by Memoire, so it is not used")]
    Rounds { iterations: u32 },
}

/// The plaintext marker: how the key is derived from the passphrase (`keys.rs`), and the key check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub kdf: Kdf,
    pub salt: Vec<u8>,
    pub iterations: u32,
    /// `iv ‖ ciphertext` of [`CHECK`] under the key.
    pub check: Vec<u8>,
    /// While the passphrase is being changed (`rotate.rs`): the new key's derivation and key
    /// check (always [`Kdf::NEW`]); `None` otherwise.
    pub next: Option<Box<Marker>>,
    /// The salt of the key a finished change of passphrase left (to tell a device that still
    /// holds it that the passphrase changed, not that the database was set up again).
    pub rotated_from: Option<Vec<u8>>,
}

impl Marker {
    pub fn to_json(&self, rev: Option<&str>) -> Value {
        let mut v = json!({
            "_id": MARKER_ID,
            "v": self.kdf.version(),
            "kdf": self.kdf.name(),
            "iterations": self.iterations,
            "salt": STANDARD.encode(&self.salt),
            "cipher": "AES-256-GCM",
            "ids": "HMAC-SHA-256",
            "check": STANDARD.encode(&self.check),
        });
        if self.kdf.nfc() {
            v["passphrase"] = Value::String("NFC".into());
        }
        if let Some(n) = &self.next {
            let mut next = n.to_json(None);
            if let Some(o) = next.as_object_mut() {
                o.remove("_id");
            }
            v["next"] = next;
        }
        if let Some(from) = &self.rotated_from {
            v["rotated_from"] = Value::String(STANDARD.encode(from));
        }
        if let Some(r) = rev {
            v["_rev"] = Value::String(r.into());
        }
        v
    }

    /// Reads a marker (as the server returns it), refusing one Memoire would not have written.
    pub fn from_json(v: &Value) -> Result<Marker, MarkerError> {
        let text = |k: &str| v.get(k).and_then(Value::as_str);
        let version = v.get("v").and_then(Value::as_u64).unwrap_or(0);
        let kdf = Kdf::of(version, text("kdf").unwrap_or_default());
        let Some(kdf) = kdf.filter(|k| !k.nfc() || text("passphrase") == Some("NFC")) else {
            return Err(MarkerError::Unreadable);
        };
        if text("cipher") != Some("AES-256-GCM") {
            return Err(MarkerError::Unreadable);
        }
        let bytes = |k: &str| {
            text(k)
                .and_then(|s| STANDARD.decode(s).ok())
                .ok_or(MarkerError::Unreadable)
        };
        let (salt, check) = (bytes("salt")?, bytes("check")?);
        let iterations = v
            .get("iterations")
            .and_then(Value::as_u64)
            .ok_or(MarkerError::Unreadable)?;
        let iterations = u32::try_from(iterations).unwrap_or(u32::MAX);
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(MarkerError::Rounds { iterations });
        }
        if salt.len() < SALT_LEN || check.len() < IV_LEN + TAG_LEN {
            return Err(MarkerError::Unreadable);
        }
        // A change of passphrase under way: the new key is always v2, and changes nothing further.
        let next = match v.get("next") {
            None | Some(Value::Null) => None,
            Some(n) => {
                let n = Marker::from_json(n)?;
                if n.kdf != Kdf::NEW || n.next.is_some() || n.salt == salt {
                    return Err(MarkerError::Unreadable);
                }
                Some(Box::new(n))
            }
        };
        let rotated_from = match text("rotated_from") {
            Some(_) => Some(bytes("rotated_from")?),
            None => None,
        };
        Ok(Marker {
            kdf,
            salt,
            iterations,
            check,
            next,
            rotated_from,
        })
    }
}

/// A document's plain id and the bytes to encrypt: the document without its server fields
/// (`_rev`, `_conflicts`, …), `_id` kept.
pub fn plaintext(doc: &Value) -> Option<(String, Vec<u8>)> {
    let obj = doc.as_object()?;
    let id = obj.get("_id")?.as_str()?.to_string();
    let inner: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| *k == "_id" || !k.starts_with('_'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some((id, serde_json::to_vec(&Value::Object(inner)).ok()?))
}

/// The sealed document: its server id, revision, and `iv ‖ ciphertext`.
pub fn envelope(sealed: &str, rev: Option<&str>, blob: &[u8]) -> Value {
    let mut v = json!({ "_id": sealed, "e2ee": 1, "d": STANDARD.encode(blob) });
    if let Some(r) = rev {
        v["_rev"] = Value::String(r.into());
    }
    v
}

/// The plain document of an opened envelope: the decrypted object with the envelope's `_rev` and
/// `_conflicts`; `None` when the plaintext is not a document with a synced id.
pub fn opened(envelope: &Value, plain: &[u8]) -> Option<Value> {
    let mut doc: Map<String, Value> = serde_json::from_slice(plain).ok()?;
    if !doc.get("_id").and_then(Value::as_str).is_some_and(seals) {
        return None;
    }
    doc.retain(|k, _| k == "_id" || !k.starts_with('_'));
    for k in ["_rev", "_conflicts"] {
        if let Some(v) = envelope.get(k) {
            doc.insert(k.into(), v.clone());
        }
    }
    Some(Value::Object(doc))
}

/// Sealed ids and plain ids, both ways, as learned from sealing and opening.
#[derive(Debug, Clone, Default)]
pub struct Names {
    sealed: HashMap<String, String>,
    plain: HashMap<String, String>,
}

impl Names {
    pub fn learn(&mut self, plain: &str, sealed: &str) {
        self.sealed.insert(plain.to_string(), sealed.to_string());
        self.plain.insert(sealed.to_string(), plain.to_string());
    }
    pub fn sealed(&self, plain: &str) -> Option<&str> {
        self.sealed.get(plain).map(String::as_str)
    }
    pub fn plain(&self, sealed: &str) -> Option<&str> {
        self.plain.get(sealed).map(String::as_str)
    }
    /// Whether a deletion in `body` (a `_changes` answer) names a sealed id not known yet: then
    /// every stored id must be named first, or the deletion cannot be told apart from noise.
    pub fn misses_deleted(&self, body: &str) -> bool {
        // Most pages delete nothing: no need to read them twice.
        if !body.contains("\"deleted\"") {
            return false;
        }
        let Ok(v) = serde_json::from_str::<Value>(body) else {
            return false;
        };
        let missing = rows(&v, "results").any(|r| {
            r.get("deleted") == Some(&Value::Bool(true))
                && r.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| is_sealed_id(id) && self.plain(id).is_none())
        });
        missing
    }
}

fn rows<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// Which request of the replicator this is, as far as sealing goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Nothing sealed: the database itself, a `_local/` checkpoint, anything else.
    Pass,
    /// `GET _changes`: the answer cut to the `limit` rows asked for (before anything is
    /// decrypted), its documents opened, their ids named.
    Changes { limit: Option<usize> },
    /// `POST _bulk_docs`: the documents sealed; the answer's ids named.
    Bulk,
    /// `POST _all_docs` with `keys` (the plain ids asked for): the keys sealed; the answer's rows
    /// opened, and only rows for the ids asked for kept.
    AllDocs { keys: Vec<String> },
    /// `GET /{db}/{id}?open_revs=…`: the id sealed; the leaves opened, only those of `id` kept.
    Open { db_path: String, id: String },
}

/// The route of `req` to database `db`.
pub fn route(req: &Request, db: &str) -> Route {
    let db_path = format!("/{}", encode(db));
    let Some(rest) = req.path.strip_prefix(&db_path) else {
        return Route::Pass;
    };
    match rest {
        "/_changes" => Route::Changes {
            limit: req
                .query
                .iter()
                .find(|(k, _)| k == "limit")
                .and_then(|(_, v)| v.parse().ok()),
        },
        "/_bulk_docs" => Route::Bulk,
        "/_all_docs" => {
            let body = body_json(req).unwrap_or_default();
            let keys = rows(&body, "keys").filter_map(Value::as_str);
            Route::AllDocs {
                keys: keys.filter(|k| seals(k)).map(str::to_string).collect(),
            }
        }
        _ => match rest.strip_prefix('/').and_then(decode) {
            Some(id) if seals(&id) && req.query.iter().any(|(k, _)| k == "open_revs") => {
                Route::Open { db_path, id }
            }
            _ => Route::Pass,
        },
    }
}

/// Undoes [`encode`] (`None`: not one encoded path segment).
fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'/' => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// What an outgoing request needs before it can be sealed: the plain ids to name (HMAC), and the
/// documents to encrypt (by their index in `docs`, with their plain id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outgoing {
    pub ids: Vec<String>,
    pub docs: Vec<(usize, String, Vec<u8>)>,
}

fn body_json(req: &Request) -> Option<Value> {
    serde_json::from_str(req.body.as_deref()?).ok()
}

/// What [`seal_request`] will need for `req`.
pub fn outgoing(req: &Request, route: &Route) -> Outgoing {
    let mut out = Outgoing::default();
    match route {
        Route::Pass | Route::Changes { .. } => {}
        Route::Open { id, .. } => out.ids.push(id.clone()),
        Route::AllDocs { keys } => out.ids.extend(keys.iter().cloned()),
        Route::Bulk => {
            let body = body_json(req).unwrap_or_default();
            for (i, d) in rows(&body, "docs").enumerate() {
                let Some((id, bytes)) = plaintext(d).filter(|(id, _)| seals(id)) else {
                    continue;
                };
                if d.get("_deleted") != Some(&Value::Bool(true)) {
                    out.docs.push((i, id.clone(), bytes));
                }
                out.ids.push(id);
            }
        }
    }
    out
}

/// Why a request cannot be sealed: it is not sent (sealing fails closed; nothing goes out in
/// plaintext because something was missing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsealable {
    #[error("the id of '{0}' was not encrypted")]
    Unnamed(String),
    #[error("document '{0}' was not encrypted")]
    NotEncrypted(String),
    #[error("a document that is not Memoire's ('{0}') would have been uploaded unencrypted")]
    Foreign(String),
    #[error("the upload was not a list of documents")]
    Unreadable,
}

/// `req` as it goes to the server: ids replaced by their names in `names`, documents by their
/// envelopes (`blobs`, by index). Every id [`outgoing`] listed must be named and every live
/// document encrypted: anything missing is an error, never a plain id or document sent instead.
pub fn seal_request(
    req: &Request,
    route: &Route,
    names: &Names,
    blobs: &HashMap<usize, Vec<u8>>,
) -> Result<Request, Unsealable> {
    let name = |id: &str| {
        names
            .sealed(id)
            .map(str::to_string)
            .ok_or_else(|| Unsealable::Unnamed(id.to_string()))
    };
    let mut out = req.clone();
    match route {
        Route::Pass | Route::Changes { .. } => {}
        Route::Open { db_path, id } => out.path = format!("{db_path}/{}", encode(&name(id)?)),
        Route::AllDocs { .. } => {
            let mut body = body_json(req).ok_or(Unsealable::Unreadable)?;
            if let Some(keys) = body.get_mut("keys").and_then(Value::as_array_mut) {
                for k in keys.iter_mut() {
                    if let Some(s) = k.as_str().filter(|s| seals(s)) {
                        *k = Value::String(name(s)?);
                    }
                }
            }
            out.body = Some(body.to_string());
        }
        Route::Bulk => {
            let mut body = body_json(req).ok_or(Unsealable::Unreadable)?;
            let docs = body
                .get_mut("docs")
                .and_then(Value::as_array_mut)
                .ok_or(Unsealable::Unreadable)?;
            for (i, d) in docs.iter_mut().enumerate() {
                *d = sealed_doc(d, i, &name, blobs)?;
            }
            out.body = Some(body.to_string());
        }
    }
    Ok(out)
}

/// One `_bulk_docs` entry sealed: an envelope, or (a losing leaf's deletion) its id named.
fn sealed_doc(
    d: &Value,
    i: usize,
    name: &dyn Fn(&str) -> Result<String, Unsealable>,
    blobs: &HashMap<usize, Vec<u8>>,
) -> Result<Value, Unsealable> {
    let id = d.get("_id").and_then(Value::as_str).unwrap_or_default();
    if !seals(id) {
        return Err(Unsealable::Foreign(crate::engine::format::clip(id, 80)));
    }
    let rev = d.get("_rev").and_then(Value::as_str);
    let deleted = d.get("_deleted") == Some(&Value::Bool(true));
    match blobs.get(&i) {
        Some(blob) if !deleted => Ok(envelope(&name(id)?, rev, blob)),
        None if deleted => {
            let mut v = json!({ "_id": name(id)?, "_deleted": true });
            if let Some(r) = rev {
                v["_rev"] = Value::String(r.into());
            }
            Ok(v)
        }
        _ => Err(Unsealable::NotEncrypted(id.to_string())),
    }
}

/// One document slot of an answer: the row (or leaf) it is in, the sealed id its envelope must
/// carry when the answer says (a `_changes` row's `id`, an `_all_docs` row's `key`), and the slot.
type Slot<'a> = (usize, Option<String>, &'a mut Value);

/// The document slots of an answer, in one order (the order [`Opening::sealed`] lists them and
/// [`Opening::finish`] consumes their plaintexts).
fn slots<'a>(route: &Route, v: &'a mut Value) -> Vec<Slot<'a>> {
    let (list, key, bound) = match route {
        Route::Changes { .. } => (v.get_mut("results"), "doc", "id"),
        Route::AllDocs { .. } => (v.get_mut("rows"), "doc", "key"),
        Route::Open { .. } => (Some(v), "ok", ""),
        Route::Pass | Route::Bulk => return Vec::new(),
    };
    let mut out = Vec::new();
    for (i, r) in list
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let expected = r.get(bound).and_then(Value::as_str).map(str::to_string);
        if let Some(slot) = r.get_mut(key) {
            out.push((i, expected, slot));
        }
    }
    out
}

fn success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The sealed documents of an answer to decrypt, in order: each one's bound id (the additional
/// data) and `iv ‖ ciphertext`.
pub fn sealed_in(route: &Route, status: u16, body: &str) -> Vec<(String, Vec<u8>)> {
    Opening::new(route, status, body.to_string()).sealed()
}

/// An answer opened for the replicator.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The answer as the replicator reads it: plain ids and plain documents, as JSON when it was
    /// read (not written out to be read again), else the text as it came.
    pub body: Reply,
    /// Plain documents of ours the server still holds (each with its `_rev`): to delete on the
    /// server (and, only while this device first encrypts the database, to keep after the checks
    /// of any pulled document: `check::plain_copies`).
    pub plain: Vec<Value>,
    /// Why documents were left out: they did not open with this key (ciphertext under another
    /// key or id, a plain document under a sealed id, a document not of ours), or the answer was
    /// not about what was asked (a row or leaf of another id). Each counts as "could not be
    /// opened".
    pub refused: Vec<String>,
}

/// Opens an answer: `plains` are the decrypted [`sealed_in`] documents, in order (`None`: it did
/// not open). Learns each opened document's name.
pub fn open_response(
    route: &Route,
    status: u16,
    body: &str,
    names: &mut Names,
    plains: Vec<Option<Vec<u8>>>,
) -> Opened {
    Opening::new(route, status, body.to_string()).finish(names, plains)
}

/// The sealed id of an envelope (`e2ee: 1` under a sealed id, the one its row names when it names
/// one): the slots [`Opening::sealed`] lists and [`Opening::finish`] fills, in the same order.
fn envelope_id<'a>(doc: &'a Value, expected: &Option<String>) -> Option<&'a str> {
    if doc.get("e2ee").and_then(Value::as_u64) != Some(1) {
        return None;
    }
    let id = doc.get("_id")?.as_str().filter(|id| is_sealed_id(id))?;
    expected.as_deref().is_none_or(|e| e == id).then_some(id)
}

/// Cuts a `_changes` answer to the `limit` rows asked for, reading on from the last one kept.
fn cut_changes(v: &mut Value, limit: usize) {
    let Some(results) = v.get_mut("results").and_then(Value::as_array_mut) else {
        return;
    };
    if results.len() <= limit {
        return;
    }
    results.truncate(limit);
    let last = results.last().and_then(|r| r.get("seq")).cloned();
    if let (Some(seq), Some(o)) = (last, v.as_object_mut()) {
        o.insert("last_seq".into(), seq);
    }
}

/// An answer being opened: read once and cut to the rows asked for, its sealed documents listed
/// ([`Opening::sealed`]), then filled with their plaintexts ([`Opening::finish`]).
pub struct Opening {
    route: Route,
    body: String,
    /// The parsed answer (`None`: passed through as it is).
    v: Option<Value>,
}

impl Opening {
    pub fn new(route: &Route, status: u16, body: String) -> Opening {
        let read = success(status) && !matches!(route, Route::Pass);
        let mut v: Option<Value> = read.then(|| serde_json::from_str(&body).ok()).flatten();
        if let (Route::Changes { limit: Some(l) }, Some(v)) = (route, v.as_mut()) {
            cut_changes(v, *l);
        }
        Opening {
            route: route.clone(),
            body,
            v,
        }
    }

    /// The envelopes to decrypt, in order: each one's bound id and `iv ‖ ciphertext` (empty when
    /// unreadable: it then does not open).
    pub fn sealed(&mut self) -> Vec<(String, Vec<u8>)> {
        let Some(v) = self.v.as_mut() else {
            return Vec::new();
        };
        let blob = |d: &Value| {
            let b64 = d.get("d").and_then(Value::as_str)?;
            let b = STANDARD.decode(b64).ok()?;
            (b.len() >= IV_LEN + TAG_LEN).then_some(b)
        };
        slots(&self.route, v)
            .into_iter()
            .filter_map(|(_, e, d)| {
                Some((envelope_id(d, &e)?.to_string(), blob(d).unwrap_or_default()))
            })
            .collect()
    }

    /// The answer for the replicator: `plains` are the decrypted [`Opening::sealed`], in order.
    /// Only what opened is passed on as a document of ours; see [`Opened::refused`].
    pub fn finish(self, names: &mut Names, plains: Vec<Option<Vec<u8>>>) -> Opened {
        let mut out = Opened {
            body: Reply::Text(String::new()),
            plain: Vec::new(),
            refused: Vec::new(),
        };
        let Some(mut v) = self.v else {
            out.body = Reply::Text(self.body);
            return out;
        };
        let route = self.route;
        let asked = match &route {
            Route::Open { id, .. } => Some(id.as_str()),
            _ => None,
        };
        let mut plains = plains.into_iter();
        let mut opened_at = HashSet::new();
        for (i, expected, slot) in slots(&route, &mut v) {
            let Some(sealed) = envelope_id(slot, &expected).map(str::to_string) else {
                continue;
            };
            let doc = plains.next().flatten().and_then(|p| opened(slot, &p));
            match doc.filter(|d| fits(d, &sealed, asked, names)) {
                Some(doc) => {
                    names.learn(doc["_id"].as_str().unwrap_or_default(), &sealed);
                    *slot = doc;
                    opened_at.insert(i);
                }
                None => {
                    out.refused.push(format!(
                        "{sealed}: does not open with this passphrase's key; skipped"
                    ));
                    *slot = Value::Null;
                }
            }
        }
        match &route {
            Route::Changes { .. } => name_changes(&mut v, names, &opened_at, &mut out),
            Route::AllDocs { keys } => name_rows(&mut v, names, keys, &opened_at, &mut out),
            Route::Open { id, .. } => name_leaves(&mut v, names, id, &opened_at, &mut out),
            Route::Bulk => name_results(&mut v, names),
            Route::Pass => {}
        }
        out.body = Reply::Json(v);
        out
    }
}

/// Whether an opened document is the one its sealed id names: its plain `_id` is the name known
/// for that sealed id (when known), and the one asked for (`open_revs`).
fn fits(doc: &Value, sealed: &str, asked: Option<&str>, names: &Names) -> bool {
    let plain = doc["_id"].as_str().unwrap_or_default();
    names.plain(sealed).is_none_or(|p| p == plain)
        && names.sealed(plain).is_none_or(|s| s == sealed)
        && asked.is_none_or(|a| a == plain)
}

/// Why a row that did not open is refused.
fn unopened(id: &str) -> String {
    format!(
        "{}: not sealed with this database's key; refused",
        crate::engine::format::clip(id, 80)
    )
}

/// `_changes` rows: opened ones under their plain id; deletions of known sealed ids named; plain
/// documents of ours taken out ([`Opened::plain`]); the marker, unknown deletions and plain
/// deletions dropped; a sealed id whose document did not open (a plain document under it, none
/// at all) and a document that is neither ours nor the server's own (`_design/…`) refused.
fn name_changes(v: &mut Value, names: &Names, opened: &HashSet<usize>, out: &mut Opened) {
    let Some(results) = v.get_mut("results").and_then(Value::as_array_mut) else {
        return;
    };
    let rows = std::mem::take(results);
    for (i, mut row) in rows.into_iter().enumerate() {
        let id = row.get("id").and_then(Value::as_str).unwrap_or_default();
        let deleted = row.get("deleted") == Some(&Value::Bool(true));
        let doc = row.get("doc").filter(|d| !d.is_null());
        let refused_already = row.get("doc").is_some_and(Value::is_null);
        let plain_id = if id == MARKER_ID || (seals(id) && deleted) {
            None
        } else if is_sealed_id(id) && deleted {
            names.plain(id).map(str::to_string)
        } else if opened.contains(&i) {
            doc.and_then(|d| d.get("_id"))
                .and_then(Value::as_str)
                .map(str::to_string)
        } else if seals(id) {
            out.plain.extend(doc.filter(|d| d.is_object()).cloned());
            None
        } else if id.starts_with('_') {
            Some(id.to_string())
        } else {
            if !refused_already {
                out.refused.push(unopened(id));
            }
            None
        };
        let Some(p) = plain_id else { continue };
        row["id"] = Value::String(p);
        results.push(row);
    }
}

fn rename(field: Option<&mut Value>, names: &Names) {
    if let Some(f) = field {
        if let Some(p) = f.as_str().and_then(|s| names.plain(s)) {
            *f = Value::String(p.to_string());
        }
    }
}

/// `_all_docs` rows: only rows for the ids asked for (`keys`, plain) are kept, their key and id
/// named; a document in them that did not open is refused (the row stays, without it: the
/// replicator writes ours over it).
fn name_rows(
    v: &mut Value,
    names: &Names,
    keys: &[String],
    opened: &HashSet<usize>,
    out: &mut Opened,
) {
    let Some(list) = v.get_mut("rows").and_then(Value::as_array_mut) else {
        return;
    };
    let asked: HashSet<&str> = keys.iter().filter_map(|k| names.sealed(k)).collect();
    let rows = std::mem::take(list);
    for (i, mut row) in rows.into_iter().enumerate() {
        let key = row.get("key").and_then(Value::as_str).unwrap_or_default();
        let id_ok = row.get("id").is_none_or(|id| id.as_str() == Some(key));
        if !asked.contains(key) || !id_ok {
            out.refused.push(format!(
                "{}: an answer about a document that was not asked for; refused",
                crate::engine::format::clip(key, 80)
            ));
            continue;
        }
        let doc = row.get("doc").filter(|d| !d.is_null());
        if doc.is_some() && !opened.contains(&i) {
            out.refused.push(unopened(key));
            row["doc"] = Value::Null;
        }
        rename(row.get_mut("key"), names);
        rename(row.get_mut("id"), names);
        list.push(row);
    }
}

/// `open_revs` leaves of `id`: opened ones kept, deleted leaves (no envelope) of its sealed id
/// named; a leaf of another id, or one that did not open, refused.
fn name_leaves(v: &mut Value, names: &Names, id: &str, opened: &HashSet<usize>, out: &mut Opened) {
    let Some(list) = v.as_array_mut() else {
        return;
    };
    let sealed = names.sealed(id).unwrap_or_default().to_string();
    let leaves = std::mem::take(list);
    for (i, mut leaf) in leaves.into_iter().enumerate() {
        let Some(ok) = leaf.get_mut("ok") else {
            list.push(leaf); // `missing`
            continue;
        };
        if ok.is_null() {
            continue; // did not open: refused already
        }
        let deleted = ok.get("_deleted") == Some(&Value::Bool(true))
            && ok.get("e2ee").is_none()
            && ok.get("_id").and_then(Value::as_str) == Some(sealed.as_str());
        if deleted {
            ok["_id"] = Value::String(id.to_string());
        } else if !opened.contains(&i) {
            let at = ok.get("_id").and_then(Value::as_str).unwrap_or(id);
            out.refused.push(unopened(at));
            continue;
        }
        list.push(leaf);
    }
}

/// `_bulk_docs` results named.
fn name_results(v: &mut Value, names: &Names) {
    for r in v.as_array_mut().into_iter().flatten() {
        rename(r.get_mut("id"), names);
    }
}

/// The `_bulk_docs` body that deletes plain copies (each `_id` with its `_rev`).
pub fn purge_body(plain: &[Value]) -> Option<String> {
    let docs: Vec<Value> = plain
        .iter()
        .filter_map(|d| {
            let id = d.get("_id")?.as_str()?;
            let rev = d.get("_rev")?.as_str()?;
            seals(id).then(|| json!({ "_id": id, "_rev": rev, "_deleted": true }))
        })
        .collect();
    (!docs.is_empty()).then(|| json!({ "docs": docs }).to_string())
}
