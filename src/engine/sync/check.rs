//! What a pulled document may hold (issue 28): the limits imports enforce, reused, not copied
//! (`backup::ImportLimits` and the record checks of `backup::check`: ids, short and long text, a
//! fact's words, relationship strengths, nesting depth), and every stamp and time within a window:
//! not before 1970 and at most [`super::hlc::MAX_SKEW_MS`] ahead of this device's clock (`hlc.rs`
//! says why such a document is refused rather than clamped). A document that fails is refused with
//! a reason: the replicator skips it, never deletes or overwrites anything local for it, and sync
//! goes on. A `system`-role message is not refused: it is held to the same limits as any other
//! (the prompt keeps it as text of the conversation).
//! Must not import anything outside `crate::engine`.

use serde_json::Value;

use super::convert::to_attachment;
use super::doc::{
    AttachmentDoc, Body, ConversationDoc, Couch, Doc, EdgeDoc, EntityDoc, FactDoc, Lww, MessageDoc,
    ProjectDoc, SummaryDoc,
};
use super::hlc::{wall_in_window, Hlc, MAX_SKEW_MS};
use crate::engine::attach;
use crate::engine::backup::{Checker, ImportError, ImportLimits};
use crate::engine::format::clip;
use crate::engine::model::Millis;

/// The limits a pulled document is held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullLimits {
    /// The same limits as an import's (ids, text lengths, nesting depth).
    pub import: ImportLimits,
    /// How far ahead of this device's clock a stamp or time may be.
    pub max_skew_ms: Millis,
}

impl Default for PullLimits {
    fn default() -> Self {
        PullLimits {
            import: ImportLimits::default(),
            max_skew_ms: MAX_SKEW_MS,
        }
    }
}

/// Conflicting revisions a pulled document may list (`_conflicts`): each is read with
/// `open_revs` in one request whose URL stays under 8 KB, and resolved in one `_bulk_docs` of at
/// most `replicate::RESOLVE_BATCH` documents. A document listing more is refused.
pub const MAX_CONFLICTS: usize = 64;
/// The longest revision (`_rev`, or one in `_conflicts`) taken: CouchDB's are about 34 characters.
pub const MAX_REV_CHARS: usize = 80;

/// Reads a document as CouchDB returns it and holds it to `limits` at `now`; `Err` says why it is
/// refused (its id first).
pub fn pulled(v: &Value, limits: &PullLimits, now: Millis) -> Result<Couch, String> {
    let id = || {
        v.get("_id")
            .and_then(Value::as_str)
            .map_or_else(|| "a document".to_string(), |s| clip(s, 80))
    };
    revisions(v).map_err(|e| format!("{}: {e}", id()))?;
    if depth(v, limits.import.max_depth + 1) > limits.import.max_depth {
        return Err(format!(
            "{}: nests data more than {} levels deep",
            id(),
            limits.import.max_depth
        ));
    }
    let c = Doc::from_json(v)?;
    check_doc(&c.doc, limits, now)
        .map_err(|e| format!("{}: {}", clip(&c.doc.id, 80), reason(e)))?;
    Ok(c)
}

/// A document's revision and conflicting revisions, within [`MAX_CONFLICTS`] and
/// [`MAX_REV_CHARS`] (read before anything else of it).
fn revisions(v: &Value) -> Result<(), String> {
    let conflicts = v.get("_conflicts").and_then(Value::as_array);
    let n = conflicts.map_or(0, Vec::len);
    if n > MAX_CONFLICTS {
        return Err(format!(
            "it lists {n} conflicting revisions; at most {MAX_CONFLICTS} are read"
        ));
    }
    let long = |r: &Value| r.as_str().is_none_or(|r| r.len() > MAX_REV_CHARS);
    if v.get("_rev").is_some_and(long) || conflicts.into_iter().flatten().any(long) {
        return Err(format!(
            "a revision that is not text of at most {MAX_REV_CHARS} characters"
        ));
    }
    Ok(())
}

/// Plain copies of our documents found on the server with encryption on (`seal::Opened::plain`):
/// kept only while this device first encrypts the database (`first`), and then only those that
/// pass the checks of any pulled document ([`pulled`]); otherwise none is taken (each did not open
/// with the key: it is counted as such) and they are only deleted on the server. The documents to
/// keep, and why the others were not.
pub fn plain_copies(
    plain: &[Value],
    first: bool,
    limits: &PullLimits,
    now: Millis,
) -> (Vec<super::Doc>, Vec<String>) {
    if !first {
        let id = |v: &Value| v.get("_id").and_then(Value::as_str).map(|s| clip(s, 80));
        let why = |v: &Value| {
            let id = id(v).unwrap_or_else(|| "a document".into());
            format!("{id}: a plain copy on an encrypted database; not taken, deleted on the server")
        };
        return (Vec::new(), plain.iter().map(why).collect());
    }
    let mut keep = Vec::new();
    let mut refused = Vec::new();
    for v in plain {
        match pulled(v, limits, now) {
            Ok(c) => keep.push(c.doc),
            Err(e) => refused.push(e),
        }
    }
    (keep, refused)
}

