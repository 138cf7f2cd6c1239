//! Changing the passphrase of an encrypted sync database (issue 43, item 4), the pure half: what
//! the marker says while the passphrase changes and once it changed, what a device holding which
//! keys may do, which key opens a document, what to seal again next, and when the change is done.
//! The session (`session/sync/rotate.rs`) derives the keys, lists the server's documents, seals
//! and deletes.
//!
//! A sealed id is an HMAC under the id key (`seal.rs`), so a new passphrase means every document
//! gets a new server id: changing it seals every document again under the new keys (the same
//! revision, written with `new_edits: false`, so doing it twice is doing it once), deletes the old
//! copy, and then makes the new key the database's only one. The steps:
//! - **Begin** ([`begin`]): the marker gains `next`, the new key's derivation (always
//!   [`Kdf::NEW`]: a change of passphrase is also how a v1 database becomes v2) and its key
//!   check, beside the current one. The device that changes it keeps both key sets.
//! - **Seal again** ([`plan`]): driven by what the server holds, not by a list kept anywhere: each
//!   sealed document opens under the new key (done), under the old one (to seal again, then its
//!   old copy deleted), or under neither (not ours: left alone, as the sync refuses it). A reload,
//!   a closed tab or a dropped connection part-way loses nothing: the next connection reads the
//!   server again and goes on from what is left.
//! - **Finish** ([`finish`]): once a whole reading of the server finds nothing under the old key,
//!   the marker's `next` becomes its key and `rotated_from` keeps the old salt, so a device still
//!   holding the old key is told the passphrase changed ([`Standing::Changed`]).
//!
//! Only the device holding both key sets seals again, and it does so before its replicator starts
//! (one connection, under the sync lock, so one tab): its replicator then only ever sees the new
//! key. This replaces a Sealer holding two keys for every request: the replicator, its merges and
//! its checks (ARCHITECTURE `nothing-unopened-is-trusted`, `no-silent-rollback`) stay unchanged,
//! and nothing is written under the old key by the device that changes it.
//! Other devices ([`standing`]): one holding the new key syncs under it (what is still under the
//! old key is not opened until it is sealed again); one holding only the old key writes nothing
//! while the change is under way ([`Standing::Leaving`]) or after ([`Standing::Changed`]), and says
//! which passphrase to type. One that was mid-connection when the change began may still push under
//! the old key until its next connection reads the marker: the rotating device seals again
//! whatever is under the old key until a whole reading finds none, so what lands before that is
//! carried over; what lands after is refused by every device with the new key, never merged.
//! Must not import anything outside `crate::engine`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use super::blob;
use super::keys::Kdf;
use super::seal::{self, Marker};
use super::wire::{encode, Method, Request};

/// Where a device stands against the database's marker, by the keys it holds (their salts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// It holds the marker's only key: sync as usual.
    Current,
    /// It holds the new key and the old one of a change under way: it seals again, then finishes.
    Rotating,
    /// It holds the new key of a change under way but not the old one: it syncs under the new key.
    NextOnly,
    /// It holds only the key a change under way is leaving: it writes nothing.
    Leaving,
    /// It holds the key a finished change left: it writes nothing; the new passphrase is needed.
    Changed,
    /// It holds none of the marker's keys: the database was set up again.
    Other,
}

/// Where a device holding the key of salt `held` (and, while it changes the passphrase, the old
/// key of salt `old`) stands against marker `m`.
pub fn standing(m: &Marker, held: &[u8], old: Option<&[u8]>) -> Standing {
    match &m.next {
        None if held == m.salt.as_slice() => Standing::Current,
        None if m.rotated_from.as_deref() == Some(held) => Standing::Changed,
        None => Standing::Other,
        Some(n) if held == n.salt.as_slice() => match old == Some(m.salt.as_slice()) {
            true => Standing::Rotating,
            false => Standing::NextOnly,
        },
        Some(_) if held == m.salt.as_slice() => Standing::Leaving,
        Some(_) => Standing::Other,
    }
}

/// Whether a device in `s` may sync (read and write) under the key it holds.
pub fn may_sync(s: Standing) -> bool {
    matches!(
        s,
        Standing::Current | Standing::Rotating | Standing::NextOnly
    )
}

/// Which key a document opened under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Under {
    /// The key the device syncs under (the new one while changing).
    Kept,
    /// The old key of a change under way.
    Old,
    /// Neither.
    Neither,
}

/// The keys that open a document for a device in `s`, in the order to try them: the kept key, and
/// the old one only while this device changes the passphrase (after, a document still under the
/// old key is refused like any other that does not open).
pub fn opening_keys(s: Standing) -> &'static [Under] {
    match s {
        Standing::Rotating => &[Under::Kept, Under::Old],
        Standing::Current | Standing::NextOnly => &[Under::Kept],
        Standing::Leaving | Standing::Changed | Standing::Other => &[],
    }
}

