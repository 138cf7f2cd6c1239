//! Checking an import before anything is stored: size, UTF-8, nesting depth (scanned before any
//! parser recurses), format and version, types, string lengths, ids, duplicates and references
//! inside the file; one parse of a good file. What the store holds is not looked at here (that is
//! `plan.rs`). Never panics, whatever the bytes. Must not import anything outside `crate::engine`.

use super::wire::{
    BAttachment, BBlob, BConversation, BConversationBundle, BEntity, BMessage, BProject, BSummary,
    BUserFact, BackupFile,
};
use super::{ConversationBundle, ImageBlob, ImportError, ImportLimits, FORMAT, VERSION};
use crate::engine::attach;
use crate::engine::format::clip;
use crate::engine::json_text;
use crate::engine::model::{Attachment, EntityScope, Millis};
use serde::Deserialize;
use std::collections::HashSet;

/// A backup file that passed every check that does not depend on what is stored: size, UTF-8,
/// nesting depth, format and version, types, string lengths, ids, duplicates and references inside
/// the file. Look up the records it names ([`CheckedImport::conversation_ids`] and friends), then
/// [`CheckedImport::plan`] against them.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedImport {
    pub(super) file: BackupFile,
    /// Set for other apps' exports ([`CheckedImport::from_bundles`]): a message that is new to a
    /// conversation already stored is appended after its last seq instead of keeping the file's.
    pub(super) append: bool,
}

