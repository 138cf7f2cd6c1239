//! Sync's driver (issue 14, step 4): moves bytes between the engine's sans-IO [`Replicator`] and
//! the browser. It sends the replicator's requests with `fetch` (Basic auth under the rules of
//! `engine::sync::origin`, never through a redirect; an `AbortController` for the longpoll it
//! cancels), holds the Web Lock `memoire-sync` so one tab syncs at a time,
//! sleeps until `poll_timeout` or a wake-up (a local change, the browser coming online, new
//! settings), applies `poll_write`s a batch at a time (the store writes the engine's
//! `sync::batch` plan in one transaction, its reads and writes in slices the engine's `Pace`
//! sizes from the time the last ones took, so no page is one long task) and reports one change
//! per conversation through `Core::applied` (every tab's UI updates; sync does not capture it
//! again), then keeps the checkpoint. The session's own changes reach it as the core's `Capture`
//! ([`Replication::observe`] for a change of shared data, [`Replication::entity_deleted`] for an
//! entity deleted in the memory pane): the engine's `track_*` decide which document each produces.
//!
//! What syncs: conversations (title, overrides, deletion, clearing), final messages (and their
//! deletion), the memory (summary versions and the entity graph, through `memory.rs`) and the
//! facts about the user (said, edited, past, forgotten: `memory.rs` too), and the images' bytes
//! (`blobs.rs`, before each push and each longpoll).
//!
//! Every decision is the engine's; this module reads the clock, makes the device id, and moves
//! data. With sync disabled (the default) it does nothing at all. Must not import `ui`.

use crate::engine::tabs::Change;
use crate::session::shared::events::Local;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{spawn_local, JsFuture};

use super::{blobs, memory};
use crate::engine::import::slice::Pace;
use crate::engine::model::MessageStatus;
use crate::engine::sync::doc::{conversation_id, id_part, message_id};
use crate::engine::sync::hlc::MAX_SKEW_MS;
use crate::engine::sync::order::{in_order, latest_stamp};
use crate::engine::sync::origin::{self, origin_of};
use crate::engine::sync::probe::{check_form, diagnose, DbProbe, Problem};
use crate::engine::sync::restart::{Restart, Stop};
use crate::engine::sync::status::{describe, label, stopped, with_images};
use crate::engine::sync::track::{self, Effect};
use crate::engine::sync::{blob, check};
use crate::engine::sync::{Clock, Config, Doc, LocalDoc, Replicator, Reply, Request, Write};
use crate::engine::tabs;
use crate::session::shared::error::Boxed;
use crate::session::shared::events::{SessionEvent, SyncView};
use crate::session::shared::pace::{in_slices, perf_now};
use crate::session::shared::tabs as sync;
use crate::session::shared::{new_id, now, Capture};
use crate::store::{Span, Store, StoreError, SyncSettings, SyncState, SyncedDoc, WritePace};
use crate::transport::{self, TextLimits, Timeouts, TransportError};

/// The Web Lock that lets one tab of this origin sync at a time.
const LOCK: &str = "memoire-sync";
/// While waiting for the lock, or idle, look for other tabs' local changes this often.
const IDLE_MS: i32 = 5_000;
/// "Test connection" waits this long for an answer and reads at most this much of it.
const TEST_LIMITS: TextLimits = TextLimits {
    max_bytes: 1 << 20,
    timeouts: Timeouts {
        first_byte_ms: 10_000,
        idle_ms: 10_000,
    },
    total_ms: 20_000,
};

/// What can go wrong in the sync driver, in words a user can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SyncError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Problem(#[from] Problem),
    #[error("{0}")]
    Seal(#[from] super::seal::SealError),
    /// The password would go over plain http to another machine (`engine::sync::origin`).
    #[error("{0}")]
    InsecurePassword(#[from] origin::InsecurePassword),
    /// The sync URL's origin changed and no password was typed: the saved one stays with its origin.
    #[error("The sync server's address changed to {origin}: type its password again (the saved one is only sent to {saved}).")]
    PasswordForOtherOrigin { origin: String, saved: String },
    /// The sync chunk (split point `sync`) could not be fetched; the next try (`engine::sync::restart`)
    /// fetches it again.
    #[error("Sync could not start: its part of the app could not be loaded (are you offline?). It starts again when the connection is back.")]
    Unavailable,
}

impl SyncError {
    /// Whether the loop stopped on this can start again without the user (`engine::sync::restart`).
    fn stop(&self) -> Stop {
        use super::seal::SealError as S;
        match self {
            SyncError::Store(_)
            | SyncError::Unavailable
            | SyncError::Seal(
                S::Unreachable(_)
                | S::Server(_)
                | S::Store(_)
                | S::Unsealable(_)
                | S::RotationStuck,
            ) => Stop::Passing,
            SyncError::Problem(_)
            | SyncError::Seal(_)
            | SyncError::InsecurePassword(_)
            | SyncError::PasswordForOtherOrigin { .. } => Stop::UserMustAct,
        }
    }
}

impl From<wasm_split_helpers::SplitLoaderError> for SyncError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        SyncError::Unavailable
    }
}

