#![cfg(target_arch = "wasm32")]
//! Browser tests of the store's one-transaction edits (src/store/edits.rs): finishing a message with
//! its metadata, clearing a conversation, edit-and-resend's tail replacement, saving a memory update,
//! and writing a validated backup import (all or nothing, also when written in slices and stopped or
//! failing midway), and the facts about the user kept whole. A fresh database per test.

use memoire::engine::backup::{
    check_import, export_json, ConversationBundle, ImportLimits, ImportPlan,
};
use memoire::engine::model::*;
use memoire::store::{Store, StoreError, WritePace};
use wasm_bindgen_test::*;

mod support;
use support::{finish, fresh, small, too_big};

wasm_bindgen_test_configure!(run_in_browser);

fn conv(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: format!("title {id}"),
        title_is_custom: false,
        created_at: 1,
        updated_at: 1,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: Some(RemoteHandle {
            id: "resp_1".into(),
            endpoint_key: "k".into(),
            covers_up_to_seq: 1,
            confirmed_at: 1,
            dead: false,
        }),
        last_path: Some(TurnPath::Resumed),
        memory_overrides: MemoryOverrides::default(),
    }
}

fn msg(c: &str, id: &str, role: Role, text: &str) -> Message {
    Message {
        id: id.into(),
        conversation_id: c.into(),
        seq: 0,
        role,
        content: text.into(),
        status: MessageStatus::Complete,
        created_at: 10,
        meta: MessageMeta::default(),
    }
}

fn entity(scope: EntityScope, id: &str, name: &str) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope,
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: vec![],
        description: "d".into(),
        properties: Default::default(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec!["m1".into()],
        updated_at: 5,
    }
}

fn summary(c: &str, version: u32, text: &str) -> ConversationSummary {
    ConversationSummary {
        conversation_id: c.into(),
        version,
        text: text.into(),
        covers_up_to_seq: 2,
        message_count: 2,
        updated_at: 7,
    }
}

/// A conversation with `n` alternating messages.
async fn seeded(store: &Store, c: &str, n: usize) {
    store.create_conversation(&conv(c)).await.unwrap();
    for i in 0..n {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        store
            .append_message(&msg(c, &format!("{c}-m{i}"), role, &format!("text {i}")))
            .await
            .unwrap();
    }
}

#[wasm_bindgen_test]
async fn update_message_keeps_seq_and_stores_meta() {
    let store = fresh("update").await;
    seeded(&store, "c", 2).await;
    let meta = MessageMeta {
        tool_calls: vec![ToolCall {
            id: "t".into(),
            name: "search".into(),
            arguments: "{}".into(),
            result: None,
            status: None,
        }],
        usage: Some(Usage {
            prompt_tokens: 12,
            completion_tokens: 3,
        }),
        error: Some("cut off".into()),
        path: Some(TurnPath::Reinjected),
        model: Some("m".into()),
        ..Default::default()
    };
    store
        .update_message("c-m1", "partial", MessageStatus::Interrupted, &meta)
        .await
        .unwrap();
    let m = store.get_message("c-m1").await.unwrap().unwrap();
    assert_eq!(
        (m.seq, m.content.as_str(), m.status),
        (2, "partial", MessageStatus::Interrupted)
    );
    assert_eq!(m.meta, meta);
    let missing = store
        .update_message("nope", "x", MessageStatus::Complete, &meta)
        .await;
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
    finish(store).await;
}

#[wasm_bindgen_test]
async fn clear_removes_messages_and_memory_of_that_conversation_only() {
    let store = fresh("clear").await;
    seeded(&store, "a", 4).await;
    seeded(&store, "b", 2).await;
    let a_scope = EntityScope::Conversation("a".into());
    let b_scope = EntityScope::Conversation("b".into());
    store.save_summary(&summary("a", 1, "sa")).await.unwrap();
    store.save_summary(&summary("b", 1, "sb")).await.unwrap();
    store
        .save_entities(&a_scope, &[entity(a_scope.clone(), "ea", "Ann")])
        .await
        .unwrap();
    store
        .save_entities(&b_scope, &[entity(b_scope.clone(), "eb", "Bob")])
        .await
        .unwrap();

    let cleared = store.clear_conversation("a", 99).await.unwrap();
    assert_eq!(cleared.message_count, 0);
    assert_eq!(
        cleared.remote_handle, None,
        "a cleared conversation must not be resumed"
    );
    assert!(store.load_last("a", 100).await.unwrap().is_empty());
    assert!(store.load_summaries("a").await.unwrap().is_empty());
    assert!(store.load_entities(&a_scope).await.unwrap().is_empty());
    assert_eq!(store.load_last("b", 100).await.unwrap().len(), 2);
    assert_eq!(store.load_summaries("b").await.unwrap().len(), 1);
    assert_eq!(store.load_entities(&b_scope).await.unwrap().len(), 1);
    // New messages continue after the cleared ones without reusing a seq.
    let next = store
        .append_message(&msg("a", "a-new", Role::User, "again"))
        .await
        .unwrap();
    assert_eq!(next.message.seq, 5);
    assert_eq!(
        store
            .get_conversation("a")
            .await
            .unwrap()
            .unwrap()
            .message_count,
        1
    );
    finish(store).await;
}

