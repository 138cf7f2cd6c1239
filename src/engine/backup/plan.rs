//! Planning an import against what is stored: records that exist by id are skipped and counted;
//! an id that exists under a *different* conversation, or a different message at a seq already
//! taken, is an error, never an overwrite. Facts about the user are the one kind merged: a fact
//! stored already is joined with the file's copy (`memory::user::join_fact`: the newer words win,
//! a forgotten copy wins over a live one, so an older backup never brings a forgotten fact back). The result is exactly what the store writes, in one
//! transaction. Must not import anything outside `crate::engine`.

use super::check::CheckedImport;
use super::wire::{read, read_all, BEntity, BSummary, BUserFact, BackupFile};
use super::ImportError;
use crate::engine::format::{clip, plural};
use crate::engine::memory::user::join_fact;
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, Message, Millis, Project, Role,
    UserFact,
};
use std::collections::{HashMap, HashSet};

/// What the store already holds, so the import can skip existing records and refuse collisions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExistingIds {
    pub conversations: HashSet<String>,
    /// Message id -> where it lives.
    pub messages: HashMap<String, ExistingMessage>,
    /// `(conversation id, summary version)`.
    pub summaries: HashSet<(String, u32)>,
    /// Entity id -> its scope.
    pub entities: HashMap<String, EntityScope>,
    /// Stored conversation id -> its highest message seq (read for other apps' exports, which
    /// append what is new; a backup's plan does not use it).
    pub last_seqs: HashMap<String, u64>,
    /// Every stored fact about the user (read only when the file carries some).
    pub user_facts: Vec<UserFact>,
    /// Every stored project (read only when the file carries some).
    pub projects: Vec<Project>,
}

/// Where an existing message lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingMessage {
    pub conversation_id: String,
    pub seq: u64,
}

/// Records per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportCounts {
    pub conversations: usize,
    pub messages: usize,
    pub summaries: usize,
    pub entities: usize,
    /// Facts about the user (forgotten ones included).
    pub facts: usize,
}

impl ImportCounts {
    /// In plain words: "2 conversations, 1 message, 0 summaries and 1 entity" (and ", 1 entity
    /// and 2 facts about you" when there are facts).
    pub fn describe(&self) -> String {
        use crate::engine::format::plural;
        let head = format!(
            "{}, {}, {}",
            plural(self.conversations, "conversation", "conversations"),
            plural(self.messages, "message", "messages"),
            plural(self.summaries, "summary", "summaries"),
        );
        let entities = plural(self.entities, "entity", "entities");
        if self.facts == 0 {
            return format!("{head} and {entities}");
        }
        let facts = plural(self.facts, "fact about you", "facts about you");
        format!("{head}, {entities} and {facts}")
    }
}

/// Exactly what an import writes (new records only), and what it skipped because it already exists.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImportPlan {
    pub exported_at: Millis,
    pub conversations: Vec<Conversation>,
    pub messages: Vec<Message>,
    pub summaries: Vec<ConversationSummary>,
    pub entities: Vec<EntityNode>,
    /// Facts about the user to write: new ones, and stored ones the file's copy changes (joined
    /// with it). Written again at the confirm joined with the facts stored then
    /// ([`join_user_facts`]), so a fact forgotten since the preview stays forgotten.
    pub user_facts: Vec<UserFact>,
    /// Projects to write: new ones, and stored ones the file's copy changes, joined
    /// (`engine::project::join_all`; a deletion wins). Joined again with those stored at the
    /// confirm, like the facts.
    pub projects: Vec<Project>,
    pub added: ImportCounts,
    pub skipped: ImportCounts,
}

impl ImportPlan {
    /// The preview's line on the projects the import writes, when it writes any: "Projects: 1 new
    /// or changed."
    pub fn projects_preview(&self) -> Option<String> {
        let n = self.projects.len();
        (n > 0).then(|| format!("Projects: {} new or changed.", n))
    }

    /// The preview's line on the facts about the user, when the file carries any: "Facts about
    /// you: 2 new, 1 already here."
    pub fn facts_preview(&self) -> Option<String> {
        let (new, here) = (self.added.facts, self.skipped.facts);
        (new + here > 0).then(|| format!("Facts about you: {new} new, {here} already here."))
    }

    /// What the import brings that acts beyond its own conversations' messages, for the preview
    /// to name before the user confirms (see [`ImportReach`]).
    pub fn reach(&self) -> ImportReach {
        let shared_entities = self
            .entities
            .iter()
            .filter(|e| e.scope == EntityScope::Shared)
            .map(|e| e.name.clone())
            .collect();
        let mut reach = ImportReach {
            shared_entities,
            ..ImportReach::default()
        };
        for c in &self.conversations {
            let o = &c.memory_overrides;
            if let Some(prompt) = set(&o.system_prompt) {
                reach
                    .system_prompts
                    .push((c.title.clone(), prompt.to_string()));
            }
            for model in [set(&o.model), set(&o.memory_model)].into_iter().flatten() {
                reach.models.push((c.title.clone(), model.to_string()));
            }
        }
        reach.project_instructions = self
            .projects
            .iter()
            .filter(|p| p.deleted.is_none() && !p.instructions.trim().is_empty())
            .map(|p| (p.name.clone(), p.instructions.trim().to_string()))
            .collect();
        reach.system_messages = self
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .count();
        reach
    }

