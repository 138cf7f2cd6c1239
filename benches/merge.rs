//! Memory benchmarks (native, median of several runs, deterministic input):
//! - `merge_200_entities_ms`: merging a 200-entity update (50 new, 50 updated by id, 50 matched by
//!   name, 50 unchanged) into a 1,000-node graph. Goal <= 1 ms.
//! - `parse_200_entities_ms`: parsing the same update as a model reply.
//! - `retrieve_1000x50_ms`: entity retrieval over a 1,000-node graph for 50 recent messages.
//! - `carry_forward_6k_ms`: the summary kept across an update at the largest cap (a 6,000-character
//!   previous summary and a 2,000-character new one, so the cap chooses sentences).
use std::collections::BTreeMap;
use std::time::Instant;

use memoire::engine::memory::{
    merge, parse_reply, retrieve, Graph, MergeContext, ParsedEntity, ParsedRelationship,
};
use memoire::engine::model::{EntityNode, EntityScope, EntityType, Relationship};

const NODES: usize = 1000;
const RUNS: usize = 51;

fn graph_nodes() -> Vec<EntityNode> {
    (0..NODES)
        .map(|i| {
            let mut properties = BTreeMap::new();
            properties.insert("kind".to_string(), format!("k{}", i % 7));
            properties.insert("rank".to_string(), i.to_string());
            properties.insert("group".to_string(), format!("g{}", i % 13));
            EntityNode {
                id: format!("n{i}"),
                scope: EntityScope::Conversation("c".into()),
                entity_type: EntityType::ALL[i % 6],
                name: format!("Entity {i}"),
                aliases: vec![format!("E-{i}")],
                description: format!("Entity number {i}, known since message {}", i * 3),
                properties,
                property_since: Default::default(),
                past_properties: Default::default(),
                relationships: (1..=3)
                    .map(|k| Relationship {
                        target_id: format!("n{}", (i * 7 + k * 13) % NODES),
                        relationship: ["knows", "part_of", "likes"][k - 1].to_string(),
                        strength: 0.5,
                        valid_from: 0,
                        valid_to: None,
                    })
                    .collect(),
                source_message_ids: (0..5).map(|m| format!("m{}", i * 5 + m)).collect(),
                updated_at: i as i64,
            }
        })
        .collect()
}

fn as_parsed(n: &EntityNode) -> ParsedEntity {
    ParsedEntity {
        id: Some(n.id.clone()),
        entity_type: n.entity_type,
        name: n.name.clone(),
        aliases: n.aliases.clone(),
        description: n.description.clone(),
        properties: n.properties.clone(),
        relationships: n
            .relationships
            .iter()
            .map(|r| ParsedRelationship {
                target: r.target_id.clone(),
                relationship: r.relationship.clone(),
                strength: r.strength,
                ended: false,
            })
            .collect(),
        sources: Vec::new(),
        said_at: None,
    }
}

fn update(nodes: &[EntityNode]) -> Vec<ParsedEntity> {
    let mut out = Vec::new();
    for j in 0..50 {
        out.push(ParsedEntity {
            id: Some(format!("new{j}")),
            entity_type: EntityType::Concept,
            name: format!("Fresh {j}"),
            aliases: vec![],
            description: "new".into(),
            properties: BTreeMap::new(),
            relationships: vec![
                ParsedRelationship {
                    target: format!("n{}", j * 3),
                    relationship: "mentions".into(),
                    strength: 0.7,
                    ended: false,
                },
                ParsedRelationship {
                    target: format!("Entity {}", j * 5),
                    relationship: "about".into(),
                    strength: 0.4,
                    ended: false,
                },
            ],
            sources: Vec::new(),
            said_at: None,
        });
    }
    for k in 0..50 {
        let mut e = as_parsed(&nodes[k * 2]);
        e.description = format!("updated {k}");
        e.relationships.push(ParsedRelationship {
            target: format!("n{}", k + 500),
            relationship: "works_at".into(),
            strength: 0.9,
            ended: false,
        });
        out.push(e);
    }
    for k in 0..50 {
        let n = &nodes[200 + k * 3];
        let mut props = BTreeMap::new();
        props.insert("seen".to_string(), "yes".to_string());
        out.push(ParsedEntity {
            id: None,
            entity_type: EntityType::Other,
            name: n.name.to_uppercase(),
            aliases: vec![],
            description: String::new(),
            properties: props,
            relationships: vec![],
            sources: Vec::new(),
            said_at: None,
        });
    }
    for k in 0..50 {
        out.push(as_parsed(&nodes[600 + k * 5]));
    }
    out
}

fn to_reply(entities: &[ParsedEntity]) -> String {
    let arr: Vec<serde_json::Value> = entities
        .iter()
        .map(|e| {
            serde_json::json!({
                "id": e.id, "type": e.entity_type.as_str(), "name": e.name, "aliases": e.aliases,
                "description": e.description, "properties": e.properties,
                "relationships": e.relationships.iter().map(|r| serde_json::json!({
                    "targetId": r.target, "relationship": r.relationship, "strength": r.strength
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    format!(
        "=== CONVERSATION MEMORY ===\nA long talk.\n=== ENTITY MEMORY ===\n```json\n{}\n```\n",
        serde_json::to_string_pretty(&arr).unwrap()
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let nodes = graph_nodes();
    let base = Graph::new(nodes.clone());
    let upd = update(&nodes);
    let sources: Vec<String> = (0..10).map(|m| format!("s{m}")).collect();

    let mut times = Vec::new();
    for _ in 0..RUNS {
        let mut g = base.clone();
        let ctx = MergeContext {
            now: 10_000,
            source_message_ids: &sources,
            scope: EntityScope::Conversation("c".into()),
        };
        let mut n = 0;
        let t = Instant::now();
        let report = merge(&mut g, &upd, &ctx, || {
            n += 1;
            format!("gen{n}")
        });
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(
            (
                report.added.len(),
                report.updated.len(),
                report.unchanged.len()
            ),
            (50, 100, 50)
        );
    }
    println!("bench merge_200_entities_ms {:.3} ms", median(times));

    let reply = to_reply(&upd);
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let parsed = parse_reply(&reply).expect("bench reply parses");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(parsed.entities.len(), 200);
    }
    println!("bench parse_200_entities_ms {:.3} ms", median(times));

    let messages: Vec<String> = (0..50)
        .map(|m| {
            format!(
                "Message {m}: we talked about entity {} and E-{} for a while, then moved on to other \
                 things that are not entities at all, like the weather in a town nobody named. {}",
                m * 17,
                m * 31 % NODES,
                "Filler words go here to make the message about a kilobyte long. ".repeat(12)
            )
        })
        .collect();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let r = retrieve(&base, &messages, 10_000);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(r.len() >= 50);
    }
    println!("bench retrieve_1000x50_ms {:.3} ms", median(times));

    let previous: String = (0..150)
        .map(|i| {
            format!(
                "Person{i} lives in Town{} and likes item {} a lot. ",
                i * 7,
                i * 13
            )
        })
        .collect();
    let new: String = (0..50)
        .map(|i| format!("Later, Visitor{i} talked about the weather for {i} minutes. "))
        .collect();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let (text, carried) = memoire::engine::memory::carry_forward(Some(&previous), &new, 6000);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(text.len() <= 6000 && carried > 0);
    }
    println!("bench carry_forward_6k_ms {:.3} ms", median(times));
}
