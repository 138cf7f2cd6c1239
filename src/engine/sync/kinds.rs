//! The table of register-like synced kinds: the kinds whose records the store keeps as one whole
//! set (read whole, written by id), each record one document merged as registers, so that tracking
//! them, applying pulled ones and reporting them are the same moves for every kind. Today: the
//! facts about the user (`f:{fact}`) and the projects (`p:{project}`). The table is
//! [`registers!`] (one line per kind, in the order they are tracked and applied) and each kind's
//! [`Register`] impl here: its `Kind`, the shared change that tracks and reports it, its
//! document's `_id`, its `track_*`, the record a document holds and how pulled records join the
//! stored ones. What the rest of sync derives from it: which change tracks a kind
//! ([`tracked_by`], `local::Tracked::reads`'s `Reads::Register`), which documents are its
//! effects ([`is_register`], `track::Effect::Register`, `local::group`), and the session's one
//! path for them (`session/sync/registers.rs`).
//!
//! Not here: conversations, messages, summary versions and the entity graph. They are not whole
//! sets merged as registers (messages are immutable and ordered, summary versions are numbered per
//! device, an entity's graph is changed by its edges and unified), so they keep their own arms.
//!
//! Adding a register-like kind (say, saved prompts): its `Kind` and document body (`doc.rs`, with
//! the body's merge in `merge.rs` and what a pulled one may hold in `check.rs`), its conversion
//! (`convert.rs`), its line in [`registers!`] and its [`Register`] impl here; in the session, its
//! one store impl (`Shelf` in `session/sync/registers.rs`: the store's read and write of its
//! records under their Web Lock). `tests/engine_sync_kinds.rs` walks every kind of the table
//! through track → document → apply, and does not compile until a new kind has its case.
//! Must not import anything outside `crate::engine`.

use super::convert::{to_fact, to_project};
use super::doc::{fact_id, project_id, Body, Doc, Kind};
use super::hlc::Clock;
use super::track::{track_fact, track_project};
use crate::engine::model::{Millis, Project, UserFact};
use crate::engine::tabs::Change;

/// The table: `registers!(m)` expands to `m!(Record);` once per register-like kind's record type,
/// in the order they are tracked (the first sync's seed) and applied (after a batch).
#[macro_export]
macro_rules! registers {
    ($m:ident) => {
        $m!($crate::engine::model::UserFact);
        $m!($crate::engine::model::Project);
    };
}

/// A register-like kind: a record of the store's whole set, one document per record.
pub trait Register: Clone + Sized + 'static {
    /// Its documents' kind (`_id` prefix and `Body` variant, `doc.rs`).
    const KIND: Kind;
    /// The shared change that says this tab changed records of this kind (it is tracked) and that
    /// reports pulled ones (the UI reads them again).
    fn change() -> Change;
    /// The `_id` of this record's document.
    fn doc_id(&self) -> String;
    /// The document to push for `r` against its stored document (`None`: it already says as
    /// much; a tombstone stays one).
    fn track(stored: Option<&Doc>, r: &Self, clock: &mut Clock, now: Millis) -> Option<Doc>;
    /// The record a document of this kind holds (`None`: another kind, or a tombstone).
    fn of_doc(d: &Doc) -> Option<Self>;
    /// The records to write for `pulled`, each joined with the stored record of its id or the one
    /// already joined; none when nothing changes.
    fn join(stored: &[Self], pulled: Vec<Self>) -> Vec<Self>;
}

/// A fact about the user: a forgotten or past fact stays so (`memory::pulled_fact`).
impl Register for UserFact {
    const KIND: Kind = Kind::Fact;
    fn change() -> Change {
        Change::UserFacts
    }
    fn doc_id(&self) -> String {
        fact_id(&self.id)
    }
    fn track(stored: Option<&Doc>, r: &Self, clock: &mut Clock, now: Millis) -> Option<Doc> {
        track_fact(stored, r, clock, now)
    }
    fn of_doc(d: &Doc) -> Option<Self> {
        match &d.body {
            Body::Fact(f) => Some(to_fact(f)),
            _ => None,
        }
    }
    fn join(stored: &[Self], pulled: Vec<Self>) -> Vec<Self> {
        super::local::join_facts(stored, pulled)
    }
}

/// A project: a deletion anywhere wins (`engine::project::join_project`).
impl Register for Project {
    const KIND: Kind = Kind::Project;
    fn change() -> Change {
        Change::Projects
    }
    fn doc_id(&self) -> String {
        project_id(&self.id)
    }
    fn track(stored: Option<&Doc>, r: &Self, clock: &mut Clock, now: Millis) -> Option<Doc> {
        track_project(stored, r, clock, now)
    }
    fn of_doc(d: &Doc) -> Option<Self> {
        match &d.body {
            Body::Project(p) => Some(to_project(p)),
            _ => None,
        }
    }
    fn join(stored: &[Self], pulled: Vec<Self>) -> Vec<Self> {
        crate::engine::project::join_all(stored, &pulled)
    }
}

/// The register-like kind a shared change of this tab tracks (`None`: not one of the table's).
pub fn tracked_by(change: &Change) -> Option<Kind> {
    macro_rules! row {
        ($r:ty) => {
            if *change == <$r as Register>::change() {
                return Some(<$r as Register>::KIND);
            }
        };
    }
    registers!(row);
    None
}

/// Whether documents of `kind` are a register-like kind's of the table.
pub fn is_register(kind: Kind) -> bool {
    macro_rules! row {
        ($r:ty) => {
            if kind == <$r as Register>::KIND {
                return true;
            }
        };
    }
    registers!(row);
    false
}