/// Checks a backup file completely, except against what is stored. Never panics, whatever the bytes.
pub fn check_import(bytes: &[u8], limits: &ImportLimits) -> Result<CheckedImport, ImportError> {
    if bytes.len() > limits.max_bytes {
        return Err(ImportError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| ImportError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(ImportError::Empty);
    }
    check_depth(text.as_bytes(), limits.max_depth)?;
    // A backup is an object; serde would also read a struct from an array, so check first.
    if !text.trim_start().starts_with('{') {
        // Still report a broken file as broken rather than as "not a backup".
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(json_error)?;
        return Err(ImportError::NotABackup {
            found: "not a JSON object".into(),
        });
    }
    // One parse for a good file. Only a file that fails is read again for its header, so a wrong
    // file gets "not a backup" or "unsupported version" rather than a field error.
    let file = match serde_json::from_str::<BackupFile>(text) {
        Ok(f) if f.format == FORMAT && f.version == VERSION => f,
        parsed => {
            check_header(text)?;
            return Err(match parsed {
                Err(e) => json_error(e),
                Ok(f) => ImportError::NotABackup {
                    found: clip(&f.format, 60),
                },
            });
        }
    };
    check_file(&file, limits)?;
    Ok(CheckedImport {
        file,
        append: false,
    })
}

impl CheckedImport {
    /// Every conversation id in the file.
    pub fn conversation_ids(&self) -> impl Iterator<Item = &str> {
        self.file
            .conversations
            .iter()
            .map(|b| b.conversation.id.as_str())
    }

    /// The conversations in the file that hold summary versions (only theirs are looked up).
    pub fn conversation_ids_with_summaries(&self) -> impl Iterator<Item = &str> {
        self.file
            .conversations
            .iter()
            .filter(|b| !b.summaries.is_empty())
            .map(|b| b.conversation.id.as_str())
    }

    /// Every message id in the file.
    pub fn message_ids(&self) -> impl Iterator<Item = &str> {
        self.file
            .conversations
            .iter()
            .flat_map(|b| b.messages.iter().map(|m| m.id.as_str()))
    }

    /// Every entity in the file, as (scope, id).
    pub fn entity_keys(&self) -> impl Iterator<Item = (EntityScope, &str)> {
        let scoped = self.file.conversations.iter().flat_map(|b| {
            b.entities.iter().map(|e| {
                (
                    EntityScope::Conversation(b.conversation.id.clone()),
                    e.id.as_str(),
                )
            })
        });
        let shared = self
            .file
            .shared_entities
            .iter()
            .map(|e| (EntityScope::Shared, e.id.as_str()));
        scoped.chain(shared)
    }

    /// Conversations converted from another app's export (`engine::import`), checked exactly like a
    /// backup file's records (ids, lengths, duplicates, references). Their plan differs in one way:
    /// a message that is new to a conversation already stored (a newer export of the same chat) is
    /// appended after that conversation's last seq ([`ExistingIds::last_seqs`]) rather than at the
    /// file's seq, so a chat continued here or in the other app never collides.
    pub fn from_bundles(
        bundles: &[ConversationBundle],
        exported_at: Millis,
        limits: &ImportLimits,
    ) -> Result<CheckedImport, ImportError> {
        let mut builder = CheckBuilder::new(exported_at, limits);
        for b in bundles {
            builder.push(b)?;
        }
        Ok(builder.finish())
    }

    /// Whether the file carries facts about the user (then what is stored of them is read).
    pub fn has_user_facts(&self) -> bool {
        !self.file.user_facts.is_empty()
    }

    /// Whether the file carries projects (then the stored ones are read).
    pub fn has_projects(&self) -> bool {
        !self.file.projects.is_empty()
    }

    /// How many conversations and messages the checked file holds.
    pub fn counts(&self) -> (usize, usize) {
        let messages = self
            .file
            .conversations
            .iter()
            .map(|b| b.messages.len())
            .sum();
        (self.file.conversations.len(), messages)
    }
}

/// Reject nesting deeper than `max` by scanning bytes, before any parser recurses.
pub(crate) fn check_depth(bytes: &[u8], max: usize) -> Result<(), ImportError> {
    if json_text::max_depth(bytes) > max {
        return Err(ImportError::TooDeep { limit: max });
    }
    Ok(())
}

/// Reads only `format` and `version` of a JSON object, so a wrong file gets the right message (not a
/// field error).
fn check_header(text: &str) -> Result<(), ImportError> {
    #[derive(Deserialize)]
    struct Header {
        format: Option<serde_json::Value>,
        version: Option<serde_json::Value>,
    }
    let header: Header = serde_json::from_str(text).map_err(json_error)?;
    match header.format {
        Some(serde_json::Value::String(f)) if f == FORMAT => {}
        Some(other) => {
            return Err(ImportError::NotABackup {
                found: clip(&other.to_string(), 60),
            })
        }
        None => {
            return Err(ImportError::NotABackup {
                found: "missing".into(),
            })
        }
    }
    match header.version {
        Some(v) if v.as_u64() == Some(VERSION) => Ok(()),
        Some(v) => Err(ImportError::UnsupportedVersion {
            found: clip(&v.to_string(), 60),
        }),
        None => Err(ImportError::UnsupportedVersion {
            found: "missing".into(),
        }),
    }
}

fn json_error(e: serde_json::Error) -> ImportError {
    use serde_json::error::Category;
    let (line, column) = (e.line(), e.column());
    let detail = clip(&strip_position(&e.to_string()), 200);
    match e.classify() {
        Category::Eof => ImportError::Truncated { line, column },
        Category::Syntax | Category::Io => ImportError::InvalidJson {
            line,
            column,
            detail,
        },
        Category::Data if detail.starts_with("missing field") => ImportError::MissingField {
            line,
            column,
            detail,
        },
        Category::Data => ImportError::WrongType {
            line,
            column,
            detail,
        },
    }
}

/// serde_json appends " at line L column C"; the error carries those separately.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// String-length and id checks for one record. The record's name is only built for an error.
/// Sync's checks of pulled documents (`engine::sync::check`) use the same ones.
pub(crate) struct Checker<'a> {
    limits: &'a ImportLimits,
    name: &'a dyn Fn() -> String,
}

