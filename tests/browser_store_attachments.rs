#![cfg(target_arch = "wasm32")]
//! Browser tests of the images' Blobs (headless Chromium, a fresh database each): the upgrade from
//! schema 6 keeps what was stored and adds the Blob store, one image is stored once however many
//! messages use it, a deleted conversation frees the Blobs no other message uses, and the start-up
//! sweep frees an old image no message uses while it keeps a used one and another tab's fresh one.

use memoire::engine::model::*;
use memoire::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod support;
use support::{conv, finish, fresh, fresh_name};

wasm_bindgen_test_configure!(run_in_browser);

fn image(name: &str, hash: &str) -> Attachment {
    Attachment {
        kind: AttachmentKind::Image,
        name: name.into(),
        mime: "image/png".into(),
        size: 3,
        hash: hash.into(),
        width: 2,
        height: 1,
        text: String::new(),
    }
}

fn with_images(conv: &str, id: &str, images: Vec<Attachment>) -> Message {
    let meta = MessageMeta {
        attachments: images,
        ..MessageMeta::default()
    };
    Message::from_user(id.into(), conv, format!("look {id}"), 5, meta)
}

fn blob(bytes: &[u8]) -> web_sys::Blob {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type("image/png");
    web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts).unwrap()
}

async fn stored(s: &Store, hashes: &[&str]) -> Vec<bool> {
    let hashes: Vec<String> = hashes.iter().map(|h| h.to_string()).collect();
    s.attachment_blobs(&hashes)
        .await
        .unwrap()
        .iter()
        .map(Option::is_some)
        .collect()
}

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[wasm_bindgen_test]
async fn one_image_is_stored_once_and_freed_with_its_last_conversation() {
    let s = fresh("blobs").await;
    for c in ["c1", "c2"] {
        s.create_conversation(&conv(c)).await.unwrap();
    }
    // The same picture pasted twice (two puts), and one only c1 uses.
    let put = |h: &str, b: &[u8]| (h.to_string(), "image/png".to_string(), blob(b));
    s.put_attachment_blobs(&[put(A, b"one"), put(B, b"two")])
        .await
        .unwrap();
    s.put_attachment_blobs(&[put(A, b"one")]).await.unwrap();
    let usage = s.attachment_usage().await.unwrap();
    assert_eq!((usage.count, usage.bytes), (2, 6.0), "stored once each");
    s.append_message(&with_images(
        "c1",
        "m1",
        vec![image("x.png", A), image("y.png", B)],
    ))
    .await
    .unwrap();
    s.append_message(&with_images("c2", "m2", vec![image("x again.png", A)]))
        .await
        .unwrap();
    assert_eq!(s.attachment_users(A).await.unwrap(), 2);
    let read = s.get_message("m1").await.unwrap().unwrap();
    assert_eq!(read.meta.attachments[1], image("y.png", B), "read back");
    let back = s.attachment_blobs(&[A.to_string()]).await.unwrap();
    let back = back[0].as_ref().unwrap();
    assert_eq!((back.mime.as_str(), back.size), ("image/png", 3));

    assert!(s.delete_conversation("c1").await.unwrap());
    assert_eq!(stored(&s, &[A, B]).await, [true, false], "c2 still shows A");
    s.clear_conversation("c2", 9).await.unwrap();
    assert_eq!(stored(&s, &[A, B]).await, [false, false], "nothing uses A");
    finish(s).await;
}

