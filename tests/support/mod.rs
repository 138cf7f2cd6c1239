//! Shared by the browser tests of the store: each test gets a database of its own, and deletes it.
//! A store that must run out of room lives in a storage bucket with a small quota of its own, so a
//! write that does not fit fails in the browser itself: its transaction is aborted with a real
//! `QuotaExceededError`, read by the store's own abort path.
#![allow(dead_code)] // each test file uses only some of these

use std::cell::{Cell, RefCell};

use memoire::engine::backup::ImportPlan;
use memoire::engine::model::{Conversation, MemoryOverrides, Message};
use memoire::store::Store;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    static COUNTER: Cell<u32> = const { Cell::new(0) };
    /// Database name -> the storage bucket it lives in.
    static BUCKETS: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
}

#[wasm_bindgen(inline_js = r#"
export async function open_bucket(name, quota) {
  if (!navigator.storageBuckets) throw new Error("navigator.storageBuckets is not available");
  const bucket = await navigator.storageBuckets.open(name, { quota });
  return bucket.indexedDB;
}
export async function delete_bucket(name) {
  await navigator.storageBuckets.delete(name);
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    async fn open_bucket(name: &str, quota: f64) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch)]
    async fn delete_bucket(name: &str) -> Result<JsValue, JsValue>;
}

/// A database name no other test (or run) uses.
pub fn fresh_name(tag: &str) -> String {
    let n = COUNTER.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    format!("memoire-test-{tag}-{n}-{}", js_sys::Date::now() as u64)
}

/// A store over a new, empty database.
pub async fn fresh(tag: &str) -> Store {
    Store::open(&fresh_name(tag))
        .await
        .expect("open fresh store")
}

/// The quota of [`small`]'s bucket: room for the schema and small records, not for [`too_big`].
pub const SMALL_QUOTA: f64 = 256.0 * 1024.0;

/// A store over a new, empty database in a storage bucket of its own with a quota of
/// [`SMALL_QUOTA`] bytes.
pub async fn small(tag: &str) -> Store {
    let name = fresh_name(tag);
    let bucket = name
        .to_lowercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let factory: web_sys::IdbFactory = open_bucket(&bucket, SMALL_QUOTA)
        .await
        .expect("open a storage bucket")
        .unchecked_into();
    BUCKETS.with(|b| b.borrow_mut().push((name.clone(), bucket)));
    Store::open_in(&factory, &name)
        .await
        .expect("open a store in the bucket")
}

/// A message text larger than [`small`]'s whole quota, and incompressible (the browser compresses
/// what it stores, so a repeated letter would fit).
pub fn too_big() -> String {
    let mut x: u32 = 0x2545_f491;
    (0..4 * SMALL_QUOTA as usize)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            char::from(b'!' + (x % 90) as u8)
        })
        .collect()
}

/// Stores `messages` (at their own seqs) into an existing conversation the way the app's import
/// does: one plan, one `write_import` transaction.
pub async fn seed(store: &Store, messages: Vec<Message>) {
    let plan = ImportPlan {
        messages,
        ..ImportPlan::default()
    };
    store.write_import(&plan).await.expect("seed messages");
}

/// Closes the store and deletes its database (or its bucket).
pub async fn finish(store: Store) {
    let name = store.name().to_string();
    store.close();
    let bucket = BUCKETS.with(|b| {
        let mut b = b.borrow_mut();
        let i = b.iter().position(|(n, _)| *n == name)?;
        Some(b.remove(i).1)
    });
    match bucket {
        Some(bucket) => {
            delete_bucket(&bucket).await.expect("delete test bucket");
        }
        None => Store::delete_database(&name)
            .await
            .expect("delete test database"),
    }
}

/// A conversation `id` with nothing in it, as the store tests create one.
pub fn conv(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: "t".into(),
        title_is_custom: false,
        created_at: 1,
        updated_at: 1,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}