/// How the driver reports what it changed (`Session::emit`).
type Emit = Rc<dyn Fn(SessionEvent)>;

pub(super) struct Inner {
    pub(super) store: Store,
    /// `Session::emit` (reports and broadcasts), set once the session exists.
    pub(super) emit: RefCell<Option<Emit>>,
    pub(super) settings: RefCell<SyncSettings>,
    pub(super) password: RefCell<String>,
    /// The origin the saved password was given for (issue 28, item 4).
    pub(super) password_origin: RefCell<String>,
    /// Bumped on every settings change: a running loop with an older generation stops.
    pub(super) generation: Cell<u32>,
    /// When the loop starts again after it stopped on an error (`engine::sync::restart`).
    restart: RefCell<Restart>,
    /// The replicator of the running loop (this tab holds the lock).
    pub(super) rep: RefCell<Option<Replicator>>,
    pub(super) abort: RefCell<Option<web_sys::AbortController>>,
    pub(super) wake: RefCell<Option<Function>>,
    /// Own changes waiting to be tracked, in order, by one task.
    pub(super) queue: RefCell<VecDeque<Tracked>>,
    pub(super) tracking: Cell<bool>,
    pub(super) view: RefCell<SyncView>,
    /// Size the slices of the store's long sync reads and writes from the time the last ones took.
    pub(super) reads: RefCell<Pace>,
    pub(super) writes: RefCell<Pace>,
    pub(super) _online: RefCell<Option<Closure<dyn FnMut()>>>,
    /// What this tab learnt about images' bytes on the server (`blobs.rs`).
    pub(super) blobs: RefCell<blob::Ledger>,
    /// This device turned encryption on for a database without a marker and has not caught up
    /// since: plain copies it pulls meanwhile are kept, after the checks of any pulled document
    /// (`engine::sync::check::plain_copies`); otherwise they are only deleted.
    first_encryption: Cell<bool>,
}

/// A local change to track: a session event, or an entity the user deleted in the memory pane.
pub(super) enum Tracked {
    Change(tabs::Change),
    EntityDeleted {
        conversation: String,
        entity: String,
    },
}

impl Tracked {
    /// What kind of change it is, for recording (`engine::sync::track`).
    fn change(&self) -> track::Change {
        match self {
            Tracked::EntityDeleted { .. }
            | Tracked::Change(tabs::Change::ConversationRemoved(_))
            | Tracked::Change(tabs::Change::MessagesCleared(_)) => track::Change::Delete,
            Tracked::Change(_) => track::Change::Write,
        }
    }
}

/// The session's handle on sync. Cheap to clone.
#[derive(Clone)]
pub struct Replication {
    inner: Rc<Inner>,
}

impl Replication {
    /// Reads the sync settings and the saved password (together: one round of reads before the
    /// first screen, not two); starts syncing if they say so.
    pub(crate) async fn open(store: Store) -> Result<Replication, StoreError> {
        let (settings, saved) =
            futures_util::future::join(store.sync_settings(), store.saved_sync_password()).await;
        let (settings, saved) = (settings?, saved?);
        // Saved before origins were kept: it belongs to the saved sync URL.
        let password_origin = saved
            .origin
            .or_else(|| origin_of(&settings.url))
            .unwrap_or_default();
        let password = saved.password;
        let r = Replication {
            inner: Rc::new(Inner {
                store,
                emit: RefCell::default(),
                settings: RefCell::new(settings),
                password: RefCell::new(password),
                password_origin: RefCell::new(password_origin),
                generation: Cell::new(0),
                restart: RefCell::default(),
                rep: RefCell::default(),
                abort: RefCell::default(),
                wake: RefCell::default(),
                queue: RefCell::default(),
                tracking: Cell::new(false),
                view: RefCell::new(SyncView::off()),
                reads: RefCell::new(Pace::sync()),
                writes: RefCell::new(Pace::sync()),
                _online: RefCell::default(),
                blobs: RefCell::default(),
                first_encryption: Cell::new(false),
            }),
        };
        let weak = Rc::downgrade(&r.inner);
        let online = Closure::<dyn FnMut()>::new(move || {
            if let Some(i) = weak.upgrade() {
                i.restart.borrow_mut().handle_online(now());
                if let Some(rep) = i.rep.borrow_mut().as_mut() {
                    rep.retry_now();
                }
                wake(&i);
            }
        });
        if let Some(w) = web_sys::window() {
            let _ = w.add_event_listener_with_callback("online", online.as_ref().unchecked_ref());
        }
        *r.inner._online.borrow_mut() = Some(online);
        Ok(r)
    }

