//! Export as the backup file: every conversation given, with its messages, summaries and entities,
//! the shared entities once, and the facts about the user (forgotten ones included: a tombstone
//! keeps an import from bringing the fact back, [`facts_for_export`] says which go). Never writes API keys or endpoint profiles (only a conversation's
//! profile *id* travels). Must not import anything outside `crate::engine`.

use super::wire::{BBlob, BConversationBundle, BEntity, BackupFile};
use super::{ConversationBundle, ImageBlob, FORMAT, VERSION};
use crate::engine::model::{
    AttachmentKind, Conversation, ConversationSummary, EntityNode, EntityScope, Message, Millis,
    Project, UserFact,
};
use crate::engine::sort;
use std::collections::HashSet;

/// The backup JSON for `bundles` (one conversation or all of them) and the shared entities.
///
/// Messages are written in seq order and summaries in version order. A bundle entity whose scope is
/// `Shared` is written once among the shared entities; every other bundle entity belongs to its
/// bundle's conversation. API keys and endpoint profiles are never part of the file.
pub fn export_json(
    bundles: &[ConversationBundle],
    shared_entities: &[EntityNode],
    exported_at: Millis,
) -> String {
    export_backup(bundles, shared_entities, &[], exported_at)
}

/// The facts about the user a backup carries: every one (forgotten ones too) in a backup of
/// everything (`conversation` `None`); in a backup of one conversation, those said in it (a
/// conversation shared with someone does not take along what the user said elsewhere).
pub fn facts_for_export<'a>(
    facts: &'a [UserFact],
    conversation: Option<&str>,
) -> Vec<&'a UserFact> {
    facts
        .iter()
        .filter(|f| {
            conversation.is_none_or(|c| f.source.as_ref().is_some_and(|s| s.conversation_id == c))
        })
        .collect()
}

/// [`export_json`] with the facts about the user (`facts`, from [`facts_for_export`]), oldest
/// first.
pub fn export_backup(
    bundles: &[ConversationBundle],
    shared_entities: &[EntityNode],
    facts: &[&UserFact],
    exported_at: Millis,
) -> String {
    export_with_projects(bundles, shared_entities, facts, &[], exported_at)
}

/// The projects a backup carries: every one (deleted ones too) in a backup of everything
/// (`conversation` `None`); in a backup of one conversation, its own project only.
pub fn projects_for_export<'a>(
    projects: &'a [Project],
    conversation: Option<&Conversation>,
) -> Vec<&'a Project> {
    projects
        .iter()
        .filter(|p| {
            conversation.is_none_or(|c| c.memory_overrides.project.as_deref() == Some(&p.id))
        })
        .collect()
}

/// [`export_backup`] with the projects (`projects`, from [`projects_for_export`]), by id.
pub fn export_with_projects(
    bundles: &[ConversationBundle],
    shared_entities: &[EntityNode],
    facts: &[&UserFact],
    projects: &[&Project],
    exported_at: Millis,
) -> String {
    export_with_images(bundles, shared_entities, facts, projects, &[], exported_at)
}

/// The images the messages of `bundles` show (each hash once, in order): whose bytes a backup
/// carries.
pub fn image_hashes(bundles: &[ConversationBundle]) -> Vec<String> {
    let mut seen = HashSet::new();
    bundles
        .iter()
        .flat_map(|b| b.messages.iter())
        .flat_map(|m| m.meta.attachments.iter())
        .filter(|a| a.kind == AttachmentKind::Image && seen.insert(a.hash.clone()))
        .map(|a| a.hash.clone())
        .collect()
}

/// [`export_with_projects`] with the images' bytes (`images`, those of [`image_hashes`] that are
/// stored), as base64 by hash.
pub fn export_with_images(
    bundles: &[ConversationBundle],
    shared_entities: &[EntityNode],
    facts: &[&UserFact],
    projects: &[&Project],
    images: &[ImageBlob],
    exported_at: Millis,
) -> String {
    use base64::Engine as _;
    let mut shared: Vec<BEntity> = Vec::new();
    let mut shared_ids = HashSet::new();
    let mut push_shared = |e: &EntityNode, shared: &mut Vec<BEntity>| {
        if shared_ids.insert(e.id.clone()) {
            shared.push(e.into());
        }
    };
    for e in shared_entities {
        push_shared(e, &mut shared);
    }
    let mut conversations = Vec::with_capacity(bundles.len());
    for b in bundles {
        let mut messages: Vec<&Message> = b.messages.iter().collect();
        sort::sort_by_key(&mut messages, |m| m.seq);
        let mut summaries: Vec<&ConversationSummary> = b.summaries.iter().collect();
        sort::sort_by_key(&mut summaries, |s| s.version);
        let mut entities = Vec::new();
        for e in &b.entities {
            match e.scope {
                EntityScope::Shared => push_shared(e, &mut shared),
                EntityScope::Conversation(_) => entities.push(BEntity::from(e)),
            }
        }
        conversations.push(BConversationBundle {
            conversation: (&b.conversation).into(),
            messages: messages.into_iter().map(Into::into).collect(),
            summaries: summaries.into_iter().map(Into::into).collect(),
            entities,
        });
    }
    let file = BackupFile {
        format: FORMAT.to_string(),
        version: VERSION,
        exported_at,
        conversations,
        shared_entities: shared,
        user_facts: {
            let mut facts = facts.to_vec();
            sort::sort_by(&mut facts, |a, b| {
                (a.valid_from, &a.id).cmp(&(b.valid_from, &b.id))
            });
            facts.into_iter().map(Into::into).collect()
        },
        projects: {
            let mut projects = projects.to_vec();
            sort::sort_by(&mut projects, |a, b| a.id.cmp(&b.id));
            projects.into_iter().map(Into::into).collect()
        },
        blobs: images
            .iter()
            .map(|i| BBlob {
                hash: i.hash.clone(),
                mime: i.mime.clone(),
                data: base64::engine::general_purpose::STANDARD.encode(&i.bytes),
            })
            .collect(),
    };
    // Plain data with string keys and finite numbers: serialisation cannot fail.
    serde_json::to_string_pretty(&file).unwrap_or_default()
}
