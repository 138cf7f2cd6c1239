#![cfg(not(target_arch = "wasm32"))]
//! Changing the passphrase of an encrypted sync database (issue 43, item 4; `sync::rotate`): where
//! a device stands by the keys it holds, which key opens a document while the passphrase changes
//! and after, what a pass over the server seals again and when the change is done, the marker
//! through the change (v1 becomes v2), and the requests that move the documents.

use memoire::engine::sync::keys::Kdf;
use memoire::engine::sync::rotate::{self, Listed, Plan, Standing, Under};
use memoire::engine::sync::seal::{Marker, MarkerError, IV_LEN, TAG_LEN};
use serde_json::{json, Value};

const OLD: [u8; 16] = [1; 16];
const NEW: [u8; 16] = [2; 16];
const ELSE: [u8; 16] = [3; 16];

fn marker(kdf: Kdf, salt: [u8; 16]) -> Marker {
    Marker {
        kdf,
        salt: salt.to_vec(),
        iterations: 600_000,
        check: vec![9; IV_LEN + TAG_LEN + 4],
        next: None,
        rotated_from: None,
    }
}

fn rotating() -> Marker {
    let check = vec![8; IV_LEN + TAG_LEN + 4];
    rotate::begin(&marker(Kdf::V2, OLD), NEW.to_vec(), 3_000_000, check).unwrap()
}

fn done() -> Marker {
    rotate::finish(&rotating()).unwrap()
}

// --- where a device stands ---

fn check_standing(m: Marker, held: [u8; 16], old: Option<[u8; 16]>, want: Standing) {
    let got = rotate::standing(&m, &held, old.as_ref().map(|o| o.as_slice()));
    assert_eq!(got, want, "held {held:?}, old {old:?}");
}

#[test]
fn a_device_stands_by_the_keys_it_holds() {
    check_standing(marker(Kdf::V2, OLD), OLD, None, Standing::Current);
    check_standing(marker(Kdf::V2, OLD), ELSE, None, Standing::Other);
    check_standing(rotating(), NEW, Some(OLD), Standing::Rotating);
    check_standing(rotating(), NEW, None, Standing::NextOnly);
    check_standing(rotating(), NEW, Some(ELSE), Standing::NextOnly);
    check_standing(rotating(), OLD, None, Standing::Leaving);
    check_standing(rotating(), ELSE, None, Standing::Other);
    check_standing(done(), NEW, Some(OLD), Standing::Current);
    check_standing(done(), NEW, None, Standing::Current);
    check_standing(done(), OLD, None, Standing::Changed);
    check_standing(done(), ELSE, None, Standing::Other);
}

fn check_may_sync(s: Standing, want: bool) {
    assert_eq!(rotate::may_sync(s), want, "{s:?}");
}

/// A device with only the old key refuses to write once it sees the change (under way or done).
#[test]
fn only_the_old_key_writes_nothing_once_the_change_is_seen() {
    check_may_sync(Standing::Current, true);
    check_may_sync(Standing::Rotating, true);
    check_may_sync(Standing::NextOnly, true);
    check_may_sync(Standing::Leaving, false);
    check_may_sync(Standing::Changed, false);
    check_may_sync(Standing::Other, false);
}

// --- which key opens a document ---

fn check_opened(s: Standing, kept: bool, old: bool, want: Under) {
    assert_eq!(
        rotate::opened_under(s, kept, old),
        want,
        "{s:?} {kept} {old}"
    );
}

#[test]
fn a_document_under_the_old_key_opens_while_rotating_and_is_refused_after() {
    check_opened(Standing::Rotating, false, true, Under::Old);
    check_opened(Standing::Rotating, true, false, Under::Kept);
    check_opened(Standing::Rotating, true, true, Under::Kept);
    check_opened(Standing::Rotating, false, false, Under::Neither);
    check_opened(Standing::Current, false, true, Under::Neither);
    check_opened(Standing::NextOnly, false, true, Under::Neither);
    check_opened(Standing::Current, true, false, Under::Kept);
    check_opened(Standing::Leaving, true, true, Under::Neither);
    check_opened(Standing::Changed, true, true, Under::Neither);
}

// --- what a pass seals again, and when it is done ---

