//! Entity retrieval for the prompt: names and aliases matched as whole words (case-insensitive,
//! Unicode-aware; CJK characters are words of their own) in the recent messages, plus the direct
//! neighbours of the matches over live relationships (either direction), ranked by strength and
//! recency. The assembler cuts the ranked list to its token share.
//! Must not import anything outside `crate::engine`.
//!
//! Scores: a mentioned entity scores `1 + 0.1 * min(mentions, 5) + 0.2 * (its strongest live edge)`,
//! a neighbour `0.6 * (strength of the edge that links it)`; both are multiplied by a recency factor
//! `0.5 + 0.5 * 2^(-age / 7 days)` of `updated_at` relative to `now`. Ties: newer first, then by id.

use std::collections::HashMap;

use super::graph::Graph;
use super::normalize::{for_each_word, words};
use crate::engine::model::{EntityNode, Millis};

/// Recency half-life.
pub const RECENCY_HALF_LIFE_MS: Millis = 7 * 24 * 3600 * 1000;
/// Names longer than this many words are not matched (no real name is).
const MAX_NAME_WORDS: usize = 12;

/// Why an entity was retrieved.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// Its name or an alias occurs in the recent messages this many times.
    Mentioned { mentions: u32 },
    /// Linked by a live relationship of this strength to the mentioned entity `via`.
    Neighbour { via: String, strength: f32 },
}

/// One ranked entity.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved<'g> {
    pub node: &'g EntityNode,
    pub score: f32,
    pub why: Why,
}

fn recency(updated_at: Millis, now: Millis) -> f32 {
    let age = now.saturating_sub(updated_at).max(0) as f64;
    (0.5 + 0.5 * (-age / RECENCY_HALF_LIFE_MS as f64).exp2()) as f32
}

fn max_live_strength(node: &EntityNode) -> f32 {
    node.relationships
        .iter()
        .filter(|r| r.valid_to.is_none())
        .map(|r| r.strength.clamp(0.0, 1.0))
        .fold(0.0, f32::max)
}

/// The entities relevant to `texts` (the recent messages), best first.
pub fn retrieve<'g, S: AsRef<str>>(
    graph: &'g Graph,
    texts: &[S],
    now: Millis,
) -> Vec<Retrieved<'g>> {
    let nodes = graph.nodes();
    // Patterns: first word -> (all words, node index).
    let mut patterns: HashMap<String, Vec<(Vec<String>, usize)>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for name in std::iter::once(&n.name).chain(n.aliases.iter()) {
            let w = words(name);
            if w.is_empty() || w.len() > MAX_NAME_WORDS {
                continue;
            }
            let list = patterns.entry(w[0].clone()).or_default();
            if !list.iter().any(|(pw, pi)| *pi == i && *pw == w) {
                list.push((w, i));
            }
        }
    }

    let mut mentions = vec![0u32; nodes.len()];
    let mut text_words: Vec<String> = Vec::new();
    for t in texts {
        text_words.clear();
        for_each_word(t.as_ref(), |w| text_words.push(w.to_string()));
        for start in 0..text_words.len() {
            let Some(cands) = patterns.get(&text_words[start]) else {
                continue;
            };
            let mut hit: Vec<usize> = Vec::new();
            for (pw, idx) in cands {
                let end = start + pw.len();
                if end <= text_words.len()
                    && text_words[start + 1..end] == pw[1..]
                    && !hit.contains(idx)
                {
                    hit.push(*idx);
                }
            }
            for idx in hit {
                mentions[idx] = mentions[idx].saturating_add(1);
            }
        }
    }

    let mut out: Vec<Retrieved<'g>> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if mentions[i] > 0 {
            let base = 1.0 + 0.1 * mentions[i].min(5) as f32 + 0.2 * max_live_strength(n);
            out.push(Retrieved {
                node: n,
                score: base * recency(n.updated_at, now),
                why: Why::Mentioned {
                    mentions: mentions[i],
                },
            });
        }
    }

    // Neighbours over live edges, either direction; keep the strongest link.
    let mut best: HashMap<usize, (f32, usize)> = HashMap::new();
    let mut offer = |node: usize, via: usize, strength: f32| {
        let e = best.entry(node).or_insert((strength, via));
        if strength > e.0 || (strength == e.0 && nodes[via].id < nodes[e.1].id) {
            *e = (strength, via);
        }
    };
    for (i, n) in nodes.iter().enumerate() {
        for r in n.relationships.iter().filter(|r| r.valid_to.is_none()) {
            let Some(j) = graph.by_id.get(&r.target_id).copied() else {
                continue;
            };
            let s = if r.strength.is_finite() {
                r.strength.clamp(0.0, 1.0)
            } else {
                0.0
            };
            if mentions[i] > 0 && mentions[j] == 0 {
                offer(j, i, s);
            }
            if mentions[j] > 0 && mentions[i] == 0 {
                offer(i, j, s);
            }
        }
    }
    for (j, (strength, via)) in best {
        let n = &nodes[j];
        out.push(Retrieved {
            node: n,
            score: 0.6 * strength * recency(n.updated_at, now),
            why: Why::Neighbour {
                via: nodes[via].id.clone(),
                strength,
            },
        });
    }

    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.node.updated_at.cmp(&a.node.updated_at))
            .then(a.node.id.cmp(&b.node.id))
    });
    out
}

/// One line describing a node for the prompt: name, type, aliases, description, properties and live
/// relationships (targets by name).
pub fn describe(node: &EntityNode, graph: &Graph) -> String {
    let mut s = format!("{} ({})", node.name, node.entity_type.as_str());
    if !node.aliases.is_empty() {
        s.push_str(&format!(" aka {}", node.aliases.join(", ")));
    }
    if !node.description.is_empty() {
        s.push_str(": ");
        s.push_str(&node.description);
    }
    if !node.properties.is_empty() {
        let props: Vec<String> = node
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        s.push_str(&format!(" [{}]", props.join("; ")));
    }
    let rels: Vec<String> = node
        .relationships
        .iter()
        .filter(|r| r.valid_to.is_none())
        .map(|r| {
            let target = graph
                .get(&r.target_id)
                .map_or(r.target_id.as_str(), |t| t.name.as_str());
            format!("{} {}", r.relationship, target)
        })
        .collect();
    if !rels.is_empty() {
        s.push_str(&format!(" — {}", rels.join("; ")));
    }
    s
}
