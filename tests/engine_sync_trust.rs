#![cfg(not(target_arch = "wasm32"))]
//! What the sync server can no longer make a device take (issue 43): answers checked against the
//! ids and revisions asked for (`_all_docs` after a 409, `open_revs` of a conflict), a document
//! listing too many conflicting revisions refused (no request grows with them), a device without
//! encryption that stops as soon as the database's encryption marker appears (in `_changes`, or
//! before a push), and a pulled version older than the copy a device holds reported and not taken
//! (`sync::batch`). The opening of sealed answers is in `engine_sync_seal.rs`.

mod engine_sync_sim;

use std::collections::HashMap;

use memoire::engine::model::*;
use memoire::engine::sync::batch::{plan, Held};
use memoire::engine::sync::check::{MAX_CONFLICTS, MAX_REV_CHARS};
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::replicate::RESOLVE_BATCH;
use memoire::engine::sync::status::describe;
use memoire::engine::sync::*;
use serde_json::{json, Value};

/// Now, on the test's device: 2026-11-26 08:41 UTC.
const NOW: Millis = 1_795_682_460_000;
const BASE: &str = "https://couch.example.org";

fn conversation_json(id: &str, title: &str, rev: &str) -> Value {
    let c = Conversation {
        id: id.into(),
        title: title.into(),
        title_is_custom: true,
        created_at: NOW - 5000,
        updated_at: NOW - 5000,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    };
    let at = Hlc::new(NOW - 5000, 0, "dev-b");
    Doc::new(Body::Conversation(conversation_doc(&c, &at))).to_json(Some(rev))
}

/// A revision as CouchDB writes them.
fn rev(gen: usize, n: usize) -> String {
    format!("{gen}-{n:032x}")
}

/// A replicator (`guard`: encryption off, looking for the marker before each push) past its
/// database check and checkpoint, with the request it sends next.
fn connected(guard: bool) -> (Replicator, Request) {
    let mut cfg = Config::new("memoire", "a");
    cfg.live = false;
    cfg.guard_marker = guard;
    engine_sync_sim::at_changes(cfg, NOW)
}

/// A `_changes` page of `docs`, each with its `_conflicts`.
fn page(docs: &[Value]) -> String {
    let rows: Vec<Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| json!({ "id": d["_id"], "seq": i + 1, "changes": [], "doc": d }))
        .collect();
    json!({ "results": rows, "last_seq": rows.len() }).to_string()
}

fn with_conflicts(mut d: Value, n: usize) -> Value {
    d["_conflicts"] = (0..n).map(|i| json!(rev(1, i))).collect();
    d
}

fn drain_writes(rep: &mut Replicator) {
    while rep.poll_write().is_some() {}
}

// ---------------------------------------------------------------- conflicts, bounded

/// A page holding `docs` (`n` conflicts each): whether they were refused, the longest URL and the
/// largest `_bulk_docs` the conflicts cost, all leaves answered.
fn check_conflicts(docs: usize, n: usize, refused: bool) {
    let (mut rep, _) = connected(false);
    let list: Vec<Value> = (0..docs)
        .map(|k| with_conflicts(conversation_json(&format!("c{k}"), "t", &rev(2, k)), n))
        .collect();
    rep.handle_response(NOW, 200, &page(&list));
    assert_eq!(
        rep.refused(),
        if refused { docs } else { 0 },
        "{n} conflicts"
    );
    let (mut longest_url, mut largest_batch) = (0, 0);
    while let Some(req) = rep.poll_request(NOW) {
        longest_url = longest_url.max(req.url(BASE).len());
        if req.query.iter().any(|(k, _)| k == "open_revs") {
            rep.handle_response(NOW, 200, "[]");
        } else if req.path.ends_with("_bulk_docs") {
            let body: Value = serde_json::from_str(req.body.as_deref().unwrap()).unwrap();
            let sent = body["docs"].as_array().unwrap().len();
            largest_batch = largest_batch.max(sent);
            let ok: Vec<Value> = (0..sent).map(|_| json!({ "ok": true })).collect();
            rep.handle_response(NOW, 201, &Value::Array(ok).to_string());
        } else {
            break;
        }
        drain_writes(&mut rep);
    }
    assert!(longest_url <= 8 * 1024, "a URL of {longest_url} bytes");
    assert!(largest_batch <= RESOLVE_BATCH, "a batch of {largest_batch}");
}

