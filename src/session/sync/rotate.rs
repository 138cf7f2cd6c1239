//! Changing the encryption passphrase, the moving half (`engine::sync::rotate` decides): on the
//! device that holds both key sets, before its replicator starts, reads the server's sealed
//! documents a page at a time, opens each under the new key or the old one, writes each leaf of
//! one under the old key again under the new (its new sealed id, the same revision, with
//! `new_edits: false`), deletes the old copy, and when a whole reading finds nothing under the old
//! key, makes the new key the marker's only one and forgets the old keys. Driven by what the server
//! holds, so a reload or a dropped connection part-way goes on from what is left. A document is
//! carried over only when it opened under the old key, under the sealed id the old id key gives
//! its plain id (ARCHITECTURE `nothing-unopened-is-trusted`); anything else is left as it is.
//! Must not import `ui`.

use std::collections::HashSet;

use serde_json::Value;

use super::browser::fetch;
use super::seal::{
    decrypt_all, encrypt_all, name_all, put_marker, read_marker, unb64, unreachable, SealError,
};
use crate::engine::sync::blob;
use crate::engine::sync::rotate::{self, Listed, Plan, Standing, Under};
use crate::engine::sync::seal::{aad, opened, Marker};
use crate::engine::sync::Request;
use crate::store::{Store, SyncKeys};
use crate::transport::{TextLimits, Timeouts};

/// The limits of a page of documents, and of one image's document with its bytes.
fn limits(max_bytes: usize) -> TextLimits {
    TextLimits {
        max_bytes,
        timeouts: Timeouts {
            first_byte_ms: 20_000,
            idle_ms: 30_000,
        },
        total_ms: 120_000,
    }
}

const PAGE_BYTES: usize = 32 << 20;

