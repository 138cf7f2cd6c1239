//! Projects in the sidebar: the list (`project-item`, each opening its panel and filtering the
//! conversation list to its conversations), New project (`new-project`, then a name), the open
//! project's panel (its name, its instructions `project-instructions`, New inside it, Delete), and
//! the picker that moves a conversation in or out of a project. The panel is behind split point
//! `project_panel` (a wasm chunk fetched on the first opening). Its store (`store`) owns the
//! projects and the open one. Must not import `crate::store` or `crate::transport`.

pub mod store;

use crate::engine::model::Project;
use crate::session::{ErrorKind, ProjectsError};
use crate::ui::lazy::{lazy, Built};
use crate::ui::stores::{use_projects, use_shell, use_stores};
use leptos::prelude::*;

/// The sidebar's projects: heading, New project, the list and the open project's panel.
#[component]
pub fn ProjectsSection() -> impl IntoView {
    let projects = use_projects();
    let naming = RwSignal::new(false);
    view! {
        <section class="projects" aria-label="Projects">
            <div class="projects-head">
                <span class="projects-title">"Projects"</span>
                <button data-testid="new-project" aria-label="New project"
                    title="Group conversations with their own instructions and memory"
                    on:click=move |_| naming.set(true)>"+ Project"</button>
            </div>
            <Show when=move || naming.get()>
                <NewProjectName naming=naming/>
            </Show>
            <ul class="project-list" role="list">
                <For each=move || projects.listed() key=|p| (p.id.clone(), p.name.clone()) let:p>
                    <ProjectItem project=p/>
                </For>
            </ul>
            <ProjectPanel/>
        </section>
    }
}

/// The name field of a new project: Enter creates it, Esc (or an empty name) cancels.
#[component]
fn NewProjectName(
    /// Turned off once created or cancelled.
    naming: RwSignal<bool>,
) -> impl IntoView {
    let projects = use_projects();
    let name = RwSignal::new(String::new());
    let input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(el) = input.get() {
            let _ = el.focus();
        }
    });
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" => {
            ev.prevent_default();
            let n = name.get_untracked();
            naming.set(false);
            if !n.trim().is_empty() {
                projects.create(n);
            }
        }
        "Escape" => {
            ev.prevent_default();
            ev.stop_propagation();
            naming.set(false);
        }
        _ => {}
    };
    view! {
        <input class="rename-input" data-testid="new-project-name" node_ref=input
            aria-label="Name of the new project (Enter creates, Esc cancels)" placeholder="Project name"
            prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))
            on:keydown=on_key/>
    }
}

/// One project of the list: opens (or closes) its panel, and filters the list to it.
#[component]
fn ProjectItem(
    /// The project shown.
    project: Project,
) -> impl IntoView {
    let projects = use_projects();
    let id = StoredValue::new(project.id.clone());
    let is_open = move || projects.open_id().as_deref() == Some(id.get_value().as_str());
    view! {
        <li class="project-item" class:current=is_open data-testid="project-item"
            data-project-id=project.id.clone()>
            <button class="open" aria-expanded=move || is_open().to_string()
                aria-label=format!("Project {}: show its conversations and instructions", project.name)
                on:click=move |_| projects.open((!is_open()).then(|| id.get_value()))>
                <span class="title">"📁 "{project.name.clone()}</span>
            </button>
        </li>
    }
}

/// The open project's panel: name, instructions, New inside it, Delete, Close. Behind split point
/// `project_panel`: the first opening fetches that chunk; one that cannot be fetched closes the
/// panel and the banner says so (`ProjectsError::Unavailable`).
#[component]
fn ProjectPanel() -> impl IntoView {
    let (projects, shell) = (use_projects(), use_shell());
    lazy(
        move || projects.open_id().is_some(),
        panel_split,
        panel_placeholder,
        move |e: ProjectsError| {
            projects.open(None);
            shell.fail(e.to_string(), ErrorKind::Other);
        },
    )
}

