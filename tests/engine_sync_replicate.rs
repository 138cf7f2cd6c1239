#![cfg(not(target_arch = "wasm32"))]
//! Sync, part 2: the sans-IO replicator against a simulated CouchDB (`engine_sync_sim`): two devices
//! converging, the safety rules (only tombstones delete; failed, empty or cut-off answers change
//! nothing; a first connection pulls before it pushes; settings never leave), 409s and pulled
//! conflicts, a server that lost its data, and connections cut at random points of a push and a pull.

mod engine_sync_sim;

use std::collections::BTreeMap;

use engine_sync_sim::{Couch, Device, Fault};
use memoire::engine::model::*;
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::*;
use memoire::engine::sync::*;
use proptest::prelude::*;
use serde_json::{json, Value};

fn ok(_: &Request) -> Fault {
    Fault::None
}

fn conversation(id: &str, title: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: title.into(),
        title_is_custom: false,
        created_at: 1,
        updated_at: 1,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

/// Device `d` creates conversation `id` at time `t`.
fn create(d: &mut Device, id: &str, title: &str, t: Millis) {
    let at = d.clock.tick(t);
    d.write(Doc::new(Body::Conversation(conversation_doc(
        &conversation(id, title),
        &at,
    ))));
}

/// Device `d` renames conversation `id` at time `t`.
fn rename(d: &mut Device, id: &str, title: &str, t: Millis) {
    let at = d.clock.tick(t);
    let Some(Body::Conversation(prev)) = d.doc(&conversation_id(id)).map(|x| x.body.clone()) else {
        panic!("{} has no conversation {id}", d.name)
    };
    let mut c = new_conversation(&prev);
    c.title = title.into();
    c.title_is_custom = true;
    d.write(Doc::new(Body::Conversation(edit_conversation(
        &prev, &c, &at,
    ))));
}

/// Device `d` adds message `id` to conversation `conv` at time `t`.
fn say(d: &mut Device, conv: &str, id: &str, t: Millis) {
    let at = d.clock.tick(t);
    let m = Message {
        id: id.into(),
        conversation_id: conv.into(),
        seq: t as u64,
        role: Role::User,
        content: format!("{id} from {}", d.name),
        status: MessageStatus::Complete,
        created_at: t,
        meta: Default::default(),
    };
    d.write(Doc::new(Body::Message(message_doc(&m, &at).unwrap())));
}

fn delete(d: &mut Device, id: &str, t: Millis) {
    let at = d.clock.tick(t);
    d.write(Doc::tombstone(id, &at).unwrap());
}

fn content(d: &Doc) -> Value {
    let mut v = d.to_json(None);
    v.as_object_mut().unwrap().remove("_id");
    v
}

/// The server's documents (winners' content); panics if any has a conflict or is CouchDB-deleted.
fn server_docs(s: &Couch) -> BTreeMap<String, Value> {
    let db = &s.dbs["memoire"];
    db.docs
        .iter()
        .map(|(id, t)| {
            assert!(
                t.conflicts().is_empty(),
                "{id} has conflicts {:?}",
                t.conflicts()
            );
            assert!(!t.is_deleted(), "{id} was deleted on the server");
            (id.clone(), t.body())
        })
        .collect()
}

/// Every device holds exactly what the server holds, with nothing left to push.
fn check_converged(s: &Couch, devices: &[&Device]) -> BTreeMap<String, Value> {
    let server = server_docs(s);
    for d in devices {
        let local: BTreeMap<String, Value> = d
            .docs
            .iter()
            .map(|(id, (l, _))| (id.clone(), content(&l.doc)))
            .collect();
        assert_eq!(local, server, "{} differs from the server", d.name);
        let dirty: Vec<&String> = d
            .docs
            .iter()
            .filter(|(_, (_, x))| *x)
            .map(|(id, _)| id)
            .collect();
        assert!(dirty.is_empty(), "{} still has {dirty:?} to push", d.name);
    }
    server
}

fn title(docs: &BTreeMap<String, Value>, conv: &str) -> String {
    docs[&conversation_id(conv)]["title"]["v"]["text"]
        .as_str()
        .unwrap_or("<deleted>")
        .to_string()
}

fn messages(docs: &BTreeMap<String, Value>) -> Vec<String> {
    docs.iter()
        .filter(|(id, v)| id.starts_with("m:") && v["type"] == "message")
        .map(|(id, _)| id.clone())
        .collect()
}

/// A and B share conversation c1 with one message, synced.
fn shared() -> (Couch, Device, Device) {
    let (mut s, mut a, mut b) = (Couch::default(), Device::new("a"), Device::new("b"));
    create(&mut a, "c1", "Trip", 10);
    say(&mut a, "c1", "m1", 11);
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    check_converged(&s, &[&a, &b]);
    (s, a, b)
}

#[test]
fn messages_written_on_either_device_reach_the_other_once() {
    let (mut s, mut a, mut b) = shared();
    say(&mut b, "c1", "m2", 20);
    say(&mut a, "c1", "m3", 21);
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(messages(&docs), ["m:m1", "m:m2", "m:m3"]);
}

#[test]
fn both_offline_rename_and_add_messages_then_converge() {
    let (mut s, mut a, mut b) = shared();
    rename(&mut a, "c1", "Trip to Oslo", 30);
    say(&mut a, "c1", "ma", 31);
    rename(&mut b, "c1", "Oslo plans", 32);
    say(&mut b, "c1", "mb", 33);
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(title(&docs, "c1"), "Oslo plans", "the later rename wins");
    assert_eq!(messages(&docs), ["m:m1", "m:ma", "m:mb"]);
}

#[test]
fn a_deleted_conversation_stays_deleted_after_a_stale_push() {
    let (mut s, mut a, mut b) = shared();
    delete(&mut a, &conversation_id("c1"), 40);
    rename(&mut b, "c1", "Renamed later, offline", 50);
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(docs[&conversation_id("c1")]["type"], "tombstone");
}

#[test]
fn a_first_connection_pulls_and_merges_before_it_pushes() {
    let (mut s, mut a, _) = shared();
    rename(&mut a, "c1", "From A", 60);
    assert!(a.sync(&mut s, &mut ok));
    // A new device that already holds its own copy of c1 (say, from a backup) and a message.
    let mut c = Device::new("c");
    c.clock.observe(&Hlc::new(70, 0, "x"), 0, MAX_SKEW_MS);
    create(&mut c, "c1", "From C", 5);
    say(&mut c, "c1", "mc", 71);
    s.log.clear();
    assert!(c.sync(&mut s, &mut ok));
    let first_push = s
        .log
        .iter()
        .position(|l| l.ends_with("_bulk_docs"))
        .unwrap();
    let last_pull = s.log.iter().rposition(|l| l.contains("_changes")).unwrap();
    assert!(last_pull < first_push, "{:?}", s.log);
    assert!(
        !s.log.iter().any(|l| l.contains("_all_docs")),
        "no 409 to repair: {:?}",
        s.log
    );
    let docs = check_converged(&s, &[&c]);
    assert_eq!(
        title(&docs, "c1"),
        "From C",
        "C's edit is later (its clock saw 70)"
    );
    assert_eq!(messages(&docs), ["m:m1", "m:mc"]);
}

#[test]
fn a_409_is_re_read_merged_and_retried() {
    let (mut s, mut a, mut b) = shared();
    rename(&mut a, "c1", "A's title", 80);
    say(&mut a, "c1", "m9", 81);
    // Between A's pull and its push, another client writes c1 (a new revision A has not seen).
    let srv = &s.dbs["memoire"].docs[&conversation_id("c1")];
    let mut other = srv.body();
    other["fields"]["recent_messages"] = json!({"v": "4", "at": {"t": 79, "c": 0, "d": "z"}});
    other["_id"] = json!(conversation_id("c1"));
    other["_rev"] = json!(srv.winner());
    s.before_bulk = Some(json!({ "docs": [other] }));
    assert!(a.sync(&mut s, &mut ok));
    assert!(
        s.log.iter().any(|l| l.ends_with("_all_docs")),
        "{:?}",
        s.log
    );
    assert!(b.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(title(&docs, "c1"), "A's title");
    assert_eq!(
        docs[&conversation_id("c1")]["fields"]["recent_messages"]["v"],
        "4"
    );
}

#[test]
fn pulled_conflicts_are_merged_and_the_losing_leaves_deleted() {
    let (mut s, mut a, mut b) = shared();
    let id = conversation_id("c1");
    let mut theirs = s.dbs["memoire"].docs[&id].body();
    theirs["title"] = json!({"v": {"text": "From a third replica", "custom": true}, "at": {"t": 90, "c": 0, "d": "z"}});
    theirs["fields"]["context_tokens"] = json!({"v": "4096", "at": {"t": 95, "c": 0, "d": "z"}});
    s.dbs
        .get_mut("memoire")
        .unwrap()
        .plant_conflict(&id, theirs);
    assert_eq!(s.dbs["memoire"].docs[&id].conflicts().len(), 1);
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(title(&docs, "c1"), "From a third replica");
    assert_eq!(docs[&id]["fields"]["context_tokens"]["v"], "4096");
}

#[test]
fn a_server_that_lost_everything_gets_everything_back() {
    let (mut s, mut a, mut b) = shared();
    say(&mut b, "c1", "m5", 100);
    s.dbs.clear(); // pouchdb-server --in-memory restarted
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(messages(&docs), ["m:m1", "m:m5"]);
}

#[test]
fn a_later_connection_resumes_from_its_checkpoint() {
    let (mut s, mut a, _) = shared();
    let since = a.since.clone().expect("a checkpoint");
    s.log.clear();
    let mut pulls = Vec::new();
    assert!(a.sync(&mut s, &mut |r: &Request| {
        if r.path.ends_with("_changes") {
            pulls.push(
                r.query
                    .iter()
                    .find(|(k, _)| k == "since")
                    .map(|(_, v)| v.clone()),
            );
        }
        Fault::None
    }));
    assert_eq!(pulls.first(), Some(&Some(since)));
    assert!(
        !s.log.iter().any(|l| l.ends_with("_bulk_docs")),
        "nothing to push: {:?}",
        s.log
    );
}

#[test]
fn settings_and_device_state_never_leave_the_device() {
    let (mut s, mut a) = (Couch::default(), Device::new("a"));
    let mut c = conversation("c1", "Chat");
    c.endpoint_profile_id = Some("profile-SECRET".into());
    c.remote_handle = Some(RemoteHandle {
        id: "resp_SECRET".into(),
        endpoint_key: "openai-responses|https://api.example|SECRET".into(),
        covers_up_to_seq: 1,
        confirmed_at: 1,
        dead: false,
    });
    let at = a.clock.tick(1);
    a.write(Doc::new(Body::Conversation(conversation_doc(&c, &at))));
    assert!(a.sync(&mut s, &mut ok));
    assert!(!s.bodies.is_empty());
    assert!(
        s.bodies.iter().all(|b| !b.contains("SECRET")),
        "{:?}",
        s.bodies
    );
    assert_eq!(
        Kind::of_id("settings:endpoint"),
        None,
        "no document kind for settings"
    );
}

// ---------------------------------------------------------------- answers that must change nothing

/// A replicator that has pulled once (checkpoint `1-g1AAAA`) and holds one queued document.
fn check_answer_changes_nothing(path_end: &str, status: u16, body: &str) {
    let mut cfg = Config::new("memoire", "a");
    cfg.live = false;
    let mut rep = Replicator::new(cfg, Some("1-g1AAAA".into()));
    let mut a = Device::new("a");
    create(&mut a, "c1", "Mine", 1);
    rep.handle_local_changes(a.docs.values().map(|(l, _)| l.clone()));
    let mut s = Couch::default();
    s.dbs.insert("memoire".into(), Default::default());
    s.handle(&Request {
        method: Method::Put,
        path: "/memoire/_local/memoire-a".into(),
        query: vec![],
        body: Some(json!({"since": "1-g1AAAA"}).to_string()),
    });
    for _ in 0..20 {
        let req = rep.poll_request(0).expect("a request");
        if req.path.ends_with(path_end) {
            rep.handle_response(0, status, body);
            let mut writes = Vec::new();
            while let Some(w) = rep.poll_write() {
                writes.push(w);
            }
            assert_eq!(writes, vec![], "{path_end} {status} {body:?}");
            assert_eq!(rep.pending(), 1, "the queued document stays queued");
            assert!(
                matches!(
                    rep.status(),
                    Status::Error {
                        retry_at: Some(_),
                        ..
                    } | Status::Offline { .. }
                ),
                "{:?}",
                rep.status()
            );
            assert_eq!(rep.poll_request(0), None, "it backs off");
            assert!(rep.poll_request(1_000).is_some(), "then tries again");
            return;
        }
        let (st, b) = s.handle(&req);
        rep.handle_response(0, st, &b);
        while rep.poll_write().is_some() {}
    }
    panic!("no request to {path_end}");
}

#[test]
fn an_empty_answer_changes_nothing() {
    check_answer_changes_nothing("_changes", 200, "");
}
#[test]
fn a_cut_off_changes_answer_changes_nothing() {
    check_answer_changes_nothing(
        "_changes",
        200,
        r#"{"results":[{"id":"c:c1","seq":"2-x","changes":[]}"#,
    );
}
#[test]
fn a_changes_answer_without_last_seq_changes_nothing() {
    check_answer_changes_nothing("_changes", 200, r#"{"results":[]}"#);
}
#[test]
fn a_server_error_changes_nothing() {
    check_answer_changes_nothing("_changes", 500, r#"{"error":"internal"}"#);
}
#[test]
fn a_cut_off_push_answer_changes_nothing() {
    check_answer_changes_nothing("_bulk_docs", 201, r#"[{"ok":true,"id":"c:c1","#);
}

#[test]
fn a_couchdb_deletion_without_a_tombstone_is_written_back() {
    let (mut s, mut a, mut b) = shared();
    let id = message_id("m1");
    let rev = s.dbs["memoire"].docs[&id].winner();
    s.handle(&Request {
        method: Method::Post,
        path: "/memoire/_bulk_docs".into(),
        query: vec![],
        body: Some(json!({"docs": [{"_id": id, "_rev": rev, "_deleted": true}]}).to_string()),
    });
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(messages(&docs), ["m:m1"], "the message is still everywhere");
}

#[test]
fn wrong_credentials_stop_until_the_user_acts() {
    let mut rep = Replicator::new(Config::new("memoire", "a"), None);
    rep.poll_request(0).unwrap();
    rep.handle_response(0, 401, r#"{"error":"unauthorized"}"#);
    assert!(matches!(
        rep.status(),
        Status::Error {
            error: SyncError::Unauthorized,
            retry_at: None
        }
    ));
    assert_eq!(rep.poll_request(1_000_000), None);
    rep.retry_now();
    assert!(rep.poll_request(1_000_000).is_some());
}

#[test]
fn requests_are_encoded_for_couchdb() {
    let mut cfg = Config::new("user/db", "dev 1");
    cfg.live = false;
    let mut rep = Replicator::new(cfg, Some("5-g1A".into()));
    let r = rep.poll_request(0).unwrap();
    assert_eq!(r.url("http://h:5984/"), "http://h:5984/user%2Fdb");
    rep.handle_response(0, 200, "{}");
    let r = rep.poll_request(0).unwrap();
    assert_eq!(
        r.url("http://h:5984"),
        "http://h:5984/user%2Fdb/_local/memoire-dev%201"
    );
    rep.handle_response(0, 200, r#"{"_rev":"0-1","since":"5-g1A"}"#);
    let r = rep.poll_request(0).unwrap();
    assert_eq!(
        r.url("http://h:5984"),
        "http://h:5984/user%2Fdb/_changes?include_docs=true&style=all_docs&conflicts=true&limit=250&since=5-g1A"
    );
}

// ---------------------------------------------------------------- connections cut at random points

fn fault(code: u8) -> Fault {
    match code % 6 {
        0 => Fault::Lost,
        1 => Fault::AnswerLost,
        n => Fault::Cut(n * 2 - 3),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A pushes 12 messages and B pulls them, each over connections that fail at the given request
    /// numbers; then both sync cleanly. Every message is on the server and on both devices exactly
    /// once, with no conflict left.
    #[test]
    fn cut_connections_lose_and_double_nothing(
        push_cuts in prop::collection::vec((0usize..12, any::<u8>()), 1..4),
        pull_cuts in prop::collection::vec((0usize..12, any::<u8>()), 1..4),
    ) {
        let (mut s, mut a, mut b) = shared();
        for i in 0..12 {
            say(&mut a, "c1", &format!("n{i:02}"), 200 + i);
        }
        say(&mut b, "c1", "from-b", 300);
        for (cuts, dev) in [(&push_cuts, &mut a), (&pull_cuts, &mut b)] {
            for &(at, code) in cuts.iter() {
                let mut n = 0;
                dev.sync(&mut s, &mut |_| {
                    n += 1;
                    if n == at + 1 { fault(code) } else { Fault::None }
                });
            }
        }
        for _ in 0..2 {
            prop_assert!(a.sync(&mut s, &mut ok));
            prop_assert!(b.sync(&mut s, &mut ok));
        }
        let docs = check_converged(&s, &[&a, &b]);
        let ms = messages(&docs);
        prop_assert_eq!(ms.len(), 14);
        for d in [&a, &b] {
            let held: Vec<&String> = d.docs.keys().filter(|k| k.starts_with("m:")).collect();
            prop_assert_eq!(held.len(), 14, "{} holds each message once", d.name);
        }
        prop_assert_eq!(s.dbs["memoire"].docs.len(), 15);
    }
}

// ---------------------------------------------------------------- one entity learned on two devices

fn learn(d: &mut Device, id: &str, name: &str, fact: (&str, &str), knows: Option<&str>, t: Millis) {
    let at = d.clock.tick(t);
    let mut n = EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: vec![],
        description: String::new(),
        properties: [(fact.0.to_string(), fact.1.to_string())].into(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec![format!("src-{}", d.name)],
        updated_at: t,
    };
    if let Some(target) = knows {
        n.relationships.push(Relationship {
            target_id: target.into(),
            relationship: "knows".into(),
            strength: 0.5,
            valid_from: t,
            valid_to: None,
        });
    }
    let (e, edges) = entity_docs(&n, &at);
    d.write(Doc::new(Body::Entity(e)));
    for edge in edges {
        d.write(Doc::new(Body::Edge(edge)));
    }
}

/// Runs `unify` over the device's live entities and edges and writes what it returns.
fn unify_on(d: &mut Device, t: Millis) -> usize {
    let (mut es, mut edges) = (Vec::new(), Vec::new());
    for (l, _) in d.docs.values() {
        match &l.doc.body {
            Body::Entity(e) => es.push(e.clone()),
            Body::Edge(e) => edges.push(e.clone()),
            _ => {}
        }
    }
    let at = d.clock.tick(t);
    let out = memoire::engine::sync::unify::unify(&es, &edges, &at);
    let n = out.len();
    for doc in out {
        d.write(doc);
    }
    n
}

#[test]
fn the_same_entity_learned_on_both_devices_becomes_one() {
    let (mut s, mut a, mut b) = shared();
    learn(&mut a, "p-a", "Alice", ("job", "pilot"), None, 400);
    learn(&mut a, "bob", "Bob", ("city", "Oslo"), Some("p-a"), 401);
    learn(&mut b, "p-b", "alice", ("pet", "cat"), Some("bob"), 402);
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    // Both devices unify at once, each on its own.
    assert!(unify_on(&mut a, 410) > 0);
    assert!(unify_on(&mut b, 411) > 0);
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    let live: Vec<(&String, &Value)> = docs
        .iter()
        .filter(|(id, v)| id.starts_with("e:") && v["type"] == "entity")
        .collect();
    let alice: Vec<_> = live
        .iter()
        .filter(|(_, v)| {
            v["name"]["v"]
                .as_str()
                .unwrap()
                .eq_ignore_ascii_case("alice")
        })
        .collect();
    assert_eq!(alice.len(), 1, "{live:?}");
    let (id, v) = alice[0];
    assert_eq!(id.as_str(), "e:c1:p-a", "the smallest id is kept");
    assert_eq!(
        (
            v["properties"]["job"]["v"].clone(),
            v["properties"]["pet"]["v"].clone()
        ),
        (json!("pilot"), json!("cat"))
    );
    let edges: Vec<(String, String)> = docs
        .values()
        .filter(|v| v["type"] == "edge")
        .map(|v| {
            (
                v["source"].as_str().unwrap().into(),
                v["target"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [("bob".into(), "p-a".into()), ("p-a".into(), "bob".into())]
    );
    assert_eq!(unify_on(&mut a, 420), 0, "nothing left to unify");
}

// ---------------------------------------------------------------- live feed, backoff

fn is_longpoll(r: &Request) -> bool {
    r.query.iter().any(|(k, v)| k == "feed" && v == "longpoll")
}

#[test]
fn a_live_feed_gives_way_to_local_changes_then_resumes() {
    let (mut s, mut a, _) = shared();
    let mut rep = Replicator::new(Config::new("memoire", "a"), a.since.clone());
    let mut requests = Vec::new();
    let live = loop {
        let r = rep.poll_request(0).expect("a request");
        if is_longpoll(&r) {
            break r;
        }
        requests.push(r.path.clone());
        let (st, body) = s.handle(&r);
        rep.handle_response(0, st, &body);
        while rep.poll_write().is_some() {}
        assert!(requests.len() < 10, "{requests:?}");
    };
    assert_eq!(rep.status(), Status::Synced);
    assert!(live
        .query
        .iter()
        .any(|(k, v)| k == "heartbeat" && v == "10000"));
    say(&mut a, "c1", "live", 500);
    rep.handle_local_changes([a.docs[&message_id("live")].0.clone()]);
    assert_eq!(rep.status(), Status::Syncing { pending: 1 });
    assert!(rep.poll_cancel());
    assert!(!rep.poll_cancel(), "asked once");
    assert_eq!(rep.poll_request(0), None, "the longpoll is still in flight");
    rep.handle_cancelled();
    let push = rep.poll_request(0).unwrap();
    assert!(push.path.ends_with("_bulk_docs"), "{push:?}");
    let (st, body) = s.handle(&push);
    rep.handle_response(0, st, &body);
    assert!(is_longpoll(&rep.poll_request(0).unwrap()));
    assert_eq!(rep.status(), Status::Synced);
}

#[test]
fn failures_back_off_exponentially_up_to_a_minute() {
    let mut rep = Replicator::new(Config::new("memoire", "a"), None);
    let mut waits = Vec::new();
    let mut now = 0;
    for _ in 0..9 {
        rep.poll_request(now).expect("a retry");
        rep.handle_failure(now, "connection refused");
        assert!(matches!(rep.status(), Status::Offline { .. }));
        let at = rep.poll_timeout().unwrap();
        waits.push(at - now);
        assert_eq!(rep.poll_request(at - 1), None);
        now = at;
    }
    assert_eq!(
        waits,
        [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]
    );
    rep.poll_request(now).unwrap();
    rep.handle_response(now, 200, "{}");
    assert_eq!(rep.poll_timeout(), None, "a success resets the backoff");
}

#[test]
fn a_redirect_stops_sync_until_the_settings_change() {
    let mut rep = Replicator::new(Config::new("memoire", "a"), None);
    rep.poll_request(0).expect("the first request");
    rep.handle_redirected(0);
    match rep.status() {
        Status::Error { error, retry_at } => {
            assert_eq!(error, SyncError::Redirected);
            assert_eq!(retry_at, None, "only a new address fixes it");
            assert!(error
                .to_string()
                .contains("does not follow it with your password"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(rep.poll_timeout(), None);
    assert_eq!(rep.poll_request(3_600_000), None, "never asked again");
}

#[test]
fn an_edit_made_after_seeing_a_newer_stamp_wins_even_with_a_slow_clock() {
    let (mut s, mut a, mut b) = shared();
    rename(&mut b, "c1", "B at 900", 900);
    assert!(b.sync(&mut s, &mut ok));
    assert!(a.sync(&mut s, &mut ok));
    rename(&mut a, "c1", "A later, its clock at 150", 150);
    assert!(a.sync(&mut s, &mut ok));
    assert!(b.sync(&mut s, &mut ok));
    let docs = check_converged(&s, &[&a, &b]);
    assert_eq!(title(&docs, "c1"), "A later, its clock at 150");
}

#[test]
fn a_user_who_may_not_create_the_database_is_told_it_is_missing() {
    let mut rep = Replicator::new(Config::new("userdb-616c696365", "a"), None);
    rep.poll_request(0).unwrap();
    rep.handle_response(0, 404, r#"{"error":"not_found"}"#);
    let put = rep.poll_request(0).unwrap();
    assert_eq!(put.method, Method::Put);
    rep.handle_response(
        0,
        401,
        r#"{"error":"unauthorized","reason":"You are not a server admin."}"#,
    );
    let Status::Error {
        error,
        retry_at: None,
    } = rep.status()
    else {
        panic!("{:?}", rep.status())
    };
    assert_eq!(
        error,
        SyncError::DatabaseMissing {
            db: "userdb-616c696365".into()
        }
    );
    assert!(error.to_string().contains("does not exist"), "{error}");
}

// ---------------------------------------------------------------- what may overlap the writes

/// Each request of a first connection (pages of 2) with whether `bulk_next` said, just before it
/// was polled, that it may go out while the last answer's writes are applied.
#[test]
fn only_bulk_pages_may_go_out_while_writes_are_applied() {
    let mut s = Couch::default();
    let mut b = Device::new("b");
    for k in 0..3 {
        create(&mut b, &format!("b{k}"), "theirs", 1);
    }
    assert!(b.sync(&mut s, &mut ok));
    let mut cfg = Config::new("memoire", "a");
    cfg.pull_batch = 2;
    cfg.push_batch = 2;
    let mut rep = Replicator::new(cfg, None);
    let mut a = Device::new("a");
    for k in 0..3 {
        create(&mut a, &format!("a{k}"), "mine", 2);
    }
    rep.handle_local_changes(a.docs.values().map(|(l, _)| l.clone()));
    let mut seen = Vec::new();
    for _ in 0..30 {
        let bulk = rep.bulk_next(0);
        let Some(req) = rep.poll_request(0) else {
            break;
        };
        let live = req.query.iter().any(|(k, _)| k == "feed");
        let what = match req.path.rsplit('/').next().unwrap_or("") {
            "_changes" if live => "longpoll",
            "_changes" => "changes",
            "_bulk_docs" => "push",
            p if p.starts_with("memoire-") => "checkpoint",
            _ => "db",
        };
        seen.push(format!("{what}{}", if bulk { " (overlap)" } else { "" }));
        if live {
            break;
        }
        let (st, body) = s.handle(&req);
        rep.handle_response(0, st, &body);
        while rep.poll_write().is_some() {}
    }
    assert_eq!(
        seen,
        [
            "db",
            "checkpoint",
            "changes (overlap)",
            "changes (overlap)",
            "push (overlap)",
            "push (overlap)",
            "checkpoint",
            "longpoll",
        ]
    );
}
