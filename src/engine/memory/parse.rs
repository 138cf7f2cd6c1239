//! Parsing the memory-update reply: the JSON object a constrained request returns
//! (`{"summary": …, "entities": [...]}`, properties as key/value pairs, see
//! [`super::form::update_schema`]; an object cut off by the token limit is closed and what was complete is
//! kept), or the `=== CONVERSATION MEMORY ===` summary and the
//! `=== ENTITY MEMORY ===` JSON array, leniently (code fences, prose around the sections, a missing
//! section, stray whitespace, markdown-style headings, trailing commas, an array cut off by the token
//! limit) and defensively (size caps, strength clamped to 0..1, unknown types become `other`,
//! non-string property values stringified, nameless entities dropped). Never panics on any input.
//! Must not import anything outside `crate::engine` (and serde_json, a crate dependency).
//!
//! The array is split into elements by the shared JSON text scanner (`engine::json_text`), each element parsed on its own, so one
//! broken entity (or a reply cut off mid-array) does not lose the others.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::MemoryError;
use super::normalize::{collapse_ws, name_key, truncate_chars};
use crate::engine::json_text::{ends_in_escape, split_array, tokens, Token};
use crate::engine::model::{EntityType, FactKind};

/// Replies larger than this are refused outright.
pub const MAX_REPLY_BYTES: usize = 512 * 1024;
/// The summary is cut at this many characters.
pub const MAX_SUMMARY_CHARS: usize = 20_000;
/// At most this many entities are taken from one reply.
pub const MAX_ENTITIES: usize = 300;
pub const MAX_ID_CHARS: usize = 128;
pub const MAX_NAME_CHARS: usize = 200;
/// A name or alias longer than this many words is a sentence, not a name (see [`plausible_name`]).
pub const MAX_NAME_WORDS: usize = 10;
pub const MAX_ALIASES: usize = 16;
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
pub const MAX_PROPERTIES: usize = 32;
pub const MAX_PROPERTY_KEY_CHARS: usize = 64;
pub const MAX_PROPERTY_VALUE_CHARS: usize = 500;
pub const MAX_RELATIONSHIPS: usize = 32;
pub const MAX_LABEL_CHARS: usize = 64;
/// Strength of a relationship that gives none.
pub const DEFAULT_STRENGTH: f32 = 0.5;
const MAX_NOTES: usize = 64;

/// One relationship as the model stated it (target not yet resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedRelationship {
    /// An entity id, or (leniently) a name.
    pub target: String,
    pub relationship: String,
    /// Clamped to 0..=1.
    pub strength: f32,
    /// The model says the relationship no longer holds (`strength` 0, or `ended`/`removed`: true,
    /// or `valid`: false).
    pub ended: bool,
}

/// One validated entity from the reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedEntity {
    /// The model's id: a known id (update) or a new one of its own (resolved at merge).
    pub id: Option<String>,
    pub entity_type: EntityType,
    /// Never empty: has at least one word character.
    pub name: String,
    pub aliases: Vec<String>,
    pub description: String,
    pub properties: BTreeMap<String, String>,
    pub relationships: Vec<ParsedRelationship>,
    /// The ids of the messages that name this entity or state its facts, filled by grounding
    /// (`super::ground`); empty means "the whole span" (an update that was not grounded).
    pub sources: Vec<String>,
    /// When the latest of those messages was written (filled by grounding): the day its facts
    /// became true, and the day the values they replace stopped being.
    pub said_at: Option<crate::engine::model::Millis>,
}

/// A validated reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedUpdate {
    /// The new summary text; `None` when the section was missing or empty.
    pub summary: Option<String>,
    pub entities: Vec<ParsedEntity>,
    /// Earlier facts the model says no longer hold (the schema's optional `no_longer_true`); the
    /// summary's sentences they name become past (`super::supersede`).
    pub no_longer_true: Vec<String>,
    /// Facts about the user the model proposes (the schema's `user_facts` and `user_facts_ended`),
    /// not yet held to the user's words (`super::proposed` does, then the facts' rules place them).
    pub user_facts: Proposals,
    /// What was repaired or dropped, for the log / memory pane.
    pub notes: Vec<String>,
}

