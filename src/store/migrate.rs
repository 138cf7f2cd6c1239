//! Numbered data migrations, each run exactly once: a migration does its work and writes its
//! `meta` record (`migration:<n>`) in ONE readwrite transaction, after checking inside that same
//! transaction that the record is absent. A tab closed halfway aborts the transaction (nothing applied,
//! it runs again next time); two tabs racing are serialised by IndexedDB and the second sees the record.
//!
//! Migration 1 imports the legacy flat message list (v1 `messages`, renamed `legacy_messages` by the
//! schema upgrade; records like `{id, agent_id, role, content, timestamp}`) into one
//! "Previous conversation" per source (`agent_id`). Records it cannot read are left in
//! `legacy_messages` (never deleted) and counted in the log.
//!
//! Migration 2 gives the messages and conversations stored before schema 4 their search terms
//! (`terms`, `title_terms`: `engine::search::index_terms`), so the `by_term` and `by_title_term`
//! indexes cover them; it reads the messages in chunks of 1,000 inside its one transaction. A record
//! it cannot read is left as it is (and counted).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::error::StoreError;
use super::idb::{request, to_js};
use super::records::{ConversationRecord, MessageRecord, OverridesRecord};
use super::schema::{CONVERSATIONS, LEGACY_MESSAGES, MESSAGES, META};
use super::Store;
use crate::engine::model::{Millis, Role};

/// One applied migration, as stored in `meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigrationRecord {
    pub key: String,
    pub number: u32,
    pub name: String,
    pub applied_at: Millis,
    pub detail: String,
}

/// Title of the conversations made from legacy messages.
pub const LEGACY_TITLE: &str = "Previous conversation";

const MIGRATIONS: &[(u32, &str)] = &[
    (1, "import legacy flat message list"),
    (2, "index the search terms of stored messages and titles"),
];

/// Runs the migrations not yet applied ([`pending`], then [`apply`]).
pub(crate) async fn run(store: &Store) -> Result<(), StoreError> {
    let pending = pending(store).await?;
    apply(store, &pending).await
}

/// Runs the migrations of `pending` (numbers [`pending`] gave), in order. The opening reaches this
/// through split point `migrate` (`session/shared/open.rs`): it runs only for a database made by an
/// older version, so a first visit never fetches it ([`born_applied`]).
pub(crate) async fn apply(store: &Store, pending: &[u32]) -> Result<(), StoreError> {
    for &(number, name) in MIGRATIONS.iter().filter(|m| pending.contains(&m.0)) {
        // Each migration's code is its own function (`outlined`): it runs once in a database's
        // life, so the opening's own code does not carry it.
        match number {
            1 => super::outlined(import_legacy(store, number, name)).await?,
            2 => super::outlined(index_search_terms(store, number, name)).await?,
            _ => unreachable_migration(number)?,
        }
    }
    Ok(())
}

/// A database created just now (from nothing, in its versionchange transaction `tx`) has nothing
/// to migrate: every migration is recorded as applied there, so its first start runs none.
pub(crate) fn born_applied(tx: &web_sys::IdbTransaction) -> Result<(), StoreError> {
    let meta = tx.object_store(META).map_err(super::idb::js_error)?;
    for &(number, name) in MIGRATIONS {
        let record = MigrationRecord {
            key: meta_key(number),
            number,
            name: name.to_string(),
            applied_at: js_sys::Date::now() as Millis,
            detail: "a new database: nothing to migrate".into(),
        };
        meta.put(&to_js(&record)?).map_err(super::idb::js_error)?;
    }
    Ok(())
}

/// The migrations whose `meta` record is absent, read in one read-only transaction. On every start
/// but the first few, that read is all the opening does (a readwrite transaction per migration
/// would be committed on each start for nothing). Each migration still checks its record again
/// inside its own transaction, so two tabs opening at once apply it once.
pub(crate) async fn pending(store: &Store) -> Result<Vec<u32>, StoreError> {
    let tx = store.tx(&[META], false)?;
    let meta = tx.store(META)?;
    let mut out = Vec::new();
    for &(number, _) in MIGRATIONS {
        if !applied(&meta, &meta_key(number)).await? {
            out.push(number);
        }
    }
    Ok(out)
}

fn unreachable_migration(n: u32) -> Result<(), StoreError> {
    Err(StoreError::Idb {
        name: "MigrationError".into(),
        message: format!("no code for migration {n}"),
    })
}

fn meta_key(n: u32) -> String {
    format!("migration:{n}")
}

/// A legacy message, read leniently.
struct Legacy {
    key: JsValue,
    id: String,
    agent: String,
    role: Role,
    content: String,
    at: Millis,
    pos: usize,
}

fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn legacy_role(s: &str) -> Option<Role> {
    match s.trim().to_ascii_lowercase().as_str() {
        "user" | "human" => Some(Role::User),
        "assistant" | "agent" | "bot" | "ai" => Some(Role::Assistant),
        "system" => Some(Role::System),
        "tool" => Some(Role::Tool),
        _ => None,
    }
}

fn legacy_time(v: Option<&Value>) -> Millis {
    match v {
        Some(Value::Number(n)) => {
            let t = n.as_f64().unwrap_or(0.0);
            // Seconds (SQLite unixepoch) vs milliseconds.
            let ms = if t.abs() < 1e11 { t * 1000.0 } else { t };
            if ms.is_finite() {
                ms as Millis
            } else {
                0
            }
        }
        Some(Value::String(s)) => {
            let s = s.trim();
            // SQLite CURRENT_TIMESTAMP ("YYYY-MM-DD HH:MM:SS") is UTC; read it as such, not local.
            let sqlite = s.len() == 19 && s.as_bytes().get(10) == Some(&b' ');
            let t = if sqlite {
                js_sys::Date::parse(&format!("{}Z", s.replacen(' ', "T", 1)))
            } else {
                js_sys::Date::parse(s)
            };
            if t.is_nan() {
                0
            } else {
                t as Millis
            }
        }
        _ => 0,
    }
}

fn parse_legacy(key: JsValue, v: &Value, pos: usize) -> Option<Legacy> {
    let o = v.as_object()?;
    let id = text_of(o.get("id"))
        .or_else(|| key.as_string())
        .or_else(|| key.as_f64().map(|n| n.to_string()))?;
    let agent =
        text_of(o.get("agent_id").or_else(|| o.get("agentId"))).unwrap_or_else(|| "default".into());
    let role = legacy_role(o.get("role")?.as_str()?)?;
    let content = o.get("content")?.as_str()?.to_string();
    let at = legacy_time(
        o.get("timestamp")
            .or_else(|| o.get("created_at"))
            .or_else(|| o.get("createdAt")),
    );
    Some(Legacy {
        key,
        id,
        agent,
        role,
        content,
        at,
        pos,
    })
}

/// Migration 1: the legacy list's readable records become one conversation per source, in one
/// transaction with the migration's `meta` record (nothing, when that record is there).
async fn import_legacy(store: &Store, number: u32, name: &str) -> Result<(), StoreError> {
    let tx = store.tx(&[META, LEGACY_MESSAGES, MESSAGES, CONVERSATIONS], true)?;
    let meta = tx.store(META)?;
    let key = meta_key(number);
    if applied(&meta, &key).await? {
        return tx.done().await;
    }
    let legacy = tx.store(LEGACY_MESSAGES)?;
    let (groups, unreadable) = read_legacy(&legacy).await?;
    let messages = tx.store(MESSAGES)?;
    let conversations = tx.store(CONVERSATIONS)?;
    let mut imported = 0usize;
    let n_conv = groups.len();
    for (agent, mut msgs) in groups {
        crate::engine::sort::sort_by(&mut msgs, |a, b| a.at.cmp(&b.at).then(a.pos.cmp(&b.pos)));
        let conv_id = format!("legacy-{agent}");
        for (i, m) in msgs.iter().enumerate() {
            let rec = legacy_message_record(&conv_id, i, m);
            messages.put(&to_js(&rec)?).map_err(super::idb::js_error)?;
            legacy.delete(&m.key).map_err(super::idb::js_error)?;
        }
        imported += msgs.len();
        let conv = legacy_conversation_record(conv_id, &msgs);
        conversations
            .put(&to_js(&conv)?)
            .map_err(super::idb::js_error)?;
    }
    let record = MigrationRecord {
        key,
        number,
        name: name.to_string(),
        applied_at: js_sys::Date::now() as Millis,
        detail: format!(
            "imported {imported} messages into {n_conv} conversations; {unreadable} unreadable records kept in {LEGACY_MESSAGES}"
        ),
    };
    meta.put(&to_js(&record)?).map_err(super::idb::js_error)?;
    tx.done().await
}

/// The legacy list's readable records grouped by source (`agent_id`), each in store order, and how
/// many records could not be read.
async fn read_legacy(
    legacy: &web_sys::IdbObjectStore,
) -> Result<(BTreeMap<String, Vec<Legacy>>, usize), StoreError> {
    let keys_req = legacy.get_all_keys().map_err(super::idb::js_error)?;
    let vals_req = legacy.get_all().map_err(super::idb::js_error)?;
    let keys: js_sys::Array = request(&keys_req).await?.into();
    let vals: js_sys::Array = request(&vals_req).await?.into();
    let mut groups: BTreeMap<String, Vec<Legacy>> = BTreeMap::new();
    let mut unreadable = 0usize;
    for (pos, (k, v)) in keys.iter().zip(vals.iter()).enumerate() {
        let parsed = super::idb::from_js::<Value>(v, "legacy message")
            .ok()
            .and_then(|v| parse_legacy(k, &v, pos));
        match parsed {
            Some(l) => groups.entry(l.agent.clone()).or_default().push(l),
            None => unreadable += 1,
        }
    }
    Ok((groups, unreadable))
}

