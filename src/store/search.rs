//! Search through the term indexes (schema 4): conversations whose title matches and messages whose
//! text matches, each read from one word's range of a multiEntry index (`by_title_term`,
//! `by_term`), never by scanning a store. The engine decides the words, the range and the match
//! (`engine::search`); this module only reads.
//!
//! A query reads the range of its longest word (capped at a few hundred records) and keeps the
//! records whose terms hold every word: a one-word query misses nothing within the cap, a query of
//! several words only looks at the first records of that range.
//!
//! Must not import: `ui`, `session`, `transport`.

use std::collections::{HashMap, HashSet};

use js_sys::Array;
use wasm_bindgen::JsValue;
use web_sys::{IdbIndex, IdbKeyRange};

use super::error::StoreError;
use super::idb::{from_js, get_each, js_error, request};
use super::messages::snippet_for;
use super::records::{ConversationRecord, MessageRecord};
use super::schema::{BY_TERM, BY_TITLE_TERM, CONVERSATIONS, MESSAGES};
use super::Store;
use crate::engine::model::{Conversation, Message, Role};
use crate::engine::search::{key_word, matches, prefix_range, query_words};

/// Characters of context either side of a match in a snippet.
const SNIPPET_CONTEXT: usize = 40;

/// One message that matches a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub conversation_id: String,
    /// The title of the message's conversation (read with the hit, so the list need not hold it).
    pub title: String,
    pub message_id: String,
    pub seq: u64,
    /// Who wrote the message (`None` for a role this build does not know).
    pub role: Option<Role>,
    /// Up to ~40 characters either side of the first match, with `…` where cut.
    pub snippet: String,
}

/// Records read from one word's range: enough for `limit` hits after duplicates (a record is in the
/// range once per term that starts with the word) and for the other words' filter.
fn candidates(limit: usize) -> u32 {
    u32::try_from(limit.saturating_mul(8).max(400)).unwrap_or(u32::MAX)
}

/// The records of `index` under a term starting with the query's longest word.
async fn read_range(index: &IdbIndex, key: &str, limit: usize) -> Result<Array, StoreError> {
    let (lo, hi) = prefix_range(key);
    let range =
        IdbKeyRange::bound(&JsValue::from_str(&lo), &JsValue::from_str(&hi)).map_err(js_error)?;
    Ok(request(
        &index
            .get_all_with_key_and_limit(&range, candidates(limit))
            .map_err(js_error)?,
    )
    .await?
    .into())
}

impl Store {
    /// Conversations whose title holds every word of `query` (a word may be the beginning of a
    /// title's word), most recently updated first, at most `limit`.
    pub async fn search_titles(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Conversation>, StoreError> {
        let words = query_words(query);
        let Some(key) = key_word(&words) else {
            return Ok(Vec::new());
        };
        let tx = self.tx(&[CONVERSATIONS], false)?;
        let index = tx
            .store(CONVERSATIONS)?
            .index(BY_TITLE_TERM)
            .map_err(js_error)?;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for v in read_range(&index, key, limit).await?.iter() {
            let rec: ConversationRecord = from_js(v, "conversation")?;
            if matches(&rec.title_terms, &words) && seen.insert(rec.id.clone()) {
                out.push(Conversation::try_from(rec)?);
            }
        }
        crate::engine::sort::sort_by(&mut out, |a, b| {
            b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id))
        });
        out.truncate(limit);
        Ok(out)
    }

    /// Messages whose text holds every word of `query` (a word may be the beginning of one of the
    /// text's words), across all conversations, at most `limit`, each with its conversation's title
    /// and a snippet around the match.
    pub async fn search_messages(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let words = query_words(query);
        let Some(key) = key_word(&words) else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let phrase = query.trim().to_lowercase();
        let tx = self.tx(&[MESSAGES, CONVERSATIONS], false)?;
        let index = tx.store(MESSAGES)?.index(BY_TERM).map_err(js_error)?;
        let mut seen = HashSet::new();
        let mut hits = Vec::new();
        for v in read_range(&index, key, limit).await?.iter() {
            let rec: MessageRecord = from_js(v, "message")?;
            if !matches(&rec.terms, &words) || !seen.insert(rec.id.clone()) {
                continue;
            }
            let snippet = snippet_for(&rec.content, &phrase, SNIPPET_CONTEXT)
                .or_else(|| snippet_for(&rec.content, key, SNIPPET_CONTEXT))
                .unwrap_or_else(|| {
                    crate::engine::format::clip(&crate::engine::format::one_line(&rec.content), 80)
                });
            hits.push(SearchHit {
                conversation_id: rec.conversation_id,
                title: String::new(),
                message_id: rec.id,
                seq: rec.seq,
                role: Role::parse(&rec.role),
                snippet,
            });
            if hits.len() >= limit {
                break;
            }
        }
        let titles = titles_of(&tx.store(CONVERSATIONS)?, &hits).await?;
        for h in &mut hits {
            h.title = titles.get(&h.conversation_id).cloned().unwrap_or_default();
        }
        Ok(hits)
    }
}