/// One fact about the user as the model proposed it: its quote of the user's words and the kind it
/// gives. Only a quote that holds a word and a kind the schema names are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedFact {
    pub quote: String,
    pub kind: FactKind,
}

/// The model's proposals about the user: facts said in the span, and facts the span says no
/// longer hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Proposals {
    pub said: Vec<ProposedFact>,
    pub ended: Vec<ProposedFact>,
}

impl Proposals {
    pub fn is_empty(&self) -> bool {
        self.said.is_empty() && self.ended.is_empty()
    }
}

/// Most proposals kept from one list (the schema's `maxItems`, [`super::form::SCHEMA_MAX_FACTS`]).
pub const MAX_PROPOSALS: usize = super::form::SCHEMA_MAX_FACTS as usize;
/// Most items of a proposal list looked at: a huge array costs no more than this.
pub const MAX_PROPOSALS_READ: usize = 64;
/// A longer quote is no one sentence of the user's: dropped, never cut.
pub const MAX_QUOTE_CHARS: usize = 400;

/// The kind a proposal names (the schema's enum, and `FactKind`'s own names), or `None`.
pub fn proposed_kind(kind: &str) -> Option<FactKind> {
    Some(match kind.trim().to_ascii_lowercase().as_str() {
        "name" => FactKind::Name,
        "home" => FactKind::Home,
        "work" => FactKind::Work,
        "people" => FactKind::People,
        "pets" => FactKind::Pets,
        "likes" | "dislikes" | "preference" => FactKind::Preference,
        "health" => FactKind::Health,
        "projects" | "project" => FactKind::Project,
        "other" => FactKind::Other,
        _ => return None,
    })
}

/// The proposals of list `v` (the schema's `[{quote, kind}]`): at most [`MAX_PROPOSALS`], each an
/// object with a text quote of at most [`MAX_QUOTE_CHARS`] and a known kind; anything else is
/// skipped, and only the first [`MAX_PROPOSALS_READ`] items are looked at.
fn parse_proposals(v: Option<&Value>, list: &str, notes: &mut Notes) -> Vec<ProposedFact> {
    let Some(items) = v.and_then(Value::as_array) else {
        if v.is_some() {
            notes.add(format!("{list} is not a list; ignored"));
        }
        return Vec::new();
    };
    let mut out: Vec<ProposedFact> = Vec::new();
    for item in items.iter().take(MAX_PROPOSALS_READ) {
        let obj = item.as_object();
        let quote = obj.and_then(|o| field(o, &["quote", "text", "fact"]));
        let kind = obj.and_then(|o| field(o, &["kind", "type"]));
        let (Some(Value::String(quote)), Some(Value::String(kind))) = (quote, kind) else {
            continue;
        };
        let quote = collapse_ws(quote);
        let Some(kind) = proposed_kind(kind) else {
            continue;
        };
        if quote.chars().count() > MAX_QUOTE_CHARS || name_key(&quote).is_empty() {
            continue;
        }
        if out.len() == MAX_PROPOSALS {
            notes.add(format!(
                "more than {MAX_PROPOSALS} items in {list}, rest dropped"
            ));
            break;
        }
        out.push(ProposedFact { quote, kind });
    }
    if out.len() < items.len().min(MAX_PROPOSALS) {
        notes.add(format!(
            "{list}: items without a quote or a known kind, dropped"
        ));
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    Conversation,
    Entity,
}

/// Whether `line` is a section heading, e.g. `=== ENTITY MEMORY ===`, `## Entity memory`,
/// `**CONVERSATION MEMORY:**`.
fn marker_of(line: &str) -> Option<Section> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.len() > 80 {
        return None;
    }
    let key = name_key(trimmed.trim_matches(|c: char| "=#*:_->` \t".contains(c)));
    let decorated = trimmed.contains("==")
        || trimmed.starts_with('#')
        || trimmed.starts_with('*')
        || trimmed.ends_with(':');
    for (section, target) in [
        (Section::Conversation, "conversation memory"),
        (Section::Entity, "entity memory"),
        (Section::Entity, "entities memory"),
        (Section::Entity, "entity memories"),
    ] {
        if key == target || (decorated && key.starts_with(target) && key.split(' ').count() <= 5) {
            return Some(section);
        }
    }
    None
}

