//! Sync's loop (issue 14, step 4): moves bytes between the engine's sans-IO [`Replicator`] and the
//! browser. It sends the replicator's requests with `fetch` (Basic auth under the rules of
//! `engine::sync::origin`, never through a redirect; an `AbortController` for the longpoll it
//! cancels), holds the Web Lock `memoire-sync` so one tab syncs at a time, sleeps until
//! `poll_timeout` or a wake-up (a local change, the browser coming online, new settings), applies
//! `poll_write`s a batch at a time (the store writes the engine's `sync::batch` plan in one
//! transaction, its reads and writes in slices the engine's `Pace` sizes from the time the last
//! ones took, so no page is one long task) and reports one change per conversation through
//! `Core::applied` (every tab's UI updates; sync does not capture it again), then keeps the
//! checkpoint. It records the outbox's changes one task at a time ([`drain`]): the engine's
//! `track_*` decide which document each produces. Started and woken by the handle
//! (`replication.rs`), which it does not import.
//!
//! What syncs: conversations (title, overrides, deletion, clearing), final messages (and their
//! deletion), the memory (summary versions and the entity graph, through `memory.rs`), the
//! register-like kinds of the engine's table (the facts about the user and the projects, through
//! `registers.rs`'s one path), and the images' bytes (`blobs.rs`, before each push and each
//! longpoll).
//!
//! Every decision is the engine's (`engine::sync`: the replicator, and `local` for this device's
//! side: what a change tracks, the outbox, what a batch reports, what the memory's effects
//! change); this is a loop that reads the clock, makes the device id, and moves data. What it
//! remembers between awaits is one `State` value (`state.rs`); what the browser hands back (the
//! `online` listener, the `AbortController`, the wake-up, `btoa`, `fetch`) is `browser.rs`'s.
//! Must not import `ui`.

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;

use super::browser::{tz_offset, warn};
use super::error::SyncError;
use super::seal::Link;
use super::state::{
    clock, keep_clock, paced, record, record_among, report, set_view, stored, Inner, State, Which,
};
use super::{blobs, memory, registers};
use crate::engine::sync::check;
use crate::engine::sync::doc::{conversation_id, message_id};
use crate::engine::sync::hlc::MAX_SKEW_MS;
use crate::engine::sync::local::{self, older_refusals, track_removed, Reads, Recorded, Tracked};
use crate::engine::sync::order::{in_order, latest_stamp};
use crate::engine::sync::origin::{self, basic_auth};
use crate::engine::sync::probe::check_form;
use crate::engine::sync::status::{describe, label, stopped};
use crate::engine::sync::track::{self, Effect};
use crate::engine::sync::{blob, Config, Doc, Replicator, Reply, Write};
use crate::engine::tabs::Change;
use crate::session::shared::error::Boxed;
use crate::session::shared::events::SyncView;
use crate::session::shared::now;
use crate::session::shared::tabs as sync;
use crate::store::{Span, SyncSettings};
use crate::transport::{TextLimits, Timeouts, TransportError};

/// The Web Lock that lets one tab of this origin sync at a time.
const LOCK: &str = "memoire-sync";
/// While waiting for the lock, or idle, look for other tabs' local changes this often.
const IDLE_MS: i32 = 5_000;

/// Records the queued changes as synced documents, in order, in one task at a time. A change that
/// failed because sync's code could not be fetched waits at the queue's head when
/// `track::waits_for_code` says so (a deletion), for the next change or the sync loop's next start
/// (`connect`); other failures are let go with a warning.
pub(super) fn drain(i: &Rc<Inner>) {
    if !i.state.with(|s| s.outbox.poll_start()) {
        return;
    }
    let inner = i.clone();
    spawn_local(async move {
        while let Some(t) = inner.state.with(|s| s.outbox.poll_next()) {
            let done = track_split(&inner, &t).await;
            let went = match &done {
                Ok(()) => Recorded::Done,
                Err(SyncError::Unavailable) => Recorded::NoCode,
                Err(_) => Recorded::Failed,
            };
            if !inner.state.with(|s| s.outbox.handle_recorded(t, went)) {
                break;
            }
            if let Err(err) = done {
                warn(&format!("a change was not recorded for sync: {err}"));
            }
        }
        inner.glue.wake();
    });
}

