//! What the sync driver holds ([`Inner`]: the store, its one [`State`] value, the browser glue)
//! and the moves every part of it makes through them: the device's clock read and kept, stored
//! documents read, local edits recorded (merged as `engine::sync::local::Recording` says) and
//! handed to the running replicator, a change reported, the status shown. Decides nothing. Must
//! not import `ui`.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::browser::Glue;
use super::error::SyncError;
use crate::engine::import::slice::Pace;
use crate::engine::sync::hlc::MAX_SKEW_MS;
use crate::engine::sync::local::{Outbox, Recording};
use crate::engine::sync::restart::Restart;
use crate::engine::sync::status::with_images;
use crate::engine::sync::{blob, Clock, Doc, Replicator};
use crate::session::shared::events::{Local, SessionEvent, SyncView};
use crate::session::shared::held::Held;
use crate::session::shared::pace::{in_slices, perf_now};
use crate::session::shared::{new_id, now};
use crate::store::{Span, Store, SyncSettings, SyncState, SyncedDoc, WritePace};

/// How the driver reports what it changed (`Session::emit`).
pub(super) type Emit = Rc<dyn Fn(SessionEvent)>;

/// Everything the sync driver remembers between its awaits, in one value.
pub(super) struct State {
    /// `Session::emit` (reports and broadcasts), set once the session exists.
    pub(super) emit: Option<Emit>,
    pub(super) settings: SyncSettings,
    pub(super) password: String,
    /// The origin the saved password was given for (issue 28, item 4).
    pub(super) password_origin: String,
    /// Bumped on every settings change: a running loop with an older generation stops.
    pub(super) generation: u32,
    /// When the loop starts again after it stopped on an error (`engine::sync::restart`).
    pub(super) restart: Restart,
    /// The replicator of the running loop (this tab holds the lock).
    pub(super) rep: Option<Replicator>,
    /// Own changes waiting to be tracked, in order (`engine::sync::local::Outbox`).
    pub(super) outbox: Outbox,
    pub(super) view: SyncView,
    /// Size the slices of the store's long sync reads and writes from the time the last ones took.
    pub(super) reads: Pace,
    pub(super) writes: Pace,
    /// What this tab learnt about images' bytes on the server (`blobs.rs`).
    pub(super) blobs: blob::Ledger,
    /// This device turned encryption on for a database without a marker and has not caught up
    /// since: plain copies it pulls meanwhile are kept, after the checks of any pulled document
    /// (`engine::sync::check::plain_copies`); otherwise they are only deleted.
    pub(super) first_encryption: bool,
}

impl State {
    pub(super) fn new(settings: SyncSettings, password: String, password_origin: String) -> State {
        State {
            emit: None,
            settings,
            password,
            password_origin,
            generation: 0,
            restart: Restart::default(),
            rep: None,
            outbox: Outbox::default(),
            view: SyncView::off(),
            reads: Pace::sync(),
            writes: Pace::sync(),
            blobs: blob::Ledger::default(),
            first_encryption: false,
        }
    }
}

/// The driver: the store it moves data through, its state, the browser glue.
pub(super) struct Inner {
    pub(super) store: Store,
    pub(super) state: Held<State>,
    pub(super) glue: Glue,
}

impl Inner {
    /// Whether the loop of settings generation `gen` is still the current one.
    pub(super) fn current(&self, gen: u32) -> bool {
        self.state.with(|s| s.generation == gen)
    }

    /// Runs `f` on the running replicator (`None`: sync stopped).
    pub(super) fn rep<R>(&self, f: impl FnOnce(&mut Replicator) -> R) -> Option<R> {
        self.state.with(|s| s.rep.as_mut().map(f))
    }
}

/// Shows `v` as sync's status (with the images refused), emitted when it changed.
pub(super) fn set_view(i: &Inner, mut v: SyncView) {
    let emit = i.state.with(|s| {
        v.detail = with_images(std::mem::take(&mut v.detail), s.blobs.refused());
        if s.view == v {
            return None;
        }
        s.view = v.clone();
        s.emit.clone()
    });
    if let Some(emit) = emit {
        emit(Local::SyncStatus(v).into());
    }
}

/// Reports a change the driver applied (`Core::applied`: not captured again).
pub(super) fn report(i: &Inner, e: impl Into<SessionEvent>) {
    if let Some(emit) = i.state.with(|s| s.emit.clone()) {
        emit(e.into());
    }
}

