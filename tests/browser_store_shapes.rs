#![cfg(target_arch = "wasm32")]
//! One shape per field, the store's side: each record type pinned byte for byte (the JSON the
//! store hands IndexedDB, `store::idb::to_js`, for a fully populated and a minimal value), records
//! written by older builds read back with every later field at its default, and a fully populated
//! value of each type going model -> record -> model unchanged (a field the store drops fails here).
//! The backup file and the sync documents have the same tests in `engine_shape.rs`.

mod shapes;

use memoire::engine::model::*;
use memoire::store::records::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use shapes::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The record's JSON is exactly `golden`, and reading `golden` back gives the model `m` again.
fn check<M, R>(what: &str, m: &M, record: R, golden: &str, back: impl Fn(R) -> M)
where
    M: PartialEq + std::fmt::Debug,
    R: Serialize + DeserializeOwned,
{
    assert_eq!(
        serde_json::to_string(&record).unwrap(),
        golden,
        "{what}: the record changed"
    );
    let read: R = serde_json::from_str(golden).unwrap();
    assert_eq!(&back(read), m, "{what}: the record does not read back");
}

/// A record written by an older build (`old`) reads as `m`.
fn check_old<M, R>(what: &str, old: &str, m: &M, back: impl Fn(R) -> M)
where
    M: PartialEq + std::fmt::Debug,
    R: DeserializeOwned,
{
    let read: R = serde_json::from_str(old).unwrap();
    assert_eq!(&back(read), m, "{what}: an old record reads differently");
}

#[wasm_bindgen_test]
fn conversation_records_keep_their_shape() {
    let back = |r: ConversationRecord| Conversation::try_from(r).unwrap();
    let c = full_conversation();
    check(
        "conversation full",
        &c,
        ConversationRecord::from(&c),
        GOLDEN_CONVERSATION_FULL,
        back,
    );
    let c = minimal_conversation();
    check(
        "conversation minimal",
        &c,
        ConversationRecord::from(&c),
        GOLDEN_CONVERSATION_MINIMAL,
        back,
    );
    check_old("old", OLD_CONVERSATION, &minimal_conversation(), back);
}

