//! Summary versioning: the next [`ConversationSummary`] version from a parsed reply, and restoring an
//! older version's text as a new version. Versions only ever grow; every version is kept by the store.
//! Must not import anything outside `crate::engine`.

use super::prompt::UpdateSpan;
use super::MemoryError;
use crate::engine::model::{ConversationSummary, Millis};

/// The latest version among `versions` (highest `version`), if any.
pub fn latest(versions: &[ConversationSummary]) -> Option<&ConversationSummary> {
    versions.iter().max_by_key(|s| s.version)
}

/// The next summary version after `previous`: `version + 1` (1 for the first), the new text,
/// `covers_up_to_seq` = the update span's last seq (never below the previous one), the conversation's
/// message count, and `updated_at = now`.
pub fn next_summary(
    previous: Option<&ConversationSummary>,
    conversation_id: &str,
    text: &str,
    span: &UpdateSpan,
    message_count: u64,
    now: Millis,
) -> ConversationSummary {
    ConversationSummary {
        conversation_id: conversation_id.to_string(),
        version: previous.map_or(1, |p| p.version.saturating_add(1)),
        text: text.to_string(),
        covers_up_to_seq: previous.map_or(span.to_seq, |p| p.covers_up_to_seq.max(span.to_seq)),
        message_count,
        updated_at: now,
    }
}

/// Restores `older`'s text as a new version on top of `latest`. The new version covers only what
/// `older` covered (its `covers_up_to_seq` and `message_count`), so the messages summarised after it are
/// summarised again by the next update instead of being silently lost.
pub fn restore_summary(
    latest: &ConversationSummary,
    older: &ConversationSummary,
    now: Millis,
) -> Result<ConversationSummary, MemoryError> {
    if latest.conversation_id != older.conversation_id {
        return Err(MemoryError::RestoreOtherConversation);
    }
    if older.version >= latest.version {
        return Err(MemoryError::RestoreNotOlder {
            older: older.version,
            latest: latest.version,
        });
    }
    Ok(ConversationSummary {
        conversation_id: latest.conversation_id.clone(),
        version: latest.version.saturating_add(1),
        text: older.text.clone(),
        covers_up_to_seq: older.covers_up_to_seq,
        message_count: older.message_count,
        updated_at: now,
    })
}
