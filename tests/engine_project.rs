#![cfg(not(target_arch = "wasm32"))]
//! Projects (`engine::project`, issue 26 item 4): the system prompt of a conversation in a project,
//! the scope of a fact said in one, which facts a prompt carries (about you and its own project's,
//! never another project's: property-tested through the assembly), moving a fact to about you,
//! deleting a project, two copies of a project or of a moved fact joining, and the inspector's line.

use memoire::engine::assemble::{assemble, AssemblyInput};
use memoire::engine::backup::{
    check_import, export_with_projects, projects_for_export, ExistingIds, ImportLimits,
};
use memoire::engine::format::system_prompt_detail;
use memoire::engine::memory::user::{handle_said, handle_said_in, join_fact};
use memoire::engine::model::*;
use memoire::engine::project::*;
use memoire::engine::sync::convert::{edit_fact, fact_doc, to_fact};
use memoire::engine::sync::convert::{edit_project, project_doc, to_project};
use memoire::engine::sync::hlc::Hlc;
use memoire::engine::sync::merge::{merge_fact, merge_project};
use memoire::engine::tokens::HeuristicEstimator;
use proptest::prelude::*;

const T0: i64 = 1_795_132_800_000;

fn project(id: &str, name: &str, instructions: &str) -> Project {
    Project {
        id: id.into(),
        name: name.into(),
        instructions: instructions.into(),
        created_at: T0,
        updated_at: T0,
        deleted: None,
    }
}

fn conversation(id: &str, project: Option<&str>) -> Conversation {
    Conversation {
        id: id.into(),
        title: String::new(),
        title_is_custom: false,
        created_at: T0,
        updated_at: T0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides {
            project: project.map(str::to_string),
            ..Default::default()
        },
    }
}

/// Ids `f1`, `f2`, … in order.
fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("f{n}")
    }
}

// ---------- the system prompt ----------

fn check_prompt(base: &str, p: Option<&Project>, want: &str) {
    assert_eq!(system_prompt(base, p), want, "{base:?} {p:?}");
}

#[test]
fn the_projects_instructions_come_after_the_system_prompt() {
    let p = project("p1", "Garden", "Answer as a gardener.");
    let empty = project("p2", "Empty", "  ");
    check_prompt("Be brief.", None, "Be brief.");
    check_prompt("Be brief.", Some(&empty), "Be brief.");
    check_prompt(
        "Be brief.\n",
        Some(&p),
        "Be brief.\n\nInstructions of the project \"Garden\":\nAnswer as a gardener.",
    );
    check_prompt(
        "",
        Some(&p),
        "Instructions of the project \"Garden\":\nAnswer as a gardener.",
    );
}

fn check_detail(own: Option<&str>, p: Option<&Project>, want: &str) {
    let mut c = conversation("c", None);
    c.memory_overrides.system_prompt = own.map(str::to_string);
    assert_eq!(system_prompt_detail(&c, p, "Be brief."), want);
}

#[test]
fn the_inspector_says_whose_the_system_prompt_is() {
    let p = project("p1", "Garden", "Answer as a gardener.");
    check_detail(None, None, "From Settings: Be brief.");
    check_detail(
        None,
        Some(&p),
        "From Settings, then the instructions of project \"Garden\": Be brief.",
    );
    check_detail(
        Some("Speak French."),
        Some(&p),
        "This conversation's, then the instructions of project \"Garden\": Be brief.",
    );
}

// ---------- membership, names, deleting ----------

#[test]
fn a_conversation_is_in_a_project_only_while_it_lives() {
    let mut all = vec![project("p1", "Garden", ""), project("p2", "Work", "")];
    let c = conversation("c", Some("p1"));
    assert_eq!(prompt_scope(&c, &all), Some("p1"));
    assert_eq!(fact_scope(&c, &all), Some("p1".to_string()));
    assert_eq!(prompt_scope(&conversation("c", None), &all), None);
    assert_eq!(prompt_scope(&conversation("c", Some("p9")), &all), None);
    assert!(delete(&mut all, "p1", T0 + 5));
    assert!(!delete(&mut all, "p1", T0 + 6), "deleted once");
    assert_eq!(prompt_scope(&c, &all), None);
    assert_eq!(listed(&all).len(), 1);
}

#[test]
fn deleting_a_project_takes_its_conversations_out_and_leaves_the_rest() {
    let cs = vec![
        conversation("a", Some("p1")),
        conversation("b", Some("p2")),
        conversation("c", None),
    ];
    let left = leaving(&cs, "p1");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, "a");
    assert_eq!(left[0].memory_overrides.project, None);
}

