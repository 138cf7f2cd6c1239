#![cfg(target_arch = "wasm32")]
//! Browser tests of the IndexedDB store (headless Chromium). Every test uses its own database
//! (counter + timestamp) and deletes it at the end.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use memoire::engine::model::*;
use memoire::store::{ConversationPatch, MigrationRecord, Store, StoreError};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod support;
use support::{finish, fresh, fresh_name, seed, small, too_big};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen(inline_js = r#"
export async function read_migrations(name) {
  const db = await new Promise((res, rej) => {
    const r = indexedDB.open(name);
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  const range = IDBKeyRange.bound("migration:", "migration;");
  const all = await new Promise((res, rej) => {
    const r = db.transaction(["meta"], "readonly").objectStore("meta").getAll(range);
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  db.close();
  return JSON.stringify(all);
}
export async function put_raw_message(name, json) {
  const db = await new Promise((res, rej) => {
    const r = indexedDB.open(name);
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  await new Promise((res, rej) => {
    const tx = db.transaction(["messages"], "readwrite");
    tx.objectStore("messages").put(JSON.parse(json));
    tx.oncomplete = () => res();
    tx.onerror = () => rej(tx.error);
  });
  db.close();
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    async fn read_migrations(name: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch)]
    async fn put_raw_message(name: &str, json: &str) -> Result<JsValue, JsValue>;
}

/// The migrations the store recorded in `meta`, read with plain IndexedDB calls.
async fn migration_log(name: &str) -> Vec<MigrationRecord> {
    let text = read_migrations(name).await.unwrap().as_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

fn conv(id: &str, updated_at: Millis) -> Conversation {
    Conversation {
        id: id.into(),
        title: format!("title {id}"),
        title_is_custom: false,
        created_at: updated_at,
        updated_at,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

fn msg(conv: &str, id: &str, role: Role, content: &str, at: Millis) -> Message {
    Message {
        id: id.into(),
        conversation_id: conv.into(),
        seq: 0,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: at,
        meta: MessageMeta::default(),
    }
}

/// How many messages a conversation holds.
async fn count(store: &Store, c: &str) -> u64 {
    store.load_all_messages(c).await.unwrap().len() as u64
}

async fn seqs(store: &Store, c: &str) -> Vec<u64> {
    store
        .load_last(c, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|m| m.seq)
        .collect()
}

// ------------------------------------------------------------------ conversations

#[wasm_bindgen_test]
async fn conversations_create_get_list_rename_update() {
    let s = fresh("conv").await;
    for (id, at) in [("a", 10), ("b", 30), ("c", 20)] {
        s.create_conversation(&conv(id, at)).await.unwrap();
    }
    let ids: Vec<String> = s
        .list_conversations(10)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["b", "c", "a"], "most recent first");
    assert_eq!(s.list_conversations(2).await.unwrap().len(), 2, "limit");
    assert_eq!(s.get_conversation("a").await.unwrap(), Some(conv("a", 10)));
    assert_eq!(s.get_conversation("zz").await.unwrap(), None);
    assert!(matches!(
        s.create_conversation(&conv("a", 99)).await,
        Err(StoreError::AlreadyExists { .. })
    ));
    assert_eq!(
        s.get_conversation("a").await.unwrap(),
        Some(conv("a", 10)),
        "not overwritten"
    );

    let renamed = s.rename_conversation("a", "My trip", 40).await.unwrap();
    assert_eq!(
        (
            renamed.title.as_str(),
            renamed.title_is_custom,
            renamed.updated_at
        ),
        ("My trip", true, 40)
    );
    assert_eq!(
        s.list_conversations(1).await.unwrap()[0].id,
        "a",
        "rename bumps recency"
    );

    let handle = RemoteHandle {
        id: "resp_1".into(),
        endpoint_key: "openai-responses|http://x|m".into(),
        covers_up_to_seq: 4,
        confirmed_at: 50,
        dead: false,
    };
    let overrides = MemoryOverrides {
        recent_messages: Some(4),
        history_format: Some(HistoryFormat::Transcript),
        ..Default::default()
    };
    let patch = ConversationPatch {
        endpoint_profile_id: Some(Some("p1".into())),
        remote_handle: Some(Some(handle.clone())),
        last_path: Some(Some(TurnPath::Reinjected)),
        memory_overrides: Some(overrides.clone()),
        updated_at: Some(5),
        ..Default::default()
    };
    s.update_conversation("b", &patch).await.unwrap();
    let b = s.get_conversation("b").await.unwrap().unwrap();
    assert_eq!(b.remote_handle, Some(handle));
    assert_eq!(b.last_path, Some(TurnPath::Reinjected));
    assert_eq!(b.memory_overrides, overrides);
    assert_eq!(b.endpoint_profile_id.as_deref(), Some("p1"));
    assert_eq!(b.updated_at, 30, "updated_at never moves backwards");
    assert!(matches!(
        s.update_conversation("nope", &patch).await,
        Err(StoreError::NotFound { .. })
    ));
    finish(s).await;
}

// ------------------------------------------------------------------ messages

#[wasm_bindgen_test]
async fn append_assigns_gap_free_seqs_and_updates_the_conversation() {
    let s = fresh("append").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    for i in 0..5 {
        let out = s
            .append_message(&msg("c", &format!("m{i}"), Role::User, "hi", 100 + i))
            .await
            .unwrap();
        assert!(out.inserted);
        assert_eq!(out.message.seq, i as u64 + 1);
    }
    assert_eq!(seqs(&s, "c").await, [1, 2, 3, 4, 5]);
    let c = s.get_conversation("c").await.unwrap().unwrap();
    assert_eq!((c.message_count, c.updated_at), (5, 104));
    assert_eq!(count(&s, "c").await, 5);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn append_is_idempotent() {
    let s = fresh("idem").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    let m = msg("c", "same", Role::User, "first", 5);
    let first = s.append_message(&m).await.unwrap();
    let mut again = m.clone();
    again.content = "changed".into();
    let second = s.append_message(&again).await.unwrap();
    assert!(first.inserted && !second.inserted);
    assert_eq!(second.message.content, "first", "the stored message wins");
    assert_eq!(count(&s, "c").await, 1);
    assert_eq!(
        s.get_conversation("c")
            .await
            .unwrap()
            .unwrap()
            .message_count,
        1
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn append_to_a_missing_conversation_writes_nothing() {
    let s = fresh("orphan").await;
    let r = s
        .append_message(&msg("ghost", "m1", Role::User, "x", 1))
        .await;
    assert!(
        matches!(
            r,
            Err(StoreError::NotFound {
                what: "conversation",
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(s.get_message("m1").await.unwrap(), None);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn message_round_trips_every_field() {
    let s = fresh("roundtrip").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    let mut m = full_msg("c", "full", 9);
    let stored = s.append_message(&m).await.unwrap().message;
    assert_eq!(s.get_message("full").await.unwrap(), Some(stored.clone()));
    m.seq = 1;
    assert_eq!(stored, m);
    finish(s).await;
}

/// A message with every optional field set (what the bulk path must not lose).
fn full_msg(conv: &str, id: &str, at: Millis) -> Message {
    let mut m = msg(
        conv,
        id,
        Role::Assistant,
        "ünïcødé ✓ \u{0} \"quoted\"\n",
        at,
    );
    m.status = MessageStatus::Error;
    m.meta = MessageMeta {
        tool_calls: vec![ToolCall {
            id: "t".into(),
            name: "search".into(),
            arguments: "{\"q\":1}".into(),
            result: Some("ok".into()),
            status: None,
        }],
        usage: Some(Usage {
            prompt_tokens: 12,
            completion_tokens: 34,
        }),
        error: Some("boom".into()),
        path: Some(TurnPath::Resumed),
        model: Some("m".into()),
        after: Some("earlier".into()),
        replaces: Some("older".into()),
        deleted: true,
        hidden: true,
        reasoning: Some(Reasoning {
            text: "thought ✓ <b>".into(),
            started_at: 5,
            ended_at: Some(9),
        }),
        stats: Some(GenerationStats {
            tokens: 34,
            first_token_ms: Some(120),
            tokens_per_s: Some(48.5),
            cached_tokens: Some(2840),
        }),
        capped: true,
        attachments: vec![
            Attachment {
                kind: AttachmentKind::Image,
                name: "shot.png".into(),
                mime: "image/png".into(),
                size: 1234,
                hash: "ab".repeat(32),
                width: 640,
                height: 480,
                text: String::new(),
            },
            Attachment {
                kind: AttachmentKind::File,
                name: "notes.md".into(),
                mime: "text/markdown".into(),
                size: 11,
                hash: "cd".repeat(32),
                width: 0,
                height: 0,
                text: "# ünïcødé\n".into(),
            },
        ],
    };
    m
}

#[wasm_bindgen_test]
async fn bulk_import_round_trips_every_field_across_batches() {
    let s = fresh("bulk-fields").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    // Many batches of the bulk path (512 per JSON text), rich messages around batch boundaries.
    let rich = [0usize, 511, 512, 8191, 8192, 8199];
    let batch: Vec<Message> = (0..8200)
        .map(|i| match i {
            _ if rich.contains(&i) => full_msg("c", &format!("b{i}"), i as Millis),
            8198 => Message {
                status: MessageStatus::Streaming,
                ..msg("c", "b8198", Role::Assistant, "partial", 8198)
            },
            _ => msg("c", &format!("b{i}"), Role::User, "x", i as Millis),
        })
        .collect();
    let batch: Vec<Message> = batch
        .into_iter()
        .zip(1..)
        .map(|(m, seq)| Message { seq, ..m })
        .collect();
    seed(&s, batch.clone()).await;
    for i in rich.into_iter().chain([1, 8198]) {
        let want = batch[i].clone();
        assert_eq!(s.get_message(&want.id).await.unwrap(), Some(want));
    }
    // The streaming one is found by crash recovery (its sparse index entry was written).
    assert_eq!(s.mark_interrupted_streams().await.unwrap(), 1);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn streaming_content_updates_in_place() {
    let s = fresh("stream").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    let mut m = msg("c", "r", Role::Assistant, "", 2);
    m.status = MessageStatus::Streaming;
    s.append_message(&m).await.unwrap();
    for (content, status) in [
        ("Hel", MessageStatus::Streaming),
        ("Hello", MessageStatus::Streaming),
        ("Hello!", MessageStatus::Complete),
    ] {
        s.update_message("r", content, status, &MessageMeta::default())
            .await
            .unwrap();
        let got = s.get_message("r").await.unwrap().unwrap();
        assert_eq!(
            (got.content.as_str(), got.status, got.seq),
            (content, status, 1)
        );
    }
    assert_eq!(count(&s, "c").await, 1);
    assert!(matches!(
        s.update_message(
            "nope",
            "x",
            MessageStatus::Complete,
            &MessageMeta::default()
        )
        .await,
        Err(StoreError::NotFound {
            what: "message",
            ..
        })
    ));
    finish(s).await;
}

#[wasm_bindgen_test]
async fn interrupted_streams_are_marked_after_a_crash() {
    let s = fresh("interrupt").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    let mut streaming = msg("c", "s1", Role::Assistant, "partial rep", 2);
    streaming.status = MessageStatus::Streaming;
    // Its tool calls: waiting and running ones may or may not have run; a done one stays done.
    let call = |id: &str, status: ToolStatus, result: Option<&str>| ToolCall {
        id: id.into(),
        name: "search_conversations".into(),
        arguments: "{}".into(),
        result: result.map(str::to_string),
        status: Some(status),
    };
    streaming.meta.tool_calls = vec![
        call("t1", ToolStatus::Done, Some("found")),
        call("t2", ToolStatus::Waiting, None),
        call("t3", ToolStatus::Running, None),
    ];
    s.append_message(&msg("c", "u1", Role::User, "q", 1))
        .await
        .unwrap();
    s.append_message(&streaming).await.unwrap();
    let mut finished = msg("c", "s2", Role::Assistant, "", 3);
    finished.status = MessageStatus::Streaming;
    s.append_message(&finished).await.unwrap();
    s.update_message(
        "s2",
        "done",
        MessageStatus::Complete,
        &MessageMeta::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        s.mark_interrupted_streams().await.unwrap(),
        1,
        "only the stream left open"
    );
    assert_eq!(
        s.get_message("s2").await.unwrap().unwrap().status,
        MessageStatus::Complete
    );
    let got = s.get_message("s1").await.unwrap().unwrap();
    assert_eq!(
        (got.status, got.content.as_str()),
        (MessageStatus::Interrupted, "partial rep")
    );
    let statuses: Vec<_> = got.meta.tool_calls.iter().map(|c| c.status).collect();
    let interrupted = Some(ToolStatus::Interrupted);
    assert_eq!(
        statuses,
        [Some(ToolStatus::Done), interrupted, interrupted],
        "never run again"
    );
    assert_eq!(got.meta.tool_calls[0].result.as_deref(), Some("found"));
    assert_eq!(
        s.get_message("u1").await.unwrap().unwrap().status,
        MessageStatus::Complete
    );
    assert_eq!(s.mark_interrupted_streams().await.unwrap(), 0);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn bounded_reads_last_before_since_count() {
    let s = fresh("reads").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    s.create_conversation(&conv("other", 1)).await.unwrap();
    for i in 1..=30 {
        s.append_message(&msg("c", &format!("c{i}"), Role::User, &format!("n{i}"), i))
            .await
            .unwrap();
        if i % 3 == 0 {
            s.append_message(&msg("other", &format!("o{i}"), Role::User, "o", i))
                .await
                .unwrap();
        }
    }
    let range = |a: u64, b: u64| (a..=b).collect::<Vec<u64>>();
    let seqs_of = |v: Vec<Message>| v.into_iter().map(|m| m.seq).collect::<Vec<u64>>();
    let check = |got: Vec<u64>, want: Vec<u64>, what: &str| assert_eq!(got, want, "{what}");
    check(
        seqs_of(s.load_last("c", 5).await.unwrap()),
        range(26, 30),
        "last 5",
    );
    check(
        seqs_of(s.load_last("c", 100).await.unwrap()),
        range(1, 30),
        "last more than exist",
    );
    check(
        seqs_of(s.load_last("c", 0).await.unwrap()),
        vec![],
        "last 0",
    );
    check(
        seqs_of(s.load_last("nobody", 5).await.unwrap()),
        vec![],
        "unknown conversation",
    );
    check(
        seqs_of(s.load_before("c", 26, 5).await.unwrap()),
        range(21, 25),
        "page before 26",
    );
    check(
        seqs_of(s.load_before("c", 3, 5).await.unwrap()),
        range(1, 2),
        "short first page",
    );
    check(
        seqs_of(s.load_before("c", 1, 5).await.unwrap()),
        vec![],
        "nothing before 1",
    );
    check(
        seqs_of(s.load_since("c", 27).await.unwrap()),
        range(28, 30),
        "since 27",
    );
    check(
        seqs_of(s.load_since("c", 0).await.unwrap()),
        range(1, 30),
        "since 0",
    );
    check(
        seqs_of(s.load_since("c", 30).await.unwrap()),
        vec![],
        "since last",
    );
    check(
        seqs_of(s.load_last("other", 100).await.unwrap()),
        range(1, 10),
        "other conversation is separate",
    );
    assert_eq!(s.load_last("c", 1).await.unwrap()[0].content, "n30");
    assert_eq!(count(&s, "c").await, 30);
    assert_eq!(count(&s, "other").await, 10);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn search_is_case_insensitive_across_conversations_and_bounded() {
    let s = fresh("search").await;
    for c in ["c1", "c2"] {
        s.create_conversation(&conv(c, 1)).await.unwrap();
    }
    s.append_message(&msg(
        "c1",
        "a",
        Role::User,
        "We met in PARIS last spring",
        1,
    ))
    .await
    .unwrap();
    s.append_message(&msg("c1", "b", Role::User, "nothing here", 2))
        .await
        .unwrap();
    s.append_message(&msg("c2", "c", Role::Assistant, "paris is lovely", 3))
        .await
        .unwrap();
    let long = format!("{} Paris {}", "x ".repeat(50), "y ".repeat(50));
    s.append_message(&msg("c2", "d", Role::User, &long, 4))
        .await
        .unwrap();

    let mut hits = s.search_messages("Paris", 10).await.unwrap();
    hits.sort_by(|a, b| a.message_id.cmp(&b.message_id));
    let got: Vec<(&str, &str)> = hits
        .iter()
        .map(|h| (h.conversation_id.as_str(), h.message_id.as_str()))
        .collect();
    assert_eq!(got, [("c1", "a"), ("c2", "c"), ("c2", "d")]);
    assert_eq!(hits[0].snippet, "We met in PARIS last spring");
    let d = &hits[2].snippet;
    assert!(
        d.starts_with('…') && d.ends_with('…') && d.contains("Paris"),
        "{d}"
    );
    assert!(d.chars().count() < 100, "snippet is bounded: {d}");
    assert_eq!(
        s.search_messages("paris", 2).await.unwrap().len(),
        2,
        "limit"
    );
    assert!(s.search_messages("zebra", 10).await.unwrap().is_empty());
    assert!(s.search_messages("  ", 10).await.unwrap().is_empty());
    finish(s).await;
}

/// Search answers from the term indexes: word beginnings, every word of the query, titles, the hit's
/// conversation title, and the index follows every write (append, update, rename, delete).
#[wasm_bindgen_test]
async fn search_reads_the_term_index_and_it_follows_every_write() {
    let s = fresh("search-index").await;
    for c in ["c1", "c2"] {
        s.create_conversation(&conv(c, 1)).await.unwrap();
    }
    let ids = |hits: Vec<memoire::store::SearchHit>| {
        let mut v: Vec<String> = hits.into_iter().map(|h| h.message_id).collect();
        v.sort();
        v
    };
    s.append_message(&msg("c1", "a", Role::User, "Apples grow on trees", 1))
        .await
        .unwrap();
    s.append_message(&msg("c2", "b", Role::User, "Trees in autumn", 2))
        .await
        .unwrap();
    assert_eq!(ids(s.search_messages("tre", 10).await.unwrap()), ["a", "b"]);
    assert_eq!(
        ids(s.search_messages("grow on trees", 10).await.unwrap()),
        ["a"]
    );
    assert_eq!(
        ids(s.search_messages("autumn trees", 10).await.unwrap()),
        ["b"]
    );
    assert!(
        s.search_messages("rees", 10).await.unwrap().is_empty(),
        "word beginnings only"
    );
    let hit = &s.search_messages("apples", 10).await.unwrap()[0];
    assert_eq!(
        (hit.title.as_str(), hit.snippet.as_str()),
        ("title c1", "Apples grow on trees")
    );

    // An edited (or streamed) message is found by its new words only.
    s.update_message(
        "b",
        "Leaves in spring",
        MessageStatus::Complete,
        &MessageMeta::default(),
    )
    .await
    .unwrap();
    assert!(s.search_messages("autumn", 10).await.unwrap().is_empty());
    assert_eq!(ids(s.search_messages("spring", 10).await.unwrap()), ["b"]);

    // Titles: renamed conversations are found by their new title.
    s.rename_conversation("c2", "Garden diary", 5)
        .await
        .unwrap();
    let titles = |v: Vec<Conversation>| v.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(titles(s.search_titles("gard", 10).await.unwrap()), ["c2"]);
    assert_eq!(titles(s.search_titles("title", 10).await.unwrap()), ["c1"]);
    assert!(s
        .search_titles("diary garden x", 10)
        .await
        .unwrap()
        .is_empty());

    // Deleting a conversation takes its messages out of the index.
    s.delete_conversation("c1").await.unwrap();
    assert!(s.search_messages("apples", 10).await.unwrap().is_empty());
    assert!(s.search_titles("title", 10).await.unwrap().is_empty());
    finish(s).await;
}

/// The sidebar's pages: most recent activity first, ties by id (highest first), each page after the
/// last one's end with nothing skipped or repeated, and the page above a conversation.
#[wasm_bindgen_test]
async fn conversation_pages_cover_the_list_in_order() {
    let s = fresh("pages").await;
    // 23 conversations, several sharing an `updated_at`.
    let mut want: Vec<(Millis, String)> = (0..23)
        .map(|i| ((i / 3) as Millis, format!("c{i:02}")))
        .collect();
    for (at, id) in &want {
        s.create_conversation(&conv(id, *at)).await.unwrap();
    }
    want.sort_by(|a, b| b.cmp(a));
    let key = |c: &Conversation| (c.updated_at, c.id.clone());
    let mut got: Vec<(Millis, String)> = Vec::new();
    loop {
        let after = got.last().map(|(u, id)| (*u, id.as_str()));
        let page = s.list_conversations_after(after, 5).await.unwrap();
        assert!(page.len() <= 5);
        let n = page.len();
        got.extend(page.iter().map(key));
        if n < 5 {
            break;
        }
    }
    assert_eq!(got, want, "every conversation once, in list order");
    // The page above the 12th: the 7th to the 11th, most recent first.
    let (u, id) = &want[11];
    let above: Vec<_> = s
        .list_conversations_before((*u, id), 5)
        .await
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(above, want[6..11]);
    let (u, id) = &want[2];
    let top: Vec<_> = s
        .list_conversations_before((*u, id), 5)
        .await
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(top, want[..2], "near the top: what is there");
    finish(s).await;
}

// ------------------------------------------------------------------ memory

fn summary(c: &str, version: u32, text: &str) -> ConversationSummary {
    ConversationSummary {
        conversation_id: c.into(),
        version,
        text: text.into(),
        covers_up_to_seq: version as u64 * 10,
        message_count: version as u64 * 10,
        updated_at: version as i64,
    }
}

fn entity(scope: EntityScope, id: &str, name: &str) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope,
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: vec![format!("{name}y")],
        description: "d".into(),
        properties: BTreeMap::from([("k".to_string(), "v".to_string())]),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![Relationship {
            target_id: "x".into(),
            relationship: "knows".into(),
            strength: 0.5,
            valid_from: 1,
            valid_to: Some(2),
        }],
        source_message_ids: vec!["m1".into()],
        updated_at: 7,
    }
}

#[wasm_bindgen_test]
async fn summaries_keep_every_version() {
    let s = fresh("summary").await;
    assert_eq!(s.latest_summary("c").await.unwrap(), None);
    for v in [1, 2, 3] {
        s.save_summary(&summary("c", v, &format!("v{v}")))
            .await
            .unwrap();
    }
    s.save_summary(&summary("other", 9, "o")).await.unwrap();
    let all = s.load_summaries("c").await.unwrap();
    assert_eq!(all.iter().map(|x| x.version).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        s.latest_summary("c").await.unwrap(),
        Some(summary("c", 3, "v3"))
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn entity_graph_is_replaced_per_scope() {
    let s = fresh("entities").await;
    let c = EntityScope::Conversation("c".into());
    let first = vec![
        entity(c.clone(), "e1", "Ann"),
        entity(c.clone(), "e2", "Bob"),
    ];
    s.save_entities(&c, &first).await.unwrap();
    s.save_entities(
        &EntityScope::Shared,
        &[entity(EntityScope::Shared, "e1", "Shared Ann")],
    )
    .await
    .unwrap();
    assert_eq!(s.load_entities(&c).await.unwrap(), first);
    let second = vec![entity(c.clone(), "e3", "Cat")];
    s.save_entities(&c, &second).await.unwrap();
    assert_eq!(
        s.load_entities(&c).await.unwrap(),
        second,
        "old nodes are gone"
    );
    assert_eq!(
        s.load_entities(&EntityScope::Shared).await.unwrap()[0].name,
        "Shared Ann"
    );
    let wrong = vec![entity(EntityScope::Shared, "e9", "X")];
    assert!(matches!(
        s.save_entities(&c, &wrong).await,
        Err(StoreError::Encode(_))
    ));
    assert_eq!(
        s.load_entities(&c).await.unwrap(),
        second,
        "rejected save wrote nothing"
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn settings_get_set_delete() {
    let s = fresh("settings").await;
    let v = serde_json::json!({"endpoint": "http://x", "recent": 10, "nested": {"a": [1, 2]}});
    assert_eq!(s.get_setting("profile").await.unwrap(), None);
    s.set_setting("profile", &v).await.unwrap();
    assert_eq!(s.get_setting("profile").await.unwrap(), Some(v));
    s.set_setting("profile", &serde_json::json!(3))
        .await
        .unwrap();
    assert_eq!(
        s.get_setting("profile").await.unwrap(),
        Some(serde_json::json!(3))
    );
    s.delete_setting("profile").await.unwrap();
    assert_eq!(s.get_setting("profile").await.unwrap(), None);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn delete_cascades_to_messages_summaries_and_entities() {
    let s = fresh("cascade").await;
    for c in ["gone", "kept"] {
        s.create_conversation(&conv(c, 1)).await.unwrap();
        for i in 0..5 {
            s.append_message(&msg(c, &format!("{c}{i}"), Role::User, "t", i))
                .await
                .unwrap();
        }
        s.save_summary(&summary(c, 1, "s")).await.unwrap();
        let scope = EntityScope::Conversation(c.into());
        s.save_entities(&scope, &[entity(scope.clone(), "e", "E")])
            .await
            .unwrap();
    }
    assert!(s.delete_conversation("gone").await.unwrap());
    let gone = EntityScope::Conversation("gone".into());
    assert_eq!(s.get_conversation("gone").await.unwrap(), None);
    assert_eq!(count(&s, "gone").await, 0);
    assert_eq!(s.get_message("gone0").await.unwrap(), None);
    assert!(s.load_summaries("gone").await.unwrap().is_empty());
    assert_eq!(s.load_entities(&gone).await.unwrap().len(), 0);
    let kept = EntityScope::Conversation("kept".into());
    assert_eq!(count(&s, "kept").await, 5);
    assert_eq!(s.load_summaries("kept").await.unwrap().len(), 1);
    assert_eq!(s.load_entities(&kept).await.unwrap().len(), 1);
    assert!(
        !s.delete_conversation("gone").await.unwrap(),
        "second delete reports absence"
    );
    finish(s).await;
}

// ------------------------------------------------------------------ persistence

#[wasm_bindgen_test]
async fn persistence_and_usage_are_reported() {
    let s = fresh("quota-report").await;
    let _persisted: bool = Store::request_persistence().await.unwrap();
    let u = Store::storage_usage().await.unwrap();
    assert!(u.quota_bytes > 0.0 && u.usage_bytes >= 0.0, "{u:?}");
    finish(s).await;
}

// ------------------------------------------------------------------ no-loss writes

/// A write that does not fit: the store lives in a storage bucket with a small quota, so the browser
/// itself aborts the transaction with a real `QuotaExceededError`, which the store's abort path
/// reads from the transaction and maps to `Full`. Nothing of it is kept, and the next write that
/// fits goes on at the next seq.
#[wasm_bindgen_test]
async fn quota_failure_is_full_and_writes_nothing() {
    let s = small("full").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    s.append_message(&msg("c", "m0", Role::User, "kept", 1))
        .await
        .unwrap();

    let r = s
        .append_message(&msg("c", "m1", Role::User, &too_big(), 2))
        .await;
    assert_eq!(r.map(|_| ()), Err(StoreError::Full));
    assert!(StoreError::Full.to_string().contains("storage is full"));
    assert_eq!(
        s.get_message("m1").await.unwrap(),
        None,
        "message not written"
    );
    let c = s.get_conversation("c").await.unwrap().unwrap();
    assert_eq!(
        (c.message_count, c.updated_at),
        (1, 1),
        "counters not bumped"
    );

    let next = s
        .append_message(&msg("c", "m1", Role::User, "retry", 4))
        .await
        .unwrap();
    assert_eq!(next.message.seq, 2, "no seq was burnt by the failed write");
    finish(s).await;
}

/// Runs both futures concurrently on the page's event loop and waits for both.
async fn join2(
    a: impl std::future::Future<Output = Result<JsValue, JsValue>> + 'static,
    b: impl std::future::Future<Output = Result<JsValue, JsValue>> + 'static,
) {
    let pa = wasm_bindgen_futures::future_to_promise(a);
    let pb = wasm_bindgen_futures::future_to_promise(b);
    JsFuture::from(js_sys::Promise::all(&js_sys::Array::of2(&pa, &pb)))
        .await
        .expect("both writers finish");
}

#[wasm_bindgen_test]
async fn two_connections_append_concurrently_without_loss_or_duplicates() {
    let name = fresh_name("two");
    let s1 = Store::open(&name).await.unwrap();
    let s2 = Store::open(&name).await.unwrap();
    s1.create_conversation(&conv("c", 1)).await.unwrap();
    let writer = |s: Store, tag: &'static str| async move {
        for i in 0..20 {
            // Every writer also sends the shared ids: each must be stored once.
            for id in [format!("{tag}{i}"), format!("shared{}", i % 10)] {
                s.append_message(&msg("c", &id, Role::User, &id, i))
                    .await
                    .map_err(|e| JsValue::from_str(&e.to_string()))?;
            }
        }
        Ok(JsValue::NULL)
    };
    join2(writer(s1.clone(), "a"), writer(s2.clone(), "b")).await;
    let all = s1.load_last("c", 1000).await.unwrap();
    assert_eq!(
        all.iter().map(|m| m.seq).collect::<Vec<_>>(),
        (1..=50).collect::<Vec<u64>>(),
        "unique gap-free seqs"
    );
    let mut ids: Vec<&str> = all.iter().map(|m| m.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        50,
        "20 + 20 own ids and 10 shared ids, each once"
    );
    assert_eq!(
        s2.get_conversation("c")
            .await
            .unwrap()
            .unwrap()
            .message_count,
        50
    );
    s2.close();
    finish(s1).await;
}

// ------------------------------------------------------------------ versions and migrations

/// Opens `name` with raw IndexedDB at `version`, running `upgrade` on upgradeneeded.
async fn raw_open(
    name: &str,
    version: u32,
    upgrade: impl FnOnce(web_sys::IdbDatabase) + 'static,
) -> web_sys::IdbDatabase {
    let factory: web_sys::IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let req = factory.open_with_u32(name, version).unwrap();
    let r2 = req.clone();
    let on_upgrade =
        Closure::once_into_js(move |_: JsValue| upgrade(r2.result().unwrap().unchecked_into()));
    req.set_onupgradeneeded(Some(on_upgrade.unchecked_ref()));
    JsFuture::from(js_sys::Promise::new(&mut |res, rej| {
        req.set_onsuccess(Some(&res));
        req.set_onerror(Some(&rej));
    }))
    .await
    .expect("raw open");
    req.result().unwrap().unchecked_into()
}

async fn raw_done(tx: &web_sys::IdbTransaction) {
    JsFuture::from(js_sys::Promise::new(&mut |res, rej| {
        tx.set_oncomplete(Some(&res));
        tx.set_onabort(Some(&rej));
    }))
    .await
    .expect("raw transaction commits");
}

/// A database created from nothing is born migrated (its start runs no migration), and opening it
/// again adds no record.
#[wasm_bindgen_test]
async fn a_new_database_records_every_migration_as_applied_at_its_creation() {
    let name = fresh_name("born");
    for round in 0..2 {
        let s = Store::open(&name).await.unwrap();
        let log = migration_log(s.name()).await;
        let numbers: Vec<u32> = log.iter().map(|r| r.number).collect();
        assert_eq!(numbers, vec![1, 2], "round {round}");
        for r in &log {
            assert_eq!(
                r.detail, "a new database: nothing to migrate",
                "round {round}"
            );
        }
        s.close();
    }
}

#[wasm_bindgen_test]
async fn legacy_v1_flat_list_becomes_one_previous_conversation_per_agent_once() {
    let name = fresh_name("legacy");
    let v1 = raw_open(&name, 1, |db| {
        let p = web_sys::IdbObjectStoreParameters::new();
        p.set_key_path(&"id".into());
        db.create_object_store_with_optional_parameters("messages", &p)
            .unwrap();
    })
    .await;
    let legacy = serde_json::json!([
        {"id": "m3", "agent_id": "alice", "role": "assistant", "content": "third", "timestamp": 3000},
        {"id": "m1", "agent_id": "alice", "role": "user", "content": "first", "timestamp": 1000},
        {"id": "m2", "agent_id": "alice", "role": "agent", "content": "second", "timestamp": 2000},
        {"id": 7, "agent_id": "bob", "role": "user", "content": "hello bob", "timestamp": "2024-01-02 03:04:05"},
        {"id": "bad", "agent_id": "bob", "role": "wizard", "content": "??", "timestamp": 1}
    ]);
    let tx = v1
        .transaction_with_str_and_mode("messages", web_sys::IdbTransactionMode::Readwrite)
        .unwrap();
    let store = tx.object_store("messages").unwrap();
    for rec in legacy.as_array().unwrap() {
        let v = js_sys::JSON::parse(&rec.to_string()).unwrap();
        store.put(&v).unwrap();
    }
    raw_done(&tx).await;
    v1.close();

    for round in 0..2u64 {
        let s = Store::open(&name).await.unwrap();
        let convs = s.list_conversations(10).await.unwrap();
        let mut summary: Vec<(String, String, u64)> = convs
            .iter()
            .map(|c| (c.id.clone(), c.title.clone(), c.message_count))
            .collect();
        summary.sort();
        assert_eq!(
            summary,
            [
                (
                    "legacy-alice".to_string(),
                    "Previous conversation".to_string(),
                    3 + round
                ),
                (
                    "legacy-bob".to_string(),
                    "Previous conversation".to_string(),
                    1
                )
            ],
            "round {round}"
        );
        let alice: Vec<(u64, String, Role)> = s
            .load_last("legacy-alice", 10)
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.seq, m.content, m.role))
            .take(3)
            .collect();
        assert_eq!(
            alice,
            [
                (1, "first".into(), Role::User),
                (2, "second".into(), Role::Assistant),
                (3, "third".into(), Role::Assistant)
            ]
        );
        let bob = s.load_last("legacy-bob", 10).await.unwrap();
        assert_eq!(
            (bob[0].id.as_str(), bob[0].created_at),
            ("7", 1_704_164_645_000)
        );
        let log = migration_log(s.name()).await;
        assert_eq!(log.len(), 2, "each migration ran once (round {round})");
        assert!(
            log[1].detail.starts_with("indexed 4 messages and 2 titles"),
            "{}",
            log[1].detail
        );
        assert_eq!(
            s.search_messages("third", 5).await.unwrap().len(),
            1,
            "indexed"
        );
        assert!(
            log[0]
                .detail
                .contains("imported 4 messages into 2 conversations; 1 unreadable"),
            "{}",
            log[0].detail
        );
        // New messages continue the imported seqs.
        if round == 0 {
            let out = s
                .append_message(&msg("legacy-alice", "new", Role::User, "after", 4000))
                .await
                .unwrap();
            assert_eq!(out.message.seq, 4);
        }
        s.close();
    }
    Store::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_upgrade_in_another_tab_closes_this_connection_and_tells_the_ui() {
    let name = fresh_name("vchange");
    let s = Store::open(&name).await.unwrap();
    let told = Rc::new(Cell::new(false));
    let t = told.clone();
    s.on_closed_by_other_tab(move || t.set(true));
    // "Another tab" upgrades: it must not be blocked by us.
    let other = raw_open(&name, memoire::store::schema::DB_VERSION + 1, |_| {}).await;
    assert!(s.closed_by_other_tab() && told.get());
    assert_eq!(
        s.list_conversations(5).await,
        Err(StoreError::ClosedByOtherTab)
    );
    assert!(StoreError::ClosedByOtherTab.to_string().contains("reload"));
    other.close();
    // Our (older) code now refuses to open the newer database instead of corrupting it.
    assert!(matches!(Store::open(&name).await, Err(StoreError::TooNew)));
    Store::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn opening_while_an_old_tab_blocks_the_upgrade_reports_blocked() {
    let name = fresh_name("blocked");
    // An old tab (v1) that ignores versionchange keeps its connection open.
    let old = raw_open(&name, 1, |_| {}).await;
    let started = js_sys::Date::now();
    assert_eq!(Store::open(&name).await.err(), Some(StoreError::Blocked));
    assert!(js_sys::Date::now() - started < 5_000.0, "did not hang");
    old.close();
    // The queued upgrade goes through once the old tab is gone; a retry works.
    let s = Store::open(&name).await.unwrap();
    assert!(s.list_conversations(1).await.unwrap().is_empty());
    finish(s).await;
}

#[wasm_bindgen_test]
async fn memory_failures_and_remembered_forms_survive_reopening() {
    use memoire::engine::memory::{MemoryFailure, MemoryForm};
    use memoire::engine::request::OutputForm;
    let s = fresh("memstate").await;
    assert_eq!(s.memory_failure("c1").await.unwrap(), None);
    let failure = MemoryFailure::new(
        42,
        "The memory reply could not be used.".into(),
        "{\"summary\": 3",
        MemoryForm::Constrained(OutputForm::JsonObject),
    );
    // The back-off's fields (failures in a row, the seq, the endpoint) are kept too.
    let first = failure
        .clone()
        .following(None, 6, "openai-chat|http://a/v1|m");
    let failure = failure.following(Some(&first), 9, "openai-chat|http://a/v1|m");
    assert_eq!(failure.attempts, 2);
    s.set_memory_failure("c1", Some(&failure)).await.unwrap();
    assert_eq!(s.memory_failure("c1").await.unwrap(), Some(failure.clone()));
    assert_eq!(
        s.memory_failure("c2").await.unwrap(),
        None,
        "per conversation"
    );

    let (a, b) = ("openai-chat|http://a/v1|m", "ollama|http://b|m");
    assert_eq!(s.memory_form(a).await.unwrap(), None);
    s.remember_memory_form(a, MemoryForm::Constrained(OutputForm::JsonObject))
        .await
        .unwrap();
    s.remember_memory_form(b, MemoryForm::Sections)
        .await
        .unwrap();
    s.remember_memory_form(a, MemoryForm::Sections)
        .await
        .unwrap();

    // Reopened: both are still there.
    let name = s.name().to_string();
    s.close();
    let s = Store::open(&name).await.unwrap();
    assert_eq!(s.memory_failure("c1").await.unwrap(), Some(failure));
    assert_eq!(s.memory_form(a).await.unwrap(), Some(MemoryForm::Sections));
    assert_eq!(s.memory_form(b).await.unwrap(), Some(MemoryForm::Sections));
    s.set_memory_failure("c1", None).await.unwrap();
    assert_eq!(
        s.memory_failure("c1").await.unwrap(),
        None,
        "cleared by a success"
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn a_message_stored_before_branches_reads_as_a_linear_chain() {
    let s = fresh("pre-branch").await;
    s.create_conversation(&conv("c", 1)).await.unwrap();
    // A record as this store wrote it before branches: no `after`, `replaces` or `deleted`.
    let old = r#"{"id":"old","conversation_id":"c","seq":1,"role":"user","content":"hi","status":"complete","created_at":5,"tool_calls":[],"usage":null,"error":null,"path":null,"model":null}"#;
    put_raw_message(s.name(), old).await.unwrap();
    let m = s.get_message("old").await.unwrap().unwrap();
    assert_eq!(
        (m.meta.after, m.meta.replaces, m.meta.deleted),
        (None, None, false)
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn a_memory_update_reads_its_span_in_one_go_and_writes_whole_only_on_its_summary() {
    use memoire::engine::memory::update::{NewMemory, Write};
    use memoire::engine::memory::{MemoryFailure, MemoryForm};
    let s = fresh("memupdate").await;
    let missing = s.load_memory_span("c", 400, "branch:c").await.unwrap();
    assert!(missing.conversation.is_none());
    s.create_conversation(&conv("c", 1)).await.unwrap();
    for (i, role) in [Role::User, Role::Assistant, Role::User, Role::Assistant]
        .into_iter()
        .enumerate()
    {
        let m = msg("c", &format!("m{i}"), role, &format!("said {i}"), i as i64);
        s.append_message(&m).await.unwrap();
    }
    let seqs = |span: &memoire::store::MemorySpan| -> Vec<u64> {
        span.messages.iter().map(|m| m.seq).collect()
    };
    // No summary: the last `window` messages.
    let span = s.load_memory_span("c", 3, "branch:c").await.unwrap();
    assert_eq!(
        (seqs(&span), span.previous.clone(), span.branch.clone()),
        (vec![2, 3, 4], None, None)
    );
    let mut covering = summary("c", 1, "v1");
    covering.covers_up_to_seq = 2;
    s.save_summary(&covering).await.unwrap();
    let failure = MemoryFailure::new(5, "no".into(), "raw", MemoryForm::Sections);
    s.set_memory_failure("c", Some(&failure)).await.unwrap();
    s.set_setting("branch:c", &serde_json::Value::Null)
        .await
        .unwrap();
    // A summary: the messages after it, with the failure and the branch setting.
    let span = s.load_memory_span("c", 3, "branch:c").await.unwrap();
    assert_eq!(seqs(&span), vec![3, 4]);
    assert_eq!(span.previous.map(|p| p.version), Some(1));
    assert_eq!(span.failure, Some(failure.clone()));
    assert_eq!(span.branch, Some(serde_json::Value::Null));

    let scope = EntityScope::Conversation("c".into());
    let key = "openai-chat|http://a/v1|m";
    let new = |expected| NewMemory {
        expected,
        summary: Some(summary("c", 2, "v2")),
        scope: scope.clone(),
        nodes: vec![entity(scope.clone(), "e1", "Alice")],
    };
    // Built on another summary: nothing of the memory is written, the form is.
    let lost = Write {
        memory: Some(new(Some(7))),
        failure: None,
        form: Some((key.into(), MemoryForm::Sections)),
    };
    assert!(!s.write_memory_update("c", &lost).await.unwrap());
    assert_eq!(
        s.latest_summary("c").await.unwrap().map(|x| x.version),
        Some(1)
    );
    assert_eq!(s.memory_failure("c").await.unwrap(), Some(failure.clone()));
    let graph = s.load_memory_graph("c", key).await.unwrap();
    assert_eq!(
        (graph.existing.len(), graph.remembered, graph.failure),
        (0, Some(MemoryForm::Sections), Some(failure.clone()))
    );
    // Built on the latest: summary, graph and the failure cleared, in one go.
    let landed = Write {
        memory: Some(new(Some(1))),
        ..Write::default()
    };
    assert!(s.write_memory_update("c", &landed).await.unwrap());
    assert_eq!(
        s.latest_summary("c").await.unwrap().map(|x| x.version),
        Some(2)
    );
    assert_eq!(s.memory_failure("c").await.unwrap(), None);
    let graph = s.load_memory_graph("c", key).await.unwrap();
    assert_eq!(
        graph
            .existing
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>(),
        ["Alice"]
    );
    // A failure alone, the memory untouched.
    let failed = Write {
        failure: Some(failure.clone()),
        ..Write::default()
    };
    assert!(!s.write_memory_update("c", &failed).await.unwrap());
    assert_eq!(s.memory_failure("c").await.unwrap(), Some(failure));
    assert_eq!(
        s.latest_summary("c").await.unwrap().map(|x| x.version),
        Some(2)
    );
    // A node of another scope is refused, nothing written.
    let mut wrong = new(Some(2));
    wrong.nodes = vec![entity(EntityScope::Shared, "e2", "Bob")];
    let wrong = Write {
        memory: Some(wrong),
        ..Write::default()
    };
    assert!(s.write_memory_update("c", &wrong).await.is_err());
    assert_eq!(
        s.latest_summary("c").await.unwrap().map(|x| x.version),
        Some(2)
    );
    finish(s).await;
}