#[test]
fn a_document_listing_too_many_conflicts_is_refused_and_no_request_grows_with_them() {
    check_conflicts(1, 100_000, true);
    check_conflicts(1, MAX_CONFLICTS + 1, true);
    check_conflicts(1, MAX_CONFLICTS, false);
    check_conflicts(3, MAX_CONFLICTS, false);
}

#[test]
fn a_revision_longer_than_couchdbs_is_refused() {
    let (mut rep, _) = connected(false);
    let long = "1-".to_string() + &"a".repeat(MAX_REV_CHARS);
    let docs = [
        conversation_json("c1", "t", &long),
        with_conflicts(conversation_json("c2", "t", &rev(2, 0)), 0),
    ];
    let mut docs = docs.to_vec();
    docs[1]["_conflicts"] = json!([long]);
    rep.handle_response(NOW, 200, &page(&docs));
    assert_eq!(rep.refused(), 2);
}

// ---------------------------------------------------------------- answers match the question

/// `c1` pulled with one conflict (`2-…1`), its `open_revs` answered with `leaves`: the leaves merged
/// (their titles) and the refusals.
fn check_leaves(leaves: Value, merged: &[&str], refused: usize) {
    let (mut rep, _) = connected(false);
    let winner = with_conflicts(conversation_json("c1", "winner", &rev(2, 0)), 0);
    let mut winner = winner;
    winner["_conflicts"] = json!([rev(2, 1)]);
    rep.handle_response(NOW, 200, &page(&[winner]));
    drain_writes(&mut rep);
    let req = rep.poll_request(NOW).expect("open_revs");
    assert!(req.query.iter().any(|(k, _)| k == "open_revs"), "{req:?}");
    rep.handle_response(NOW, 200, &leaves.to_string());
    let mut titles = Vec::new();
    while let Some(w) = rep.poll_write() {
        if let Write::Merge { remote, .. } = w {
            if let Body::Conversation(c) = remote.body {
                titles.push(c.title.v.text);
            }
        }
    }
    assert_eq!(titles.last().map(String::as_str), Some("winner"));
    titles.pop();
    assert_eq!(titles, merged);
    assert_eq!(rep.refused(), refused, "{:?}", rep.poll_refused());
}

#[test]
fn open_revs_takes_only_the_revisions_asked_for_of_the_document_asked_for() {
    let leaf = |id: &str, title: &str, r: String| json!({ "ok": conversation_json(id, title, &r) });
    check_leaves(json!([leaf("c1", "loser", rev(2, 1))]), &["loser"], 0);
    // A foreign leaf: another document's, or a revision that was not asked for.
    check_leaves(json!([leaf("c2", "other", rev(2, 1))]), &[], 1);
    check_leaves(json!([leaf("c1", "forged", rev(9, 9))]), &[], 1);
}

