#![cfg(not(target_arch = "wasm32"))]
//! One shape per field: the backup file and the sync documents, pinned byte for byte (goldens of a
//! fully populated and a minimal value of each type, and documents written by older builds read
//! back), and the test that a field of the model reaches every format: a fully populated value of
//! each type goes model -> format -> model unchanged (sync: but for what it keeps local, listed).
//! The store's records have the same tests in `browser_store_shapes.rs`.

mod shapes;

use memoire::engine::backup::{
    check_import, export_with_images, ConversationBundle, ExistingIds, ImportLimits,
};
use memoire::engine::model::*;
use memoire::engine::sync::convert::*;
use memoire::engine::sync::doc::EdgeDoc;
use memoire::engine::sync::{Body, Doc, Hlc};
use shapes::*;

fn at() -> Hlc {
    Hlc::new(T0 + 100, 1, "dev-a")
}

/// `actual` is exactly `golden` (a format that moves a byte fails here).
fn check(what: &str, actual: &str, golden: &str) {
    assert_eq!(actual, golden, "{what}: the format changed");
}

fn doc_json(body: Body) -> String {
    Doc::new(body).to_json(None).to_string()
}

// ---------------------------------------------------------------- backup

fn backup_bundles() -> Vec<ConversationBundle> {
    let mut deleted = full_message_deleted();
    deleted.id = "m-del".into();
    deleted.seq = 6;
    vec![
        ConversationBundle {
            conversation: full_conversation(),
            messages: vec![minimal_message(), full_message(), deleted],
            summaries: vec![summary()],
            entities: vec![
                full_entity(EntityScope::Conversation("c-full".into())),
                minimal_entity(EntityScope::Conversation("c-full".into())),
            ],
        },
        ConversationBundle {
            conversation: minimal_conversation(),
            messages: vec![],
            summaries: vec![],
            entities: vec![],
        },
    ]
}

fn shared_entity() -> EntityNode {
    let mut e = full_entity(EntityScope::Shared);
    e.id = "e-shared".into();
    e
}

fn backup() -> String {
    export_with_images(
        &backup_bundles(),
        &[shared_entity()],
        &[&full_fact(), &minimal_fact()],
        &[&full_project(), &minimal_project()],
        &[],
        T0 + 99,
    )
}

#[test]
fn the_backup_file_is_byte_for_byte_what_it_was() {
    check("backup", &backup(), BACKUP_GOLDEN);
}

#[test]
fn every_model_field_reaches_the_backup_and_comes_back() {
    let plan = check_import(backup().as_bytes(), &ImportLimits::default())
        .unwrap()
        .plan(&ExistingIds::default())
        .unwrap();
    let bundles = backup_bundles();
    let convs: Vec<Conversation> = bundles.iter().map(|b| b.conversation.clone()).collect();
    let msgs: Vec<Message> = bundles.iter().flat_map(|b| b.messages.clone()).collect();
    let mut ents: Vec<EntityNode> = bundles.iter().flat_map(|b| b.entities.clone()).collect();
    ents.push(shared_entity());
    assert_eq!(plan.conversations, convs);
    assert_eq!(plan.messages, msgs);
    assert_eq!(plan.summaries, vec![summary()]);
    assert_eq!(plan.entities, ents);
    // Facts go oldest first.
    assert_eq!(plan.user_facts, vec![minimal_fact(), full_fact()]);
    assert_eq!(plan.projects, vec![full_project(), minimal_project()]);
}

/// A file written before every optional field existed (the first v1 shape) reads with each later
/// field at its default.
#[test]
fn an_old_backup_reads_with_every_later_field_at_its_default() {
    let plan = check_import(OLD_BACKUP.as_bytes(), &ImportLimits::default())
        .unwrap()
        .plan(&ExistingIds::default())
        .unwrap();
    let mut c = minimal_conversation();
    c.title = "Old".into();
    assert_eq!(plan.conversations, vec![c]);
    let mut m = minimal_message();
    m.conversation_id = "c-min".into();
    assert_eq!(plan.messages, vec![m]);
    let mut e = minimal_entity(EntityScope::Shared);
    e.properties.insert("home".into(), "Lyon".into());
    assert_eq!(plan.entities, vec![e]);
    assert!(plan.user_facts.is_empty() && plan.projects.is_empty());
}

// ---------------------------------------------------------------- sync

