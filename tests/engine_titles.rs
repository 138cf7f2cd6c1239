#![cfg(not(target_arch = "wasm32"))]
//! `engine::title`: the title from the first message, what a model's reply becomes as a title
//! (cleaned, capped, garbage refused), when a conversation asks for one, and the small request that
//! asks.

use memoire::engine::model::{Conversation, MemoryOverrides, Role};
use memoire::engine::title::{
    auto_title, auto_title_with, clean_title, title_of_reply, title_request, wants_model_title,
    TITLE_REQUEST_OPENING, UNTITLED,
};

/// The exchange the titles below are about.
const ASKED: &str = "I am allergic to penicillin. How do I write a greeting function in Python? \
    Help with my cello practice, my trip to Lisbon, moving to Berlin, Rust lifetimes.";
const ANSWERED: &str =
    "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic.";

fn check(reply: &str, want: Option<&str>) {
    assert_eq!(
        clean_title(reply, ASKED, ANSWERED).as_deref(),
        want,
        "reply {reply:?}"
    );
}

#[test]
fn made_up_words_are_refused() {
    // What SmolLM2-135M answered for "Hi, I am Marta. I live in Lisbon and I work as a nurse."
    assert_eq!(
        clean_title(
            "Las tres de nuevae",
            "Hi, I am Marta. I live in Lisbon and I work as a nurse.",
            "Hello Marta! Nursing is a wonderful job, and Lisbon is lovely at last light."
        ),
        None
    );
}

#[test]
fn function_words_alone_do_not_ground() {
    assert_eq!(
        clean_title(
            "With the things",
            "What is the best way to go with this?",
            "The best way."
        ),
        None
    );
}

#[test]
fn a_word_of_the_exchange_grounds_in_another_form() {
    check(
        "Penicillin allergy advice",
        Some("Penicillin allergy advice"),
    );
    check("Practising the cello", Some("Practising the cello"));
}

#[test]
fn text_without_spaces_grounds_by_characters() {
    assert_eq!(
        clean_title(
            "青森旅行の計画",
            "来月青森に行きます。おすすめは？",
            "りんごが有名です。"
        )
        .as_deref(),
        Some("青森旅行の計画")
    );
    assert_eq!(clean_title("東京", "来月青森に行きます。", "はい。"), None);
}

#[test]
fn plain_title_is_kept() {
    check(
        "Penicillin allergy advice",
        Some("Penicillin allergy advice"),
    );
}

#[test]
fn quotes_label_and_full_stop_go() {
    check(
        "Title: \"Greeting function in Python\".",
        Some("Greeting function in Python"),
    );
}

#[test]
fn markdown_heading_goes() {
    check("## **Cello practice plan**\n", Some("Cello practice plan"));
}

#[test]
fn first_line_with_text_only() {
    check(
        "\n\n  Trip to Lisbon  \nThis conversation is about…",
        Some("Trip to Lisbon"),
    );
}

#[test]
fn reasoning_is_dropped() {
    check(
        "<think>The user asks about rust</think>\nRust lifetimes",
        Some("Rust lifetimes"),
    );
}

#[test]
fn curly_quotes_go() {
    check("“Moving to Berlin”", Some("Moving to Berlin"));
}

#[test]
fn empty_reply_is_refused() {
    check("   \n ", None);
}

#[test]
fn paragraph_is_refused() {
    check(
        "This conversation is about a user who wants to know how to write a function in Python",
        None,
    );
}

#[test]
fn chatter_is_refused() {
    check("Sure, here is a title", None);
}

#[test]
fn code_is_refused() {
    check("```python\ndef greet():```", None);
}

#[test]
fn punctuation_only_is_refused() {
    check("...", None);
}

#[test]
fn unfinished_reasoning_is_refused() {
    check("<think>Let me think about a good", None);
}

#[test]
fn long_words_are_cut_to_the_title_limit() {
    let t = clean_title(
        "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic",
        ASKED,
        ANSWERED,
    )
    .unwrap();
    assert!(t.chars().count() <= 50, "{t}");
}