/// Byte ranges of each section's body, first occurrence of each heading.
fn split_sections(text: &str) -> (Option<&str>, Option<&str>) {
    let mut marks: Vec<(Section, usize, usize)> = Vec::new(); // (section, line start, body start)
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if let Some(s) = marker_of(line) {
            marks.push((s, pos, pos + line.len()));
        }
        pos += line.len();
    }
    let body = |which: Section| -> Option<&str> {
        let i = marks.iter().position(|m| m.0 == which)?;
        let start = marks[i].2;
        let end = marks.get(i + 1).map(|m| m.1).unwrap_or(text.len());
        Some(&text[start..end.max(start)])
    };
    (body(Section::Conversation), body(Section::Entity))
}

/// Drops code-fence lines (```` ``` ````, ```` ```json ````).
fn strip_fences(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        if !line.trim_start().starts_with("```") {
            out.push_str(line);
        }
    }
    out
}

/// Removes commas directly before `]` or `}` outside strings (a common model mistake), and escapes
/// raw control characters inside strings (line breaks a grammar-constrained server let through).
fn remove_trailing_commas(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut comma = None;
    for t in tokens(bytes) {
        match t {
            Token::Byte(i, b',') => {
                comma = Some(i);
                continue;
            }
            Token::Byte(_, b']' | b'}') => {
                if let Some(c) = comma {
                    out.push_str(&s[last..c]);
                    last = c + 1;
                }
            }
            Token::Str { start, end, .. } => {
                for (i, &b) in bytes[start..end].iter().enumerate() {
                    if b < 0x20 {
                        out.push_str(&s[last..start + i]);
                        out.push_str(match b {
                            b'\n' => "\\n",
                            b'\r' => "\\r",
                            b'\t' => "\\t",
                            _ => " ",
                        });
                        last = start + i + 1;
                    }
                }
            }
            Token::Byte(..) => {}
        }
        comma = None;
    }
    out.push_str(&s[last..]);
    out
}

fn parse_value(s: &str) -> Result<Value, serde_json::Error> {
    let cleaned = remove_trailing_commas(s);
    let mut stream = serde_json::Deserializer::from_str(&cleaned).into_iter::<Value>();
    match stream.next() {
        Some(v) => v,
        None => serde_json::from_str::<Value>(""),
    }
}

struct Notes(Vec<String>);

impl Notes {
    fn add(&mut self, note: impl Into<String>) {
        if self.0.len() < MAX_NOTES {
            self.0.push(note.into());
        }
    }
}

fn value_to_string(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| obj.get(*n))
        .filter(|v| !v.is_null())
}

fn text_field(obj: &Map<String, Value>, names: &[&str], max: usize) -> String {
    field(obj, names)
        .and_then(value_to_string)
        .map(|s| truncate_chars(s.trim(), max).to_string())
        .unwrap_or_default()
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes"),
        _ => false,
    }
}

fn parse_strength(v: Option<&Value>) -> Option<f32> {
    let raw = match v {
        None => return Some(DEFAULT_STRENGTH),
        Some(Value::Number(n)) => n.as_f64()?,
        Some(Value::String(s)) => serde_json::from_str::<f64>(s.trim()).ok()?,
        Some(_) => return None,
    };
    if !raw.is_finite() {
        return None;
    }
    Some(raw.clamp(0.0, 1.0) as f32)
}

