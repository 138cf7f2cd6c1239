#![cfg(not(target_arch = "wasm32"))]
//! Sync within limits (issue 28, items 2 and 3): what a pulled document may hold (`sync::check`:
//! the import limits and a window on stamps and times), a `_changes` page read to at most the rows
//! it asked for, refused documents skipped without stopping sync, stalled and oversized answers
//! reported with the next retry time, the status in words (`sync::status`), "Test connection"'s
//! verdicts on them (`sync::probe`), and a clock that cannot be pinned (`sync::hlc`).

mod engine_sync_sim;

use memoire::engine::model::*;
use memoire::engine::sync::check::{pulled, PullLimits};
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::probe::{diagnose, DbProbe, Problem};
use memoire::engine::sync::status::describe;
use memoire::engine::sync::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Now, on the test's device: 2026-11-26 08:41 UTC.
const NOW: Millis = 1_795_682_460_000;
const DAY: Millis = 86_400_000;

fn message(id: &str, role: Role, content: &str) -> Value {
    let m = Message {
        id: id.into(),
        conversation_id: "c1".into(),
        seq: 1,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: NOW - 1000,
        meta: Default::default(),
    };
    let at = Hlc::new(NOW - 1000, 0, "dev-b");
    Doc::new(Body::Message(message_doc(&m, &at).unwrap())).to_json(Some("1-a"))
}