impl<'a> Checker<'a> {
    /// The checks of one record under `limits`; `name` says which record, for an error.
    pub(crate) fn new(limits: &'a ImportLimits, name: &'a dyn Fn() -> String) -> Checker<'a> {
        Checker { limits, name }
    }

    pub(crate) fn len(
        &self,
        field: &'static str,
        s: &str,
        limit: usize,
    ) -> Result<(), ImportError> {
        // Bytes bound chars from above: only count when it could matter.
        if s.len() > limit {
            let len = s.chars().count();
            if len > limit {
                return Err(ImportError::TooLong {
                    record: (self.name)(),
                    field,
                    len,
                    limit,
                });
            }
        }
        Ok(())
    }
    pub(crate) fn short(&self, field: &'static str, s: &str) -> Result<(), ImportError> {
        self.len(field, s, self.limits.max_short_chars)
    }
    pub(crate) fn text(&self, field: &'static str, s: &str) -> Result<(), ImportError> {
        self.len(field, s, self.limits.max_text_chars)
    }
    /// A relationship's strength: a number between 0 and 1.
    pub(crate) fn strength(&self, strength: f32) -> Result<(), ImportError> {
        if !strength.is_finite() || !(0.0..=1.0).contains(&strength) {
            return Err(ImportError::InvalidValue {
                record: (self.name)(),
                detail: format!("relationship strength {strength} is not between 0 and 1"),
            });
        }
        Ok(())
    }
    /// A fact's words: its text (at most [`MAX_FACT_TEXT_CHARS`]), kind and claim key.
    pub(crate) fn fact_words(
        &self,
        text: &str,
        kind: &str,
        claim: &str,
    ) -> Result<(), ImportError> {
        self.len(
            "text",
            text,
            MAX_FACT_TEXT_CHARS.min(self.limits.max_text_chars),
        )?;
        self.len("kind", kind, MAX_FACT_KIND_CHARS)?;
        self.short("claim_key", claim)
    }
    pub(crate) fn id(&self, field: &'static str, s: &str) -> Result<(), ImportError> {
        self.len(field, s, self.limits.max_id_chars)?;
        if s.trim().is_empty() || s.chars().any(char::is_control) {
            return Err(ImportError::InvalidValue {
                record: (self.name)(),
                detail: format!(
                    "{field} {:?} is empty or contains control characters",
                    clip(s, 40)
                ),
            });
        }
        Ok(())
    }
}

fn check_conversation(c: &BConversation, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("conversation {}", clip(&c.id, 60)),
    };
    k.id("id", &c.id)?;
    k.short("title", &c.title)?;
    if let Some(p) = &c.endpoint_profile_id {
        k.id("endpoint_profile_id", p)?;
    }
    if let Some(h) = &c.remote_handle {
        k.short("remote_handle.id", &h.id)?;
        k.short("remote_handle.endpoint_key", &h.endpoint_key)?;
    }
    if let Some(m) = &c.memory_overrides.memory_model {
        k.short("memory_overrides.memory_model", m)?;
    }
    if let Some(m) = &c.memory_overrides.model {
        k.short("memory_overrides.model", m)?;
    }
    if let Some(p) = &c.memory_overrides.system_prompt {
        k.text("memory_overrides.system_prompt", p)?;
    }
    Ok(())
}

fn check_message(m: &BMessage, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("message {}", clip(&m.id, 60)),
    };
    // Destructured without `..`: a new field of the file's message must say how it is checked.
    let BMessage {
        id,
        conversation_id,
        seq: _,
        role: _,
        content,
        status: _,
        created_at: _,
        tool_calls,
        usage: _,
        error,
        path: _,
        model,
        after,
        replaces,
        deleted: _,
        hidden: _,
        reasoning,
        stats: _,
        attachments,
        capped: _,
    } = m;
    k.id("id", id)?;
    check_attachments(&k, attachments)?;
    for link in [after, replaces].into_iter().flatten() {
        k.id("after/replaces", link)?;
    }
    k.id("conversation_id", conversation_id)?;
    k.text("content", content)?;
    for t in tool_calls {
        k.short("tool_calls.id", &t.id)?;
        k.short("tool_calls.name", &t.name)?;
        k.text("tool_calls.arguments", &t.arguments)?;
        if let Some(r) = &t.result {
            k.text("tool_calls.result", r)?;
        }
    }
    if let Some(e) = error {
        k.text("error", e)?;
    }
    if let Some(r) = reasoning {
        k.text("reasoning", &r.text)?;
    }
    if let Some(model) = model {
        k.short("model", model)?;
    }
    Ok(())
}

/// A message's attachments: at most [`attach::MAX_ATTACHMENTS`], each sane (`attach::check`).
fn check_attachments(k: &Checker, attachments: &[BAttachment]) -> Result<(), ImportError> {
    if attachments.len() > attach::MAX_ATTACHMENTS {
        return Err(ImportError::InvalidValue {
            record: (k.name)(),
            detail: format!(
                "{} attachments, more than the {} a message can hold",
                attachments.len(),
                attach::MAX_ATTACHMENTS
            ),
        });
    }
    for a in attachments {
        let model: Attachment = super::wire::read(a.clone(), k.name)?;
        attach::check(&model).map_err(|why| ImportError::InvalidValue {
            record: (k.name)(),
            detail: format!("attachment {:?}: {why}", clip(&a.name, 40)),
        })?;
    }
    Ok(())
}