fn parse_relationship(v: &Value, who: &str, notes: &mut Notes) -> Option<ParsedRelationship> {
    let Some(obj) = v.as_object() else {
        notes.add(format!(
            "{who}: dropped a relationship that is not an object"
        ));
        return None;
    };
    let target = text_field(
        obj,
        &["targetId", "target_id", "targetID", "target", "to"],
        MAX_ID_CHARS,
    );
    let relationship = collapse_ws(&text_field(
        obj,
        &["relationship", "relation", "label", "type"],
        MAX_LABEL_CHARS,
    ));
    if target.is_empty() || name_key(&relationship).is_empty() {
        notes.add(format!(
            "{who}: dropped a relationship without a target or a label"
        ));
        return None;
    }
    let Some(strength) = parse_strength(field(obj, &["strength", "weight"])) else {
        notes.add(format!(
            "{who}: dropped relationship '{relationship}' with an invalid strength"
        ));
        return None;
    };
    let ended = strength == 0.0
        || truthy(obj.get("ended"))
        || truthy(obj.get("removed"))
        || truthy(obj.get("closed"))
        || matches!(obj.get("valid"), Some(Value::Bool(false)));
    Some(ParsedRelationship {
        target,
        relationship,
        strength,
        ended,
    })
}

/// The sentences of a would-be name: split after `.`, `!` or `?` followed by a space, except after a
/// short abbreviation ("Dr. Ada Lovelace", "St. Louis" stay whole).
fn name_segments(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let at_end = matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ');
        if !at_end {
            continue;
        }
        let word = text[start..i].rsplit(' ').next().unwrap_or("");
        let abbreviation =
            b == b'.' && word.chars().count() <= 3 && word.chars().all(char::is_alphabetic);
        if !abbreviation {
            out.push(&text[start..i]);
            start = i + 2;
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `segment` as a name: trailing punctuation off; `None` when it is empty or longer than
/// [`MAX_NAME_WORDS`] words.
pub fn plausible_name(segment: &str) -> Option<String> {
    let name = segment
        .trim()
        .trim_end_matches(['.', ',', ';', ':'])
        .trim_end();
    let words = name.split_whitespace().count();
    (words > 0 && words <= MAX_NAME_WORDS && !name_key(name).is_empty()).then(|| name.to_string())
}

/// An alias: one sentence at most, and a plausible name.
fn plausible_alias(text: &str) -> Option<String> {
    match name_segments(text).as_slice() {
        [one] => plausible_name(one),
        _ => None,
    }
}

/// Entity number `index` of the reply, or `None` (with a note) when it is not an object with a name.
fn parse_entity(v: &Value, index: usize, notes: &mut Notes) -> Option<ParsedEntity> {
    let Some(obj) = v.as_object() else {
        notes.add(format!("entity #{index}: not an object, dropped"));
        return None;
    };
    let name = entity_name(obj, index, notes)?;
    let id = Some(text_field(
        obj,
        &["id", "entityId", "entity_id"],
        MAX_ID_CHARS,
    ))
    .filter(|s| !s.is_empty());
    let entity_type = EntityType::parse_lenient(&text_field(
        obj,
        &["type", "entityType", "entity_type", "kind"],
        32,
    ));
    let description = text_field(
        obj,
        &["description", "desc", "summary"],
        MAX_DESCRIPTION_CHARS,
    );
    let aliases = entity_aliases(obj, &name, notes);
    let properties = entity_properties(obj, &name, notes);
    let relationships = entity_relationships(obj, &name, notes);
    Some(ParsedEntity {
        id,
        entity_type,
        name,
        aliases,
        description,
        properties,
        relationships,
        sources: Vec::new(),
        said_at: None,
    })
}

/// The name of entity `obj` (number `index`): its name field's first sentence, when that is a
/// plausible name; `None` (with a note) when it is empty or a sentence.
fn entity_name(obj: &Map<String, Value>, index: usize, notes: &mut Notes) -> Option<String> {
    let raw_name = collapse_ws(&text_field(
        obj,
        &["name", "entityName", "entity_name", "title"],
        MAX_NAME_CHARS,
    ));
    if name_key(&raw_name).is_empty() {
        notes.add(format!("entity #{index}: empty name, dropped"));
        return None;
    }
    // A small model runs on past the name ("Ingrid Valcourt. I live in Trondheim."): the first
    // sentence is the name.
    let Some(name) = name_segments(&raw_name)
        .into_iter()
        .next()
        .and_then(plausible_name)
    else {
        notes.add(format!(
            "entity #{index}: '{raw_name}' is a sentence, not a name, dropped"
        ));
        return None;
    };
    Some(name)
}

/// The aliases of entity `obj` called `name`: plausible names other than it and each other, at most
/// [`MAX_ALIASES`].
fn entity_aliases(obj: &Map<String, Value>, name: &str, notes: &mut Notes) -> Vec<String> {
    let own_key = name_key(name);
    let mut aliases: Vec<String> = Vec::new();
    let mut seen = vec![own_key];
    // An array of names, or one name.
    let given: Vec<String> = match field(obj, &["aliases", "alias", "aka"]) {
        Some(Value::Array(list)) => list.iter().filter_map(value_to_string).collect(),
        Some(Value::String(a)) => vec![a.clone()],
        _ => Vec::new(),
    };
    for a in &given {
        let a = collapse_ws(truncate_chars(a.trim(), MAX_NAME_CHARS));
        // An alias is a name: a whole sentence ("Hi! My name is Ingrid.") is not one.
        let Some(a) = plausible_alias(&a) else {
            if !a.is_empty() {
                notes.add(format!("{name}: alias '{a}' is a sentence, dropped"));
            }
            continue;
        };
        let k = name_key(&a);
        if k.is_empty() || seen.contains(&k) {
            continue;
        }
        if aliases.len() == MAX_ALIASES {
            notes.add(format!(
                "{name}: more than {MAX_ALIASES} aliases, rest dropped"
            ));
            break;
        }
        seen.push(k);
        aliases.push(a);
    }
    aliases
}

/// The properties of entity `obj` called `name`: non-empty keys and values, cut to size, at most
/// [`MAX_PROPERTIES`].
fn entity_properties(
    obj: &Map<String, Value>,
    name: &str,
    notes: &mut Notes,
) -> BTreeMap<String, String> {
    let mut properties = BTreeMap::new();
    for (k, val) in property_pairs(obj, name, notes) {
        let key = collapse_ws(truncate_chars(k.trim(), MAX_PROPERTY_KEY_CHARS));
        let val = truncate_chars(val.trim(), MAX_PROPERTY_VALUE_CHARS).to_string();
        if key.is_empty() || val.is_empty() {
            continue;
        }
        if properties.len() == MAX_PROPERTIES && !properties.contains_key(&key) {
            notes.add(format!(
                "{name}: more than {MAX_PROPERTIES} properties, rest dropped"
            ));
            break;
        }
        properties.insert(key, val);
    }
    properties
}

/// The key/value pairs of entity `obj`'s properties, as given.
fn property_pairs(
    obj: &Map<String, Value>,
    name: &str,
    notes: &mut Notes,
) -> Vec<(String, String)> {
    // A map (the two-section reply) or a list of key/value pairs (the constrained form: a map cannot
    // be strict).
    match field(obj, &["properties", "props", "attributes"]) {
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| value_to_string(v).map(|v| (k.clone(), v)))
            .collect(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|item| {
                let pair = match item {
                    Value::Object(o) => field(o, &["key", "name"])
                        .and_then(value_to_string)
                        .zip(field(o, &["value"]).and_then(value_to_string)),
                    Value::Array(kv) if kv.len() == 2 => {
                        value_to_string(&kv[0]).zip(value_to_string(&kv[1]))
                    }
                    _ => None,
                };
                if pair.is_none() {
                    notes.add(format!(
                        "{name}: dropped a property that is not a key/value pair"
                    ));
                }
                pair
            })
            .collect(),
        None => Vec::new(),
        Some(_) => {
            notes.add(format!("{name}: properties is not an object, ignored"));
            Vec::new()
        }
    }
}

/// The relationships of entity `obj` called `name`, at most [`MAX_RELATIONSHIPS`].
fn entity_relationships(
    obj: &Map<String, Value>,
    name: &str,
    notes: &mut Notes,
) -> Vec<ParsedRelationship> {
    let mut relationships = Vec::new();
    match field(obj, &["relationships", "relations", "edges"]) {
        Some(Value::Array(list)) => {
            for r in list {
                if relationships.len() == MAX_RELATIONSHIPS {
                    notes.add(format!(
                        "{name}: more than {MAX_RELATIONSHIPS} relationships, rest dropped"
                    ));
                    break;
                }
                if let Some(rel) = parse_relationship(r, name, notes) {
                    relationships.push(rel);
                }
            }
        }
        None => {}
        Some(_) => notes.add(format!("{name}: relationships is not an array, ignored")),
    }
    relationships
}

/// Parses the entity section. `Ok(None)` when it holds no JSON at all.
fn parse_entities(
    section: &str,
    notes: &mut Notes,
) -> Result<Option<Vec<ParsedEntity>>, MemoryError> {
    let text = strip_fences(section);
    let Some(start) = text.find(['[', '{']) else {
        return Ok(None);
    };
    let json = &text[start..];
    let values: Vec<Value> = if json.starts_with('[') {
        let (elems, closed) = split_array(json);
        let mut values = Vec::new();
        let mut attempted = 0;
        let mut last_err = None;
        let count = elems.len();
        for (i, e) in elems.into_iter().enumerate() {
            if e.trim().is_empty() {
                continue;
            }
            attempted += 1;
            match parse_value(e) {
                Ok(v) => values.push(v),
                Err(err) => {
                    if !closed && i + 1 == count {
                        notes.add("the entity list was cut off; its last entry was dropped");
                    } else {
                        notes.add(format!("entity #{}: invalid JSON ({err}), dropped", i + 1));
                    }
                    last_err = Some(err.to_string());
                }
            }
        }
        if attempted > 0 && values.is_empty() {
            return Err(MemoryError::BadEntityJson {
                detail: last_err.unwrap_or_default(),
            });
        }
        values
    } else {
        match parse_value(json) {
            Ok(Value::Object(obj)) => {
                match ["entities", "nodes", "entity_memory", "entityMemory"]
                    .iter()
                    .find_map(|k| obj.get(*k))
                {
                    Some(Value::Array(list)) => list.clone(),
                    _ => vec![Value::Object(obj)],
                }
            }
            Ok(_) => Vec::new(),
            Err(err) => {
                return Err(MemoryError::BadEntityJson {
                    detail: err.to_string(),
                })
            }
        }
    };

    let mut entities = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if entities.len() == MAX_ENTITIES {
            notes.add(format!(
                "more than {MAX_ENTITIES} entities in one reply, rest dropped"
            ));
            break;
        }
        if let Some(e) = parse_entity(v, i + 1, notes) {
            entities.push(e);
        }
    }
    Ok(Some(entities))
}