/// Each sync document of the fully populated and the minimal values, as CouchDB stores it.
fn sync_docs() -> Vec<(&'static str, String)> {
    let (full_e, full_edges) = entity_docs(
        &full_entity(EntityScope::Conversation("c-full".into())),
        &at(),
    );
    let (min_e, _) = entity_docs(&minimal_entity(EntityScope::Shared), &at());
    vec![
        (
            "conversation full",
            doc_json(Body::Conversation(conversation_doc(
                &full_conversation(),
                &at(),
            ))),
        ),
        (
            "conversation minimal",
            doc_json(Body::Conversation(conversation_doc(
                &minimal_conversation(),
                &at(),
            ))),
        ),
        (
            "message full",
            doc_json(Body::Message(message_doc(&full_message(), &at()).unwrap())),
        ),
        (
            "message minimal",
            doc_json(Body::Message(
                message_doc(&minimal_message(), &at()).unwrap(),
            )),
        ),
        ("entity full", doc_json(Body::Entity(full_e))),
        ("entity minimal", doc_json(Body::Entity(min_e))),
        ("edge", doc_json(Body::Edge(full_edges[0].clone()))),
        (
            "summary",
            doc_json(Body::Summary(summary_doc(&summary(), &at()))),
        ),
        (
            "project full",
            doc_json(Body::Project(project_doc(&full_project(), &at()))),
        ),
        (
            "project minimal",
            doc_json(Body::Project(project_doc(&minimal_project(), &at()))),
        ),
        (
            "fact full",
            doc_json(Body::Fact(fact_doc(&full_fact(), &at()))),
        ),
        (
            "fact minimal",
            doc_json(Body::Fact(fact_doc(&minimal_fact(), &at()))),
        ),
    ]
}

#[test]
fn every_sync_document_is_byte_for_byte_what_it_was() {
    let docs = sync_docs();
    assert_eq!(docs.len(), SYNC_GOLDEN.len());
    for ((what, actual), golden) in docs.iter().zip(SYNC_GOLDEN) {
        check(what, actual, golden);
    }
}

/// What sync keeps on each device, never in a document: a conversation's counts, session handle,
/// badge and last change; a message is not sent while deleted (its document is a tombstone).
fn as_synced(c: &Conversation) -> Conversation {
    Conversation {
        updated_at: c.created_at,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        ..c.clone()
    }
}

#[test]
fn every_model_field_reaches_the_sync_documents_and_comes_back() {
    for c in [full_conversation(), minimal_conversation()] {
        assert_eq!(
            new_conversation(&conversation_doc(&c, &at())),
            as_synced(&c)
        );
    }
    for m in [full_message(), minimal_message()] {
        assert_eq!(to_message(&message_doc(&m, &at()).unwrap()), m);
    }
    assert_eq!(message_doc(&full_message_deleted(), &at()), None);
    for n in [
        full_entity(EntityScope::Conversation("c-full".into())),
        full_entity(EntityScope::Shared),
        minimal_entity(EntityScope::Shared),
    ] {
        let (doc, edges) = entity_docs(&n, &at());
        let mut sorted = n.clone();
        // Aliases and sources are sets in a document.
        sorted.aliases.sort();
        sorted.source_message_ids.sort();
        assert_eq!(to_entity(&doc, &edges), sorted);
    }
    assert_eq!(to_summary(&summary_doc(&summary(), &at())), summary());
    for p in [full_project(), minimal_project()] {
        // A project's `updated_at` is its words' stamp in a document, or its deletion if later.
        let stamp = Hlc::new(p.updated_at, 0, "dev-a");
        let updated_at = p.updated_at.max(p.deleted.unwrap_or(0));
        assert_eq!(
            to_project(&project_doc(&p, &stamp)),
            Project { updated_at, ..p }
        );
    }
    for f in [full_fact(), minimal_fact()] {
        assert_eq!(to_fact(&fact_doc(&f, &at())), f);
    }
}