fn check_summary(s: &BSummary, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| {
            format!(
                "summary version {} of {}",
                s.version,
                clip(&s.conversation_id, 60)
            )
        },
    };
    k.id("conversation_id", &s.conversation_id)?;
    k.text("text", &s.text)
}

fn check_entity(e: &BEntity, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("entity {}", clip(&e.id, 60)),
    };
    k.id("id", &e.id)?;
    k.short("name", &e.name)?;
    for a in &e.aliases {
        k.short("aliases", a)?;
    }
    k.text("description", &e.description)?;
    for (key, value) in &e.properties {
        k.short("properties key", key)?;
        k.text("properties value", value)?;
    }
    for p in &e.past_properties {
        k.short("past_properties key", &p.key)?;
        k.text("past_properties value", &p.value)?;
    }
    for r in &e.relationships {
        k.id("relationships.target_id", &r.target_id)?;
        k.short("relationships.relationship", &r.relationship)?;
        k.strength(r.strength.0)?;
    }
    for s in &e.source_message_ids {
        k.id("source_message_ids", s)?;
    }
    Ok(())
}

/// The longest fact text: an extracted fact is one sentence (at most
/// `memory::user::MAX_FACT_CHARS`), an edited or hand-added one a few; past this it is not a fact.
pub const MAX_FACT_TEXT_CHARS: usize = 2_000;

/// The longest fact kind (`name`, `home`, …; an unknown one reads as `other`).
const MAX_FACT_KIND_CHARS: usize = 40;

fn check_fact(f: &BUserFact, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("fact about you {}", clip(&f.id, 60)),
    };
    // Destructured without `..`: a new field of the file's fact must say how it is checked.
    let BUserFact {
        id,
        text,
        kind,
        claim_key,
        source,
        valid_from,
        valid_to,
        forgotten,
        scope,
        updated_at: _,
    } = f;
    k.id("id", id)?;
    k.fact_words(text, kind, claim_key)?;
    if forgotten.is_none() && text.trim().is_empty() {
        return Err(ImportError::InvalidValue {
            record: (k.name)(),
            detail: "its text is empty".into(),
        });
    }
    if let Some(s) = source {
        k.id("source.conversation_id", &s.conversation_id)?;
        k.id("source.message_id", &s.message_id)?;
    }
    if let Some(scope) = scope {
        k.id("scope", scope)?;
    }
    if valid_to.is_some_and(|to| to < *valid_from) {
        return Err(ImportError::InvalidValue {
            record: (k.name)(),
            detail: "it stopped holding (valid_to) before it began (valid_from)".into(),
        });
    }
    Ok(())
}

/// The facts about the user: each on its own, and no id twice.
fn check_facts(facts: &[BUserFact], limits: &ImportLimits) -> Result<(), ImportError> {
    let mut seen = HashSet::new();
    for f in facts {
        check_fact(f, limits)?;
        if !seen.insert(f.id.as_str()) {
            return Err(ImportError::DuplicateId {
                kind: "fact about you",
                id: f.id.clone(),
            });
        }
    }
    Ok(())
}

/// Ids seen so far in a file, for its duplicate checks.
#[derive(Debug, Clone, Default, PartialEq)]
struct SeenIds {
    conversations: HashSet<String>,
    messages: HashSet<String>,
    entities: HashSet<String>,
}

/// Every record on its own, and duplicates and references inside the file.
fn check_file(file: &BackupFile, limits: &ImportLimits) -> Result<(), ImportError> {
    let mut seen = SeenIds::default();
    for b in &file.conversations {
        check_bundle(b, limits, &mut seen)?;
    }
    for e in &file.shared_entities {
        check_entity(e, limits)?;
        if !seen.entities.insert(e.id.clone()) {
            return Err(ImportError::DuplicateId {
                kind: "entity",
                id: e.id.clone(),
            });
        }
    }
    check_facts(&file.user_facts, limits)?;
    check_projects(&file.projects, limits)?;
    check_blobs(&file.blobs)
}

