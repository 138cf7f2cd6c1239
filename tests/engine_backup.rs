#![cfg(not(target_arch = "wasm32"))]
//! Backup format: the v1 format itself (golden), export -> import round trip, skipping and
//! collisions against existing records, the Markdown transcript, and a hostile-input corpus where each
//! case names the error it must produce.

use memoire::engine::backup::{
    check_import, export_json, export_markdown, ConversationBundle, ExistingIds, ExistingMessage,
    ImportError, ImportLimits, ImportPlan,
};
use memoire::engine::format::{date_time, days_from_civil};
use memoire::engine::model::GenerationStats;
use memoire::engine::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, EntityType, HistoryFormat,
    MemoryOverrides, Message, MessageMeta, MessageStatus, PastProperty, Reasoning, Relationship,
    RemoteHandle, Role, ToolCall, TurnPath, Usage,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const T0: i64 = 1_763_700_000_000; // 2025-11-21 04:40 UTC

fn conversation(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: format!("Trip planning {id}"),
        title_is_custom: id.ends_with('1'),
        created_at: T0,
        updated_at: T0 + 60_000,
        message_count: 3,
        endpoint_profile_id: Some("profile-1".into()),
        remote_handle: Some(RemoteHandle {
            id: "resp_123".into(),
            endpoint_key: "openai-responses|https://api.example|gpt".into(),
            covers_up_to_seq: 2,
            confirmed_at: T0 + 1000,
            dead: false,
        }),
        last_path: Some(TurnPath::Resumed),
        memory_overrides: MemoryOverrides {
            recent_messages: Some(4),
            history_format: Some(HistoryFormat::Transcript),
            model: Some("/models/SmolLM2-135M.gguf".into()),
            system_prompt: Some("You answer as a ship's cook would.".into()),
            user_memory: Some(false),
            project: Some("p-galley".into()),
            ..MemoryOverrides::default()
        },
    }
}

fn message(conv: &str, seq: u64, role: Role, status: MessageStatus) -> Message {
    Message {
        id: format!("{conv}-m{seq}"),
        conversation_id: conv.into(),
        seq,
        role,
        content: format!("Message {seq} with \"quotes\", <b>tags</b> and ünïcödé"),
        status,
        created_at: T0 + seq as i64 * 1000,
        meta: MessageMeta {
            tool_calls: if role == Role::Assistant {
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "search".into(),
                    arguments: "{\"q\":\"paris\"}".into(),
                    result: Some("found".into()),
                    status: None,
                }]
            } else {
                vec![]
            },
            usage: (role == Role::Assistant).then_some(Usage {
                prompt_tokens: 120,
                completion_tokens: 30,
            }),
            error: (status == MessageStatus::Error).then(|| "HTTP 500".to_string()),
            path: (role == Role::Assistant).then_some(TurnPath::Reinjected),
            model: (role == Role::Assistant).then(|| "gpt".to_string()),
            // Branch links and tombstones travel with the message (every third one of each kind).
            after: (seq % 3 == 1 && seq > 1).then(|| format!("{conv}-m{}", seq - 1)),
            replaces: (seq % 3 == 2 && seq > 2).then(|| format!("{conv}-m{}", seq - 1)),
            deleted: seq % 3 == 0,
            // Hidden from the model (an import of SillyTavern's `is_system`) travels too.
            hidden: seq % 4 == 3,
            // A reasoning model's thinking travels with its reply.
            reasoning: (role == Role::Assistant && seq % 2 == 0).then(|| Reasoning {
                text: format!("Thinking about {seq}: <b>not</b> an answer"),
                started_at: T0 + seq as i64 * 1000 + 5,
                ended_at: Some(T0 + seq as i64 * 1000 + 2400),
            }),
            stats: (role == Role::Assistant).then_some(GenerationStats {
                tokens: 30,
                first_token_ms: Some(412),
                tokens_per_s: Some(48.5),
                // The cached prompt tokens a server reported travel too (every other reply).
                cached_tokens: (seq % 4 == 2).then_some(2840),
            }),
            attachments: vec![],
            // A reply cut by the reply cap stays marked so.
            capped: role == Role::Assistant && seq % 4 == 0,
        },
    }
}

fn entity(id: &str, scope: EntityScope) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope,
        entity_type: EntityType::Person,
        name: format!("Name {id}"),
        aliases: vec!["Al".into()],
        description: "A traveller".into(),
        properties: BTreeMap::from([("home".to_string(), "Lyon".to_string())]),
        // Validity travels: Lyon since T0 + 3, Nice before it.
        property_since: BTreeMap::from([("home".to_string(), T0 + 3)]),
        past_properties: vec![PastProperty {
            key: "home".into(),
            value: "Nice".into(),
            valid_from: T0,
            valid_to: T0 + 3,
        }],
        relationships: vec![Relationship {
            target_id: "paris".into(),
            relationship: "visits".into(),
            strength: 0.7,
            valid_from: T0,
            valid_to: Some(T0 + 5),
        }],
        source_message_ids: vec!["m1".into()],
        updated_at: T0 + 7,
    }
}

