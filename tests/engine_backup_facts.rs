#![cfg(not(target_arch = "wasm32"))]
//! The facts about the user in Memoire's own backup: what an export carries (every fact, tombstones
//! included; a one-conversation export only what was said in it), the hostile-input checks of a
//! file's facts (each case names the error it must give), the plan's merge by id against the stored
//! facts (each case one line: stored, incoming, what is written and counted), and the property that
//! an import never brings a forgotten fact back, whatever the file says.

use memoire::engine::backup::{
    check_import, export_backup, export_json, facts_for_export, join_user_facts, ExistingIds,
    ImportError, ImportLimits, ImportPlan,
};
use memoire::engine::memory::user::join_fact;
use memoire::engine::model::{FactKind, FactSource, Millis, UserFact};
use proptest::prelude::*;
use serde_json::{json, Value};

const T0: Millis = 1_763_700_000_000;

fn fact(id: &str, text: &str, updated_at: Millis) -> UserFact {
    UserFact {
        id: id.into(),
        text: text.into(),
        kind: FactKind::Home,
        claim_key: "lives_in".into(),
        source: Some(FactSource {
            conversation_id: "c1".into(),
            message_id: format!("m-{id}"),
            said_at: T0,
        }),
        valid_from: T0,
        valid_to: None,
        forgotten: None,
        scope: None,
        updated_at,
    }
}

fn forgotten(mut f: UserFact, at: Millis) -> UserFact {
    f.forgotten = Some(at);
    f.updated_at = f.updated_at.max(at);
    f
}

fn past(mut f: UserFact, at: Millis) -> UserFact {
    f.valid_to = Some(at);
    f
}

fn backup_of(facts: &[UserFact]) -> String {
    let refs: Vec<&UserFact> = facts.iter().collect();
    export_backup(&[], &[], &refs, T0 + 99)
}

fn plan(bytes: &[u8], stored: &[UserFact]) -> Result<ImportPlan, ImportError> {
    let existing = ExistingIds {
        user_facts: stored.to_vec(),
        ..ExistingIds::default()
    };
    check_import(bytes, &ImportLimits::default())?.plan(&existing)
}

// ---------------------------------------------------------------- export

#[test]
fn a_backup_carries_every_fact_tombstones_included_and_reads_them_back() {
    let facts = vec![
        fact("f1", "I live in Oslo.", T0),
        forgotten(fact("f2", "I have a dog.", T0), T0 + 5),
        past(fact("f3", "I live in Lisbon.", T0), T0 + 3),
    ];
    let p = plan(backup_of(&facts).as_bytes(), &[]).unwrap();
    let mut got = p.user_facts.clone();
    got.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(got, facts);
    assert_eq!((p.added.facts, p.skipped.facts), (3, 0));
    assert_eq!(
        p.facts_preview().as_deref(),
        Some("Facts about you: 3 new, 0 already here.")
    );
}

#[test]
fn a_one_conversation_backup_carries_only_the_facts_said_in_it() {
    let mut elsewhere = fact("f2", "I work as a nurse.", T0);
    elsewhere.source.as_mut().unwrap().conversation_id = "c9".into();
    let mut added = fact("f3", "I like tea.", T0);
    added.source = None;
    let facts = vec![fact("f1", "I live in Oslo.", T0), elsewhere, added];
    let ids = |c: Option<&str>| -> Vec<String> {
        facts_for_export(&facts, c)
            .iter()
            .map(|f| f.id.clone())
            .collect()
    };
    assert_eq!(ids(None), ["f1", "f2", "f3"]);
    assert_eq!(ids(Some("c1")), ["f1"]);
    assert!(ids(Some("c7")).is_empty());
}