/// The sync loop of settings generation `gen`, started again after each stop on an error when
/// `engine::sync::restart` says (after a backoff, or at once when the browser comes back online),
/// until the settings change. The status says the error and when it starts again.
pub(super) async fn run_again(i: &Rc<Inner>, gen: u32) {
    while i.current(gen) {
        let Err(e) = run_split(i, gen).await else {
            return;
        };
        if !i.current(gen) {
            return; // new settings meanwhile: their loop says how it goes
        }
        let retry_at = i.state.with(|s| s.restart.handle_stopped(now(), e.stop()));
        let (label, detail) = stopped(&e.to_string(), retry_at, tz_offset());
        let state = "error".into();
        set_view(
            i,
            SyncView {
                state,
                label,
                detail,
            },
        );
        // Until the restart time (`online` brings it forward), or new settings (a new generation).
        loop {
            let at = i.state.with(|s| {
                let go = s.generation != gen || s.restart.poll_start(now());
                (!go).then(|| s.restart.poll_timeout())
            });
            let Some(at) = at else { break };
            let ms = at.map_or(60_000, |at| (at - now()).clamp(0, 60_000)) as i32;
            i.glue.sleep(ms).await;
        }
    }
}

/// The documents a tracked change produces, from what `engine::sync::local` says it reads,
/// recorded for the server.
async fn track_change(i: &Inner, t: &Tracked) -> Result<(), SyncError> {
    let Some(reads) = t.reads() else {
        return Ok(());
    };
    if let Reads::EntityDeleted {
        conversation,
        entity,
    } = &reads
    {
        return memory::track_entity_deleted(i, conversation, entity).await;
    }
    let (mut clock, _) = clock(i).await?;
    let at = now();
    let doc = |p: Option<crate::store::SyncedDoc>| p.map(|p| p.local.doc);
    let docs: Vec<Doc> = match (reads, t) {
        (Reads::Conversation { doc: id }, Tracked::Change(Change::Conversation(c))) => {
            let prev = doc(stored(i, &id).await?);
            Vec::from_iter(track::track_conversation(prev.as_ref(), c, &mut clock, at))
        }
        (Reads::Removed { doc: id }, _) => {
            let prev = doc(stored(i, &id).await?);
            Vec::from_iter(track_removed(prev.as_ref(), &id, &mut clock, at))
        }
        (Reads::Message { doc: id }, Tracked::Change(Change::MessageAdded(m)))
        | (Reads::Message { doc: id }, Tracked::Change(Change::MessageProgress(m))) => {
            let prev = doc(stored(i, &id).await?);
            Vec::from_iter(track::track_message(prev.as_ref(), m, &mut clock, at))
        }
        (Reads::Memory { conversation }, _) => {
            memory::track_memory(i, Some(&conversation), true, &mut clock, at).await?
        }
        (Reads::Register(kind), _) => registers::track(i, Some(kind), &mut clock, at).await?,
        (
            Reads::Cleared {
                conversation,
                prefixes,
                doc: id,
            },
            _,
        ) => {
            let mut docs: Vec<Doc> = Vec::new();
            for prefix in prefixes {
                let found = i.store.sync_docs_with_prefix(&prefix).await?;
                docs.extend(found.into_iter().map(|d| d.local.doc));
            }
            docs.extend(doc(stored(i, &id).await?));
            track::track_clear(&docs, &conversation, &mut clock, at)
        }
        _ => vec![],
    };
    if docs.is_empty() {
        return Ok(());
    }
    keep_clock(i, &clock).await?;
    record(i, docs).await
}

