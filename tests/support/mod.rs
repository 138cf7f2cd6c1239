//! Shared by the browser tests of the store: each test gets a database of its own, and deletes it.
#![allow(dead_code)] // each test file uses only some of these

use std::cell::Cell;

use memoire::store::Store;

thread_local! { static COUNTER: Cell<u32> = const { Cell::new(0) }; }

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

/// Closes the store and deletes its database.
pub async fn finish(store: Store) {
    let name = store.name().to_string();
    store.close();
    Store::delete_database(&name)
        .await
        .expect("delete test database");
}