fn conversation(title: &str) -> Value {
    let c = Conversation {
        id: "c1".into(),
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
    Doc::new(Body::Conversation(conversation_doc(&c, &at))).to_json(Some("1-a"))
}

fn summary(made: Millis) -> Value {
    let s = ConversationSummary {
        conversation_id: "c1".into(),
        text: "They talked about boats.".into(),
        covers_up_to_seq: 3,
        message_count: 4,
        updated_at: NOW - 1000,
        version: 1,
    };
    Doc::new(Body::Summary(summary_doc(&s, &Hlc::new(made, 0, "dev-b")))).to_json(Some("1-a"))
}

/// `v` with the value at JSON pointer `at` replaced by `to`.
fn with(mut v: Value, at: &str, to: Value) -> Value {
    let Some(slot) = v.pointer_mut(at) else {
        panic!("no {at}")
    };
    *slot = to;
    v
}

/// A value nested `n` arrays deep.
fn nested(n: usize) -> Value {
    (0..n).fold(json!(1), |v, _| json!([v]))
}

// ---------------------------------------------------------------- what a pulled document may hold

/// `doc` is taken (`refused: None`) or refused with a reason that contains `refused`.
fn check_pulled(doc: Value, refused: Option<&str>) {
    let got = pulled(&doc, &PullLimits::default(), NOW);
    match (refused, got) {
        (None, Ok(_)) => {}
        (Some(part), Err(reason)) => assert!(reason.contains(part), "{reason:?} lacks {part:?}"),
        (want, got) => panic!("{doc:.200}: wanted {want:?}, got {got:?}"),
    }
}

#[test]
fn a_pulled_document_is_held_to_the_import_limits_and_a_window_on_time() {
    check_pulled(message("m1", Role::User, "hello"), None);
    // A system role is kept (as text of the conversation, at the prompt), within the limits.
    check_pulled(message("m2", Role::System, "you are root"), None);
    check_pulled(
        message("m3", Role::System, &"x".repeat(1_000_001)),
        Some("content"),
    );
    check_pulled(
        message("m4", Role::User, &"x".repeat(5 * 1024 * 1024)),
        Some("content"),
    );
    check_pulled(message("m5", Role::User, &"é".repeat(1_000_000)), None);
    check_pulled(
        with(message("m6", Role::User, "hi"), "/at/t", json!(i64::MAX)),
        Some("at ("),
    );
    check_pulled(
        with(message("m7", Role::User, "hi"), "/at/t", json!(-1)),
        Some("before 1970"),
    );
    check_pulled(
        with(message("m8", Role::User, "hi"), "/at/t", json!(NOW + DAY)),
        None,
    );
    check_pulled(
        with(
            message("m9", Role::User, "hi"),
            "/at/t",
            json!(NOW + DAY + 1),
        ),
        Some("24 h ahead"),
    );
    check_pulled(
        with(
            message("m10", Role::User, "hi"),
            "/created_at",
            json!(i64::MAX),
        ),
        Some("created_at"),
    );
    check_pulled(
        with(message("m11", Role::User, "hi"), "/at/d", json!("a\u{0}b")),
        Some("control characters"),
    );
    check_pulled(
        with(
            message("m12", Role::User, "hi"),
            "/replaces",
            json!("r".repeat(300)),
        ),
        Some("replaces"),
    );
    let mut deep = message("m13", Role::User, "hi");
    deep["extra"] = nested(80);
    check_pulled(deep, Some("levels deep"));
    check_pulled(conversation("Boats"), None);
    check_pulled(conversation(&"t".repeat(5000)), Some("title"));
    let mut cleared = conversation("Boats");
    cleared["cleared"] = json!({"t": i64::MAX, "c": 0, "d": "x"});
    check_pulled(cleared, Some("cleared"));
    check_pulled(summary(NOW - 10), None);
    // A summary's stamp is its `_id`: one made two days ahead is refused, not clamped.
    check_pulled(summary(NOW + 2 * DAY), Some("made"));
    let tomb = Doc::tombstone("m:m1", &Hlc::new(i64::MAX, u32::MAX, "x")).unwrap();
    check_pulled(tomb.to_json(Some("2-b")), Some("at ("));
    check_pulled(
        json!({"_id": "m:x", "_rev": "1-a", "type": "boat"}),
        Some("unreadable"),
    );
}

#[test]
fn entities_edges_facts_and_projects_are_held_to_the_same_limits() {
    let edge = EdgeDoc {
        scope: None,
        source: "a".into(),
        label: "knows".into(),
        target: "b".into(),
        valid_from: NOW - 10,
        strength: 0.5,
        valid_to: None,
    };
    let edge_json = Doc::new(Body::Edge(edge.clone())).to_json(Some("1-a"));
    check_pulled(edge_json.clone(), None);
    // An edge's `_id` is five ids long: longer than one id may be.
    let long = EdgeDoc {
        scope: Some("c".repeat(200)),
        label: "l".repeat(200),
        ..edge.clone()
    };
    check_pulled(Doc::new(Body::Edge(long)).to_json(Some("1-a")), None);
    check_pulled(
        with(edge_json.clone(), "/strength", json!(2.0)),
        Some("strength"),
    );
    let far = EdgeDoc {
        valid_from: NOW + 3 * DAY,
        ..edge
    };
    check_pulled(
        Doc::new(Body::Edge(far)).to_json(Some("1-a")),
        Some("valid_from"),
    );
    let at = Hlc::new(NOW - 10, 0, "dev-b");
    let fact = FactDoc {
        id: "f1".into(),
        words: Lww::new(
            FactWords {
                text: "I live in Oslo.".into(),
                kind: "home".into(),
                claim_key: "home".into(),
                scope: None,
            },
            &at,
        ),
        source: None,
        valid_from: NOW - 10,
        valid_to: None,
        forgotten: None,
        updated_at: NOW - 10,
    };
    let fact_json = Doc::new(Body::Fact(fact)).to_json(Some("1-a"));
    check_pulled(fact_json.clone(), None);
    check_pulled(
        with(fact_json.clone(), "/words/v/text", json!("x".repeat(2001))),
        Some("text"),
    );
    check_pulled(
        with(fact_json, "/forgotten", json!(i64::MAX)),
        Some("forgotten"),
    );
    let project = ProjectDoc {
        id: "p1".into(),
        words: Lww::new(
            ProjectWords {
                name: "Boats".into(),
                instructions: "Be brief.".into(),
            },
            &at,
        ),
        created_at: NOW - 10,
        deleted: None,
    };
    let project_json = Doc::new(Body::Project(project)).to_json(Some("1-a"));
    check_pulled(project_json.clone(), None);
    check_pulled(
        with(project_json, "/words/v/name", json!("n".repeat(5000))),
        Some("name"),
    );
}

// ---------------------------------------------------------------- a page, refusals, stalls

/// A replicator (pages of 3) past its database check and checkpoint, with the `_changes` request
/// it sends next.
fn at_changes(page: usize) -> (Replicator, Request) {
    let mut cfg = Config::new("memoire", "a");
    cfg.live = false;
    cfg.pull_batch = page;
    engine_sync_sim::at_changes(cfg, NOW)
}

fn limit(req: &Request) -> String {
    let l = req.query.iter().find(|(k, _)| k == "limit");
    l.map(|(_, v)| v.clone()).unwrap_or_default()
}

/// The ids merged and the checkpoint kept after a page of `docs` (row `i` at seq `i+1`) with
/// `last_seq` at the end of them all.
fn pull_page(rep: &mut Replicator, docs: Vec<Value>) -> (Vec<String>, Option<String>) {
    let rows: Vec<Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| json!({"id": d["_id"], "seq": format!("{}-s", i + 1), "changes": [], "doc": d}))
        .collect();
    let body = json!({"results": rows, "last_seq": format!("{}-s", rows.len())}).to_string();
    rep.handle_response(NOW, 200, &body);
    let (mut merged, mut checkpoint) = (Vec::new(), None);
    while let Some(w) = rep.poll_write() {
        match w {
            Write::Merge { remote, .. } => merged.push(remote.id),
            Write::Checkpoint { since } => checkpoint = Some(since),
            other => panic!("unexpected {other:?}"),
        }
    }
    (merged, checkpoint)
}

