//! The recent-history window a driver keeps in memory for one conversation, so that building a
//! prompt (to send it, or to preview it in the context inspector) reads nothing from storage.
//!
//! A window holds the conversation record and its last `capacity` messages exactly as the store has
//! them. The driver keeps it current with its own writes (`handle_added`, `handle_updated`,
//! `handle_conversation`). The store assigns seqs densely (last + 1) and keeps `message_count`, so
//! both are checks: an added message whose seq is not the next one, or a conversation record whose
//! count differs from the window's, means something changed that the window did not see (another
//! tab, an import, an edit). The window then answers [`Applied::Stale`] and the driver reloads it
//! from storage. A window never guesses.
//!
//! [`place`] is the same rule for a view's mounted window: where a newly stored message goes;
//! [`upsert_listed`] where a changed conversation goes in the conversation list's.
//!
//! Pure: imports only `crate::engine`.

use crate::engine::model::{Conversation, Message};

/// What an input did to the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The window changed and is still exactly what the store holds.
    Applied,
    /// The input does not concern this window (another conversation, a repeat, an older message).
    Ignored,
    /// The input shows the window missed a change: drop it and load it again.
    Stale,
}

/// Where a newly stored message goes in a view's mounted window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Into the window, at its seq (already shown: updated in place).
    Show,
    /// Nowhere: the window stops short of the latest message and this one is further down.
    Beyond,
    /// Into the window, but the window missed messages before it (a seq gap at its end): reload.
    Behind,
}

/// Places a message with `seq` (`shown`: its id is mounted already) in a window whose last mounted
/// message has `last_seq` and which ends at the conversation's latest message if `at_latest`.
pub fn place(last_seq: Option<u64>, at_latest: bool, seq: u64, shown: bool) -> Placement {
    match last_seq {
        Some(last) if !shown && seq > last => {
            if !at_latest {
                Placement::Beyond
            } else if seq > last + 1 {
                Placement::Behind
            } else {
                Placement::Show
            }
        }
        _ => Placement::Show,
    }
}

/// Which end of a view's mounted window (messages, or the sidebar's conversations) a page joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Before the first mounted item (older messages; conversations above the list).
    Start,
    /// After the last mounted item (newer messages; conversations further down the list).
    End,
}

/// Joins `page` (in the window's order) to the `edge` end of a view's `mounted` window, skipping
/// what is mounted already (`same`), and keeps at most `cap` items by dropping from the other end.
/// Returns how many were dropped (the window then has more to load at the other end).
pub fn join_page<T>(
    mounted: &mut Vec<T>,
    page: Vec<T>,
    edge: Edge,
    cap: usize,
    same: impl Fn(&T, &T) -> bool,
) -> usize {
    let new: Vec<T> = page
        .into_iter()
        .filter(|p| !mounted.iter().any(|m| same(m, p)))
        .collect();
    match edge {
        Edge::Start => {
            let old = std::mem::replace(mounted, new);
            mounted.extend(old);
            let excess = mounted.len().saturating_sub(cap);
            mounted.truncate(cap);
            excess
        }
        Edge::End => {
            mounted.extend(new);
            let excess = mounted.len().saturating_sub(cap);
            mounted.drain(..excess);
            excess
        }
    }
}

/// Changed or new conversations placed in a view's mounted window of the conversation list (latest
/// activity first: `updated_at`, then id, descending), each as if it came alone: taken out where it
/// was, put back where its activity puts it, unless that is above the window (`above` rows are not
/// mounted there) or below it (more rows lie below): then the page that holds it is read when
/// scrolled to. The window keeps at most `cap` rows. Returns whether more rows lie below it now (a
/// window that was full has).
pub fn upsert_listed(
    list: &mut Vec<Conversation>,
    changed: impl IntoIterator<Item = Conversation>,
    above: usize,
    more_below: bool,
    cap: usize,
) -> bool {
    let mut more_below = more_below;
    for c in changed {
        list.retain(|x| x.id != c.id);
        let at = list
            .iter()
            .position(|x| (x.updated_at, &x.id) <= (c.updated_at, &c.id))
            .unwrap_or(list.len());
        let outside = (at == 0 && above > 0) || (at == list.len() && more_below);
        if !outside {
            list.insert(at, c);
        }
        list.truncate(cap);
        more_below |= list.len() == cap;
    }
    more_below
}

/// The conversation and its most recent messages, ascending by seq.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryWindow {
    conversation: Conversation,
    messages: Vec<Message>,
    capacity: usize,
    /// Every message of the conversation is in `messages`.
    complete: bool,
}

impl HistoryWindow {
    /// A window over `messages`, the result of loading the last `capacity` messages of
    /// `conversation` (in any order).
    pub fn new(conversation: Conversation, mut messages: Vec<Message>, capacity: usize) -> Self {
        crate::engine::sort::sort_by_key(&mut messages, |m| m.seq);
        let excess = messages.len().saturating_sub(capacity);
        messages.drain(..excess);
        let complete = messages.len() as u64 >= conversation.message_count;
        HistoryWindow {
            conversation,
            messages,
            capacity,
            complete,
        }
    }

    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// The messages held, ascending by seq.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Whether the window holds at least the last `capacity` messages (a caller may need more than
    /// the window was loaded with, e.g. after the token budget was raised).
    pub fn serves(&self, capacity: usize) -> bool {
        self.complete || self.capacity >= capacity
    }

    /// The last `k` messages held.
    pub fn last(&self, k: usize) -> &[Message] {
        &self.messages[self.messages.len().saturating_sub(k)..]
    }

    /// A message held in the window.
    pub fn message(&self, id: &str) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.id == id)
    }

    /// A message was appended to the store (with the seq the store gave it).
    pub fn handle_added(&mut self, m: Message) -> Applied {
        if m.conversation_id != self.conversation.id || self.message(&m.id).is_some() {
            return Applied::Ignored;
        }
        if let Some(last) = self.messages.last() {
            if m.seq <= last.seq || place(Some(last.seq), true, m.seq, false) != Placement::Show {
                return Applied::Stale;
            }
        } else if self.conversation.message_count != 0 {
            return Applied::Stale;
        }
        self.conversation.message_count += 1;
        self.conversation.updated_at = self.conversation.updated_at.max(m.created_at);
        self.messages.push(m);
        if self.messages.len() > self.capacity {
            let excess = self.messages.len() - self.capacity;
            self.messages.drain(..excess);
            self.complete = false;
        }
        Applied::Applied
    }

    /// A stored message's content, status or metadata changed.
    pub fn handle_updated(&mut self, m: &Message) -> Applied {
        if m.conversation_id != self.conversation.id {
            return Applied::Ignored;
        }
        if let Some(held) = self.messages.iter_mut().rev().find(|x| x.id == m.id) {
            if held.seq != m.seq {
                return Applied::Stale;
            }
            *held = m.clone();
            return Applied::Applied;
        }
        match self.messages.first() {
            Some(first) if m.seq < first.seq => Applied::Ignored,
            _ => Applied::Stale,
        }
    }

    /// The store's conversation record changed (title, handle, path, overrides, counters).
    pub fn handle_conversation(&mut self, c: &Conversation) -> Applied {
        if c.id != self.conversation.id {
            return Applied::Ignored;
        }
        if c.message_count != self.conversation.message_count {
            return Applied::Stale;
        }
        self.conversation = c.clone();
        Applied::Applied
    }
}
