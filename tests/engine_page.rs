#![cfg(not(target_arch = "wasm32"))]
//! `engine::page`: which messages a page of the chat holds, on a branch or not, and when a page is
//! read again around a message it does not hold.
//!
//! Messages are written one word each, `<id><seq>` (`c4`: message `c` at seq 4), with `!` for a
//! deleted one and `*` for one that has alternatives.

use std::collections::BTreeMap;

use memoire::engine::branch::Alternatives;
use memoire::engine::model::*;
use memoire::engine::page::{
    focus_outside, half_around, page_after, page_around, page_before, page_of_branch, Page, PageAsk,
};

fn message(word: &str) -> Message {
    let deleted = word.contains('!');
    let word = word.trim_end_matches(['!', '*']);
    let (id, seq) = word.split_at(1);
    Message {
        id: id.into(),
        conversation_id: "c".into(),
        seq: seq.parse().expect("a seq"),
        role: Role::User,
        content: id.into(),
        status: MessageStatus::Complete,
        created_at: 0,
        meta: MessageMeta {
            deleted,
            ..Default::default()
        },
    }
}

fn messages(spec: &str) -> Vec<Message> {
    spec.split_whitespace().map(message).collect()
}

/// The ids `*` marks as having alternatives.
fn alternatives(spec: &str) -> BTreeMap<String, Alternatives> {
    spec.split_whitespace()
        .filter(|w| w.ends_with('*'))
        .map(|w| {
            let alt = Alternatives {
                position: 1,
                count: 2,
                prev: None,
                next: Some("x".into()),
            };
            (w[..1].to_string(), alt)
        })
        .collect()
}

/// `ask`: words `before <seq>`, `after <seq>`, `focus <id>`; none: the last `k`.
fn ask(words: &str, k: usize) -> PageAsk<'_> {
    let mut a = PageAsk {
        k,
        ..Default::default()
    };
    let w: Vec<&str> = words.split_whitespace().collect();
    for pair in w.chunks(2) {
        match pair {
            ["before", n] => a.before = Some(n.parse().unwrap()),
            ["after", n] => a.after = Some(n.parse().unwrap()),
            ["focus", id] => a.focus = Some(*id),
            _ => panic!("bad ask {words:?}"),
        }
    }
    a
}

/// A page: its message ids (the starred ones, those it reports alternatives for), and whether
/// there are older and newer messages.
fn check_page(page: Page, want: &str, older: bool, newer: bool) {
    let ids: Vec<String> = page
        .messages
        .iter()
        .map(|m| {
            let star = if page.alternatives.contains_key(&m.id) {
                "*"
            } else {
                ""
            };
            format!("{}{star}", m.id)
        })
        .collect();
    assert_eq!(ids.join(" "), want, "messages");
    assert_eq!(
        (page.has_older, page.has_newer),
        (older, newer),
        "older, newer"
    );
}

/// A page of a branch (`spec`, root first) as `words` asks, `k` messages.
fn check_branch(spec: &str, words: &str, k: usize, want: &str, older: bool, newer: bool) {
    let all = messages(spec);
    let page = page_of_branch(&all, &alternatives(spec), ask(words, k));
    check_page(page, want, older, newer);
}

const BRANCH: &str = "a1 b3* c4 d7* e9";

#[test]
fn a_page_of_a_branch_goes_by_seq_then_by_focus() {
    check_branch(BRANCH, "", 2, "d* e", true, false);
    check_branch(BRANCH, "", 9, "a b* c d* e", false, false);
    check_branch(BRANCH, "", 0, "", true, false);
    check_branch(BRANCH, "before 7", 2, "b* c", true, true);
    check_branch(BRANCH, "before 4", 2, "a b*", false, true);
    check_branch(BRANCH, "before 5", 2, "b* c", true, true);
    check_branch(BRANCH, "before 1", 2, "", false, true);
    check_branch(BRANCH, "before 99", 2, "d* e", true, false);
    check_branch(BRANCH, "after 3", 2, "c d*", true, true);
    check_branch(BRANCH, "after 0", 2, "a b*", false, true);
    check_branch(BRANCH, "after 7", 2, "d* e", true, false);
    check_branch(BRANCH, "after 9", 2, "d* e", true, false);
    check_branch(BRANCH, "focus b", 2, "b* c", true, true);
    check_branch(BRANCH, "focus a", 3, "a b*", false, true);
    check_branch(BRANCH, "focus a", 4, "a b* c", false, true);
    check_branch(BRANCH, "focus d", 2, "d* e", true, false);
    check_branch(BRANCH, "focus c", 3, "c d* e", true, false);
    check_branch(BRANCH, "focus z", 2, "d* e", true, false);
    check_branch(BRANCH, "before 7 focus a", 2, "b* c", true, true);
    check_branch(BRANCH, "after 1 focus e", 2, "b* c", true, true);
    check_branch("", "", 2, "", false, false);
}

#[test]
fn a_page_without_alternatives_is_what_the_store_read_less_the_deleted() {
    check_page(
        page_before(messages("a1 b2 c3"), None, 2),
        "b c",
        true,
        false,
    );
    check_page(page_before(messages("a1 b2"), None, 2), "a b", false, false);
    check_page(
        page_before(messages("a1 b2 c3"), Some(4), 2),
        "b c",
        true,
        true,
    );
    check_page(
        page_before(messages("a1 b2!"), Some(3), 2),
        "a",
        false,
        true,
    );
    check_page(
        page_before(messages("a1! b2 c3"), None, 2),
        "b c",
        true,
        false,
    );
    check_page(page_after(messages("d4 e5 f6"), 2), "d e", true, true);
    check_page(page_after(messages("d4 e5"), 2), "d e", true, false);
    check_page(page_after(messages("d4 e5! f6"), 2), "d", true, true);
    check_page(page_after(messages(""), 2), "", true, false);
    check_page(
        page_around(messages("a1 b2 c3"), messages("d4 e5"), 2),
        "b c d e",
        true,
        false,
    );
    check_page(
        page_around(messages("b2 c3"), messages("d4 e5 f6"), 2),
        "b c d e",
        false,
        true,
    );
    check_page(
        page_around(messages("c3"), messages(""), 1),
        "c",
        false,
        false,
    );
    check_page(
        page_around(messages("b2! c3"), messages("d4!"), 2),
        "c",
        false,
        false,
    );
}

#[test]
fn a_page_is_read_again_around_a_message_it_does_not_hold() {
    let page = page_before(messages("b2 c3"), None, 2);
    assert_eq!(focus_outside(&page, Some("a")), Some("a"));
    assert_eq!(focus_outside(&page, Some("b")), None);
    assert_eq!(focus_outside(&page, None), None);
    assert_eq!(
        [0, 1, 2, 3, 4, 30, 31].map(half_around),
        [1, 1, 1, 1, 2, 15, 15]
    );
}
