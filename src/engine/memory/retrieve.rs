//! Entity retrieval for the prompt: names and aliases matched as whole words (case-insensitive,
//! Unicode-aware; CJK characters are words of their own) in the recent messages, plus the direct
//! neighbours of the matches over live relationships (either direction), ranked by strength and
//! recency. The assembler cuts the ranked list to its token share.
//! Must not import anything outside `crate::engine`.
//!
//! Scores: a mentioned entity scores `1 + 0.1 * min(mentions, 5) + 0.2 * (its strongest live edge)`,
//! a neighbour `0.6 * (strength of the edge that links it)`; both are multiplied by a recency factor
//! `0.5 + 0.5 * 2^(-age / 7 days)` of `updated_at` relative to `now`. Ties: newer first, then by id.

use super::graph::Graph;
use super::normalize::{push_words, FastMap};
use crate::engine::model::{EntityNode, Millis};
use crate::engine::sort::sort_by;

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
    let mentions = count_mentions(nodes, texts);
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
    for (j, (strength, via)) in strongest_links(graph, &mentions) {
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

    sort_by(&mut out, |a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.node.updated_at.cmp(&a.node.updated_at))
            .then(a.node.id.cmp(&b.node.id))
    });
    out
}

/// How many times each of `nodes` (by index) is named, by name or alias as whole words, in `texts`.
fn count_mentions<S: AsRef<str>>(nodes: &[EntityNode], texts: &[S]) -> Vec<u32> {
    // Name patterns, words lowercased into one arena: pattern = (word spans, node index).
    let mut pat_buf = String::new();
    let mut pat_words: Vec<(usize, usize)> = Vec::new();
    let mut pats: Vec<(usize, usize, usize)> = Vec::new(); // (first word, word count, node)
    for (i, n) in nodes.iter().enumerate() {
        for name in std::iter::once(&n.name).chain(n.aliases.iter()) {
            let first = pat_words.len();
            push_words(name, &mut pat_buf, &mut pat_words);
            let count = pat_words.len() - first;
            if count == 0 || count > MAX_NAME_WORDS {
                pat_words.truncate(first);
                continue;
            }
            pats.push((first, count, i));
        }
    }
    let pword = |k: usize| &pat_buf[pat_words[k].0..pat_words[k].1];
    let mut by_first: FastMap<&str, Vec<usize>> = FastMap::default();
    for (p, &(first, _, _)) in pats.iter().enumerate() {
        by_first.entry(pword(first)).or_default().push(p);
    }

    let mut mentions = vec![0u32; nodes.len()];
    let mut text_buf = String::new();
    let mut text_words: Vec<(usize, usize)> = Vec::new();
    let mut hit: Vec<usize> = Vec::new();
    for t in texts {
        text_buf.clear();
        text_words.clear();
        push_words(t.as_ref(), &mut text_buf, &mut text_words);
        let tw: Vec<&str> = text_words.iter().map(|&(a, b)| &text_buf[a..b]).collect();
        for start in 0..tw.len() {
            let Some(cands) = by_first.get(tw[start]) else {
                continue;
            };
            hit.clear();
            for &p in cands {
                let (first, count, node) = pats[p];
                if start + count <= tw.len()
                    && (1..count).all(|k| tw[start + k] == pword(first + k))
                    && !hit.contains(&node)
                {
                    hit.push(node);
                }
            }
            for &node in &hit {
                mentions[node] = mentions[node].saturating_add(1);
            }
        }
    }
    mentions
}

/// The neighbours of the mentioned nodes over live edges, either direction, each with the strength
/// of its strongest link and the mentioned node it links to (ties: the lower id).
fn strongest_links(graph: &Graph, mentions: &[u32]) -> FastMap<usize, (f32, usize)> {
    let nodes = graph.nodes();
    let mut best: FastMap<usize, (f32, usize)> = FastMap::default();
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
    best
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

/// The entities for a prompt, best first: those [`retrieve`] finds relevant, then every other one,
/// most recently updated first (ties by id). The assembler cuts the list to the entities' share of the
/// budget, so room the relevant ones leave keeps the conversation's other known people, places and
/// things in view: a question such as "what do you remember about me?" names none of them.
pub fn rank_for_prompt<'g, S: AsRef<str>>(
    graph: &'g Graph,
    texts: &[S],
    now: Millis,
) -> Vec<&'g EntityNode> {
    let relevant = retrieve(graph, texts, now);
    let mut out: Vec<&EntityNode> = relevant.iter().map(|r| r.node).collect();
    let mut rest: Vec<&EntityNode> = graph
        .nodes()
        .iter()
        .filter(|n| !relevant.iter().any(|r| r.node.id == n.id))
        .collect();
    sort_by(&mut rest, |a, b| {
        b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id))
    });
    out.extend(rest);
    out
}