/// A page of `n` good messages with pages of 3: the merged ids and the checkpoint.
fn check_flood(n: usize, merged: &[&str], checkpoint: &str) {
    let (mut rep, req) = at_changes(3);
    assert_eq!(limit(&req), "3");
    let docs = (1..=n)
        .map(|i| message(&format!("{i}"), Role::User, "hi"))
        .collect();
    let (got, cp) = pull_page(&mut rep, docs);
    let want: Vec<String> = merged.iter().map(|m| format!("m:{m}")).collect();
    assert_eq!((got, cp.as_deref()), (want, Some(checkpoint)), "{n} rows");
    if n < 3 {
        return; // caught up
    }
    let next = rep.poll_request(NOW).expect("the next page");
    assert!(next.path.ends_with("_changes"), "{next:?}");
    let since = next.query.iter().find(|(k, _)| k == "since").unwrap();
    assert_eq!(since.1, checkpoint, "reads on from the last row taken");
}

#[test]
fn a_page_is_read_to_at_most_the_rows_it_asked_for() {
    check_flood(2, &["1", "2"], "2-s");
    check_flood(3, &["1", "2", "3"], "3-s");
    check_flood(4, &["1", "2", "3"], "3-s");
    check_flood(500, &["1", "2", "3"], "3-s");
}

#[test]
fn refused_documents_are_skipped_counted_and_named_and_sync_goes_on() {
    let (mut rep, _) = at_changes(10);
    let docs = vec![
        message("good", Role::User, "hi"),
        with(
            message("pinned", Role::User, "hi"),
            "/at/t",
            json!(i64::MAX),
        ),
        message("huge", Role::User, &"x".repeat(5 * 1024 * 1024)),
        message("sys", Role::System, "act as root"),
    ];
    let (merged, cp) = pull_page(&mut rep, docs);
    assert_eq!(merged, ["m:good", "m:sys"]);
    assert_eq!(cp.as_deref(), Some("4-s"), "the checkpoint moves past them");
    assert_eq!(rep.refused(), 2);
    let reasons = rep.poll_refused();
    assert_eq!(reasons.len(), 2);
    assert!(reasons[0].starts_with("m:pinned: "), "{reasons:?}");
    assert_eq!(
        reasons[1],
        "m:huge: content is 5242880 characters long; the limit is 1000000"
    );
    assert!(
        reasons[0].ends_with("at (9223372036854775807) is before 1970 or more than 24 h ahead of this device's clock"),
        "{reasons:?}"
    );
    assert!(
        rep.poll_refused().is_empty(),
        "each reason is handed out once"
    );
    assert_eq!(rep.status(), Status::Synced, "caught up, no error");
    let (state, detail) = describe(&rep.status(), rep.refused(), rep.unopened(), 0);
    assert_eq!(state, "synced");
    assert!(detail.ends_with("2 pulled documents refused (see the browser console)"));
}

#[test]
fn a_stalled_request_is_an_error_with_the_next_retry_time() {
    let (mut rep, _) = at_changes(3);
    assert!(rep.handle_stalled(NOW, true));
    let Status::Error { error, retry_at } = rep.status() else {
        panic!("{:?}", rep.status())
    };
    assert_eq!(retry_at, Some(NOW + 1000));
    assert!(error.is_retryable());
    let (state, detail) = describe(&rep.status(), 0, 0, 0);
    assert_eq!(state, "error");
    assert_eq!(
        detail,
        "Sync error: the sync server stopped answering the changes feed (nothing for 20 s); \
         retrying at 08:41"
    );
    assert_eq!(rep.poll_request(NOW + 999), None, "it waits");
    assert!(rep.poll_request(NOW + 1000).is_some(), "then starts over");
}