fn check_name(name: &str, want: Result<&str, ProjectError>) {
    let got = new_project("p".into(), name, T0).map(|p| p.name);
    assert_eq!(got.as_deref().map_err(Clone::clone), want, "{name:?}");
}

#[test]
fn names_are_trimmed_on_one_line_and_never_empty() {
    check_name("  Garden  ", Ok("Garden"));
    check_name("Two\nlines", Ok("Two lines"));
    check_name("   ", Err(ProjectError::EmptyName));
    check_name(
        &"x".repeat(MAX_NAME_CHARS + 1),
        Err(ProjectError::NameTooLong),
    );
    let mut p = project("p1", "Garden", "");
    assert_eq!(rename(&mut p, "Garden", T0 + 1), Ok(false));
    assert_eq!(rename(&mut p, "Roses", T0 + 1), Ok(true));
    assert_eq!(set_instructions(&mut p, " Be kind. ", T0 + 2), Ok(true));
    assert_eq!(p.instructions, "Be kind.");
    p.deleted = Some(T0 + 3);
    assert_eq!(rename(&mut p, "Tulips", T0 + 4), Err(ProjectError::Gone));
}

// ---------- facts ----------

#[test]
fn a_fact_said_in_a_project_is_of_that_project() {
    let mut facts = Vec::new();
    let mut id = ids();
    handle_said_in(
        &mut facts,
        Some("p1"),
        "c",
        "m1",
        "I work as a nurse.",
        T0,
        &mut id,
    );
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].scope.as_deref(), Some("p1"));
    // Said again outside the project: a fact about the user of its own.
    handle_said(&mut facts, "d", "m2", "I work as a nurse.", T0 + 1, &mut id);
    assert_eq!(facts.len(), 2);
    assert_eq!(facts[1].scope, None);
    // Said in another project while about you says it: not taken in again.
    handle_said_in(
        &mut facts,
        Some("p2"),
        "e",
        "m3",
        "I work as a nurse.",
        T0 + 2,
        &mut id,
    );
    assert_eq!(facts.len(), 2);
    // A project's fact supersedes only the project's own.
    handle_said_in(
        &mut facts,
        Some("p1"),
        "c",
        "m4",
        "I work as a teacher.",
        T0 + 3,
        &mut id,
    );
    assert!(facts[0].valid_to.is_some(), "the project's job is past");
    assert!(facts[1].is_current(), "the job about you stays");
}

#[test]
fn moving_a_fact_to_about_you_wins_over_the_older_copy_in_any_order() {
    let mut facts = Vec::new();
    handle_said_in(
        &mut facts,
        Some("p1"),
        "c",
        "m1",
        "I work as a nurse.",
        T0,
        ids(),
    );
    let before = facts[0].clone();
    assert!(move_to_about_you(&mut facts, &before.id, T0 + 10));
    assert!(!move_to_about_you(&mut facts, &before.id, T0 + 11), "once");
    let moved = facts[0].clone();
    assert_eq!(moved.scope, None);
    assert_eq!(join_fact(&before, &moved).scope, None);
    assert_eq!(join_fact(&moved, &before).scope, None);
    // The same through sync's documents.
    let at = |n: u64| Hlc {
        wall: T0 + n as i64,
        counter: 0,
        device: "d".into(),
    };
    let old_doc = fact_doc(&before, &at(1));
    let new_doc = edit_fact(&old_doc, &moved, &at(20));
    assert_eq!(to_fact(&merge_fact(&old_doc, &new_doc)).scope, None);
    assert_eq!(to_fact(&merge_fact(&new_doc, &old_doc)).scope, None);
}

#[test]
fn a_deleted_projects_facts_reach_no_prompt_and_are_labelled() {
    let mut all = vec![project("p1", "Garden", "")];
    let mut facts = Vec::new();
    handle_said_in(
        &mut facts,
        Some("p1"),
        "c",
        "m1",
        "I work as a gardener.",
        T0,
        ids(),
    );
    assert_eq!(scope_label(&facts[0], &all), "Project: Garden");
    delete(&mut all, "p1", T0 + 1);
    assert_eq!(scope_label(&facts[0], &all), "From a deleted project");
    assert!(facts[0].is_current(), "deleting changes no fact");
    let c = conversation("c", Some("p1"));
    let a = prompt(&facts, prompt_scope(&c, &all));
    assert!(!a.contains("gardener"), "{a}");
}

// ---------- two copies of a project ----------