/// Whether a summary line only echoes the update request's own scaffolding (its headings, the known
/// entity list), which small models copy.
fn is_scaffolding(line: &str) -> bool {
    let t = line.trim();
    let upper = t.to_ascii_uppercase();
    [
        "PREVIOUS SUMMARY",
        "KNOWN ENTITIES",
        "NEW MESSAGES",
        "(NONE YET)",
        "WRITE THE UPDATED MEMORY",
    ]
    .iter()
    .any(|h| upper.starts_with(h))
        || t == super::prompt::NO_PREVIOUS
        || (t.starts_with("- ") && t.matches(" | ").count() >= 2)
}

/// Drops scaffolding lines and the role labels of copied messages (`[USER]: `).
fn without_scaffolding(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines().filter(|l| !is_scaffolding(l)) {
        let line = line.trim_start();
        let line = ["[USER]:", "[ASSISTANT]:", "[SYSTEM]:", "[TOOL]:"]
            .iter()
            .find_map(|label| line.strip_prefix(label))
            .unwrap_or(line);
        out.push_str(line.trim());
        out.push('\n');
    }
    out
}

fn clean_summary(section: &str, notes: &mut Notes) -> Option<String> {
    let text = without_scaffolding(&strip_fences(section));
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let cut = truncate_chars(text, MAX_SUMMARY_CHARS);
    if cut.len() < text.len() {
        notes.add(format!(
            "the summary was longer than {MAX_SUMMARY_CHARS} characters and was cut"
        ));
    }
    Some(cut.trim_end().to_string())
}