/// Why a document was refused, in words about a synced document (not a backup's).
fn reason(e: ImportError) -> String {
    match e {
        ImportError::InvalidValue { detail, .. } => detail,
        ImportError::TooLong {
            field, len, limit, ..
        } => format!("{field} is {len} characters long; the limit is {limit}"),
        other => other.to_string(),
    }
}

/// How deep `v` nests (objects and arrays), counted up to `stop`.
fn depth(v: &Value, stop: usize) -> usize {
    if stop == 0 {
        return 0;
    }
    let inner = match v {
        Value::Array(a) => a.iter().map(|x| depth(x, stop - 1)).max().unwrap_or(0),
        Value::Object(o) => o.values().map(|x| depth(x, stop - 1)).max().unwrap_or(0),
        _ => return 0,
    };
    inner + 1
}

/// The checks of one document: the record checks with its `_id` as the record's name, and times.
struct Check<'a> {
    k: Checker<'a>,
    now: Millis,
    skew: Millis,
}

impl Check<'_> {
    fn time(&self, field: &'static str, t: Millis) -> Result<(), ImportError> {
        if wall_in_window(t, self.now, self.skew) {
            return Ok(());
        }
        Err(ImportError::InvalidValue {
            record: "the document".into(),
            detail: format!(
                "{field} ({t}) is before 1970 or more than {} h ahead of this device's clock",
                self.skew / 3_600_000
            ),
        })
    }
    fn stamp(&self, field: &'static str, h: &Hlc) -> Result<(), ImportError> {
        self.k.id("stamp device", &h.device)?;
        self.time(field, h.wall)
    }
    fn short_reg(&self, field: &'static str, r: &Lww<String>) -> Result<(), ImportError> {
        self.k.short(field, &r.v)?;
        self.stamp(field, &r.at)
    }
    fn opt_id(&self, field: &'static str, s: &Option<String>) -> Result<(), ImportError> {
        s.as_deref().map_or(Ok(()), |s| self.k.id(field, s))
    }
    fn opt_time(&self, field: &'static str, t: Option<Millis>) -> Result<(), ImportError> {
        t.map_or(Ok(()), |t| self.time(field, t))
    }
}

/// Holds a read document to `limits` at `now`.
pub fn check_doc(doc: &Doc, limits: &PullLimits, now: Millis) -> Result<(), ImportError> {
    let name = || "the document".to_string();
    let c = Check {
        k: Checker::new(&limits.import, &name),
        now,
        skew: limits.max_skew_ms,
    };
    // An edge's `_id` holds five parts, each an id at most: the parts are checked as ids below.
    c.k.len("_id", &doc.id, limits.import.max_id_chars * 6)?;
    if doc.id.chars().any(char::is_control) {
        return Err(ImportError::InvalidValue {
            record: "the document".into(),
            detail: "its _id contains control characters".into(),
        });
    }
    match &doc.body {
        Body::Conversation(d) => conversation(&c, d),
        Body::Message(d) => message(&c, d),
        Body::Entity(d) => entity(&c, d),
        Body::Edge(d) => edge(&c, d),
        Body::Summary(d) => summary(&c, d),
        Body::Fact(d) => fact(&c, d),
        Body::Project(d) => project(&c, d),
        Body::Tombstone(t) => c.stamp("at", &t.at),
    }
}

fn conversation(c: &Check, d: &ConversationDoc) -> Result<(), ImportError> {
    let ConversationDoc {
        id,
        created_at,
        title,
        fields,
        cleared,
    } = d;
    c.k.id("id", id)?;
    c.time("created_at", *created_at)?;
    c.k.short("title", &title.v.text)?;
    c.stamp("title", &title.at)?;
    for (key, r) in fields {
        c.k.short("field name", key)?;
        if let Some(v) = &r.v {
            c.k.text("field", v)?;
        }
        c.stamp("field", &r.at)?;
    }
    cleared.as_ref().map_or(Ok(()), |h| c.stamp("cleared", h))
}

/// A message's attachments: at most [`attach::MAX_ATTACHMENTS`], each one sane by
/// [`attach::check`] (a lowercase SHA-256, a name, an image type and size in pixels, a file's
/// text under its limit).
fn attachments_ok(list: &[AttachmentDoc]) -> Result<(), ImportError> {
    let bad = |detail: String| ImportError::InvalidValue {
        record: "the document".into(),
        detail,
    };
    if list.len() > attach::MAX_ATTACHMENTS {
        return Err(bad(format!(
            "it has {} attachments; the limit is {}",
            list.len(),
            attach::MAX_ATTACHMENTS
        )));
    }
    for d in list {
        let a =
            to_attachment(d).ok_or_else(|| bad(format!("an attachment of kind {:?}", d.kind)))?;
        attach::check(&a).map_err(|e| bad(format!("an attachment: {e}")))?;
    }
    Ok(())
}

