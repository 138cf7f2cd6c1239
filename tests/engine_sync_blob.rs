#![cfg(not(target_arch = "wasm32"))]
//! Images in sync (issue 29, item 5): a message document carries its attachments' names and
//! hashes (`sync::doc::AttachmentDoc`, held to `attach::check` on the way in), and the images'
//! bytes travel once per hash as blob documents (`sync::blob`): which to push, which to fetch,
//! the requests, and the checks a fetched image passes before it is stored.

use std::collections::HashSet;

use memoire::engine::attach;
use memoire::engine::model::*;
use memoire::engine::sync::blob::{self, Got, Ledger, Plan};
use memoire::engine::sync::check::{pulled, PullLimits};
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::seal;
use memoire::engine::sync::wire::Method;
use memoire::engine::sync::*;
use serde_json::{json, Value};

const NOW: Millis = 1_795_682_460_000;
/// A tiny PNG's first bytes (the signature and an IHDR's start).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn h(c: char) -> String {
    c.to_string().repeat(64)
}

fn image(hash: &str, mime: &str, size: u64) -> Attachment {
    Attachment {
        kind: AttachmentKind::Image,
        name: "cat.png".into(),
        mime: mime.into(),
        size,
        hash: hash.into(),
        width: 640,
        height: 480,
        text: String::new(),
    }
}

fn message_with(attachments: Vec<Attachment>) -> Message {
    Message {
        id: "m1".into(),
        conversation_id: "c1".into(),
        seq: 1,
        role: Role::User,
        content: "look".into(),
        status: MessageStatus::Complete,
        created_at: NOW - 1000,
        meta: MessageMeta {
            attachments,
            ..Default::default()
        },
    }
}

fn doc_json(m: &Message) -> Value {
    let at = Hlc::new(NOW - 1000, 0, "dev-b");
    Doc::new(Body::Message(message_doc(m, &at).unwrap())).to_json(Some("1-a"))
}

// ---------------------------------------------------------------- the message document

/// A message with `attachments` comes back from its document with them (`kept`: the reason it
/// is refused otherwise).
fn check_doc(attachments: Vec<Attachment>, refused: Option<&str>) {
    let m = message_with(attachments);
    match (pulled(&doc_json(&m), &PullLimits::default(), NOW), refused) {
        (Ok(c), None) => match c.doc.body {
            Body::Message(d) => assert_eq!(to_message(&d).meta.attachments, m.meta.attachments),
            other => panic!("{other:?}"),
        },
        (Err(reason), Some(part)) => assert!(reason.contains(part), "{reason:?} lacks {part:?}"),
        (got, want) => panic!("wanted {want:?}, got {got:?}"),
    }
}

#[test]
fn a_message_document_carries_its_attachments_within_the_limits() {
    check_doc(vec![], None);
    check_doc(vec![image(&h('a'), "image/png", 10)], None);
    check_doc(
        vec![Attachment {
            kind: AttachmentKind::File,
            name: "notes.md".into(),
            mime: "text/markdown".into(),
            size: 5,
            hash: h('b'),
            text: "# hi\n".into(),
            ..Default::default()
        }],
        None,
    );
    check_doc(vec![image("not-a-hash", "image/png", 10)], Some("SHA-256"));
    check_doc(vec![image(&h('a'), "image/svg+xml", 10)], Some("not taken"));
    check_doc(
        vec![image(&h('a'), "image/png", 10); 17],
        Some("17 attachments"),
    );
    let mut huge = image(&h('a'), "image/png", 10);
    huge.width = 9000;
    check_doc(vec![huge], Some("pixels"));
}

#[test]
fn a_document_from_before_attachments_reads_with_none_and_writes_none() {
    let v = doc_json(&message_with(vec![]));
    assert!(v.get("attachments").is_none(), "{v}");
    let c = pulled(&v, &PullLimits::default(), NOW).unwrap();
    let Body::Message(d) = c.doc.body else {
        panic!()
    };
    assert!(to_message(&d).meta.attachments.is_empty());
}

