#![cfg(not(target_arch = "wasm32"))]
//! End-to-end encrypted sync's pure half (src/engine/sync/seal.rs): what is sealed in each request,
//! what an answer becomes once opened, the marker's checks; and which origin a saved sync password
//! may go to (src/engine/sync/origin.rs). The "cipher" here is a stand-in (reversing bytes and
//! prefixing the bound id): the real one is WebCrypto's, tested in the browser (e2e
//! sync-e2ee.test.mjs); these tests check where bytes go, not the cryptography.

use std::collections::HashMap;

use memoire::engine::sync::check::{plain_copies, PullLimits};
use memoire::engine::sync::keys::Kdf;
use memoire::engine::sync::origin::{origin_of, password_for, plain_http_check, InsecurePassword};
use memoire::engine::sync::seal::{
    envelope, is_sealed_id, open_response, outgoing, purge_body, route, seal_request, sealed_id,
    sealed_in, Marker, MarkerError, Names, Route, Unsealable, IV_LEN, MARKER_ID, TAG_LEN,
};
use memoire::engine::sync::{Method, Reply, Request};
use serde_json::{json, Value};

const DB: &str = "memoire";

/// The stand-in MAC: the id's bytes padded to 32 (distinct ids give distinct names).
fn mac(id: &str) -> Vec<u8> {
    let mut b = id.as_bytes().to_vec();
    b.resize(32, b'#');
    b
}

/// The stand-in cipher: `aad ‖ 0 ‖ reversed plaintext`, padded to look like iv and tag.
fn seal(aad: &str, plain: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; IV_LEN];
    b.extend(aad.as_bytes());
    b.push(0);
    b.extend(plain.iter().rev());
    b.extend([0u8; TAG_LEN]);
    b
}

/// Opens only what was sealed for `aad` (as AES-GCM with additional data would).
fn open(aad: &str, blob: &[u8]) -> Option<Vec<u8>> {
    let body = blob.get(IV_LEN..blob.len() - TAG_LEN)?;
    let rest = body.strip_prefix(aad.as_bytes())?.strip_prefix(&[0])?;
    Some(rest.iter().rev().copied().collect())
}

fn req(method: Method, path: &str, query: &[(&str, &str)], body: Option<Value>) -> Request {
    Request {
        method,
        path: path.into(),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.map(|b| b.to_string()),
    }
}

/// Seals `r` the way the session does; returns it with the names learned.
fn sealed(r: &Request, names: &mut Names) -> (Route, Request) {
    let rt = route(r, DB);
    let out = outgoing(r, &rt);
    for id in &out.ids {
        names.learn(id, &sealed_id(&mac(id)));
    }
    let blobs: HashMap<usize, Vec<u8>> = out
        .docs
        .iter()
        .map(|(i, id, bytes)| (*i, seal(names.sealed(id).unwrap(), bytes)))
        .collect();
    let s = seal_request(r, &rt, names, &blobs).expect("everything named and encrypted");
    (rt, s)
}

/// Opens `body` (an answer to a request on route `rt`) the way the session does.
fn opened(rt: &Route, body: &Value, names: &mut Names) -> (Value, Vec<Value>, usize) {
    let text = body.to_string();
    let plains = sealed_in(rt, 200, &text)
        .into_iter()
        .map(|(aad, blob)| open(&aad, &blob))
        .collect();
    let o = open_response(rt, 200, &text, names, plains);
    (
        match o.body {
            Reply::Json(v) => v,
            Reply::Text(t) => panic!("an opened answer is read JSON, not text: {t}"),
        },
        o.plain,
        o.refused.len(),
    )
}

fn bulk(docs: Value) -> Request {
    req(
        Method::Post,
        "/memoire/_bulk_docs",
        &[],
        Some(json!({ "docs": docs })),
    )
}

fn message(id: &str, text: &str) -> Value {
    json!({ "_id": id, "type": "message", "content": text, "_rev": "1-a" })
}

// --- routes ---

fn check_route(path: &str, query: &[(&str, &str)], want: Route) {
    assert_eq!(
        route(&req(Method::Get, path, query, None), DB),
        want,
        "{path}"
    );
}