#[test]
fn two_copies_of_a_project_join_the_newer_words_and_the_tombstone() {
    let a = project("p1", "Garden", "old");
    let mut b = a.clone();
    b.name = "Roses".into();
    b.updated_at = T0 + 5;
    let mut gone = a.clone();
    gone.deleted = Some(T0 + 1);
    gone.updated_at = T0 + 1;
    assert_eq!(join_project(&a, &b), join_project(&b, &a));
    assert_eq!(join_project(&a, &b).name, "Roses");
    assert_eq!(join_project(&b, &gone).deleted, Some(T0 + 1));
    assert_eq!(join_project(&gone, &b).deleted, Some(T0 + 1));
    assert_eq!(join_project(&b, &b), b);
    let written = join_all(&[a.clone()], &[a.clone(), b.clone()]);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].name, "Roses");
    assert!(
        join_all(&[b.clone()], &[a]).is_empty(),
        "an older copy changes nothing"
    );
}

// ---------- the prompt ----------

/// The text an assembly for a conversation of `scope` puts before the history (system prompt,
/// about you, …).
fn prompt(facts: &[UserFact], scope: Option<&str>) -> String {
    let config = MemoryConfig {
        context_tokens: 8192,
        reply_reserve_tokens: 0,
        ..MemoryConfig::default()
    };
    let new = Message {
        id: "new".into(),
        conversation_id: "x".into(),
        seq: 1,
        role: Role::User,
        content: "What do you know about me?".into(),
        status: MessageStatus::Complete,
        created_at: T0 + 100,
        meta: MessageMeta::default(),
    };
    let a = assemble(
        &AssemblyInput {
            system_prompt: "Be brief.",
            summary: None,
            entities: &[],
            history: &[],
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: facts,
            project: scope,
            recall: &[],
        },
        &HeuristicEstimator,
    );
    a.sections
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

const SAID: [&str; 6] = [
    "I work as a nurse.",
    "I live in Oslo.",
    "My name is Ada.",
    "I have a dog called Rex.",
    "I like green tea.",
    "I am allergic to peanuts.",
];

proptest! {
    /// A fact of project P never reaches a prompt outside P: whatever facts were said where, a
    /// conversation in no project, in another project, or in P once deleted never carries one of
    /// P's facts; and a conversation of P carries them as the ones about the user.
    #[test]
    fn a_fact_of_project_p_never_reaches_a_prompt_outside_p(
        said in prop::collection::vec((0usize..SAID.len(), 0u8..3), 1..8),
        moved in prop::collection::vec(any::<bool>(), 8),
    ) {
        let scopes = [None, Some("p"), Some("q")];
        let mut facts = Vec::new();
        let mut id = ids();
        for (k, (text, scope)) in said.iter().enumerate() {
            handle_said_in(&mut facts, scopes[*scope as usize], "c", &format!("m{k}"),
                SAID[*text], T0 + k as i64, &mut id);
        }
        let ids: Vec<String> = facts.iter().map(|f| f.id.clone()).collect();
        for (i, m) in ids.iter().zip(&moved) {
            if *m { move_to_about_you(&mut facts, i, T0 + 50); }
        }
        let of_p: Vec<&str> = facts.iter()
            .filter(|f| f.scope.as_deref() == Some("p"))
            .map(|f| f.text.as_str())
            .filter(|t| !facts.iter().any(|g| g.scope.as_deref() != Some("p") && g.text == *t))
            .collect();
        let mut all = vec![project("p", "P", ""), project("q", "Q", "")];
        let outside = [conversation("x", None), conversation("y", Some("q"))];
        for c in &outside {
            let text = prompt(&facts, prompt_scope(c, &all));
            for t in &of_p {
                prop_assert!(!text.contains(t), "{t} reached {:?}: {text}", c.memory_overrides.project);
            }
        }
        delete(&mut all, "p", T0 + 60);
        let text = prompt(&facts, prompt_scope(&conversation("z", Some("p")), &all));
        for t in &of_p {
            prop_assert!(!text.contains(t), "{t} reached a conversation of the deleted P: {text}");
        }
    }
}

#[test]
fn a_conversation_of_p_carries_ps_facts_and_those_about_you() {
    let mut facts = Vec::new();
    let mut id = ids();
    handle_said_in(
        &mut facts,
        Some("p"),
        "c",
        "m1",
        "I work as a nurse.",
        T0,
        &mut id,
    );
    handle_said(&mut facts, "d", "m2", "I live in Oslo.", T0 + 1, &mut id);
    handle_said_in(
        &mut facts,
        Some("q"),
        "e",
        "m3",
        "I have a dog called Rex.",
        T0 + 2,
        &mut id,
    );
    let in_p = prompt(&facts, Some("p"));
    assert!(
        in_p.contains("nurse") && in_p.contains("Oslo") && !in_p.contains("Rex"),
        "{in_p}"
    );
    let outside = prompt(&facts, None);
    assert!(
        !outside.contains("nurse") && outside.contains("Oslo"),
        "{outside}"
    );
    move_to_about_you(&mut facts, "f1", T0 + 3);
    assert!(
        prompt(&facts, None).contains("nurse"),
        "moved to about you, it reaches outside"
    );
}

// ---------- backups and sync carry projects ----------

/// Plans the import of a backup carrying `projects` into a store holding `stored`.
fn imported(projects: &[Project], stored: &[Project]) -> Vec<Project> {
    let refs: Vec<&Project> = projects.iter().collect();
    let json = export_with_projects(&[], &[], &[], &refs, T0 + 99);
    let existing = ExistingIds {
        projects: stored.to_vec(),
        ..ExistingIds::default()
    };
    check_import(json.as_bytes(), &ImportLimits::default())
        .and_then(|c| c.plan(&existing))
        .expect("a valid backup")
        .projects
}

#[test]
fn the_import_preview_counts_the_projects_it_writes() {
    let json = export_with_projects(&[], &[], &[], &[&project("p1", "Garden", "")], T0);
    let plan = check_import(json.as_bytes(), &ImportLimits::default())
        .and_then(|c| c.plan(&ExistingIds::default()))
        .unwrap();
    assert_eq!(
        plan.projects_preview().as_deref(),
        Some("Projects: 1 new or changed.")
    );
    let none = check_import(
        export_with_projects(&[], &[], &[], &[], T0).as_bytes(),
        &ImportLimits::default(),
    )
    .and_then(|c| c.plan(&ExistingIds::default()))
    .unwrap();
    assert_eq!(none.projects_preview(), None);
    assert!(
        plan.reach().is_empty(),
        "a project without instructions acts on nothing"
    );
    let json = export_with_projects(
        &[],
        &[],
        &[],
        &[&project("p2", "Garden", "Answer in Latin.")],
        T0,
    );
    let plan = check_import(json.as_bytes(), &ImportLimits::default())
        .and_then(|c| c.plan(&ExistingIds::default()))
        .unwrap();
    assert_eq!(
        plan.reach().lines(),
        ["Project instructions, sent with every conversation of the project: “Garden”: “Answer in Latin.”"]
    );
}

#[test]
fn a_backup_carries_projects_and_never_brings_a_deleted_one_back() {
    let live = project("p1", "Garden", "Answer as a gardener.");
    assert_eq!(imported(&[live.clone()], &[]), vec![live.clone()]);
    assert!(
        imported(&[live.clone()], &[live.clone()]).is_empty(),
        "already here"
    );
    let mut gone = live.clone();
    gone.deleted = Some(T0 + 5);
    gone.updated_at = T0 + 5;
    assert!(
        imported(&[live.clone()], &[gone.clone()]).is_empty(),
        "an older live copy changes nothing"
    );
    assert_eq!(imported(&[gone.clone()], &[live.clone()]), vec![gone]);
    // A backup of one conversation carries its own project only.
    let all = [live.clone(), project("p2", "Work", "")];
    let c = conversation("c", Some("p1"));
    let one: Vec<&str> = projects_for_export(&all, Some(&c))
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(one, ["p1"]);
    assert_eq!(projects_for_export(&all, None).len(), 2);
    // Older backups have no projects: the field is left out when there are none.
    assert!(!export_with_projects(&[], &[], &[], &[], T0).contains("projects"));
}

#[test]
fn sync_joins_a_rename_and_a_deletion_in_any_order() {
    let at = |n: i64| Hlc {
        wall: T0 + n,
        counter: 0,
        device: "d".into(),
    };
    let p = project("p1", "Garden", "");
    let base = project_doc(&p, &at(1));
    let mut renamed = p.clone();
    renamed.name = "Roses".into();
    let a = edit_project(&base, &renamed, &at(5));
    let mut gone = p.clone();
    gone.deleted = Some(T0 + 3);
    let b = edit_project(&base, &gone, &at(3));
    let ab = merge_project(&a, &b);
    assert_eq!(ab, merge_project(&b, &a));
    let merged = to_project(&ab);
    assert_eq!(merged.name, "Roses");
    assert_eq!(
        merged.deleted,
        Some(T0 + 3),
        "deleted on one device, deleted on all"
    );
    assert_eq!(
        edit_project(&a, &renamed, &at(9)),
        a,
        "no change, no new stamp"
    );
}