    /// Connects the driver to the session's `emit` and starts it when enabled.
    pub(crate) fn start(&self, emit: Rc<dyn Fn(SessionEvent)>) {
        *self.inner.emit.borrow_mut() = Some(emit);
        self.restart();
    }

    pub fn settings(&self) -> SyncSettings {
        self.inner.settings.borrow().clone()
    }

    pub fn view(&self) -> SyncView {
        self.inner.view.borrow().clone()
    }

    /// The origin the saved password belongs to (the form asks again after an origin change).
    pub fn password_origin(&self) -> String {
        self.inner.password_origin.borrow().clone()
    }

    /// The password to send to `s`'s server: the typed one, or the saved one while the origin is
    /// the one it was saved for; an error when a saved password exists but belongs elsewhere, or
    /// when it would go over plain http to another machine.
    fn password_for(&self, s: &SyncSettings, typed: Option<&str>) -> Result<String, SyncError> {
        let saved = self.inner.password.borrow().clone();
        let saved_for = self.inner.password_origin.borrow().clone();
        match origin::password_for(typed, &saved, &saved_for, &s.url) {
            Some(p) => {
                origin::plain_http_check(&s.url, p)?;
                Ok(p.to_string())
            }
            None if saved.is_empty() || s.user.trim().is_empty() => Ok(String::new()),
            None => Err(SyncError::PasswordForOtherOrigin {
                origin: origin_of(&s.url).unwrap_or_else(|| s.url.clone()),
                saved: saved_for,
            }),
        }
    }

    /// Saves new settings (`password`: `None` keeps the saved one, for its own origin only;
    /// `passphrase`: the encryption passphrase, checked against the server before anything is
    /// saved) and restarts sync with them.
    pub async fn save(
        &self,
        s: SyncSettings,
        password: Option<String>,
        passphrase: Option<String>,
    ) -> Result<(), SyncError> {
        let base = if s.enabled || s.encrypt {
            Some(check_form(&s.url, &s.database)?)
        } else {
            None
        };
        let pass = self.password_for(&s, password.as_deref())?;
        let store = &self.inner.store;
        match &base {
            Some(base) if s.encrypt => {
                let auth = basic_auth(&s.user, &pass);
                let db = s.database.trim();
                let p = passphrase.as_deref();
                let first = !unlock_split(store, base, db, auth.as_deref(), p).await?;
                self.inner.first_encryption.set(first);
            }
            _ if !s.encrypt => store.delete_sync_keys().await?,
            _ => {}
        }
        store.set_sync_settings(&s).await?;
        let origin = origin_of(&s.url).unwrap_or_default();
        store.set_sync_password_for(&pass, Some(&origin)).await?;
        *self.inner.password.borrow_mut() = pass;
        *self.inner.password_origin.borrow_mut() = origin;
        *self.inner.settings.borrow_mut() = s;
        self.restart();
        Ok(())
    }

    /// Changes the encryption passphrase of the saved sync database from `current` to `new`
    /// (`seal::change_passphrase`), then restarts sync, whose next connection seals every document
    /// again (its progress in the sync status).
    pub async fn change_passphrase(&self, current: String, new: String) -> Result<(), SyncError> {
        let s = self.inner.settings.borrow().clone();
        if !s.encrypt {
            return Err(super::seal::SealError::NotEncrypted.into());
        }
        let base = check_form(&s.url, &s.database)?;
        let auth = run_auth(&self.inner, &s)?;
        let store = &self.inner.store;
        let db = s.database.trim();
        change_split(store, &base, db, auth.as_deref(), &current, &new).await?;
        self.restart();
        Ok(())
    }

    fn restart(&self) {
        let i = &self.inner;
        i.generation.set(i.generation.get() + 1);
        if let Some(a) = i.abort.borrow_mut().take() {
            a.abort();
        }
        wake(i);
        if !i.settings.borrow().enabled {
            set_view(i, SyncView::off());
            return;
        }
        *i.restart.borrow_mut() = Restart::default();
        let inner = i.clone();
        let gen = i.generation.get();
        spawn_local(async move { run_again(&inner, gen).await });
    }

    /// This tab changed shared data (`Capture`): track the document it produces.
    pub(crate) fn observe(&self, e: &tabs::Change) {
        if let tabs::Change::Conversations(cs) = e {
            for c in cs {
                self.observe(&tabs::Change::Conversation(c.clone()));
            }
            return;
        }
        let relevant = match e {
            tabs::Change::Conversation(_)
            | tabs::Change::ConversationRemoved(_)
            | tabs::Change::MessagesCleared(_)
            | tabs::Change::MemoryChanged(_)
            | tabs::Change::UserFacts
            | tabs::Change::Projects => true,
            tabs::Change::MessageAdded(m) | tabs::Change::MessageProgress(m) => {
                m.status != MessageStatus::Streaming || m.meta.deleted
            }
            _ => false,
        };
        if relevant {
            self.track(Tracked::Change(e.clone()));
        }
    }

