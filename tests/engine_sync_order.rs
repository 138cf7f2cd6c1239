#![cfg(not(target_arch = "wasm32"))]
//! `engine::sync::order`: the order a sync batch's merges are applied in, and the stamp the clock
//! observes for them.

use memoire::engine::model::*;
use memoire::engine::sync::convert::{conversation_doc, message_doc};
use memoire::engine::sync::order::{in_order, latest_stamp};
use memoire::engine::sync::{Body, Doc, Hlc, Write};

/// Message `id` at `seq`, written at `time`.
fn message(id: &str, seq: u64, time: i64) -> Message {
    Message {
        id: id.into(),
        conversation_id: "c".into(),
        seq,
        role: Role::User,
        content: id.into(),
        status: MessageStatus::Complete,
        created_at: time,
        meta: MessageMeta::default(),
    }
}

fn at(wall: i64) -> Hlc {
    Hlc::new(wall, 0, "d")
}

fn conversation(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: "t".into(),
        title_is_custom: true,
        created_at: 5,
        updated_at: 5,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

/// One write: `conv:<id>:<stamp>`, `msg:<id>:<seq>:<time>` (stamped at its time),
/// `gone:<kind>:<id>:<stamp>` (the tombstone of document `<kind>:<id>`), or `checkpoint`.
fn write(token: &str) -> Write {
    let parts: Vec<&str> = token.split(':').collect();
    let n = |i: usize| parts[i].parse::<i64>().unwrap();
    let remote = match parts[0] {
        "checkpoint" => return Write::Checkpoint { since: "1".into() },
        "conv" => Doc::new(Body::Conversation(conversation_doc(
            &conversation(parts[1]),
            &at(n(2)),
        ))),
        "msg" => {
            let m = message(parts[1], n(2) as u64, n(3));
            Doc::new(Body::Message(message_doc(&m, &at(n(3))).unwrap()))
        }
        "gone" => Doc::tombstone(&format!("{}:{}", parts[1], parts[2]), &at(n(3))).unwrap(),
        other => panic!("bad write {other:?}"),
    };
    Write::Merge {
        remote,
        rev: "1-a".into(),
    }
}

fn writes(spec: &str) -> Vec<Write> {
    spec.split_whitespace().map(write).collect()
}

/// The writes of `spec` in the order they are applied, by document `_id`.
fn check_order(spec: &str, want: &str) {
    let mut batch = writes(spec);
    in_order(&mut batch);
    let ids: Vec<String> = batch
        .iter()
        .map(|w| match w {
            Write::Merge { remote, .. } => remote.id.clone(),
            _ => "checkpoint".into(),
        })
        .collect();
    assert_eq!(ids.join(" "), want);
}

/// The wall time of the stamp the clock observes for `spec`.
fn check_latest(spec: &str, want: Option<i64>) {
    assert_eq!(latest_stamp(&writes(spec)).map(|h| h.wall), want);
}

#[test]
fn a_batch_applies_other_documents_first_then_messages_in_their_writers_order() {
    check_order("", "");
    check_order("conv:x:1 msg:a:1:10", "c:x m:a");
    check_order("msg:a:1:10 conv:x:1", "c:x m:a");
    check_order("msg:b:2:20 msg:a:1:10", "m:a m:b");
    check_order("msg:b:1:20 msg:a:1:10", "m:a m:b");
    check_order("msg:a:1:10 msg:b:1:10", "m:a m:b");
    check_order("msg:b:1:10 msg:a:1:10", "m:b m:a");
    check_order(
        "msg:c:3:5 gone:c:x:9 msg:a:1:50 conv:y:2",
        "c:x c:y m:a m:c",
    );
    check_order("conv:y:2 conv:x:1 gone:c:z:3", "c:y c:x c:z");
    // A deleted message is a tombstone, not a message: it goes with the other documents.
    check_order("msg:a:1:10 gone:m:q:3", "m:q m:a");
    check_order("msg:b:2:10 checkpoint msg:a:1:10", "checkpoint m:a m:b");
}

#[test]
fn the_clock_observes_the_latest_stamp_of_a_batch() {
    check_latest("", None);
    check_latest("checkpoint", None);
    check_latest("conv:x:4", Some(4));
    check_latest("conv:x:4 msg:a:1:10 gone:c:z:7", Some(10));
    check_latest("msg:a:1:10 gone:m:z:12 checkpoint", Some(12));
}