#[wasm_bindgen_test]
async fn save_memory_writes_summary_and_graph_together() {
    let store = small("memory").await;
    seeded(&store, "c", 2).await;
    let scope = EntityScope::Conversation("c".into());
    store
        .save_memory(
            Some(&summary("c", 1, "first")),
            &scope,
            &[entity(scope.clone(), "e1", "Ann")],
        )
        .await
        .unwrap();
    store
        .save_memory(None, &scope, &[entity(scope.clone(), "e2", "Bob")])
        .await
        .unwrap();
    assert_eq!(
        store.latest_summary("c").await.unwrap().unwrap().text,
        "first"
    );
    let names: Vec<String> = store
        .load_entities(&scope)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        vec!["Bob".to_string()],
        "the graph is replaced whole"
    );
    // A write the quota cannot hold (a real QuotaExceededError) leaves both untouched.
    let full = store
        .save_memory(Some(&summary("c", 2, &too_big())), &scope, &[])
        .await;
    assert_eq!(full, Err(StoreError::Full));
    assert_eq!(store.latest_summary("c").await.unwrap().unwrap().version, 1);
    assert_eq!(store.load_entities(&scope).await.unwrap().len(), 1);
    // Entities of another scope are refused before anything is written.
    let wrong = store
        .save_memory(None, &scope, &[entity(EntityScope::Shared, "e3", "Cy")])
        .await;
    assert!(matches!(wrong, Err(StoreError::Encode(_))), "{wrong:?}");
    finish(store).await;
}

async fn bundle(store: &Store, c: &str) -> ConversationBundle {
    ConversationBundle {
        conversation: store.get_conversation(c).await.unwrap().unwrap(),
        messages: store.load_all_messages(c).await.unwrap(),
        summaries: store.load_summaries(c).await.unwrap(),
        entities: store
            .load_entities(&EntityScope::Conversation(c.into()))
            .await
            .unwrap(),
    }
}