    /// The user deleted entity `entity` (of conversation `conversation`'s scope, or shared): its
    /// document and relationships become tombstones, so it is deleted on every device.
    pub(crate) fn entity_deleted(&self, conversation: &str, entity: &str) {
        self.track(Tracked::EntityDeleted {
            conversation: conversation.to_string(),
            entity: entity.to_string(),
        });
    }

    fn track(&self, t: Tracked) {
        let i = &self.inner;
        let records = {
            let s = i.settings.borrow();
            track::records(s.enabled, !s.url.trim().is_empty(), t.change())
        };
        if !records {
            return;
        }
        i.queue.borrow_mut().push_back(t);
        drain(i);
    }

    /// "Test connection": what is wrong with these settings, if anything.
    pub async fn test(&self, s: &SyncSettings, password: Option<&str>) -> Result<(), SyncError> {
        test_split(self, s, password).await
    }

    async fn test_now(&self, s: &SyncSettings, password: Option<&str>) -> Result<(), SyncError> {
        let url = check_form(&s.url, &s.database)?;
        let auth = basic_auth(&s.user, &self.password_for(s, password)?);
        let db_url = format!(
            "{url}/{}",
            crate::engine::sync::wire::encode(s.database.trim())
        );
        let got = transport::fetch_text(&db_url, "GET", None, auth.as_deref(), None, TEST_LIMITS);
        let probe = match got.await {
            Ok((status, body)) => DbProbe::Answer { status, body },
            Err(TransportError::Timeout { .. }) => DbProbe::TimedOut {
                secs: TEST_LIMITS.timeouts.first_byte_ms / 1000,
            },
            Err(TransportError::TooSlow { limit_ms }) => DbProbe::TimedOut {
                secs: limit_ms / 1000,
            },
            Err(TransportError::TooLarge { limit }) => DbProbe::TooLarge {
                mb: limit.div_ceil(1 << 20),
            },
            Err(TransportError::Network(reason)) => DbProbe::Failed { reason },
            Err(TransportError::Redirected) => DbProbe::Redirected,
            Err(e) => DbProbe::Failed {
                reason: e.to_string(),
            },
        };
        let reachable = match probe {
            DbProbe::Failed { .. } => Some(
                transport::reachable(&format!("{url}/"), TEST_LIMITS.timeouts.first_byte_ms).await,
            ),
            _ => None,
        };
        let origin = web_sys::window()
            .and_then(|w| w.location().origin().ok())
            .unwrap_or_default();
        diagnose(&url, s.database.trim(), &s.user, &origin, &probe, reachable)?;
        Ok(())
    }
}

fn set_view(i: &Inner, mut v: SyncView) {
    v.detail = with_images(v.detail, i.blobs.borrow().refused());
    if *i.view.borrow() == v {
        return;
    }
    *i.view.borrow_mut() = v.clone();
    let emit = i.emit.borrow().clone();
    if let Some(emit) = emit {
        emit(Local::SyncStatus(v).into());
    }
}

fn wake(i: &Inner) {
    if let Some(f) = i.wake.borrow_mut().take() {
        let _ = f.call0(&JsValue::NULL);
    }
}

/// Records the queued changes as synced documents, in order, in one task at a time. A change that
/// failed because sync's code could not be fetched waits at the queue's head when
/// `track::waits_for_code` says so (a deletion), for the next change or the sync loop's next start
/// (`connect`); other failures are let go with a warning.
fn drain(i: &Rc<Inner>) {
    if i.queue.borrow().is_empty() || i.tracking.replace(true) {
        return;
    }
    let inner = i.clone();
    spawn_local(async move {
        loop {
            let next = inner.queue.borrow_mut().pop_front();
            let Some(t) = next else { break };
            let done = match &t {
                Tracked::Change(e) => track_event_split(&inner, e).await,
                Tracked::EntityDeleted {
                    conversation,
                    entity,
                } => track_entity_deleted_split(&inner, conversation, entity).await,
            };
            match done {
                Err(SyncError::Unavailable) if track::waits_for_code(t.change()) => {
                    inner.queue.borrow_mut().push_front(t);
                    break;
                }
                Err(err) => web_sys::console::warn_1(&JsValue::from_str(&format!(
                    "memoire sync: a change was not recorded for sync: {err}"
                ))),
                Ok(()) => {}
            }
        }
        inner.tracking.set(false);
        wake(&inner);
    });
}

/// Sleeps `ms` or until [`wake`].
async fn sleep(i: &Inner, ms: i32) {
    let mut wake_fn = None;
    let woken = Promise::new(&mut |resolve, _| wake_fn = Some(resolve));
    *i.wake.borrow_mut() = wake_fn;
    // Whichever ends first; the timer is cleared when it is dropped (woken first).
    let woken = std::pin::pin!(JsFuture::from(woken));
    let timer = std::pin::pin!(gloo_timers::future::TimeoutFuture::new(ms.max(0) as u32));
    futures_util::future::select(woken, timer).await;
}