#[test]
fn changes_bulk_and_all_docs_are_routed() {
    check_route("/memoire/_changes", &[], Route::Changes { limit: None });
    check_route(
        "/memoire/_changes",
        &[("limit", "250")],
        Route::Changes { limit: Some(250) },
    );
    check_route("/memoire/_bulk_docs", &[], Route::Bulk);
    check_route("/memoire/_all_docs", &[], Route::AllDocs { keys: vec![] });
}

#[test]
fn open_revs_of_a_synced_document_is_routed_with_its_plain_id() {
    let want = Route::Open {
        db_path: "/memoire".into(),
        id: "c:a:b".into(),
    };
    check_route("/memoire/c%3Aa%3Ab", &[("open_revs", "[]")], want);
}

#[test]
fn the_database_checkpoints_and_other_databases_pass() {
    check_route("/memoire", &[], Route::Pass);
    check_route("/memoire/_local/memoire-d1", &[], Route::Pass);
    check_route("/other/_changes", &[], Route::Pass);
    check_route("/memoire/c%3Aa", &[], Route::Pass);
}

// --- sealing requests ---

#[test]
fn a_pushed_document_leaves_as_an_envelope_under_a_sealed_id() {
    let mut names = Names::default();
    let r = bulk(json!([message("m:1", "the secret plan"), { "_id": "c:9", "title": "Holiday" }]));
    let (_, s) = sealed(&r, &mut names);
    let text = s.body.clone().unwrap();
    for word in ["secret", "Holiday", "m:1", "c:9", "message"] {
        assert!(!text.contains(word), "{word} in {text}");
    }
    let body: Value = serde_json::from_str(&text).unwrap();
    let first = &body["docs"][0];
    assert_eq!(first["_rev"], "1-a", "the revision stays readable");
    assert!(is_sealed_id(first["_id"].as_str().unwrap()));
    assert_eq!(first["e2ee"], 1);
}

#[test]
fn a_losing_leaf_deletion_keeps_its_revision_and_is_not_encrypted() {
    let mut names = Names::default();
    let r = bulk(json!([{ "_id": "m:1", "_rev": "2-b", "_deleted": true }]));
    let (_, s) = sealed(&r, &mut names);
    let body: Value = serde_json::from_str(s.body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body["docs"][0],
        json!({ "_id": sealed_id(&mac("m:1")), "_rev": "2-b", "_deleted": true })
    );
}

#[test]
fn all_docs_keys_and_open_revs_paths_are_sealed() {
    let mut names = Names::default();
    let r = req(
        Method::Post,
        "/memoire/_all_docs",
        &[],
        Some(json!({ "keys": ["m:1", "f:2"] })),
    );
    let (_, s) = sealed(&r, &mut names);
    let body: Value = serde_json::from_str(s.body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body["keys"],
        json!([sealed_id(&mac("m:1")), sealed_id(&mac("f:2"))])
    );
    let r = req(
        Method::Get,
        "/memoire/p%3A7",
        &[("open_revs", "[\"1-a\"]")],
        None,
    );
    let (_, s) = sealed(&r, &mut names);
    assert!(s.path.starts_with("/memoire/x%3A"), "{}", s.path);
    assert!(!s.path.contains("p%3A7"));
}

#[test]
fn checkpoints_and_changes_requests_go_out_unchanged() {
    let mut names = Names::default();
    for r in [
        req(
            Method::Put,
            "/memoire/_local/memoire-d1",
            &[],
            Some(json!({ "since": "5" })),
        ),
        req(Method::Get, "/memoire/_changes", &[("since", "5")], None),
    ] {
        assert_eq!(sealed(&r, &mut names).1, r);
    }
}

// --- opening answers ---

/// A document as the server holds it after `bulk` sealed it.
fn on_server(id: &str, text: &str, rev: &str) -> Value {
    let mut names = Names::default();
    let (_, s) = sealed(&bulk(json!([message(id, text)])), &mut names);
    let body: Value = serde_json::from_str(s.body.as_deref().unwrap()).unwrap();
    let mut d = body["docs"][0].clone();
    d["_rev"] = json!(rev);
    d
}

