//! The cross-tab wire (`engine::tabs`): every change survives the trip; a newer build's message
//! (a kind this build does not know, a later version, extra fields) is read as far as it can be, and
//! never misread; garbage is garbage.

use memoire::engine::model::{Conversation, Message, MessageMeta, MessageStatus, Role};
use memoire::engine::settings::Settings;
use memoire::engine::tabs::{decode, encode, Change, Heard, WIRE_VERSION};

const T0: i64 = 1_763_700_000_000;

fn conversation(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: "Trip to Porto".into(),
        title_is_custom: false,
        created_at: T0,
        updated_at: T0 + 1,
        message_count: 2,
        endpoint_profile_id: Some("p".into()),
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

fn message(conv: &str, status: MessageStatus) -> Message {
    let mut m = Message::from_user(
        "m1".into(),
        conv,
        "héllo <b>x</b>".into(),
        T0,
        MessageMeta::default(),
    );
    m.role = Role::Assistant;
    m.status = status;
    m.seq = 7;
    m
}

/// Encodes `change` and checks that it decodes to itself.
fn check_round_trip(change: Change) {
    let text = encode(&change);
    assert_eq!(decode(&text), Heard::Change(change), "{text}");
}

/// Checks what a wire text (as another build may write it) is heard as.
fn check_heard(text: &str, heard: Heard) {
    assert_eq!(decode(text), heard, "{text}");
}

fn unreadable(conversation: Option<&str>) -> Heard {
    Heard::Unreadable {
        conversation: conversation.map(str::to_string),
    }
}

#[test]
fn every_change_survives_the_trip() {
    check_round_trip(Change::Conversation(conversation("c1")));
    check_round_trip(Change::Conversations(vec![
        conversation("c1"),
        conversation("c2"),
    ]));
    check_round_trip(Change::ConversationRemoved("c1".into()));
    check_round_trip(Change::MessageAdded(message("c1", MessageStatus::Complete)));
    check_round_trip(Change::MessageProgress(message(
        "c1",
        MessageStatus::Streaming,
    )));
    check_round_trip(Change::MessagesCleared("c1".into()));
    check_round_trip(Change::BranchChanged("c1".into()));
    check_round_trip(Change::MemoryUpdating {
        conversation_id: "c1".into(),
        running: true,
    });
    check_round_trip(Change::MemoryChanged("c1".into()));
    check_round_trip(Change::Settings(Box::new(Settings::builtin())));
    check_round_trip(Change::UserFacts);
    check_round_trip(Change::Projects);
    let mut in_project = conversation("c3");
    in_project.memory_overrides.project = Some("p1".into());
    check_round_trip(Change::Conversation(in_project));
}

/// Projects on the wire: their own kind, about no conversation (an older build hears it as
/// unreadable and reads nothing wrong), and a conversation's project an optional field (a
/// version-1 conversation without it reads as in no project; one with it is read by an older
/// build that ignores the field).
#[test]
fn projects_travel_as_a_kind_of_their_own_and_an_optional_field() {
    assert_eq!(encode(&Change::Projects), r#"{"v":1,"change":"projects"}"#);
    let mut c = conversation("c1");
    let text = encode(&Change::Conversation(c.clone()));
    assert!(!text.contains("\"project\""), "{text}");
    c.memory_overrides.project = Some("p1".into());
    let text = encode(&Change::Conversation(c.clone()));
    assert!(text.contains(r#""project":"p1""#), "{text}");
    check_heard(
        &text.replace(r#","project":"p1""#, ""),
        Heard::Change(Change::Conversation(conversation("c1"))),
    );
}

#[test]
fn the_envelope_names_the_conversation_outside_the_change() {
    let text = encode(&Change::MessageAdded(message(
        "c9",
        MessageStatus::Complete,
    )));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["v"], WIRE_VERSION);
    assert_eq!(v["conversation"], "c9");
    assert!(v["change"]["message_added"].is_object(), "{text}");
    let settings = encode(&Change::Settings(Box::new(Settings::builtin())));
    assert!(!settings.contains("\"conversation\""), "{settings}");
}

/// What version 1 writes, frozen: a later build must still read it, and this one does.
#[test]
fn a_version_1_message_reads() {
    check_heard(
        r#"{"v":1,"conversation":"c1","change":{"branch_changed":"c1"}}"#,
        Heard::Change(Change::BranchChanged("c1".into())),
    );
    check_heard(
        r#"{"v":1,"conversation":"c1","change":{"memory_updating":{"conversation_id":"c1","running":false}}}"#,
        Heard::Change(Change::MemoryUpdating {
            conversation_id: "c1".into(),
            running: false,
        }),
    );
}

#[test]
fn a_newer_builds_message_is_read_as_far_as_it_can_be() {
    // A field added later, in the envelope and in the change: ignored.
    check_heard(
        r#"{"v":1,"sent_at":5,"conversation":"c1","change":{"messages_cleared":"c1"}}"#,
        Heard::Change(Change::MessagesCleared("c1".into())),
    );
    let mut added = serde_json::to_value(message("c1", MessageStatus::Complete)).unwrap();
    added["reactions"] = serde_json::json!(["👍"]);
    let text =
        serde_json::json!({"v": 1, "conversation": "c1", "change": {"message_added": added}});
    check_heard(
        &text.to_string(),
        Heard::Change(Change::MessageAdded(message("c1", MessageStatus::Complete))),
    );
    // A kind added later: what it is about is read again from the store.
    check_heard(
        r#"{"v":1,"conversation":"c1","change":{"attachment_added":{"id":"a1"}}}"#,
        unreadable(Some("c1")),
    );
    check_heard(r#"{"v":1,"change":"projects_changed"}"#, unreadable(None));
    // A shape changed in a later version: never misread, even when it would parse.
    check_heard(
        r#"{"v":2,"conversation":"c1","change":{"branch_changed":"c1"}}"#,
        unreadable(Some("c1")),
    );
    // A known kind whose data this build cannot read.
    check_heard(
        r#"{"v":1,"conversation":"c1","change":{"message_added":{"id":3}}}"#,
        unreadable(Some("c1")),
    );
}

#[test]
fn garbage_is_garbage() {
    for text in [
        "",
        "null",
        "[]",
        "{}",
        "not json",
        r#"{"v":"one","change":{}}"#,
        r#"{"change":{}}"#,
    ] {
        check_heard(text, Heard::Garbage);
    }
}

/// A reply cut by the cap, with the cached prompt tokens its server reported, travels as optional
/// fields of the message's meta: this build reads them back; a message without them (a tab one
/// version older wrote it) reads as not capped and nothing cached; and what this build writes is a
/// version-1 message an older tab reads by ignoring the fields it does not know (checked here as
/// the older build's message type: the same without them).
#[test]
fn a_capped_reply_and_its_cached_count_travel_as_optional_fields() {
    use memoire::engine::model::GenerationStats;
    let mut capped = message("c1", MessageStatus::Complete);
    capped.meta.capped = true;
    capped.meta.stats = Some(GenerationStats {
        tokens: 312,
        first_token_ms: Some(420),
        tokens_per_s: None,
        cached_tokens: Some(2840),
    });
    check_round_trip(Change::MessageProgress(capped.clone()));
    let text = encode(&Change::MessageProgress(capped));
    assert!(
        text.contains(r#""capped":true"#) && text.contains(r#""cached_tokens":2840"#),
        "{text}"
    );
    assert!(text.starts_with(r#"{"v":1,"#), "{text}");
    let older = text
        .replace(r#","capped":true"#, "")
        .replace(r#","cached_tokens":2840"#, "");
    let Heard::Change(Change::MessageProgress(m)) = decode(&older) else {
        panic!("{older}")
    };
    assert!(!m.meta.capped);
    assert_eq!(m.meta.stats.unwrap().cached_tokens, None);
    // Nothing new is written for a reply that was not capped.
    let plain = encode(&Change::MessageAdded(message(
        "c1",
        MessageStatus::Complete,
    )));
    assert!(
        !plain.contains("capped") && !plain.contains("cached"),
        "{plain}"
    );
}