/// The sync loop of settings generation `gen`, started again after each stop on an error when
/// `engine::sync::restart` says (after a backoff, or at once when the browser comes back online),
/// until the settings change. The status says the error and when it starts again.
async fn run_again(i: &Rc<Inner>, gen: u32) {
    while i.generation.get() == gen {
        let Err(e) = run_split(i, gen).await else {
            return;
        };
        if i.generation.get() != gen {
            return; // new settings meanwhile: their loop says how it goes
        }
        let retry_at = i.restart.borrow_mut().handle_stopped(now(), e.stop());
        let offset = -(js_sys::Date::new_0().get_timezone_offset() as i32);
        let (label, detail) = stopped(&e.to_string(), retry_at, offset);
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
        while i.generation.get() == gen && !i.restart.borrow_mut().poll_start(now()) {
            let at = i.restart.borrow().poll_timeout();
            sleep(
                i,
                at.map_or(60_000, |at| (at - now()).clamp(0, 60_000)) as i32,
            )
            .await;
        }
    }
}

/// `Basic` credentials for `user:password` (UTF-8), or none without a user.
fn basic_auth(user: &str, password: &str) -> Option<String> {
    if user.is_empty() {
        return None;
    }
    let bytes = format!("{user}:{password}");
    // btoa takes a "binary string": one char per byte.
    let binary: String = bytes.bytes().map(char::from).collect();
    let encoded = web_sys::window()?.btoa(&binary).ok()?;
    Some(format!("Basic {encoded}"))
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

/// Stored documents by `_id`.
fn by_id(docs: Vec<SyncedDoc>) -> std::collections::HashMap<String, SyncedDoc> {
    docs.into_iter()
        .map(|d| (d.local.doc.id.clone(), d))
        .collect()
}

pub(super) async fn stored(i: &Inner, id: &str) -> Result<Option<SyncedDoc>, SyncError> {
    Ok(i.store.sync_docs(&[id.to_string()]).await?.pop())
}

/// Marks `docs` (local edits) dirty, merged into their stored copies, and hands them to the
/// running replicator.
pub(super) async fn record(i: &Inner, docs: Vec<Doc>) -> Result<(), SyncError> {
    record_among(i, docs, None).await
}

/// [`record`], reading only the stored copies of ids in `stored` (when given: every stored id).
async fn record_among(
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
    let mut known = by_id(i.store.sync_docs(&ids).await?);
    let mut out: Vec<SyncedDoc> = Vec::with_capacity(docs.len());
    // `_id` -> index in `out`: the same document twice in one call merges into the first.
    let mut at: HashMap<String, usize> = HashMap::with_capacity(docs.len());
    let mut pace = Pace::sync();
    in_slices(&mut pace, docs.into_iter(), |slice| {
        for d in slice {
            if let Some(&k) = at.get(&d.id) {
                out[k].local.doc = crate::engine::sync::merge(&out[k].local.doc, &d);
                continue;
            }
            let (doc, rev) = match known.remove(&d.id) {
                Some(p) => (crate::engine::sync::merge(&p.local.doc, &d), p.local.rev),
                None => (d, None),
            };
            at.insert(doc.id.clone(), out.len());
            out.push(SyncedDoc {
                local: LocalDoc { doc, rev },
                dirty: true,
            });
        }
        true
    })
    .await;
    i.store.put_sync_docs(&out, &mut paced(&i.writes)).await?;
    // Handed to the running replicator (none: sync stopped meanwhile, nothing more to do).
    in_slices(&mut pace, out.into_iter().map(|d| d.local), |slice| {
        let cancel = match i.rep.borrow_mut().as_mut() {
            Some(rep) => {
                rep.handle_local_changes(slice);
                rep.poll_cancel()
            }
            None => return false,
        };
        if cancel {
            if let Some(a) = i.abort.borrow_mut().take() {
                a.abort();
            }
        }
        true
    })
    .await;
    Ok(())
}

/// The store's sync reads or writes, sliced at one of the driver's paces (`Inner::reads`,
/// `Inner::writes`): each slice timed.
struct Paced<'a> {
    pace: &'a RefCell<Pace>,
    started: f64,
}

fn paced(pace: &RefCell<Pace>) -> Paced<'_> {
    Paced { pace, started: 0.0 }
}

impl WritePace for Paced<'_> {
    fn next(&mut self, _done: usize, _total: usize) -> Option<usize> {
        self.started = perf_now();
        Some(self.pace.borrow().size())
    }

    fn issued(&mut self, n: usize) {
        self.pace.borrow_mut().observe(n, perf_now() - self.started);
    }
}