/// The message record of the `i`-th (0-based, in time order) legacy message of a conversation.
fn legacy_message_record(conv_id: &str, i: usize, m: &Legacy) -> MessageRecord {
    MessageRecord {
        id: m.id.clone(),
        conversation_id: conv_id.to_string(),
        seq: i as u64 + 1,
        role: m.role.as_str().to_string(),
        content: m.content.clone(),
        status: "complete".into(),
        created_at: m.at,
        tool_calls: Vec::new(),
        usage: None,
        error: None,
        path: None,
        model: None,
        streaming: None,
        terms: crate::engine::search::index_terms(&m.content),
        after: None,
        replaces: None,
        deleted: false,
        hidden: false,
        reasoning: None,
        stats: None,
        capped: false,
        attachments: Vec::new(),
        attachment_hashes: Vec::new(),
    }
}

/// The "Previous conversation" record holding one source's legacy messages (`msgs`, in time order).
fn legacy_conversation_record(conv_id: String, msgs: &[Legacy]) -> ConversationRecord {
    ConversationRecord {
        id: conv_id,
        title: LEGACY_TITLE.to_string(),
        title_is_custom: false,
        created_at: msgs.iter().map(|m| m.at).min().unwrap_or(0),
        updated_at: msgs.iter().map(|m| m.at).max().unwrap_or(0),
        message_count: msgs.len() as u64,
        last_seq: msgs.len() as u64,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        overrides: OverridesRecord::default(),
        title_terms: crate::engine::search::index_terms(LEGACY_TITLE),
    }
}

/// True when migration `key` is recorded in `meta` (read inside the migration's own transaction,
/// or the read-only one of [`pending`]).
async fn applied(meta: &web_sys::IdbObjectStore, key: &str) -> Result<bool, StoreError> {
    let done = request(
        &meta
            .get(&JsValue::from_str(key))
            .map_err(super::idb::js_error)?,
    )
    .await?;
    Ok(!done.is_undefined())
}

async fn index_search_terms(store: &Store, number: u32, name: &str) -> Result<(), StoreError> {
    use crate::engine::search::index_terms;
    const CHUNK: u32 = 1000;
    let tx = store.tx(&[META, MESSAGES, CONVERSATIONS], true)?;
    let meta = tx.store(META)?;
    let key = meta_key(number);
    if applied(&meta, &key).await? {
        return tx.done().await;
    }
    let (mut indexed, mut unreadable) = (0usize, 0usize);
    let conversations = tx.store(CONVERSATIONS)?;
    let all: js_sys::Array = request(&conversations.get_all().map_err(super::idb::js_error)?)
        .await?
        .into();
    for v in all.iter() {
        match super::idb::from_js::<ConversationRecord>(v, "conversation") {
            Ok(mut rec) => {
                rec.title_terms = index_terms(&rec.title);
                conversations
                    .put(&to_js(&rec)?)
                    .map_err(super::idb::js_error)?;
            }
            Err(_) => unreadable += 1,
        }
    }
    let messages = tx.store(MESSAGES)?;
    let mut after: Option<JsValue> = None;
    loop {
        let range: JsValue = match &after {
            None => JsValue::UNDEFINED,
            Some(k) => web_sys::IdbKeyRange::lower_bound_with_open(k, true)
                .map_err(super::idb::js_error)?
                .into(),
        };
        let keys_req = messages
            .get_all_keys_with_key_and_limit(&range, CHUNK)
            .map_err(super::idb::js_error)?;
        let vals_req = messages
            .get_all_with_key_and_limit(&range, CHUNK)
            .map_err(super::idb::js_error)?;
        let keys: js_sys::Array = request(&keys_req).await?.into();
        let vals: js_sys::Array = request(&vals_req).await?.into();
        for v in vals.iter() {
            match super::idb::from_js::<MessageRecord>(v, "message") {
                Ok(mut rec) => {
                    rec.terms = index_terms(&rec.content);
                    messages.put(&to_js(&rec)?).map_err(super::idb::js_error)?;
                    indexed += 1;
                }
                Err(_) => unreadable += 1,
            }
        }
        if keys.length() < CHUNK {
            break;
        }
        after = Some(keys.get(keys.length() - 1));
    }
    let record = MigrationRecord {
        key,
        number,
        name: name.to_string(),
        applied_at: js_sys::Date::now() as Millis,
        detail: format!(
            "indexed {indexed} messages and {} titles; {unreadable} unreadable records left as they were",
            all.length()
        ),
    };
    meta.put(&to_js(&record)?).map_err(super::idb::js_error)?;
    tx.done().await
}
