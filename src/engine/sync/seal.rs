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
//! checkpoints (an opaque `since` and a random device id). With encryption on, a plain document of
//! ours found on the server (a copy from before encryption was turned on) is taken out of the answer
//! and handed to the session ([`Opened::plain`]), which keeps its content locally (it goes back up
//! sealed) and deletes the plain copy on the server; its deletion in a later feed is dropped.
//! Must not import anything outside `crate::engine`.

use std::collections::HashMap;

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
        Ok(Marker {
            kdf,
            salt,
            iterations,
            check,
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
    /// `GET _changes`: the answer's documents are opened, their ids named.
    Changes,
    /// `POST _bulk_docs`: the documents sealed; the answer's ids named.
    Bulk,
    /// `POST _all_docs` with `keys`: the keys sealed; the answer's rows opened.
    AllDocs,
    /// `GET /{db}/{id}?open_revs=…`: the id sealed; the leaves opened.
    Open { db_path: String, id: String },
}

/// The route of `req` to database `db`.
pub fn route(req: &Request, db: &str) -> Route {
    let db_path = format!("/{}", encode(db));
    let Some(rest) = req.path.strip_prefix(&db_path) else {
        return Route::Pass;
    };
    match rest {
        "/_changes" => Route::Changes,
        "/_bulk_docs" => Route::Bulk,
        "/_all_docs" => Route::AllDocs,
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
        Route::Pass | Route::Changes => {}
        Route::Open { id, .. } => out.ids.push(id.clone()),
        Route::AllDocs => {
            let body = body_json(req).unwrap_or_default();
            let keys = rows(&body, "keys").filter_map(Value::as_str);
            out.ids
                .extend(keys.filter(|k| seals(k)).map(str::to_string));
        }
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

/// `req` as it goes to the server: ids replaced by their names in `names` (every id in
/// [`outgoing`]'s list must be there), documents by their envelopes (`blobs`, by index).
pub fn seal_request(
    req: &Request,
    route: &Route,
    names: &Names,
    blobs: &HashMap<usize, Vec<u8>>,
) -> Request {
    let name = |id: &str| names.sealed(id).unwrap_or(id).to_string();
    let mut out = req.clone();
    match route {
        Route::Pass | Route::Changes => {}
        Route::Open { db_path, id } => out.path = format!("{db_path}/{}", encode(&name(id))),
        Route::AllDocs => {
            let mut body = body_json(req).unwrap_or_default();
            if let Some(keys) = body.get_mut("keys").and_then(Value::as_array_mut) {
                for k in keys.iter_mut() {
                    if let Some(s) = k.as_str() {
                        *k = Value::String(name(s));
                    }
                }
            }
            out.body = Some(body.to_string());
        }
        Route::Bulk => {
            let mut body = body_json(req).unwrap_or_default();
            if let Some(docs) = body.get_mut("docs").and_then(Value::as_array_mut) {
                for (i, d) in docs.iter_mut().enumerate() {
                    *d = sealed_doc(d, i, &name, blobs);
                }
            }
            out.body = Some(body.to_string());
        }
    }
    out
}

/// One `_bulk_docs` entry sealed: an envelope, or (a losing leaf's deletion) its id named.
fn sealed_doc(
    d: &Value,
    i: usize,
    name: &dyn Fn(&str) -> String,
    blobs: &HashMap<usize, Vec<u8>>,
) -> Value {
    let Some(id) = d.get("_id").and_then(Value::as_str).filter(|id| seals(id)) else {
        return d.clone();
    };
    let rev = d.get("_rev").and_then(Value::as_str);
    match blobs.get(&i) {
        Some(blob) => envelope(&name(id), rev, blob),
        None => {
            let mut v = json!({ "_id": name(id), "_deleted": true });
            if let Some(r) = rev {
                v["_rev"] = Value::String(r.into());
            }
            v
        }
    }
}

/// The document slots of an answer, in one order (the order [`sealed_in`] lists them and
/// [`open_response`] consumes their plaintexts).
fn slots<'a>(route: &Route, v: &'a mut Value) -> Vec<&'a mut Value> {
    let (list, key) = match route {
        Route::Changes => (v.get_mut("results"), "doc"),
        Route::AllDocs => (v.get_mut("rows"), "doc"),
        Route::Open { .. } => (Some(v), "ok"),
        Route::Pass | Route::Bulk => return Vec::new(),
    };
    list.and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get_mut(key))
        .collect()
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
    /// Plain documents of ours the server still holds (each with its `_rev`): to keep locally and
    /// delete on the server.
    pub plain: Vec<Value>,
    /// Why some documents were left out (ciphertext that does not open under this key).
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

/// The sealed id of an envelope (`e2ee: 1` under a sealed id): the slots [`Opening::sealed`] lists
/// and [`Opening::finish`] fills, in the same order.
fn envelope_id(doc: &Value) -> Option<&str> {
    if doc.get("e2ee").and_then(Value::as_u64) != Some(1) {
        return None;
    }
    doc.get("_id")?.as_str().filter(|id| is_sealed_id(id))
}

/// An answer being opened: read once, its sealed documents listed ([`Opening::sealed`]), then
/// filled with their plaintexts ([`Opening::finish`]).
pub struct Opening {
    route: Route,
    body: String,
    /// The parsed answer (`None`: passed through as it is).
    v: Option<Value>,
}

impl Opening {
    pub fn new(route: &Route, status: u16, body: String) -> Opening {
        let read = success(status) && !matches!(route, Route::Pass);
        let v = read.then(|| serde_json::from_str(&body).ok()).flatten();
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
            .filter_map(|d| Some((envelope_id(d)?.to_string(), blob(d).unwrap_or_default())))
            .collect()
    }

    /// The answer for the replicator: `plains` are the decrypted [`Opening::sealed`], in order.
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
        let mut plains = plains.into_iter();
        for slot in slots(&route, &mut v) {
            let Some(sealed) = envelope_id(slot).map(str::to_string) else {
                continue;
            };
            match plains.next().flatten().and_then(|p| opened(slot, &p)) {
                Some(doc) => {
                    names.learn(doc["_id"].as_str().unwrap_or_default(), &sealed);
                    *slot = doc;
                }
                None => {
                    out.refused.push(format!(
                        "{sealed}: does not open with this passphrase's key; skipped"
                    ));
                    *slot = Value::Null;
                }
            }
        }
        match route {
            Route::Changes => name_changes(&mut v, names, &mut out),
            Route::AllDocs => name_rows(&mut v, names),
            Route::Open { .. } => name_leaves(&mut v, names),
            Route::Bulk => name_results(&mut v, names),
            Route::Pass => {}
        }
        out.body = Reply::Json(v);
        out
    }
}

