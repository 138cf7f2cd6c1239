//! Pages of the message list: which messages of a conversation a page holds (the last `k`, the `k`
//! before or after a seq, or the `k` around a message the user jumped to), and whether there are
//! more above or below it. The session reads the messages (a branch, or a range of seqs from the
//! store) and passes them in; this decides what of them the page is.
//! Must not import anything outside `crate::engine`.

use std::collections::BTreeMap;

use crate::engine::branch::Alternatives;
use crate::engine::model::Message;

/// One page of messages, oldest first.
#[derive(Debug, Clone)]
pub struct Page {
    pub messages: Vec<Message>,
    pub has_older: bool,
    /// Messages after the page exist (a page above the latest, or around a search hit).
    pub has_newer: bool,
    /// Where each message of the page that has alternatives stands among them (by id).
    pub alternatives: BTreeMap<String, Alternatives>,
}

/// Which page of a list is asked for: the `k` messages before seq `before`, after seq `after`, or
/// around `focus`, else the last `k`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageAsk<'a> {
    pub before: Option<u64>,
    pub after: Option<u64>,
    pub k: usize,
    pub focus: Option<&'a str>,
}

/// A page of a branch (`all`: its messages, root first; `alternatives`: where each message with
/// alternatives stands among them) as `ask` says. `before` wins over `after`, and both over `focus`;
/// a `focus` among the last `k`, or not on the branch, gives the last `k`.
pub fn page_of_branch(
    all: &[Message],
    alternatives: &BTreeMap<String, Alternatives>,
    ask: PageAsk<'_>,
) -> Page {
    let k = ask.k;
    let at = |id: &str| all.iter().position(|m| m.id == id);
    let end = match (ask.before, ask.after, ask.focus.and_then(at)) {
        (Some(seq), _, _) => all.iter().position(|m| m.seq >= seq).unwrap_or(all.len()),
        (None, Some(seq), _) => {
            let start = all.iter().position(|m| m.seq > seq).unwrap_or(all.len());
            (start + k).min(all.len())
        }
        (None, None, Some(i)) if i + k < all.len() => (i + k / 2 + 1).min(all.len()),
        _ => all.len(),
    };
    let start = end.saturating_sub(k);
    let messages: Vec<Message> = all[start..end].to_vec();
    let alternatives = messages
        .iter()
        .filter_map(|m| Some((m.id.clone(), alternatives.get(&m.id)?.clone())))
        .collect();
    Page {
        messages,
        has_older: start > 0,
        has_newer: end < all.len(),
        alternatives,
    }
}

/// The page of the last `k` messages (`before` = None) or the `k` before a seq, from a read of the
/// newest `k + 1` of them (ascending by seq): the one more tells whether there are older ones,
/// without another read. Deleted messages are left out.
pub fn page_before(mut read: Vec<Message>, before: Option<u64>, k: usize) -> Page {
    let has_older = keep_newest(&mut read, k);
    plain_page(read, has_older, before.is_some())
}

/// The page of the `k` messages after a seq, from a read of the oldest `k + 1` after it.
pub fn page_after(mut read: Vec<Message>, k: usize) -> Page {
    let has_newer = read.len() > k;
    read.truncate(k);
    plain_page(read, true, has_newer)
}

/// The message a page must be read around instead: `focus`, unless the page already holds it.
pub fn focus_outside<'a>(page: &Page, focus: Option<&'a str>) -> Option<&'a str> {
    focus.filter(|f| !page.messages.iter().any(|m| m.id == *f))
}

/// How many messages to read on each side of a message the user jumped to, for a page of `k` (each
/// read asks for one more, see [`page_around`]).
pub fn half_around(k: usize) -> usize {
    (k / 2).max(1)
}

/// The page around a message: `older`, the newest `half + 1` up to and including it, and `newer`,
/// the oldest `half + 1` after it (each one more than kept, to tell whether there are more).
pub fn page_around(mut older: Vec<Message>, mut newer: Vec<Message>, half: usize) -> Page {
    let has_older = keep_newest(&mut older, half);
    let has_newer = newer.len() > half;
    newer.truncate(half);
    older.append(&mut newer);
    plain_page(older, has_older, has_newer)
}

/// Keeps the newest `k` of `messages` (ascending by seq); true if any were dropped.
fn keep_newest(messages: &mut Vec<Message>, k: usize) -> bool {
    let excess = messages.len().saturating_sub(k);
    messages.drain(..excess);
    excess > 0
}

/// A page of a conversation without alternatives: its messages less the deleted ones.
fn plain_page(mut messages: Vec<Message>, has_older: bool, has_newer: bool) -> Page {
    messages.retain(|m| !m.meta.deleted);
    Page {
        messages,
        has_older,
        has_newer,
        alternatives: BTreeMap::new(),
    }
}
