#![cfg(not(target_arch = "wasm32"))]
//! The branch on screen: which stored messages a conversation shows (and sends), and where each
//! shown message stands among its alternatives.
//!
//! A conversation is written as one word per message, in seq order: `id`, then optionally
//! `<x` (an alternative of x: a regeneration or an edit), `>x` (follows x) and `!` (deleted).

use memoire::engine::branch::{has_alternatives, shown_branch, shown_messages};
use memoire::engine::model::*;

fn conversation(spec: &str) -> Vec<Message> {
    spec.split_whitespace()
        .enumerate()
        .map(|(i, word)| {
            let deleted = word.ends_with('!');
            let word = word.trim_end_matches('!');
            let (rest, replaces) = match word.split_once('<') {
                Some((a, b)) => (a, Some(b.to_string())),
                None => (word, None),
            };
            let (id, after) = match rest.split_once('>') {
                Some((a, b)) => (a, Some(b.to_string())),
                None => (rest, None),
            };
            Message {
                id: id.into(),
                conversation_id: "c".into(),
                seq: i as u64 + 1,
                role: if id.starts_with('u') {
                    Role::User
                } else {
                    Role::Assistant
                },
                content: id.into(),
                status: MessageStatus::Complete,
                created_at: i as i64,
                meta: MessageMeta {
                    after,
                    replaces,
                    deleted,
                    ..Default::default()
                },
            }
        })
        .collect()
}

/// `want`: the shown ids, each with `(position/count)` when it has alternatives.
fn check(spec: &str, anchor: Option<&str>, want: &str) {
    let messages = conversation(spec);
    let b = shown_branch(&messages, anchor);
    let got: Vec<String> = b
        .shown
        .iter()
        .map(|&i| {
            let id = &messages[i].id;
            match b.alternatives.get(id) {
                Some(a) => format!("{id}({}/{})", a.position, a.count),
                None => id.clone(),
            }
        })
        .collect();
    assert_eq!(got.join(" "), want, "{spec} anchored at {anchor:?}");
}

#[test]
fn linear_and_legacy_conversations_show_every_message() {
    check("", None, "");
    check("u1 a1 u2 a2", None, "u1 a1 u2 a2");
    check("u1 a1>u1 u2>a1 a2>u2", None, "u1 a1 u2 a2");
    check("u1 a1 u2 a2", Some("gone"), "u1 a1 u2 a2");
    check("u1 a1 u2 a2", Some("a1"), "u1 a1 u2 a2");
}

#[test]
fn a_regenerated_reply_is_shown_and_the_earlier_one_is_an_alternative() {
    check("u1 a1 a2<a1", None, "u1 a2(2/2)");
    check("u1 a1 a2<a1", Some("a1"), "u1 a1(1/2)");
    check("u1 a1 a2<a1 a3<a2", Some("a2"), "u1 a2(2/3)");
    check("u1 a1 a2<a1 a3<a1", None, "u1 a3(3/3)");
}

#[test]
fn paging_back_and_sending_continues_the_chosen_branch() {
    check("u1 a1 a2<a1 u2>a1 a3>u2", Some("a1"), "u1 a1(1/2) u2 a3");
    check("u1 a1 a2<a1 u2>a1 a3>u2", Some("a2"), "u1 a2(2/2)");
    // Below the anchor, the newest child is followed.
    check(
        "u1 a1 a2<a1 u2>a1 a3>u2 a4<a3",
        Some("a1"),
        "u1 a1(1/2) u2 a4(2/2)",
    );
}

#[test]
fn editing_a_middle_message_starts_a_branch_and_keeps_the_old_one() {
    let spec = "u1 a1 u2 a2 u3 a3 u4<u2 a4>u4";
    check(spec, None, "u1 a1 u4(2/2) a4");
    check(spec, Some("u2"), "u1 a1 u2(1/2) a2 u3 a3");
    check(spec, Some("a3"), "u1 a1 u2(1/2) a2 u3 a3");
    // The first message edited: a second root.
    check("u1 a1 u2<u1 a2>u2", None, "u2(2/2) a2");
    check("u1 a1 u2<u1 a2>u2", Some("u1"), "u1(1/2) a1");
}

#[test]
fn deleted_messages_are_hidden_and_lose_nothing_else() {
    check("u1 a1! u2 a2", None, "u1 u2 a2");
    check("u1 a1 u2 a2!", None, "u1 a1 u2");
    check("u1! a1! u2 a2", None, "u2 a2");
    // A deleted alternative leaves the other one shown, whatever was chosen.
    check("u1 a1 a2<a1!", None, "u1 a1");
    check("u1 a1 a2<a1!", Some("a2"), "u1 a1");
    check("u1 a1! a2<a1", Some("a1"), "u1 a2");
    check("u1 a1 a2<a1 a3<a1!", None, "u1 a2(2/2)");
    // A deleted message with something after it keeps its branch.
    check("u1 a1 a2<a1! u2>a2", None, "u1 u2");
    check("u1! a1! u2! a2!", None, "");
}

#[test]
fn broken_links_read_as_a_linear_chain() {
    // Unknown ids, links forward in seq order, links to itself: the message before it by seq.
    check("u1 a1<nope u2>nope a2", None, "u1 a1 u2 a2");
    check("u1 a1<u2 u2>a2 a2", None, "u1 a1 u2 a2");
    check("u1 a1<a1 u2>u2", None, "u1 a1 u2");
}

#[test]
fn messages_in_any_order_give_the_same_branch() {
    let mut messages = conversation("u1 a1 a2<a1 u2>a1 a3>u2");
    messages.reverse();
    let ids: Vec<String> = shown_messages(&messages, Some("a1"))
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["u1", "a1", "u2", "a3"]);
}

#[test]
fn the_pager_names_the_neighbours() {
    let messages = conversation("u1 a1 a2<a1 a3<a1");
    let b = shown_branch(&messages, Some("a2"));
    let a = &b.alternatives["a2"];
    assert_eq!(
        (a.prev.as_deref(), a.next.as_deref()),
        (Some("a1"), Some("a3"))
    );
    let b = shown_branch(&messages, Some("a1"));
    let a = &b.alternatives["a1"];
    assert_eq!((a.prev.as_deref(), a.next.as_deref()), (None, Some("a2")));
}

#[test]
fn alternatives_are_what_makes_a_conversation_branched() {
    assert!(!has_alternatives(&conversation("u1 a1 u2>a1 a2! ")));
    assert!(has_alternatives(&conversation("u1 a1 a2<a1")));
}