async fn raw_v6(name: &str) {
    let factory: web_sys::IdbFactory = js_sys::Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into();
    let req = factory.open_with_u32(name, 6).unwrap();
    let r2 = req.clone();
    // The stores of schema 6 that this test writes to, as version 6 made them.
    let on_upgrade = Closure::once_into_js(move |_: JsValue| {
        let db: web_sys::IdbDatabase = r2.result().unwrap().unchecked_into();
        let p = web_sys::IdbObjectStoreParameters::new();
        p.set_key_path(&"id".into());
        let convs = db
            .create_object_store_with_optional_parameters("conversations", &p)
            .unwrap();
        convs
            .create_index_with_str("by_updated_at", "updated_at")
            .unwrap();
        let msgs = db
            .create_object_store_with_optional_parameters("messages", &p)
            .unwrap();
        let seq = js_sys::Array::of2(&"conversation_id".into(), &"seq".into());
        let unique = web_sys::IdbIndexParameters::new();
        unique.set_unique(true);
        msgs.create_index_with_str_sequence_and_optional_parameters(
            "by_conversation_seq",
            &seq,
            &unique,
        )
        .unwrap();
        msgs.create_index_with_str("by_streaming", "streaming")
            .unwrap();
        let c = r#"{"id":"old","title":"Before images","title_is_custom":false,"created_at":1,
            "updated_at":2,"message_count":1,"last_seq":1,"endpoint_profile_id":null,
            "remote_handle":null,"last_path":null,"overrides":{}}"#;
        let m = r#"{"id":"m-old","conversation_id":"old","seq":1,"role":"user",
            "content":"from version 6","status":"complete","created_at":2}"#;
        let tx = r2.transaction().unwrap();
        tx.object_store("conversations")
            .unwrap()
            .put(&js_sys::JSON::parse(c).unwrap())
            .unwrap();
        tx.object_store("messages")
            .unwrap()
            .put(&js_sys::JSON::parse(m).unwrap())
            .unwrap();
    });
    req.set_onupgradeneeded(Some(on_upgrade.unchecked_ref()));
    JsFuture::from(js_sys::Promise::new(&mut |res, rej| {
        req.set_onsuccess(Some(&res));
        req.set_onerror(Some(&rej));
    }))
    .await
    .expect("raw open at version 6");
    let db: web_sys::IdbDatabase = req.result().unwrap().unchecked_into();
    db.close();
}

#[wasm_bindgen_test]
async fn the_upgrade_from_6_keeps_every_message_and_adds_the_blob_store() {
    let name = fresh_name("v6");
    raw_v6(&name).await;
    let s = Store::open(&name).await.unwrap();
    let old = s.get_message("m-old").await.unwrap().unwrap();
    assert_eq!(
        (old.content.as_str(), old.meta.attachments.len()),
        ("from version 6", 0),
        "a message of version 6 reads as one without attachments"
    );
    // The new store and index work on the upgraded database.
    let put = (A.to_string(), "image/png".to_string(), blob(b"png"));
    s.put_attachment_blobs(&[put]).await.unwrap();
    s.append_message(&with_images("old", "m-new", vec![image("p.png", A)]))
        .await
        .unwrap();
    assert_eq!(s.attachment_users(A).await.unwrap(), 1);
    assert_eq!(s.load_last("old", 5).await.unwrap().len(), 2);
    assert!(s.delete_conversation("old").await.unwrap());
    assert_eq!(
        stored(&s, &[A]).await,
        [false],
        "freed with its conversation"
    );
    finish(s).await;
}

#[wasm_bindgen_test]
async fn a_message_that_lets_go_of_its_image_frees_it_unless_another_shows_it() {
    let s = fresh("let-go").await;
    s.create_conversation(&conv("c")).await.unwrap();
    let put = |h: &str| (h.to_string(), "image/png".to_string(), blob(b"x"));
    s.put_attachment_blobs(&[put(A), put(B)]).await.unwrap();
    s.append_message(&with_images(
        "c",
        "m1",
        vec![image("a.png", A), image("b.png", B)],
    ))
    .await
    .unwrap();
    s.append_message(&with_images("c", "m2", vec![image("a again.png", A)]))
        .await
        .unwrap();
    // m1 deleted: a tombstone without its text or its images.
    let tomb = MessageMeta {
        deleted: true,
        ..MessageMeta::default()
    };
    s.update_message("m1", "", MessageStatus::Complete, &tomb)
        .await
        .unwrap();
    s.free_attachment_blobs(&[A.to_string(), B.to_string()])
        .await
        .unwrap();
    assert_eq!(stored(&s, &[A, B]).await, [true, false], "m2 still shows A");
    finish(s).await;
}