#[wasm_bindgen_test]
async fn import_round_trip_then_skip_then_all_or_nothing() {
    let source = fresh("import-src").await;
    seeded(&source, "c", 6).await;
    let scope = EntityScope::Conversation("c".into());
    source
        .save_memory(
            Some(&summary("c", 1, "sum")),
            &scope,
            &[entity(scope.clone(), "e1", "Ann")],
        )
        .await
        .unwrap();
    let original = bundle(&source, "c").await;
    let json = export_json(std::slice::from_ref(&original), &[], 1000);
    finish(source).await;

    let target = small("import-dst").await;
    let limits = ImportLimits::default();
    let named = check_import(json.as_bytes(), &limits).unwrap();
    let existing = target.existing_ids_for(&named).await.unwrap();
    assert!(existing.conversations.is_empty() && existing.messages.is_empty());
    let plan = check_import(json.as_bytes(), &limits)
        .and_then(|c| c.plan(&existing))
        .unwrap();
    let written = target.write_import(&plan).await.unwrap();
    let imported = bundle(&target, "c").await;
    // It returns the conversations as it stored them (the session announces these).
    assert_eq!(written, vec![imported.conversation.clone()]);
    assert_eq!(imported.messages, original.messages);
    assert_eq!(imported.summaries, original.summaries);
    assert_eq!(imported.entities, original.entities);
    assert_eq!(imported.conversation.message_count, 6);
    // Appends continue after the imported seqs.
    let next = target
        .append_message(&msg("c", "after", Role::User, "x"))
        .await
        .unwrap();
    assert_eq!(next.message.seq, 7);

    // The same file again: everything exists, nothing is added.
    let existing = target.existing_ids_for(&named).await.unwrap();
    assert_eq!(existing.messages.len(), 6);
    // The stored conversation's last seq, for other apps' exports (which append what is new).
    assert_eq!(existing.last_seqs.get("c"), Some(&7));
    assert_eq!(existing.entities.len(), 1);
    assert!(existing.summaries.contains(&("c".to_string(), 1)));
    let again = check_import(json.as_bytes(), &limits)
        .and_then(|c| c.plan(&existing))
        .unwrap();
    assert_eq!(again.added.messages, 0);
    assert_eq!(again.skipped.messages, 6);

    // A later backup of the same conversation: only its new messages are added, and the stored
    // conversation's counters are raised (not replaced).
    let mut later = original.clone();
    for (id, seq) in [("later-1", 8), ("later-2", 9)] {
        let mut m = msg("c", id, Role::User, "later");
        (m.seq, m.created_at) = (seq, 500 + seq as i64);
        later.messages.push(m);
    }
    let json2 = export_json(std::slice::from_ref(&later), &[], 2000);
    let checked = check_import(json2.as_bytes(), &limits).unwrap();
    let existing = target.existing_ids_for(&checked).await.unwrap();
    let plan2 = checked.plan(&existing).unwrap();
    assert_eq!((plan2.added.messages, plan2.skipped.messages), (2, 6));
    let written = target.write_import(&plan2).await.unwrap();
    let c = target.get_conversation("c").await.unwrap().unwrap();
    assert_eq!((c.message_count, c.updated_at), (9, 509));
    assert_eq!(written, vec![c]);
    let next = target
        .append_message(&msg("c", "after-2", Role::User, "x"))
        .await
        .unwrap();
    assert_eq!(next.message.seq, 10);

    // A write the quota cannot hold (a real QuotaExceededError) leaves nothing of the plan behind.
    target.delete_conversation("c").await.unwrap();
    let mut too_large = plan.clone();
    too_large.messages[0].content = too_big();
    assert_eq!(
        target.write_import(&too_large).await.map(|_| ()),
        Err(StoreError::Full)
    );
    assert!(target.get_conversation("c").await.unwrap().is_none());
    assert!(target.load_all_messages("c").await.unwrap().is_empty());
    finish(target).await;
}

#[wasm_bindgen_test]
async fn an_import_numbered_from_zero_is_read_whole() {
    use memoire::engine::import::{detect, to_checked, Detected};
    let store = fresh("import-from-zero").await;
    let limits = ImportLimits::default();
    let bytes = include_bytes!("fixtures/import/chatgpt.json");
    let Detected::Foreign(imported) = detect(bytes, &limits).unwrap() else {
        panic!("the ChatGPT fixture reads as another app's export");
    };
    let checked = to_checked(&imported, 1000, &limits).unwrap();
    let existing = store.existing_ids_for(&checked).await.unwrap();
    let plan = checked.plan(&existing).unwrap();
    let written = store.write_import(&plan).await.unwrap();
    assert_eq!(written.len(), 2);
    for c in &written {
        let all = store.load_all_messages(&c.id).await.unwrap();
        assert_eq!(all[0].seq, 0, "{}: an import numbers from 0", c.id);
        // The last messages and the page above the last one reach seq 0.
        assert_eq!(store.load_last(&c.id, 10).await.unwrap(), all, "{}", c.id);
        let top = all.last().unwrap().seq;
        let above = store.load_before(&c.id, top, 10).await.unwrap();
        assert_eq!(above, all[..all.len() - 1], "{}", c.id);
        assert!(store.load_before(&c.id, 0, 10).await.unwrap().is_empty());
    }
    finish(store).await;
}

/// A write pace for tests: slices of `size` messages; stops before slice number `stop_at`.
struct Slices {
    size: usize,
    stop_at: Option<usize>,
    slices: usize,
    issued: usize,
}

impl WritePace for Slices {
    fn next(&mut self, _done: usize, _total: usize) -> Option<usize> {
        if self.stop_at == Some(self.slices) {
            return None;
        }
        self.slices += 1;
        Some(self.size)
    }
    fn issued(&mut self, n: usize) {
        self.issued += n;
    }
}

/// A plan of one new conversation `c` with `n` messages at seqs 0..n.
fn plan_of(c: &str, n: usize) -> ImportPlan {
    let mut plan = ImportPlan {
        conversations: vec![conv(c)],
        ..ImportPlan::default()
    };
    for i in 0..n {
        let mut m = msg(c, &format!("{c}-m{i}"), Role::User, &format!("text {i}"));
        m.seq = i as u64;
        plan.messages.push(m);
    }
    plan
}