/// Sends `req`, its answer read as JSON.
async fn send(
    base: &str,
    auth: Option<&str>,
    req: &Request,
    max: usize,
) -> Result<(u16, Value), SealError> {
    let url = req.url(base);
    let (status, body) = fetch(
        &url,
        req.method.as_str(),
        req.body.as_deref(),
        auth,
        None,
        limits(max),
    )
    .await
    .map_err(unreachable)?;
    Ok((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

async fn ok(base: &str, auth: Option<&str>, req: &Request, max: usize) -> Result<Value, SealError> {
    match send(base, auth, req, max).await? {
        (200..=299, v) => Ok(v),
        (s, _) => Err(SealError::Server(s)),
    }
}

/// The keys of one side of the change.
struct Side<'a> {
    aes: &'a web_sys::CryptoKey,
    mac: &'a web_sys::CryptoKey,
}

/// A listed document under the old key: its plain id, and the plaintext of its winning leaf.
struct Old {
    listed: Listed,
    plain_id: String,
    plain: Vec<u8>,
}

/// Seals again everything under the old key, then finishes the change (`keys` hold the new keys
/// and, in `old`, the old ones: `rotate::Standing::Rotating`). `progress(done, total)` hears each
/// page, and stops the work by answering `false` (the settings changed): `Ok(None)`. Else the keys
/// to sync with, the old ones forgotten.
pub(super) async fn reseal_all(
    store: &Store,
    base: &str,
    db: &str,
    auth: Option<&str>,
    keys: SyncKeys,
    progress: &dyn Fn(usize, usize) -> bool,
) -> Result<Option<SyncKeys>, SealError> {
    let Some(o) = keys.old.as_ref() else {
        return Ok(Some(keys));
    };
    let new = Side {
        aes: &keys.aes,
        mac: &keys.mac,
    };
    let old = Side {
        aes: &o.aes,
        mac: &o.mac,
    };
    let mut stuck: HashSet<String> = HashSet::new();
    for pass_no in 1.. {
        if pass_no > rotate::MAX_PASSES {
            return Err(SealError::RotationStuck);
        }
        let total = rotate::counted(
            &ok(
                base,
                auth,
                &rotate::list_request(db, None, false),
                PAGE_BYTES,
            )
            .await?,
        );
        let mut pass = Plan::default();
        let mut done: HashSet<String> = HashSet::new();
        let mut after: Option<String> = None;
        if !progress(0, total) {
            return Ok(None);
        }
        loop {
            let page = ok(
                base,
                auth,
                &rotate::list_request(db, after.as_deref(), true),
                PAGE_BYTES,
            )
            .await?;
            let (rows, next) = rotate::listed(&page, after.as_deref());
            let (plan, olds) = classify(rows, &new, &old, &mut done).await?;
            stuck.extend(reseal_page(base, db, auth, olds, &new, &old, &mut done).await?);
            pass.add(plan);
            if !progress(done.len(), total) {
                return Ok(None);
            }
            match next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        if pass.finished_besides(&stuck) {
            break;
        }
    }
    finish(store, base, db, auth, keys).await.map(Some)
}

/// Which key each listed document opens under (`rotate::opened_under` for a rotating device); the
/// page's plan, and the documents to seal again with their plain id. Documents under the new key
/// count as done (by plain id, so a document met twice, its old copy not deleted yet, counts once).
async fn classify(
    rows: Vec<Listed>,
    new: &Side<'_>,
    old: &Side<'_>,
    done: &mut HashSet<String>,
) -> Result<(Plan, Vec<Old>), SealError> {
    let items: Vec<(String, Vec<u8>)> = rows
        .iter()
        .map(|l| (l.id.clone(), rotate::sealed_parts(&l.doc).0))
        .collect();
    let under_new = decrypt_all(new.aes, &items).await?;
    let under_old = decrypt_all(old.aes, &items).await?;
    let plain_of = |l: &Listed, p: &Option<Vec<u8>>| {
        let p = p.as_ref()?;
        let doc = opened(&l.doc, p)?;
        Some((doc["_id"].as_str()?.to_string(), p.clone()))
    };
    // What opened under the old key must be under the id the old id key names.
    let mut candidates = Vec::new();
    let mut unders = Vec::with_capacity(rows.len());
    for (i, l) in rows.iter().enumerate() {
        let kept = plain_of(l, &under_new[i]);
        let was = plain_of(l, &under_old[i]);
        let u = rotate::opened_under(Standing::Rotating, kept.is_some(), was.is_some());
        match (u, kept, was) {
            (Under::Kept, Some((id, _)), _) => {
                done.insert(id);
            }
            (Under::Old, _, Some((id, plain))) => candidates.push((i, id, plain)),
            _ => {}
        }
        unders.push(u);
    }
    let ids: Vec<String> = candidates.iter().map(|(_, id, _)| id.clone()).collect();
    let named = name_all(old.mac, &ids).await?;
    let mut olds = Vec::new();
    let mut taken = HashSet::new();
    for ((i, plain_id, plain), sealed) in candidates.into_iter().zip(named) {
        if sealed == rows[i].id {
            taken.insert(i);
            olds.push((i, plain_id, plain));
        } else {
            unders[i] = Under::Neither;
        }
    }
    let plan = rotate::plan(rows.iter().map(|l| l.id.as_str()).zip(unders));
    let mut rows: Vec<Option<Listed>> = rows.into_iter().map(Some).collect();
    let olds = olds
        .into_iter()
        .filter_map(|(i, plain_id, plain)| {
            Some(Old {
                listed: rows[i].take()?,
                plain_id,
                plain,
            })
        })
        .collect();
    Ok((plan, olds))
}

/// One leaf to write again: its revision, its plaintext, its image's bytes (opened).
struct Leaf {
    rev: String,
    plain: Vec<u8>,
    bytes: Option<Vec<u8>>,
}

/// The leaves of an old document: the winning one as listed, or, when it has conflicting ones or
/// is an image's (whose bytes the listing leaves out), every leaf fetched with its bytes. Each
/// opened under the old key, as the same plain document; the others are left out.
async fn leaves_of(
    base: &str,
    db: &str,
    auth: Option<&str>,
    o: &Old,
    old: &Side<'_>,
) -> Result<Vec<Leaf>, SealError> {
    let rev = o.listed.doc["_rev"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let is_blob = blob::is_blob_id(&o.plain_id);
    if o.listed.conflicts.is_empty() && !is_blob {
        return Ok(vec![Leaf {
            rev,
            plain: o.plain.clone(),
            bytes: None,
        }]);
    }
    let mut revs = vec![rev];
    revs.extend(o.listed.conflicts.iter().cloned());
    let max = blob::max_answer_bytes() * revs.len();
    let got = ok(
        base,
        auth,
        &rotate::leaves_request(db, &o.listed.id, &revs),
        max,
    )
    .await?;
    let envelopes = rotate::leaves(&got);
    let mut items = Vec::new();
    for e in &envelopes {
        let (d, bytes) = rotate::sealed_parts(e);
        items.push((o.listed.id.clone(), d));
        items.push((blob::sealed_aad(&o.listed.id), bytes.unwrap_or_default()));
    }
    let plains = decrypt_all(old.aes, &items).await?;
    let mut out = Vec::new();
    for (e, pair) in envelopes.iter().zip(plains.chunks(2)) {
        let Some(plain) = pair[0].clone() else {
            continue;
        };
        let same = opened(e, &plain).is_some_and(|d| d["_id"].as_str() == Some(&o.plain_id));
        let rev = e["_rev"].as_str().map(str::to_string);
        let bytes = pair[1].clone();
        match (same, rev) {
            (true, Some(rev)) if !is_blob || bytes.is_some() => {
                out.push(Leaf { rev, plain, bytes })
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Writes the page's old documents again under the new keys, then deletes their old copies. A
/// leaf that did not open stays where it is (its old copy too); the old ids none of whose leaves
/// opened, which cannot be carried over, are returned.
async fn reseal_page(
    base: &str,
    db: &str,
    auth: Option<&str>,
    olds: Vec<Old>,
    new: &Side<'_>,
    old: &Side<'_>,
    done: &mut HashSet<String>,
) -> Result<Vec<String>, SealError> {
    let mut stuck = Vec::new();
    if olds.is_empty() {
        return Ok(stuck);
    }
    let ids: Vec<String> = olds.iter().map(|o| o.plain_id.clone()).collect();
    let new_ids = name_all(new.mac, &ids).await?;
    let mut docs = Vec::new();
    let mut images = Vec::new();
    let mut gone = Vec::new();
    for (o, new_id) in olds.iter().zip(&new_ids) {
        let leaves = leaves_of(base, db, auth, o, old).await?;
        if leaves.is_empty() {
            stuck.push(o.listed.id.clone());
            continue;
        }
        let mut items: Vec<(Vec<u8>, &[u8])> = Vec::new();
        for l in &leaves {
            items.push((aad(new_id), l.plain.as_slice()));
            if let Some(b) = &l.bytes {
                items.push((aad(&blob::sealed_aad(new_id)), b.as_slice()));
            }
        }
        let mut sealed = encrypt_all(new.aes, &items).await?.into_iter();
        for l in &leaves {
            let d = sealed.next().unwrap_or_default();
            let b = l.bytes.as_ref().and_then(|_| sealed.next());
            let doc = rotate::resealed(new_id, &l.rev, &d, b.as_deref());
            match b.is_some() {
                true => images.push(doc),
                false => docs.push(doc),
            }
            gone.push((o.listed.id.clone(), l.rev.clone()));
        }
    }
    // An image at a time: each can be megabytes.
    let mut writes = vec![docs];
    writes.extend(images.into_iter().map(|d| vec![d]));
    for w in writes.into_iter().filter(|w| !w.is_empty()) {
        let (status, answer) = send(base, auth, &rotate::write_request(db, w), PAGE_BYTES).await?;
        if !rotate::written(status, &answer) {
            return Err(SealError::Server(status));
        }
    }
    let carried = olds
        .iter()
        .zip(ids)
        .filter(|(o, _)| !stuck.contains(&o.listed.id));
    done.extend(carried.map(|(_, id)| id));
    if !gone.is_empty() {
        // A conflict here: the old copy changed meanwhile; the next pass meets it again.
        ok(base, auth, &rotate::delete_request(db, &gone), PAGE_BYTES).await?;
    }
    Ok(stuck)
}

/// Makes the new key the marker's only one (`rotate::finish`), and forgets the old keys.
async fn finish(
    store: &Store,
    base: &str,
    db: &str,
    auth: Option<&str>,
    keys: SyncKeys,
) -> Result<SyncKeys, SealError> {
    let (m, rev) = read_marker(base, db, auth)
        .await?
        .ok_or(SealError::MarkerMissing)?;
    let old_salt = keys.old.as_ref().map(|o| unb64(&o.salt));
    let done: Option<Marker> = match rotate::standing(&m, &unb64(&keys.salt), old_salt.as_deref()) {
        Standing::Rotating => rotate::finish(&m),
        // Finished already (by this device before a reload).
        Standing::Current => None,
        _ => return Err(SealError::Rekeyed),
    };
    if let Some(d) = done {
        put_marker(base, db, auth, &d, Some(&rev)).await?;
    }
    let keys = SyncKeys { old: None, ..keys };
    store.set_sync_keys(&keys).await?;
    Ok(keys)
}