/// `_changes` rows: opened ones under their plain id; deletions of known sealed ids named; plain
/// documents of ours taken out ([`Opened::plain`]); the marker, unknown deletions, plain
/// deletions and documents that did not open dropped.
fn name_changes(v: &mut Value, names: &Names, out: &mut Opened) {
    let Some(results) = v.get_mut("results").and_then(Value::as_array_mut) else {
        return;
    };
    let rows = std::mem::take(results);
    for mut row in rows {
        let id = row.get("id").and_then(Value::as_str).unwrap_or_default();
        let deleted = row.get("deleted") == Some(&Value::Bool(true));
        let doc_id = row
            .get("doc")
            .and_then(|d| d.get("_id"))
            .and_then(Value::as_str);
        let plain_id = if is_sealed_id(id) {
            match (deleted, doc_id) {
                (false, Some(p)) if seals(p) => Some(p.to_string()),
                (true, _) => names.plain(id).map(str::to_string),
                _ => None, // did not open
            }
        } else if id == MARKER_ID || (seals(id) && deleted) {
            None
        } else if seals(id) {
            out.plain
                .extend(row.get("doc").filter(|d| d.is_object()).cloned());
            None
        } else {
            Some(id.to_string())
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

/// `_all_docs` rows: key and id named (the document was opened in place).
fn name_rows(v: &mut Value, names: &Names) {
    for row in v
        .get_mut("rows")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        rename(row.get_mut("key"), names);
        rename(row.get_mut("id"), names);
    }
}

/// `open_revs` leaves: deleted leaves (no envelope) named.
fn name_leaves(v: &mut Value, names: &Names) {
    for leaf in v.as_array_mut().into_iter().flatten() {
        if let Some(ok) = leaf.get_mut("ok") {
            rename(ok.get_mut("_id"), names);
        }
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