fn bundle(id: &str) -> ConversationBundle {
    let scope = EntityScope::Conversation(id.into());
    ConversationBundle {
        conversation: conversation(id),
        messages: vec![
            message(id, 1, Role::User, MessageStatus::Complete),
            message(id, 2, Role::Assistant, MessageStatus::Complete),
            message(id, 3, Role::User, MessageStatus::Complete),
            message(id, 4, Role::Assistant, MessageStatus::Interrupted),
            message(id, 5, Role::Assistant, MessageStatus::Error),
        ],
        summaries: (1..=3)
            .map(|v| ConversationSummary {
                conversation_id: id.into(),
                version: v,
                text: format!("Summary v{v}"),
                covers_up_to_seq: v as u64,
                message_count: v as u64 * 2,
                updated_at: T0 + v as i64,
            })
            .collect(),
        entities: vec![
            entity(&format!("{id}-alice"), scope.clone()),
            entity(&format!("{id}-bob"), scope),
        ],
    }
}

fn sample() -> (Vec<ConversationBundle>, Vec<EntityNode>) {
    (
        vec![bundle("c1"), bundle("c2")],
        vec![entity("shared-paris", EntityScope::Shared)],
    )
}

fn sample_json() -> String {
    let (bundles, shared) = sample();
    export_json(&bundles, &shared, T0 + 99)
}

/// Check, then plan against `existing`: what the app's import does before writing.
fn validate_import(
    bytes: &[u8],
    existing: &ExistingIds,
    limits: &ImportLimits,
) -> Result<ImportPlan, ImportError> {
    check_import(bytes, limits)?.plan(existing)
}

fn import(bytes: &[u8], existing: &ExistingIds) -> Result<ImportPlan, ImportError> {
    validate_import(bytes, existing, &ImportLimits::default())
}

// ---------------------------------------------------------------------------------------------

#[test]
fn checked_import_names_every_record_it_plans() {
    let checked = check_import(sample_json().as_bytes(), &ImportLimits::default()).unwrap();
    let plan = import(sample_json().as_bytes(), &ExistingIds::default()).unwrap();
    let ids = |v: Vec<&str>| v.into_iter().map(String::from).collect::<Vec<_>>();
    let plan_convs: Vec<&str> = plan.conversations.iter().map(|c| c.id.as_str()).collect();
    let plan_msgs: Vec<&str> = plan.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids(checked.conversation_ids().collect()), ids(plan_convs));
    assert_eq!(ids(checked.message_ids().collect()), ids(plan_msgs));
    let keys: Vec<(EntityScope, String)> = checked
        .entity_keys()
        .map(|(s, id)| (s, id.to_string()))
        .collect();
    let plan_keys: Vec<(EntityScope, String)> = plan
        .entities
        .iter()
        .map(|e| (e.scope.clone(), e.id.clone()))
        .collect();
    assert_eq!(keys, plan_keys);
    assert_eq!(checked.plan(&ExistingIds::default()).unwrap(), plan);
}

#[test]
fn round_trip_reproduces_the_data() {
    let (bundles, shared) = sample();
    let plan = import(sample_json().as_bytes(), &ExistingIds::default()).unwrap();
    let convs: Vec<Conversation> = bundles.iter().map(|b| b.conversation.clone()).collect();
    let msgs: Vec<Message> = bundles.iter().flat_map(|b| b.messages.clone()).collect();
    let sums: Vec<ConversationSummary> = bundles.iter().flat_map(|b| b.summaries.clone()).collect();
    let mut ents: Vec<EntityNode> = bundles.iter().flat_map(|b| b.entities.clone()).collect();
    ents.extend(shared);
    assert_eq!(plan.conversations, convs);
    assert_eq!(plan.messages, msgs);
    assert_eq!(plan.summaries, sums);
    assert_eq!(plan.entities, ents);
    assert_eq!(plan.exported_at, T0 + 99);
    assert_eq!(
        (
            plan.added.conversations,
            plan.added.messages,
            plan.added.summaries,
            plan.added.entities
        ),
        (2, 10, 6, 5)
    );
    assert_eq!(plan.skipped, Default::default());
}