fn check_changes(rows: Value, want_ids: &[&str], want_plain: usize, want_refused: usize) {
    let mut names = Names::default();
    names.learn("m:known", &sealed_id(&mac("m:known")));
    let (v, plain, refused) = opened(
        &Route::Changes { limit: None },
        &json!({ "results": rows, "last_seq": "9" }),
        &mut names,
    );
    let ids: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, want_ids);
    assert_eq!((plain.len(), refused), (want_plain, want_refused));
    assert_eq!(v["last_seq"], "9", "the checkpoint is untouched");
}

#[test]
fn a_sealed_change_opens_under_its_plain_id_with_its_revision_and_conflicts() {
    let mut d = on_server("m:1", "hello", "3-c");
    d["_conflicts"] = json!(["3-d"]);
    let row = json!({ "id": d["_id"], "doc": d });
    let mut names = Names::default();
    let (v, _, _) = opened(
        &Route::Changes { limit: None },
        &json!({ "results": [row], "last_seq": 1 }),
        &mut names,
    );
    let doc = &v["results"][0]["doc"];
    assert_eq!(v["results"][0]["id"], "m:1");
    assert_eq!(
        (doc["_id"].clone(), doc["content"].clone()),
        (json!("m:1"), json!("hello"))
    );
    assert_eq!(
        (doc["_rev"].clone(), doc["_conflicts"].clone()),
        (json!("3-c"), json!(["3-d"]))
    );
    assert_eq!(names.plain(d["_id"].as_str().unwrap()), Some("m:1"));
}

#[test]
fn a_ciphertext_moved_to_another_id_does_not_open_and_is_skipped() {
    let mut d = on_server("m:1", "hello", "1-a");
    d["_id"] = json!(sealed_id(&mac("m:2")));
    check_changes(json!([{ "id": d["_id"], "doc": d }]), &[], 0, 1);
}

#[test]
fn plain_copies_of_our_documents_are_taken_out_for_the_session() {
    let rows = json!([{ "id": "m:1", "doc": message("m:1", "old plain") }]);
    check_changes(rows, &[], 1, 0);
}

#[test]
fn deletions_are_named_when_known_and_dropped_otherwise() {
    let known = sealed_id(&mac("m:known"));
    let unknown = sealed_id(&mac("m:other"));
    let rows = json!([
        { "id": known, "deleted": true },
        { "id": unknown, "deleted": true },
        { "id": "m:1", "deleted": true },
    ]);
    check_changes(rows, &["m:known"], 0, 0);
}

#[test]
fn the_marker_is_dropped_and_foreign_documents_pass() {
    let rows = json!([{ "id": MARKER_ID, "doc": {} }, { "id": "_design/x", "doc": {} }]);
    check_changes(rows, &["_design/x"], 0, 0);
}

#[test]
fn a_deletion_of_an_unknown_sealed_id_asks_for_every_name() {
    let names = Names::default();
    let body =
        json!({ "results": [{ "id": sealed_id(&mac("m:1")), "deleted": true }], "last_seq": 1 });
    assert!(names.misses_deleted(&body.to_string()));
    let body = json!({ "results": [{ "id": "m:1", "deleted": true }], "last_seq": 1 });
    assert!(!names.misses_deleted(&body.to_string()));
}

fn all_docs(keys: &[&str]) -> Route {
    Route::AllDocs {
        keys: keys.iter().map(|k| k.to_string()).collect(),
    }
}

fn open_revs(id: &str) -> Route {
    Route::Open {
        db_path: "/memoire".into(),
        id: id.into(),
    }
}

#[test]
fn bulk_results_all_docs_rows_and_open_revs_leaves_are_named() {
    let mut names = Names::default();
    let (rt, _) = sealed(&bulk(json!([message("m:1", "x")])), &mut names);
    let s = sealed_id(&mac("m:1"));
    let (v, _, _) = opened(
        &rt,
        &json!([{ "id": s, "rev": "1-a", "ok": true }]),
        &mut names,
    );
    assert_eq!(v[0]["id"], "m:1");
    let d = on_server("m:1", "x", "2-b");
    let rows = json!({ "rows": [{ "key": s, "id": s, "value": { "rev": "2-b" }, "doc": d }] });
    let (v, _, _) = opened(&all_docs(&["m:1"]), &rows, &mut names);
    assert_eq!(
        (
            v["rows"][0]["key"].clone(),
            v["rows"][0]["doc"]["content"].clone()
        ),
        (json!("m:1"), json!("x"))
    );
    let leaves = json!([{ "ok": d }, { "ok": { "_id": s, "_rev": "2-c", "_deleted": true } }]);
    let (v, _, _) = opened(&open_revs("m:1"), &leaves, &mut names);
    assert_eq!(
        (v[0]["ok"]["_id"].clone(), v[1]["ok"]["_id"].clone()),
        (json!("m:1"), json!("m:1"))
    );
}

