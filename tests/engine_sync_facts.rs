#![cfg(not(target_arch = "wasm32"))]
//! Sync of the facts about the user (`f:{fact}` documents): the merge of two versions, the document
//! a local change produces, what a pulled fact leaves of the stored record, each rule a one-line
//! case of its family's `check`; then the property that, whatever devices do and in whatever order
//! their versions meet, a fact forgotten anywhere ends forgotten everywhere (and one past anywhere,
//! past everywhere), every device holding the same document.

use memoire::engine::memory::user;
use memoire::engine::model::{FactKind, FactSource, Millis, UserFact};
use memoire::engine::sync::convert::{fact_doc, to_fact};
use memoire::engine::sync::doc::{fact_id, Body, Doc, FactDoc};
use memoire::engine::sync::kinds::Register;
use memoire::engine::sync::memory::pulled_fact;
use memoire::engine::sync::track::{effect, parse_id, track_fact, Effect};
use memoire::engine::sync::{merge, Clock, Hlc, Kind, MAX_SKEW_MS};
use proptest::prelude::*;

const T0: Millis = 1_763_700_000_000;

fn fact(text: &str, updated_at: Millis) -> UserFact {
    UserFact {
        id: "f1".into(),
        text: text.into(),
        kind: FactKind::Home,
        claim_key: user::claim_key(text),
        source: Some(FactSource {
            conversation_id: "c1".into(),
            message_id: "m1".into(),
            said_at: T0,
        }),
        valid_from: T0,
        valid_to: None,
        forgotten: None,
        scope: None,
        updated_at,
    }
}

fn gone(mut f: UserFact, at: Millis) -> UserFact {
    f.forgotten = Some(at);
    f.updated_at = at;
    f
}

fn ended(mut f: UserFact, at: Millis) -> UserFact {
    f.valid_to = Some(at);
    f.updated_at = at;
    f
}

/// The document of `f` as device `device` writes it at wall time `wall`.
fn doc(f: &UserFact, wall: Millis, device: &str) -> Doc {
    Doc::new(Body::Fact(fact_doc(f, &Hlc::new(wall, 0, device))))
}

fn held(d: &Doc) -> UserFact {
    match &d.body {
        Body::Fact(f) => to_fact(f),
        other => panic!("not a fact: {other:?}"),
    }
}

// ---------------------------------------------------------------- the merge

/// Two versions merged, in both orders: the fact they hold.
fn check_merge(a: Doc, b: Doc, text: &str, valid_to: Option<Millis>, forgotten: Option<Millis>) {
    for (x, y) in [(&a, &b), (&b, &a)] {
        let m = held(&merge(x, y));
        assert_eq!(
            (m.text.as_str(), m.valid_to, m.forgotten),
            (text, valid_to, forgotten)
        );
    }
}

#[test]
fn merge_rules() {
    let oslo = fact("I live in Oslo.", T0);
    let norway = fact("I live in Oslo, Norway.", T0 + 9);
    // The later words win.
    check_merge(
        doc(&oslo, 1, "a"),
        doc(&norway, 2, "b"),
        "I live in Oslo, Norway.",
        None,
        None,
    );
    // Forgotten wins over a later edit on another device, whatever the order.
    check_merge(
        doc(&gone(oslo.clone(), T0 + 1), 1, "a"),
        doc(&norway, 5, "b"),
        "I live in Oslo, Norway.",
        None,
        Some(T0 + 1),
    );
    // Two forgettings: the earliest.
    check_merge(
        doc(&gone(oslo.clone(), T0 + 4), 4, "a"),
        doc(&gone(oslo.clone(), T0 + 2), 2, "b"),
        "I live in Oslo.",
        None,
        Some(T0 + 2),
    );
    // Past stays past over a later edit; the earliest end is kept.
    check_merge(
        doc(&ended(oslo.clone(), T0 + 3), 3, "a"),
        doc(&norway, 7, "b"),
        "I live in Oslo, Norway.",
        Some(T0 + 3),
        None,
    );
    check_merge(
        doc(&ended(oslo.clone(), T0 + 3), 3, "a"),
        doc(&ended(oslo.clone(), T0 + 6), 6, "b"),
        "I live in Oslo.",
        Some(T0 + 3),
        None,
    );
    // Equal stamps: the greater words, the same on both sides.
    check_merge(
        doc(&oslo, 1, "a"),
        doc(&fact("I live in Bergen.", T0), 1, "a"),
        "I live in Oslo.",
        None,
        None,
    );
}