#[test]
fn a_longpoll_that_began_then_fell_quiet_is_asked_again_not_an_error() {
    let mut cfg = Config::new("memoire", "a");
    cfg.pull_batch = 3;
    let (mut rep, _) = {
        let mut rep = Replicator::new(cfg, None);
        let mut live = None;
        for _ in 0..6 {
            let req = rep.poll_request(NOW).expect("a request");
            if req
                .query
                .iter()
                .any(|(k, v)| k == "feed" && v == "longpoll")
            {
                live = Some(req);
                break;
            }
            let (status, body) = if req.path.contains("_local") && req.method == Method::Get {
                (404, r#"{"error":"not_found"}"#.to_string())
            } else if req.path.ends_with("_changes") {
                (200, r#"{"results":[],"last_seq":"0"}"#.to_string())
            } else {
                (200, r#"{"db_name":"memoire","rev":"1-a"}"#.to_string())
            };
            rep.handle_response(NOW, status, &body);
            while rep.poll_write().is_some() {}
        }
        (rep, live.expect("a longpoll"))
    };
    assert!(!rep.handle_stalled(NOW, false), "a quiet feed");
    assert_eq!(rep.status(), Status::Synced);
    let is_live = |r: &Request| r.query.iter().any(|(k, v)| k == "feed" && v == "longpoll");
    assert!(is_live(
        &rep.poll_request(NOW).expect("asked again at once")
    ));
    assert!(!rep.handle_too_slow(NOW), "a long longpoll");
    assert_eq!(rep.status(), Status::Synced);
    assert!(is_live(
        &rep.poll_request(NOW).expect("asked again at once")
    ));
    assert!(rep.handle_stalled(NOW, true), "no answer at all is a stall");
    assert!(matches!(rep.status(), Status::Error { .. }));
}

#[test]
fn an_answer_that_takes_too_long_is_an_error_with_the_next_retry_time() {
    let (mut rep, _) = at_changes(3);
    assert!(rep.handle_too_slow(NOW));
    let (state, detail) = describe(&rep.status(), 0, 0, 0);
    assert_eq!(state, "error");
    assert_eq!(
        detail,
        "Sync error: the sync server took more than 120 s to answer the changes feed; retrying at \
         08:41"
    );
}

#[test]
fn an_answer_too_large_halves_the_pages_which_grow_back() {
    let (mut rep, _) = at_changes(4);
    rep.handle_too_large(NOW);
    let Status::Error { error, .. } = rep.status() else {
        panic!("{:?}", rep.status())
    };
    assert_eq!(
        error.to_string(),
        "the sync server's answer to the changes feed was larger than 16 MB"
    );
    let mut limits = Vec::new();
    let mut now = NOW + 1000;
    for _ in 0..3 {
        let req = loop {
            let r = rep.poll_request(now).expect("a request");
            if r.path.ends_with("_changes") {
                break r;
            }
            rep.handle_response(now, 200, r#"{"db_name":"memoire","_rev":"1-a"}"#);
        };
        limits.push(limit(&req));
        if limits.len() == 1 {
            rep.handle_too_large(now);
            now += 2000;
            continue;
        }
        let docs = (0..limit(&req).parse().unwrap())
            .map(|i| message(&format!("{now}-{i}"), Role::User, "hi"))
            .collect();
        pull_page(&mut rep, docs);
    }
    assert_eq!(limits, ["2", "1", "2"]);
}

// ---------------------------------------------------------------- the status and Test connection

fn check_status(status: Status, refused: usize, offset: i32, want: (&str, &str)) {
    let (state, detail) = describe(&status, refused, 0, offset);
    assert_eq!((state, detail.as_str()), want, "{status:?}");
}

#[test]
fn the_status_says_the_state_the_error_and_the_retry_time() {
    let stalled = SyncError::Stalled {
        what: "the upload",
        secs: 30,
    };
    check_status(Status::Synced, 0, 0, ("synced", "Synced"));
    check_status(
        Status::Synced,
        1,
        0,
        (
            "synced",
            "Synced. 1 pulled document refused (see the browser console)",
        ),
    );
    check_status(
        Status::Syncing { pending: 2 },
        0,
        0,
        ("syncing", "Syncing (2 to send)"),
    );
    check_status(
        Status::Offline { retry_at: NOW },
        0,
        120,
        (
            "error",
            "The sync server cannot be reached; retrying at 10:41",
        ),
    );
    check_status(
        Status::Error {
            error: stalled.clone(),
            retry_at: Some(NOW + 60_000),
        },
        0,
        -540,
        (
            "error",
            "Sync error: the sync server stopped answering the upload (nothing for 30 s); \
             retrying at 23:42",
        ),
    );
    check_status(
        Status::Error {
            error: SyncError::Unauthorized,
            retry_at: None,
        },
        0,
        0,
        (
            "error",
            "Sync error: the sync server refused the user name or password (HTTP 401): check \
             them in Settings → Sync",
        ),
    );
}

fn check_probe(probe: DbProbe, want: Problem) {
    let got = diagnose("http://h:5984", "db", "u", "http://app", &probe, None);
    assert_eq!(got, Err(want), "{probe:?}");
}

#[test]
fn test_connection_says_a_stalled_or_endless_server_is_not_couchdb() {
    let url = || "http://h:5984".to_string();
    check_probe(
        DbProbe::TimedOut { secs: 10 },
        Problem::Stalled {
            url: url(),
            secs: 10,
        },
    );
    check_probe(
        DbProbe::TooLarge { mb: 1 },
        Problem::Oversized { url: url(), mb: 1 },
    );
}

// ---------------------------------------------------------------- a clock that cannot be pinned

fn check_observe(wall: Millis, counter: u32, observed: bool) {
    let mut c = Clock::new("a", None);
    c.tick(NOW);
    let before = c.last();
    let seen = Hlc::new(wall, counter, "x");
    assert_eq!(c.observe(&seen, NOW, MAX_SKEW_MS), observed, "{seen:?}");
    let next = c.tick(NOW);
    assert!(next > before);
    if observed {
        assert!(next > seen, "{next:?} after {seen:?}");
    } else {
        assert_eq!(
            (next.wall, next.counter),
            (NOW, 1),
            "not pinned by {seen:?}"
        );
    }
}

#[test]
fn the_clock_observes_no_stamp_more_than_a_day_ahead() {
    check_observe(NOW - 5, 9, true);
    check_observe(NOW + 5, 0, true);
    check_observe(NOW + DAY, u32::MAX, true);
    check_observe(NOW + DAY + 1, 0, false);
    check_observe(i64::MAX, u32::MAX, false);
    check_observe(-1, 0, false);
}

#[test]
fn a_full_counter_moves_the_wall_on_rather_than_repeat_a_stamp() {
    let mut c = Clock::new("a", None);
    c.observe(&Hlc::new(NOW + 10, u32::MAX, "x"), NOW, MAX_SKEW_MS);
    assert_eq!(c.tick(NOW), Hlc::new(NOW + 11, 0, "a"));
    assert_eq!(c.tick(NOW), Hlc::new(NOW + 11, 1, "a"));
}

#[test]
fn a_clock_kept_pinned_by_an_older_build_is_let_go() {
    let pinned = Hlc::new(i64::MAX, u32::MAX, "a");
    let mut c = Clock::resume("a", Some(&pinned), NOW, MAX_SKEW_MS);
    assert_eq!(c.tick(NOW), Hlc::new(NOW, 0, "a"));
    let kept = Hlc::new(NOW + 50, 4, "a");
    let mut c = Clock::resume("a", Some(&kept), NOW, MAX_SKEW_MS);
    assert_eq!(c.tick(NOW), Hlc::new(NOW + 50, 5, "a"));
}

/// One step of a device's life: a local edit at `now + dt`, or a pulled stamp.
#[derive(Debug, Clone)]
enum Step {
    Tick(Millis),
    Observe(Millis, u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0i64..5_000).prop_map(Step::Tick),
        (any::<i64>(), any::<u32>()).prop_map(|(t, c)| Step::Observe(t, c)),
        (-2 * DAY..2 * DAY, prop_oneof![Just(u32::MAX), any::<u32>()])
            .prop_map(|(d, c)| Step::Observe(NOW + d, c)),
    ]
}

proptest! {
    /// Whatever stamps a server sends, every local stamp is greater than the one before and than
    /// every stamp observed, never more than a day past the wall clock plus the edits since, two
    /// summary versions never share an id, and a clear never covers a summary made after it.
    #[test]
    fn whatever_it_sees_the_clock_never_repeats_or_runs_away(
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let mut c = Clock::new("a", None);
        let mut now = NOW;
        let mut ticks: Vec<Hlc> = Vec::new();
        let mut observed: Option<Hlc> = None;
        for s in steps {
            match s {
                Step::Tick(dt) => {
                    now += dt;
                    let t = c.tick(now);
                    if let Some(prev) = ticks.last() {
                        prop_assert!(t > *prev, "{t:?} after {prev:?}");
                    }
                    if let Some(o) = &observed {
                        prop_assert!(t > *o, "{t:?} after observed {o:?}");
                    }
                    prop_assert!(t.wall <= now + MAX_SKEW_MS + ticks.len() as i64 + 1);
                    ticks.push(t);
                }
                Step::Observe(wall, counter) => {
                    let seen = Hlc::new(wall, counter, "x");
                    if c.observe(&seen, now, MAX_SKEW_MS) {
                        prop_assert!(wall >= 0 && wall <= now + MAX_SKEW_MS);
                        observed = observed.max(Some(seen));
                    }
                }
            }
        }
        let ids: std::collections::BTreeSet<String> =
            ticks.iter().map(|t| summary_id("c1", t)).collect();
        prop_assert_eq!(ids.len(), ticks.len(), "summary ids collapsed");
        for (i, cleared) in ticks.iter().enumerate() {
            for made in &ticks[i + 1..] {
                let s = SummaryDoc {
                    conversation_id: "c1".into(),
                    made: made.clone(),
                    version: 1,
                    covers_up_to_seq: 0,
                    message_count: 0,
                    updated_at: 0,
                    text: String::new(),
                };
                prop_assert!(!s.cleared_by(Some(cleared)), "{cleared:?} covers {made:?}");
            }
        }
    }
}

// ---------------------------------------------------------------- a reply's reasoning

/// A pulled message holding `reasoning` is taken with it whole, or refused naming `refused`.
fn check_reasoning(reasoning: Option<Reasoning>, refused: Option<&str>) {
    let m = Message {
        id: "m1".into(),
        conversation_id: "c1".into(),
        seq: 2,
        role: Role::Assistant,
        content: "The answer.".into(),
        status: MessageStatus::Complete,
        created_at: NOW - 1000,
        meta: MessageMeta {
            reasoning: reasoning.clone(),
            ..Default::default()
        },
    };
    let at = Hlc::new(NOW - 1000, 0, "dev-b");
    let doc = Doc::new(Body::Message(message_doc(&m, &at).unwrap())).to_json(Some("1-a"));
    assert_eq!(doc.get("reasoning").is_some(), reasoning.is_some(), "{doc}");
    match (pulled(&doc, &PullLimits::default(), NOW), refused) {
        (Ok(couch), None) => match couch.doc.body {
            Body::Message(d) => assert_eq!(to_message(&d).meta.reasoning, reasoning),
            other => panic!("{other:?}"),
        },
        (Err(reason), Some(part)) => assert!(reason.contains(part), "{reason}"),
        (got, want) => panic!("wanted {want:?}, got {got:?}"),
    }
}

fn thought(text: &str, started_at: Millis, ended_at: Option<Millis>) -> Option<Reasoning> {
    Some(Reasoning {
        text: text.into(),
        started_at,
        ended_at,
    })
}

#[test]
fn a_replys_reasoning_syncs_within_the_limits() {
    check_reasoning(None, None);
    check_reasoning(thought("Hmm, 2+2…", NOW - 5000, Some(NOW - 2000)), None);
    check_reasoning(thought("still thinking", NOW - 5000, None), None);
    check_reasoning(
        thought(&"x".repeat(1_000_001), NOW - 5000, None),
        Some("reasoning"),
    );
    check_reasoning(thought("a", -1, None), Some("reasoning.started_at"));
    check_reasoning(
        thought("a", NOW - 5000, Some(NOW + 30 * DAY)),
        Some("reasoning.ended_at"),
    );
}