/// Whether `reply` is the constrained form's JSON object (a `summary` or `entities` field), whatever
/// its fields hold: a model that answered in the update's shape with nothing in it said there is
/// nothing new, which is not a garbled reply.
pub fn is_structured_reply(reply: &str) -> bool {
    reply.len() <= MAX_REPLY_BYTES && structured_object(reply, &mut Notes(Vec::new())).is_some()
}

/// Parses and validates a memory-update reply. On error nothing may be changed by the caller.
pub fn parse_reply(reply: &str) -> Result<ParsedUpdate, MemoryError> {
    if reply.len() > MAX_REPLY_BYTES {
        return Err(MemoryError::ReplyTooLarge {
            bytes: reply.len(),
            limit: MAX_REPLY_BYTES,
        });
    }
    if reply.trim().is_empty() {
        return Err(MemoryError::EmptyReply);
    }
    let mut notes = Notes(Vec::new());
    let (conv, ent) = split_sections(reply);
    if conv.is_none() && ent.is_none() {
        if let Some(obj) = structured_object(reply, &mut notes) {
            return parse_structured(&obj, notes);
        }
    }
    let summary = conv.and_then(|c| clean_summary(c, &mut notes));
    if conv.is_none() {
        notes.add("the reply had no conversation-memory section");
    }
    let entities = match ent {
        Some(section) => parse_entities(section, &mut notes)?.unwrap_or_else(|| {
            if !section.trim().is_empty() {
                notes.add("the entity section held no JSON; no entity changes");
            }
            Vec::new()
        }),
        None if conv.is_none() => {
            // No headings at all: accept a bare JSON entity array, if that is what came back.
            parse_entities(reply, &mut notes)
                .ok()
                .flatten()
                .unwrap_or_default()
        }
        None => {
            notes.add("the reply had no entity-memory section");
            Vec::new()
        }
    };
    if summary.is_none() && entities.is_empty() {
        return Err(MemoryError::NoMemory);
    }
    Ok(ParsedUpdate {
        summary,
        entities,
        no_longer_true: Vec::new(),
        user_facts: Proposals::default(),
        notes: notes.0,
    })
}