async fn nothing_of(store: &Store, c: &str) {
    assert!(store.get_conversation(c).await.unwrap().is_none());
    assert!(store.load_all_messages(c).await.unwrap().is_empty());
}

#[wasm_bindgen_test]
async fn a_sliced_import_is_one_transaction_a_failure_or_a_stop_midway_writes_nothing() {
    let store = fresh("import-sliced").await;
    // In slices of 7: every message stored, the counters right.
    let mut pace = Slices {
        size: 7,
        stop_at: None,
        slices: 0,
        issued: 0,
    };
    let written = store
        .write_import_paced(&plan_of("ok", 50), &mut pace)
        .await
        .unwrap();
    // The conversation, then its 50 messages: 8 slices, and the go-ahead before the commit.
    assert_eq!((pace.slices, pace.issued), (9, 51));
    assert_eq!(written[0].message_count, 50);
    assert_eq!(store.load_all_messages("ok").await.unwrap().len(), 50);

    // A real failure in the fifth slice (a message at a seq another one took: the unique index
    // refuses it, and the browser aborts the transaction): nothing of the earlier slices is kept.
    let mut bad = plan_of("bad", 50);
    bad.messages[30].seq = 2;
    let mut pace = Slices {
        size: 7,
        stop_at: None,
        slices: 0,
        issued: 0,
    };
    let err = store.write_import_paced(&bad, &mut pace).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Idb { ref name, .. } if name == "ConstraintError"),
        "{err:?}"
    );
    assert!(
        pace.slices >= 5,
        "the failure came after {} slices",
        pace.slices
    );
    nothing_of(&store, "bad").await;

    // A stop between two slices (an import's Cancel) aborts the transaction.
    let mut pace = Slices {
        size: 7,
        stop_at: Some(3),
        slices: 0,
        issued: 0,
    };
    assert_eq!(
        store
            .write_import_paced(&plan_of("stopped", 50), &mut pace)
            .await
            .map(|_| ()),
        Err(StoreError::Cancelled)
    );
    assert_eq!(pace.issued, 21);
    nothing_of(&store, "stopped").await;
    // A stop after the last slice, before the commit, too.
    let mut pace = Slices {
        size: 100,
        stop_at: Some(1),
        slices: 0,
        issued: 0,
    };
    assert_eq!(
        store
            .write_import_paced(&plan_of("late", 50), &mut pace)
            .await
            .map(|_| ()),
        Err(StoreError::Cancelled)
    );
    nothing_of(&store, "late").await;
    assert_eq!(store.load_all_messages("ok").await.unwrap().len(), 50);
    finish(store).await;
}

#[wasm_bindgen_test]
async fn a_conversation_stored_since_the_preview_fails_the_write_and_nothing_is_written() {
    let store = fresh("import-stored-since").await;
    // The preview found "late" new; another tab stores a conversation of that id before the
    // confirm. The plan's record is added (not read and put back), so the write fails as a
    // conflict and keeps nothing, the other tab's conversation included as it was.
    let plan = plan_of("late", 20);
    let mut other = conv("late");
    other.title = "stored by another tab".into();
    store.create_conversation(&other).await.unwrap();
    let err = store.write_import(&plan).await.unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    let kept = store.get_conversation("late").await.unwrap().unwrap();
    assert_eq!(
        (kept.title.as_str(), kept.message_count),
        ("stored by another tab", 0)
    );
    assert!(store.load_all_messages("late").await.unwrap().is_empty());
    finish(store).await;
}

fn fact(id: &str, text: &str, forgotten: Option<Millis>) -> UserFact {
    UserFact {
        id: id.into(),
        text: text.into(),
        kind: FactKind::Home,
        claim_key: "lives_in".into(),
        source: Some(FactSource {
            conversation_id: "c".into(),
            message_id: "m1".into(),
            said_at: 5,
        }),
        valid_from: 5,
        valid_to: None,
        forgotten,
        scope: None,
        updated_at: 6,
    }
}