/// A tool call's status (issue 44) travels in the backup and the sync documents as its word, for
/// every status; without one (older data) the formats are the goldens above, and it reads as
/// `Done` with a result, `Interrupted` without.
#[test]
fn a_tool_calls_status_reaches_every_format_and_comes_back() {
    for status in ToolStatus::ALL {
        let mut m = full_message();
        m.meta.tool_calls[0].status = Some(status);
        assert_eq!(to_message(&message_doc(&m, &at()).unwrap()), m, "sync");
        let json = doc_json(Body::Message(message_doc(&m, &at()).unwrap()));
        assert!(
            json.contains(&format!(r#""status":"{}""#, status.as_str())),
            "{json}"
        );
        let bundle = ConversationBundle {
            conversation: full_conversation(),
            messages: vec![m.clone()],
            summaries: vec![],
            entities: vec![],
        };
        let file = export_with_images(&[bundle], &[], &[], &[], &[], T0 + 99);
        let plan = check_import(file.as_bytes(), &ImportLimits::default())
            .unwrap()
            .plan(&ExistingIds::default())
            .unwrap();
        assert_eq!(plan.messages, vec![m], "backup");
    }
    let mut call = full_message().meta.tool_calls[0].clone();
    assert_eq!(call.status(), ToolStatus::Done);
    call.result = None;
    assert_eq!(call.status(), ToolStatus::Interrupted);
}

/// Documents written before each later field existed read with it at its default.
#[test]
fn old_sync_documents_read_with_every_later_field_at_its_default() {
    let read = |json: &str| {
        Doc::from_json(&serde_json::from_str(json).unwrap())
            .unwrap()
            .doc
            .body
    };
    let Body::Message(m) = read(OLD_MESSAGE_DOC) else {
        panic!("not a message")
    };
    let mut expect = minimal_message();
    expect.meta.after = None;
    assert_eq!(to_message(&m), expect);
    let Body::Entity(e) = read(OLD_ENTITY_DOC) else {
        panic!("not an entity")
    };
    let edges: Vec<EdgeDoc> = vec![];
    assert_eq!(to_entity(&e, &edges), minimal_entity(EntityScope::Shared));
    let Body::Project(p) = read(OLD_PROJECT_DOC) else {
        panic!("not a project")
    };
    assert_eq!(to_project(&p), minimal_project());
    let Body::Fact(f) = read(OLD_FACT_DOC) else {
        panic!("not a fact")
    };
    assert_eq!(to_fact(&f), minimal_fact());
}

// ---------------------------------------------------------------- goldens

const BACKUP_GOLDEN: &str = r#"{
  "format": "memoire-backup",
  "version": 1,
  "exported_at": 1763700000099,
  "conversations": [
    {
      "conversation": {
        "id": "c-full",
        "title": "Trip planning",
        "title_is_custom": true,
        "created_at": 1763700000000,
        "updated_at": 1763700060000,
        "message_count": 7,
        "endpoint_profile_id": "profile-1",
        "remote_handle": {
          "id": "resp_123",
          "endpoint_key": "openai-responses|https://api.example|gpt",
          "covers_up_to_seq": 6,
          "confirmed_at": 1763700001000,
          "dead": true
        },
        "last_path": "resumed",
        "memory_overrides": {
          "recent_messages": 4,
          "summary_every_pairs": 3,
          "context_tokens": 4096,
          "reply_reserve_tokens": 512,
          "max_message_chars": 1500,
          "history_format": "transcript",
          "memory_model": "qwen-mem",
          "model": "qwen-chat",
          "system_prompt": "Answer as a ship's cook.",
          "user_memory": false,
          "project": "p-galley"
        }
      },
      "messages": [
        {
          "id": "m-min",
          "conversation_id": "c-full",
          "seq": 1,
          "role": "user",
          "content": "hi",
          "status": "complete",
          "created_at": 1763700001000,
          "tool_calls": [],
          "usage": null,
          "error": null,
          "path": null,
          "model": null
        },
        {
          "id": "m-full",
          "conversation_id": "c-full",
          "seq": 5,
          "role": "assistant",
          "content": "Lyon, then Nice.",
          "status": "error",
          "created_at": 1763700005000,
          "tool_calls": [
            {
              "id": "call_1",
              "name": "search",
              "arguments": "{\"q\":\"lyon\"}",
              "result": "found"
            }
          ],
          "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 30
          },
          "error": "HTTP 500",
          "path": "reinjected",
          "model": "qwen-chat",
          "after": "m-3",
          "replaces": "m-4",
          "hidden": true,
          "reasoning": {
            "text": "Thinking of trains",
            "started_at": 1763700004000,
            "ended_at": 1763700004500
          },
          "stats": {
            "tokens": 30,
            "first_token_ms": 412,
            "tokens_per_s": 48.5,
            "cached_tokens": 2840
          },
          "attachments": [
            {
              "kind": "image",
              "name": "boat.png",
              "mime": "image/png",
              "size": 2048,
              "hash": "abababababababababababababababababababababababababababababababab",
              "width": 640,
              "height": 480
            },
            {
              "kind": "file",
              "name": "notes.txt",
              "mime": "text/plain",
              "size": 11,
              "hash": "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
              "width": 0,
              "height": 0,
              "text": "hello notes"
            }
          ],
          "capped": true
        },
        {
          "id": "m-del",
          "conversation_id": "c-full",
          "seq": 6,
          "role": "assistant",
          "content": "Lyon, then Nice.",
          "status": "error",
          "created_at": 1763700005000,
          "tool_calls": [
            {
              "id": "call_1",
              "name": "search",
              "arguments": "{\"q\":\"lyon\"}",
              "result": "found"
            }
          ],
          "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 30
          },
          "error": "HTTP 500",
          "path": "reinjected",
          "model": "qwen-chat",
          "after": "m-3",
          "replaces": "m-4",
          "deleted": true,
          "hidden": true,
          "reasoning": {
            "text": "Thinking of trains",
            "started_at": 1763700004000,
            "ended_at": 1763700004500
          },
          "stats": {
            "tokens": 30,
            "first_token_ms": 412,
            "tokens_per_s": 48.5,
            "cached_tokens": 2840
          },
          "attachments": [
            {
              "kind": "image",
              "name": "boat.png",
              "mime": "image/png",
              "size": 2048,
              "hash": "abababababababababababababababababababababababababababababababab",
              "width": 640,
              "height": 480
            },
            {
              "kind": "file",
              "name": "notes.txt",
              "mime": "text/plain",
              "size": 11,
              "hash": "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
              "width": 0,
              "height": 0,
              "text": "hello notes"
            }
          ],
          "capped": true
        }
      ],
      "summaries": [
        {
          "conversation_id": "c-full",
          "version": 2,
          "text": "They plan a trip.",
          "covers_up_to_seq": 4,
          "message_count": 5,
          "updated_at": 1763700007000
        }
      ],
      "entities": [
        {
          "id": "e-full",
          "type": "person",
          "name": "Ana",
          "aliases": [
            "Annie",
            "Ann"
          ],
          "description": "A traveller",
          "properties": {
            "home": "Lyon",
            "job": "cook"
          },
          "property_since": {
            "home": 1763700000003
          },
          "past_properties": [
            {
              "key": "home",
              "value": "Nice",
              "valid_from": 1763700000000,
              "valid_to": 1763700000003
            }
          ],
          "relationships": [
            {
              "target_id": "e-other",
              "relationship": "sister_of",
              "strength": 0.5,
              "valid_from": 1763700000001,
              "valid_to": 1763700000002
            }
          ],
          "source_message_ids": [
            "m-3",
            "m-4"
          ],
          "updated_at": 1763700008000
        },
        {
          "id": "e-min",
          "type": "other",
          "name": "Thing",
          "aliases": [],
          "description": "",
          "properties": {},
          "relationships": [],
          "source_message_ids": [],
          "updated_at": 1763700000000
        }
      ]
    },
    {
      "conversation": {
        "id": "c-min",
        "title": "",
        "title_is_custom": false,
        "created_at": 1763700000000,
        "updated_at": 1763700000000,
        "message_count": 0,
        "endpoint_profile_id": null,
        "remote_handle": null,
        "last_path": null,
        "memory_overrides": {
          "recent_messages": null,
          "summary_every_pairs": null,
          "context_tokens": null,
          "reply_reserve_tokens": null,
          "max_message_chars": null,
          "history_format": null
        }
      },
      "messages": [],
      "summaries": [],
      "entities": []
    }
  ],
  "shared_entities": [
    {
      "id": "e-shared",
      "type": "person",
      "name": "Ana",
      "aliases": [
        "Annie",
        "Ann"
      ],
      "description": "A traveller",
      "properties": {
        "home": "Lyon",
        "job": "cook"
      },
      "property_since": {
        "home": 1763700000003
      },
      "past_properties": [
        {
          "key": "home",
          "value": "Nice",
          "valid_from": 1763700000000,
          "valid_to": 1763700000003
        }
      ],
      "relationships": [
        {
          "target_id": "e-other",
          "relationship": "sister_of",
          "strength": 0.5,
          "valid_from": 1763700000001,
          "valid_to": 1763700000002
        }
      ],
      "source_message_ids": [
        "m-3",
        "m-4"
      ],
      "updated_at": 1763700008000
    }
  ],
  "user_facts": [
    {
      "id": "f-min",
      "text": "I like tea.",
      "kind": "preference",
      "claim_key": "",
      "source": null,
      "valid_from": 1763700000000,
      "valid_to": null,
      "forgotten": null,
      "updated_at": 1763700000000
    },
    {
      "id": "f-full",
      "text": "I live in Lyon now.",
      "kind": "home",
      "claim_key": "lives_in",
      "source": {
        "conversation_id": "c-full",
        "message_id": "m-3",
        "said_at": 1763700003000
      },
      "valid_from": 1763700003000,
      "valid_to": 1763700009000,
      "forgotten": 1763700009500,
      "scope": "p-galley",
      "updated_at": 1763700009500
    }
  ],
  "projects": [
    {
      "id": "p-galley",
      "name": "Galley",
      "instructions": "Speak of food.",
      "created_at": 1763700000000,
      "updated_at": 1763700000100,
      "deleted": 1763700000200
    },
    {
      "id": "p-min",
      "name": "Min",
      "instructions": "",
      "created_at": 1763700000000,
      "updated_at": 1763700000000
    }
  ]
}"#;