#[test]
fn a_backup_without_facts_imports_and_writes_no_facts_field() {
    let old = export_json(&[], &[], T0);
    assert!(!old.contains("user_facts"));
    let p = plan(old.as_bytes(), &[fact("f1", "I live in Oslo.", T0)]).unwrap();
    assert!(p.user_facts.is_empty());
    assert_eq!((p.added.facts, p.skipped.facts), (0, 0));
    assert_eq!(p.facts_preview(), None);
    assert!(!p.report().contains("fact"));
}

#[test]
fn an_unknown_kind_reads_as_other() {
    let mut v: Value = serde_json::from_str(&backup_of(&[fact("f1", "I sail.", T0)])).unwrap();
    v["user_facts"][0]["kind"] = json!("hobby-from-a-newer-version");
    let p = plan(v.to_string().as_bytes(), &[]).unwrap();
    assert_eq!(p.user_facts[0].kind, FactKind::Other);
}

// ---------------------------------------------------------------- check: hostile facts

/// The one-fact backup with `f` applied to its fact's JSON; the import must fail with `pattern`.
macro_rules! check {
    ($f:expr, $pattern:pat) => {{
        let mut v: Value =
            serde_json::from_str(&backup_of(&[fact("f1", "I live in Oslo.", T0)])).unwrap();
        let edit: fn(&mut Value) = $f;
        edit(&mut v["user_facts"][0]);
        let result = plan(v.to_string().as_bytes(), &[]);
        assert!(
            matches!(result, Err($pattern)),
            "{}: got {:?}",
            stringify!($f),
            result.map(|p| p.added)
        );
        assert!(result.unwrap_err().to_string().contains("fact about you"));
    }};
}

#[test]
fn hostile_facts_are_refused_with_a_reason() {
    check!(
        |f| f["text"] = json!("x".repeat(2_001)),
        ImportError::TooLong { field: "text", .. }
    );
    check!(
        |f| f["text"] = json!("  "),
        ImportError::InvalidValue { .. }
    );
    check!(
        |f| f["kind"] = json!("k".repeat(41)),
        ImportError::TooLong { field: "kind", .. }
    );
    check!(
        |f| f["claim_key"] = json!("k".repeat(4_097)),
        ImportError::TooLong {
            field: "claim_key",
            ..
        }
    );
    check!(|f| f["id"] = json!(""), ImportError::InvalidValue { .. });
    check!(
        |f| f["id"] = json!("a\u{0}b"),
        ImportError::InvalidValue { .. }
    );
    check!(
        |f| f["id"] = json!("i".repeat(257)),
        ImportError::TooLong { field: "id", .. }
    );
    check!(
        |f| f["source"]["message_id"] = json!("\n"),
        ImportError::InvalidValue { .. }
    );
    check!(
        |f| f["source"]["conversation_id"] = json!("c".repeat(300)),
        ImportError::TooLong { .. }
    );
    check!(
        |f| f["scope"] = json!(" "),
        ImportError::InvalidValue { .. }
    );
    check!(
        |f| f["valid_to"] = json!(T0 - 1),
        ImportError::InvalidValue { .. }
    );
}

#[test]
fn hostile_fact_types_and_duplicates_are_refused() {
    let bad = |f: fn(&mut Value)| {
        let mut v: Value =
            serde_json::from_str(&backup_of(&[fact("f1", "I live in Oslo.", T0)])).unwrap();
        f(&mut v);
        plan(v.to_string().as_bytes(), &[]).map(|p| p.added)
    };
    assert!(matches!(
        bad(|v| v["user_facts"][0]["valid_from"] = json!("yesterday")),
        Err(ImportError::WrongType { .. })
    ));
    assert!(matches!(
        bad(|v| v["user_facts"][0]["forgotten"] = json!(1e300)),
        Err(ImportError::WrongType { .. })
    ));
    assert!(matches!(
        bad(|v| {
            v["user_facts"].as_array_mut().unwrap().remove(0);
            v["user_facts"] = json!({"f1": {}});
        }),
        Err(ImportError::WrongType { .. })
    ));
    assert!(matches!(
        bad(|v| v["user_facts"][0]
            .as_object_mut()
            .unwrap()
            .remove("text")
            .map(drop)
            .unwrap()),
        Err(ImportError::MissingField { .. })
    ));
    assert!(matches!(
        bad(|v| {
            let f = v["user_facts"][0].clone();
            v["user_facts"].as_array_mut().unwrap().push(f);
        }),
        Err(ImportError::DuplicateId {
            kind: "fact about you",
            ..
        })
    ));
    // A forgotten fact may have no words left.
    assert!(bad(|v| {
        v["user_facts"][0]["text"] = json!("");
        v["user_facts"][0]["forgotten"] = json!(T0 + 1);
    })
    .is_ok());
}

