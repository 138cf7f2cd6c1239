//! The order in which the driver applies a batch of the replicator's merges, and the one stamp its
//! clock observes for them. Messages are appended at this device's next seq, so every other
//! document goes first, then messages in their writer's order (seq, then time): a batch pulled in
//! `_changes` order (or pushed back in `_id` order) keeps each conversation's order.
//! Must not import anything outside `crate::engine`.

use super::{Body, Hlc, Write};

/// Puts the merges handed out together in the order they are applied: every document that is not
/// a message first (in the order given), then messages by (seq, created_at). The sort is stable.
pub fn in_order(batch: &mut Vec<Write>) {
    crate::engine::sort::sort_by_key(batch, |w| match w {
        Write::Merge { remote, .. } => match &remote.body {
            Body::Message(m) => (1, m.seq, m.created_at),
            _ => (0, 0, 0),
        },
        _ => (0, 0, 0),
    });
}

/// The latest stamp of a batch's merged documents: the clock observes it once (observing the
/// greatest is observing all). `None` when no document carries one.
pub fn latest_stamp(batch: &[Write]) -> Option<Hlc> {
    batch
        .iter()
        .filter_map(|w| match w {
            Write::Merge { remote, .. } => remote.body.latest_stamp(),
            _ => None,
        })
        .max()
        .cloned()
}
