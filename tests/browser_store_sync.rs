#![cfg(target_arch = "wasm32")]
//! Browser tests of sync's storage (src/store/sync_docs.rs): synced documents round-trip with their
//! revision and dirty flag, the dirty ones are found by index, a lost server marks everything dirty
//! again, a merged batch is written in one transaction (`sync_batch.rs`) and only once, sync state/settings/password are kept apart (the password with its origin, the encryption keys as non-extractable CryptoKeys), and a version-2 database upgrades to the
//! current one with its data intact. A fresh database per test.

use memoire::engine::model::*;
use memoire::engine::sync::convert::{conversation_doc, message_doc};
use memoire::engine::sync::{Body, Doc, Hlc, LocalDoc};
use memoire::store::{schema, Store, SyncSettings, SyncState, SyncedDoc, WritePace};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod support;
use support::{finish, fresh, fresh_name};

wasm_bindgen_test_configure!(run_in_browser);

/// Slices of `n` records, counted: the store's sliced reads and writes must cover every record.
struct Slices {
    n: usize,
    slices: usize,
    records: usize,
}

fn slices(n: usize) -> Slices {
    Slices {
        n,
        slices: 0,
        records: 0,
    }
}

impl WritePace for Slices {
    fn next(&mut self, _done: usize, _total: usize) -> Option<usize> {
        self.slices += 1;
        Some(self.n)
    }
    fn issued(&mut self, n: usize) {
        self.records += n;
    }
}

fn conv(id: &str, title: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: title.into(),
        title_is_custom: true,
        created_at: 1,
        updated_at: 1,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

fn doc(id: &str, title: &str) -> Doc {
    Doc::new(Body::Conversation(conversation_doc(
        &conv(id, title),
        &Hlc::new(5, 0, "dev"),
    )))
}

fn synced(id: &str, rev: Option<&str>, dirty: bool) -> SyncedDoc {
    SyncedDoc {
        local: LocalDoc {
            doc: doc(id, &format!("title {id}")),
            rev: rev.map(str::to_string),
        },
        dirty,
    }
}

#[wasm_bindgen_test]
async fn documents_round_trip_with_revision_and_dirty_flag() {
    let s = fresh("sync-docs").await;
    let a = synced("a", Some("1-x"), false);
    let b = synced("b", None, true);
    s.put_sync_docs(&[a.clone(), b.clone()], &mut slices(1))
        .await
        .unwrap();
    let ids = vec![
        a.local.doc.id.clone(),
        "c:nope".into(),
        b.local.doc.id.clone(),
    ];
    assert_eq!(s.sync_docs(&ids).await.unwrap(), vec![a.clone(), b.clone()]);
    assert_eq!(s.dirty_sync_docs().await.unwrap(), vec![b.local.clone()]);

    // Pushed: clean with its new revision, and no longer found as dirty.
    let b2 = SyncedDoc {
        local: LocalDoc {
            rev: Some("1-y".into()),
            ..b.local.clone()
        },
        dirty: false,
    };
    s.put_sync_docs(std::slice::from_ref(&b2), &mut slices(8))
        .await
        .unwrap();
    assert!(s.dirty_sync_docs().await.unwrap().is_empty());
    assert_eq!(
        s.sync_docs_with_prefix("c:").await.unwrap(),
        vec![a.clone(), b2]
    );
    assert!(s.sync_docs_with_prefix("m:").await.unwrap().is_empty());

    // The server lost everything: every document is dirty again without a revision.
    let all = s.mark_all_sync_docs_dirty().await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|d| d.rev.is_none()));
    assert_eq!(s.dirty_sync_docs().await.unwrap().len(), 2);

    s.clear_sync_docs().await.unwrap();
    assert!(s.sync_docs(&ids).await.unwrap().is_empty());
    finish(s).await;
}