/// Puts every local conversation and final message into the synced documents (first sync with
/// this server): the engine's `track_*` skip what is already recorded.
async fn seed(i: &Inner) -> Result<(), SyncError> {
    let _span = Span::new("seed");
    let (mut clock, _) = clock(i).await?;
    let mut docs = Vec::new();
    // Every stored id at once: a message is read back only when its document exists and it was
    // deleted since (a stored message is never written again, so nothing else needs its copy).
    let held = i.store.sync_doc_ids().await?;
    for c in i.store.list_conversations(100_000).await? {
        let prev = stored(i, &conversation_id(&c.id)).await?;
        if let Some(d) =
            track::track_conversation(prev.as_ref().map(|p| &p.local.doc), &c, &mut clock, now())
        {
            docs.push(d);
        }
        let messages = i.store.load_all_messages(&c.id).await?;
        let ids: Vec<String> = messages.iter().map(|m| message_id(&m.id)).collect();
        let deleted: Vec<String> = messages
            .iter()
            .zip(&ids)
            .filter(|(m, id)| m.meta.deleted && held.contains(*id))
            .map(|(_, id)| id.clone())
            .collect();
        let known: std::collections::HashMap<String, Doc> = (i.store.sync_docs(&deleted).await?)
            .into_iter()
            .map(|d| (d.local.doc.id.clone(), d.local.doc))
            .collect();
        for (m, id) in messages.iter().zip(&ids) {
            if held.contains(id) && !m.meta.deleted {
                continue;
            }
            let prev = known.get(id);
            docs.extend(track::track_message(prev, m, &mut clock, now()));
        }
        docs.extend(memory::track_memory(i, Some(&c.id), false, &mut clock, now()).await?);
    }
    docs.extend(memory::track_memory(i, None, true, &mut clock, now()).await?);
    docs.extend(registers::track(i, None, &mut clock, now()).await?);
    keep_clock(i, &clock).await?;
    record_among(i, docs, Some(&held)).await
}

/// Applies a batch of merges (a pulled `_changes` page, or a pushed page the server confirmed) in
/// one store transaction, as the engine plans it (`engine::sync::batch`), then reports one change
/// per conversation: the conversation, and its one new message or (more, or alternatives) a
/// `BranchChanged` that has open views read it again; a conversation deleted elsewhere as
/// `ConversationRemoved`, messages deleted elsewhere as one `BranchChanged` per conversation. The
/// memory follows.
async fn apply_merges(i: &Inner, merges: Vec<(Doc, String)>) -> Result<(), SyncError> {
    if merges.is_empty() {
        return Ok(());
    }
    let mut plan = {
        let _span = Span::new("apply");
        let (mut reads, mut writes) = (paced(i, Which::Reads), paced(i, Which::Writes));
        (i.store)
            .apply_sync_batch(merges, &mut reads, &mut writes)
            .await?
    };
    let requeue = std::mem::take(&mut plan.requeue);
    i.rep(|rep| {
        rep.handle_refused(older_refusals(&plan.older));
        if !requeue.is_empty() {
            rep.handle_local_changes(requeue);
        }
    });
    let span = Span::new("report");
    let reports = local::reports(&plan);
    for id in &reports.branched {
        crate::session::shared::branch::mark_branched(&i.store, id).await?;
    }
    for c in reports.changes {
        report(i, c);
    }
    drop(span);
    let _span = Span::new("later");
    apply_later(i, plan.later).await
}

/// The memory's effects a batch leaves for after its transaction, grouped as
/// `engine::sync::local::group` says (each scope's graph changed once, then unified once).
async fn apply_later(i: &Inner, effects: Vec<Effect>) -> Result<(), SyncError> {
    let g = local::group(effects);
    memory::apply_summaries(i, g.summaries).await?;
    registers::apply(i, g.registers).await?;
    for scope in memory::apply_graphs(i, g.graphs).await? {
        memory::unify_scope(i, &scope).await?;
    }
    Ok(())
}

/// The replicator's next writes: its consecutive merges up to the next checkpoint (or other write),
/// in order (`engine::sync::order`: other documents first, then messages in their writer's order),
/// then that write. The clock sees the merges' latest stamp once (observing the greatest is
/// observing all).
async fn next_batch(i: &Inner) -> Result<(Vec<(Doc, String)>, Option<Write>), SyncError> {
    let span = Span::new("batch");
    let mut merges = Vec::new();
    let mut rest = None;
    while let Some(w) = i.rep(Replicator::poll_write).flatten() {
        if matches!(w, Write::Merge { .. }) {
            merges.push(w);
        } else {
            rest = Some(w);
            break;
        }
    }
    in_order(&mut merges);
    let seen = latest_stamp(&merges);
    drop(span);
    if let Some(seen) = seen {
        let (mut c, _) = clock(i).await?;
        c.observe(&seen, now(), MAX_SKEW_MS);
        keep_clock(i, &c).await?;
    }
    let merges = merges
        .into_iter()
        .filter_map(|w| match w {
            Write::Merge { remote, rev } => Some((remote, rev)),
            _ => None,
        })
        .collect();
    Ok((merges, rest))
}