#[test]
fn error_answers_pass_untouched() {
    let mut names = Names::default();
    let rt = Route::Changes { limit: None };
    let o = open_response(&rt, 500, "{\"error\":1}", &mut names, vec![]);
    assert_eq!(o.body, Reply::Text("{\"error\":1}".into()));
}

#[test]
fn plain_copies_are_purged_at_their_revisions() {
    let body = purge_body(&[
        message("m:1", "x"),
        json!({ "_id": "_design/a", "_rev": "1" }),
    ])
    .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({ "docs": [{ "_id": "m:1", "_rev": "1-a", "_deleted": true }] })
    );
    assert_eq!(purge_body(&[]), None);
}

// --- nothing unopened is trusted ---

/// A made-up sealed id (`x:` and 43 base64url characters) no document of ours has.
fn made_up() -> String {
    sealed_id(&[7u8; 32])
}

/// `body` answering `rt` opened with `m:known` and `m:1` named: what passes as a document of ours
/// (by `pointer` into the opened answer), the plain copies taken out, and the refusals.
fn check_opened(
    rt: Route,
    body: Value,
    pointer: &str,
    want: Value,
    want_plain: usize,
    want_refused: usize,
) {
    let mut names = Names::default();
    for id in ["m:known", "m:1"] {
        names.learn(id, &sealed_id(&mac(id)));
    }
    let (v, plain, refused) = opened(&rt, &body, &mut names);
    assert_eq!(
        v.pointer(pointer).cloned().unwrap_or(Value::Null),
        want,
        "{v}"
    );
    assert_eq!((plain.len(), refused), (want_plain, want_refused), "{v}");
}

#[test]
fn an_envelope_without_a_sealed_id_is_not_opened() {
    let bad = envelope("m:1", Some("1-a"), &seal("m:1", b"{\"_id\":\"m:1\"}"));
    let rows = json!({ "results": [{ "id": "m:1", "doc": bad }], "last_seq": 1 });
    assert!(sealed_in(&Route::Changes { limit: None }, 200, &rows.to_string()).is_empty());
    // Taken out as a plain copy (deleted on the server), never passed on as a document of ours,
    // and not kept: it does not pass the checks of a pulled document even while encrypting.
    check_opened(
        Route::Changes { limit: None },
        rows,
        "/results",
        json!([]),
        1,
        0,
    );
    let limits = PullLimits::default();
    let (kept, unopened) = plain_copies(std::slice::from_ref(&bad), false, &limits, 1);
    assert_eq!((kept.len(), unopened.len()), (0, 1));
    let (kept, refused) = plain_copies(&[bad], true, &limits, 1);
    assert_eq!((kept.len(), refused.len()), (0, 1));
}

#[test]
fn a_plain_document_under_a_sealed_id_is_refused_whatever_the_route() {
    let fact = json!({ "_id": "f:evil", "_rev": "1-a", "type": "fact", "text": "I am an admin" });
    let s = sealed_id(&mac("m:1"));
    let x = made_up();
    // `_changes`: under a made-up sealed id, under a known one, with no document at all.
    let rows = json!([{ "id": x, "doc": fact }, { "id": s, "doc": fact }, { "id": x }]);
    check_opened(
        Route::Changes { limit: None },
        json!({ "results": rows, "last_seq": 1 }),
        "/results",
        json!([]),
        0,
        3,
    );
    // `_all_docs`: the row stays without its document (ours is written over it).
    let rows = json!({ "rows": [{ "key": s, "id": s, "value": { "rev": "1-a" }, "doc": fact }] });
    check_opened(all_docs(&["m:1"]), rows, "/rows/0/doc", Value::Null, 0, 1);
    // `open_revs`: the leaf is left out.
    check_opened(
        open_revs("m:1"),
        json!([{ "ok": fact }]),
        "",
        json!([]),
        0,
        1,
    );
}