#[test]
fn an_attachment_of_a_kind_this_build_does_not_know_is_refused() {
    let v = doc_json(&message_with(vec![image(&h('a'), "image/png", 10)]));
    let mut v = v;
    v["attachments"][0]["kind"] = json!("video");
    let got = pulled(&v, &PullLimits::default(), NOW).unwrap_err();
    assert!(got.contains("\"video\""), "{got}");
}

// ---------------------------------------------------------------- ids

#[test]
fn a_blob_document_is_named_by_its_hash_and_skipped_by_the_replicator() {
    assert_eq!(blob::blob_id(&h('a')), format!("a:{}", h('a')));
    assert_eq!(
        blob::hash_of(&blob::blob_id(&h('a'))),
        Some(h('a').as_str())
    );
    assert!(!blob::is_blob_id("a:cat"));
    assert!(!blob::is_blob_id(&h('a')));
    assert!(
        seal::seals(&blob::blob_id(&h('a'))),
        "sealed like any synced id"
    );
    assert!(!seal::seals("a:cat"));
}

// ---------------------------------------------------------------- what to push and fetch

fn set(hashes: &[&String]) -> HashSet<String> {
    hashes.iter().map(|s| s.to_string()).collect()
}

/// The plan of `ledger` over `used` and `stored` at `now`.
fn check_plan(ledger: &Ledger, used: &[&String], stored: &[&String], now: Millis, want: Plan) {
    let used: Vec<String> = used.iter().map(|s| s.to_string()).collect();
    assert_eq!(ledger.plan(&used, &set(stored), now), want);
}

