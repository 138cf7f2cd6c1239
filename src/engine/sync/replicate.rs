//! The sans-IO replicator: a hub client of one CouchDB database. Local documents and responses go
//! in (`handle_local_changes`, `handle_response`, `handle_failure`), request descriptions and local
//! writes come out (`poll_request`, `poll_write`), one request at a time. Each connection runs:
//! `GET /{db}` (`PUT` to create it when allowed) → read the `_local/` checkpoint → pull `_changes`
//! in batches from the checkpoint's opaque `since`, resolving pulled `_conflicts` (merged winner
//! written, losing leaves deleted) before the checkpoint moves → push `_bulk_docs` (409: `_all_docs`
//! with `keys`, merge, retry) → mirror the checkpoint to `_local/` → `feed=longpoll` with a heartbeat.
//!
//! Safety rules: only a [`super::Body::Tombstone`] deletes (a CouchDB-deleted document is pushed
//! again, a document that cannot be read is skipped); a failed, empty or cut-off response changes
//! nothing and is retried after a backoff; pushing waits until the pull has caught up, so a device's
//! first connection merges what the server has before it writes; the checkpoint only moves after the
//! writes it covers were handed out.
//!
//! Limits (issue 28): every request is bounded by the shell with [`Config`]'s body cap, its
//! first-byte and idle timeouts and its limit on the whole answer's time. An answer over the cap
//! ([`Replicator::handle_too_large`]), none in time ([`Replicator::handle_stalled`]) or one too
//! slow ([`Replicator::handle_too_slow`]) changes nothing and is reported as an error with the next
//! retry time (a longpoll that began and then fell quiet, or ran long, is only asked again); a
//! `_changes` answer too large halves the pages asked for (they grow back after each page read).
//! At most the `limit` rows a page asked for are taken (a server that sends more is read up to that
//! row's `seq`), and every pulled document is held to the limits imports enforce (`sync::check`): a
//! refused one is skipped with its reason ([`Replicator::poll_refused`]) and never stops sync.
//! A document listing more than `check::MAX_CONFLICTS` conflicting revisions, or whose `open_revs`
//! would need more than [`MAX_OPEN_REVS_URL`] (a long id), is refused, so no URL passes 8 KB, and
//! resolutions go up [`RESOLVE_BATCH`] documents at a time;
//! an `open_revs` leaf is taken only if it is a revision asked for of the document asked for, an
//! `_all_docs` row only if it holds the document of its key (issue 43).
//! Without encryption ([`Config::guard_marker`]) the database's encryption marker, seen in
//! `_changes` or looked for before each upload of documents (a push, a conflict resolution), stops
//! sync ([`SyncError::Encrypted`]): no more plaintext goes up once another device encrypted the
//! database.
//! Must not import anything outside `crate::engine` (`now` is an argument).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{json, Value};

use super::check::{self, PullLimits};
use super::doc::{Doc, Kind};
use super::merge::{merge, merge_all};
use super::wire::{
    encode, seq_text, AllDocs, BulkResult, ChangeRow, Changes, LocalCheckpoint, Method, OpenRev,
    Reply, Request, Saved,
};
use crate::engine::failure::SYNC_REDIRECT_REFUSED;
use crate::engine::model::Millis;

/// Where and how to replicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The database name (one per user).
    pub db: String,
    /// This device's id: names the checkpoint.
    pub device: String,
    /// Create the database with `PUT` when it does not exist (needs admin rights on CouchDB).
    pub create_db: bool,
    /// Changes per `_changes` batch and documents per `_bulk_docs`.
    pub pull_batch: usize,
    pub push_batch: usize,
    /// Keep a `feed=longpoll` open once caught up, with this heartbeat.
    pub live: bool,
    pub heartbeat_ms: u64,
    /// What a pulled document may hold.
    pub limits: PullLimits,
    /// The largest answer the shell reads; past it the request is aborted.
    pub max_body_bytes: usize,
    /// How long the shell waits for an answer to begin, then between two parts of it (more than
    /// the heartbeat, which keeps a longpoll's connection talking).
    pub first_byte_ms: u32,
    pub idle_ms: u32,
    /// The longest a whole answer may take (a longpoll's too: it is then simply asked again).
    pub total_ms: u32,
    /// Encryption is off: before each upload of documents, make sure no device encrypted the
    /// database meanwhile (its marker, `seal::MARKER_ID`); seen there or in `_changes`, sync stops
    /// ([`SyncError::Encrypted`]) and nothing more goes up in plaintext.
    pub guard_marker: bool,
}

impl Config {
    pub fn new(db: &str, device: &str) -> Config {
        Config {
            db: db.to_string(),
            device: device.to_string(),
            create_db: true,
            // 250: a 10,000-message first sync in 40 round trips each way (each page's local
            // work overlaps the next page's request), and a page's parsing, encoding and planning
            // stay small tasks (500 measured longer tasks on the loaded test machine).
            pull_batch: 250,
            push_batch: 250,
            live: true,
            heartbeat_ms: 10_000,
            limits: PullLimits::default(),
            // 16 MiB: a page of 250 documents is a few hundred KB; one message at the import
            // limit (a million characters) still fits. Past it, pages are halved.
            max_body_bytes: 16 * 1024 * 1024,
            first_byte_ms: 20_000,
            idle_ms: 30_000,
            total_ms: 120_000,
            guard_marker: false,
        }
    }
}

/// A local document with the server revision its content is based on (`None`: never pushed).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalDoc {
    pub doc: Doc,
    pub rev: Option<String>,
}

