#![cfg(not(target_arch = "wasm32"))]
//! `engine::sync::kinds`: the table of register-like synced kinds. Every kind of the table
//! (`registers!`) walks through track → document → apply: its change is tracked and reads its
//! kind, its record becomes a document under its own `_id` that survives CouchDB's JSON, the
//! document is its effect and groups as a register, the record read back pushes nothing new, an
//! edit pushes the edit, and pulled records join the stored ones. A kind added to the table
//! without its case here (`Case`) does not compile; one whose conversion loses its record fails.

use memoire::engine::model::*;
use memoire::engine::sync::kinds::{is_register, tracked_by, Register};
use memoire::engine::sync::local::{group, observed, Reads, Tracked};
use memoire::engine::sync::track::{effect, Effect};
use memoire::engine::sync::{Clock, Doc, Hlc, Kind};

fn clock(wall: i64) -> Clock {
    Clock::resume("d", None, wall, 1_000)
}

/// A kind's case: a record of it, and the same record edited by the user's hand.
trait Case: Register + std::fmt::Debug + PartialEq {
    fn record() -> Self;
    fn edited(&self) -> Self;
}

#[rustfmt::skip]
impl Case for UserFact {
    fn record() -> Self {
        UserFact { id: "f1".into(), text: "I live in Oslo.".into(), kind: FactKind::Home, claim_key: "home".into(), source: None, valid_from: 10, valid_to: None, forgotten: None, scope: None, updated_at: 10 }
    }
    fn edited(&self) -> Self {
        UserFact { text: "I live in Bergen.".into(), ..self.clone() }
    }
}

#[rustfmt::skip]
impl Case for Project {
    fn record() -> Self {
        Project { id: "p1".into(), name: "Garden".into(), instructions: "Answer briefly.".into(), created_at: 10, updated_at: 10, deleted: None }
    }
    fn edited(&self) -> Self {
        Project { name: "Allotment".into(), ..self.clone() }
    }
}

/// One kind walked through the table's moves.
fn check<R: Case>() {
    let what = std::any::type_name::<R>();
    let r = R::record();
    // Its change is tracked, reads its kind, and is the table's.
    let change = R::change();
    assert_eq!(tracked_by(&change), Some(R::KIND), "{what}");
    assert!(is_register(R::KIND), "{what}");
    assert_eq!(
        observed(&change),
        vec![Tracked::Change(change.clone())],
        "{what}"
    );
    assert_eq!(
        Tracked::Change(change).reads(),
        Some(Reads::Register(R::KIND)),
        "{what}"
    );
    // Its record becomes a document of its kind under its own `_id`.
    let doc = R::track(None, &r, &mut clock(100), 100).expect(what);
    assert_eq!(
        (doc.id.clone(), doc.body.kind()),
        (r.doc_id(), R::KIND),
        "{what}"
    );
    assert_eq!(Kind::of_id(&doc.id), Some(R::KIND), "{what}");
    assert!(
        doc.id.starts_with(&format!("{}:", R::KIND.prefix())),
        "{what}"
    );
    // The document survives CouchDB's JSON.
    let back = Doc::from_json(&doc.to_json(Some("1-a"))).expect(what);
    assert_eq!(back.doc, doc, "{what}");
    // It is its own effect, grouped as a register; the record it holds pushes nothing new.
    assert_eq!(effect(&doc), Some(Effect::Register(doc.clone())), "{what}");
    assert_eq!(
        group(vec![Effect::Register(doc.clone())]).registers,
        vec![doc.clone()],
        "{what}"
    );
    let held = R::of_doc(&doc).expect(what);
    assert_eq!(
        R::track(Some(&doc), &held, &mut clock(200), 200),
        None,
        "{what}: read back"
    );
    assert_eq!(
        R::track(Some(&doc), &r, &mut clock(200), 200),
        None,
        "{what}: again"
    );
    // An edit pushes the edit.
    let next = R::track(Some(&doc), &r.edited(), &mut clock(200), 200).expect(what);
    let pulled = R::of_doc(&next).expect(what);
    assert_eq!(
        pulled,
        R::join(&[held.clone()], vec![pulled.clone()])[0],
        "{what}"
    );
    assert_eq!(
        R::track(Some(&next), &r.edited(), &mut clock(300), 300),
        None,
        "{what}: edited"
    );
    // Pulled records join the stored ones: a new one is written, the same one is not.
    assert_eq!(
        R::join(&[], vec![held.clone()]),
        vec![held.clone()],
        "{what}"
    );
    assert_eq!(
        R::join(&[held.clone()], vec![held.clone()]),
        vec![],
        "{what}"
    );
    // A tombstone of its kind holds no record and stays one.
    let stone = Doc::tombstone(&doc.id, &Hlc::new(150, 0, "d")).expect(what);
    assert_eq!(R::of_doc(&stone), None, "{what}");
    assert_eq!(
        R::track(Some(&stone), &r, &mut clock(200), 200),
        None,
        "{what}"
    );
}

#[test]
fn every_kind_of_the_table_walks_through_track_document_and_apply() {
    let mut kinds = Vec::new();
    macro_rules! row {
        ($r:ty) => {
            check::<$r>();
            kinds.push(<$r as Register>::KIND);
        };
    }
    memoire::registers!(row);
    assert_eq!(kinds, [Kind::Fact, Kind::Project]);
}

fn check_not_register(kind: Kind) {
    assert!(!is_register(kind), "{kind:?}");
}

#[test]
#[rustfmt::skip]
fn the_other_kinds_keep_their_own_arms() {
    check_not_register(Kind::Conversation);
    check_not_register(Kind::Message);
    check_not_register(Kind::Entity);
    check_not_register(Kind::Edge);
    check_not_register(Kind::Summary);
}