async fn track_event(i: &Inner, e: &tabs::Change) -> Result<(), SyncError> {
    let (mut clock, _) = clock(i).await?;
    let t = now();
    let docs: Vec<Doc> = match e {
        tabs::Change::Conversation(c) => {
            let prev = stored(i, &conversation_id(&c.id)).await?;
            track::track_conversation(prev.as_ref().map(|p| &p.local.doc), c, &mut clock, t)
                .into_iter()
                .collect()
        }
        tabs::Change::ConversationRemoved(id) => {
            let cid = conversation_id(id);
            match stored(i, &cid).await? {
                Some(p) if p.local.doc.body.is_tombstone() => vec![],
                _ => track::track_delete(&cid, &mut clock, t)
                    .into_iter()
                    .collect(),
            }
        }
        tabs::Change::MessageAdded(m) | tabs::Change::MessageProgress(m) => {
            let prev = stored(i, &message_id(&m.id)).await?;
            track::track_message(prev.as_ref().map(|p| &p.local.doc), m, &mut clock, t)
                .into_iter()
                .collect()
        }
        tabs::Change::MemoryChanged(id) => {
            memory::track_memory(i, Some(id), true, &mut clock, t).await?
        }
        tabs::Change::UserFacts => memory::track_facts(i, &mut clock, t).await?,
        tabs::Change::Projects => super::projects::track_projects(i, &mut clock, t).await?,
        tabs::Change::MessagesCleared(id) => {
            let mut docs: Vec<Doc> = Vec::new();
            for prefix in [
                "m:".to_string(),
                format!("e:{}:", id_part(id)),
                format!("r:{}:", id_part(id)),
            ] {
                let found = i.store.sync_docs_with_prefix(&prefix).await?;
                docs.extend(found.into_iter().map(|d| d.local.doc));
            }
            docs.extend(stored(i, &conversation_id(id)).await?.map(|d| d.local.doc));
            track::track_clear(&docs, id, &mut clock, t)
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
        let known = by_id(i.store.sync_docs(&deleted).await?);
        for (m, id) in messages.iter().zip(&ids) {
            if held.contains(id) && !m.meta.deleted {
                continue;
            }
            let prev = known.get(id).map(|p| &p.local.doc);
            docs.extend(track::track_message(prev, m, &mut clock, now()));
        }
        docs.extend(memory::track_memory(i, Some(&c.id), false, &mut clock, now()).await?);
    }
    docs.extend(memory::track_memory(i, None, true, &mut clock, now()).await?);
    docs.extend(memory::track_facts(i, &mut clock, now()).await?);
    docs.extend(super::projects::track_projects(i, &mut clock, now()).await?);
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
    let plan = {
        let _span = Span::new("apply");
        i.store
            .apply_sync_batch(merges, &mut paced(&i.reads), &mut paced(&i.writes))
            .await?
    };
    if let Some(rep) = i.rep.borrow_mut().as_mut() {
        let older = plan.older.iter().map(|id| {
            format!("{id}: older than the copy this device holds; not taken (this device's copy goes back up)")
        });
        rep.handle_refused(older.collect());
        if !plan.requeue.is_empty() {
            rep.handle_local_changes(plan.requeue);
        }
    }
    let span = Span::new("report");
    for c in plan.changes {
        let id = c.conversation.id.clone();
        if c.branched {
            crate::session::shared::branch::mark_branched(&i.store, &id).await?;
        }
        report(i, Change::Conversation(c.conversation));
        match c.added.as_slice() {
            [] => {}
            [m] if !c.branched => report(i, Change::MessageAdded(m.clone())),
            _ => report(i, Change::BranchChanged(id)),
        }
    }
    for id in &plan.removed {
        report(i, Change::ConversationRemoved(id.clone()));
    }
    let mut branches: Vec<&String> = Vec::new();
    for m in &plan.blanked {
        if !branches.contains(&&m.conversation_id) {
            branches.push(&m.conversation_id);
        }
    }
    for c in branches {
        report(i, Change::BranchChanged(c.clone()));
    }
    drop(span);
    let _span = Span::new("later");
    apply_later(i, plan.later).await
}

/// Reports a change the driver applied (`Core::applied`: not captured again).
pub(super) fn report(i: &Inner, e: impl Into<SessionEvent>) {
    if let Some(emit) = i.emit.borrow().clone() {
        emit(e.into());
    }
}

/// The memory's effects a batch leaves for after its transaction, grouped by scope (each scope's
/// graph changed once, then unified once).
async fn apply_later(i: &Inner, effects: Vec<Effect>) -> Result<(), SyncError> {
    for scope in memory::apply_memory(i, effects).await? {
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
    while let Some(w) = i.rep.borrow_mut().as_mut().and_then(Replicator::poll_write) {
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
                    i.store
                        .put_sync_docs(&[p.clone()], &mut paced(&i.writes))
                        .await?;
                    if let Some(rep) = i.rep.borrow_mut().as_mut() {
                        rep.handle_local_changes([p.local]);
                    }
                }
            }
            Some(Write::PushAll) => {
                let all = i.store.mark_all_sync_docs_dirty().await?;
                if let Some(rep) = i.rep.borrow_mut().as_mut() {
                    rep.handle_local_changes(all);
                }
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

/// Split point `sync`: the document a local change produces.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn track_event_split<'a>(i: &'a Inner, e: &'a tabs::Change) -> Boxed<'a, (), SyncError> {
    Box::pin(track_event(i, e))
}

/// Split point `sync`: an entity deleted in the memory pane becomes tombstones.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn track_entity_deleted_split<'a>(
    i: &'a Inner,
    conversation: &'a str,
    entity: &'a str,
) -> Boxed<'a, (), SyncError> {
    Box::pin(memory::track_entity_deleted(i, conversation, entity))
}