    /// What the import did, for the notice: what was added, and what was already here.
    pub fn report(&self) -> String {
        let skipped = self.skipped;
        if skipped == ImportCounts::default() {
            return format!("Imported {}.", self.added.describe());
        }
        format!(
            "Imported {}; skipped {} that were already here.",
            self.added.describe(),
            skipped.describe()
        )
    }
}

impl CheckedImport {
    /// Plans the write against what is stored: skips records that exist by id, refuses ids or seqs
    /// that collide with different records.
    pub fn plan(self, existing: &ExistingIds) -> Result<ImportPlan, ImportError> {
        plan(self.file, existing, self.append)
    }
}

/// An override's text when it says something.
fn set(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// What an import brings that acts beyond the messages of its own conversations: shared entities
/// (memory any conversation's prompt may carry), the system prompts and models it sets on the
/// conversations it adds, the instructions of the projects it writes (sent with every conversation
/// of the project), and the `system`-role messages it adds (kept as the conversation's text and
/// sent as quoted user text, never as instructions: `engine::history::render_message`). Only what
/// the import writes is listed: a conversation already here keeps its own settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportReach {
    /// Names of the shared entities added.
    pub shared_entities: Vec<String>,
    /// (conversation title, system prompt) of each added conversation that has its own.
    pub system_prompts: Vec<(String, String)>,
    /// (conversation title, model) for each chat or memory model an added conversation sets.
    pub models: Vec<(String, String)>,
    /// (project name, instructions) of each project written that has instructions.
    pub project_instructions: Vec<(String, String)>,
    /// How many `system`-role messages are added.
    pub system_messages: usize,
}

/// Most names or texts listed in one preview line, and the longest quoted text, in characters.
const REACH_LISTED: usize = 12;
const REACH_TEXT_CHARS: usize = 160;

/// `items` joined with ", ", at most [`REACH_LISTED`] of them, then "and N more".
fn listed(items: impl ExactSizeIterator<Item = String>) -> String {
    let n = items.len();
    let mut out: Vec<String> = items.take(REACH_LISTED).collect();
    if n > REACH_LISTED {
        out.push(format!("and {} more", n - REACH_LISTED));
    }
    out.join(", ")
}

/// A title or text quoted for the preview, clipped.
fn quoted(s: &str) -> String {
    format!("“{}”", clip(s.trim(), REACH_TEXT_CHARS))
}

impl ImportReach {
    /// Whether the import brings nothing of the kind.
    pub fn is_empty(&self) -> bool {
        *self == ImportReach::default()
    }

    /// One line per kind the preview lists, each saying what it acts on.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let named = |v: &[(String, String)]| {
            listed(
                v.iter()
                    .map(|(t, x)| format!("{}: {}", quoted(t), quoted(x))),
            )
        };
        if !self.shared_entities.is_empty() {
            lines.push(format!(
                "Shared memory used in every conversation: {}: {}",
                plural(self.shared_entities.len(), "entity", "entities"),
                listed(self.shared_entities.iter().map(|n| quoted(n)))
            ));
        }
        if !self.system_prompts.is_empty() {
            lines.push(format!(
                "System prompts it sets on its conversations: {}",
                named(&self.system_prompts)
            ));
        }
        if !self.models.is_empty() {
            lines.push(format!(
                "Models it sets on its conversations: {}",
                named(&self.models)
            ));
        }
        if !self.project_instructions.is_empty() {
            lines.push(format!(
                "Project instructions, sent with every conversation of the project: {}",
                named(&self.project_instructions)
            ));
        }
        if self.system_messages > 0 {
            lines.push(format!(
                "{} from the file: kept as text of the conversation, never sent as instructions.",
                plural(self.system_messages, "system message", "system messages")
            ));
        }
        lines
    }
}

