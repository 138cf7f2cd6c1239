//! Projects (issue 26, item 4): conversations grouped under a name, with their own instructions and
//! their own scope of facts about the user. Owns every decision about them; the shells store and
//! show what these functions return.
//!
//! - Membership lives in the conversation's [`MemoryOverrides::project`], not in a field of
//!   `Conversation`: the overrides are the conversation's settings that shape its prompts (model,
//!   system prompt, memory switch), and the project is one more of them; the store records, the
//!   backup wire, sync's conversation registers and the tab wire carry them already, each by an
//!   explicit conversion that fails to compile when a field is not handled.
//! - A conversation is in a project only while that project exists and is not deleted
//!   ([`project_of`]): one whose project was deleted on another device acts as in none.
//! - The system prompt ([`system_prompt`]): the conversation's own system prompt, else the one in
//!   Settings, then the project's instructions under a heading of their own. Both apply; the
//!   project's come last because they are the more specific to the work at hand (a conversation's
//!   own prompt still replaces Settings' as before). The context inspector says so
//!   (`format::system_prompt_detail`).
//! - Facts: one said in a conversation of a project is of that project ([`fact_scope`]); a
//!   prompt carries the facts about the user and those of its own project, never another
//!   project's (`memory::user::in_scope`, fed [`prompt_scope`]). [`move_to_about_you`] makes a
//!   project's fact one about the user (every conversation's), the newer move winning when two
//!   copies meet (`memory::user::join_fact`).
//! - Deleting ([`delete`]) is a tombstone (it syncs and wins over any live copy). Its conversations
//!   leave it ([`leaving`]); nothing is deleted. Its facts stay as they are, scoped to the deleted
//!   project: they reach no prompt, and the Memory page shows them ("From a deleted project") with
//!   "Move to about you" and "Forget". They are not moved to about you on their own: the user kept
//!   them in the project, and a deletion must never send a fact where it was not allowed to go.
//! - Two copies of one project (a backup's, another device's) join ([`join_project`]).
//!
//! Must not import anything outside `crate::engine`.

use crate::engine::format::one_line;
use crate::engine::model::{Conversation, Millis, Project, UserFact};

/// The longest project name, in characters.
pub const MAX_NAME_CHARS: usize = 80;
/// The longest instructions, in characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 20_000;
/// The heading the project's instructions go under in the system prompt.
pub const INSTRUCTIONS_HEADING: &str = "Instructions of the project";

/// Why a project's name or instructions were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    #[error("A project needs a name.")]
    EmptyName,
    #[error("A project's name is at most {MAX_NAME_CHARS} characters.")]
    NameTooLong,
    #[error("A project's instructions are at most {MAX_INSTRUCTIONS_CHARS} characters.")]
    InstructionsTooLong,
    #[error("That project is not there any more.")]
    Gone,
}

fn clean_name(name: &str) -> Result<String, ProjectError> {
    let name = one_line(name).trim().to_string();
    if name.is_empty() {
        return Err(ProjectError::EmptyName);
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ProjectError::NameTooLong);
    }
    Ok(name)
}

/// A new project named `name` (trimmed, on one line), made at `now` with id `id`.
pub fn new_project(id: String, name: &str, now: Millis) -> Result<Project, ProjectError> {
    Ok(Project {
        id,
        name: clean_name(name)?,
        instructions: String::new(),
        created_at: now,
        updated_at: now,
        deleted: None,
    })
}

/// Renames `p`; whether it changed. A deleted project cannot be renamed.
pub fn rename(p: &mut Project, name: &str, now: Millis) -> Result<bool, ProjectError> {
    if p.deleted.is_some() {
        return Err(ProjectError::Gone);
    }
    let name = clean_name(name)?;
    if name == p.name {
        return Ok(false);
    }
    p.name = name;
    p.updated_at = now;
    Ok(true)
}

/// Sets `p`'s instructions (trimmed); whether they changed.
pub fn set_instructions(p: &mut Project, text: &str, now: Millis) -> Result<bool, ProjectError> {
    if p.deleted.is_some() {
        return Err(ProjectError::Gone);
    }
    let text = text.trim();
    if text.chars().count() > MAX_INSTRUCTIONS_CHARS {
        return Err(ProjectError::InstructionsTooLong);
    }
    if text == p.instructions {
        return Ok(false);
    }
    p.instructions = text.to_string();
    p.updated_at = now;
    Ok(true)
}

/// Deletes project `id` of `projects` (a tombstone from `now`); whether it was there, not deleted.
pub fn delete(projects: &mut [Project], id: &str, now: Millis) -> bool {
    match projects
        .iter_mut()
        .find(|p| p.id == id && p.deleted.is_none())
    {
        Some(p) => {
            p.deleted = Some(now);
            p.updated_at = now;
            true
        }
        None => false,
    }
}