#[test]
fn the_scope_goes_with_the_copy_changed_last() {
    let mut in_project = fact("I work as a nurse.", T0);
    in_project.scope = Some("p1".into());
    let mut moved = in_project.clone();
    moved.scope = None;
    for (x, y) in [
        (doc(&in_project, 1, "a"), doc(&moved, 2, "b")),
        (doc(&moved, 2, "b"), doc(&in_project, 1, "a")),
    ] {
        assert_eq!(
            held(&merge(&x, &y)).scope,
            None,
            "moved to about you, on every device"
        );
    }
}

#[test]
fn a_fact_document_has_its_own_id_kind_and_effect() {
    let d = doc(&fact("I live in Oslo.", T0), 1, "a");
    assert_eq!(d.id, fact_id("f1"));
    assert_eq!(
        parse_id("f:a%3Ab"),
        Some((Kind::Fact, None, vec!["a:b".to_string()]))
    );
    assert_eq!(effect(&d), Some(Effect::Register(d.clone())));
    assert_eq!(UserFact::of_doc(&d), Some(fact("I live in Oslo.", T0)));
    // It survives the trip through CouchDB's JSON, and an older build's reader would skip it.
    let back = Doc::from_json(&d.to_json(Some("1-x"))).unwrap();
    assert_eq!(back.doc, d);
}

// ---------------------------------------------------------------- what a local change pushes

/// The stored document (if any), the record after a local change at `T0 + 50`: the fact the pushed
/// document holds, or `None` when nothing is pushed.
fn check_track(stored: Option<Doc>, record: UserFact, pushed: Option<UserFact>) {
    let mut clock = Clock::new("me", Some(&Hlc::new(10, 0, "me")));
    let got = track_fact(stored.as_ref(), &record, &mut clock, T0 + 50);
    assert_eq!(got.as_ref().map(held), pushed, "{record:?}");
    if let (Some(got), Some(stored)) = (got, stored) {
        match (&got.body, &stored.body) {
            (Body::Fact(g), Body::Fact(s)) if g.words.v != s.words.v => {
                assert!(g.words.at > s.words.at, "new words get a new stamp")
            }
            _ => {}
        }
    }
}

#[test]
fn track_rules() {
    let oslo = fact("I live in Oslo.", T0);
    let norway = fact("I live in Oslo, Norway.", T0 + 9);
    // New: its document. Unchanged: nothing.
    check_track(None, oslo.clone(), Some(oslo.clone()));
    check_track(Some(doc(&oslo, 1, "a")), oslo.clone(), None);
    // Edited, forgotten, made past here: pushed.
    check_track(
        Some(doc(&oslo, 1, "a")),
        norway.clone(),
        Some(norway.clone()),
    );
    check_track(
        Some(doc(&oslo, 1, "a")),
        gone(oslo.clone(), T0 + 5),
        Some(gone(oslo.clone(), T0 + 5)),
    );
    check_track(
        Some(doc(&oslo, 1, "a")),
        ended(oslo.clone(), T0 + 5),
        Some(ended(oslo.clone(), T0 + 5)),
    );
    // Forgotten or past in the document, a live record here: nothing to push, it stays so.
    check_track(
        Some(doc(&gone(oslo.clone(), T0 + 5), 1, "a")),
        oslo.clone(),
        None,
    );
    check_track(
        Some(doc(&ended(oslo.clone(), T0 + 5), 1, "a")),
        oslo.clone(),
        None,
    );
    // A tombstone document (no Memoire writes one for a fact): nothing.
    let tomb = Doc::tombstone(&fact_id("f1"), &Hlc::new(1, 0, "a")).unwrap();
    check_track(Some(tomb), norway, None);
}

// ---------------------------------------------------------------- a pulled fact

/// The stored record (if any) and the pulled fact: what is written (`None`: nothing).
fn check_pulled(stored: Option<UserFact>, pulled: UserFact, written: Option<UserFact>) {
    assert_eq!(pulled_fact(stored.as_ref(), pulled), written);
}

#[test]
fn pulled_rules() {
    let oslo = fact("I live in Oslo.", T0);
    let norway = fact("I live in Oslo, Norway.", T0 + 9);
    check_pulled(None, oslo.clone(), Some(oslo.clone()));
    check_pulled(Some(oslo.clone()), oslo.clone(), None);
    check_pulled(Some(oslo.clone()), norway.clone(), Some(norway.clone()));
    check_pulled(
        Some(oslo.clone()),
        gone(oslo.clone(), T0 + 3),
        Some(gone(oslo.clone(), T0 + 3)),
    );
    // Forgotten or made past here since the document was written: it stays so.
    let mut kept = gone(norway.clone(), T0 + 3);
    kept.updated_at = T0 + 9;
    check_pulled(Some(gone(oslo.clone(), T0 + 3)), norway.clone(), Some(kept));
    check_pulled(
        Some(ended(oslo.clone(), T0 + 4)),
        ended(oslo.clone(), T0 + 4),
        None,
    );
}