#[test]
fn a_plain_tombstone_of_ours_is_only_a_plain_copy() {
    let tomb = json!({ "_id": "c:c1", "_rev": "2-a", "type": "tombstone", "kind": "conversation",
                       "at": { "t": 1, "c": 0, "d": "evil" } });
    let rows = json!({ "results": [{ "id": "c:c1", "doc": tomb }], "last_seq": 1 });
    check_opened(
        Route::Changes { limit: None },
        rows,
        "/results",
        json!([]),
        1,
        0,
    );
    let limits = PullLimits::default();
    let (kept, unopened) = plain_copies(&[tomb], false, &limits, 1);
    assert_eq!(
        (kept.len(), unopened.len()),
        (0, 1),
        "never kept once encrypted; counted"
    );
}

#[test]
fn a_document_that_is_neither_ours_nor_the_servers_is_refused() {
    let rows = json!([{ "id": "zzz", "doc": { "_id": "zzz", "_rev": "1-a" } }, { "id": "_design/x", "doc": {} }]);
    check_opened(
        Route::Changes { limit: None },
        json!({ "results": rows, "last_seq": 1 }),
        "/results/0/id",
        json!("_design/x"),
        0,
        1,
    );
}

#[test]
fn an_envelope_under_another_rows_id_is_refused() {
    // A valid envelope of m:1, served in the row of m:known.
    let d = on_server("m:1", "hello", "1-a");
    let known = sealed_id(&mac("m:known"));
    let rows = json!([{ "id": known, "doc": d }]);
    check_opened(
        Route::Changes { limit: None },
        json!({ "results": rows, "last_seq": 1 }),
        "/results",
        json!([]),
        0,
        1,
    );
}

#[test]
fn an_all_docs_answer_is_checked_against_the_ids_asked_for() {
    let d1 = on_server("m:1", "one", "1-a");
    let s1 = sealed_id(&mac("m:1"));
    let sk = sealed_id(&mac("m:known"));
    // A row for an id not asked for is dropped and counted.
    let rows = json!({ "rows": [{ "key": s1, "id": s1, "value": { "rev": "1-a" }, "doc": d1 }] });
    check_opened(all_docs(&["m:known"]), rows, "/rows", json!([]), 0, 1);
    // A row whose id is not its key, and the envelope of m:1 under the key of m:known.
    let rows = json!({ "rows": [{ "key": sk, "id": s1, "value": { "rev": "1-a" } }] });
    check_opened(all_docs(&["m:known"]), rows, "/rows", json!([]), 0, 1);
    let rows = json!({ "rows": [{ "key": sk, "id": sk, "value": { "rev": "1-a" }, "doc": d1 }] });
    check_opened(
        all_docs(&["m:known"]),
        rows,
        "/rows/0/doc",
        Value::Null,
        0,
        1,
    );
}

#[test]
fn an_open_revs_answer_keeps_only_leaves_of_the_id_asked_for() {
    let other = on_server("m:known", "other", "2-x");
    let mine = on_server("m:1", "mine", "2-y");
    let leaves = json!([{ "ok": other }, { "ok": mine }, { "missing": "2-z" }]);
    check_opened(
        open_revs("m:1"),
        leaves.clone(),
        "/0/ok/content",
        json!("mine"),
        0,
        1,
    );
    check_opened(open_revs("m:1"), leaves, "/1/missing", json!("2-z"), 0, 1);
}

#[test]
fn a_page_is_cut_to_its_rows_before_anything_is_decrypted() {
    let rows: Vec<Value> = (0..300)
        .map(|i| {
            let d = on_server(&format!("m:{i}"), "x", "1-a");
            json!({ "id": d["_id"], "seq": i + 1, "doc": d })
        })
        .collect();
    let body = json!({ "results": rows, "last_seq": 300 }).to_string();
    let rt = Route::Changes { limit: Some(250) };
    assert_eq!(sealed_in(&rt, 200, &body).len(), 250);
    let mut names = Names::default();
    let o = open_response(&rt, 200, &body, &mut names, vec![None; 250]);
    let Reply::Json(v) = o.body else { panic!() };
    assert_eq!(v["last_seq"], 250, "read on from the last row kept");
}

