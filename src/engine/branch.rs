//! Branches: which of a conversation's messages are on the branch on screen. The store keeps every
//! message; a regenerated reply or an edited user message is a new message that names the one it
//! replaces (`MessageMeta::replaces`: it gets that message's parent), a message sent while an earlier
//! branch is shown names the message it follows (`MessageMeta::after`), and a message with neither
//! follows the one before it by seq, so records older than branches read as one linear chain. A
//! deleted message is a tombstone: it keeps its place in the tree and is never shown.
//!
//! The branch shown runs through an anchor (the alternative the user chose last, or the newest
//! message), from the root down to the anchor, then on down through the newest child that still
//! leads to something shown. Messages at the same place (siblings) are the alternatives the user
//! pages through.
//!
//! Pure: imports only `crate::engine`.

use std::collections::{BTreeMap, HashMap};

use crate::engine::model::Message;

/// Where a shown message stands among its alternatives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternatives {
    /// 1-based position, as shown ("2/3").
    pub position: usize,
    pub count: usize,
    /// The alternative before and after it (ids), if any.
    pub prev: Option<String>,
    pub next: Option<String>,
}

/// The branch on screen.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Branch {
    /// Indices into the messages given, root first, deleted ones left out.
    pub shown: Vec<usize>,
    /// For each shown message that has alternatives (by id): where it stands among them.
    pub alternatives: BTreeMap<String, Alternatives>,
}

/// The conversation as a tree: messages in seq order, each one's parent and children.
struct Tree<'a> {
    messages: &'a [Message],
    /// Indices into `messages`, ascending by seq.
    order: Vec<usize>,
    parent: Vec<Option<usize>>,
    /// Children of each message (and the roots under `None`), ascending by seq.
    children: HashMap<Option<usize>, Vec<usize>>,
    /// The message is shown, or something below it is.
    alive: Vec<bool>,
}

impl<'a> Tree<'a> {
    fn new(messages: &'a [Message]) -> Self {
        let mut order: Vec<usize> = (0..messages.len()).collect();
        crate::engine::sort::sort_by_key(&mut order, |&i| messages[i].seq);
        // Position in seq order: a link may only point at an earlier message (so there are no cycles).
        let mut rank: HashMap<&str, usize> = HashMap::with_capacity(messages.len());
        let mut parent = vec![None; messages.len()];
        let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
        for (pos, &i) in order.iter().enumerate() {
            let earlier = |id: &Option<String>| {
                id.as_deref()
                    .and_then(|id| rank.get(id).copied())
                    .map(|r| order[r])
            };
            let meta = &messages[i].meta;
            parent[i] = match (earlier(&meta.replaces), earlier(&meta.after)) {
                (Some(r), _) => parent[r],
                (None, Some(a)) => Some(a),
                (None, None) => pos.checked_sub(1).map(|p| order[p]),
            };
            children.entry(parent[i]).or_default().push(i);
            rank.entry(messages[i].id.as_str()).or_insert(pos);
        }
        let mut alive = vec![false; messages.len()];
        for &i in order.iter().rev() {
            let below = children
                .get(&Some(i))
                .is_some_and(|c| c.iter().any(|&c| alive[c]));
            alive[i] = !messages[i].meta.deleted || below;
        }
        Tree {
            messages,
            order,
            parent,
            children,
            alive,
        }
    }

    fn children(&self, of: Option<usize>) -> &[usize] {
        self.children.get(&of).map_or(&[], Vec::as_slice)
    }

    /// The newest child of `of` that leads to something shown.
    fn newest_alive(&self, of: Option<usize>) -> Option<usize> {
        self.children(of)
            .iter()
            .rev()
            .copied()
            .find(|&c| self.alive[c])
    }

    /// The anchor by id (else the newest message), moved up while nothing at or below it is shown.
    fn anchor(&self, anchor: Option<&str>) -> Option<usize> {
        let mut at = anchor
            .and_then(|id| {
                self.order
                    .iter()
                    .copied()
                    .find(|&i| self.messages[i].id == id)
            })
            .or_else(|| self.order.last().copied());
        while let Some(i) = at {
            if self.alive[i] {
                return Some(i);
            }
            at = self.parent[i];
        }
        self.newest_alive(None)
    }

    /// The path through `anchor`: its ancestors, it, then the newest living child at each step.
    fn path(&self, anchor: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut up = anchor;
        while let Some(i) = up {
            path.push(i);
            up = self.parent[i];
        }
        path.reverse();
        let mut down = anchor;
        while let Some(c) = down.and_then(|i| self.newest_alive(Some(i))) {
            path.push(c);
            down = Some(c);
        }
        path
    }

    /// The shown alternatives at `i`'s place (its siblings that are not deleted, `i` included).
    fn siblings(&self, i: usize) -> Vec<usize> {
        self.children(self.parent[i])
            .iter()
            .copied()
            .filter(|&s| !self.messages[s].meta.deleted)
            .collect()
    }
}

/// The branch on screen among `messages` (in any order), through `anchor` (the alternative the user
/// chose last; `None` or an unknown id: the newest message).
pub fn shown_branch(messages: &[Message], anchor: Option<&str>) -> Branch {
    let tree = Tree::new(messages);
    let path = tree.path(tree.anchor(anchor));
    let mut out = Branch::default();
    for i in path {
        if messages[i].meta.deleted {
            continue;
        }
        out.shown.push(i);
        let siblings = tree.siblings(i);
        if siblings.len() < 2 {
            continue;
        }
        let at = siblings.iter().position(|&s| s == i).unwrap_or(0);
        let id = |k: Option<&usize>| k.map(|&s| messages[s].id.clone());
        out.alternatives.insert(
            messages[i].id.clone(),
            Alternatives {
                position: at + 1,
                count: siblings.len(),
                prev: at.checked_sub(1).and_then(|p| id(siblings.get(p))),
                next: id(siblings.get(at + 1)),
            },
        );
    }
    out
}

/// The messages on the branch on screen, cloned, root first.
pub fn shown_messages(messages: &[Message], anchor: Option<&str>) -> Vec<Message> {
    shown_branch(messages, anchor)
        .shown
        .into_iter()
        .map(|i| messages[i].clone())
        .collect()
}

/// Whether any message is an alternative of another (the conversation then has branches to choose
/// between; without any, the branch shown is every message that is not deleted, in seq order).
pub fn has_alternatives(messages: &[Message]) -> bool {
    messages.iter().any(|m| m.meta.replaces.is_some())
}