/// The conversations of `conversations` in project `id`, each as it is once it left the project.
pub fn leaving(conversations: &[Conversation], id: &str) -> Vec<Conversation> {
    conversations
        .iter()
        .filter(|c| c.memory_overrides.project.as_deref() == Some(id))
        .map(|c| {
            let mut c = c.clone();
            c.memory_overrides.project = None;
            c
        })
        .collect()
}

/// The live project of `projects` with id `id`, if any.
pub fn live<'a>(projects: &'a [Project], id: Option<&str>) -> Option<&'a Project> {
    let id = id?;
    projects.iter().find(|p| p.id == id && p.deleted.is_none())
}

/// The project conversation `c` is in: its project, while that exists and is not deleted.
pub fn project_of<'a>(c: &Conversation, projects: &'a [Project]) -> Option<&'a Project> {
    live(projects, c.memory_overrides.project.as_deref())
}

/// The scope a prompt of `c` reads facts in (`memory::user::in_scope`): its project's id, or
/// `None` outside any (live) project.
pub fn prompt_scope<'a>(c: &Conversation, projects: &'a [Project]) -> Option<&'a str> {
    project_of(c, projects).map(|p| p.id.as_str())
}

/// The scope of a fact said in `c`: its project (a fact learned in a project stays in it), or
/// `None` (about the user).
pub fn fact_scope(c: &Conversation, projects: &[Project]) -> Option<String> {
    prompt_scope(c, projects).map(str::to_string)
}

/// The system prompt of a conversation whose own (or Settings') system prompt is `base`, in
/// `project`: `base`, then the project's instructions under [`INSTRUCTIONS_HEADING`] (module
/// rules). No project, or one without instructions: `base` as it is.
pub fn system_prompt(base: &str, project: Option<&Project>) -> String {
    let Some(p) = project.filter(|p| !p.instructions.trim().is_empty()) else {
        return base.to_string();
    };
    let own = format!(
        "{INSTRUCTIONS_HEADING} \"{}\":\n{}",
        p.name,
        p.instructions.trim()
    );
    if base.trim().is_empty() {
        own
    } else {
        format!("{}\n\n{own}", base.trim_end())
    }
}

/// Makes fact `id` one about the user (every conversation's) from `now`; whether it was a live
/// project fact.
pub fn move_to_about_you(facts: &mut [UserFact], id: &str, now: Millis) -> bool {
    match facts
        .iter_mut()
        .find(|f| f.id == id && f.forgotten.is_none() && f.scope.is_some())
    {
        Some(f) => {
            f.scope = None;
            f.updated_at = now.max(f.updated_at + 1);
            true
        }
        None => false,
    }
}

/// Where a fact belongs, for the Memory page: "About you", the project's name, or "From a deleted
/// project" (a project this device does not know, or one deleted).
pub fn scope_label(f: &UserFact, projects: &[Project]) -> String {
    match &f.scope {
        None => "About you".to_string(),
        Some(id) => match live(projects, Some(id)) {
            Some(p) => format!("Project: {}", p.name),
            None => "From a deleted project".to_string(),
        },
    }
}

/// The projects the sidebar lists: live ones, by name (then id).
pub fn listed(projects: &[Project]) -> Vec<&Project> {
    let mut out: Vec<&Project> = projects.iter().filter(|p| p.deleted.is_none()).collect();
    out.sort_by(|a, b| (a.name.to_lowercase(), &a.id).cmp(&(b.name.to_lowercase(), &b.id)));
    out
}

/// Two copies of one project (the same id) joined: the name and instructions of the copy changed
/// last (equal times: the greater words, so the order of the arguments never matters), the
/// earliest deletion (a tombstone wins over a live copy whatever their age), the earliest creation
/// and the latest change. A join: commutative, associative, idempotent.
pub fn join_project(a: &Project, b: &Project) -> Project {
    let words = |p: &Project| (p.updated_at, p.name.clone(), p.instructions.clone());
    let newer = if words(a) >= words(b) { a } else { b };
    Project {
        id: a.id.clone().max(b.id.clone()),
        name: newer.name.clone(),
        instructions: newer.instructions.clone(),
        created_at: a.created_at.min(b.created_at),
        updated_at: a.updated_at.max(b.updated_at),
        deleted: match (a.deleted, b.deleted) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
    }
}

/// The projects of `incoming` (a backup's, another device's) joined with those of `stored` of
/// the same id: the ones to write (new, or changed by the join).
pub fn join_all(stored: &[Project], incoming: &[Project]) -> Vec<Project> {
    let mut out: Vec<Project> = Vec::new();
    for p in incoming {
        let base = out
            .iter()
            .find(|q| q.id == p.id)
            .or_else(|| stored.iter().find(|q| q.id == p.id))
            .cloned();
        let joined = match &base {
            Some(b) => join_project(b, p),
            None => p.clone(),
        };
        let before = stored.iter().find(|q| q.id == p.id);
        out.retain(|q| q.id != p.id);
        if before != Some(&joined) {
            out.push(joined);
        }
    }
    out
}