// --- sealing fails closed ---

fn check_unsealable(r: Request, names: &Names, blobs: &[(usize, Vec<u8>)], want: Unsealable) {
    let rt = route(&r, DB);
    let blobs: HashMap<usize, Vec<u8>> = blobs.iter().cloned().collect();
    assert_eq!(seal_request(&r, &rt, names, &blobs), Err(want));
}

#[test]
fn sealing_fails_closed_when_a_name_or_a_ciphertext_is_missing() {
    let mut names = Names::default();
    let doc = bulk(json!([message("m:1", "the secret plan")]));
    // Nothing named: the plain id never goes out instead.
    check_unsealable(
        doc.clone(),
        &names,
        &[(0, vec![1; 40])],
        Unsealable::Unnamed("m:1".into()),
    );
    names.learn("m:1", &sealed_id(&mac("m:1")));
    // No ciphertext for a live document: neither the plain document nor a deletion goes out.
    check_unsealable(doc, &names, &[], Unsealable::NotEncrypted("m:1".into()));
    // A document that is not ours is never uploaded as it is.
    let foreign = bulk(json!([{ "_id": "zzz", "secret": "plan" }]));
    check_unsealable(foreign, &names, &[], Unsealable::Foreign("zzz".into()));
    let keys = req(
        Method::Post,
        "/memoire/_all_docs",
        &[],
        Some(json!({ "keys": ["f:2"] })),
    );
    check_unsealable(keys, &names, &[], Unsealable::Unnamed("f:2".into()));
    let open = req(Method::Get, "/memoire/f%3A2", &[("open_revs", "[]")], None);
    check_unsealable(open, &names, &[], Unsealable::Unnamed("f:2".into()));
}

// --- the marker ---

fn marker(iterations: u32, salt: usize) -> Value {
    marker_of(Kdf::NEW, iterations, salt)
}

fn marker_of(kdf: Kdf, iterations: u32, salt: usize) -> Value {
    Marker {
        kdf,
        salt: vec![7; salt],
        iterations,
        check: vec![1; IV_LEN + TAG_LEN + 4],
        next: None,
        rotated_from: None,
    }
    .to_json(Some("1-a"))
}

fn check_marker(v: Value, want: Result<u32, MarkerError>) {
    assert_eq!(Marker::from_json(&v).map(|m| m.iterations), want);
}

#[test]
fn a_marker_round_trips() {
    check_marker(marker(600_000, 16), Ok(600_000));
}

fn check_kdf(v: Value, want: Option<Kdf>) {
    assert_eq!(Marker::from_json(&v).ok().map(|m| m.kdf), want, "{v}");
}

/// Issue 43: a new marker is v2 (NFC, 256 PBKDF2 bits split by HKDF); a v1 marker, as databases
/// encrypted before it hold, still reads as v1; anything between is refused.
#[test]
fn a_marker_keeps_its_derivation_and_v1_still_reads() {
    assert_eq!(Kdf::NEW, Kdf::V2);
    let v2 = marker(600_000, 16);
    assert_eq!(
        (v2["v"].clone(), v2["kdf"].clone(), v2["passphrase"].clone()),
        (json!(2), json!("PBKDF2-SHA-256+HKDF-SHA-256"), json!("NFC"))
    );
    check_kdf(v2.clone(), Some(Kdf::V2));
    // As builds before issue 43 wrote it: no `passphrase`, v 1.
    let v1 = json!({ "_id": "memoire-e2ee", "v": 1, "kdf": "PBKDF2-SHA-256", "iterations": 1_800_000,
        "salt": "BwcHBwcHBwcHBwcHBwcHBw==", "cipher": "AES-256-GCM", "ids": "HMAC-SHA-256",
        "check": "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ==" });
    check_kdf(v1.clone(), Some(Kdf::V1));
    assert_eq!(marker_of(Kdf::V1, 1_800_000, 16).get("passphrase"), None);
    let mut mixed = v1.clone();
    mixed["v"] = json!(2);
    check_kdf(mixed, None);
    let mut unnormalised = v2;
    unnormalised["passphrase"] = json!("NFD");
    check_kdf(unnormalised, None);
    assert_eq!((Kdf::V1.pbkdf2_bits(), Kdf::V2.pbkdf2_bits()), (512, 256));
    assert_eq!((Kdf::V1.nfc(), Kdf::V2.nfc()), (false, true));
    assert_eq!(Kdf::V1.hkdf(), None);
    let (aes, ids) = Kdf::V2.hkdf().unwrap();
    assert_ne!(aes, ids);
}