#[test]
fn a_backup_without_property_validity_reads_every_property_as_current() {
    let mut file: Value = serde_json::from_str(&sample_json()).unwrap();
    let mut stripped = 0;
    fn strip(v: &mut Value, n: &mut usize) {
        match v {
            Value::Object(o) => {
                *n += usize::from(o.remove("property_since").is_some());
                o.remove("past_properties");
                o.values_mut().for_each(|v| strip(v, n));
            }
            Value::Array(a) => a.iter_mut().for_each(|v| strip(v, n)),
            _ => {}
        }
    }
    strip(&mut file, &mut stripped);
    assert!(stripped > 0, "the sample carries validity");
    let plan = import(file.to_string().as_bytes(), &ExistingIds::default()).unwrap();
    for e in &plan.entities {
        assert_eq!(e.properties.get("home").map(String::as_str), Some("Lyon"));
        assert!(e.property_since.is_empty() && e.past_properties.is_empty());
    }
}

#[test]
fn export_sorts_messages_and_summaries_and_hoists_shared_entities() {
    let mut b = bundle("c1");
    b.messages.reverse();
    b.summaries.reverse();
    b.entities.push(entity("shared-x", EntityScope::Shared));
    let json: Value = serde_json::from_str(&export_json(
        &[b],
        &[entity("shared-x", EntityScope::Shared)],
        0,
    ))
    .unwrap();
    let seqs: Vec<u64> = json["conversations"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    let versions: Vec<u64> = json["conversations"][0]["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, vec![1, 2, 3]);
    assert_eq!(
        json["conversations"][0]["entities"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(json["shared_entities"].as_array().unwrap().len(), 1);
}

/// The v1 format, field by field. If this test needs changing, the format version must change too.
#[test]
fn format_v1_is_stable() {
    let b = ConversationBundle {
        conversation: Conversation {
            id: "c".into(),
            title: "T".into(),
            title_is_custom: false,
            created_at: 1,
            updated_at: 2,
            message_count: 1,
            endpoint_profile_id: None,
            remote_handle: None,
            last_path: Some(TurnPath::Fresh),
            memory_overrides: MemoryOverrides::default(),
        },
        messages: vec![Message {
            id: "m".into(),
            conversation_id: "c".into(),
            seq: 1,
            role: Role::User,
            content: "hi".into(),
            status: MessageStatus::Complete,
            created_at: 3,
            meta: MessageMeta::default(),
        }],
        summaries: vec![ConversationSummary {
            conversation_id: "c".into(),
            version: 1,
            text: "s".into(),
            covers_up_to_seq: 1,
            message_count: 1,
            updated_at: 4,
        }],
        entities: vec![EntityNode {
            id: "e".into(),
            scope: EntityScope::Conversation("c".into()),
            entity_type: EntityType::Place,
            name: "Paris".into(),
            aliases: vec![],
            description: "d".into(),
            properties: BTreeMap::new(),
            property_since: Default::default(),
            past_properties: Default::default(),
            relationships: vec![Relationship {
                target_id: "f".into(),
                relationship: "near".into(),
                strength: 0.5,
                valid_from: 5,
                valid_to: None,
            }],
            source_message_ids: vec!["m".into()],
            updated_at: 6,
        }],
    };
    let got: Value = serde_json::from_str(&export_json(&[b], &[], 7)).unwrap();
    let expected = json!({
        "format": "memoire-backup", "version": 1, "exported_at": 7,
        "conversations": [{
            "conversation": {
                "id": "c", "title": "T", "title_is_custom": false, "created_at": 1, "updated_at": 2,
                "message_count": 1, "endpoint_profile_id": null, "remote_handle": null,
                "last_path": "fresh",
                "memory_overrides": { "recent_messages": null, "summary_every_pairs": null,
                    "context_tokens": null, "reply_reserve_tokens": null, "max_message_chars": null,
                    "history_format": null }
            },
            "messages": [{ "id": "m", "conversation_id": "c", "seq": 1, "role": "user",
                "content": "hi", "status": "complete", "created_at": 3, "tool_calls": [],
                "usage": null, "error": null, "path": null, "model": null }],
            "summaries": [{ "conversation_id": "c", "version": 1, "text": "s",
                "covers_up_to_seq": 1, "message_count": 1, "updated_at": 4 }],
            "entities": [{ "id": "e", "type": "place", "name": "Paris", "aliases": [],
                "description": "d", "properties": {},
                "relationships": [{ "target_id": "f", "relationship": "near", "strength": 0.5,
                    "valid_from": 5, "valid_to": null }],
                "source_message_ids": ["m"], "updated_at": 6 }]
        }],
        "shared_entities": []
    });
    assert_eq!(got, expected);
}

#[test]
fn streaming_messages_import_as_interrupted() {
    let mut b = bundle("c1");
    b.messages[1].status = MessageStatus::Streaming;
    let plan = import(
        export_json(&[b], &[], 0).as_bytes(),
        &ExistingIds::default(),
    )
    .unwrap();
    assert_eq!(plan.messages[1].status, MessageStatus::Interrupted);
}

#[test]
fn non_finite_strength_exports_as_an_importable_value() {
    let mut b = bundle("c1");
    b.entities[0].relationships[0].strength = f32::NAN;
    b.entities[1].relationships[0].strength = 3.0;
    let plan = import(
        export_json(&[b], &[], 0).as_bytes(),
        &ExistingIds::default(),
    )
    .unwrap();
    assert_eq!(plan.entities[0].relationships[0].strength, 0.0);
    assert_eq!(plan.entities[1].relationships[0].strength, 1.0);
}

// ---------------------------------------------------------------------------------------------
// Existing records: skip what is there, refuse collisions.

fn existing_from(plan: &ImportPlan) -> ExistingIds {
    let mut e = ExistingIds::default();
    for c in &plan.conversations {
        e.conversations.insert(c.id.clone());
    }
    for m in &plan.messages {
        e.messages.insert(
            m.id.clone(),
            ExistingMessage {
                conversation_id: m.conversation_id.clone(),
                seq: m.seq,
            },
        );
    }
    for s in &plan.summaries {
        e.summaries.insert((s.conversation_id.clone(), s.version));
    }
    for n in &plan.entities {
        e.entities.insert(n.id.clone(), n.scope.clone());
    }
    e
}

#[test]
fn importing_twice_skips_everything() {
    let json = sample_json();
    let first = import(json.as_bytes(), &ExistingIds::default()).unwrap();
    let second = import(json.as_bytes(), &existing_from(&first)).unwrap();
    assert_eq!(second.added, Default::default());
    assert_eq!(second.skipped, first.added);
    assert!(second.conversations.is_empty() && second.messages.is_empty());
    assert!(second.summaries.is_empty() && second.entities.is_empty());
}

#[test]
fn importing_a_longer_copy_adds_only_the_new_records() {
    let mut older = bundle("c1");
    older.messages.truncate(3);
    older.summaries.truncate(1);
    let base = import(
        export_json(&[older], &[], 0).as_bytes(),
        &ExistingIds::default(),
    )
    .unwrap();
    let plan = import(
        export_json(&[bundle("c1")], &[], 0).as_bytes(),
        &existing_from(&base),
    )
    .unwrap();
    assert_eq!(plan.added.conversations, 0);
    assert_eq!(plan.skipped.conversations, 1);
    assert_eq!(
        plan.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![4, 5]
    );
    assert_eq!((plan.added.summaries, plan.skipped.summaries), (2, 1));
    assert_eq!((plan.added.entities, plan.skipped.entities), (0, 2));
}

/// Import `sample_json()` over an existing store that `setup` prepared; expect this error.
fn check_existing(setup: impl FnOnce(&mut ExistingIds), matches: fn(&ImportError) -> bool) {
    let mut existing = ExistingIds::default();
    setup(&mut existing);
    let result = import(sample_json().as_bytes(), &existing);
    assert!(
        result.as_ref().is_err_and(matches),
        "unexpected result: {:?}",
        result.map(|p| p.added)
    );
}

fn em(conv: &str, seq: u64) -> ExistingMessage {
    ExistingMessage {
        conversation_id: conv.into(),
        seq,
    }
}

#[test]
fn collisions_with_other_conversations_are_refused() {
    check_existing(
        |e| {
            e.messages.insert("c1-m2".into(), em("other", 2));
        },
        |e| {
            matches!(
                e,
                ImportError::IdCollision {
                    kind: "message",
                    ..
                }
            )
        },
    );
    check_existing(
        |e| {
            e.messages.insert("c2-m1".into(), em("c1", 9));
        },
        |e| {
            matches!(
                e,
                ImportError::IdCollision {
                    kind: "message",
                    ..
                }
            )
        },
    );
    check_existing(
        |e| {
            e.entities
                .insert("c1-alice".into(), EntityScope::Conversation("zz".into()));
        },
        |e| matches!(e, ImportError::IdCollision { kind: "entity", .. }),
    );
    check_existing(
        |e| {
            e.entities.insert(
                "shared-paris".into(),
                EntityScope::Conversation("c1".into()),
            );
        },
        |e| matches!(e, ImportError::IdCollision { kind: "entity", .. }),
    );
    check_existing(
        |e| {
            e.conversations.insert("c1".into());
            e.messages.insert("local-7".into(), em("c1", 3));
        },
        |e| matches!(e, ImportError::SeqCollision { seq: 3, .. }),
    );
}

#[test]
fn a_message_of_a_different_conversation_with_the_same_seq_is_no_collision() {
    let mut existing = ExistingIds::default();
    existing.messages.insert("x-m3".into(), em("x", 3));
    assert_eq!(
        import(sample_json().as_bytes(), &existing)
            .unwrap()
            .added
            .messages,
        10
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile input: each case names the error it must give.

/// Import `bytes` into an empty store with `limits`; the error must match `pattern`.
macro_rules! check {
    ($bytes:expr, with $limits:expr, $pattern:pat) => {{
        let bytes: Vec<u8> = $bytes.into();
        let result = validate_import(&bytes, &ExistingIds::default(), &$limits);
        assert!(
            matches!(result, Err($pattern)),
            "{}: got {:?}",
            stringify!($bytes),
            result.map(|p| p.added)
        );
        // Every error has a message a user can read.
        assert!(result.unwrap_err().to_string().len() > 20);
    }};
    ($bytes:expr, $pattern:pat) => {
        check!($bytes, with ImportLimits::default(), $pattern)
    };
}

/// The sample export with `f` applied to its JSON tree.
fn mutated(f: impl FnOnce(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(&sample_json()).unwrap();
    f(&mut v);
    serde_json::to_string(&v).unwrap()
}

fn msg0(v: &mut Value) -> &mut Value {
    &mut v["conversations"][0]["messages"][0]
}

fn rel0(v: &mut Value) -> &mut Value {
    &mut v["conversations"][0]["entities"][0]["relationships"][0]
}

fn limits(f: impl FnOnce(&mut ImportLimits)) -> ImportLimits {
    let mut l = ImportLimits::default();
    f(&mut l);
    l
}

#[test]
fn hostile_size_encoding_and_syntax() {
    check!(
        vec![b' '; 50 * 1024 * 1024 + 1],
        ImportError::TooLarge { .. }
    );
    check!(sample_json(), with limits(|l| l.max_bytes = 1000), ImportError::TooLarge { limit: 1000, .. });
    check!(b"", ImportError::Empty);
    check!(b" \n\t ", ImportError::Empty);
    check!(b"\xff\xfe{\x00}", ImportError::NotUtf8 { offset: 0 });
    check!(
        [
            b"{\"format\":\"memoire-backup\",\"x\":\"".as_slice(),
            b"\xc3\x28\"}"
        ]
        .concat(),
        ImportError::NotUtf8 { offset: 32 }
    );
    check!("[".repeat(10_000), ImportError::TooDeep { limit: 64 });
    check!("{\"a\":".repeat(10_000), ImportError::TooDeep { .. });
    check!(
        format!("{}{}", "[".repeat(65), "]".repeat(65)),
        ImportError::TooDeep { limit: 64 }
    );
    check!(mutated(|v| msg0(v)["content"] = json!([[[[[[[[[[[[1]]]]]]]]]]]])), with limits(|l| l.max_depth = 12), ImportError::TooDeep { .. });
    check!(
        &sample_json()[..sample_json().len() / 2],
        ImportError::Truncated { .. }
    );
    check!(
        b"{\"format\": \"memoire-backup\", \"version\": 1",
        ImportError::Truncated { .. }
    );
    check!(
        b"{\"format\": \"memoire-backup\",,}",
        ImportError::InvalidJson { .. }
    );
    check!(
        b"{'format': 'memoire-backup'}",
        ImportError::InvalidJson { .. }
    );
    check!(
        sample_json().replacen("0.7", "NaN", 1),
        ImportError::InvalidJson { .. }
    );
    check!(
        sample_json().replacen("0.7", "Infinity", 1),
        ImportError::InvalidJson { .. }
    );
    check!(
        format!("{} trailing", sample_json()),
        ImportError::InvalidJson { .. }
    );
}

/// The depth scan skips string contents in 8-byte steps: brackets and escaped quotes inside a string
/// must not count, and a string ending in an escaped backslash must end there, wherever these fall
/// against the 8-byte steps (`pad` shifts them through every offset).
fn check_depth_scan(pad: usize) {
    let deep = json!([[[[[[[[[[[[[1]]]]]]]]]]]]]); // 13 levels; inside a message (5 deep): 18
    let l = limits(|l| l.max_depth = 16);
    let quoted = format!(
        "{}[[[[[[[[[[[[[[[[[[ \"{{{{{{{{{{{{{{{{{{{{{{{{ \\\"]]",
        "x".repeat(pad)
    );
    let ok = mutated(|v| msg0(v)["content"] = json!(quoted));
    assert!(
        validate_import(ok.as_bytes(), &ExistingIds::default(), &l).is_ok(),
        "pad {pad}"
    );
    // `content` sorts before `extra`: the string ends in `\\`, then the nesting must be counted.
    let ends_in_backslash = format!("{}\\", "x".repeat(pad));
    check!(mutated(|v| { msg0(v)["content"] = json!(ends_in_backslash); msg0(v)["extra"] = deep; }), with l, ImportError::TooDeep { limit: 16 });
}

#[test]
fn depth_scan_skips_strings_at_every_offset() {
    for pad in 0..17 {
        check_depth_scan(pad);
    }
}

#[test]
fn hostile_format_and_version() {
    check!(b"[]", ImportError::NotABackup { .. });
    // serde reads a struct from an array too; a backup is an object.
    check!(
        b"[\"memoire-backup\", 1, 0, [], []]",
        ImportError::NotABackup { .. }
    );
    check!(b"[1, 2", ImportError::Truncated { .. });
    check!(
        b"{\"format\":\"memoire-backup\",\"format\":\"x\",\"version\":1}",
        ImportError::WrongType { .. }
    );
    check!(b"\"memoire-backup\"", ImportError::NotABackup { .. });
    check!(b"42", ImportError::NotABackup { .. });
    check!(b"null", ImportError::NotABackup { .. });
    check!(b"{}", ImportError::NotABackup { .. });
    check!(
        b"{\"format\":\"chatgpt-export\",\"version\":1}",
        ImportError::NotABackup { .. }
    );
    check!(
        b"{\"format\":7,\"version\":1}",
        ImportError::NotABackup { .. }
    );
    check!(
        mutated(|v| v["version"] = json!(2)),
        ImportError::UnsupportedVersion { .. }
    );
    check!(
        mutated(|v| v["version"] = json!("1")),
        ImportError::UnsupportedVersion { .. }
    );
    check!(
        mutated(|v| v["version"] = json!(1.5)),
        ImportError::UnsupportedVersion { .. }
    );
    check!(
        mutated(|v| v["version"] = json!(-1)),
        ImportError::UnsupportedVersion { .. }
    );
    check!(
        mutated(|v| {
            v.as_object_mut().unwrap().remove("version");
        }),
        ImportError::UnsupportedVersion { .. }
    );
}

#[test]
fn hostile_types_and_missing_fields() {
    check!(
        mutated(|v| msg0(v)["seq"] = json!(-1)),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["seq"] = json!("1")),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["seq"] = json!(1.5)),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["seq"] = json!(1e300)),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["role"] = json!("wizard")),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["status"] = json!(null)),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["content"] = json!({"text": "x"})),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| msg0(v)["created_at"] = json!(u64::MAX)),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| v["conversations"] = json!({})),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| v["exported_at"] = json!("yesterday")),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| rel0(v)["strength"] = json!("strong")),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| v["conversations"][0]["entities"][0]["type"] = json!("dragon")),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| v["conversations"][0]["summaries"][0]["version"] = json!(5_000_000_000u64)),
        ImportError::WrongType { .. }
    );
    check!(
        mutated(|v| {
            msg0(v).as_object_mut().unwrap().remove("id");
        }),
        ImportError::MissingField { .. }
    );
    check!(
        mutated(|v| {
            v["conversations"][0]
                .as_object_mut()
                .unwrap()
                .remove("messages");
        }),
        ImportError::MissingField { .. }
    );
    check!(
        mutated(|v| {
            v.as_object_mut().unwrap().remove("conversations");
        }),
        ImportError::MissingField { .. }
    );
}