const SYNC_GOLDEN: [&str; 12] = [
    // conversation full
    r#"{"_id":"c:c-full","created_at":1763700000000,"fields":{"context_tokens":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"4096"},"history_format":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"transcript"},"max_message_chars":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"1500"},"memory_model":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"qwen-mem"},"model":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"qwen-chat"},"project":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"p-galley"},"recent_messages":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"4"},"reply_reserve_tokens":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"512"},"summary_every_pairs":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"3"},"system_prompt":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"Answer as a ship's cook."},"user_memory":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"off"}},"id":"c-full","title":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":{"custom":true,"text":"Trip planning"}},"type":"conversation"}"#,
    // conversation minimal
    r#"{"_id":"c:c-min","created_at":1763700000000,"fields":{"context_tokens":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"history_format":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"max_message_chars":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"memory_model":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"model":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"project":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"recent_messages":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"reply_reserve_tokens":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"summary_every_pairs":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null},"system_prompt":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":null}},"id":"c-min","title":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":{"custom":false,"text":""}},"type":"conversation"}"#,
    // message full
    r#"{"_id":"m:m-full","after":"m-3","at":{"c":1,"d":"dev-a","t":1763700000100},"attachments":[{"hash":"abababababababababababababababababababababababababababababababab","height":480,"kind":"image","mime":"image/png","name":"boat.png","size":2048,"width":640},{"hash":"cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd","height":0,"kind":"file","mime":"text/plain","name":"notes.txt","size":11,"text":"hello notes","width":0}],"cached":2840,"capped":true,"content":"Lyon, then Nice.","conversation_id":"c-full","created_at":1763700005000,"error":"HTTP 500","hidden":true,"id":"m-full","model":"qwen-chat","path":"reinjected","reasoning":{"ended_at":1763700004500,"started_at":1763700004000,"text":"Thinking of trains"},"replaces":"m-4","role":"assistant","seq":5,"stats":[30,412,485],"status":"error","tool_calls":[{"arguments":"{\"q\":\"lyon\"}","id":"call_1","name":"search","result":"found"}],"type":"message","usage":[120,30]}"#,
    // message minimal
    r#"{"_id":"m:m-min","at":{"c":1,"d":"dev-a","t":1763700000100},"content":"hi","conversation_id":"c-full","created_at":1763700001000,"error":null,"id":"m-min","model":null,"path":null,"replaces":null,"role":"user","seq":1,"status":"complete","tool_calls":[],"type":"message","usage":null}"#,
    // entity full
    r#"{"_id":"e:c-full:e-full","aliases":["Ann","Annie"],"description":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"A traveller"},"entity_type":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"person"},"id":"e-full","name":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"Ana"},"past_properties":[{"key":"home","valid_from":1763700000000,"valid_to":1763700000003,"value":"Nice"}],"properties":{"home":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"Lyon"},"job":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"cook"}},"property_since":{"home":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":1763700000003}},"scope":"c-full","sources":["m-3","m-4"],"type":"entity","updated_at":1763700008000}"#,
    // entity minimal
    r#"{"_id":"e:~:e-min","aliases":[],"description":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":""},"entity_type":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"other"},"id":"e-min","name":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":"Thing"},"properties":{},"scope":null,"sources":[],"type":"entity","updated_at":1763700000000}"#,
    // edge
    r#"{"_id":"r:c-full:e-full:sister_of:e-other:1763700000001","label":"sister_of","scope":"c-full","source":"e-full","strength":0.5,"target":"e-other","type":"edge","valid_from":1763700000001,"valid_to":1763700000002}"#,
    // summary
    r#"{"_id":"s:c-full:001763700000100.00000001.dev-a","conversation_id":"c-full","covers_up_to_seq":4,"made":{"c":1,"d":"dev-a","t":1763700000100},"message_count":5,"text":"They plan a trip.","type":"summary","updated_at":1763700007000,"version":2}"#,
    // project full
    r#"{"_id":"p:p-galley","created_at":1763700000000,"deleted":1763700000200,"id":"p-galley","type":"project","words":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":{"instructions":"Speak of food.","name":"Galley"}}}"#,
    // project minimal
    r#"{"_id":"p:p-min","created_at":1763700000000,"id":"p-min","type":"project","words":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":{"instructions":"","name":"Min"}}}"#,
    // fact full
    r#"{"_id":"f:f-full","forgotten":1763700009500,"id":"f-full","source":{"conversation_id":"c-full","message_id":"m-3","said_at":1763700003000},"type":"fact","updated_at":1763700009500,"valid_from":1763700003000,"valid_to":1763700009000,"words":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":{"claim_key":"lives_in","kind":"home","scope":"p-galley","text":"I live in Lyon now."}}}"#,
    // fact minimal
    r#"{"_id":"f:f-min","forgotten":null,"id":"f-min","source":null,"type":"fact","updated_at":1763700000000,"valid_from":1763700000000,"valid_to":null,"words":{"at":{"c":1,"d":"dev-a","t":1763700000100},"v":{"claim_key":"","kind":"preference","text":"I like tea."}}}"#,
];

