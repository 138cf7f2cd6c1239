#![cfg(not(target_arch = "wasm32"))]
//! Memory protocol, part 2: merging parsed updates into the entity graph, and retrieving entities
//! for the prompt.

use memoire::engine::memory::*;
use memoire::engine::model::*;
use proptest::prelude::*;

const NOW: Millis = 5000;
const DAY: Millis = 24 * 3600 * 1000;

fn node(id: &str, name: &str, t: EntityType) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: t,
        name: name.into(),
        aliases: vec![],
        description: String::new(),
        properties: Default::default(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec!["m0".into()],
        updated_at: 1000,
    }
}

fn rel(target: &str, label: &str, strength: f32, valid_to: Option<Millis>) -> Relationship {
    Relationship {
        target_id: target.into(),
        relationship: label.into(),
        strength,
        valid_from: 100,
        valid_to,
    }
}

/// p1 Alice Smith (alias Ally, lives_in London 0.8, likes Paris 0.6), pl1 Paris, pl2 London,
/// c1 Acme Corp (based_in Paris, closed at 500).
fn base() -> Vec<EntityNode> {
    let mut alice = node("p1", "Alice Smith", EntityType::Person);
    alice.aliases = vec!["Ally".into()];
    alice.description = "A friend".into();
    alice.properties.insert("city".into(), "London".into());
    alice.relationships = vec![
        rel("pl2", "lives_in", 0.8, None),
        rel("pl1", "likes", 0.6, None),
    ];
    let mut acme = node("c1", "Acme Corp", EntityType::Other);
    acme.description = "A company".into();
    acme.relationships = vec![rel("pl1", "based_in", 0.5, Some(500))];
    vec![
        alice,
        node("pl1", "Paris", EntityType::Place),
        node("pl2", "London", EntityType::Place),
        acme,
    ]
}

fn entities(json: &str) -> Vec<ParsedEntity> {
    parse_reply(&format!(
        "=== CONVERSATION MEMORY ===\ns\n=== ENTITY MEMORY ===\n{json}"
    ))
    .unwrap_or_else(|e| panic!("{json}: {e}"))
    .entities
}

fn counter(prefix: &'static str) -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("{prefix}{n}")
    }
}

fn sources() -> Vec<String> {
    vec!["m5".into(), "m6".into()]
}

fn run(graph: &mut Graph, ents: &[ParsedEntity], now: Millis) -> MergeReport {
    let src = sources();
    let ctx = MergeContext {
        now,
        source_message_ids: &src,
        scope: EntityScope::Conversation("c1".into()),
    };
    merge(graph, ents, &ctx, counter("gen-"))
}