// ---------------------------------------------------------------- plan: merge by id

/// Stored facts, then the file's: what the plan writes (ids and the state written) and counts.
fn check_merge(
    stored: &[UserFact],
    file: &[UserFact],
    writes: &[UserFact],
    new_here: (usize, usize),
) {
    let p = plan(backup_of(file).as_bytes(), stored).unwrap();
    assert_eq!(p.user_facts, writes, "written");
    assert_eq!((p.added.facts, p.skipped.facts), new_here, "counts");
}

#[test]
fn importing_merges_facts_by_id() {
    let oslo = fact("f1", "I live in Oslo.", T0);
    let edited = fact("f1", "I live in Oslo, Norway.", T0 + 10);
    let gone = forgotten(oslo.clone(), T0 + 5);
    let ended = past(oslo.clone(), T0 + 7);
    let other = fact("f2", "I have a cat.", T0);
    // New here: written as it is.
    check_merge(&[], &[oslo.clone()], &[oslo.clone()], (1, 0));
    // The same fact: nothing written.
    check_merge(&[oslo.clone()], &[oslo.clone()], &[], (0, 1));
    // The newer edit wins, from either side.
    check_merge(
        &[oslo.clone()],
        &[edited.clone()],
        &[edited.clone()],
        (0, 1),
    );
    check_merge(&[edited.clone()], &[oslo.clone()], &[], (0, 1));
    // A tombstone wins over a live copy, from either side, even an older one.
    check_merge(&[oslo.clone()], &[gone.clone()], &[gone.clone()], (0, 1));
    check_merge(
        &[gone.clone()],
        &[edited.clone()],
        &[join_fact(&gone, &edited)],
        (0, 1),
    );
    check_merge(&[gone.clone()], &[oslo.clone()], &[], (0, 1));
    // A past fact stays past.
    check_merge(&[ended.clone()], &[oslo.clone()], &[], (0, 1));
    check_merge(&[oslo.clone()], &[ended.clone()], &[ended.clone()], (0, 1));
    // Facts of other ids are left alone.
    check_merge(&[other.clone()], &[oslo.clone()], &[oslo.clone()], (1, 0));
    // The scope goes with the copy changed last: a project's fact moved to "about you" stays so.
    let mut in_project = oslo.clone();
    in_project.scope = Some("p1".into());
    let mut moved = in_project.clone();
    moved.scope = None;
    moved.updated_at = T0 + 20;
    check_merge(&[moved.clone()], &[in_project.clone()], &[], (0, 1));
    check_merge(
        &[in_project.clone()],
        &[moved.clone()],
        &[moved.clone()],
        (0, 1),
    );
}

#[test]
fn a_fact_forgotten_since_the_preview_stays_forgotten_at_the_confirm() {
    let oslo = fact("f1", "I live in Oslo.", T0);
    let edited = fact("f1", "I live in Oslo, Norway.", T0 + 10);
    let p = plan(backup_of(&[edited]).as_bytes(), &[oslo.clone()]).unwrap();
    assert_eq!(
        p.user_facts[0].forgotten, None,
        "the preview's plan writes the live edit"
    );
    // Meanwhile the user forgot it (before or after the file's edit): the confirm joins the plan
    // with what is stored then, and writes nothing live.
    for at in [T0 + 5, T0 + 20] {
        let now = [forgotten(oslo.clone(), at)];
        let joined = join_user_facts(&now, &p.user_facts);
        assert!(joined.write.iter().all(|f| f.forgotten == Some(at)), "{at}");
    }
}