async fn apply_writes(i: &Inner, key: &str) -> Result<(), SyncError> {
    loop {
        let (merges, rest) = next_batch(i).await?;
        if merges.is_empty() && rest.is_none() {
            return Ok(());
        }
        apply_merges(i, merges).await?;
        match rest {
            Some(Write::Checkpoint { since }) => {
                let mut s = i.store.sync_state().await?;
                s.since = Some(since);
                s.since_for = Some(key.to_string());
                i.store.set_sync_state(&s).await?;
            }
            Some(Write::Repush { id }) => {
                if let Some(mut p) = stored(i, &id).await? {
                    p.local.rev = None;
                    p.dirty = true;
                    (i.store)
                        .put_sync_docs(&[p.clone()], &mut paced(i, Which::Writes))
                        .await?;
                    i.rep(|rep| rep.handle_local_changes([p.local]));
                }
            }
            Some(Write::PushAll) => {
                let all = i.store.mark_all_sync_docs_dirty().await?;
                i.rep(|rep| rep.handle_local_changes(all));
            }
            Some(Write::Merge { .. }) | None => {}
        }
    }
}

/// Split point `sync` (scripts/build-wasm.sh): the sync loop and everything only it reaches (the
/// replicator, merges, batches, the memory's documents) are in the sync chunk, fetched when sync
/// first runs (never, with sync off); a failed fetch is [`SyncError::Unavailable`].
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn run_split(i: &Rc<Inner>, gen: u32) -> Boxed<'_, (), SyncError> {
    Box::pin(run(i, gen))
}

/// Split point `sync`: the documents a local change produces (an entity deleted in the memory
/// pane: tombstones).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn track_split<'a>(i: &'a Inner, t: &'a Tracked) -> Boxed<'a, (), SyncError> {
    Box::pin(track_change(i, t))
}

/// The sync loop of one settings generation: waits for the lock, then runs until the settings
/// change. A request that times out ends the connection and releases the lock, so another tab
/// waiting for it takes over; this tab asks for the lock again once its retry time came.
async fn run(i: &Rc<Inner>, gen: u32) -> Result<(), SyncError> {
    set_view(
        i,
        SyncView {
            state: "syncing".into(),
            label: String::new(),
            detail: "Waiting for another tab that is syncing".into(),
        },
    );
    let mut first = true;
    while i.current(gen) {
        let Some(retry_at) = connect(i, gen, first).await? else {
            break;
        };
        first = false;
        i.glue
            .sleep((retry_at - now()).clamp(0, 60_000) as i32)
            .await;
    }
    Ok(())
}

/// One connection under the lock (seeding the documents first when `first`): `Some(retry_at)`
/// when it ended on a request that timed out, `None` when the settings changed.
async fn connect(i: &Rc<Inner>, gen: u32, first: bool) -> Result<Option<i64>, SyncError> {
    let _lock = sync::lock(LOCK).await;
    if !i.current(gen) {
        return Ok(None);
    }
    let s = i.state.with(|st| st.settings.clone());
    let base = check_form(&s.url, &s.database)?;
    let auth = run_auth(i, &s)?;
    let sealer = match s.encrypt {
        true => {
            let (db, pass) = (s.database.trim(), None);
            let keys = super::seal::unlock(&i.store, &base, db, auth.as_deref(), pass).await?;
            // This device changes the passphrase: every document sealed again first.
            let keys = match keys.old.is_some() {
                true => match reseal(i, gen, &base, db, auth.as_deref(), keys).await? {
                    Some(k) => k,
                    None => return Ok(None),
                },
                false => keys,
            };
            Some(super::seal::Sealer::new(keys, db, i.store.clone()))
        }
        false => {
            super::seal::guard_plain(&base, s.database.trim(), auth.as_deref()).await?;
            None
        }
    };
    // Encrypted documents are another namespace on the server: a checkpoint of its own.
    let e2ee = if s.encrypt { "#e2ee" } else { "" };
    let key = format!("{base}/{}{e2ee}", s.database.trim());
    let (_, state) = clock(i).await?;
    let since = if state.since_for.as_deref() == Some(key.as_str()) {
        state.since.clone()
    } else {
        // Another server or database: everything local must reach it.
        i.store.mark_all_sync_docs_dirty().await?;
        None
    };
    if first {
        seed(i).await?;
    }
    let mut cfg = Config::new(s.database.trim(), &state.device);
    cfg.guard_marker = !s.encrypt;
    let mut rep = Replicator::new(cfg, since);
    let dirty = {
        let _span = Span::new("dirty");
        i.store.dirty_sync_docs().await?
    };
    let span = Span::new("outbox");
    rep.handle_local_changes(dirty);
    drop(span);
    i.state.with(|st| {
        st.rep = Some(rep);
        st.restart.handle_connected();
    });
    // A deletion that waited for sync's code (`drain`): recorded now, and handed to this replicator.
    drain(i);
    let link = Link {
        base: &base,
        db: s.database.trim(),
        auth: auth.as_deref(),
        sealer: sealer.as_ref(),
    };
    let result = drive(i, gen, &link, &key).await;
    i.state.with(|st| st.rep = None);
    result
}