#[test]
fn a_marker_that_weakens_or_freezes_the_key_derivation_is_refused() {
    check_marker(
        marker(1_000, 16),
        Err(MarkerError::Rounds { iterations: 1_000 }),
    );
    check_marker(
        marker(u32::MAX, 16),
        Err(MarkerError::Rounds {
            iterations: u32::MAX,
        }),
    );
}

#[test]
fn a_marker_with_a_short_salt_or_another_format_is_refused() {
    check_marker(marker(600_000, 4), Err(MarkerError::Unreadable));
    let mut v = marker(600_000, 16);
    v["kdf"] = json!("MD5");
    check_marker(v, Err(MarkerError::Unreadable));
}

// --- the password's origin ---

fn check_password(typed: Option<&str>, saved_for: &str, url: &str, want: Option<&str>) {
    assert_eq!(
        password_for(typed, "old", saved_for, url),
        want,
        "{saved_for} -> {url}"
    );
}

#[test]
fn the_saved_password_goes_only_to_its_origin() {
    check_password(None, "http://h:5984", "http://h:5984/", Some("old"));
    check_password(
        None,
        "https://H.example",
        "https://h.example:443/x",
        Some("old"),
    );
    check_password(None, "http://h:5984", "http://evil:5984", None);
    check_password(None, "http://h:5984", "https://h:5984", None);
    check_password(None, "http://h:5984", "http://h:5985", None);
    check_password(None, "", "http://h:5984", None);
}

/// `Some(host)`: the password is refused, naming `host`.
fn check_plain_http(url: &str, password: &str, refused: Option<&str>) {
    let got = plain_http_check(url, password);
    let want = refused.map_or(Ok(()), |host| {
        Err(InsecurePassword {
            host: host.to_string(),
        })
    });
    assert_eq!(got, want, "{url}");
}

#[test]
fn the_password_goes_over_plain_http_only_to_this_machine() {
    check_plain_http("https://couch.example.com:6984", "pw", None);
    check_plain_http("https://10.0.0.5", "pw", None);
    check_plain_http("http://127.0.0.1:5984", "pw", None);
    check_plain_http("http://127.8.9.1:5984/db", "pw", None);
    check_plain_http("http://[::1]:5984", "pw", None);
    check_plain_http("http://localhost:5984", "pw", None);
    check_plain_http("HTTP://LOCALHOST:5984", "pw", None);
    check_plain_http(
        "http://couch.example.com:5984",
        "pw",
        Some("couch.example.com"),
    );
    check_plain_http("http://192.168.1.20:5984", "pw", Some("192.168.1.20"));
    check_plain_http(
        "http://127.0.0.1.evil.com",
        "pw",
        Some("127.0.0.1.evil.com"),
    );
    check_plain_http("http://localhost@evil.com", "pw", Some("evil.com"));
    check_plain_http("http://couch.example.com:5984", "", None);
    let text = plain_http_check("http://couch.example.com", "pw")
        .unwrap_err()
        .to_string();
    for needle in ["unencrypted", "couch.example.com", "https://", "localhost"] {
        assert!(text.contains(needle), "{needle:?} not in {text:?}");
    }
}

#[test]
fn a_typed_password_goes_wherever_the_user_sent_it() {
    check_password(
        Some("new"),
        "http://h:5984",
        "http://evil:5984",
        Some("new"),
    );
}

#[test]
fn origins_ignore_paths_and_credentials_and_refuse_non_http() {
    assert_eq!(
        origin_of("http://u:p@h:5984/db?x"),
        Some("http://h:5984".into())
    );
    assert_eq!(origin_of("ftp://h"), None);
    assert_eq!(origin_of("h:5984"), None);
}