fn message(c: &Check, d: &MessageDoc) -> Result<(), ImportError> {
    // Destructured without `..`: a new field must say how it is checked.
    let MessageDoc {
        id,
        conversation_id,
        seq: _,
        role: _,
        content,
        status,
        created_at,
        replaces,
        after,
        tool_calls,
        usage: _,
        error,
        path,
        model,
        hidden: _,
        reasoning,
        stats: _,
        cached: _,
        capped: _,
        attachments,
        at,
    } = d;
    attachments_ok(attachments)?;
    c.k.id("id", id)?;
    c.k.id("conversation_id", conversation_id)?;
    c.k.text("content", content)?;
    c.k.short("status", status)?;
    c.time("created_at", *created_at)?;
    c.opt_id("replaces", replaces)?;
    c.opt_id("after", after)?;
    for t in tool_calls {
        c.k.short("tool_calls.id", &t.id)?;
        c.k.short("tool_calls.name", &t.name)?;
        c.k.text("tool_calls.arguments", &t.arguments)?;
        if let Some(r) = &t.result {
            c.k.text("tool_calls.result", r)?;
        }
    }
    if let Some(e) = error {
        c.k.text("error", e)?;
    }
    for s in [path, model].into_iter().flatten() {
        c.k.short("path/model", s)?;
    }
    if let Some(r) = reasoning {
        c.k.text("reasoning", &r.text)?;
        c.time("reasoning.started_at", r.started_at)?;
        if let Some(end) = r.ended_at {
            c.time("reasoning.ended_at", end)?;
        }
    }
    c.stamp("at", at)
}

fn entity(c: &Check, d: &EntityDoc) -> Result<(), ImportError> {
    c.k.id("id", &d.id)?;
    c.opt_id("scope", &d.scope)?;
    c.stamp("entity_type", &d.entity_type.at)?;
    c.short_reg("name", &d.name)?;
    c.k.text("description", &d.description.v)?;
    c.stamp("description", &d.description.at)?;
    for a in &d.aliases {
        c.k.short("aliases", a)?;
    }
    for (key, r) in &d.properties {
        c.k.short("properties key", key)?;
        c.k.text("properties value", &r.v)?;
        c.stamp("properties", &r.at)?;
    }
    for (key, r) in &d.property_since {
        c.k.short("property_since key", key)?;
        c.time("property_since", r.v)?;
        c.stamp("property_since", &r.at)?;
    }
    for p in &d.past_properties {
        c.k.short("past_properties key", &p.key)?;
        c.k.text("past_properties value", &p.value)?;
        c.time("past_properties.valid_from", p.valid_from)?;
        c.time("past_properties.valid_to", p.valid_to)?;
    }
    for s in &d.sources {
        c.k.id("sources", s)?;
    }
    c.time("updated_at", d.updated_at)
}

fn edge(c: &Check, d: &EdgeDoc) -> Result<(), ImportError> {
    c.opt_id("scope", &d.scope)?;
    c.k.id("source", &d.source)?;
    c.k.short("label", &d.label)?;
    c.k.id("target", &d.target)?;
    c.time("valid_from", d.valid_from)?;
    c.opt_time("valid_to", d.valid_to)?;
    c.k.strength(d.strength)
}

fn summary(c: &Check, d: &SummaryDoc) -> Result<(), ImportError> {
    c.k.id("conversation_id", &d.conversation_id)?;
    c.stamp("made", &d.made)?;
    c.time("updated_at", d.updated_at)?;
    c.k.text("text", &d.text)
}

fn fact(c: &Check, d: &FactDoc) -> Result<(), ImportError> {
    c.k.id("id", &d.id)?;
    let w = &d.words.v;
    c.k.fact_words(&w.text, &w.kind, &w.claim_key)?;
    c.opt_id("scope", &w.scope)?;
    c.stamp("words", &d.words.at)?;
    if let Some(s) = &d.source {
        c.k.id("source.conversation_id", &s.conversation_id)?;
        c.k.id("source.message_id", &s.message_id)?;
        c.time("source.said_at", s.said_at)?;
    }
    c.time("valid_from", d.valid_from)?;
    c.opt_time("valid_to", d.valid_to)?;
    c.opt_time("forgotten", d.forgotten)?;
    c.time("updated_at", d.updated_at)
}

fn project(c: &Check, d: &ProjectDoc) -> Result<(), ImportError> {
    c.k.id("id", &d.id)?;
    c.k.short("name", &d.words.v.name)?;
    c.k.text("instructions", &d.words.v.instructions)?;
    c.stamp("words", &d.words.at)?;
    c.time("created_at", d.created_at)?;
    c.opt_time("deleted", d.deleted)
}
