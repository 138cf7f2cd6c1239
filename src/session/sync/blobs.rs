//! Images' bytes in sync, the moving half (`engine::sync::blob` decides): when the replicator is
//! idle, compares the images local messages use with the Blobs stored here, asks the server which
//! of ours it lacks and puts those (sealed when encrypting), and fetches the ones this device lacks,
//! opens them, has the engine check them against their message, and stores them; the conversation
//! whose message now shows its image is reported (`BranchChanged`: its views read it again).
//! A failure to reach the server is retried on a later round; nothing here stops the sync loop but
//! a store error. Must not import `ui`.

use super::browser::warn;
use super::error::SyncError;
use super::seal::Link;
use super::state::{report, Inner};
use crate::engine::sync::blob::{self, Got};
use crate::engine::sync::{Reply, Request};
use crate::engine::tabs::Change;
use crate::session::shared::digest;
use crate::session::shared::now;
use crate::transport::{TextLimits, Timeouts};

/// The limits of one blob request: an answer of [`blob::max_answer_bytes`] within two minutes.
fn limits() -> TextLimits {
    TextLimits {
        max_bytes: blob::max_answer_bytes(),
        timeouts: Timeouts {
            first_byte_ms: 20_000,
            idle_ms: 30_000,
        },
        total_ms: 120_000,
    }
}

/// Changes this tab's ledger of images (`engine::sync::blob::Ledger`).
fn ledger(i: &Inner, f: impl FnOnce(&mut blob::Ledger)) {
    i.state.with(|s| f(&mut s.blobs))
}

/// One round: pushes what the server lacks, fetches what this device lacks.
pub(super) async fn round(i: &Inner, link: &Link<'_>, db: &str) -> Result<(), SyncError> {
    let inv = i.store.blob_inventory().await?;
    let stored = inv.stored.into_iter().collect();
    let plan = i.state.with(|s| s.blobs.plan(&inv.used, &stored, now()));
    for some in plan.ask.chunks(blob::ASK_BATCH) {
        push(i, link, db, some).await?;
    }
    for hash in &plan.fetch {
        fetch(i, link, db, hash).await?;
    }
    Ok(())
}

async fn send(link: &Link<'_>, req: Request) -> Result<(u16, Reply), String> {
    link.send(req, None, limits())
        .await
        .out
        .map_err(|e| e.to_string())
}

/// Asks the server which of `hashes` it holds, and puts the others.
async fn push(i: &Inner, link: &Link<'_>, db: &str, hashes: &[String]) -> Result<(), SyncError> {
    let ids: Vec<String> = hashes.iter().map(|h| blob::blob_id(h)).collect();
    let held = match send(link, blob::ask_request(db, &ids)).await {
        Ok((200, reply)) => blob::held(&reply),
        Ok((status, _)) => Err(format!("the server answered HTTP {status}")),
        Err(e) => Err(e),
    };
    let held = match held {
        Ok(h) => h,
        Err(e) => {
            warn(&format!(
                "could not ask which images the server holds ({e}); later"
            ));
            let t = now();
            i.state
                .with(|s| hashes.iter().for_each(|h| s.blobs.later(h, t)));
            return Ok(());
        }
    };
    for (hash, id) in hashes.iter().zip(&ids) {
        if held.contains(id) {
            ledger(i, |l| l.held(hash));
            continue;
        }
        let done = put(i, link, db, hash).await?;
        match done {
            Ok(()) => ledger(i, |l| l.held(hash)),
            Err(e) => {
                warn(&format!("an image was not sent to the server ({e}); later"));
                ledger(i, |l| l.later(hash, now()));
            }
        }
    }
    Ok(())
}

/// Puts the stored image `hash` (sealed when encrypting); `Err` in words when it did not go.
async fn put(
    i: &Inner,
    link: &Link<'_>,
    db: &str,
    hash: &str,
) -> Result<Result<(), String>, SyncError> {
    let Some(Some(stored)) = i.store.attachment_blobs(&[hash.to_string()]).await?.pop() else {
        return Ok(Ok(())); // gone since the inventory: nothing to send
    };
    let bytes = match digest::bytes_of(&stored.blob).await {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let doc = blob::blob_doc(hash, &stored.mime, bytes.len() as u64);
    let plain_id = blob::blob_id(hash);
    let req = match link.sealer {
        Some(s) => {
            let sealed = async {
                let id = s.server_id(&plain_id).await?;
                let (envelope, bytes) = s.seal_blob(&id, &doc, &bytes).await?;
                Ok::<_, super::seal::SealError>((id, envelope, bytes))
            };
            match sealed.await {
                Ok((id, env, b)) => blob::put_request(db, &id, env, blob::SEALED_TYPE, &b),
                Err(e) => return Ok(Err(e.to_string())),
            }
        }
        None => blob::put_request(db, &plain_id, doc, &stored.mime, &bytes),
    };
    Ok(match send(link, req).await {
        Ok((status, _)) if blob::put_done(status) => Ok(()),
        Ok((status, _)) => Err(format!("the server answered HTTP {status}")),
        Err(e) => Err(e),
    })
}

/// Fetches the image `hash` some local message uses, checks it and stores it.
async fn fetch(i: &Inner, link: &Link<'_>, db: &str, hash: &str) -> Result<(), SyncError> {
    let Some((conversation, a)) = i.store.blob_user(hash).await? else {
        return Ok(());
    };
    let plain_id = blob::blob_id(hash);
    let server_id = match link.sealer {
        Some(s) => s.server_id(&plain_id).await?,
        None => plain_id,
    };
    let got = match send(link, blob::get_request(db, &server_id)).await {
        Ok((status, Reply::Text(t))) => blob::read_got(status, &t),
        Ok((status, Reply::Json(v))) => blob::read_got(status, &v.to_string()),
        Err(e) if e.contains("larger than") => Got::Failed(format!("over the size limit: {e}")),
        Err(e) => {
            warn(&format!("an image could not be fetched ({e}); later"));
            ledger(i, |l| l.later(hash, now()));
            return Ok(());
        }
    };
    let bytes = match got {
        Got::Bytes { bytes, .. } => bytes,
        Got::Absent => {
            ledger(i, |l| l.later(hash, now()));
            return Ok(());
        }
        Got::Failed(e) => return refuse(i, &a, hash, &e),
    };
    let bytes = match link.sealer {
        Some(s) => match s.open_blob(&server_id, bytes).await? {
            Some(b) => b,
            None => return refuse(i, &a, hash, "it does not open with this passphrase's key"),
        },
        None => bytes,
    };
    let Ok(sha) = digest::sha256_hex(&bytes).await else {
        // This browser could not hash it now: not the server's fault, asked again later.
        ledger(i, |l| l.later(hash, now()));
        return Ok(());
    };
    if let Err(e) = blob::check_bytes(&a, &bytes, &sha) {
        return refuse(i, &a, hash, &e);
    }
    let Ok(b) = digest::blob_of(&bytes, &a.mime) else {
        return Ok(());
    };
    i.store
        .put_attachment_blobs(&[(hash.to_string(), a.mime.clone(), b)])
        .await?;
    ledger(i, |l| l.held(hash));
    report(i, Change::BranchChanged(conversation));
    Ok(())
}

/// Refuses the server's image `hash`: said in the console and the sync status, not asked again.
fn refuse(
    i: &Inner,
    a: &crate::engine::model::Attachment,
    hash: &str,
    reason: &str,
) -> Result<(), SyncError> {
    warn(&blob::refused(a, reason));
    ledger(i, |l| l.refuse(hash));
    Ok(())
}