#[wasm_bindgen_test]
async fn user_facts_are_kept_whole_with_their_tombstones() {
    let store = fresh("user-facts").await;
    assert_eq!(store.load_user_facts().await.unwrap(), vec![]);
    let (a, b) = (
        fact("f1", "I live in Oslo.", None),
        fact("f2", "I am Marta.", Some(9)),
    );
    store.save_user_facts(&[&a, &b]).await.unwrap();
    let mut changed = a.clone();
    changed.valid_to = Some(20);
    store.save_user_facts(&[&changed]).await.unwrap();
    let mut got = store.load_user_facts().await.unwrap();
    got.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(got, vec![changed, b]);
}

#[wasm_bindgen_test]
async fn an_imports_facts_are_written_in_its_transaction_or_not_at_all() {
    use memoire::engine::backup::export_backup;
    let (live, gone) = (
        fact("f1", "I live in Oslo.", None),
        fact("f2", "I am Marta.", Some(9)),
    );
    let json = export_backup(&[], &[], &[&live, &gone], 1000);
    let limits = ImportLimits::default();
    let store = small("import-facts").await;
    // A stored copy of f1, older than the file's: the file's words win; f2 is new here.
    let mut older = live.clone();
    (older.text, older.updated_at) = ("I live in Oslo?".into(), 1);
    store.save_user_facts(&[&older]).await.unwrap();
    let checked = check_import(json.as_bytes(), &limits).unwrap();
    let existing = store.existing_ids_for(&checked).await.unwrap();
    assert_eq!(existing.user_facts, vec![older.clone()]);
    let plan = checked.plan(&existing).unwrap();
    assert_eq!((plan.added.facts, plan.skipped.facts), (1, 1));

    // A write the quota cannot hold: not one fact of it is written.
    let mut too_large = plan_of("c", 1);
    too_large.messages[0].content = too_big();
    too_large.user_facts = plan.user_facts.clone();
    assert_eq!(
        store.write_import(&too_large).await.map(|_| ()),
        Err(StoreError::Full)
    );
    assert_eq!(store.load_user_facts().await.unwrap(), vec![older]);

    store.write_import(&plan).await.unwrap();
    let mut got = store.load_user_facts().await.unwrap();
    got.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(got, vec![live, gone]);
    finish(store).await;
}

fn project(id: &str, name: &str, deleted: Option<i64>) -> Project {
    Project {
        id: id.into(),
        name: name.into(),
        instructions: format!("Instructions of {name}."),
        created_at: 5,
        updated_at: 6,
        deleted,
    }
}

#[wasm_bindgen_test]
async fn projects_are_kept_whole_with_their_tombstones() {
    let store = fresh("projects").await;
    assert_eq!(store.load_projects().await.unwrap(), vec![]);
    let (a, b) = (
        project("p1", "Garden", None),
        project("p2", "Work", Some(9)),
    );
    store.save_projects(&[&a, &b]).await.unwrap();
    let mut renamed = a.clone();
    (renamed.name, renamed.updated_at) = ("Roses".into(), 20);
    store.save_projects(&[&renamed]).await.unwrap();
    let mut got = store.load_projects().await.unwrap();
    got.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(got, vec![renamed, b]);
    finish(store).await;
}

#[wasm_bindgen_test]
async fn an_imports_projects_and_membership_are_written_in_its_transaction_or_not_at_all() {
    use memoire::engine::backup::export_with_projects;
    let garden = project("p1", "Garden", None);
    let json = export_with_projects(&[], &[], &[], &[&garden], 1000);
    let store = small("import-projects").await;
    let checked = check_import(json.as_bytes(), &ImportLimits::default()).unwrap();
    let existing = store.existing_ids_for(&checked).await.unwrap();
    let plan = checked.plan(&existing).unwrap();
    assert_eq!(plan.projects, vec![garden.clone()]);

    // A write the quota cannot hold: the project is not written either.
    let mut too_large = plan_of("c", 1);
    too_large.messages[0].content = too_big();
    too_large.projects = plan.projects.clone();
    assert_eq!(
        store.write_import(&too_large).await.map(|_| ()),
        Err(StoreError::Full)
    );
    assert_eq!(store.load_projects().await.unwrap(), vec![]);

    // With a conversation of it: both written, the membership read back.
    let mut with_member = plan_of("c", 1);
    with_member.conversations[0].memory_overrides.project = Some("p1".into());
    with_member.projects = plan.projects.clone();
    store.write_import(&with_member).await.unwrap();
    assert_eq!(store.load_projects().await.unwrap(), vec![garden]);
    let c = store.get_conversation("c").await.unwrap().unwrap();
    assert_eq!(c.memory_overrides.project.as_deref(), Some("p1"));
    finish(store).await;
}