#[wasm_bindgen_test]
async fn the_inventory_tells_sync_which_images_are_used_and_which_stored() {
    let s = fresh("inventory").await;
    s.create_conversation(&conv("c")).await.unwrap();
    let empty = s.blob_inventory().await.unwrap();
    assert!(empty.used.is_empty() && empty.stored.is_empty());
    // A used twice and stored; B used, not stored (another device's); a text file has no Blob.
    let put = |h: &str| (h.to_string(), "image/png".to_string(), blob(b"x"));
    s.put_attachment_blobs(&[put(A)]).await.unwrap();
    let file = Attachment {
        kind: AttachmentKind::File,
        name: "n.md".into(),
        mime: "text/markdown".into(),
        size: 2,
        hash: "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc".into(),
        text: "hi".into(),
        ..Attachment::default()
    };
    s.append_message(&with_images("c", "m1", vec![image("a.png", A), file]))
        .await
        .unwrap();
    s.append_message(&with_images(
        "c",
        "m2",
        vec![image("b.png", B), image("a2.png", A)],
    ))
    .await
    .unwrap();
    let inv = s.blob_inventory().await.unwrap();
    assert_eq!(inv.used, [A, B], "each once, sorted, images only");
    assert_eq!(inv.stored, [A]);
    let (conversation, b) = s.blob_user(B).await.unwrap().unwrap();
    assert_eq!((conversation.as_str(), b), ("c", image("b.png", B)));
    assert!(s.blob_user(&"d".repeat(64)).await.unwrap().is_none());
    finish(s).await;
}

const C: &str = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc";

#[wasm_bindgen_test]
async fn the_sweep_frees_an_old_unused_image_and_keeps_a_used_one_and_a_fresh_one() {
    use memoire::engine::attach::UNUSED_GRACE_MS as GRACE;
    let s = fresh("sweep").await;
    s.create_conversation(&conv("c")).await.unwrap();
    let put = |h: &str| {
        (
            h.to_string(),
            "image/png".to_string(),
            blob(h[..1].as_bytes()),
        )
    };
    let now = js_sys::Date::now() as Millis;
    let day = 24 * 60 * 60 * 1000;
    // A: attached a week and a day ago and removed unsent (or its draft abandoned); B: as old,
    // and sent; C: attached a minute ago in another tab, not sent yet.
    s.put_attachment_blobs_at(&[put(A), put(B)], now - GRACE - day)
        .await
        .unwrap();
    s.put_attachment_blobs_at(&[put(C)], now - 60_000)
        .await
        .unwrap();
    s.append_message(&with_images("c", "m", vec![image("b.png", B)]))
        .await
        .unwrap();
    assert_eq!(s.sweep_attachment_blobs(now, GRACE).await.unwrap(), 1);
    assert_eq!(stored(&s, &[A, B, C]).await, [false, true, true]);

    // A week later C's draft is gone: freed; B is still shown.
    let later = now + GRACE;
    assert_eq!(s.sweep_attachment_blobs(later, GRACE).await.unwrap(), 1);
    assert_eq!(stored(&s, &[A, B, C]).await, [false, true, false]);

    // An old unused image attached again starts its grace again.
    s.put_attachment_blobs_at(&[put(A)], later - GRACE - day)
        .await
        .unwrap();
    s.put_attachment_blobs_at(&[put(A)], later).await.unwrap();
    assert_eq!(s.sweep_attachment_blobs(later, GRACE).await.unwrap(), 0);
    assert_eq!(stored(&s, &[A]).await, [true]);
    // Let go of in the composer, it is freed at once; a used one is not.
    s.free_attachment_blobs(&[A.to_string(), B.to_string()])
        .await
        .unwrap();
    assert_eq!(stored(&s, &[A, B]).await, [false, true]);
    finish(s).await;
}
