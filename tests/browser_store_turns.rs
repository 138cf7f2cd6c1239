#![cfg(target_arch = "wasm32")]
//! Browser tests of `Store::append_turn` (src/store/turns.rs): a user message and its reply placeholder
//! in one transaction at the seqs the caller expected, and nothing at all when the conversation moved
//! on, an id is taken, or the disk is full. A fresh database per test.

use memoire::engine::model::*;
use memoire::store::{Store, StoreError};
use wasm_bindgen_test::*;

mod support;
use support::{conv, finish, fresh, small, too_big};

wasm_bindgen_test_configure!(run_in_browser);

fn msg(c: &str, id: &str, role: Role, at: i64) -> Message {
    Message {
        id: id.into(),
        conversation_id: c.into(),
        seq: 0,
        role,
        content: format!("text of {id}"),
        status: if role == Role::User {
            MessageStatus::Complete
        } else {
            MessageStatus::Streaming
        },
        created_at: at,
        meta: MessageMeta::default(),
    }
}

/// A store holding conversation "c" with two messages (last seq 2).
async fn seeded() -> Store {
    seed_into(fresh("turns").await).await
}

async fn seed_into(s: Store) -> Store {
    s.create_conversation(&conv("c")).await.unwrap();
    s.append_message(&msg("c", "m1", Role::User, 10))
        .await
        .unwrap();
    s.append_message(&msg("c", "m2", Role::Assistant, 11))
        .await
        .unwrap();
    s
}

/// Calls `append_turn(u, r, expected)` and checks its answer and what the store then holds.
async fn check(expected: u64, user: Message, reply: Message, want_written: bool) {
    let s = seeded().await;
    let got = s.append_turn(&user, &reply, expected).await.unwrap();
    assert_eq!(got, want_written);
    let all = s.load_last("c", 10).await.unwrap();
    let c = s.get_conversation("c").await.unwrap().unwrap();
    if want_written {
        let ids: Vec<(&str, u64)> = all.iter().map(|m| (m.id.as_str(), m.seq)).collect();
        assert_eq!(ids, [("m1", 1), ("m2", 2), ("u", 3), ("r", 4)]);
        assert_eq!(all[3].status, MessageStatus::Streaming);
        assert_eq!(c.message_count, 4);
        assert_eq!(c.updated_at, 21);
        // The next ordinary append follows on.
        let next = s
            .append_message(&msg("c", "m5", Role::User, 30))
            .await
            .unwrap();
        assert_eq!(next.message.seq, 5);
    } else {
        assert_eq!(all.len(), 2, "nothing was written");
        assert_eq!(c.message_count, 2);
    }
    finish(s).await;
}

#[wasm_bindgen_test]
async fn appends_both_at_the_expected_seqs() {
    check(
        2,
        msg("c", "u", Role::User, 20),
        msg("c", "r", Role::Assistant, 21),
        true,
    )
    .await;
}

#[wasm_bindgen_test]
async fn writes_nothing_when_the_conversation_moved_on() {
    let (u, r) = (
        msg("c", "u", Role::User, 20),
        msg("c", "r", Role::Assistant, 21),
    );
    check(1, u.clone(), r.clone(), false).await;
    check(3, u, r, false).await;
}

#[wasm_bindgen_test]
async fn writes_nothing_when_an_id_is_taken_or_the_pair_is_split() {
    let r = msg("c", "r", Role::Assistant, 21);
    check(2, msg("c", "m1", Role::User, 20), r.clone(), false).await;
    check(
        2,
        msg("c", "u", Role::User, 20),
        msg("c", "m2", Role::Assistant, 21),
        false,
    )
    .await;
    check(
        2,
        msg("c", "u", Role::User, 20),
        msg("d", "r", Role::Assistant, 21),
        false,
    )
    .await;
}

#[wasm_bindgen_test]
async fn a_full_disk_writes_nothing() {
    let s = seed_into(small("turns-full").await).await;
    let big = Message {
        content: too_big(),
        ..msg("c", "u", Role::User, 20)
    };
    let got = s
        .append_turn(&big, &msg("c", "r", Role::Assistant, 21), 2)
        .await;
    assert_eq!(got.map(|_| ()), Err(StoreError::Full));
    assert_eq!(s.load_last("c", 10).await.unwrap().len(), 2);
    assert_eq!(
        s.get_conversation("c")
            .await
            .unwrap()
            .unwrap()
            .message_count,
        2
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn an_unknown_conversation_writes_nothing() {
    let s = fresh("turns").await;
    let got = s
        .append_turn(
            &msg("x", "u", Role::User, 20),
            &msg("x", "r", Role::Assistant, 21),
            0,
        )
        .await
        .unwrap();
    assert!(!got);
    finish(s).await;
}