/// Which key opened a document, given whether the kept and the old key open it, for a device in
/// `s` (a key it may not use counts as not opening).
pub fn opened_under(s: Standing, kept: bool, old: bool) -> Under {
    opening_keys(s)
        .iter()
        .copied()
        .find(|u| match u {
            Under::Kept => kept,
            Under::Old => old,
            Under::Neither => false,
        })
        .unwrap_or(Under::Neither)
}

/// The marker of a change of passphrase begun on `m`: its key stays, `next` holds the new key's
/// salt, rounds and check (v2 whatever `m` is). `None` when a change is under way already.
pub fn begin(m: &Marker, salt: Vec<u8>, iterations: u32, check: Vec<u8>) -> Option<Marker> {
    if m.next.is_some() {
        return None;
    }
    let next = Marker {
        kdf: Kdf::NEW,
        salt,
        iterations,
        check,
        next: None,
        rotated_from: None,
    };
    Some(Marker {
        next: Some(Box::new(next)),
        rotated_from: None,
        ..m.clone()
    })
}

/// The marker once a change of passphrase is done: the new key is its only one, the old salt kept
/// in `rotated_from`. `None` when no change is under way.
pub fn finish(m: &Marker) -> Option<Marker> {
    let n = m.next.as_deref()?;
    Some(Marker {
        next: None,
        rotated_from: Some(m.salt.clone()),
        ..n.clone()
    })
}

/// One pass over the server's sealed documents: what opened under which key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Server ids of documents under the old key: to seal again under the new one, then delete.
    pub reseal: Vec<String>,
    /// Documents under the new key already.
    pub done: usize,
    /// Documents under neither key: not ours, left alone.
    pub foreign: usize,
}

impl Plan {
    /// Every document of ours this pass found (the progress' total).
    pub fn total(&self) -> usize {
        self.done + self.reseal.len()
    }

    /// Whether the change is done: nothing under the old key is left (of a whole pass: every
    /// page's plan [`Plan::add`]ed).
    pub fn finished(&self) -> bool {
        self.reseal.is_empty()
    }

    /// Whether the change is done when the documents `stuck` (under the old key, but whose leaves
    /// did not open as the same document, so they cannot be carried over) are left where they
    /// are: refused after the change like any document that does not open.
    pub fn finished_besides(&self, stuck: &std::collections::HashSet<String>) -> bool {
        self.reseal.iter().all(|id| stuck.contains(id))
    }

    /// One page's plan added to the pass'.
    pub fn add(&mut self, page: Plan) {
        self.reseal.extend(page.reseal);
        self.done += page.done;
        self.foreign += page.foreign;
    }
}

/// The plan of a pass over server documents `rows` (server id, the key it opened under).
pub fn plan<'a>(rows: impl IntoIterator<Item = (&'a str, Under)>) -> Plan {
    let mut p = Plan::default();
    for (id, under) in rows {
        match under {
            Under::Kept => p.done += 1,
            Under::Old => p.reseal.push(id.to_string()),
            Under::Neither => p.foreign += 1,
        }
    }
    p
}

/// The progress shown while the passphrase changes.
pub fn progress(done: usize, total: usize) -> String {
    format!(
        "Re-encrypting: {} of {total} documents (the passphrase changed; sync goes on when done)",
        done.min(total)
    )
}

/// Passes over the server after which a change that still finds documents under the old key
/// (their old copies not deleted: the server refuses, or another device keeps writing under the
/// old key) stops with an error rather than going round; the next connection tries again.
pub const MAX_PASSES: usize = 4;

/// Sealed documents read in one request of a pass.
pub const PAGE: usize = 25;

/// A page of the server's sealed documents (`x:` ids) from `after` on (itself left out by
/// [`listed`]: it may be deleted by then, so no `skip`), with their bodies and their conflicting
/// revisions; `docs: false`, the ids alone (to count them), every one.
pub fn list_request(db: &str, after: Option<&str>, docs: bool) -> Request {
    let start = serde_json::to_string(after.unwrap_or("x:")).unwrap_or_default();
    let mut query = vec![
        ("startkey".to_string(), start),
        ("endkey".to_string(), "\"x;\"".to_string()),
    ];
    if docs {
        query.push(("include_docs".to_string(), "true".to_string()));
        query.push(("conflicts".to_string(), "true".to_string()));
        query.push(("limit".to_string(), PAGE.to_string()));
    }
    Request {
        method: Method::Get,
        path: format!("/{}/_all_docs", encode(db)),
        query,
        body: None,
    }
}