/// Seals every document again under the new keys of a change of passphrase (`rotate.rs`), its
/// progress in the sync status; `None` when the settings changed meanwhile.
async fn reseal(
    i: &Inner,
    gen: u32,
    base: &str,
    db: &str,
    auth: Option<&str>,
    keys: crate::store::SyncKeys,
) -> Result<Option<crate::store::SyncKeys>, SyncError> {
    let progress = |done: usize, total: usize| {
        set_view(
            i,
            SyncView {
                state: "syncing".into(),
                label: "re-encrypting…".into(),
                detail: crate::engine::sync::rotate::progress(done, total),
            },
        );
        i.current(gen)
    };
    Ok(super::rotate::reseal_all(&i.store, base, db, auth, keys, &progress).await?)
}

/// The saved password's `Basic` credentials for `s`'s server, only while its origin is the one
/// the password was given for (else none: the new host never receives the old host's); an error
/// when it would go over plain http to another machine (one saved before that rule).
pub(super) fn run_auth(i: &Inner, s: &SyncSettings) -> Result<Option<String>, SyncError> {
    let (pass, saved_for) = i
        .state
        .with(|st| (st.password.clone(), st.password_origin.clone()));
    let ok = origin::password_for(None, &pass, &saved_for, &s.url).is_some();
    let pass = if ok { pass } else { String::new() };
    origin::plain_http_check(&s.url, &pass)?;
    Ok(basic_auth(&s.user, &pass))
}

/// Plain copies of our documents the server still held: deleted on the server; only while this
/// device first encrypts the database, those that pass the checks of any pulled document are kept
/// first (they go back up sealed; `engine::sync::check::plain_copies` decides).
async fn keep_plain(
    i: &Inner,
    link: &Link<'_>,
    plain: Vec<serde_json::Value>,
) -> Result<(), SyncError> {
    let Some(s) = link.sealer.filter(|_| !plain.is_empty()) else {
        return Ok(());
    };
    let first = i.state.with(|st| st.first_encryption);
    let checked = i.rep(|rep| {
        let (docs, refused) = check::plain_copies(&plain, first, &rep.config().limits, now());
        match first {
            true => rep.handle_refused(refused),
            false => rep.handle_unopened(refused),
        }
        docs
    });
    let Some(docs) = checked else {
        return Ok(());
    };
    record(i, docs).await?;
    s.purge(&plain, link.base, link.auth).await;
    Ok(())
}