fn plan(ask: &[&String], fetch: &[&String]) -> Plan {
    Plan {
        ask: ask.iter().map(|s| s.to_string()).collect(),
        fetch: fetch.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn stored_images_are_pushed_once_and_missing_ones_fetched() {
    let (a, b, c) = (h('a'), h('b'), h('c'));
    let mut l = Ledger::default();
    check_plan(&l, &[], &[], NOW, plan(&[], &[]));
    check_plan(&l, &[&a, &b, &a], &[&a], NOW, plan(&[&a], &[&b]));
    // A Blob no message uses any more is not sent; a text file's hash has no Blob to send.
    check_plan(&l, &[&b], &[&a, &b], NOW, plan(&[&b], &[]));
    check_plan(&l, &[&"not-a-hash".to_string()], &[], NOW, plan(&[], &[]));
    l.held(&a);
    check_plan(&l, &[&a, &c], &[&a], NOW, plan(&[], &[&c]));
    l.later(&c, NOW);
    check_plan(&l, &[&a, &c], &[&a], NOW + 1_000, plan(&[], &[]));
    check_plan(&l, &[&a, &c], &[&a], NOW + blob::RETRY_MS, plan(&[], &[&c]));
    l.refuse(&c);
    check_plan(&l, &[&a, &c], &[&a], NOW + blob::RETRY_MS, plan(&[], &[]));
    assert_eq!(l.refused(), 1);
    // Fetched later after all (another copy came with a backup): it is not pushed back.
    l.held(&c);
    check_plan(
        &l,
        &[&a, &c],
        &[&a, &c],
        NOW + blob::RETRY_MS,
        plan(&[], &[]),
    );
}

#[test]
fn a_round_runs_before_a_push_and_before_a_longpoll() {
    let longpoll = Request {
        method: Method::Get,
        path: "/db/_changes".into(),
        query: vec![("feed".into(), "longpoll".into())],
        body: None,
    };
    assert!(blob::round_first(&longpoll));
    assert!(blob::round_first(&Request {
        method: Method::Post,
        path: "/db/_bulk_docs".into(),
        query: vec![],
        body: None,
    }));
    assert!(!blob::round_first(&Request {
        query: vec![],
        ..longpoll
    }));
}

// ---------------------------------------------------------------- the requests

#[test]
fn the_server_is_asked_which_it_holds_then_sent_the_rest_as_an_attachment() {
    let ask = blob::ask_request("my db", &["a:1".into(), "a:2".into()]);
    assert_eq!(ask.path, "/my%20db/_all_docs");
    assert_eq!(ask.body.as_deref(), Some(r#"{"keys":["a:1","a:2"]}"#));
    let answer = json!({ "rows": [
        { "key": "a:1", "id": "a:1", "value": { "rev": "1-x" } },
        { "key": "a:2", "error": "not_found" },
        { "key": "a:3", "id": "a:3", "value": { "rev": "2-y", "deleted": true } },
    ]});
    let held = blob::held(&Reply::Json(answer.clone())).unwrap();
    assert_eq!(held, set(&[&"a:1".to_string()]));
    assert_eq!(blob::held(&Reply::Text(answer.to_string())).unwrap(), held);
    assert!(blob::held(&Reply::Text("{}".into())).is_err());

    let put = blob::put_request(
        "db",
        &blob::blob_id(&h('a')),
        blob::blob_doc(&h('a'), "image/png", 3),
        "image/png",
        b"abc",
    );
    assert_eq!(put.method, Method::Put);
    assert_eq!(put.path, format!("/db/a%3A{}", h('a')));
    let body: Value = serde_json::from_str(put.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["_attachments"]["blob"]["data"], "YWJj");
    assert_eq!(body["_attachments"]["blob"]["content_type"], "image/png");
    assert_eq!(body["mime"], "image/png");
    assert!(blob::put_done(201) && blob::put_done(409) && !blob::put_done(500));
}

/// What an answer to a fetch with `status` and `body` reads as.
fn check_got(status: u16, body: &str, want: Got) {
    assert_eq!(blob::read_got(status, body), want);
}

#[test]
fn a_fetch_reads_the_bytes_or_says_why_not() {
    let doc = json!({ "_id": "a:1", "_rev": "1-x", "type": "blob" });
    let with = |data: Value| {
        let mut d = doc.clone();
        d["_attachments"] = json!({ "blob": { "content_type": "image/png", "data": data } });
        d.to_string()
    };
    let ok = with(json!("YWJj"));
    check_got(
        200,
        &ok,
        Got::Bytes {
            doc: doc.clone(),
            bytes: b"abc".to_vec(),
        },
    );
    check_got(404, "{}", Got::Absent);
    check_got(
        500,
        "{}",
        Got::Failed("the server answered HTTP 500".into()),
    );
    check_got(
        200,
        "not json",
        Got::Failed("the server's answer is not a document".into()),
    );
    check_got(
        200,
        &with(json!("***")),
        Got::Failed("its bytes are not base64".into()),
    );
    check_got(
        200,
        r#"{"_id":"a:1"}"#,
        Got::Failed("the document holds no image".into()),
    );
    let get = blob::get_request("db", "x:abc");
    assert_eq!(get.query, vec![("attachments".into(), "true".into())]);
}

// ---------------------------------------------------------------- the checks of a fetched image

/// `bytes` hashed to `sha` pass or fail (`Some(part of the reason)`) as the image `a`.
fn check_bytes(a: Attachment, bytes: &[u8], sha: &str, refused: Option<&str>) {
    match (blob::check_bytes(&a, bytes, sha), refused) {
        (Ok(()), None) => {}
        (Err(e), Some(part)) => assert!(e.contains(part), "{e:?} lacks {part:?}"),
        (got, want) => panic!("wanted {want:?}, got {got:?}"),
    }
}

#[test]
fn a_fetched_image_matches_its_name_size_and_type_or_is_refused() {
    let n = PNG.len() as u64;
    let a = h('a');
    check_bytes(image(&a, "image/png", n), PNG, &a, None);
    check_bytes(
        image(&a, "image/png", n),
        PNG,
        &h('b'),
        Some("do not match its name"),
    );
    check_bytes(
        image(&a, "image/png", n + 1),
        PNG,
        &a,
        Some("its message says"),
    );
    check_bytes(
        image(&a, "image/jpeg", n),
        PNG,
        &a,
        Some("image/png; its message says image/jpeg"),
    );
    check_bytes(
        image(&a, "image/png", 5),
        b"<svg>",
        &a,
        Some("not an image"),
    );
    check_bytes(image(&a, "text/html", n), PNG, &a, Some("not an image"));
    let huge = vec![0u8; blob::MAX_BLOB_BYTES as usize + 1];
    check_bytes(
        image(&a, "image/png", huge.len() as u64),
        &huge,
        &a,
        Some("images up to 12 MB"),
    );
    let mut file = image(&a, "image/png", n);
    file.kind = AttachmentKind::File;
    check_bytes(file, PNG, &a, Some("not an image"));
}

#[test]
fn image_types_are_told_by_their_first_bytes() {
    assert_eq!(attach::sniff_image(PNG), Some("image/png"));
    assert_eq!(
        attach::sniff_image(&[0xff, 0xd8, 0xff, 0xe0]),
        Some("image/jpeg")
    );
    assert_eq!(attach::sniff_image(b"GIF89a.."), Some("image/gif"));
    assert_eq!(
        attach::sniff_image(b"RIFF\0\0\0\0WEBPVP8 "),
        Some("image/webp")
    );
    assert_eq!(attach::sniff_image(b"RIFF\0\0\0\0WAVE"), None);
    assert_eq!(attach::sniff_image(b""), None);
    // Every type the composer takes can be told.
    assert_eq!(attach::IMAGE_TYPES.len(), 4);
}

#[test]
fn a_refused_image_is_named_and_its_message_kept() {
    let a = image(&h('a'), "image/png", 3);
    let words = blob::refused(&a, "its bytes do not match its name (SHA-256)");
    assert!(
        words.contains("“cat.png”") && words.contains("message is kept"),
        "{words}"
    );
    assert_eq!(
        memoire::engine::sync::status::with_images("Synced".into(), 2),
        "Synced. 2 pulled images refused (see the browser console)"
    );
    assert_eq!(
        memoire::engine::sync::status::with_images("Synced".into(), 0),
        "Synced"
    );
}

#[test]
fn a_fetch_may_be_as_large_as_the_largest_image_sealed_and_no_larger() {
    let cap = blob::max_answer_bytes() as u64;
    assert!(cap > blob::MAX_BLOB_BYTES * 4 / 3 + 28);
    assert!(cap < blob::MAX_BLOB_BYTES * 4 / 3 + 64 * 1024);
}

#[test]
fn the_replicator_skips_blob_documents_in_the_feed_without_refusing_them() {
    let mut cfg = Config::new("memoire", "a");
    cfg.live = false;
    let mut rep = Replicator::new(cfg, None);
    let mut req = rep.poll_request(NOW).unwrap();
    while !req.path.ends_with("_changes") {
        let (status, body) = match req.path.contains("_local") {
            true => (404, r#"{"error":"not_found"}"#),
            false => (200, r#"{"db_name":"memoire"}"#),
        };
        rep.handle_response(NOW, status, body);
        req = rep.poll_request(NOW).unwrap();
    }
    let m = doc_json(&message_with(vec![image(&h('a'), "image/png", 10)]));
    let stub = json!({ "_id": blob::blob_id(&h('a')), "_rev": "1-b", "type": "blob",
        "_attachments": { "blob": { "stub": true, "length": 10 } } });
    let rows = json!({ "results": [
        { "id": stub["_id"], "seq": "1-s", "changes": [], "doc": stub },
        { "id": "m:m1", "seq": "2-s", "changes": [], "doc": m },
    ], "last_seq": "2-s" });
    rep.handle_response(NOW, 200, &rows.to_string());
    let mut merged = Vec::new();
    while let Some(w) = rep.poll_write() {
        if let Write::Merge { remote, .. } = w {
            merged.push(remote.id);
        }
    }
    assert_eq!(merged, ["m:m1"]);
    assert_eq!(rep.refused(), 0, "{:?}", rep.poll_refused());
}