#[test]
fn hostile_values_ids_and_references() {
    check!(
        mutated(|v| rel0(v)["strength"] = json!(1.5)),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| rel0(v)["strength"] = json!(-0.1)),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| rel0(v)["strength"] = json!(1e39)),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| msg0(v)["id"] = json!("")),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| msg0(v)["id"] = json!("a\u{0}b")),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| v["conversations"][0]["conversation"]["id"] = json!("   ")),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| msg0(v)["conversation_id"] = json!("c2")),
        ImportError::ConversationMismatch { .. }
    );
    check!(
        mutated(|v| v["conversations"][0]["summaries"][0]["conversation_id"] = json!("c2")),
        ImportError::InvalidValue { .. }
    );
    check!(
        mutated(|v| v["conversations"][1]["conversation"]["id"] = json!("c1")),
        ImportError::DuplicateId {
            kind: "conversation",
            ..
        }
    );
    check!(
        mutated(|v| v["conversations"][1]["messages"][0]["id"] = json!("c1-m1")),
        ImportError::DuplicateId {
            kind: "message",
            ..
        }
    );
    check!(
        mutated(|v| v["conversations"][0]["messages"][1]["seq"] = json!(1)),
        ImportError::DuplicateSeq { seq: 1, .. }
    );
    check!(
        mutated(|v| v["conversations"][0]["summaries"][1]["version"] = json!(1)),
        ImportError::DuplicateId {
            kind: "summary version",
            ..
        }
    );
    check!(
        mutated(|v| v["conversations"][1]["entities"][0]["id"] = json!("c1-alice")),
        ImportError::DuplicateId { kind: "entity", .. }
    );
    check!(
        mutated(|v| v["shared_entities"][0]["id"] = json!("c2-bob")),
        ImportError::DuplicateId { kind: "entity", .. }
    );
}