/// Split point `sync`: encryption unlocked when the settings are saved (WebCrypto, the marker);
/// whether the database held a marker before (`false`: this device is the first to encrypt it).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<bool, SyncError>)))]
fn unlock_split<'a>(
    store: &'a Store,
    base: &'a str,
    db: &'a str,
    auth: Option<&'a str>,
    passphrase: Option<&'a str>,
) -> Boxed<'a, bool, SyncError> {
    Box::pin(async move {
        let had = super::seal::has_marker(base, db, auth).await?;
        super::seal::unlock(store, base, db, auth, passphrase).await?;
        Ok(had)
    })
}

/// Split point `sync`: a change of the encryption passphrase begun (WebCrypto, the marker).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn change_split<'a>(
    store: &'a Store,
    base: &'a str,
    db: &'a str,
    auth: Option<&'a str>,
    current: &'a str,
    new: &'a str,
) -> Boxed<'a, (), SyncError> {
    Box::pin(async move {
        super::seal::change_passphrase(store, base, db, auth, current, new).await?;
        Ok(())
    })
}

/// Split point `sync`: "Test connection" and its verdicts.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(sync, fallible, return_wrapper(let future = _; { future.await } -> Result<(), SyncError>)))]
fn test_split<'a>(
    r: &'a Replication,
    s: &'a SyncSettings,
    password: Option<&'a str>,
) -> Boxed<'a, (), SyncError> {
    Box::pin(r.test_now(s, password))
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
    while i.generation.get() == gen {
        let Some(retry_at) = connect(i, gen, first).await? else {
            break;
        };
        first = false;
        sleep(i, (retry_at - now()).clamp(0, 60_000) as i32).await;
    }
    Ok(())
}

/// One connection under the lock (seeding the documents first when `first`): `Some(retry_at)`
/// when it ended on a request that timed out, `None` when the settings changed.
async fn connect(i: &Rc<Inner>, gen: u32, first: bool) -> Result<Option<i64>, SyncError> {
    let _lock = sync::lock(LOCK).await;
    if i.generation.get() != gen {
        return Ok(None);
    }
    let s = i.settings.borrow().clone();
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
    *i.rep.borrow_mut() = Some(rep);
    i.restart.borrow_mut().handle_connected();
    // A deletion that waited for sync's code (`drain`): recorded now, and handed to this replicator.
    drain(i);
    let link = Link {
        base: &base,
        db: s.database.trim(),
        auth: auth.as_deref(),
        sealer: sealer.as_ref(),
    };
    let result = drive(i, gen, &link, &key).await;
    *i.rep.borrow_mut() = None;
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
        i.generation.get() == gen
    };
    Ok(super::rotate::reseal_all(&i.store, base, db, auth, keys, &progress).await?)
}

/// The saved password's `Basic` credentials for `s`'s server, only while its origin is the one
/// the password was given for (else none: the new host never receives the old host's); an error
/// when it would go over plain http to another machine (one saved before that rule).
fn run_auth(i: &Inner, s: &SyncSettings) -> Result<Option<String>, SyncError> {
    let pass = i.password.borrow().clone();
    let ok = origin::password_for(None, &pass, &i.password_origin.borrow(), &s.url).is_some();
    let pass = if ok { pass } else { String::new() };
    origin::plain_http_check(&s.url, &pass)?;
    Ok(basic_auth(&s.user, &pass))
}

/// Where the loop's requests go: the server, its database, its credentials, and the seal when
/// encrypting.
pub(super) struct Link<'a> {
    base: &'a str,
    db: &'a str,
    auth: Option<&'a str>,
    pub(super) sealer: Option<&'a super::seal::Sealer>,
}