fn check_plan(rows: &[(&str, Under)], reseal: &[&str], done: usize, foreign: usize) {
    let p = rotate::plan(rows.iter().map(|(id, u)| (*id, *u)));
    let want = Plan {
        reseal: reseal.iter().map(|s| s.to_string()).collect(),
        done,
        foreign,
    };
    assert_eq!(p, want);
    assert_eq!(p.finished(), reseal.is_empty());
    assert_eq!(p.total(), done + reseal.len());
}

#[test]
fn a_pass_seals_again_what_is_under_the_old_key_and_is_done_when_none_is_left() {
    use Under::*;
    check_plan(
        &[("x:a", Old), ("x:b", Kept), ("x:c", Old)],
        &["x:a", "x:c"],
        1,
        0,
    );
    check_plan(&[("x:a", Kept), ("x:b", Kept)], &[], 2, 0);
    check_plan(&[("x:a", Kept), ("x:z", Neither)], &[], 1, 1);
    check_plan(&[("x:z", Neither)], &[], 0, 1);
    check_plan(&[], &[], 0, 0);
}

#[test]
fn a_pass_is_done_only_when_no_page_held_the_old_key() {
    let mut pass = rotate::plan([("x:a", Under::Kept)]);
    pass.add(rotate::plan([("x:b", Under::Old)]));
    assert!(!pass.finished());
    let mut again = rotate::plan([("x:a", Under::Kept)]);
    again.add(rotate::plan([("x:b2", Under::Kept)]));
    assert!(again.finished());
    assert_eq!(again.total(), 2);
}

#[test]
fn a_document_that_cannot_be_carried_over_does_not_hold_the_change_forever() {
    let pass = rotate::plan([("x:a", Under::Old), ("x:b", Under::Kept)]);
    let stuck: std::collections::HashSet<String> = ["x:a".to_string()].into();
    assert!(pass.finished_besides(&stuck));
    assert!(!pass.finished_besides(&Default::default()));
}

fn check_progress(done: usize, total: usize, want: &str) {
    assert!(rotate::progress(done, total).starts_with(want));
}

#[test]
fn progress_says_how_many_of_how_many() {
    check_progress(120, 340, "Re-encrypting: 120 of 340 documents");
    check_progress(400, 340, "Re-encrypting: 340 of 340 documents");
    check_progress(0, 0, "Re-encrypting: 0 of 0 documents");
}

// --- the marker through the change ---

fn check_round_trip(m: Marker) {
    let v = m.to_json(Some("3-a"));
    assert_eq!(Marker::from_json(&v), Ok(m), "{v}");
}

#[test]
fn the_marker_keeps_the_change_in_its_json() {
    check_round_trip(rotating());
    check_round_trip(done());
    check_round_trip(marker(Kdf::V1, OLD));
}

#[test]
fn a_change_moves_a_v1_database_to_v2() {
    let check = vec![8; IV_LEN + TAG_LEN];
    let m = rotate::begin(&marker(Kdf::V1, OLD), NEW.to_vec(), 3_000_000, check).unwrap();
    assert_eq!(
        m.kdf,
        Kdf::V1,
        "the current key stays as it is while the change runs"
    );
    assert_eq!(m.next.as_ref().map(|n| n.kdf), Some(Kdf::V2));
    let f = rotate::finish(&m).unwrap();
    assert_eq!(
        (f.kdf, f.iterations, f.salt.as_slice()),
        (Kdf::V2, 3_000_000, &NEW[..])
    );
    assert_eq!(f.rotated_from.as_deref(), Some(&OLD[..]));
    assert_eq!(f.next, None);
}

#[test]
fn a_change_cannot_begin_twice_nor_finish_without_beginning() {
    let check = vec![8; IV_LEN + TAG_LEN];
    assert_eq!(
        rotate::begin(&rotating(), ELSE.to_vec(), 3_000_000, check),
        None
    );
    assert_eq!(rotate::finish(&marker(Kdf::V2, OLD)), None);
}

fn check_refused(v: Value) {
    assert_eq!(Marker::from_json(&v), Err(MarkerError::Unreadable), "{v}");
}