/// What the local store must do, in order. (Writes are short-lived queue entries; boxing the
/// document would only add an allocation each.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// The server holds `remote` at `rev`: merge it into the local copy with [`apply_remote`].
    Merge { remote: Doc, rev: String },
    /// Everything before this was pulled: keep `since` as the checkpoint.
    Checkpoint { since: String },
    /// The server deleted this document without a tombstone: hand the local copy in again, with no
    /// revision, so it is written back.
    Repush { id: String },
    /// The server lost the database (new or recreated): hand every local document in again, with no
    /// revision.
    PushAll,
}

/// The result of merging a pulled or pushed document into the local copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub local: LocalDoc,
    /// The merged copy differs from the server's: it must be pushed.
    pub dirty: bool,
}

/// Merges the server's `remote` at `rev` into the local copy (if any).
pub fn apply_remote(local: Option<&LocalDoc>, remote: &Doc, rev: &str) -> Applied {
    let merged = match local {
        Some(l) => merge(&l.doc, remote),
        None => remote.clone(),
    };
    let dirty = merged != *remote;
    Applied {
        local: LocalDoc {
            doc: merged,
            rev: Some(rev.to_string()),
        },
        dirty,
    }
}

/// Why sync is not working, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    #[error("the sync server refused the user name or password (HTTP 401): check them in Settings → Sync")]
    Unauthorized,
    #[error("this user may not use database '{db}' (HTTP 403): ask the server's admin for access")]
    Forbidden { db: String },
    #[error("database '{db}' does not exist on the sync server: create it there (or sign in as an admin)")]
    DatabaseMissing { db: String },
    #[error("the sync server answered HTTP {status} to {what}")]
    Server { status: u16, what: &'static str },
    #[error("the sync server's answer to {what} was cut off or unreadable")]
    Unreadable { what: &'static str },
    #[error("the sync server cannot be reached ({reason})")]
    Network { reason: String },
    #[error("document '{id}' kept changing on the server while it was being merged")]
    KeepsConflicting { id: String },
    #[error("the sync server stopped answering {what} (nothing for {secs} s)")]
    Stalled { what: &'static str, secs: u32 },
    #[error("the sync server's answer to {what} was larger than {mb} MB")]
    TooLarge { what: &'static str, mb: usize },
    #[error("the sync server took more than {secs} s to answer {what}")]
    TooSlow { what: &'static str, secs: u32 },
    /// A redirect, never followed (README "Credentials"): only a new address can fix it.
    #[error("{}", SYNC_REDIRECT_REFUSED)]
    Redirected,
    /// This device syncs without encryption and the database's encryption marker appeared.
    #[error("Another device encrypted this database: enter its passphrase (Settings → Sync, \"Encrypt end to end\"). Nothing more was sent")]
    Encrypted,
}

impl SyncError {
    /// Whether retrying can help without the user changing anything.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            SyncError::Server { .. }
                | SyncError::Unreadable { .. }
                | SyncError::Network { .. }
                | SyncError::KeepsConflicting { .. }
                | SyncError::Stalled { .. }
                | SyncError::TooLarge { .. }
                | SyncError::TooSlow { .. }
        )
    }
}

/// What the sidebar shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Caught up and nothing waiting to be pushed.
    Synced,
    /// Working; `pending` local documents still to push.
    Syncing { pending: usize },
    /// The server cannot be reached; the next try is at `retry_at`.
    Offline { retry_at: Millis },
    /// Failed; `retry_at` is `None` when only the user can fix it.
    Error {
        error: SyncError,
        retry_at: Option<Millis>,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Inflight {
    DbInfo,
    CreateDb,
    ReadCheckpoint,
    /// `limit`: the rows asked for.
    Changes {
        live: bool,
        limit: usize,
    },
    OpenRevs,
    Resolve(Vec<Doc>),
    /// Is the database still unencrypted (`Config::guard_marker`)?
    Guard,
    Push(Vec<LocalDoc>),
    Reread,
    WriteCheckpoint(String),
}

/// A pulled document with conflicting leaves, waiting for their content.
#[derive(Debug, Clone, PartialEq)]
struct Conflicted {
    winner: Doc,
    rev: String,
    losers: Vec<String>,
}

/// The replicator of one device and one database.
#[derive(Debug, Clone)]
pub struct Replicator {
    cfg: Config,
    since: Option<String>,
    db_ok: bool,
    create: bool,
    checkpoint_read: bool,
    server_cp: Option<(String, Option<String>)>,
    caught_up: bool,
    held_since: Option<String>,
    to_open: VecDeque<Conflicted>,
    /// Resolution writes: the merged winners that changed, and the `_bulk_docs` entries.
    resolve: Vec<Doc>,
    resolve_docs: Vec<Value>,
    outbox: BTreeMap<String, LocalDoc>,
    reread: BTreeSet<String>,
    attempts: BTreeMap<String, u32>,
    inflight: Option<Inflight>,
    writes: VecDeque<Write>,
    cancel: bool,
    errors: u32,
    retry_at: Option<Millis>,
    error: Option<SyncError>,
    /// Why documents were refused or skipped, not yet handed out; how many in all.
    skipped: VecDeque<String>,
    refused: usize,
    /// Rows asked for per `_changes` page (halved after an answer too large).
    page: usize,
    /// Documents from the server that did not open with the key, or answered what was not asked.
    unopened: usize,
    /// The marker was looked for since the last push (`Config::guard_marker`).
    guarded: bool,
}

/// Retries after a failure wait 1 s, 2 s, 4 s, … up to a minute.
pub fn backoff_ms(errors: u32) -> Millis {
    (1000 * (1i64 << errors.saturating_sub(1).min(6))).min(60_000)
}

/// Reasons for skipped documents kept until the shell reads them (a flood keeps the newest).
pub const MAX_REASONS_KEPT: usize = 100;

/// Documents per `_bulk_docs` that resolves conflicts.
pub const RESOLVE_BATCH: usize = 100;

/// The longest `open_revs` path and query (the server's URL comes before it): with it, no
/// request's URL passes 8 KB. A conflicted document that would need more is refused.
pub const MAX_OPEN_REVS_URL: usize = 7 * 1024;

/// Re-reads of one document after 409s before the connection starts over.
const MAX_CONFLICT_RETRIES: u32 = 5;

/// A `GET` of `path`.
fn get(path: String) -> Request {
    Request {
        method: Method::Get,
        path,
        query: vec![],
        body: None,
    }
}

impl Replicator {
    /// A replicator resuming from the local checkpoint `since` (`None`: from the start).
    pub fn new(cfg: Config, since: Option<String>) -> Replicator {
        let page = cfg.pull_batch.max(1);
        Replicator {
            cfg,
            since,
            db_ok: false,
            create: false,
            checkpoint_read: false,
            server_cp: None,
            caught_up: false,
            held_since: None,
            to_open: VecDeque::new(),
            resolve: Vec::new(),
            resolve_docs: Vec::new(),
            outbox: BTreeMap::new(),
            reread: BTreeSet::new(),
            attempts: BTreeMap::new(),
            inflight: None,
            writes: VecDeque::new(),
            cancel: false,
            errors: 0,
            retry_at: None,
            error: None,
            skipped: VecDeque::new(),
            refused: 0,
            page,
            unopened: 0,
            guarded: false,
        }
    }

    /// Local documents that changed (or must be pushed again); a newer copy replaces a queued one.
    pub fn handle_local_changes(&mut self, docs: impl IntoIterator<Item = LocalDoc>) {
        let mut any = false;
        for d in docs {
            self.outbox.insert(d.doc.id.clone(), d);
            any = true;
        }
        if any && matches!(self.inflight, Some(Inflight::Changes { live: true, .. })) {
            self.cancel = true;
        }
    }

    /// True once when the request in flight (a longpoll) should be aborted so local changes can be
    /// pushed; then call [`Replicator::handle_cancelled`].
    pub fn poll_cancel(&mut self) -> bool {
        std::mem::take(&mut self.cancel)
    }

    /// The request in flight was aborted on purpose.
    pub fn handle_cancelled(&mut self) {
        self.inflight = None;
    }

    /// The next local write, in order.
    pub fn poll_write(&mut self) -> Option<Write> {
        self.writes.pop_front()
    }

    /// When to call [`Replicator::poll_request`] again after a failure.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.retry_at
    }

    /// Why documents were skipped since the last call (refused by the limits, unreadable, or
    /// refused by the server; never deleted, never overwritten), at most the last
    /// [`MAX_REASONS_KEPT`] of them; [`Replicator::refused`] counts them all.
    pub fn poll_refused(&mut self) -> Vec<String> {
        self.skipped.drain(..).collect()
    }

    /// How many documents this connection skipped.
    pub fn refused(&self) -> usize {
        self.refused
    }

    /// Documents from the server that did not open with this database's key, or were not what
    /// was asked for (`seal::Opened::refused`): refused, never applied; counted apart
    /// ([`Replicator::unopened`]) and their reasons handed out with [`Replicator::poll_refused`].
    pub fn handle_unopened(&mut self, reasons: Vec<String>) {
        self.unopened += reasons.len();
        for r in reasons {
            if self.skipped.len() == MAX_REASONS_KEPT {
                self.skipped.pop_front();
            }
            self.skipped.push_back(r);
        }
    }

    /// Documents the shell refused after the replicator handed them out (a pulled version older
    /// than the copy this device holds, `batch::Plan::older`; a plain copy that failed the checks
    /// while this device first encrypts, `check::plain_copies`): counted and reported as any
    /// refused document.
    pub fn handle_refused(&mut self, reasons: Vec<String>) {
        for r in reasons {
            self.skip(r);
        }
    }

    /// How many documents from the server this connection could not open.
    pub fn unopened(&self) -> usize {
        self.unopened
    }

    fn skip(&mut self, reason: String) {
        self.refused += 1;
        if self.skipped.len() == MAX_REASONS_KEPT {
            self.skipped.pop_front();
        }
        self.skipped.push_back(reason);
    }

    /// The configuration in force (the shell reads its body cap and timeouts).
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Local documents still to push.
    pub fn pending(&self) -> usize {
        self.outbox.len()
    }

    pub fn status(&self) -> Status {
        match &self.error {
            Some(SyncError::Network { .. }) => Status::Offline {
                retry_at: self.retry_at.unwrap_or_default(),
            },
            Some(e) => Status::Error {
                error: e.clone(),
                retry_at: self.retry_at,
            },
            None if self.caught_up && self.outbox.is_empty() && self.to_open.is_empty() => {
                Status::Synced
            }
            None => Status::Syncing {
                pending: self.outbox.len(),
            },
        }
    }

    /// The user changed something (credentials, database): try again now.
    pub fn retry_now(&mut self) {
        self.error = None;
        self.retry_at = None;
        self.errors = 0;
    }

    fn path(&self, rest: &str) -> String {
        format!("/{}{}", encode(&self.cfg.db), rest)
    }

    fn checkpoint_path(&self) -> String {
        self.path(&format!(
            "/_local/{}",
            encode(&format!("memoire-{}", self.cfg.device))
        ))
    }

    fn changes_request(&self, live: bool) -> Request {
        let mut query = vec![
            ("include_docs", "true".to_string()),
            ("style", "all_docs".to_string()),
            ("conflicts", "true".to_string()),
            ("limit", self.page.to_string()),
        ];
        if let Some(s) = &self.since {
            query.push(("since", s.clone()));
        }
        if live {
            query.push(("feed", "longpoll".to_string()));
            query.push(("heartbeat", self.cfg.heartbeat_ms.to_string()));
        }
        Request {
            method: Method::Get,
            path: self.path("/_changes"),
            query: query.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            body: None,
        }
    }

    fn bulk(&self, docs: Vec<Value>) -> Request {
        Request {
            method: Method::Post,
            path: self.path("/_bulk_docs"),
            query: vec![],
            body: Some(json!({ "docs": docs }).to_string()),
        }
    }

    /// Whether the next request is bulk work (a `_changes` page while catching up, or a
    /// `_bulk_docs` push) that may go out while the writes already handed out are still being
    /// applied: its answer is only handled after them, and neither depends on the other. Anything
    /// else (a longpoll, a checkpoint, conflict handling) waits until the writes are applied,
    /// since they may add documents to push.
    pub fn bulk_next(&self, now: Millis) -> bool {
        let ready = self.inflight.is_none()
            && self.retry_at.is_none_or(|at| now >= at)
            && self.error.is_none()
            && self.db_ok
            && self.checkpoint_read
            && self.to_open.is_empty()
            && self.resolve_docs.is_empty();
        ready && (!self.caught_up || (self.reread.is_empty() && !self.outbox.is_empty()))
    }

    /// The next request to send, if any (none while one is in flight, while backing off, after an
    /// error only the user can fix, or when idle without `live`).
    pub fn poll_request(&mut self, now: Millis) -> Option<Request> {
        if self.inflight.is_some() {
            return None;
        }
        if let Some(at) = self.retry_at {
            if now < at {
                return None;
            }
            self.retry_at = None;
        } else if self.error.as_ref().is_some_and(|e| !e.is_retryable()) {
            return None;
        }
        let (inflight, req) = self.next_request()?;
        self.inflight = Some(inflight);
        Some(req)
    }

    /// What to ask next and what its answer will be, in order of need: the database, the
    /// checkpoint, conflicts to open and resolve, catching up, rereads, pushes, the checkpoint
    /// write, the longpoll; `None` when idle without `live`.
    fn next_request(&mut self) -> Option<(Inflight, Request)> {
        Some(if !self.db_ok {
            if self.create {
                let put = Request {
                    method: Method::Put,
                    ..get(self.path(""))
                };
                (Inflight::CreateDb, put)
            } else {
                (Inflight::DbInfo, get(self.path("")))
            }
        } else if !self.checkpoint_read {
            (Inflight::ReadCheckpoint, get(self.checkpoint_path()))
        } else if let Some(c) = self.to_open.front() {
            (Inflight::OpenRevs, self.open_revs_request(c))
        } else if !self.resolve_docs.is_empty() {
            if let Some(guard) = self.guard_first() {
                return Some(guard);
            }
            self.resolve_request()
        } else if !self.caught_up {
            (
                Inflight::Changes {
                    live: false,
                    limit: self.page,
                },
                self.changes_request(false),
            )
        } else if !self.reread.is_empty() {
            (Inflight::Reread, self.reread_request())
        } else if !self.outbox.is_empty() {
            if let Some(guard) = self.guard_first() {
                return Some(guard);
            }
            self.push_request()
        } else if self.since.is_some()
            && self.server_cp.as_ref().map(|(_, s)| s) != Some(&self.since)
        {
            self.checkpoint_write()
        } else if self.cfg.live {
            let limit = self.page;
            (
                Inflight::Changes { live: true, limit },
                self.changes_request(true),
            )
        } else {
            return None;
        })
    }

    /// Without encryption (`Config::guard_marker`), the look for the marker that goes before each
    /// write of documents; `None`: the write may go now (and the next one looks again).
    fn guard_first(&mut self) -> Option<(Inflight, Request)> {
        if self.cfg.guard_marker && !self.guarded {
            let marker = self.path(&format!("/{}", encode(super::seal::MARKER_ID)));
            return Some((Inflight::Guard, get(marker)));
        }
        self.guarded = false;
        None
    }

    /// The next `_bulk_docs` of conflict resolutions (at most [`RESOLVE_BATCH`] documents), with
    /// the merged winners it writes.
    fn resolve_request(&mut self) -> (Inflight, Request) {
        let n = self.resolve_docs.len().min(RESOLVE_BATCH);
        let docs: Vec<Value> = self.resolve_docs.drain(..n).collect();
        let ids: BTreeSet<&str> = docs
            .iter()
            .filter(|d| d.get("_deleted").is_none())
            .filter_map(|d| d.get("_id").and_then(Value::as_str))
            .collect();
        let (meta, rest) = std::mem::take(&mut self.resolve)
            .into_iter()
            .partition(|m| ids.contains(m.id.as_str()));
        self.resolve = rest;
        (Inflight::Resolve(meta), self.bulk(docs))
    }

    /// The `open_revs` request that reads the losing leaves of `c`.
    fn open_revs_request(&self, c: &Conflicted) -> Request {
        let revs = serde_json::to_string(&c.losers).unwrap_or_default();
        let mut req = get(self.path(&format!("/{}", encode(&c.winner.id))));
        req.query = vec![("open_revs".into(), revs)];
        req
    }

    /// The `_all_docs` request that reads the documents to reread again, with their conflicts.
    fn reread_request(&self) -> Request {
        let keys: Vec<&String> = self.reread.iter().collect();
        Request {
            method: Method::Post,
            path: self.path("/_all_docs"),
            query: vec![
                ("include_docs".into(), "true".into()),
                ("conflicts".into(), "true".into()),
            ],
            body: Some(json!({ "keys": keys }).to_string()),
        }
    }

    /// The `_bulk_docs` push of the next batch of the outbox.
    fn push_request(&self) -> (Inflight, Request) {
        let batch: Vec<LocalDoc> = self
            .outbox
            .values()
            .take(self.cfg.push_batch)
            .cloned()
            .collect();
        let docs = batch
            .iter()
            .map(|l| l.doc.to_json(l.rev.as_deref()))
            .collect();
        (Inflight::Push(batch), self.bulk(docs))
    }

    /// The write of the checkpoint: how far this device has read (`since`).
    fn checkpoint_write(&self) -> (Inflight, Request) {
        let since = self.since.clone().unwrap_or_default();
        let mut body = json!({ "since": since, "device": self.cfg.device });
        if let Some((rev, _)) = &self.server_cp {
            body["_rev"] = Value::String(rev.clone());
        }
        let req = Request {
            method: Method::Put,
            path: self.checkpoint_path(),
            query: vec![],
            body: Some(body.to_string()),
        };
        (Inflight::WriteCheckpoint(since), req)
    }

    /// No answer arrived (network error, CORS refusal, connection cut, body cut mid-read): nothing
    /// changes locally; the connection starts over after a backoff.
    pub fn handle_failure(&mut self, now: Millis, reason: &str) {
        self.fail(
            now,
            SyncError::Network {
                reason: reason.to_string(),
            },
        );
    }

    /// The server answered the request in flight with a redirect (not followed): an error only
    /// the user can fix (the address in Settings), no retry.
    pub fn handle_redirected(&mut self, now: Millis) {
        self.fail(now, SyncError::Redirected);
    }

    /// The answer to the request in flight did not begin, or paused, past [`Config`]'s timeouts
    /// (the shell aborted it): nothing changes locally; an error with the next retry time, and
    /// `true` (the shell ends the connection and lets the sync lock go). A longpoll that began and
    /// then fell quiet is only a quiet feed (a proxy that buffers the heartbeats shows it so): it is
    /// asked again, `false`.
    pub fn handle_stalled(&mut self, now: Millis, first_byte: bool) -> bool {
        let Some(inflight) = &self.inflight else {
            return false;
        };
        if !first_byte && matches!(inflight, Inflight::Changes { live: true, .. }) {
            self.inflight = None;
            return false;
        }
        let ms = if first_byte {
            self.cfg.first_byte_ms
        } else {
            self.cfg.idle_ms
        };
        let e = SyncError::Stalled {
            what: what(inflight),
            secs: ms.div_ceil(1000),
        };
        self.fail(now, e);
        true
    }

    /// The whole answer to the request in flight took longer than [`Config::total_ms`] (the shell
    /// aborted it): as [`Replicator::handle_stalled`], a longpoll is asked again (`false`), any other
    /// request is an error with the next retry time (`true`: the connection ends).
    pub fn handle_too_slow(&mut self, now: Millis) -> bool {
        let Some(inflight) = &self.inflight else {
            return false;
        };
        if matches!(inflight, Inflight::Changes { live: true, .. }) {
            self.inflight = None;
            return false;
        }
        let e = SyncError::TooSlow {
            what: what(inflight),
            secs: self.cfg.total_ms.div_ceil(1000),
        };
        self.fail(now, e);
        true
    }

    /// The answer to the request in flight passed [`Config::max_body_bytes`] (the shell aborted
    /// it): nothing changes locally; a `_changes` page is asked for with half the rows next time.
    pub fn handle_too_large(&mut self, now: Millis) {
        let Some(inflight) = &self.inflight else {
            return;
        };
        if matches!(inflight, Inflight::Changes { .. }) {
            self.page = (self.page / 2).max(1);
        }
        let e = SyncError::TooLarge {
            what: what(inflight),
            mb: self.cfg.max_body_bytes.div_ceil(1024 * 1024),
        };
        self.fail(now, e);
    }

    /// The database is gone or unknown (a 404, or a failure): open it, read the checkpoint and
    /// catch up again before anything else.
    fn database_gone(&mut self) {
        self.guarded = false;
        self.db_ok = false;
        self.checkpoint_read = false;
        self.caught_up = false;
    }

    fn fail(&mut self, now: Millis, e: SyncError) {
        if let Some(Inflight::Push(batch)) = self.inflight.take() {
            // Keep what was not pushed (a newer local copy may already have replaced it).
            for l in batch {
                self.outbox.entry(l.doc.id.clone()).or_insert(l);
            }
        }
        self.database_gone();
        self.held_since = None;
        self.to_open.clear();
        self.resolve.clear();
        self.resolve_docs.clear();
        self.cancel = false;
        if e.is_retryable() {
            self.errors += 1;
            self.retry_at = Some(now + backoff_ms(self.errors));
        } else {
            self.retry_at = None;
        }
        self.error = Some(e);
    }

    fn ok(&mut self) {
        self.errors = 0;
        self.error = None;
    }

    /// An HTTP answer to the request in flight.
    pub fn handle_response(&mut self, now: Millis, status: u16, body: &str) {
        self.handle_answer(now, status, Answer::Text(body));
    }

    /// [`Replicator::handle_response`] for a [`Reply`]: an answer the encryption layer opened is
    /// read as the JSON it already is, not written out and read again.
    pub fn handle_reply(&mut self, now: Millis, status: u16, body: Reply) {
        match body {
            Reply::Text(t) => self.handle_answer(now, status, Answer::Text(&t)),
            Reply::Json(v) => self.handle_answer(now, status, Answer::Json(v)),
        }
    }

    fn handle_answer(&mut self, now: Millis, status: u16, body: Answer<'_>) {
        let Some(inflight) = self.inflight.clone() else {
            return;
        };
        let what = what(&inflight);
        if matches!(inflight, Inflight::CreateDb) && (status == 401 || status == 403) {
            // Only admins may create databases: for a user, the database is simply missing.
            self.create = false;
            let db = self.cfg.db.clone();
            return self.fail(now, SyncError::DatabaseMissing { db });
        }
        match status {
            401 => return self.fail(now, SyncError::Unauthorized),
            403 => {
                let db = self.cfg.db.clone();
                return self.fail(now, SyncError::Forbidden { db });
            }
            _ => {}
        }
        let result = match inflight {
            Inflight::DbInfo => self.on_db_info(status),
            Inflight::CreateDb => self.on_create(status),
            Inflight::ReadCheckpoint => self.on_read_checkpoint(status, body),
            Inflight::WriteCheckpoint(since) => self.on_write_checkpoint(status, body, since),
            Inflight::Changes { limit, .. } => self.on_changes(now, status, body, limit),
            Inflight::OpenRevs => self.on_open_revs(now, status, body),
            Inflight::Resolve(meta) => self.on_resolve(status, body, meta),
            Inflight::Push(batch) => self.on_push(status, body, batch),
            Inflight::Reread => self.on_reread(now, status, body),
            Inflight::Guard => self.on_guard(status),
        };
        match result {
            Ok(()) => {
                self.inflight = None;
                self.ok();
            }
            Err(Bad::Status) => self.fail(now, SyncError::Server { status, what }),
            Err(Bad::Body) => self.fail(now, SyncError::Unreadable { what }),
            Err(Bad::Fatal(e)) => self.fail(now, e),
        }
    }

    /// The marker looked for before a push (`Config::guard_marker`): none, the push goes; there,
    /// sync stops before anything more goes up in plaintext.
    fn on_guard(&mut self, status: u16) -> Result<(), Bad> {
        match status {
            404 => {
                self.guarded = true;
                Ok(())
            }
            200 => Err(Bad::Fatal(SyncError::Encrypted)),
            _ => Err(Bad::Status),
        }
    }

    fn on_db_info(&mut self, status: u16) -> Result<(), Bad> {
        match status {
            200 => {
                self.db_ok = true;
                Ok(())
            }
            404 if self.cfg.create_db => {
                self.create = true;
                Ok(())
            }
            404 => Err(Bad::Fatal(SyncError::DatabaseMissing {
                db: self.cfg.db.clone(),
            })),
            _ => Err(Bad::Status),
        }
    }

    fn on_create(&mut self, status: u16) -> Result<(), Bad> {
        self.create = false;
        match status {
            201 | 202 => {
                // A new database holds nothing: start from zero and push everything.
                self.db_ok = true;
                self.since = None;
                self.server_cp = None;
                self.writes.push_back(Write::PushAll);
                Ok(())
            }
            412 => {
                self.db_ok = true;
                Ok(())
            }
            _ => Err(Bad::Status),
        }
    }

    fn on_read_checkpoint(&mut self, status: u16, body: Answer<'_>) -> Result<(), Bad> {
        match status {
            200 => {
                let cp: LocalCheckpoint = body.read()?;
                self.server_cp = Some((cp.rev, cp.since.as_ref().and_then(seq_text)));
            }
            404 => {
                self.server_cp = None;
                if self.since.is_some() {
                    // The server does not know this device: it lost its data or is another
                    // database. Pull everything and push everything; merging makes that safe.
                    self.since = None;
                    self.writes.push_back(Write::PushAll);
                }
            }
            _ => return Err(Bad::Status),
        }
        self.checkpoint_read = true;
        Ok(())
    }

    fn on_write_checkpoint(
        &mut self,
        status: u16,
        body: Answer<'_>,
        since: String,
    ) -> Result<(), Bad> {
        match status {
            200..=202 => {
                let saved: Saved = body.read()?;
                self.server_cp = Some((saved.rev, Some(since)));
                Ok(())
            }
            409 => {
                self.checkpoint_read = false;
                Ok(())
            }
            404 => {
                self.database_gone();
                Ok(())
            }
            _ => Err(Bad::Status),
        }
    }

    fn on_changes(
        &mut self,
        now: Millis,
        status: u16,
        body: Answer<'_>,
        limit: usize,
    ) -> Result<(), Bad> {
        if status != 200 {
            if status == 404 {
                self.database_gone();
                return Ok(());
            }
            return Err(Bad::Status);
        }
        let mut changes: Changes = body.read()?;
        if changes
            .results
            .iter()
            .any(|r| r.id == super::seal::MARKER_ID)
        {
            // Only a device without encryption sees it: the seal takes it out of sealed pages.
            return Err(Bad::Fatal(SyncError::Encrypted));
        }
        let mut last_seq = seq_text(&changes.last_seq).ok_or(Bad::Body)?;
        if changes.results.len() > limit {
            // More rows than asked for: take those asked for, and read on from the last of them.
            changes.results.truncate(limit);
            let last = changes.results.last().and_then(|r| r.seq.as_ref());
            last_seq = last.and_then(seq_text).ok_or(Bad::Body)?;
        }
        let full = changes.results.len() >= limit;
        for row in changes.results {
            self.pulled_row(now, row);
        }
        self.page = (self.page * 2).min(self.cfg.pull_batch.max(1));
        self.caught_up = !full;
        if self.to_open.is_empty() {
            self.advance(last_seq);
        } else {
            self.held_since = Some(last_seq);
        }
        Ok(())
    }

    /// One row of a `_changes` page: a deletion, a document to merge, or one refused.
    fn pulled_row(&mut self, now: Millis, row: ChangeRow) {
        // Images' bytes: the session moves them (`sync::blob`).
        if row.id.starts_with('_') || super::blob::is_blob_id(&row.id) {
            return;
        }
        if row.deleted {
            if Kind::of_id(&row.id).is_some() {
                self.writes.push_back(Write::Repush { id: row.id });
            }
            return;
        }
        let Some(v) = row.doc else {
            self.skip(format!("{}: no document in the change", row.id));
            return;
        };
        match check::pulled(&v, &self.cfg.limits, now) {
            Ok(c) => {
                let conflicted = Conflicted {
                    winner: c.doc,
                    rev: c.rev,
                    losers: c.conflicts,
                };
                if self.open_revs_request(&conflicted).url("").len() > MAX_OPEN_REVS_URL {
                    let id = crate::engine::format::clip(&conflicted.winner.id, 80);
                    return self.skip(format!(
                        "{id}: its conflicting revisions cannot be asked for in one request of at most {MAX_OPEN_REVS_URL} bytes"
                    ));
                }
                self.pulled(&conflicted.winner, &conflicted.rev);
                if !conflicted.losers.is_empty() {
                    self.to_open.push_back(conflicted);
                }
            }
            Err(e) => self.skip(e),
        }
    }

    /// The server holds `doc` at `rev`: merge it locally, and into a queued push of the same id.
    fn pulled(&mut self, doc: &Doc, rev: &str) {
        self.writes.push_back(Write::Merge {
            remote: doc.clone(),
            rev: rev.to_string(),
        });
        if let Some(queued) = self.outbox.get(&doc.id) {
            let a = apply_remote(Some(queued), doc, rev);
            if a.dirty {
                self.outbox.insert(doc.id.clone(), a.local);
            } else {
                self.outbox.remove(&doc.id);
            }
        }
    }

    fn advance(&mut self, since: String) {
        self.writes.push_back(Write::Checkpoint {
            since: since.clone(),
        });
        self.since = Some(since);
    }

    fn on_open_revs(&mut self, now: Millis, status: u16, body: Answer<'_>) -> Result<(), Bad> {
        let Some(c) = self.to_open.front().cloned() else {
            return Ok(());
        };
        let mut refused = Vec::new();
        let leaves: Vec<Doc> = match status {
            200 => body
                .read::<Vec<OpenRev>>()?
                .into_iter()
                .filter_map(|r| r.ok)
                .filter(|v| v.get("_deleted") != Some(&Value::Bool(true)))
                .filter_map(|v| match leaf(&v, &c, &self.cfg.limits, now) {
                    Ok(doc) => Some(doc),
                    Err(e) => {
                        refused.push(e);
                        None
                    }
                })
                .collect(),
            404 => Vec::new(),
            _ => return Err(Bad::Status),
        };
        for e in refused {
            self.skip(e);
        }
        self.to_open.pop_front();
        // Locally first: every leaf merged in, then the winner, so the local copy is dirty (and will
        // be pushed) if the losers added anything, even if writing the resolution fails.
        for leaf in &leaves {
            self.writes.push_back(Write::Merge {
                remote: leaf.clone(),
                rev: c.rev.clone(),
            });
        }
        self.writes.push_back(Write::Merge {
            remote: c.winner.clone(),
            rev: c.rev.clone(),
        });
        let merged = merge_all(std::iter::once(&c.winner).chain(leaves.iter()))
            .unwrap_or_else(|| c.winner.clone());
        let changed = merged != c.winner;
        if changed {
            self.resolve_docs.push(merged.to_json(Some(&c.rev)));
        }
        for loser in &c.losers {
            self.resolve_docs
                .push(json!({ "_id": c.winner.id, "_rev": loser, "_deleted": true }));
        }
        if changed {
            self.resolve.push(merged);
        }
        if self.to_open.is_empty() && self.resolve_docs.is_empty() {
            self.release_held();
        }
        Ok(())
    }

    fn release_held(&mut self) {
        if let Some(s) = self.held_since.take() {
            self.advance(s);
        }
    }

    fn on_resolve(
        &mut self,
        status: u16,
        body: Answer<'_>,
        merged_docs: Vec<Doc>,
    ) -> Result<(), Bad> {
        if status != 201 && status != 200 {
            return Err(Bad::Status);
        }
        let results: Vec<BulkResult> = body.read()?;
        for merged in merged_docs {
            // A winner write that lost a race leaves the local copy dirty: it is pushed later.
            let saved = results
                .iter()
                .find(|r| r.id.as_deref() == Some(&merged.id) && r.error.is_none())
                .and_then(|r| r.rev.clone());
            if let Some(rev) = saved {
                self.pulled(&merged, &rev);
            }
        }
        if self.to_open.is_empty() && self.resolve_docs.is_empty() {
            self.release_held();
        }
        Ok(())
    }

    fn on_push(&mut self, status: u16, body: Answer<'_>, batch: Vec<LocalDoc>) -> Result<(), Bad> {
        if status != 201 && status != 200 {
            if status == 404 {
                self.database_gone();
                return Ok(());
            }
            return Err(Bad::Status);
        }
        let results: Vec<BulkResult> = body.read()?;
        // By id (the first answer for each): a page's answers are looked up once each.
        let mut by_id: std::collections::HashMap<&str, &BulkResult> =
            std::collections::HashMap::with_capacity(results.len());
        for r in &results {
            if let Some(id) = r.id.as_deref() {
                by_id.entry(id).or_insert(r);
            }
        }
        for sent in batch {
            let id = sent.doc.id.clone();
            let Some(r) = by_id.get(id.as_str()) else {
                continue; // no word on it: it stays queued
            };
            match (&r.rev, r.error.as_deref()) {
                (Some(rev), None) => {
                    self.attempts.remove(&id);
                    self.pulled(&sent.doc, rev);
                }
                (_, Some("conflict")) => {
                    self.reread.insert(id);
                }
                (_, Some(err)) => {
                    // Refused for good (a validation function, a size limit): reported, and kept
                    // locally; it is offered again on the next connection.
                    self.outbox.remove(&id);
                    let reason = r.reason.clone().unwrap_or_else(|| err.to_string());
                    self.skip(format!("{id}: refused by the server: {reason}"));
                }
                (None, None) => {}
            }
        }
        Ok(())
    }

    fn on_reread(&mut self, now: Millis, status: u16, body: Answer<'_>) -> Result<(), Bad> {
        if status != 200 {
            return Err(Bad::Status);
        }
        let all: AllDocs = body.read()?;
        let ids = std::mem::take(&mut self.reread);
        for row in all.rows {
            if !ids.contains(&row.key) {
                continue;
            }
            let tries = self.attempts.entry(row.key.clone()).or_insert(0);
            *tries += 1;
            if *tries > MAX_CONFLICT_RETRIES {
                // Keep it queued for the next connection instead of looping now.
                self.attempts.remove(&row.key);
                return Err(Bad::Fatal(SyncError::KeepsConflicting { id: row.key }));
            }
            let Some(queued) = self.outbox.get(&row.key).cloned() else {
                continue;
            };
            let limits = &self.cfg.limits;
            let read = |v: &Value| {
                let c = check::pulled(v, limits, now)?;
                match c.doc.id == row.key {
                    true => Ok(c),
                    false => Err(format!("{}: answered with another document", row.key)),
                }
            };
            let got = row.doc.as_ref().map(read);
            if let Some(Err(e)) = &got {
                self.skip(e.clone());
            }
            match (&row.value, got) {
                (Some(v), Some(Ok(c))) if !v.deleted => self.pulled(&c.doc, &c.rev),
                (Some(v), _) if !v.deleted => {
                    // Not a Memoire document: write ours over it.
                    let rev = Some(v.rev.clone());
                    self.outbox
                        .insert(row.key.clone(), LocalDoc { rev, ..queued });
                }
                _ => {
                    // Deleted on the server or not there: create it again.
                    self.outbox.insert(
                        row.key.clone(),
                        LocalDoc {
                            rev: None,
                            ..queued
                        },
                    );
                }
            }
        }
        Ok(())
    }
}

/// The request in flight, as an error names it.
fn what(inflight: &Inflight) -> &'static str {
    match inflight {
        Inflight::DbInfo | Inflight::CreateDb => "the database check",
        Inflight::ReadCheckpoint | Inflight::WriteCheckpoint(_) => "the checkpoint",
        Inflight::Changes { .. } => "the changes feed",
        Inflight::OpenRevs => "reading conflicting revisions",
        Inflight::Resolve(_) => "writing a resolved conflict",
        Inflight::Push(_) => "the upload",
        Inflight::Reread => "re-reading conflicting documents",
        Inflight::Guard => "the encryption check",
    }
}

/// A conflicting leaf of `c` read and checked: a revision asked for of the same document, held
/// to the limits of any pulled document.
fn leaf(v: &Value, c: &Conflicted, limits: &PullLimits, now: Millis) -> Result<Doc, String> {
    let rev = v.get("_rev").and_then(Value::as_str).unwrap_or_default();
    if !c.losers.iter().any(|l| l == rev) {
        return Err(format!(
            "{}: a conflicting revision that was not asked for; refused",
            c.winner.id
        ));
    }
    let got = check::pulled(v, limits, now)?;
    if got.doc.id != c.winner.id {
        return Err(format!(
            "{}: a conflicting revision of another document ({}); refused",
            c.winner.id,
            crate::engine::format::clip(&got.doc.id, 80)
        ));
    }
    Ok(got.doc)
}

/// An answer's body being read: borrowed text, or JSON.
enum Answer<'a> {
    Text(&'a str),
    Json(Value),
}

impl Answer<'_> {
    /// The body as `T`; [`Bad::Body`] when it is not one.
    fn read<T: serde::de::DeserializeOwned>(self) -> Result<T, Bad> {
        match self {
            Answer::Text(t) => serde_json::from_str(t).map_err(|_| Bad::Body),
            Answer::Json(v) => serde_json::from_value(v).map_err(|_| Bad::Body),
        }
    }
}

enum Bad {
    Status,
    Body,
    Fatal(SyncError),
}