const OLD_BACKUP: &str = r#"{"format":"memoire-backup","version":1,"exported_at":1,"conversations":[{"conversation":{"id":"c-min","title":"Old","title_is_custom":false,"created_at":1763700000000,"updated_at":1763700000000,"message_count":0,"endpoint_profile_id":null,"remote_handle":null,"last_path":null,"memory_overrides":{"recent_messages":null,"summary_every_pairs":null,"context_tokens":null,"reply_reserve_tokens":null,"max_message_chars":null,"history_format":null}},"messages":[{"id":"m-min","conversation_id":"c-min","seq":1,"role":"user","content":"hi","status":"complete","created_at":1763700001000,"tool_calls":[],"usage":null,"error":null,"path":null,"model":null}],"summaries":[],"entities":[]}],"shared_entities":[{"id":"e-min","type":"other","name":"Thing","aliases":[],"description":"","properties":{"home":"Lyon"},"relationships":[],"source_message_ids":[],"updated_at":1763700000000}]}"#;

const OLD_MESSAGE_DOC: &str = r#"{"_id":"m:m-min","_rev":"1-a","type":"message","id":"m-min","conversation_id":"c-full","seq":1,"role":"user","content":"hi","status":"complete","created_at":1763700001000,"at":{"t":1763700000100,"c":1,"d":"dev-a"}}"#;

const OLD_ENTITY_DOC: &str = r#"{"_id":"e:~:e-min","_rev":"1-a","type":"entity","id":"e-min","scope":null,"entity_type":{"v":"other","at":{"t":1763700000100,"c":1,"d":"dev-a"}},"name":{"v":"Thing","at":{"t":1763700000100,"c":1,"d":"dev-a"}},"description":{"v":"","at":{"t":1763700000100,"c":1,"d":"dev-a"}},"aliases":[],"properties":{},"sources":[],"updated_at":1763700000000}"#;

const OLD_PROJECT_DOC: &str = r#"{"_id":"p:p-min","_rev":"1-a","type":"project","id":"p-min","words":{"v":{"name":"Min","instructions":""},"at":{"t":1763700000000,"c":0,"d":"dev-a"}},"created_at":1763700000000}"#;

const OLD_FACT_DOC: &str = r#"{"_id":"f:f-min","_rev":"1-a","type":"fact","id":"f-min","words":{"v":{"text":"I like tea.","kind":"preference","claim_key":""},"at":{"t":1763700000100,"c":1,"d":"dev-a"}},"source":null,"valid_from":1763700000000,"valid_to":null,"forgotten":null,"updated_at":1763700000000}"#;