#[test]
fn the_report_names_the_facts() {
    let p = plan(
        backup_of(&[fact("f1", "I live in Oslo.", T0), fact("f2", "I sail.", T0)]).as_bytes(),
        &[fact("f2", "I sail.", T0)],
    )
    .unwrap();
    assert_eq!(
        p.report(),
        "Imported 0 conversations, 0 messages, 0 summaries, 0 entities and 1 fact about you; \
         skipped 0 conversations, 0 messages, 0 summaries, 0 entities and 1 fact about you that \
         were already here."
    );
}

// ---------------------------------------------------------------- the property

fn any_fact() -> impl Strategy<Value = UserFact> {
    (
        prop::sample::select(vec!["f1", "f2"]),
        prop::sample::select(vec!["I live in Oslo.", "I live in Bergen.", "I sail."]),
        0i64..4,
        prop::option::of(0i64..4),
        prop::option::of(0i64..4),
    )
        .prop_map(|(id, text, updated, to, gone)| {
            let mut f = fact(id, text, T0 + updated);
            f.valid_to = to.map(|t| T0 + t);
            f.forgotten = gone.map(|t| T0 + t);
            f
        })
}

proptest! {
    /// Whatever the stored facts and whatever a backup holds (older or newer copies, live or not),
    /// a fact forgotten here stays forgotten, one forgotten in the file arrives forgotten, and a
    /// past one stays past; importing the same file again writes nothing.
    #[test]
    fn import_never_resurrects_a_forgotten_fact(
        stored in prop::collection::vec(any_fact(), 0..3),
        file in prop::collection::vec(any_fact(), 0..4),
    ) {
        let mut here: Vec<UserFact> = Vec::new();
        for f in stored {
            match here.iter_mut().find(|h| h.id == f.id) {
                Some(h) => *h = join_fact(h, &f),
                None => here.push(f),
            }
        }
        let mut file_facts: Vec<UserFact> = Vec::new();
        for f in file {
            if !file_facts.iter().any(|g| g.id == f.id) {
                file_facts.push(f);
            }
        }
        let p = plan(backup_of(&file_facts).as_bytes(), &here).unwrap();
        let mut after = here.clone();
        for w in &p.user_facts {
            match after.iter_mut().find(|h| h.id == w.id) {
                Some(h) => *h = w.clone(),
                None => after.push(w.clone()),
            }
        }
        for f in here.iter().chain(&file_facts) {
            let now = after.iter().find(|a| a.id == f.id).unwrap();
            if f.forgotten.is_some() {
                prop_assert!(now.forgotten.is_some(), "{} came back", f.id);
            }
            if f.valid_to.is_some() {
                prop_assert!(now.valid_to.is_some(), "{} became current", f.id);
            }
        }
        let again = plan(backup_of(&file_facts).as_bytes(), &after).unwrap();
        prop_assert!(again.user_facts.is_empty());
    }

    /// The join itself: commutative, associative, idempotent.
    #[test]
    fn join_fact_is_a_join(a in any_fact(), b in any_fact(), c in any_fact()) {
        let (b, c) = (UserFact { id: a.id.clone(), ..b }, UserFact { id: a.id.clone(), ..c });
        prop_assert_eq!(join_fact(&a, &b), join_fact(&b, &a));
        prop_assert_eq!(join_fact(&join_fact(&a, &b), &c), join_fact(&a, &join_fact(&b, &c)));
        prop_assert_eq!(join_fact(&a, &a), a.clone());
    }
}