/// A server cannot hand a device a `next` it would not have written: v1, nested, the same salt.
#[test]
fn a_next_key_memoire_would_not_write_is_refused() {
    let base = rotating().to_json(None);
    let mut v1 = base.clone();
    v1["next"]["v"] = json!(1);
    v1["next"]["kdf"] = json!("PBKDF2-SHA-256");
    v1["next"].as_object_mut().unwrap().remove("passphrase");
    check_refused(v1);
    let mut nested = base.clone();
    nested["next"]["next"] = base["next"].clone();
    check_refused(nested);
    let mut same = base.clone();
    same["next"]["salt"] = base["salt"].clone();
    check_refused(same);
    let mut weak = base.clone();
    weak["next"]["iterations"] = json!(1000);
    assert_eq!(
        Marker::from_json(&weak),
        Err(MarkerError::Rounds { iterations: 1000 })
    );
}

// --- the requests ---

fn check_listed(body: Value, after: Option<&str>, ids: &[&str], conflicts: usize, last: bool) {
    let (got, next) = rotate::listed(&body, after);
    let was_last = next.is_none();
    let got_ids: Vec<&str> = got.iter().map(|l: &Listed| l.id.as_str()).collect();
    assert_eq!(got_ids, ids);
    assert_eq!(
        got.iter().map(|l| l.conflicts.len()).sum::<usize>(),
        conflicts
    );
    assert_eq!(was_last, last);
}

const A: &str = "x:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const B: &str = "x:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA";

#[test]
fn a_listing_keeps_sealed_documents_with_bodies_after_the_last_one_read() {
    let row = |id: &str, doc: Value| json!({ "id": id, "key": id, "doc": doc });
    let env = json!({ "e2ee": 1, "d": "AA==", "_rev": "1-a" });
    let conflicted = json!({ "e2ee": 1, "d": "AA==", "_rev": "2-b", "_conflicts": ["2-a"] });
    let body =
        json!({ "rows": [row(A, env.clone()), row(B, conflicted), row("c:plain", env.clone())] });
    check_listed(body.clone(), None, &[A, B], 1, true);
    check_listed(body, Some(A), &[B], 1, true);
    let deleted =
        json!({ "rows": [{ "id": A, "key": A, "value": { "deleted": true }, "doc": null }] });
    check_listed(deleted, None, &[], 0, true);
    let mut full: Vec<Value> = (1..rotate::PAGE).map(|_| row(A, env.clone())).collect();
    full.push(row(B, env.clone()));
    let (_, next) = rotate::listed(&json!({ "rows": full }), None);
    assert_eq!(
        next.as_deref(),
        Some(B),
        "a full page: the next starts at its last id"
    );
    // A full page of one id that is the cursor itself: no progress, so no next page.
    let same: Vec<Value> = (0..rotate::PAGE).map(|_| row(A, env.clone())).collect();
    check_listed(json!({ "rows": same }), Some(A), &[], 0, true);
}

#[test]
fn writing_again_keeps_the_revision_and_the_image() {
    let v = rotate::resealed(B, "3-c", &[1, 2, 3], Some(&[4, 5]));
    assert_eq!(v["_id"], json!(B));
    assert_eq!(v["_rev"], json!("3-c"));
    assert_eq!(
        v["_attachments"]["blob"]["content_type"],
        json!("application/octet-stream")
    );
    assert_eq!(rotate::sealed_parts(&v), (vec![1, 2, 3], Some(vec![4, 5])));
    let w = rotate::write_request("memoire", vec![v]);
    let body: Value = serde_json::from_str(w.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["new_edits"], json!(false));
    let d = rotate::delete_request("memoire", &[(A.to_string(), "3-c".to_string())]);
    let body: Value = serde_json::from_str(d.body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body["docs"][0],
        json!({ "_id": A, "_rev": "3-c", "_deleted": true })
    );
}

fn check_written(status: u16, body: Value, want: bool) {
    assert_eq!(rotate::written(status, &body), want, "{status} {body}");
}

#[test]
fn a_write_is_done_only_when_every_leaf_was_taken() {
    check_written(201, json!([]), true);
    check_written(201, json!([{ "id": A, "rev": "1-a" }]), true);
    check_written(201, json!([{ "id": A, "error": "forbidden" }]), false);
    check_written(500, json!([]), false);
    check_written(201, json!({ "error": "bad_request" }), false);
}