/// Plans a checked file against what already exists: skip the same record, refuse a different owner.
fn plan(file: BackupFile, existing: &ExistingIds, append: bool) -> Result<ImportPlan, ImportError> {
    let conv_ids: HashSet<&str> = file
        .conversations
        .iter()
        .map(|b| b.conversation.id.as_str())
        .collect();
    let mut taken_seqs: HashMap<(&str, u64), &str> = HashMap::new();
    for (id, m) in &existing.messages {
        if conv_ids.contains(m.conversation_id.as_str()) {
            taken_seqs.insert((m.conversation_id.as_str(), m.seq), id.as_str());
        }
    }
    let mut plan = ImportPlan {
        exported_at: file.exported_at,
        ..ImportPlan::default()
    };
    for b in file.conversations {
        let conv_id = b.conversation.id.clone();
        if existing.conversations.contains(&conv_id) {
            plan.skipped.conversations += 1;
        } else {
            plan.conversations
                .push(read(b.conversation, || format!("conversation {conv_id}"))?);
            plan.added.conversations += 1;
        }
        // Other apps' exports: what is new to a stored conversation goes after its last message.
        let mut next_seq = match existing.last_seqs.get(&conv_id) {
            Some(&last) if append && existing.conversations.contains(&conv_id) => Some(last + 1),
            _ => None,
        };
        for mut m in b.messages {
            if let Some(found) = existing.messages.get(&m.id) {
                if found.conversation_id != conv_id {
                    return Err(ImportError::IdCollision {
                        kind: "message",
                        id: m.id,
                        existing: found.conversation_id.clone(),
                        incoming: conv_id,
                    });
                }
                plan.skipped.messages += 1;
                continue;
            }
            if let Some(seq) = next_seq.as_mut() {
                m.seq = *seq;
                *seq += 1;
                plan.messages.push(m.into_model()?);
                plan.added.messages += 1;
                continue;
            }
            if taken_seqs.contains_key(&(conv_id.as_str(), m.seq)) {
                return Err(ImportError::SeqCollision {
                    conversation_id: conv_id,
                    seq: m.seq,
                });
            }
            plan.messages.push(m.into_model()?);
            plan.added.messages += 1;
        }
        plan_summaries(&mut plan, existing, &conv_id, b.summaries)?;
        let scope = EntityScope::Conversation(conv_id.clone());
        for e in b.entities {
            plan_entity(&mut plan, existing, e, scope.clone())?;
        }
    }
    for e in file.shared_entities {
        plan_entity(&mut plan, existing, e, EntityScope::Shared)?;
    }
    plan_facts(&mut plan, &existing.user_facts, file.user_facts)?;
    let projects: Vec<Project> = read_all(file.projects, |p| format!("project {}", p.id))?;
    plan.projects = crate::engine::project::join_all(&existing.projects, &projects);
    Ok(plan)
}

/// The summaries of conversation `conv_id` to write (those not stored yet) and their counts.
fn plan_summaries(
    plan: &mut ImportPlan,
    existing: &ExistingIds,
    conv_id: &str,
    summaries: Vec<BSummary>,
) -> Result<(), ImportError> {
    for s in summaries {
        if existing
            .summaries
            .contains(&(conv_id.to_string(), s.version))
        {
            plan.skipped.summaries += 1;
        } else {
            plan.summaries
                .push(read(s, || format!("summary of {conv_id}"))?);
            plan.added.summaries += 1;
        }
    }
    Ok(())
}

/// The facts to write and their counts ([`join_user_facts`]).
fn plan_facts(
    plan: &mut ImportPlan,
    stored: &[UserFact],
    incoming: Vec<BUserFact>,
) -> Result<(), ImportError> {
    let incoming = read_all(incoming, |f| format!("fact about you {}", f.id))?;
    let joined = join_user_facts(stored, &incoming);
    plan.added.facts = joined.new;
    plan.skipped.facts = joined.here;
    plan.user_facts = joined.write;
    Ok(())
}

/// What importing facts about the user does to the stored ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JoinedFacts {
    /// The facts to write: each new one, and each stored one the incoming copy changes, joined.
    pub write: Vec<UserFact>,
    /// How many incoming facts are new here, and how many were here already.
    pub new: usize,
    pub here: usize,
}

/// Joins `incoming` facts into the `stored` ones by id (`memory::user::join_fact`): a new one is
/// written as it is, a stored one only when the join changes it (newer words, or a tombstone or
/// an end the stored copy lacks); a stored tombstone stays a tombstone whatever the incoming copy
/// says. Two incoming copies of one id join first.
pub fn join_user_facts(stored: &[UserFact], incoming: &[UserFact]) -> JoinedFacts {
    let here: HashMap<&str, &UserFact> = stored.iter().map(|f| (f.id.as_str(), f)).collect();
    let mut out = JoinedFacts::default();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut all: Vec<UserFact> = Vec::new();
    for f in incoming {
        match at.get(&f.id) {
            Some(&k) => all[k] = join_fact(&all[k], f),
            None => {
                at.insert(f.id.clone(), all.len());
                all.push(f.clone());
            }
        }
    }
    for f in all {
        match here.get(f.id.as_str()) {
            Some(stored) => {
                out.here += 1;
                let joined = join_fact(stored, &f);
                if joined != **stored {
                    out.write.push(joined);
                }
            }
            None => {
                out.new += 1;
                out.write.push(f);
            }
        }
    }
    out
}

fn plan_entity(
    plan: &mut ImportPlan,
    existing: &ExistingIds,
    e: BEntity,
    scope: EntityScope,
) -> Result<(), ImportError> {
    match existing.entities.get(&e.id) {
        Some(found) if *found == scope => {
            plan.skipped.entities += 1;
            Ok(())
        }
        Some(found) => Err(ImportError::IdCollision {
            kind: "entity",
            id: e.id,
            existing: scope_owner(found),
            incoming: scope_owner(&scope),
        }),
        None => {
            plan.entities.push(e.into_model(scope)?);
            plan.added.entities += 1;
            Ok(())
        }
    }
}

fn scope_owner(scope: &EntityScope) -> String {
    match scope {
        EntityScope::Conversation(id) => id.clone(),
        EntityScope::Shared => "(shared)".to_string(),
    }
}