/// One listed document: its server id, the envelope of its winning revision, the revisions that
/// conflict with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: String,
    pub doc: Value,
    pub conflicts: Vec<String>,
}

/// The sealed documents of a [`list_request`] answer from `after` (rows without a sealed id or a
/// body left out, and `after` itself), and where the next page starts (`None`: this was the last).
pub fn listed(body: &Value, after: Option<&str>) -> (Vec<Listed>, Option<String>) {
    let rows = body.get("rows").and_then(Value::as_array);
    let out: Vec<Listed> = rows
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let id = r.get("id")?.as_str().filter(|id| seal::is_sealed_id(id))?;
            if Some(id) == after {
                return None;
            }
            let doc = r.get("doc").filter(|d| d.is_object())?;
            let conflicts = doc
                .get("_conflicts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect();
            Some(Listed {
                id: id.to_string(),
                doc: doc.clone(),
                conflicts,
            })
        })
        .collect();
    let next = rows
        .filter(|r| r.len() >= PAGE)
        .and_then(|r| r.last())
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .filter(|id| Some(*id) != after)
        .map(str::to_string);
    (out, next)
}

/// The leaves of `id` at revisions `revs`, with an image's bytes (`open_revs`).
pub fn leaves_request(db: &str, id: &str, revs: &[String]) -> Request {
    Request {
        method: Method::Get,
        path: format!("/{}/{}", encode(db), encode(id)),
        query: vec![
            (
                "open_revs".to_string(),
                serde_json::to_string(revs).unwrap_or_default(),
            ),
            ("attachments".to_string(), "true".to_string()),
        ],
        body: None,
    }
}

/// The envelopes of an [`leaves_request`] answer (missing and deleted leaves left out).
pub fn leaves(body: &Value) -> Vec<Value> {
    body.as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("ok").filter(|d| d.get("e2ee").is_some()).cloned())
        .collect()
}

/// The `iv ‖ ciphertext` of an envelope, and of its image's bytes when it has them.
pub fn sealed_parts(envelope: &Value) -> (Vec<u8>, Option<Vec<u8>>) {
    let b64 = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(|d| STANDARD.decode(d).ok())
    };
    let att = format!("/_attachments/{}/data", blob::ATTACHMENT);
    (
        b64(envelope.get("d")).unwrap_or_default(),
        b64(envelope.pointer(&att)),
    )
}

/// A leaf sealed again: `new_id`, the same revision (written with `new_edits: false`, so writing it
/// twice is writing it once), `doc` as `iv ‖ ciphertext`, and the image's bytes when it has them.
pub fn resealed(new_id: &str, rev: &str, doc: &[u8], bytes: Option<&[u8]>) -> Value {
    let mut v = seal::envelope(new_id, Some(rev), doc);
    if let Some(b) = bytes {
        v["_attachments"] = json!({
            blob::ATTACHMENT: { "content_type": blob::SEALED_TYPE, "data": STANDARD.encode(b) }
        });
    }
    v
}

/// The request writing leaves sealed again, as they are (`new_edits: false`).
pub fn write_request(db: &str, docs: Vec<Value>) -> Request {
    Request {
        method: Method::Post,
        path: format!("/{}/_bulk_docs", encode(db)),
        query: Vec::new(),
        body: Some(json!({ "docs": docs, "new_edits": false }).to_string()),
    }
}

/// Whether a [`write_request`]'s answer says every leaf was written (CouchDB answers `[]` or
/// rows without `error`).
pub fn written(status: u16, body: &Value) -> bool {
    (200..300).contains(&status)
        && body
            .as_array()
            .is_some_and(|rows| rows.iter().all(|r| r.get("error").is_none()))
}

/// The request deleting the old copies: each `(server id, revision)` leaf.
pub fn delete_request(db: &str, leaves: &[(String, String)]) -> Request {
    let docs: Vec<Value> = leaves
        .iter()
        .map(|(id, rev)| json!({ "_id": id, "_rev": rev, "_deleted": true }))
        .collect();
    Request {
        method: Method::Post,
        path: format!("/{}/_bulk_docs", encode(db)),
        query: Vec::new(),
        body: Some(json!({ "docs": docs }).to_string()),
    }
}

/// How many sealed documents an ids-only [`list_request`] answer lists.
pub fn counted(body: &Value) -> usize {
    body.get("rows")
        .and_then(Value::as_array)
        .map_or(0, |rows| {
            rows.iter()
                .filter(|r| {
                    r.get("id")
                        .and_then(Value::as_str)
                        .is_some_and(seal::is_sealed_id)
                })
                .count()
        })
}
