//! Grounding a parsed update in what the model read. An alias is a claim that the conversation calls
//! the entity by that name, so an alias whose words appear nowhere in the update's request (the
//! previous summary, the known entities and the new messages) was invented, and is dropped with a
//! note. A small model fills `aliases` with names from nowhere (in the recall bench SmolLM2-135M gave
//! "Ingrid Valcourt" the aliases "Einar", "Sjøbenkarl" and "Naradaglade"), and every invented alias
//! takes room from the entity's facts in each later prompt and can wrongly match another entity.
//! Names are left as they are: a new entity's name is what the merge matches on.
//! Must not import anything outside `crate::engine`.

use std::collections::HashSet;

use super::normalize::{for_each_word, words};
use super::parse::ParsedUpdate;

/// Drops from `parsed` every alias with a word that `source` does not contain (case-insensitive,
/// whole words; a one-letter word is an initial of any word), noting each one.
pub fn ground_aliases(parsed: &mut ParsedUpdate, source: &str) {
    let mut known: HashSet<String> = HashSet::new();
    let mut initials: HashSet<char> = HashSet::new();
    for_each_word(source, |w| {
        initials.extend(w.chars().next());
        known.insert(w.to_string());
    });
    // A one-letter word is an initial ("Ingrid V."): grounded by any word it starts.
    let grounded_word = |w: &String| {
        let mut chars = w.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => initials.contains(&c),
            _ => known.contains(w),
        }
    };
    let mut notes = Vec::new();
    for e in &mut parsed.entities {
        e.aliases.retain(|a| {
            let grounded = words(a).iter().all(grounded_word);
            if !grounded {
                notes.push(format!(
                    "{}: alias '{a}' appears nowhere in the conversation, dropped",
                    e.name
                ));
            }
            grounded
        });
    }
    parsed.notes.extend(notes);
}