// ---------------------------------------------------------------- the property

#[derive(Debug, Clone)]
enum Op {
    /// Device `d` edits the fact's text.
    Edit(usize, &'static str),
    Forget(usize),
    /// A newer fact makes it past on device `d`.
    Past(usize),
    /// Device `from`'s document reaches device `to` (pulled, merged, applied).
    Sync(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            0..3usize,
            prop::sample::select(vec!["I live in Oslo, Norway.", "I live in Oslo now."])
        )
            .prop_map(|(d, t)| Op::Edit(d, t)),
        (0..3usize).prop_map(Op::Forget),
        (0..3usize).prop_map(Op::Past),
        (0..3usize, 0..3usize).prop_map(|(a, b)| Op::Sync(a, b)),
    ]
}

struct Device {
    record: Option<UserFact>,
    doc: Option<Doc>,
    clock: Clock,
}

impl Device {
    /// A local change of the record, then its document tracked as the session does.
    fn change(&mut self, now: Millis, f: impl FnOnce(&mut Vec<UserFact>) -> bool) {
        let Some(r) = self.record.take() else { return };
        let mut facts = vec![r];
        f(&mut facts);
        let r = facts.pop().unwrap();
        if let Some(d) = track_fact(self.doc.as_ref(), &r, &mut self.clock, now) {
            self.doc = Some(match &self.doc {
                Some(prev) => merge(prev, &d),
                None => d,
            });
        }
        self.record = Some(r);
    }

    /// A document pulled from another device: merged into the stored one, then applied.
    fn pull(&mut self, remote: &Doc) {
        if let Some(at) = remote.body.latest_stamp() {
            self.clock.observe(at, T0 + 1_000_000_000, MAX_SKEW_MS);
        }
        let merged = match &self.doc {
            Some(prev) => merge(prev, remote),
            None => remote.clone(),
        };
        if self.doc.as_ref() != Some(&merged) {
            if let Some(f) = effect(&merged).and_then(|e| match e {
                Effect::Register(d) => UserFact::of_doc(&d),
                _ => None,
            }) {
                if let Some(next) = pulled_fact(self.record.as_ref(), f) {
                    self.record = Some(next);
                }
            }
        }
        self.doc = Some(merged);
    }
}

fn sync(devices: &mut [Device], from: usize, to: usize) {
    if let Some(d) = devices[from].doc.clone() {
        devices[to].pull(&d);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn a_fact_forgotten_anywhere_is_forgotten_everywhere(ops in prop::collection::vec(op(), 0..24)) {
        let mut devices: Vec<Device> = ["a", "b", "c"]
            .iter()
            .map(|d| Device { record: None, doc: None, clock: Clock::new(d, None) })
            .collect();
        // Device a said it; the others learn it by sync only.
        devices[0].record = Some(fact("I live in Oslo.", T0));
        devices[0].change(T0, |_| true);
        let (mut forgotten, mut past) = (false, false);
        for (step, op) in ops.into_iter().enumerate() {
            let now = T0 + 1 + step as i64;
            match op {
                Op::Edit(d, text) => devices[d].change(now, |f| user::edit(f, "f1", text, now)),
                Op::Forget(d) => {
                    forgotten |= devices[d].record.is_some();
                    devices[d].change(now, |f| user::forget(f, "f1", now));
                }
                Op::Past(d) => {
                    past |= devices[d].record.is_some();
                    devices[d].change(now, |f| {
                        f[0].valid_to = f[0].valid_to.or(Some(now));
                        f[0].updated_at = now;
                        true
                    });
                }
                Op::Sync(a, b) => sync(&mut devices, a, b),
            }
        }
        // Everyone meets everyone, in a fixed round.
        for _ in 0..2 {
            for (a, b) in [(0, 1), (1, 2), (2, 0), (0, 2), (2, 1), (1, 0)] {
                sync(&mut devices, a, b);
            }
        }
        let first = devices[0].doc.clone().unwrap();
        for d in &devices {
            prop_assert_eq!(d.doc.as_ref(), Some(&first), "one document everywhere");
            let r = d.record.as_ref().unwrap();
            prop_assert_eq!(r.forgotten.is_some(), forgotten, "forgotten everywhere or nowhere");
            prop_assert_eq!(r.valid_to.is_some(), past, "past everywhere or nowhere");
            let FactDoc { words, .. } = match &first.body { Body::Fact(f) => f.clone(), _ => unreachable!() };
            prop_assert_eq!(&r.text, &words.v.text, "the same words everywhere");
        }
    }
}