enum Is<'a> {
    Nodes(usize),
    Name(&'a str, &'a str),
    Aliases(&'a str, &'a [&'a str]),
    Desc(&'a str, &'a str),
    Type(&'a str, EntityType),
    Prop(&'a str, &'a str, &'a str),
    /// source, label, target, strength of the live edge
    Live(&'a str, &'a str, &'a str, f32),
    /// source, label, target: an edge closed by this merge
    Closed(&'a str, &'a str, &'a str),
    Rels(&'a str, usize),
    Sources(&'a str, &'a [&'a str]),
    Updated(&'a str, Millis),
}

/// Merges `json` into the base graph; checks (added, updated, unchanged, closed, dropped) and facts.
fn check_merge(json: &str, counts: (usize, usize, usize, usize, usize), facts: &[Is<'_>]) {
    let mut g = Graph::new(base());
    let r = run(&mut g, &entities(json), NOW);
    let got = (
        r.added.len(),
        r.updated.len(),
        r.unchanged.len(),
        r.closed.len(),
        r.dropped.len(),
    );
    assert_eq!(got, counts, "{json}\nreport {r:#?}");
    let n = |id: &str| g.get(id).unwrap_or_else(|| panic!("{json}: no node {id}"));
    for f in facts {
        match f {
            Is::Nodes(k) => assert_eq!(g.len(), *k, "{json}: node count"),
            Is::Name(id, name) => assert_eq!(n(id).name, *name, "{json}"),
            Is::Aliases(id, a) => assert_eq!(n(id).aliases, *a, "{json}"),
            Is::Desc(id, d) => assert_eq!(n(id).description, *d, "{json}"),
            Is::Type(id, t) => assert_eq!(n(id).entity_type, *t, "{json}"),
            Is::Prop(id, k, v) => assert_eq!(
                n(id).properties.get(*k).map(String::as_str),
                Some(*v),
                "{json}"
            ),
            Is::Live(id, label, target, s) => {
                let live: Vec<&Relationship> = n(id)
                    .relationships
                    .iter()
                    .filter(|r| {
                        r.valid_to.is_none() && r.relationship == *label && r.target_id == *target
                    })
                    .collect();
                assert_eq!(
                    live.len(),
                    1,
                    "{json}: live {label} -> {target}: {:?}",
                    n(id).relationships
                );
                assert_eq!(
                    live[0].strength, *s,
                    "{json}: strength of {label} -> {target}"
                );
            }
            Is::Closed(id, label, target) => {
                assert!(
                    n(id).relationships.iter().any(|r| r.valid_to == Some(NOW)
                        && r.relationship == *label
                        && r.target_id == *target),
                    "{json}: {label} -> {target} not closed: {:?}",
                    n(id).relationships
                );
                assert!(r.closed.iter().any(|c| c.source_id == *id
                    && c.target_id == *target
                    && c.relationship == *label));
            }
            Is::Rels(id, k) => assert_eq!(
                n(id).relationships.len(),
                *k,
                "{json}: edges of {id} (never deleted)"
            ),
            Is::Sources(id, s) => {
                assert_eq!(n(id).source_message_ids, *s, "{json}: sources of {id}")
            }
            Is::Updated(id, t) => assert_eq!(n(id).updated_at, *t, "{json}: updated_at of {id}"),
        }
    }
}

const CHANGED: &[&str] = &["m0", "m5", "m6"];
const KEPT: &[&str] = &["m0"];

#[rustfmt::skip]
#[test]
fn merge_table() {
    use EntityType::*;
    use Is::*;
    // identical content: no change at all
    check_merge(r#"[{"id":"p1","name":"Alice Smith","type":"person","description":"A friend","properties":{"city":"London"}}]"#, (0, 0, 1, 0, 0), &[Sources("p1", KEPT), Updated("p1", 1000), Nodes(4)]);
    check_merge(r#"[{"name":"ALLY"}]"#, (0, 0, 1, 0, 0), &[Aliases("p1", &["Ally"])]);
    // same id: update; an `other` type never overwrites a known one
    check_merge(r#"[{"id":"p1","name":"Alice Smith","description":"An old friend"}]"#, (0, 1, 0, 0, 0), &[Desc("p1", "An old friend"), Type("p1", Person), Sources("p1", CHANGED), Updated("p1", NOW), Sources("pl1", KEPT)]);
    check_merge(r#"[{"id":"c1","name":"Acme Corp","type":"concept"}]"#, (0, 1, 0, 0, 0), &[Type("c1", Concept), Desc("c1", "A company")]);
    // same normalised name or alias: the same node
    check_merge(r#"[{"name":"alice  SMITH!","description":"x"}]"#, (0, 1, 0, 0, 0), &[Desc("p1", "x"), Aliases("p1", &["Ally"]), Nodes(4)]);
    check_merge(r#"[{"name":"ally","properties":{"age":30}}]"#, (0, 1, 0, 0, 0), &[Prop("p1", "age", "30"), Prop("p1", "city", "London")]);
    check_merge(r#"[{"name":"A. Smith","aliases":["Ally"]}]"#, (0, 1, 0, 0, 0), &[Aliases("p1", &["Ally", "A. Smith"]), Name("p1", "Alice Smith")]);
    check_merge(r#"[{"id":"unknown-id","name":"Paris","type":"place"}]"#, (0, 0, 1, 0, 0), &[Nodes(4)]);
    // only an id match renames; the old name is kept as an alias
    check_merge(r#"[{"id":"p1","name":"Alice Jones"}]"#, (0, 1, 0, 0, 0), &[Name("p1", "Alice Jones"), Aliases("p1", &["Alice Smith", "Ally"])]);
    check_merge(r#"[{"id":"p1","name":"Ally"}]"#, (0, 1, 0, 0, 0), &[Name("p1", "Ally"), Aliases("p1", &["Alice Smith"])]);
    // new nodes get caller ids, the scope and the sources
    check_merge(r#"[{"id":"zz","name":"Bob","type":"person"}]"#, (1, 0, 0, 0, 0), &[Name("gen-1", "Bob"), Type("gen-1", Person), Sources("gen-1", &["m5", "m6"]), Updated("gen-1", NOW), Nodes(5)]);
    check_merge(r#"[{"name":"Bob"},{"name":"bob","description":"builder"}]"#, (1, 0, 0, 0, 0), &[Desc("gen-1", "builder"), Aliases("gen-1", &[]), Nodes(5)]);
    check_merge(r#"[{"name":"Bob","relationships":[{"targetId":"p1","relationship":"friend_of","strength":0.9}]}]"#, (1, 0, 0, 0, 0), &[Live("gen-1", "friend_of", "p1", 0.9)]);
    // entries landing on one node are combined, later fields win
    check_merge(r#"[{"id":"p1","name":"Alice Smith","description":"first"},{"name":"Ally","description":"second"}]"#, (0, 1, 0, 0, 0), &[Desc("p1", "second")]);
    // relationships: the stronger strength is kept; labels compare normalised
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl2","relationship":"lives_in","strength":0.3}]}]"#, (0, 0, 1, 0, 0), &[Live("p1", "lives_in", "pl2", 0.8)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl2","relationship":"lives_in","strength":0.95}]}]"#, (0, 1, 0, 0, 0), &[Live("p1", "lives_in", "pl2", 0.95), Rels("p1", 2), Sources("p1", CHANGED)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl2","relationship":"Lives In","strength":0.8}]}]"#, (0, 0, 1, 0, 0), &[Rels("p1", 2)]);
    // contradictions close, never delete
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl1","relationship":"lives_in","strength":0.9}]}]"#, (0, 1, 0, 1, 0), &[Live("p1", "lives_in", "pl1", 0.9), Closed("p1", "lives_in", "pl2"), Rels("p1", 3)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl1","relationship":"dislikes","strength":0.7}]}]"#, (0, 1, 0, 1, 0), &[Live("p1", "dislikes", "pl1", 0.7), Closed("p1", "likes", "pl1"), Live("p1", "lives_in", "pl2", 0.8)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl2","relationship":"lives_in","strength":0}]}]"#, (0, 1, 0, 1, 0), &[Closed("p1", "lives_in", "pl2"), Rels("p1", 2), Sources("p1", CHANGED)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl2","relationship":"lives_in","strength":0.8,"ended":true}]}]"#, (0, 1, 0, 1, 0), &[Closed("p1", "lives_in", "pl2")]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl1","relationship":"knows","strength":0}]}]"#, (0, 0, 1, 0, 0), &[Rels("p1", 2)]);
    // non-exclusive labels accumulate
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl1","relationship":"visited","strength":0.4}]}]"#, (0, 1, 0, 0, 0), &[Live("p1", "visited", "pl1", 0.4), Live("p1", "likes", "pl1", 0.6), Rels("p1", 3)]);
    // contradictions inside one update: the last statement wins
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl1","relationship":"lives_in"},{"targetId":"c1","relationship":"lives_in"}]}]"#, (0, 1, 0, 1, 1), &[Live("p1", "lives_in", "c1", 0.5), Closed("p1", "lives_in", "pl2"), Rels("p1", 3)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"pl1","relationship":"visited","strength":0.2},{"targetId":"pl1","relationship":"visited","strength":0.3}]}]"#, (0, 1, 0, 0, 0), &[Live("p1", "visited", "pl1", 0.3)]);
    // a closed edge asserted again is a new live edge; the closed one stays
    check_merge(r#"[{"id":"c1","name":"Acme Corp","relationships":[{"targetId":"pl1","relationship":"based_in","strength":0.6}]}]"#, (0, 1, 0, 0, 0), &[Live("c1", "based_in", "pl1", 0.6), Rels("c1", 2)]);
    // targets: by name or alias, by the model id of a new node (forward reference); unknown and self dropped
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"acme corp","relationship":"works_at"}]}]"#, (0, 1, 0, 0, 0), &[Live("p1", "works_at", "c1", 0.5)]);
    check_merge(r#"[{"id":"c1","name":"Acme Corp","relationships":[{"targetId":"Ally","relationship":"employs","strength":1}]}]"#, (0, 1, 0, 0, 0), &[Live("c1", "employs", "p1", 1.0)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"x9","relationship":"works_at","strength":0.8}]},{"id":"x9","name":"Globex","type":"place"}]"#, (1, 1, 0, 0, 0), &[Live("p1", "works_at", "gen-1", 0.8), Name("gen-1", "Globex")]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"nobody","relationship":"knows"}]}]"#, (0, 0, 1, 0, 1), &[Rels("p1", 2)]);
    check_merge(r#"[{"id":"p1","name":"Alice Smith","relationships":[{"targetId":"p1","relationship":"is"}]}]"#, (0, 0, 1, 0, 1), &[Rels("p1", 2)]);
}

#[test]
fn caller_ids_that_collide_are_replaced() {
    let mut g = Graph::new(base());
    let mut ids = vec!["new".to_string(), "p1".to_string(), "pl1".to_string()];
    let src = sources();
    let ctx = MergeContext {
        now: NOW,
        source_message_ids: &src,
        scope: EntityScope::Shared,
    };
    let r = merge(&mut g, &entities(r#"[{"name":"Zed"}]"#), &ctx, move || {
        ids.pop().unwrap_or_default()
    });
    assert_eq!(r.added, vec!["new".to_string()]);
    assert_eq!(g.get("new").unwrap().scope, EntityScope::Shared);
}

#[test]
fn merge_twice_is_merge_once_on_the_table_updates() {
    for json in [
        r#"[{"id":"p1","name":"Alice Jones","aliases":["AJ"],"relationships":[{"targetId":"x","relationship":"lives_in"}]},{"id":"x","name":"Rome"},{"name":"aj","description":"d"}]"#,
        r#"[{"name":"Bob","relationships":[{"targetId":"Alice Smith","relationship":"married_to"},{"targetId":"Ally","relationship":"divorced_from"}]}]"#,
        r#"[{"name":"Zed","aliases":["Z"]},{"name":"Z","description":"z"},{"id":"c1","name":"Acme Corp","aliases":["Zed"]}]"#,
    ] {
        let ents = entities(json);
        let mut g = Graph::new(base());
        run(&mut g, &ents, NOW);
        let once = g.nodes().to_vec();
        let r2 = run(&mut g, &ents, NOW + 1000);
        assert_eq!(g.nodes(), &once[..], "{json}");
        assert!(r2.is_noop() && r2.closed.is_empty(), "{json}: {r2:?}");
    }
}

#[test]
fn apply_update_writes_summary_and_graph_together() {
    let parsed = parse_reply("=== CONVERSATION MEMORY ===\nAlice moved to Paris.\n=== ENTITY MEMORY ===\n[{\"id\":\"p1\",\"name\":\"Alice Smith\",\"relationships\":[{\"targetId\":\"Paris\",\"relationship\":\"lives_in\",\"strength\":0.9}]}]").unwrap();
    let span = UpdateSpan {
        from_seq: 11,
        to_seq: 20,
        message_ids: sources(),
    };
    let prev = ConversationSummary {
        conversation_id: "c1".into(),
        version: 2,
        text: "old".into(),
        covers_up_to_seq: 10,
        message_count: 10,
        updated_at: 1,
    };
    let mut g = Graph::new(base());
    let applied = apply_update(
        &parsed,
        Some(&prev),
        "c1",
        &span,
        20,
        &mut g,
        EntityScope::Shared,
        NOW,
        6000,
        counter("n"),
    );
    let s = applied.summary.unwrap();
    assert_eq!(
        (s.version, s.text.as_str(), s.covers_up_to_seq, s.updated_at),
        (3, "Alice moved to Paris.", 20, NOW)
    );
    assert_eq!(applied.report.updated, vec!["p1".to_string()]);
    assert_eq!(applied.report.closed.len(), 1);
    assert_eq!(g.get("p1").unwrap().source_message_ids, CHANGED);
}

// ---------- idempotency (proptest) ----------

fn arb_entity() -> impl Strategy<Value = ParsedEntity> {
    let names = prop::sample::select(vec![
        "Alice Smith",
        "alice smith!",
        "Ally",
        "Bob",
        "bobby",
        "Paris",
        "London",
        "Acme Corp",
        "Zed",
        "Z",
        "東京",
        "C++",
        "C",
    ]);
    let ids = prop::option::of(prop::sample::select(vec![
        "p1", "pl1", "pl2", "c1", "x1", "x2", "gen-1",
    ]));
    let types = prop::sample::select(EntityType::ALL.to_vec());
    let desc = prop::sample::select(vec!["", "d1", "d2"]);
    let aliases = prop::collection::vec(names.clone(), 0..3);
    let props = prop::collection::btree_map(
        prop::sample::select(vec!["k1", "k2"]),
        prop::sample::select(vec!["v1", "v2"]),
        0..2,
    );
    let rel = (
        prop::sample::select(vec![
            "p1", "pl1", "pl2", "c1", "x1", "x2", "Paris", "Bob", "Ally", "nobody",
        ]),
        prop::sample::select(vec![
            "lives_in",
            "Lives In",
            "likes",
            "dislikes",
            "knows",
            "married_to",
            "divorced_from",
            "works_at",
        ]),
        prop::sample::select(vec![0.0f32, 0.3, 0.7, 1.0]),
        any::<bool>(),
    )
        .prop_map(|(t, l, s, ended)| ParsedRelationship {
            target: t.into(),
            relationship: l.into(),
            strength: s,
            ended: ended || s == 0.0,
        });
    let rels = prop::collection::vec(rel, 0..4);
    (names, ids, types, desc, aliases, props, rels).prop_map(
        |(name, id, entity_type, d, aliases, props, relationships)| ParsedEntity {
            id: id.map(String::from),
            entity_type,
            name: name.into(),
            aliases: aliases
                .into_iter()
                .map(String::from)
                .filter(|a| *a != name)
                .collect(),
            description: d.into(),
            properties: props
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            relationships,
            sources: Vec::new(),
            said_at: None,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn merging_the_same_update_twice_equals_once(
        first in prop::collection::vec(arb_entity(), 0..6),
        update in prop::collection::vec(arb_entity(), 0..8),
    ) {
        // A random starting graph: the fixture after a random earlier update.
        let mut g = Graph::new(base());
        run(&mut g, &first, NOW - 100);
        let mut ids = counter("u-");
        let src = sources();
        let ctx = MergeContext { now: NOW, source_message_ids: &src, scope: EntityScope::Shared };
        merge(&mut g, &update, &ctx, &mut ids);
        let once = g.nodes().to_vec();
        let ctx2 = MergeContext { now: NOW + 1000, ..ctx };
        let r2 = merge(&mut g, &update, &ctx2, &mut ids);
        prop_assert_eq!(g.nodes(), &once[..]);
        prop_assert!(r2.added.is_empty() && r2.updated.is_empty() && r2.closed.is_empty(), "{:?}", r2);
        // every node has a unique id and relationships are never deleted
        let mut seen = std::collections::HashSet::new();
        for n in g.nodes() {
            prop_assert!(seen.insert(n.id.clone()));
        }
    }

    #[test]
    fn a_node_never_lists_a_name_twice(
        updates in prop::collection::vec(prop::collection::vec(arb_entity(), 0..5), 1..6),
    ) {
        let mut g = Graph::new(base());
        for (i, u) in updates.iter().enumerate() {
            run(&mut g, u, NOW + i as i64);
        }
        for n in g.nodes() {
            let keys: Vec<String> = std::iter::once(&n.name)
                .chain(&n.aliases)
                .map(|a| memoire::engine::memory::normalize::name_key(a))
                .collect();
            let unique: std::collections::HashSet<&String> = keys.iter().collect();
            prop_assert_eq!(unique.len(), keys.len(), "{} aka {:?}", n.name, n.aliases);
        }
    }

    #[test]
    fn merge_never_deletes_edges_or_nodes(update in prop::collection::vec(arb_entity(), 0..8)) {
        let before = base();
        let mut g = Graph::new(before.clone());
        run(&mut g, &update, NOW);
        for b in &before {
            let a = g.get(&b.id).unwrap();
            prop_assert!(a.relationships.len() >= b.relationships.len());
            for (old, new) in b.relationships.iter().zip(&a.relationships) {
                prop_assert_eq!(&old.target_id, &new.target_id);
                prop_assert_eq!(&old.relationship, &new.relationship);
                prop_assert!(old.valid_to.is_none() || old.valid_to == new.valid_to);
            }
        }
    }
}

// ---------- normalisation ----------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// The three word splitters (callback, arena, key) agree on any text.
    #[test]
    fn word_splitters_agree(s in "(\\PC|[ .,+#_-]|東京|Ünï){0,40}") {
        use memoire::engine::memory::normalize::{label_key, name_key, push_words, words};
        let w = words(&s);
        let mut buf = String::new();
        let mut spans = Vec::new();
        push_words(&s, &mut buf, &mut spans);
        let pushed: Vec<&str> = spans.iter().map(|&(a, b)| &buf[a..b]).collect();
        prop_assert_eq!(&pushed, &w);
        prop_assert_eq!(name_key(&s), w.join(" "));
        prop_assert_eq!(label_key(&s), w.join("_"));
    }
}

// ---------- retrieval ----------

fn retrieval_graph() -> Graph {
    let mut alice = node("a1", "Alice", EntityType::Person);
    alice.aliases = vec!["Ally".into()];
    alice.relationships = vec![
        rel("p", "lives_in", 0.7, None),
        rel("zed", "knows", 1.0, Some(10)),
    ];
    let mut bob = node("bob", "Bob", EntityType::Person);
    bob.relationships = vec![rel("a1", "friend_of", 0.9, None)];
    Graph::new(vec![
        alice,
        bob,
        node("p", "Paris", EntityType::Place),
        node("ny", "New York", EntityType::Place),
        node("tk", "東京", EntityType::Place),
        node("al", "Al", EntityType::Person),
        node("cpp", "C++", EntityType::Concept),
        node("c", "C", EntityType::Concept),
        node("zed", "Zed", EntityType::Person),
        node("mu", "Müller", EntityType::Person),
    ])
}

fn check_retrieve(texts: &[&str], want: &[&str]) {
    let g = retrieval_graph();
    let got: Vec<&str> = retrieve(&g, texts, 1000)
        .iter()
        .map(|r| r.node.id.as_str())
        .collect();
    assert_eq!(got, want, "{texts:?}");
}

#[rustfmt::skip]
#[test]
fn retrieve_table() {
    check_retrieve(&["I met alice yesterday"], &["a1", "bob", "p"]);
    check_retrieve(&["ALLY!"], &["a1", "bob", "p"]);
    check_retrieve(&["Alicia and Parisian food"], &[]);
    check_retrieve(&["paris."], &["p", "a1"]);
    check_retrieve(&["new   york, new-york"], &["ny"]);
    check_retrieve(&["東京に行きました"], &["tk"]);
    check_retrieve(&["Al writes C++"], &["al", "cpp"]);
    check_retrieve(&["c is old"], &["c"]);
    check_retrieve(&["MÜLLER called"], &["mu"]);
    check_retrieve(&["zed"], &["zed"]);
    check_retrieve(&[], &[]);
    check_retrieve(&["bob", "and paris"], &["bob", "p", "a1"]);
}

#[test]
fn retrieve_ranks_by_mentions_strength_and_recency() {
    let mut g = retrieval_graph().into_nodes();
    for n in &mut g {
        if n.id == "ny" {
            n.updated_at = 1000 - 30 * DAY;
        }
    }
    let g = Graph::new(g);
    let r = retrieve(&g, &["New York and Paris", "paris again"], 1000);
    let ids: Vec<&str> = r.iter().map(|x| x.node.id.as_str()).collect();
    assert_eq!(ids, ["p", "ny", "a1"]);
    assert_eq!(r[0].why, Why::Mentioned { mentions: 2 });
    assert_eq!(
        r[2].why,
        Why::Neighbour {
            via: "p".into(),
            strength: 0.7
        }
    );
    assert!(r[0].score > r[1].score && r[1].score > r[2].score);
    // the old one scores less than a fresh single mention would
    let fresh = retrieve(&g, &["Paris"], 1000)[0].score;
    assert!(r[1].score < fresh);
}

#[test]
fn describe_mentions_live_relationships_by_name() {
    let g = retrieval_graph();
    let d = describe(g.get("a1").unwrap(), &g);
    assert!(d.starts_with("Alice (person) aka Ally"), "{d}");
    assert!(d.contains("lives_in Paris"), "{d}");
    assert!(
        !d.contains("knows"),
        "closed edges are history, not context: {d}"
    );
}

#[test]
fn the_prompt_gets_the_relevant_entities_first_then_the_rest_by_recency() {
    let mut nodes = retrieval_graph().into_nodes();
    for (i, n) in nodes.iter_mut().enumerate() {
        n.updated_at = i as i64; // later in the list: more recent
    }
    let g = Graph::new(nodes);
    let ids = |texts: &[&str]| -> Vec<String> {
        rank_for_prompt(&g, texts, 1000)
            .iter()
            .map(|n| n.id.clone())
            .collect()
    };
    let relevant = ids(&["I met alice yesterday"]);
    assert_eq!(&relevant[..3], ["a1", "bob", "p"]);
    assert_eq!(&relevant[3..], ["mu", "zed", "c", "cpp", "al", "tk", "ny"]);
    // Nothing mentioned: every entity, most recently updated first.
    assert_eq!(
        ids(&["what do you remember about me?"]),
        ["mu", "zed", "c", "cpp", "al", "tk", "ny", "p", "bob", "a1"]
    );
}
