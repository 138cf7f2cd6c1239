//! The shown branch of a message tree: from the app's current node up through the parent links to
//! the root, reversed. Shared by ChatGPT (`mapping`), Open WebUI (`history`) and llama.cpp.
//! Must not import anything outside `crate::engine`.

use std::collections::{HashMap, HashSet};

/// Why a branch could not be followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Walk {
    /// The current node is not in the tree.
    MissingCurrent(String),
    /// A parent link leads back to a node already on the path.
    Cycle,
}

/// The path root → `current`, following `parent_of`. A parent that is not in the tree ends the
/// path (the root's parent is often absent or null). Never loops: a repeated node is an error.
pub fn shown_branch<'a>(
    parent_of: &HashMap<&'a str, Option<&'a str>>,
    current: &'a str,
) -> Result<Vec<&'a str>, Walk> {
    if !parent_of.contains_key(current) {
        return Err(Walk::MissingCurrent(current.to_string()));
    }
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(current);
    while let Some(id) = at {
        if !parent_of.contains_key(id) {
            break;
        }
        if !seen.insert(id) {
            return Err(Walk::Cycle);
        }
        path.push(id);
        at = parent_of.get(id).copied().flatten();
    }
    path.reverse();
    Ok(path)
}