async fn drive(
    i: &Rc<Inner>,
    gen: u32,
    link: &Link<'_>,
    key: &str,
) -> Result<Option<i64>, SyncError> {
    while i.current(gen) {
        // Bulk work (a catching-up pull, a push) goes out while the last answer's writes are
        // applied (`Replicator::bulk_next`); anything else waits for them.
        let overlap = i.rep(|r| r.bulk_next(now())).unwrap_or(false);
        if !overlap {
            apply_writes(i, key).await?;
        }
        let next = i.rep(|rep| {
            let _span = Span::new("request");
            let req = rep.poll_request(now());
            (req, status_view(rep), rep.poll_timeout(), text_limits(rep))
        });
        let Some((req, view, timeout, limits)) = next else {
            return Ok(None);
        };
        set_view(i, view);
        let Some(req) = req else {
            if overlap {
                apply_writes(i, key).await?;
            }
            // Idle, or backing off: sleep until the retry time, a wake-up, or the next look for
            // other tabs' changes.
            let ms = timeout.map_or(IDLE_MS, |at| ((at - now()) as i32).clamp(0, IDLE_MS));
            i.glue.sleep(ms).await;
            let _span = Span::new("dirty");
            let dirty = i.store.dirty_sync_docs().await?;
            i.rep(|rep| rep.handle_local_changes(dirty));
            continue;
        };
        if blob::round_first(&req) {
            let _span = Span::new("blobs");
            blobs::round(i, link, link.db).await?;
        }
        let abort = i.glue.begin_request();
        let fetch = link.send(req, abort.as_ref(), limits);
        let sent = if overlap {
            let (applied, out) = futures_util::future::join(apply_writes(i, key), fetch).await;
            applied?;
            out
        } else {
            fetch.await
        };
        let aborted = i.glue.end_request(abort);
        let answer = i.state.with(|st| {
            let _span = Span::new("response");
            answered(st, sent.out, sent.unopened, aborted)
        });
        let Some((stalled, view, refused)) = answer else {
            return Ok(None);
        };
        for reason in refused {
            warn(&format!("a document from the server was refused: {reason}"));
        }
        set_view(i, view);
        if stalled.is_some() {
            // Let another tab take over: the lock goes with this connection.
            return Ok(stalled);
        }
        keep_plain(i, link, sent.plain).await?;
    }
    Ok(None)
}

/// One request's outcome and the documents of its answer that could not be opened, handed to the
/// replicator (`None`: sync stopped): `Some(retry_at)` when the connection ends, the status to
/// show, and the refusals to say in the console.
fn answered(
    st: &mut State,
    out: Result<(u16, Reply), TransportError>,
    unopened: Vec<String>,
    aborted: bool,
) -> Option<(Option<i64>, SyncView, Vec<String>)> {
    let rep = st.rep.as_mut()?;
    let stalled = handle_answer(rep, out, aborted);
    rep.handle_unopened(unopened);
    if rep.status() == crate::engine::sync::Status::Synced {
        // Caught up: plain copies found from now on are only deleted.
        st.first_encryption = false;
    }
    let rep = st.rep.as_mut()?;
    Some((stalled, status_view(rep), rep.poll_refused()))
}

/// Hands one request's outcome to the replicator; `Some(retry_at)` when it timed out (no answer,
/// or one too slow) and the connection ends.
fn handle_answer(
    rep: &mut Replicator,
    out: Result<(u16, Reply), TransportError>,
    aborted: bool,
) -> Option<i64> {
    match out {
        Err(TransportError::Timeout { first_byte }) => {
            if rep.handle_stalled(now(), first_byte) {
                return Some(rep.poll_timeout().unwrap_or_else(now));
            }
        }
        Err(TransportError::TooSlow { .. }) => {
            if rep.handle_too_slow(now()) {
                return Some(rep.poll_timeout().unwrap_or_else(now));
            }
        }
        Err(TransportError::TooLarge { .. }) => rep.handle_too_large(now()),
        _ if aborted => rep.handle_cancelled(),
        Ok((status, body)) => rep.handle_reply(now(), status, body),
        Err(TransportError::Network(reason)) => rep.handle_failure(now(), &reason),
        Err(TransportError::Redirected) => rep.handle_redirected(now()),
        Err(e) => rep.handle_failure(now(), &e.to_string()),
    }
    None
}

/// The status the sidebar shows, in the words of `engine::sync::status`.
fn status_view(rep: &Replicator) -> SyncView {
    let offset = tz_offset();
    let (state, detail) = describe(&rep.status(), rep.refused(), rep.unopened(), offset);
    SyncView {
        state: state.into(),
        label: label(&rep.status(), offset),
        detail,
    }
}

/// The limits of the replicator's requests.
fn text_limits(rep: &Replicator) -> TextLimits {
    let c = rep.config();
    TextLimits {
        max_bytes: c.max_body_bytes,
        timeouts: Timeouts {
            first_byte_ms: c.first_byte_ms,
            idle_ms: c.idle_ms,
        },
        total_ms: c.total_ms,
    }
}