/// The device's clock, read from the store and written back after each tick.
pub(super) async fn clock(i: &Inner) -> Result<(Clock, SyncState), SyncError> {
    let mut state = i.store.sync_state().await?;
    if state.device.is_empty() {
        state.device = new_id("d");
        i.store.set_sync_state(&state).await?;
    }
    Ok((
        Clock::resume(&state.device, state.last_stamp.as_ref(), now(), MAX_SKEW_MS),
        state,
    ))
}

pub(super) async fn keep_clock(i: &Inner, c: &Clock) -> Result<(), SyncError> {
    let mut state = i.store.sync_state().await?;
    state.last_stamp = Some(c.last());
    i.store.set_sync_state(&state).await?;
    Ok(())
}

pub(super) async fn stored(i: &Inner, id: &str) -> Result<Option<SyncedDoc>, SyncError> {
    Ok(i.store.sync_docs(&[id.to_string()]).await?.pop())
}

/// The stored documents under an `_id` prefix, by id (what tracking compares each record with).
pub(super) async fn stored_by_id(
    i: &Inner,
    prefix: &str,
) -> Result<HashMap<String, Doc>, SyncError> {
    Ok(i.store
        .sync_docs_with_prefix(prefix)
        .await?
        .into_iter()
        .map(|d| (d.local.doc.id.clone(), d.local.doc))
        .collect())
}

/// Marks `docs` (local edits) dirty, merged into their stored copies, and hands them to the
/// running replicator.
pub(super) async fn record(i: &Inner, docs: Vec<Doc>) -> Result<(), SyncError> {
    record_among(i, docs, None).await
}

/// [`record`], reading only the stored copies of ids in `stored` (when given: every stored id).
pub(super) async fn record_among(
    i: &Inner,
    docs: Vec<Doc>,
    stored: Option<&HashSet<String>>,
) -> Result<(), SyncError> {
    let ids: Vec<String> = docs
        .iter()
        .map(|d| d.id.clone())
        .filter(|id| stored.is_none_or(|s| s.contains(id)))
        .collect();
    let _span = Span::new("record");
    let known = i.store.sync_docs(&ids).await?.into_iter().map(|d| d.local);
    let mut recording = Recording::new(known);
    let mut pace = Pace::sync();
    in_slices(&mut pace, docs.into_iter(), |slice| {
        for d in slice {
            recording.handle_doc(d);
        }
        true
    })
    .await;
    let out: Vec<SyncedDoc> = (recording.finish().into_iter())
        .map(|local| SyncedDoc { local, dirty: true })
        .collect();
    i.store
        .put_sync_docs(&out, &mut paced(i, Which::Writes))
        .await?;
    // Handed to the running replicator (none: sync stopped meanwhile, nothing more to do).
    in_slices(&mut pace, out.into_iter().map(|d| d.local), |slice| {
        let cancel = i.rep(|rep| {
            rep.handle_local_changes(slice);
            rep.poll_cancel()
        });
        match cancel {
            Some(cancel) => {
                if cancel {
                    i.glue.abort();
                }
                true
            }
            None => false,
        }
    })
    .await;
    Ok(())
}

/// Which of the driver's paces a store call is sliced at.
#[derive(Clone, Copy)]
pub(super) enum Which {
    Reads,
    Writes,
}

/// The store's sync reads or writes, sliced at one of the driver's paces (`State::reads`,
/// `State::writes`): each slice timed.
pub(super) struct Paced<'a> {
    i: &'a Inner,
    which: Which,
    started: f64,
}

pub(super) fn paced(i: &Inner, which: Which) -> Paced<'_> {
    Paced {
        i,
        which,
        started: 0.0,
    }
}

impl Paced<'_> {
    fn with<R>(&self, f: impl FnOnce(&mut Pace) -> R) -> R {
        self.i.state.with(|s| match self.which {
            Which::Reads => f(&mut s.reads),
            Which::Writes => f(&mut s.writes),
        })
    }
}

impl WritePace for Paced<'_> {
    fn next(&mut self, _done: usize, _total: usize) -> Option<usize> {
        self.started = perf_now();
        Some(self.with(|p| p.size()))
    }

    fn issued(&mut self, n: usize) {
        let took = perf_now() - self.started;
        self.with(|p| p.observe(n, took));
    }
}