/// Split point `project_panel`: the panel and what only it reaches.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(project_panel, fallible, return_wrapper(let panel = _; { panel.await } -> Result<Built, ProjectsError>)))]
fn panel_split() -> std::future::Ready<Result<Built, ProjectsError>> {
    std::future::ready(Ok(panel_view))
}

fn panel_view() -> AnyView {
    let projects = use_projects();
    (move || {
        projects
            .opened()
            .map(|p| view! { <ProjectDetails project=p/> })
    })
    .into_any()
}

/// The panel's box while its chunk is fetched.
fn panel_placeholder() -> AnyView {
    view! { <div class="project-panel project-panel-loading" aria-busy="true"></div> }.into_any()
}

/// The editable parts of the open project (re-mounted when another project opens or it changes).
#[component]
fn ProjectDetails(
    /// The open project.
    project: Project,
) -> impl IntoView {
    let projects = use_projects();
    let stores = use_stores();
    let id = StoredValue::new(project.id.clone());
    let name = RwSignal::new(project.name.clone());
    let text = RwSignal::new(project.instructions.clone());
    let saved = StoredValue::new(project.instructions.clone());
    let confirming = RwSignal::new(false);
    let save = move || {
        let t = text.get_untracked();
        if t.trim() != saved.get_value().trim() {
            saved.set_value(t.clone());
            projects.set_instructions(id.get_value(), t);
        }
    };
    let old_name = project.name.clone();
    let rename = move || {
        let n = name.get_untracked();
        if !n.trim().is_empty() && n.trim() != old_name {
            projects.rename(id.get_value(), n);
        }
    };
    view! {
        <div class="project-panel" data-testid="project-panel" data-project-id=project.id.clone()>
            <input class="project-name" data-testid="project-name" aria-label="Project name"
                prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))
                on:change=move |_| rename()/>
            <label class="field">
                "Instructions (added after the system prompt in this project's conversations)"
                <textarea data-testid="project-instructions" rows="4"
                    prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))
                    on:blur=move |_| save()></textarea>
            </label>
            <div class="project-actions">
                <button data-testid="project-instructions-save" on:click=move |_| save()>"Save"</button>
                <button class="primary" data-testid="project-new-conversation"
                    on:click=move |_| stores.new_chat(Some(id.get_value()))>"+ New in project"</button>
                <Show when=move || confirming.get() fallback=move || view! {
                    <button data-testid="project-delete" on:click=move |_| confirming.set(true)>"Delete project"</button>
                }>
                    <span class="confirm" role="alertdialog" aria-label="Confirm delete">
                        "Its conversations stay, outside any project. "
                        <button class="danger" data-testid="project-delete-confirm"
                            on:click=move |_| projects.delete(id.get_value())>"Delete"</button>
                        <button on:click=move |_| confirming.set(false)>"Keep"</button>
                    </span>
                </Show>
                <button data-testid="project-close" on:click=move |_| projects.open(None)>"Close"</button>
            </div>
        </div>
    }
}

/// The picker that moves conversation `id` (now in `current`) into a project or out of any;
/// nothing while there is no project.
#[component]
pub fn ProjectPicker(
    /// The conversation moved.
    id: String,
    /// Its project now.
    current: Option<String>,
) -> impl IntoView {
    let projects = use_projects();
    let id = StoredValue::new(id);
    let current = StoredValue::new(current);
    view! {
        <Show when=move || projects.any_listed()>
            <select class="move-project" data-testid="conversation-project"
                aria-label="Project of this conversation" title="Move to a project"
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    projects.move_conversation(id.get_value(), (!v.is_empty()).then_some(v));
                }>
                <option value="" selected=current.get_value().is_none()>"No project"</option>
                <For each=move || projects.listed() key=|p| (p.id.clone(), p.name.clone()) let:p>
                    <option value=p.id.clone()
                        selected=current.get_value().as_deref() == Some(p.id.as_str())>{p.name.clone()}</option>
                </For>
            </select>
        </Show>
    }
}