#[wasm_bindgen_test]
fn message_records_keep_their_shape() {
    let back = |r: MessageRecord| Message::try_from(r).unwrap();
    let m = full_message_deleted();
    check(
        "message full",
        &m,
        MessageRecord::from(&m),
        GOLDEN_MESSAGE_FULL,
        back,
    );
    let m = minimal_message();
    check(
        "message minimal",
        &m,
        MessageRecord::from(&m),
        GOLDEN_MESSAGE_MINIMAL,
        back,
    );
    check_old("old", OLD_MESSAGE, &minimal_message(), back);
    // A tool call's status (the tool loop's) is kept in every value; none is written when unset.
    let mut m = full_message_deleted();
    m.meta.tool_calls = ToolStatus::ALL
        .iter()
        .map(|&status| ToolCall {
            id: format!("call_{}", status.as_str()),
            name: "echo".into(),
            arguments: "{}".into(),
            result: None,
            status: Some(status),
        })
        .collect();
    let json = serde_json::to_string(&MessageRecord::from(&m)).unwrap();
    for status in ToolStatus::ALL {
        assert!(
            json.contains(&format!(r#""status":"{}""#, status.as_str())),
            "{json}"
        );
    }
    assert_eq!(back(serde_json::from_str(&json).unwrap()), m);
}

#[wasm_bindgen_test]
fn summary_records_keep_their_shape() {
    let back = |r: SummaryRecord| read::<ConversationSummary, _>(r, "summary").unwrap();
    let s = summary();
    check("summary", &s, SummaryRecord::from(&s), GOLDEN_SUMMARY, back);
}

#[wasm_bindgen_test]
fn entity_records_keep_their_shape() {
    let back = |r: EntityRecord| EntityNode::try_from(r).unwrap();
    let n = full_entity(EntityScope::Conversation("c-full".into()));
    check(
        "entity full",
        &n,
        EntityRecord::from(&n),
        GOLDEN_ENTITY_FULL,
        back,
    );
    let n = minimal_entity(EntityScope::Shared);
    check(
        "entity minimal",
        &n,
        EntityRecord::from(&n),
        GOLDEN_ENTITY_MINIMAL,
        back,
    );
    check_old(
        "old",
        OLD_ENTITY,
        &minimal_entity(EntityScope::Shared),
        back,
    );
}

#[wasm_bindgen_test]
fn project_records_keep_their_shape() {
    let back = |r: ProjectRecord| read::<Project, _>(r, "project").unwrap();
    let p = full_project();
    check(
        "project full",
        &p,
        ProjectRecord::from(&p),
        GOLDEN_PROJECT_FULL,
        back,
    );
    let p = minimal_project();
    check(
        "project minimal",
        &p,
        ProjectRecord::from(&p),
        GOLDEN_PROJECT_MINIMAL,
        back,
    );
    check_old("old", OLD_PROJECT, &minimal_project(), back);
}

#[wasm_bindgen_test]
fn fact_records_keep_their_shape() {
    let back = |r: UserFactRecord| read::<UserFact, _>(r, "user fact").unwrap();
    let f = full_fact();
    check(
        "fact full",
        &f,
        UserFactRecord::from(&f),
        GOLDEN_FACT_FULL,
        back,
    );
    let f = minimal_fact();
    check(
        "fact minimal",
        &f,
        UserFactRecord::from(&f),
        GOLDEN_FACT_MINIMAL,
        back,
    );
}

// ---------------------------------------------------------------- goldens

const GOLDEN_CONVERSATION_FULL: &str = r#"{"id":"c-full","title":"Trip planning","title_is_custom":true,"created_at":1763700000000,"updated_at":1763700060000,"message_count":7,"last_seq":0,"endpoint_profile_id":"profile-1","remote_handle":{"id":"resp_123","endpoint_key":"openai-responses|https://api.example|gpt","covers_up_to_seq":6,"confirmed_at":1763700001000,"dead":true},"last_path":"resumed","overrides":{"recent_messages":4,"summary_every_pairs":3,"context_tokens":4096,"reply_reserve_tokens":512,"max_message_chars":1500,"history_format":"transcript","memory_model":"qwen-mem","model":"qwen-chat","system_prompt":"Answer as a ship's cook.","user_memory":false,"project":"p-galley"},"title_terms":["planning","trip"]}"#;
const GOLDEN_CONVERSATION_MINIMAL: &str = r#"{"id":"c-min","title":"","title_is_custom":false,"created_at":1763700000000,"updated_at":1763700000000,"message_count":0,"last_seq":0,"endpoint_profile_id":null,"remote_handle":null,"last_path":null,"overrides":{"recent_messages":null,"summary_every_pairs":null,"context_tokens":null,"reply_reserve_tokens":null,"max_message_chars":null,"history_format":null,"memory_model":null,"model":null,"system_prompt":null,"user_memory":null}}"#;
const GOLDEN_MESSAGE_FULL: &str = r#"{"id":"m-full","conversation_id":"c-full","seq":5,"role":"assistant","content":"Lyon, then Nice.","status":"error","created_at":1763700005000,"tool_calls":[{"id":"call_1","name":"search","arguments":"{\"q\":\"lyon\"}","result":"found"}],"usage":{"prompt_tokens":120,"completion_tokens":30},"error":"HTTP 500","path":"reinjected","model":"qwen-chat","terms":["lyon","nice","then"],"after":"m-3","replaces":"m-4","deleted":true,"hidden":true,"reasoning":{"text":"Thinking of trains","started_at":1763700004000,"ended_at":1763700004500},"stats":{"tokens":30,"first_token_ms":412,"tokens_per_s":48.5,"cached_tokens":2840},"capped":true,"attachments":[{"kind":"image","name":"boat.png","mime":"image/png","size":2048,"hash":"abababababababababababababababababababababababababababababababab","width":640,"height":480},{"kind":"file","name":"notes.txt","mime":"text/plain","size":11,"hash":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd","text":"hello notes"}],"attachment_hashes":["abababababababababababababababababababababababababababababababab"]}"#;
const GOLDEN_MESSAGE_MINIMAL: &str = r#"{"id":"m-min","conversation_id":"c-full","seq":1,"role":"user","content":"hi","status":"complete","created_at":1763700001000,"tool_calls":[],"usage":null,"error":null,"path":null,"model":null,"terms":["hi"]}"#;
const GOLDEN_SUMMARY: &str = r#"{"conversation_id":"c-full","version":2,"text":"They plan a trip.","covers_up_to_seq":4,"message_count":5,"updated_at":1763700007000}"#;
const GOLDEN_ENTITY_FULL: &str = r#"{"scope":"c-full","id":"e-full","entity_type":"person","name":"Ana","aliases":["Annie","Ann"],"description":"A traveller","properties":{"home":"Lyon","job":"cook"},"property_since":{"home":1763700000003},"past_properties":[{"key":"home","value":"Nice","valid_from":1763700000000,"valid_to":1763700000003}],"relationships":[{"target_id":"e-other","relationship":"sister_of","strength":0.5,"valid_from":1763700000001,"valid_to":1763700000002}],"source_message_ids":["m-3","m-4"],"updated_at":1763700008000}"#;
const GOLDEN_ENTITY_MINIMAL: &str = r#"{"scope":"\u0000shared","id":"e-min","entity_type":"other","name":"Thing","aliases":[],"description":"","properties":{},"property_since":{},"past_properties":[],"relationships":[],"source_message_ids":[],"updated_at":1763700000000}"#;
const GOLDEN_PROJECT_FULL: &str = r#"{"id":"p-galley","name":"Galley","instructions":"Speak of food.","created_at":1763700000000,"updated_at":1763700000100,"deleted":1763700000200}"#;
const GOLDEN_PROJECT_MINIMAL: &str = r#"{"id":"p-min","name":"Min","instructions":"","created_at":1763700000000,"updated_at":1763700000000,"deleted":null}"#;
const GOLDEN_FACT_FULL: &str = r#"{"id":"f-full","text":"I live in Lyon now.","kind":"home","claim_key":"lives_in","source":{"conversation_id":"c-full","message_id":"m-3","said_at":1763700003000},"valid_from":1763700003000,"valid_to":1763700009000,"forgotten":1763700009500,"scope":"p-galley","updated_at":1763700009500}"#;
const GOLDEN_FACT_MINIMAL: &str = r#"{"id":"f-min","text":"I like tea.","kind":"preference","claim_key":"","source":null,"valid_from":1763700000000,"valid_to":null,"forgotten":null,"scope":null,"updated_at":1763700000000}"#;

/// Records as the first builds wrote them, before every later field.
const OLD_CONVERSATION: &str = r#"{"id":"c-min","title":"","title_is_custom":false,"created_at":1763700000000,"updated_at":1763700000000,"message_count":0,"last_seq":0,"endpoint_profile_id":null,"remote_handle":null,"last_path":null}"#;
const OLD_MESSAGE: &str = r#"{"id":"m-min","conversation_id":"c-full","seq":1,"role":"user","content":"hi","status":"complete","created_at":1763700001000}"#;
const OLD_ENTITY: &str = r#"{"scope":"\u0000shared","id":"e-min","entity_type":"other","name":"Thing","aliases":[],"description":"","properties":{},"relationships":[],"source_message_ids":[],"updated_at":1763700000000}"#;
const OLD_PROJECT: &str =
    r#"{"id":"p-min","name":"Min","created_at":1763700000000,"updated_at":1763700000000}"#;