/// The images' bytes: each a hash in hex (once), an image type, base64 of at most
/// `attach::MAX_IMAGE_BYTES`. That the bytes hash to it is checked where hashing is (the
/// transfer service), before anything is stored.
fn check_blobs(blobs: &[BBlob]) -> Result<(), ImportError> {
    let mut seen = HashSet::new();
    for b in blobs {
        let bad = |detail: String| ImportError::InvalidValue {
            record: format!("image {}", clip(&b.hash, 16)),
            detail,
        };
        if !attach::is_hash(&b.hash) {
            return Err(bad("its hash is not a SHA-256 in hex".into()));
        }
        if !seen.insert(b.hash.as_str()) {
            return Err(ImportError::DuplicateId {
                kind: "image",
                id: b.hash.clone(),
            });
        }
        if !attach::IMAGE_TYPES.contains(&b.mime.as_str()) {
            return Err(bad(format!(
                "an image of type {:?} is not taken",
                clip(&b.mime, 40)
            )));
        }
        if b.data.len() as u64 > attach::MAX_IMAGE_BYTES.div_ceil(3) * 4 {
            return Err(bad("it is over the size limit".into()));
        }
        decode_blob(&b.data).ok_or_else(|| bad("its data is not base64".into()))?;
    }
    Ok(())
}

fn decode_blob(data: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

impl CheckedImport {
    /// The images' bytes the file carries (checked), to store before the import is written.
    pub fn images(&self) -> Vec<ImageBlob> {
        self.file
            .blobs
            .iter()
            .filter_map(|b| {
                Some(ImageBlob {
                    hash: b.hash.clone(),
                    mime: b.mime.clone(),
                    bytes: decode_blob(&b.data)?,
                })
            })
            .collect()
    }
}

/// The projects: each on its own, and no id twice.
fn check_projects(projects: &[BProject], limits: &ImportLimits) -> Result<(), ImportError> {
    let mut seen = HashSet::new();
    for p in projects {
        let k = Checker {
            limits,
            name: &|| format!("project {}", clip(&p.id, 60)),
        };
        // Destructured without `..`: a new field of the file's project must say how it is checked.
        let BProject {
            id,
            name,
            instructions,
            created_at: _,
            updated_at: _,
            deleted: _,
        } = p;
        k.id("id", id)?;
        k.short("name", name)?;
        k.text("instructions", instructions)?;
        if !seen.insert(id.clone()) {
            return Err(ImportError::DuplicateId {
                kind: "project",
                id: id.clone(),
            });
        }
    }
    Ok(())
}

/// One conversation's records, and their ids against those `seen` before (then added to them).
fn check_bundle(
    b: &BConversationBundle,
    limits: &ImportLimits,
    seen: &mut SeenIds,
) -> Result<(), ImportError> {
    let c = &b.conversation;
    check_conversation(c, limits)?;
    if !seen.conversations.insert(c.id.clone()) {
        return Err(ImportError::DuplicateId {
            kind: "conversation",
            id: c.id.clone(),
        });
    }
    let mut seqs = HashSet::new();
    for m in &b.messages {
        check_message(m, limits)?;
        if m.conversation_id != c.id {
            return Err(ImportError::ConversationMismatch {
                message_id: m.id.clone(),
                listed_under: c.id.clone(),
                claims: m.conversation_id.clone(),
            });
        }
        if !seen.messages.insert(m.id.clone()) {
            return Err(ImportError::DuplicateId {
                kind: "message",
                id: m.id.clone(),
            });
        }
        if !seqs.insert(m.seq) {
            return Err(ImportError::DuplicateSeq {
                conversation_id: c.id.clone(),
                seq: m.seq,
            });
        }
    }
    let mut versions = HashSet::new();
    for s in &b.summaries {
        check_summary(s, limits)?;
        if s.conversation_id != c.id {
            return Err(ImportError::InvalidValue {
                record: format!("summary version {}", s.version),
                detail: format!(
                    "it is listed under conversation {} but says it belongs to {}",
                    c.id, s.conversation_id
                ),
            });
        }
        if !versions.insert(s.version) {
            return Err(ImportError::DuplicateId {
                kind: "summary version",
                id: format!("{} of {}", s.version, c.id),
            });
        }
    }
    for e in &b.entities {
        check_entity(e, limits)?;
        if !seen.entities.insert(e.id.clone()) {
            return Err(ImportError::DuplicateId {
                kind: "entity",
                id: e.id.clone(),
            });
        }
    }
    Ok(())
}

/// [`CheckedImport::from_bundles`] one conversation at a time, so a large import is checked in
/// slices (`engine::import::slice`): the same checks, in the same order, the same result.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckBuilder {
    file: BackupFile,
    seen: SeenIds,
    limits: ImportLimits,
}