fn conversation(title: &str, custom: bool) -> Conversation {
    Conversation {
        id: "c".into(),
        title: title.into(),
        title_is_custom: custom,
        created_at: 0,
        updated_at: 0,
        message_count: 2,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

const FIRST: &str =
    "Here is code: ```python def greet(name): return f'hi {name}'``` why does it fail?";

fn wants(title: &str, custom: bool, replies: usize, temporary: bool) -> bool {
    wants_model_title(&conversation(title, custom), FIRST, replies, temporary)
}

#[test]
fn first_reply_of_auto_titled_conversation_asks() {
    assert!(wants(&auto_title(FIRST), false, 1, false));
}

#[test]
fn user_title_is_never_replaced() {
    assert!(!wants("My greet bug", true, 1, false));
}

#[test]
fn custom_flag_alone_keeps_it() {
    assert!(!wants(&auto_title(FIRST), true, 1, false));
}

#[test]
fn a_model_title_is_not_asked_again() {
    assert!(!wants("Python greet function", false, 1, false));
}

#[test]
fn later_replies_do_not_ask() {
    assert!(!wants(&auto_title(FIRST), false, 2, false));
}

#[test]
fn no_complete_reply_does_not_ask() {
    assert!(!wants(&auto_title(FIRST), false, 0, false));
}

#[test]
fn temporary_chat_never_asks() {
    assert!(!wants(&auto_title(FIRST), false, 1, true));
}

#[test]
fn request_is_small_and_recognisable() {
    let long = "word ".repeat(2000);
    let (prompt, options) = title_request(&long, &long);
    assert!(prompt.system.starts_with(TITLE_REQUEST_OPENING));
    assert_eq!(prompt.messages.len(), 1);
    assert_eq!(prompt.messages[0].role, Role::User);
    assert!(
        prompt.messages[0].content.chars().count() < 1400,
        "quotes are capped"
    );
    assert!(options.max_tokens.is_some_and(|n| n <= 32));
    assert!(options.output.is_none());
}

#[test]
fn a_reply_cut_short_is_no_title() {
    // llama-cpp-python ends a running stream when the user's next message arrives: half a title.
    assert_eq!(
        title_of_reply("Penicillin allergy and", true, ASKED, ANSWERED),
        None
    );
    assert_eq!(
        title_of_reply("Penicillin allergy and Python", false, ASKED, ANSWERED).as_deref(),
        clean_title("Penicillin allergy and Python", ASKED, ANSWERED).as_deref()
    );
    assert!(title_of_reply("Penicillin allergy and Python", false, ASKED, ANSWERED).is_some());
}

// ---------- the title from the first message ----------

fn check_title(input: &str, expected: &str) {
    assert_eq!(auto_title(input), expected, "title of {input:?}");
    assert!(auto_title(input).chars().count() <= 50);
}

#[test]
fn titles() {
    check_title("Hello there", "Hello there");
    check_title("  many   spaces\n\tand lines  ", "many spaces and lines");
    check_title("", UNTITLED);
    check_title(" \n\t ", UNTITLED);
    check_title(
        "Can you help me plan a three-day trip to Lisbon in early October please?",
        "Can you help me plan a three-day trip to Lisbon…",
    );
    check_title(
        "Summarise: the following document, which is long and dull",
        "Summarise: the following document, which is long…",
    );
    check_title(
        "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた",
        "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ…", // after the last 。 in reach
    );
    check_title(
        "这是一个很长的句子，没有空格也没有句号而且一直写下去直到超过五十个字符的限制为止真的很长很长很长还要再写很多很多字才行",
        "这是一个很长的句子，没有空格也没有句号而且一直写下去直到超过五十个字符的限制为止真的很长很长很长还…", // a mark too early to keep half: at the limit
    );
    check_title(&"a".repeat(80), &("a".repeat(49) + "…"));
    check_title(
        "Émile Zola écrivit « J'accuse…! » en 1898 pour défendre Dreyfus",
        "Émile Zola écrivit « J'accuse…! » en 1898 pour…",
    );
    assert_eq!(auto_title_with("one two three", 8), "one two…");
}