#[test]
fn hostile_string_lengths() {
    check!(
        mutated(|v| msg0(v)["content"] = json!("x".repeat(1_000_001))),
        ImportError::TooLong {
            field: "content",
            ..
        }
    );
    check!(
        mutated(|v| msg0(v)["id"] = json!("i".repeat(257))),
        ImportError::TooLong { field: "id", .. }
    );
    check!(
        mutated(|v| v["conversations"][0]["conversation"]["title"] = json!("t".repeat(4097))),
        ImportError::TooLong { field: "title", .. }
    );
    check!(sample_json(), with limits(|l| l.max_text_chars = 10), ImportError::TooLong { .. });
    check!(
        mutated(|v| v["conversations"][0]["entities"][0]["aliases"] = json!(["a".repeat(5000)])),
        ImportError::TooLong {
            field: "aliases",
            ..
        }
    );
    check!(
        mutated(|v| v["conversations"][0]["entities"][0]["properties"] =
            json!({"k": "v".repeat(1_000_001)})),
        ImportError::TooLong { .. }
    );
}

#[test]
fn benign_variations_are_accepted() {
    let ok = |s: String| import(s.as_bytes(), &ExistingIds::default()).unwrap();
    // Byte order mark, and brackets inside strings do not count as nesting.
    assert_eq!(ok(format!("\u{FEFF}{}", sample_json())).added.messages, 10);
    assert_eq!(
        ok(mutated(|v| msg0(v)["content"] = json!("[{".repeat(5000)))).messages[0]
            .content
            .len(),
        10_000
    );
    assert_eq!(
        ok(mutated(
            |v| msg0(v)["content"] = json!("\\\"[[[[".repeat(100))
        ))
        .added
        .messages,
        10
    );
    // Unknown extra fields are ignored; shared_entities may be absent.
    assert_eq!(
        ok(mutated(|v| {
            v["app"] = json!("memoire 0.1");
            v.as_object_mut().unwrap().remove("shared_entities");
        }))
        .added
        .entities,
        4
    );
    // Limits count characters, not bytes.
    let l = limits(|l| l.max_short_chars = 5);
    let s = mutated(|v| {
        for c in v["conversations"].as_array_mut().unwrap() {
            c["conversation"]["title"] = json!("ééééé");
            c["conversation"]["remote_handle"] = json!(null);
            c["conversation"]["memory_overrides"]["model"] = json!(null);
            for e in c["entities"].as_array_mut().unwrap() {
                e["name"] = json!("n");
                e["aliases"] = json!([]);
                e["properties"] = json!({});
                e["relationships"] = json!([]);
            }
            for m in c["messages"].as_array_mut().unwrap() {
                m["tool_calls"] = json!([]);
                m["model"] = json!(null);
            }
        }
        v["shared_entities"] = json!([]);
    });
    assert!(validate_import(s.as_bytes(), &ExistingIds::default(), &l).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Markdown transcript.

#[test]
fn markdown_transcript() {
    let b = bundle("c1");
    let md = export_markdown(&b.conversation, &b.messages);
    let expected_head = "# Trip planning c1\n\nCreated 2025-11-21 04:40 UTC · Updated 2025-11-21 04:41 UTC · 5 messages\n\n---\n\n**User** · 2025-11-21 04:40 UTC\n\nMessage 1 with \"quotes\", <b>tags</b> and ünïcödé\n\n**Assistant** · 2025-11-21 04:40 UTC\n\n";
    assert!(md.starts_with(expected_head), "{md}");
    assert_eq!(md.matches("**User**").count(), 2);
    assert_eq!(md.matches("**Assistant**").count(), 3);
    assert!(md.contains("> Tool call: `search`"));
    assert!(md.contains("> *This reply was interrupted before it finished.*"));
    assert!(md.contains("> *This reply failed: HTTP 500*"));
    // Order follows seq, not the slice order.
    let mut reversed = b.messages.clone();
    reversed.reverse();
    assert_eq!(export_markdown(&b.conversation, &reversed), md);
    // A multi-line or empty title stays one heading line.
    let mut c = b.conversation.clone();
    c.title = "two\nlines".into();
    assert!(export_markdown(&c, &[]).starts_with("# two lines\n"));
    c.title = " ".into();
    assert!(export_markdown(&c, &[]).starts_with("# Untitled conversation\n"));
}

/// The Markdown export's dates are `format::date_time` in UTC; `days_from_civil` is its inverse.
fn check_date(ms: i64, expected: &str) {
    assert_eq!(format!("{} UTC", date_time(ms)), expected, "for {ms}");
    let day = ms.div_euclid(86_400_000);
    let (y, m, d) = (&expected[0..4], &expected[5..7], &expected[8..10]);
    let parse = |s: &str| s.parse::<i64>().unwrap();
    assert_eq!(
        days_from_civil(parse(y), parse(m), parse(d)),
        day,
        "for {ms}"
    );
}

#[test]
fn utc_dates() {
    check_date(0, "1970-01-01 00:00 UTC");
    check_date(951_782_400_000, "2000-02-29 00:00 UTC");
    check_date(1_709_251_199_000, "2024-02-29 23:59 UTC");
    check_date(-1, "1969-12-31 23:59 UTC");
    check_date(T0, "2025-11-21 04:40 UTC");
}

// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = validate_import(&bytes, &ExistingIds::default(), &ImportLimits::default());
    }

    #[test]
    fn never_panics_on_damaged_exports(cut in 0usize..4000, flips in proptest::collection::vec((0usize..4000, any::<u8>()), 0..4)) {
        let mut bytes = sample_json().into_bytes();
        for (at, b) in flips {
            let n = bytes.len();
            bytes[at % n] = b;
        }
        bytes.truncate(cut.min(bytes.len()) + bytes.len().saturating_sub(4000));
        let _ = validate_import(&bytes, &ExistingIds::default(), &ImportLimits::default());
    }
}