/// A push of `c1` answered 409, its `_all_docs` re-read answered with `row`: the refusals, and
/// the revision the next push of `c1` goes with.
fn check_reread(row: Value, refused: usize, next_rev: Option<&str>) {
    let (mut rep, _) = connected(false);
    rep.handle_response(NOW, 200, &page(&[]));
    drain_writes(&mut rep);
    let doc = conversation("mine", NOW); // newer than theirs: it goes up again
    rep.handle_local_changes([LocalDoc { doc, rev: None }]);
    let push = rep.poll_request(NOW).expect("a push");
    assert!(push.path.ends_with("_bulk_docs"));
    rep.handle_response(NOW, 201, r#"[{"id":"c:c1","error":"conflict"}]"#);
    let reread = rep.poll_request(NOW).expect("a re-read");
    assert!(reread.path.ends_with("_all_docs"), "{reread:?}");
    rep.handle_response(NOW, 200, &json!({ "rows": [row] }).to_string());
    drain_writes(&mut rep);
    assert_eq!(rep.refused(), refused, "{:?}", rep.poll_refused());
    let push = rep.poll_request(NOW).expect("the push again");
    let body: Value = serde_json::from_str(push.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["docs"][0]["_rev"].as_str(), next_rev, "{body}");
}

#[test]
fn an_all_docs_reread_takes_only_the_document_asked_for() {
    let r = rev(2, 5);
    let theirs = conversation_json("c1", "theirs", &r);
    let row = json!({ "key": "c:c1", "id": "c:c1", "value": { "rev": r }, "doc": theirs });
    check_reread(row, 0, Some(&r));
    // Another document's content under c1's key: refused, and ours written over it.
    let other = conversation_json("c2", "other", &r);
    let row = json!({ "key": "c:c1", "id": "c:c1", "value": { "rev": r }, "doc": other });
    check_reread(row, 1, Some(&r));
}

// ---------------------------------------------------------------- plaintext stops

#[test]
fn a_device_without_encryption_stops_when_the_marker_appears_in_changes() {
    let (mut rep, _) = connected(true);
    let marker = json!({ "_id": "memoire-e2ee", "_rev": "1-a", "v": 1 });
    let docs = [conversation_json("c1", "t", "1-a"), marker];
    rep.handle_response(NOW, 200, &page(&docs));
    let Status::Error { error, retry_at } = rep.status() else {
        panic!("{:?}", rep.status())
    };
    assert_eq!((error.clone(), retry_at), (SyncError::Encrypted, None));
    assert!(error
        .to_string()
        .starts_with("Another device encrypted this database: enter its passphrase"));
    assert_eq!(
        rep.poll_request(NOW + 3_600_000),
        None,
        "until the settings change"
    );
}

/// A device without encryption with `c1` to push; the marker looked for first, answered `status`:
/// whether the push went.
fn check_guard(status: u16, pushed: bool) {
    let (mut rep, _) = connected(true);
    rep.handle_response(NOW, 200, &page(&[]));
    drain_writes(&mut rep);
    let doc = Doc::from_json(&conversation_json("c1", "mine", "1-x"))
        .unwrap()
        .doc;
    rep.handle_local_changes([LocalDoc { doc, rev: None }]);
    let guard = rep.poll_request(NOW).expect("the marker looked for");
    assert_eq!(guard.path, "/memoire/memoire-e2ee");
    rep.handle_response(NOW, status, "{}");
    let next = rep.poll_request(NOW + 3_600_000);
    let went = next.is_some_and(|r| r.path.ends_with("_bulk_docs"));
    assert_eq!(went, pushed, "marker answered {status}");
}

#[test]
fn a_device_without_encryption_looks_for_the_marker_before_each_push() {
    check_guard(404, true);
    check_guard(200, false);
}

#[test]
fn a_device_without_encryption_looks_for_the_marker_before_resolving_a_conflict() {
    let (mut rep, _) = connected(true);
    let mut winner = conversation_json("c1", "winner", &rev(2, 0));
    winner["_conflicts"] = json!([rev(2, 1)]);
    rep.handle_response(NOW, 200, &page(&[winner]));
    drain_writes(&mut rep);
    let open = rep.poll_request(NOW).expect("open_revs");
    assert!(open.query.iter().any(|(k, _)| k == "open_revs"));
    rep.handle_response(NOW, 200, "[]");
    let guard = rep.poll_request(NOW).expect("the marker looked for");
    assert_eq!(guard.path, "/memoire/memoire-e2ee");
    rep.handle_response(NOW, 200, "{}");
    assert_eq!(
        rep.poll_request(NOW + 3_600_000),
        None,
        "the losing leaf is not deleted"
    );
}

#[test]
fn documents_that_could_not_be_opened_are_counted_in_the_status() {
    let (mut rep, _) = connected(false);
    rep.handle_unopened(vec!["x:a: not sealed".into(), "x:b: not sealed".into()]);
    rep.handle_response(NOW, 200, &page(&[]));
    let (_, detail) = describe(&rep.status(), rep.refused(), rep.unopened(), 0);
    assert_eq!(
        detail,
        "Synced. 2 documents from the server could not be opened (see the browser console)"
    );
    assert_eq!(rep.poll_refused().len(), 2);
}

// ---------------------------------------------------------------- no silent rollback

fn fact(forgotten: Option<Millis>) -> Doc {
    let f = UserFact {
        id: "f1".into(),
        text: "I live in Oslo.".into(),
        kind: FactKind::Home,
        claim_key: "home".into(),
        source: None,
        valid_from: NOW - 9000,
        valid_to: None,
        forgotten,
        scope: None,
        updated_at: forgotten.unwrap_or(NOW - 9000),
    };
    let at = Hlc::new(forgotten.unwrap_or(NOW - 9000), 0, "dev-b");
    Doc::new(Body::Fact(fact_doc(&f, &at)))
}

fn conversation(title: &str, t: Millis) -> Doc {
    let v = conversation_json("c1", title, "1-a");
    let mut d = Doc::from_json(&v).unwrap().doc;
    if let Body::Conversation(c) = &mut d.body {
        c.title.at = Hlc::new(t, 0, "dev-b");
    }
    d
}

/// The store holds `held` at `3-h` (in sync with the server unless `dirty`); the server sends
/// `remote` at `rev`: whether it is reported older, and what the store keeps.
fn check_older(held: Doc, dirty: bool, (remote, rev): (Doc, &str), older: bool, kept: &Doc) {
    let local = LocalDoc {
        doc: held.clone(),
        rev: Some("3-h".into()),
    };
    let h = Held {
        docs: HashMap::from([(held.id.clone(), (local, dirty))]),
        ..Default::default()
    };
    let p = plan(vec![(remote, rev.into())], &h);
    assert_eq!(p.older.len(), usize::from(older), "{:?}", p.older);
    let stored = p.docs.last().map_or(&held, |(l, _)| &l.doc);
    assert_eq!(stored, kept);
}

#[test]
fn a_version_older_than_the_one_held_is_reported_and_not_taken() {
    let forgotten = fact(Some(NOW - 1000));
    check_older(
        forgotten.clone(),
        false,
        (fact(None), "4-r"),
        true,
        &forgotten,
    );
    let deleted = Doc::tombstone("c:c1", &Hlc::new(NOW - 1000, 0, "dev-a")).unwrap();
    let live = conversation("before the deletion", NOW - 5000);
    check_older(deleted.clone(), false, (live, "2-r"), true, &deleted);
    let renamed = conversation("new", NOW - 100);
    let old = || (conversation("old", NOW - 200), "2-r");
    check_older(renamed.clone(), false, old(), true, &renamed);
    // A newer or concurrent version is taken; the same one is no news; a copy waiting to be
    // pushed is merged as before (the server's version may be the base of its edit); at the held
    // revision (a conflict's winner after its leaves) it is merged without a word.
    let newer = conversation("newer", NOW);
    check_older(
        renamed.clone(),
        false,
        (newer.clone(), "4-r"),
        false,
        &newer,
    );
    check_older(
        renamed.clone(),
        false,
        (renamed.clone(), "4-r"),
        false,
        &renamed,
    );
    check_older(renamed.clone(), true, old(), false, &renamed);
    let at_held = (conversation("old", NOW - 200), "3-h");
    check_older(renamed.clone(), false, at_held, false, &renamed);
}

/// A device holding nothing of `f1` is shown `versions` in one batch: the fact it keeps.
fn check_new_device(versions: Vec<Doc>, kept: &Doc) {
    let batch = versions
        .into_iter()
        .map(|d| (d, "2-r".to_string()))
        .collect();
    let p = plan(batch, &Held::default());
    let stored: Vec<&Doc> = p.docs.iter().map(|(l, _)| &l.doc).collect();
    assert_eq!(stored, [kept]);
}

#[test]
fn a_new_device_shown_an_old_and_a_newer_version_keeps_the_newer_in_any_order() {
    let forgotten = fact(Some(NOW - 1000));
    check_new_device(vec![forgotten.clone(), fact(None)], &forgotten);
    check_new_device(vec![fact(None), forgotten.clone()], &forgotten);
}

#[test]
fn a_conflicted_document_whose_open_revs_url_would_pass_8_kb_is_refused() {
    // An edge's id holds five ids: of 256 characters of 4 bytes each, 12 bytes each once encoded.
    let part = "😀".repeat(256);
    let edge = EdgeDoc {
        scope: Some(part.clone()),
        source: part.clone(),
        label: part.clone(),
        target: part,
        valid_from: NOW - 1000,
        strength: 0.5,
        valid_to: None,
    };
    let (mut rep, _) = connected(false);
    let mut doc = Doc::new(Body::Edge(edge)).to_json(Some(&rev(2, 0)));
    doc["_conflicts"] = json!([rev(2, 1)]);
    rep.handle_response(NOW, 200, &page(&[doc]));
    let reasons = rep.poll_refused();
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].contains("cannot be asked for"), "{reasons:?}");
    let next = rep.poll_request(NOW);
    assert!(next.is_none_or(|r| !r.query.iter().any(|(k, _)| k == "open_revs")));
}