impl Store {
    /// What recall reads (`engine::memory::recall`): the messages indexed under a term starting
    /// with one of `words` (one range each, at most `limit` records per word; a message may come
    /// more than once), with their conversations (read in one batch; a message whose conversation
    /// is gone is left out). The engine decides which of them a prompt carries.
    pub async fn messages_under(
        &self,
        words: &[String],
        limit: usize,
    ) -> Result<Vec<(Message, Conversation)>, StoreError> {
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let tx = self.tx(&[MESSAGES, CONVERSATIONS], false)?;
        let index = tx.store(MESSAGES)?.index(BY_TERM).map_err(js_error)?;
        let mut found = Vec::new();
        for w in words {
            let (lo, hi) = prefix_range(w);
            let range = IdbKeyRange::bound(&JsValue::from_str(&lo), &JsValue::from_str(&hi))
                .map_err(js_error)?;
            let all: Array = request(
                &index
                    .get_all_with_key_and_limit(&range, u32::try_from(limit).unwrap_or(u32::MAX))
                    .map_err(js_error)?,
            )
            .await?
            .into();
            for v in all.iter() {
                let rec: MessageRecord = from_js(v, "message")?;
                found.push(Message::try_from(rec)?);
            }
        }
        let ids: Vec<&str> = {
            let mut seen = HashSet::new();
            found
                .iter()
                .map(|m| m.conversation_id.as_str())
                .filter(|id| seen.insert(*id))
                .collect()
        };
        let mut conversations = HashMap::new();
        for (id, v) in ids
            .iter()
            .zip(get_each(&tx.store(CONVERSATIONS)?, &ids).await?)
        {
            if !v.is_undefined() {
                let rec: ConversationRecord = from_js(v, "conversation")?;
                conversations.insert(id.to_string(), Conversation::try_from(rec)?);
            }
        }
        Ok(found
            .into_iter()
            .filter_map(|m| {
                let c = conversations.get(&m.conversation_id)?.clone();
                Some((m, c))
            })
            .collect())
    }
}

/// The titles of the hits' conversations, read in one batch of `get`s.
async fn titles_of(
    store: &web_sys::IdbObjectStore,
    hits: &[SearchHit],
) -> Result<HashMap<String, String>, StoreError> {
    let ids: Vec<&str> = {
        let mut seen = HashSet::new();
        hits.iter()
            .map(|h| h.conversation_id.as_str())
            .filter(|id| seen.insert(*id))
            .collect()
    };
    let mut out = HashMap::new();
    for (id, v) in ids.iter().zip(get_each(store, &ids).await?) {
        if !v.is_undefined() {
            let rec: ConversationRecord = from_js(v, "conversation")?;
            out.insert(id.to_string(), rec.title);
        }
    }
    Ok(out)
}