/// The reply as the constrained form's JSON object: a `{` that opens it (after code fences and prose)
/// and a `summary` or `entities` field. An object cut off by the token limit is closed first.
fn structured_object(reply: &str, notes: &mut Notes) -> Option<Map<String, Value>> {
    let text = strip_fences(reply);
    let start = text.find('{')?;
    let json = remove_trailing_commas(text[start..].trim_end());
    let mut stream = serde_json::Deserializer::from_str(&json).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) if e.is_eof() => {
            let closed = close_truncated(&json)?;
            let v = serde_json::from_str::<Value>(&closed).ok()?;
            notes.add("the reply was cut off; what was complete is kept");
            v
        }
        _ => return None,
    };
    match value {
        Value::Object(obj) if obj.contains_key("summary") || obj.contains_key("entities") => {
            Some(obj)
        }
        _ => None,
    }
}

fn parse_structured(
    obj: &Map<String, Value>,
    mut notes: Notes,
) -> Result<ParsedUpdate, MemoryError> {
    let summary = match field(obj, &["summary"]) {
        Some(Value::String(s)) => clean_summary(s, &mut notes),
        Some(_) => {
            notes.add("the summary is not text; ignored");
            None
        }
        None => None,
    };
    let mut entities = Vec::new();
    match field(obj, &["entities"]) {
        Some(Value::Array(list)) => {
            for (i, v) in list.iter().enumerate() {
                if entities.len() == MAX_ENTITIES {
                    notes.add(format!(
                        "more than {MAX_ENTITIES} entities in one reply, rest dropped"
                    ));
                    break;
                }
                if let Some(e) = parse_entity(v, i + 1, &mut notes) {
                    entities.push(e);
                }
            }
        }
        None => {}
        Some(_) => notes.add("the entities are not a list; ignored"),
    }
    let user_facts = Proposals {
        said: parse_proposals(
            field(obj, &["user_facts", "userFacts"]),
            "user_facts",
            &mut notes,
        ),
        ended: parse_proposals(
            field(obj, &["user_facts_ended", "userFactsEnded"]),
            "user_facts_ended",
            &mut notes,
        ),
    };
    if summary.is_none() && entities.is_empty() && user_facts.is_empty() {
        return Err(MemoryError::NoMemory);
    }
    let no_longer_true = match field(obj, &["no_longer_true", "noLongerTrue"]) {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .take(super::form::SCHEMA_MAX_LIST as usize)
            .map(|s| super::normalize::truncate_chars(s, 400).to_string())
            .collect(),
        _ => Vec::new(),
    };
    Ok(ParsedUpdate {
        summary,
        entities,
        no_longer_true,
        user_facts,
        notes: notes.0,
    })
}

