//! The IndexedDB schema (object stores, key paths, indexes) and the structural upgrade that runs in
//! `onupgradeneeded`. Structural only: data moves happen later as guarded migrations (`migrate.rs`),
//! because an upgrade transaction cannot be resumed if the tab closes.
//!
//! Version history: 1 = legacy app (one `messages` store of flat records without conversation ids);
//! 2 = the chat schema. On 1 -> 2 the legacy `messages` store is renamed `legacy_messages` (keeping its
//! data untouched) and the new stores are created. 3 = adds `sync_docs` (the synced documents, with a
//! sparse `by_dirty` index) and `sync_state` (device, clock, checkpoint, sync config, password); 2 -> 3
//! only creates them. 4 = the search index: multiEntry indexes `by_term` on `messages.terms` and
//! `by_title_term` on `conversations.title_terms` (an inverted index the browser keeps up to date on
//! every write); 3 -> 4 only creates them, and migration 2 (`migrate.rs`) fills the terms of the
//! records stored before. 5 = adds `user_facts` (facts about the user, key path `id`); 4 -> 5 only
//! creates it. 6 = adds `projects` (conversations grouped with their own instructions, key path
//! `id`); 5 -> 6 only creates it: no record changes shape (a conversation's project is an optional
//! field of its overrides, absent in the records stored before, which reads as none). 7 = adds
//! `attachments` (the images' Blobs, content-addressed: key path `hash`, so one image is stored
//! once however many messages use it) and the multiEntry index `by_attachment` on
//! `messages.attachment_hashes` (which messages use a Blob: a deleted conversation frees a Blob
//! when that index no longer holds its hash); 6 -> 7 only creates them: messages stored before
//! have no attachments, read as none, and belong in no `by_attachment` entry, so no data
//! migration rewrites them.

use js_sys::Array;
use wasm_bindgen::JsValue;
use web_sys::{IdbDatabase, IdbIndexParameters, IdbObjectStoreParameters, IdbTransaction};

use super::error::StoreError;
use super::idb::js_error;

/// The IndexedDB version this code writes.
pub const DB_VERSION: u32 = 7;

pub const CONVERSATIONS: &str = "conversations";
pub const MESSAGES: &str = "messages";
pub const SUMMARIES: &str = "summaries";
pub const ENTITIES: &str = "entities";
pub const SETTINGS: &str = "settings";
pub const META: &str = "meta";
pub const LEGACY_MESSAGES: &str = "legacy_messages";
/// Synced documents by `_id` (key path `id`), each with its server revision (see `sync_docs.rs`).
pub const SYNC_DOCS: &str = "sync_docs";
/// Sync's own records by `key`: device and clock, checkpoint, config, password.
pub const SYNC_STATE: &str = "sync_state";
/// Facts about the user by `id` (see `user_facts.rs`).
pub const USER_FACTS: &str = "user_facts";
/// Projects by `id`, deleted ones as tombstones (see `projects.rs`).
pub const PROJECTS: &str = "projects";
/// Image Blobs by `hash` (SHA-256 hex of their bytes): `{hash, mime, size, blob}` (see
/// `attachments.rs`).
pub const ATTACHMENTS: &str = "attachments";
/// multiEntry `messages` index on `attachment_hashes` (each message under every Blob it uses).
pub const BY_ATTACHMENT: &str = "by_attachment";
/// Sparse `sync_docs` index on `dirty` (present only while a document waits to be pushed).
pub const BY_DIRTY: &str = "by_dirty";

/// `conversations` index on `updated_at` (listing most recent first).
pub const BY_UPDATED: &str = "by_updated_at";
/// multiEntry `messages` index on `terms` (each message under every word of its content).
pub const BY_TERM: &str = "by_term";
/// multiEntry `conversations` index on `title_terms` (each conversation under every word of its title).
pub const BY_TITLE_TERM: &str = "by_title_term";
/// `messages` index on `[conversation_id, seq]` (bounded range reads).
pub const BY_CONV_SEQ: &str = "by_conversation_seq";
/// Sparse `messages` index on `streaming` (present only while a reply streams): finds the streams a
/// crash left behind without scanning, and costs nothing for finished messages.
pub const BY_STREAMING: &str = "by_streaming";