impl Link<'_> {
    /// Sends one replicator request (sealed and opened when encrypting).
    pub(super) async fn send(
        &self,
        req: Request,
        abort: Option<&web_sys::AbortController>,
        limits: TextLimits,
    ) -> super::seal::Sent {
        match self.sealer {
            Some(s) => s.send(req, self.base, self.auth, abort, limits).await,
            None => {
                let url = req.url(self.base);
                let (method, body) = (req.method.as_str(), req.body.as_deref());
                super::seal::Sent {
                    out: transport::fetch_text(&url, method, body, self.auth, abort, limits)
                        .await
                        .map(|(status, text)| (status, Reply::Text(text))),
                    plain: Vec::new(),
                    unopened: Vec::new(),
                }
            }
        }
    }

    /// Plain copies of our documents the server still held: deleted on the server; only while
    /// this device first encrypts the database, those that pass the checks of any pulled document
    /// are kept first (they go back up sealed; `engine::sync::check::plain_copies` decides).
    async fn keep_plain(&self, i: &Inner, plain: Vec<serde_json::Value>) -> Result<(), SyncError> {
        let Some(s) = self.sealer.filter(|_| !plain.is_empty()) else {
            return Ok(());
        };
        let first = i.first_encryption.get();
        let (docs, refused) = match i.rep.borrow().as_ref() {
            Some(rep) => check::plain_copies(&plain, first, &rep.config().limits, now()),
            None => return Ok(()),
        };
        if let Some(rep) = i.rep.borrow_mut().as_mut() {
            match first {
                true => rep.handle_refused(refused),
                false => rep.handle_unopened(refused),
            }
        }
        record(i, docs).await?;
        s.purge(&plain, self.base, self.auth).await;
        Ok(())
    }
}

async fn drive(
    i: &Rc<Inner>,
    gen: u32,
    link: &Link<'_>,
    key: &str,
) -> Result<Option<i64>, SyncError> {
    while i.generation.get() == gen {
        // Bulk work (a catching-up pull, a push) goes out while the last answer's writes are
        // applied (`Replicator::bulk_next`); anything else waits for them.
        let overlap = i.rep.borrow().as_ref().is_some_and(|r| r.bulk_next(now()));
        if !overlap {
            apply_writes(i, key).await?;
        }
        let (req, view, timeout, limits): (Option<Request>, SyncView, Option<i64>, TextLimits) = {
            let mut b = i.rep.borrow_mut();
            let Some(rep) = b.as_mut() else {
                return Ok(None);
            };
            let _span = Span::new("request");
            let req = rep.poll_request(now());
            (req, status_view(rep), rep.poll_timeout(), text_limits(rep))
        };
        set_view(i, view);
        let Some(req) = req else {
            if overlap {
                apply_writes(i, key).await?;
            }
            // Idle, or backing off: sleep until the retry time, a wake-up, or the next look for
            // other tabs' changes.
            let ms = timeout.map_or(IDLE_MS, |at| ((at - now()) as i32).clamp(0, IDLE_MS));
            sleep(i, ms).await;
            let _span = Span::new("dirty");
            let dirty = i.store.dirty_sync_docs().await?;
            if let Some(rep) = i.rep.borrow_mut().as_mut() {
                rep.handle_local_changes(dirty);
            }
            continue;
        };
        if blob::round_first(&req) {
            let _span = Span::new("blobs");
            blobs::round(i, link, link.db).await?;
        }
        let abort = web_sys::AbortController::new().ok();
        *i.abort.borrow_mut() = abort.clone();
        let fetch = link.send(req, abort.as_ref(), limits);
        let sent = if overlap {
            let (applied, out) = futures_util::future::join(apply_writes(i, key), fetch).await;
            applied?;
            out
        } else {
            fetch.await
        };
        let aborted = abort.as_ref().is_some_and(|a| a.signal().aborted());
        i.abort.borrow_mut().take();
        let (stalled, view) = {
            let mut b = i.rep.borrow_mut();
            let Some(rep) = b.as_mut() else {
                return Ok(None);
            };
            let _span = Span::new("response");
            answered(i, rep, sent.out, sent.unopened, aborted)
        };
        set_view(i, view);
        if stalled.is_some() {
            // Let another tab take over: the lock goes with this connection.
            return Ok(stalled);
        }
        link.keep_plain(i, sent.plain).await?;
    }
    Ok(None)
}

/// One request's outcome and the documents of its answer that could not be opened, handed to the
/// replicator; the refusals said in the console; `Some(retry_at)` when the connection ends, and the
/// status to show.
fn answered(
    i: &Inner,
    rep: &mut Replicator,
    out: Result<(u16, Reply), TransportError>,
    unopened: Vec<String>,
    aborted: bool,
) -> (Option<i64>, SyncView) {
    let stalled = handle_answer(rep, out, aborted);
    rep.handle_unopened(unopened);
    if rep.status() == crate::engine::sync::Status::Synced {
        // Caught up: plain copies found from now on are only deleted.
        i.first_encryption.set(false);
    }
    for reason in rep.poll_refused() {
        web_sys::console::warn_1(&JsValue::from_str(&format!(
            "memoire sync: a document from the server was refused: {reason}"
        )));
    }
    (stalled, status_view(rep))
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
    let offset = -(js_sys::Date::new_0().get_timezone_offset() as i32);
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

impl Capture for Replication {
    fn changed(&self, e: &tabs::Change) {
        self.observe(e)
    }

    fn entity_deleted(&self, conversation: &str, entity: &str) {
        Replication::entity_deleted(self, conversation, entity)
    }
}