/// Deepest nesting [`close_truncated`] repairs.
const MAX_REPAIR_DEPTH: usize = 32;

/// Closes JSON text that was cut off: a string value of the outermost object cut mid-way is ended where
/// it stops (a dangling escape dropped), anything else incomplete (a key, a `:` without its value, a half number or
/// literal) is removed back to the last complete element, and the open arrays and objects are closed.
/// `None` when there is nothing to close or the nesting is deeper than [`MAX_REPAIR_DEPTH`].
pub fn close_truncated(s: &str) -> Option<String> {
    // Stack of open containers; for objects, whether the next string is a key.
    let mut stack: Vec<(u8, bool)> = Vec::new();
    // Last place the prefix can be cut and closed: (byte offset, the stack there).
    let mut safe: Option<(usize, Vec<(u8, bool)>)> = None;
    // The string the text ends in, if it is cut off: (its start, whether it is a key).
    let mut cut_string = None;
    for t in tokens(s.as_bytes()) {
        match t {
            Token::Str { start, end, closed } => {
                let is_key = matches!(stack.last(), Some((b'{', true)));
                if let Some((b'{', expect_key)) = stack.last_mut() {
                    *expect_key = false;
                }
                if !closed {
                    cut_string = Some((start, is_key));
                } else if !is_key {
                    safe = Some((end, stack.clone()));
                }
            }
            Token::Byte(i, b @ (b'{' | b'[')) => {
                if stack.len() == MAX_REPAIR_DEPTH {
                    return None;
                }
                stack.push((b, b == b'{'));
                safe = Some((i + 1, stack.clone()));
            }
            Token::Byte(i, b'}' | b']') => {
                stack.pop();
                if stack.is_empty() {
                    return None; // complete: nothing to close
                }
                safe = Some((i + 1, stack.clone()));
            }
            Token::Byte(i, b',') => {
                safe = Some((i, stack.clone()));
                if let Some((b'{', expect_key)) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            Token::Byte(..) => {}
        }
    }
    if stack.is_empty() && cut_string.is_none() {
        return None;
    }
    let (mut out, open) = match cut_string {
        // A top-level string value (the summary) cut mid-way: end it where it stops. Deeper (a name,
        // an id) a cut value would be wrong data, so those go back to the last complete element.
        Some((str_start, false)) if stack.len() == 1 => {
            let mut body = &s[str_start..];
            if ends_in_escape(&body.as_bytes()[1..]) {
                body = &body[..body.len() - 1];
            }
            // A `\u` escape cut short.
            if let Some(p) = body.rfind("\\u") {
                if body.len() - p < 6 {
                    body = &body[..p];
                }
            }
            (format!("{}{}\"", &s[..str_start], body), stack)
        }
        _ => {
            let (at, open) = safe?;
            (s[..at].to_string(), open)
        }
    };
    let trimmed = out.trim_end().trim_end_matches(',').len();
    out.truncate(trimmed);
    for (c, _) in open.iter().rev() {
        out.push(if *c == b'{' { '}' } else { ']' });
    }
    Some(out)
}