fn has_store(db: &IdbDatabase, name: &str) -> bool {
    db.object_store_names().contains(name)
}

fn key_path_str(k: &str) -> IdbObjectStoreParameters {
    let p = IdbObjectStoreParameters::new();
    p.set_key_path(&JsValue::from_str(k));
    p
}

fn key_path_arr(k: &[&str]) -> IdbObjectStoreParameters {
    let p = IdbObjectStoreParameters::new();
    let a: Array = k.iter().map(|s| JsValue::from_str(s)).collect();
    p.set_key_path(&a);
    p
}

/// Brings the database from `old_version` to [`DB_VERSION`]. Runs inside the versionchange transaction.
pub fn upgrade(db: &IdbDatabase, tx: &IdbTransaction, old_version: u32) -> Result<(), StoreError> {
    if old_version < 2 && has_store(db, MESSAGES) && !has_store(db, LEGACY_MESSAGES) {
        // The v1 store has no conversation ids and maybe another key path: keep it aside, intact.
        let legacy = tx.object_store(MESSAGES).map_err(js_error)?;
        legacy.set_name(LEGACY_MESSAGES);
    }
    if !has_store(db, CONVERSATIONS) {
        let s = db
            .create_object_store_with_optional_parameters(CONVERSATIONS, &key_path_str("id"))
            .map_err(js_error)?;
        s.create_index_with_str(BY_UPDATED, "updated_at")
            .map_err(js_error)?;
    }
    if !has_store(db, MESSAGES) {
        let s = db
            .create_object_store_with_optional_parameters(MESSAGES, &key_path_str("id"))
            .map_err(js_error)?;
        let seq: Array = ["conversation_id", "seq"]
            .iter()
            .map(|s| JsValue::from_str(s))
            .collect();
        s.create_index_with_str_sequence_and_optional_parameters(BY_CONV_SEQ, &seq, &{
            let p = IdbIndexParameters::new();
            p.set_unique(true);
            p
        })
        .map_err(js_error)?;
        s.create_index_with_str(BY_STREAMING, "streaming")
            .map_err(js_error)?;
    }
    if !has_store(db, SUMMARIES) {
        db.create_object_store_with_optional_parameters(
            SUMMARIES,
            &key_path_arr(&["conversation_id", "version"]),
        )
        .map_err(js_error)?;
    }
    if !has_store(db, ENTITIES) {
        db.create_object_store_with_optional_parameters(ENTITIES, &key_path_arr(&["scope", "id"]))
            .map_err(js_error)?;
    }
    if !has_store(db, LEGACY_MESSAGES) {
        // Always present so the legacy-import migration has one shape to read.
        db.create_object_store(LEGACY_MESSAGES).map_err(js_error)?;
    }
    if !has_store(db, SYNC_DOCS) {
        let s = db
            .create_object_store_with_optional_parameters(SYNC_DOCS, &key_path_str("id"))
            .map_err(js_error)?;
        s.create_index_with_str(BY_DIRTY, "dirty")
            .map_err(js_error)?;
    }
    for (name, key) in [
        (SETTINGS, "key"),
        (META, "key"),
        (SYNC_STATE, "key"),
        (USER_FACTS, "id"),
        (PROJECTS, "id"),
        (ATTACHMENTS, "hash"),
    ] {
        if !has_store(db, name) {
            db.create_object_store_with_optional_parameters(name, &key_path_str(key))
                .map_err(js_error)?;
        }
    }
    multi_entry_index(tx, MESSAGES, BY_ATTACHMENT, "attachment_hashes")?;
    multi_entry_index(tx, MESSAGES, BY_TERM, "terms")?;
    multi_entry_index(tx, CONVERSATIONS, BY_TITLE_TERM, "title_terms")?;
    Ok(())
}

/// Creates the multiEntry index `name` on `store.key_path` unless it exists.
fn multi_entry_index(
    tx: &IdbTransaction,
    store: &str,
    name: &str,
    key_path: &str,
) -> Result<(), StoreError> {
    let s = tx.object_store(store).map_err(js_error)?;
    if s.index_names().contains(name) {
        return Ok(());
    }
    let p = IdbIndexParameters::new();
    p.set_multi_entry(true);
    s.create_index_with_str_and_optional_parameters(name, key_path, &p)
        .map_err(js_error)?;
    Ok(())
}
