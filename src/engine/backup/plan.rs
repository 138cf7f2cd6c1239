//! Planning an import against what is stored: records that exist by id are skipped and counted;
//! an id that exists under a *different* conversation, or a different message at a seq already
//! taken, is an error, never an overwrite. The result is exactly what the store writes, in one
//! transaction. Must not import anything outside `crate::engine`.

use super::check::CheckedImport;
use super::wire::{BEntity, BackupFile};
use super::ImportError;
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, Message, Millis,
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
}

impl ImportCounts {
    /// In plain words: "2 conversations, 1 message, 0 summaries and 1 entity".
    pub fn describe(&self) -> String {
        use crate::engine::format::plural;
        format!(
            "{}, {}, {} and {}",
            plural(self.conversations, "conversation", "conversations"),
            plural(self.messages, "message", "messages"),
            plural(self.summaries, "summary", "summaries"),
            plural(self.entities, "entity", "entities"),
        )
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
    pub added: ImportCounts,
    pub skipped: ImportCounts,
}

impl ImportPlan {
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
            plan.conversations.push(b.conversation.into_model()?);
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
                plan.messages.push(m.into());
                plan.added.messages += 1;
                continue;
            }
            if taken_seqs.contains_key(&(conv_id.as_str(), m.seq)) {
                return Err(ImportError::SeqCollision {
                    conversation_id: conv_id,
                    seq: m.seq,
                });
            }
            plan.messages.push(m.into());
            plan.added.messages += 1;
        }
        for s in b.summaries {
            if existing.summaries.contains(&(conv_id.clone(), s.version)) {
                plan.skipped.summaries += 1;
            } else {
                plan.summaries.push(s.into());
                plan.added.summaries += 1;
            }
        }
        let scope = EntityScope::Conversation(conv_id.clone());
        for e in b.entities {
            plan_entity(&mut plan, existing, e, scope.clone())?;
        }
    }
    for e in file.shared_entities {
        plan_entity(&mut plan, existing, e, EntityScope::Shared)?;
    }
    Ok(plan)
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
            plan.entities.push(e.into_model(scope));
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