// ---- what an import brings beyond its conversations (issue 28 item 5) ------------------------

/// Plans `bundles` + `shared` against `existing` and compares the preview's reach lines.
fn check_reach(
    bundles: &[ConversationBundle],
    shared: &[EntityNode],
    existing: &ExistingIds,
    expected: &[&str],
) {
    let json = export_json(bundles, shared, T0 + 99);
    let plan = import(json.as_bytes(), existing).expect("a valid backup");
    assert_eq!(plan.reach().lines(), expected);
}

#[test]
fn the_preview_names_shared_memory_system_prompts_models_and_system_messages() {
    let (bundles, shared) = sample();
    let prompt = "“Trip planning c1”: “You answer as a ship's cook would.”, \
                  “Trip planning c2”: “You answer as a ship's cook would.”";
    let model = "“Trip planning c1”: “/models/SmolLM2-135M.gguf”, \
                 “Trip planning c2”: “/models/SmolLM2-135M.gguf”";
    check_reach(
        &bundles,
        &shared,
        &ExistingIds::default(),
        &[
            "Shared memory used in every conversation: 1 entity: “Name shared-paris”",
            &format!("System prompts it sets on its conversations: {prompt}"),
            &format!("Models it sets on its conversations: {model}"),
        ],
    );
    // A system message in the file: kept as text, said so.
    let mut b = bundle("c3");
    b.conversation.memory_overrides = MemoryOverrides::default();
    b.messages[0].role = Role::System;
    check_reach(
        &[b.clone()],
        &[],
        &ExistingIds::default(),
        &["1 system message from the file: kept as text of the conversation, never sent as instructions."],
    );
    // What is already here is not written, so not listed.
    let first = import(sample_json().as_bytes(), &ExistingIds::default()).unwrap();
    check_reach(&bundles, &shared, &existing_from(&first), &[]);
    // Plain conversations bring nothing of the kind.
    b.messages[0].role = Role::User;
    check_reach(&[b], &[], &ExistingIds::default(), &[]);
}