impl CheckBuilder {
    pub fn new(exported_at: Millis, limits: &ImportLimits) -> CheckBuilder {
        CheckBuilder {
            file: BackupFile {
                format: FORMAT.to_string(),
                version: VERSION,
                exported_at,
                conversations: Vec::new(),
                shared_entities: Vec::new(),
                user_facts: Vec::new(),
                projects: Vec::new(),
                blobs: Vec::new(),
            },
            seen: SeenIds::default(),
            limits: limits.clone(),
        }
    }

    /// Converts and checks one more conversation.
    pub fn push(&mut self, b: &ConversationBundle) -> Result<(), ImportError> {
        let b = BConversationBundle {
            conversation: (&b.conversation).into(),
            messages: b.messages.iter().map(Into::into).collect(),
            summaries: b.summaries.iter().map(Into::into).collect(),
            entities: b.entities.iter().map(Into::into).collect(),
        };
        check_bundle(&b, &self.limits, &mut self.seen)?;
        self.file.conversations.push(b);
        Ok(())
    }

    /// Everything pushed, checked.
    pub fn finish(self) -> CheckedImport {
        CheckedImport {
            file: self.file,
            append: true,
        }
    }
}

/// [`check_import`] for a file already parsed into a `Value` (a slice at a time, by
/// `engine::import::value`), its conversations converted and checked one at a time: the same
/// typed reading and the same checks, so a good file gives the same [`CheckedImport`]. Any error
/// here is the caller's sign to read the file whole with [`check_import`] for the exact message
/// (the order of the checks differs).
#[derive(Debug, Clone)]
pub struct BackupBuilder {
    file: BackupFile,
    seen: SeenIds,
    limits: ImportLimits,
}

impl BackupBuilder {
    /// The file's header and shared entities from `v`, and its conversations still to push.
    pub fn from_value(
        mut v: serde_json::Value,
        limits: &ImportLimits,
    ) -> Result<(BackupBuilder, Vec<serde_json::Value>), ImportError> {
        let not_backup = || ImportError::NotABackup {
            found: "not a backup".into(),
        };
        let obj = v.as_object_mut().ok_or_else(not_backup)?;
        let items = match obj.get_mut("conversations") {
            Some(serde_json::Value::Array(items)) => std::mem::take(items),
            _ => return Err(not_backup()),
        };
        let file: BackupFile = serde_json::from_value(v).map_err(|_| not_backup())?;
        if file.format != FORMAT || file.version != VERSION {
            return Err(not_backup());
        }
        let builder = BackupBuilder {
            file,
            seen: SeenIds::default(),
            limits: limits.clone(),
        };
        Ok((builder, items))
    }

    /// Reads and checks one more conversation of the file.
    pub fn push(&mut self, item: serde_json::Value) -> Result<(), ImportError> {
        let b: BConversationBundle =
            serde_json::from_value(item).map_err(|e| ImportError::NotABackup {
                found: clip(&e.to_string(), 60),
            })?;
        check_bundle(&b, &self.limits, &mut self.seen)?;
        self.file.conversations.push(b);
        Ok(())
    }

    /// The file, once its shared entities are checked too.
    pub fn finish(mut self) -> Result<CheckedImport, ImportError> {
        for e in &self.file.shared_entities {
            check_entity(e, &self.limits)?;
            if !self.seen.entities.insert(e.id.clone()) {
                return Err(ImportError::DuplicateId {
                    kind: "entity",
                    id: e.id.clone(),
                });
            }
        }
        check_facts(&self.file.user_facts, &self.limits)?;
        check_projects(&self.file.projects, &self.limits)?;
        Ok(CheckedImport {
            file: self.file,
            append: false,
        })
    }
}