fn message_doc_of(conversation: &str, k: u64) -> Doc {
    let m = Message {
        id: format!("{conversation}-m{k}"),
        conversation_id: conversation.into(),
        seq: k,
        role: Role::User,
        content: format!("message {k}"),
        status: MessageStatus::Complete,
        created_at: 10 + k as i64,
        meta: MessageMeta::default(),
    };
    Doc::new(Body::Message(
        message_doc(&m, &Hlc::new(6, k as u32, "dev")).unwrap(),
    ))
}

#[wasm_bindgen_test]
async fn a_merged_batch_is_written_in_one_transaction_and_only_once() {
    let s = fresh("sync-batch").await;
    // Messages first (their conversation's document comes last), more than one write slice.
    let mut batch: Vec<(Doc, String)> = (1..=300)
        .map(|k| (message_doc_of("c1", k), format!("1-m{k}")))
        .collect();
    batch.push((doc("c1", "Pulled"), "1-c".into()));
    let (mut reads, mut writes) = (slices(7), slices(64));
    let plan = s
        .apply_sync_batch(batch.clone(), &mut reads, &mut writes)
        .await
        .unwrap();
    assert_eq!(plan.changes.len(), 1);
    assert_eq!(plan.changes[0].added.len(), 300);
    // 301 documents and 300 messages written, ten slices of 64; reads in slices of 7.
    assert_eq!((writes.records, writes.slices), (601, 10));
    assert!(reads.slices > 301 / 7, "{}", reads.slices);
    let c = s.get_conversation("c1").await.unwrap().unwrap();
    assert_eq!((c.title.as_str(), c.message_count), ("Pulled", 300));
    let last = s.load_last("c1", 2).await.unwrap();
    assert_eq!(
        last.iter()
            .map(|m| (m.id.as_str(), m.seq))
            .collect::<Vec<_>>(),
        [("c1-m299", 299), ("c1-m300", 300)]
    );
    assert_eq!(s.sync_doc_ids().await.unwrap().len(), 301);
    let stored = s.sync_docs(&["m:c1-m7".to_string()]).await.unwrap();
    assert_eq!(stored[0].local.rev.as_deref(), Some("1-m7"));
    assert!(!stored[0].dirty);
    // The same page again (this device's own push coming back): nothing changes.
    let again = s
        .apply_sync_batch(batch, &mut slices(50), &mut slices(50))
        .await
        .unwrap();
    assert!(again.changes.is_empty() && again.docs.is_empty());
    assert_eq!(
        s.get_conversation("c1")
            .await
            .unwrap()
            .unwrap()
            .message_count,
        300
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn tombstones_in_a_page_blank_messages_and_remove_conversations_in_its_transaction() {
    let s = fresh("sync-batch-deletes").await;
    let mut batch: Vec<(Doc, String)> = Vec::new();
    for c in ["c1", "c2"] {
        batch.push((doc(c, c), format!("1-{c}")));
        batch.extend((1..=3).map(|k| (message_doc_of(c, k), format!("1-{c}m{k}"))));
    }
    s.apply_sync_batch(batch, &mut slices(4), &mut slices(4))
        .await
        .unwrap();
    let summary = ConversationSummary {
        conversation_id: "c2".into(),
        version: 1,
        text: "c2's summary".into(),
        covers_up_to_seq: 3,
        message_count: 3,
        updated_at: 1,
    };
    s.save_summary(&summary).await.unwrap();
    let at = Hlc::new(9, 0, "dev");
    let tomb = |id: &str| (Doc::tombstone(id, &at).unwrap(), format!("2-{id}"));
    let plan = s
        .apply_sync_batch(
            vec![tomb("m:c1-m2"), tomb("c:c2"), tomb("m:c2-m1")],
            &mut slices(4),
            &mut slices(4),
        )
        .await
        .unwrap();
    assert_eq!(plan.removed, ["c2"]);
    assert!(plan.later.is_empty());
    // c1's message keeps its place as a blank tombstone; c2 is gone with its messages and memory.
    let m = s.get_message("c1-m2").await.unwrap().unwrap();
    assert!(m.meta.deleted && m.content.is_empty() && m.seq == 2);
    assert!(s.get_conversation("c2").await.unwrap().is_none());
    assert!(s.get_message("c2-m1").await.unwrap().is_none());
    assert!(s.load_summaries("c2").await.unwrap().is_empty());
    // Summary versions of a cleared conversation go by number.
    s.save_summary(&ConversationSummary {
        conversation_id: "c1".into(),
        ..summary.clone()
    })
    .await
    .unwrap();
    s.save_summary(&ConversationSummary {
        conversation_id: "c1".into(),
        version: 2,
        ..summary
    })
    .await
    .unwrap();
    s.delete_summaries("c1", &[1]).await.unwrap();
    let left: Vec<u32> = s
        .load_summaries("c1")
        .await
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(left, [2]);
    finish(s).await;
}

#[wasm_bindgen_test]
async fn state_settings_and_password_are_kept_apart() {
    let s = fresh("sync-state").await;
    assert_eq!(s.sync_state().await.unwrap(), SyncState::default());
    assert_eq!(s.sync_settings().await.unwrap(), SyncSettings::default());
    assert_eq!(s.sync_password().await.unwrap(), "");

    let st = SyncState {
        device: "d1".into(),
        last_stamp: Some(Hlc::new(1234, 7, "d1")),
        since: Some("12-abc".into()),
        since_for: Some("http://x/db".into()),
    };
    s.set_sync_state(&st).await.unwrap();
    let cfg = SyncSettings {
        url: "http://127.0.0.1:5984".into(),
        database: "memoire".into(),
        user: "ann".into(),
        enabled: true,
        encrypt: true,
    };
    s.set_sync_settings(&cfg).await.unwrap();
    s.set_sync_password("s3cret").await.unwrap();
    assert_eq!(s.sync_state().await.unwrap(), st);
    assert_eq!(s.sync_settings().await.unwrap(), cfg);
    assert_eq!(s.sync_password().await.unwrap(), "s3cret");
    // A clock that never ticked (`i64::MIN`, which a JS number cannot hold) is kept as no stamp.
    let fresh_clock = SyncState {
        last_stamp: Some(Hlc::new(i64::MIN, 0, "d1")),
        ..st.clone()
    };
    s.set_sync_state(&fresh_clock).await.unwrap();
    assert_eq!(
        s.sync_state().await.unwrap(),
        SyncState {
            last_stamp: None,
            ..st.clone()
        }
    );
    // Not in the plain settings.
    assert_eq!(s.get_setting("password").await.unwrap(), None);
    assert_eq!(s.get_setting("sync").await.unwrap(), None);
    finish(s).await;
}

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

#[wasm_bindgen_test]
async fn a_version_2_database_upgrades_with_its_data_intact() {
    // Version 2 as it was shipped, built by hand (not by today's upgrade code).
    let name = fresh_name("sync-upgrade");
    let v2 = raw_open(&name, 2, |db| {
        let by = |k: &str| {
            let p = web_sys::IdbObjectStoreParameters::new();
            p.set_key_path(&k.into());
            p
        };
        let pair = |a: &str, b: &str| {
            let p = web_sys::IdbObjectStoreParameters::new();
            let arr: js_sys::Array = [a, b].iter().map(|s| JsValue::from_str(s)).collect();
            p.set_key_path(&arr);
            p
        };
        let c = db
            .create_object_store_with_optional_parameters("conversations", &by("id"))
            .unwrap();
        c.create_index_with_str("by_updated_at", "updated_at")
            .unwrap();
        let m = db
            .create_object_store_with_optional_parameters("messages", &by("id"))
            .unwrap();
        let seq: js_sys::Array = ["conversation_id", "seq"]
            .iter()
            .map(|s| JsValue::from_str(s))
            .collect();
        let unique = web_sys::IdbIndexParameters::new();
        unique.set_unique(true);
        m.create_index_with_str_sequence_and_optional_parameters(
            "by_conversation_seq",
            &seq,
            &unique,
        )
        .unwrap();
        m.create_index_with_str("by_streaming", "streaming")
            .unwrap();
        db.create_object_store_with_optional_parameters(
            "summaries",
            &pair("conversation_id", "version"),
        )
        .unwrap();
        db.create_object_store_with_optional_parameters("entities", &pair("scope", "id"))
            .unwrap();
        db.create_object_store_with_optional_parameters("settings", &by("key"))
            .unwrap();
        db.create_object_store_with_optional_parameters("meta", &by("key"))
            .unwrap();
        db.create_object_store("legacy_messages").unwrap();
    })
    .await;
    // Data written by the version-2 app, as it wrote it.
    {
        let db = v2;
        let tx = db
            .transaction_with_str_sequence_and_mode(
                &js_sys::Array::of3(
                    &"conversations".into(),
                    &"settings".into(),
                    &"messages".into(),
                ),
                web_sys::IdbTransactionMode::Readwrite,
            )
            .unwrap();
        let rec = serde_json::json!({
            "id": "c1", "title": "Kept", "title_is_custom": true, "created_at": 1, "updated_at": 2,
            "message_count": 0, "last_seq": 0, "endpoint_profile_id": null, "remote_handle": null,
            "last_path": null, "overrides": {}
        });
        tx.object_store("conversations")
            .unwrap()
            .put(&js_sys::JSON::parse(&rec.to_string()).unwrap())
            .unwrap();
        tx.object_store("settings")
            .unwrap()
            .put(&js_sys::JSON::parse(r#"{"key":"theme","value":"dark"}"#).unwrap())
            .unwrap();
        let m = serde_json::json!({
            "id": "m1", "conversation_id": "c1", "seq": 1, "role": "user",
            "content": "An old note about Zanzibar", "status": "complete", "created_at": 1
        });
        tx.object_store("messages")
            .unwrap()
            .put(&js_sys::JSON::parse(&m.to_string()).unwrap())
            .unwrap();
        JsFuture::from(js_sys::Promise::new(&mut |res, rej| {
            tx.set_oncomplete(Some(&res));
            tx.set_onabort(Some(&rej));
        }))
        .await
        .expect("v2 data written");
        db.close();
    }

    let s = Store::open(&name)
        .await
        .expect("upgrade to the current version");
    assert_eq!(schema::DB_VERSION, 7);
    let c = s
        .get_conversation("c1")
        .await
        .unwrap()
        .expect("conversation kept");
    assert_eq!(c.title, "Kept");
    assert_eq!(
        s.get_setting("theme").await.unwrap(),
        Some(serde_json::json!("dark"))
    );
    // The new stores work.
    s.put_sync_docs(&[synced("c1", None, true)], &mut slices(8))
        .await
        .unwrap();
    assert_eq!(s.dirty_sync_docs().await.unwrap().len(), 1);
    s.set_sync_password("p").await.unwrap();
    assert_eq!(s.sync_password().await.unwrap(), "p");
    // Schema 6's projects store; the v2 conversation reads as in no project.
    assert_eq!(s.load_projects().await.unwrap(), vec![]);
    assert_eq!(c.memory_overrides.project, None);
    // Schema 7's images: the v2 message has none, and the Blob store is there, empty.
    let m1 = s.get_message("m1").await.unwrap().unwrap();
    assert!(m1.meta.attachments.is_empty());
    assert_eq!(s.attachment_usage().await.unwrap().count, 0);
    // Schema 4's search indexes cover what was stored before them (migration 2).
    let titles = s.search_titles("kep", 10).await.unwrap();
    assert_eq!(
        titles.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["c1"]
    );
    let hits = s.search_messages("zanzibar", 10).await.unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        (hits[0].message_id.as_str(), hits[0].title.as_str()),
        ("m1", "Kept")
    );
    finish(s).await;
}

/// A non-extractable WebCrypto key for `algorithm` (a JSON object) and `usages`.
async fn crypto_key(algorithm: &str, usages: &[&str]) -> web_sys::CryptoKey {
    let subtle = web_sys::window().unwrap().crypto().unwrap().subtle();
    let alg: js_sys::Object = js_sys::JSON::parse(algorithm).unwrap().unchecked_into();
    let usages: js_sys::Array = usages.iter().map(|u| JsValue::from_str(u)).collect();
    let p = subtle
        .generate_key_with_object(&alg, false, &usages)
        .unwrap();
    JsFuture::from(p).await.unwrap().unchecked_into()
}

#[wasm_bindgen_test]
async fn encryption_keys_come_back_usable_and_unreadable_and_the_password_keeps_its_origin() {
    let s = fresh("sync-keys").await;
    assert!(s.sync_keys().await.unwrap().is_none());
    let aes = crypto_key(
        r#"{"name":"AES-GCM","length":256}"#,
        &["encrypt", "decrypt"],
    )
    .await;
    let mac = crypto_key(r#"{"name":"HMAC","hash":"SHA-256"}"#, &["sign"]).await;
    // While the passphrase changes, the old keys are kept beside the new ones.
    let rotating = memoire::store::SyncKeys {
        database: "http://h:5984/memoire".into(),
        salt: "bmV3".into(),
        aes: aes.clone(),
        mac: mac.clone(),
        old: Some(memoire::store::OldKeys {
            salt: "b2xk".into(),
            aes: aes.clone(),
            mac: mac.clone(),
        }),
    };
    s.set_sync_keys(&rotating).await.unwrap();
    let back = s.sync_keys().await.unwrap().expect("kept");
    let old = back.old.expect("the old keys kept");
    assert_eq!((back.salt.as_str(), old.salt.as_str()), ("bmV3", "b2xk"));
    assert!(!old.aes.extractable() && !old.mac.extractable());
    let keys = memoire::store::SyncKeys {
        database: "http://h:5984/memoire".into(),
        salt: "c2FsdA==".into(),
        aes,
        mac,
        old: None,
    };
    s.set_sync_keys(&keys).await.unwrap();
    let back = s.sync_keys().await.unwrap().expect("kept");
    assert_eq!(
        (back.database.as_str(), back.salt.as_str()),
        ("http://h:5984/memoire", "c2FsdA==")
    );
    assert!(back.old.is_none(), "the change done: the old keys are gone");
    assert!(!back.aes.extractable() && !back.mac.extractable());
    // Still usable after the round trip through IndexedDB.
    let subtle = web_sys::window().unwrap().crypto().unwrap().subtle();
    let alg: js_sys::Object = js_sys::JSON::parse(r#"{"name":"HMAC"}"#)
        .unwrap()
        .unchecked_into();
    let signed = subtle
        .sign_with_object_and_u8_array(&alg, &back.mac, b"m:1")
        .unwrap();
    let mac = js_sys::Uint8Array::new(&JsFuture::from(signed).await.unwrap());
    assert_eq!(mac.length(), 32);
    s.delete_sync_keys().await.unwrap();
    assert!(s.sync_keys().await.unwrap().is_none());

    // A password saved before origins were kept has none (it belongs to the saved URL).
    s.set_sync_password("old").await.unwrap();
    assert_eq!(s.saved_sync_password().await.unwrap().origin, None);
    s.set_sync_password_for("new", Some("https://h.example"))
        .await
        .unwrap();
    let saved = s.saved_sync_password().await.unwrap();
    assert_eq!(
        (saved.password.as_str(), saved.origin.as_deref()),
        ("new", Some("https://h.example"))
    );
    finish(s).await;
}