#[test]
fn a_long_reach_is_listed_short() {
    let shared: Vec<EntityNode> = (0..15)
        .map(|i| entity(&format!("s{i:02}"), EntityScope::Shared))
        .collect();
    let json = export_json(&[], &shared, T0);
    let plan = import(json.as_bytes(), &ExistingIds::default()).unwrap();
    let lines = plan.reach().lines();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("Shared memory used in every conversation: 15 entities: “Name s00”"),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(", and 3 more"), "{}", lines[0]);
}

#[test]
fn reasoning_travels_and_an_older_backup_without_it_still_imports() {
    let json = sample_json();
    assert!(json.contains("Thinking about 2: <b>not</b>"), "{json:.400}");
    let mut file: Value = serde_json::from_str(&json).unwrap();
    fn strip(v: &mut Value, n: &mut usize) {
        match v {
            Value::Object(o) => {
                *n += usize::from(o.remove("reasoning").is_some());
                o.values_mut().for_each(|v| strip(v, n));
            }
            Value::Array(a) => a.iter_mut().for_each(|v| strip(v, n)),
            _ => {}
        }
    }
    let mut stripped = 0;
    strip(&mut file, &mut stripped);
    assert!(stripped > 0);
    let plan = import(file.to_string().as_bytes(), &ExistingIds::default()).unwrap();
    assert!(plan.messages.iter().all(|m| m.meta.reasoning.is_none()));
    let with: Vec<_> = import(json.as_bytes(), &ExistingIds::default())
        .unwrap()
        .messages
        .into_iter()
        .filter_map(|m| m.meta.reasoning)
        .collect();
    assert_eq!(with.len(), stripped);
    let too_long = mutated(|v| {
        let m = v["conversations"][0]["messages"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|m| m.get("reasoning").is_some())
            .unwrap();
        m["reasoning"]["text"] = json!("x".repeat(2_000_000));
    });
    assert!(
        import(too_long.as_bytes(), &ExistingIds::default())
            .unwrap_err()
            .to_string()
            .contains("reasoning"),
        "a reasoning over the text limit is refused by name"
    );
}
