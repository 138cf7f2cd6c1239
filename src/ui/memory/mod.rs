//! The memory pane, a panel the user opens and closes on every width: first what is remembered, the
//! summary (when, how much it covers, versions with restore) sentence by sentence, entities grouped
//! by type (edit, delete) with their properties and relationships, the facts about the user once
//! there are any (`facts`), and the entity graph as SVG; then
//! the recent N messages as the engine sees them, and the context inspector behind "What the model
//! receives". A
//! fact that no longer holds (the engine says which: `engine::memory::shown`) is struck through,
//! with its days and "no longer true" for screen readers. Shows progress while memory updates. Its
//! store (`store`) owns the memory shown, the updates running and memory builds. Must not import
//! `crate::store` or `crate::transport`.

pub mod build;
pub mod facts;
pub mod inspector;
pub mod store;

use crate::engine::format::{date_time, plural};
use crate::engine::graph_layout::layout;
use crate::engine::memory::shown::{
    entity_properties, entity_relationships, summary_sentences, Status, PAST_LABEL,
};
use crate::engine::model::{EntityNode, EntityType, MessageStatus, Role};
use crate::session::MemoryError;
use crate::ui::about::{MemoryPageOpen, UseUserMemory};
use crate::ui::lazy::{lazy, Built};
use crate::ui::stores::{use_chat, use_memory, use_messages, use_shell, use_stores};
use build::BuildThis;
use facts::AboutYouFacts;
use inspector::ContextInspector;
use leptos::prelude::*;

/// The memory pane.
#[component]
pub fn MemoryPane() -> impl IntoView {
    let memory = use_memory();
    let shell = use_shell();
    let chat = use_chat();
    // A temporary chat has no memory to show or update: only what its next request carries.
    let stored = move || chat.has_current() && !chat.is_temporary();
    let updating = move || memory.updating();
    provide_context(SelectedEntity(RwSignal::new(None)));
    view! {
        <aside class="memory-pane" data-testid="memory-pane" aria-label="Memory">
            <div class="memory-head">
                <h2>"Memory"</h2>
                // The close button stays beside the title; the actions take the row below it.
                <button class="icon memory-close" data-testid="memory-close" aria-label="Close the memory panel" on:click=move |_| shell.close_memory_pane()>"✕"</button>
                <div class="memory-actions">
                    <Show when=updating>
                        <span class="progress" role="status" data-testid="memory-updating">
                            <span class="spinner small" aria-hidden="true"></span>" updating memory…"
                        </span>
                    </Show>
                    <button
                        data-testid="update-memory"
                        aria-label="Update memory now"
                        disabled=move || updating() || !stored()
                        on:click=move |_| memory.update_now()
                    >
                        "Update memory now"
                    </button>
                    <BuildThis/>
                    <MemoryPageOpen testid="memory-page-open"/>
                </div>
            </div>
            <UseUserMemory/>
            // Not on the first screen (a drawer on narrow screens): mounted once the page is idle
            // after it, from its chunk (split point `memory_pane`).
            {lazy(
                move || shell.settled(),
                pane_split,
                pane_placeholder,
                move |e: MemoryError| shell.fail(e.to_string(), e.kind()),
            )}
        </aside>
    }
}

/// Split point `memory_pane`: the pane's body (summary, entities, facts, graph, recent messages,
/// the context inspector) and what only it reaches; a chunk that cannot be fetched is
/// [`MemoryError::Unavailable`] in the banner, and the next showing tries again.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory_pane, fallible, return_wrapper(let body = _; { body.await } -> Result<Built, MemoryError>)))]
fn pane_split() -> std::future::Ready<Result<Built, MemoryError>> {
    std::future::ready(Ok(pane_body))
}

/// While the body's chunk is fetched: nothing drawn, as before the page was idle.
fn pane_placeholder() -> AnyView {
    view! { <div class="memory-body-loading" aria-busy="true"></div> }.into_any()
}

fn pane_body() -> AnyView {
    let chat = use_chat();
    let stored = move || chat.has_current() && !chat.is_temporary();
    view! {
        <Show
            when=stored
            fallback=move || view! {
                <p class="empty">{move || if chat.is_temporary() {
                    "A temporary chat: nothing of it is saved, and it updates no memory."
                } else {
                    "A new chat: its memory starts with its first message."
                }}</p>
                <ContextInspector/>
            }
        >
            <Failure/>
            <Summary/>
            <Entities/>
            <AboutYouFacts/>
            <Graph/>
            <Recent/>
            <ContextInspector/>
        </Show>
    }
    .into_any()
}

/// The latest memory update failed: when, why, the raw reply, and a retry.
#[component]
fn Failure() -> impl IntoView {
    let memory = use_memory();
    move || {
        memory.with_view(|m| m.failure.clone()).map(|f| {
            let raw = f.raw_reply.clone();
            let has_raw = !raw.trim().is_empty();
            view! {
                <section class="memory-failure" role="alert" data-testid="memory-failure">
                    <p class="why">
                        <strong>"The last memory update failed"</strong>
                        " (" {date_time(f.at)} "); the memory below is the one from before. "
                        <span data-testid="memory-failure-reason">{f.reason.clone()}</span>
                    </p>
                    <p class="meta">"Asked for: " {f.form.label()}</p>
                    {has_raw.then(|| view! {
                        <details data-testid="memory-failure-raw">
                            <summary>"What the model replied"</summary>
                            <pre>{raw}</pre>
                        </details>
                    })}
                    <button data-testid="memory-retry" on:click=move |_| memory.update_now()>
                        "Retry memory update"
                    </button>
                </section>
            }
        })
    }
}

/// The last N messages as the engine sends them, N as set for this conversation.
#[component]
fn Recent() -> impl IntoView {
    let messages = use_messages();
    let stores = use_stores();
    let recent = move || {
        let n = stores.memory_config().recent_messages;
        messages.with_messages(|l| {
            // A reply that failed before saying anything is never sent: it is not shown here.
            let sent: Vec<_> = l
                .iter()
                .filter(|m| {
                    let st = m.state();
                    !(st.status() == MessageStatus::Error
                        && st.with_content(|c| c.trim().is_empty()))
                })
                .collect();
            let start = sent.len().saturating_sub(n);
            sent[start..]
                .iter()
                .map(|m| (m.id.clone(), m.role, m.state().content()))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <details class="memory-section" data-testid="memory-recent" open>
            <summary>"Recent messages " <span class="count">{move || recent().len()}</span></summary>
            <ol class="recent">
                <For each=recent key=|(id, _, c)| (id.clone(), c.len()) let:item>
                    <li class=format!("role-{}", item.1.as_str()) data-testid="recent-message">
                        <b>{if item.1 == Role::User { "You: " } else { "Agent: " }}</b>
                        {preview_text(&item.2, 160)}
                    </li>
                </For>
            </ol>
        </details>
    }
}

/// The summary in force, sentence by sentence, and its earlier versions to restore.
#[component]
fn Summary() -> impl IntoView {
    let memory = use_memory();
    let show_versions = RwSignal::new(false);
    view! {
        <details class="memory-section" data-testid="memory-summary" open>
            <summary>"Summary"</summary>
            {move || match memory.with_view(|m| m.summary.clone()) {
                None => view! { <p class="empty">"No summary yet. It is written after every few exchanges, or now with “Update memory now”."</p> }.into_any(),
                Some(s) => view! {
                    <div class="summary">
                        <p class="summary-text" data-testid="summary-text">
                            {summary_sentences(&s.text).into_iter().enumerate().map(|(i, f)| {
                                let gap = match (i, f.new_line) { (0, _) => "", (_, true) => "\n", _ => " " };
                                view! { {gap}<Fact text=f.text status=f.status dates=f.dates testid="summary-sentence"/> }
                            }).collect_view()}
                        </p>
                        <p class="meta" data-testid="summary-meta">
                            "Version " {s.version} " · updated " {date_time(s.updated_at)}
                            " · covers " {plural(s.message_count as usize, "message", "messages")} " (up to #" {s.covers_up_to_seq} ")"
                        </p>
                    </div>
                }.into_any(),
            }}
            <Show when=move || memory.with_view(|m| m.versions.len() > 1)>
                <button class="link" data-testid="summary-versions-toggle"
                    aria-expanded=move || show_versions.get().to_string()
                    on:click=move |_| show_versions.update(|v| *v = !*v)>
                    {move || if show_versions.get() { "Hide earlier versions" } else { "Earlier versions" }}
                </button>
                <Show when=move || show_versions.get()>
                    <ol class="versions" data-testid="summary-versions">
                        <For
                            each=move || memory.with_view(|m| m.versions.iter().rev().skip(1).cloned().collect::<Vec<_>>())
                            key=|v| v.version
                            let:v
                        >
                            <li>
                                <span class="meta">"v" {v.version} " · " {date_time(v.updated_at)}</span>
                                <p>{preview_text(&v.text, 240)}</p>
                                <button data-testid="restore-summary" on:click=move |_| memory.restore_summary(v.version)>
                                    "Restore this version"
                                </button>
                            </li>
                        </For>
                    </ol>
                </Show>
            </Show>
        </details>
    }
}

/// The entities, grouped by type.
#[component]
fn Entities() -> impl IntoView {
    let memory = use_memory();
    let groups = move || {
        memory.with_view(|m| {
            EntityType::ALL
                .iter()
                .map(|t| {
                    let mut list: Vec<EntityNode> = m
                        .entities
                        .iter()
                        .filter(|e| e.entity_type == *t)
                        .cloned()
                        .collect();
                    crate::engine::sort::sort_by_key(&mut list, |e| e.name.to_lowercase());
                    (*t, list)
                })
                .filter(|(_, l)| !l.is_empty())
                .collect::<Vec<_>>()
        })
    };
    view! {
        <details class="memory-section" data-testid="memory-entities" open>
            <summary>"Entities " <span class="count">{move || memory.with_view(|m| m.entities.len())}</span></summary>
            <Show when=move || memory.with_view(|m| m.entities.is_empty())>
                <p class="empty">"No entities yet: people, places, concepts, events and tasks appear here as the conversation goes on."</p>
            </Show>
            <For each=groups key=|(t, l)| (*t, l.iter().map(|e| (e.id.clone(), e.updated_at, e.name.clone(), e.description.clone())).collect::<Vec<_>>()) let:group>
                <section class="entity-group" data-testid="entity-group" data-entity-type=group.0.as_str()>
                    <h3>{type_label(group.0)}</h3>
                    <For each=move || group.1.clone() key=|e| (e.id.clone(), e.updated_at, e.description.clone(), e.name.clone()) let:e>
                        <EntityCard entity=e/>
                    </For>
                </section>
            </For>
        </details>
    }
}

/// One entity: its name and description (or their editor), details, Edit and Delete.
#[component]
fn EntityCard(
    /// The entity to show and edit.
    entity: EntityNode,
) -> impl IntoView {
    let memory = use_memory();
    let selected = expect_context::<SelectedEntity>().0;
    let editing = RwSignal::new(false);
    let card = NodeRef::<leptos::html::Div>::new();
    let id = entity.id.clone();
    let is_selected = move || selected.with(|s| s.as_deref() == Some(id.as_str()));
    // Chosen in the graph: brought into view.
    Effect::new({
        let is_selected = is_selected.clone();
        move |_| {
            if is_selected() {
                if let Some(el) = card.get_untracked() {
                    el.scroll_into_view();
                }
            }
        }
    });
    let id_del = entity.id.clone();
    let name = entity.name.clone();
    let (entity_type, entity_id) = (entity.entity_type.as_str(), entity.id.clone());
    let for_editor = entity.clone();
    view! {
        <div class="entity-node" data-testid="entity-node" node_ref=card class:selected=is_selected
            data-entity-type=entity_type data-entity-id=entity_id>
            <Show
                when=move || editing.get()
                fallback={
                    let e = entity.clone();
                    move || view! {
                        <div class="entity-name" data-testid="entity-name">{e.name.clone()}</div>
                        <p class="entity-description" data-testid="entity-description">{e.description.clone()}</p>
                    }
                }
            >
                <EntityEditor entity=for_editor.clone() editing=editing/>
            </Show>
            <EntityDetails entity=entity.clone()/>
            <div class="entity-actions">
                <button class="link" data-testid="entity-edit" aria-label=format!("Edit {name}") on:click=move |_| editing.set(true)>"Edit"</button>
                <button class="link danger" data-testid="entity-delete" aria-label=format!("Delete {name}") on:click=move |_| memory.delete_entity(id_del.clone())>"Delete"</button>
            </div>
        </div>
    }
}

/// The entity chosen in the graph (its card is highlighted and brought into view).
#[derive(Clone, Copy)]
struct SelectedEntity(RwSignal<Option<String>>);

/// Name and description fields; Save stores the edit, Cancel drops it.
#[component]
fn EntityEditor(
    /// The entity being edited.
    entity: EntityNode,
    /// True while the editor is shown; Save and Cancel turn it off.
    editing: RwSignal<bool>,
) -> impl IntoView {
    let memory = use_memory();
    let name = RwSignal::new(entity.name.clone());
    let description = RwSignal::new(entity.description.clone());
    let save = move |_| {
        let mut e = entity.clone();
        e.name = name.get_untracked().trim().to_string();
        e.description = description.get_untracked().trim().to_string();
        editing.set(false);
        if !e.name.is_empty() {
            memory.save_entity(e);
        }
    };
    view! {
        <input data-testid="entity-name-input" aria-label="Entity name" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
        <textarea data-testid="entity-description-input" aria-label="Entity description" prop:value=move || description.get() on:input=move |ev| description.set(event_target_value(&ev))></textarea>
        <button class="primary" data-testid="entity-save" on:click=save>"Save"</button>
        <button data-testid="entity-cancel" on:click=move |_| editing.set(false)>"Cancel"</button>
    }
}

/// Aliases, properties, relationships and the messages the entity came from.
#[component]
fn EntityDetails(
    /// The entity described.
    entity: EntityNode,
) -> impl IntoView {
    let chat = use_chat();
    let stores = use_stores();
    let memory = use_memory();
    let name_of = move |id: &str| {
        untrack(|| {
            memory.with_view(|m| {
                m.entities
                    .iter()
                    .find(|e| e.id == id)
                    .map(|e| e.name.clone())
                    .unwrap_or_else(|| id.to_string())
            })
        })
    };
    let rels: Vec<_> = entity_relationships(&entity)
        .into_iter()
        .map(|r| (name_of(&r.target_id), r))
        .collect();
    let props = entity_properties(&entity);
    let conv = untrack(|| chat.current()).unwrap_or_default();
    let sources: Vec<String> = entity.source_message_ids.iter().take(8).cloned().collect();
    view! {
        {(!entity.aliases.is_empty()).then(|| view! { <p class="aliases">"also: " {entity.aliases.join(", ")}</p> })}
        {(!props.is_empty()).then(|| view! {
            <dl class="props">
                {props.into_iter().map(|p| {
                    let past = p.status == Status::Past;
                    view! {
                        <div class="prop" class:past=past data-testid="entity-property" data-status=p.status.as_str()>
                            <dt>{p.key}</dt>
                            <dd><Fact text=p.value status=p.status dates=p.dates/></dd>
                        </div>
                    }
                }).collect_view()}
            </dl>
        })}
        {(!rels.is_empty()).then(|| view! {
            <ul class="rels">
                {rels.into_iter().map(|(target, r)| view! {
                    <li class:past=r.status == Status::Past data-testid="entity-relationship" data-status=r.status.as_str()>
                        <Fact text=format!("{} → {}", r.relationship, target) status=r.status/>
                        <span class="strength" title="strength">{format!(" {:.0}%", r.strength * 100.0)}</span>
                        {(!r.dates.is_empty()).then(|| view! { " " <span class="fact-dates">{format!("({})", r.dates)}</span> })}
                    </li>
                }).collect_view()}
            </ul>
        })}
        {(!sources.is_empty()).then(|| view! {
            <p class="sources">"from "
                {sources.into_iter().enumerate().map(|(i, target)| {
                    let conv = conv.clone();
                    view! {
                        <button class="link" title="Show the source message" on:click=move |_| stores.open(conv.clone(), Some(target.clone()))>
                            {format!("message {}", i + 1)}
                        </button>
                    }
                }).collect_view()}
            </p>
        })}
    }
}

/// One fact as the engine judged it: a current one as it is; a past one struck through, with
/// "no longer true" for screen readers; then its days, when known.
#[component]
fn Fact(
    /// The fact's text.
    text: String,
    /// Current or past (`data-status` when `testid` is set).
    status: Status,
    /// When it held, readable; empty (or left out): not shown.
    #[prop(optional)]
    dates: String,
    /// The element's `data-testid`; left out: the caller's element carries the status.
    #[prop(optional)]
    testid: &'static str,
) -> impl IntoView {
    let past = status == Status::Past;
    let body = if past {
        view! { <s>{text}</s><span class="visually-hidden">{format!(" ({PAST_LABEL})")}</span> }
            .into_any()
    } else {
        text.into_any()
    };
    let dates = (!dates.is_empty())
        .then(|| view! { " " <span class="fact-dates">{format!("({dates})")}</span> });
    if testid.is_empty() {
        view! { <span class="fact" class:past=past>{body}{dates}</span> }.into_any()
    } else {
        view! { <span class="fact" class:past=past data-testid=testid data-status=status.as_str()>{body}{dates}</span> }.into_any()
    }
}

/// Room around the circle of nodes for their labels, so none is cut at the edges.
const GRAPH_MARGIN: f32 = 80.0;

/// The entity graph as SVG; a node chosen selects its card.
#[component]
fn Graph() -> impl IntoView {
    let memory = use_memory();
    let selected = expect_context::<SelectedEntity>().0;
    let drawing = move || memory.with_view(|m| layout(&m.entities, 320.0, 40));
    view! {
        <details class="memory-section" data-testid="memory-graph" open>
            <summary>"Graph"</summary>
            {move || {
                let l = drawing();
                if l.nodes.is_empty() {
                    return view! { <p class="empty">"The graph appears once there are entities."</p> }.into_any();
                }
                let m = GRAPH_MARGIN;
                view! {
                    <svg class="entity-graph" data-testid="entity-graph"
                        viewBox=format!("{} {} {} {}", -m, -m / 2.0, l.width + 2.0 * m, l.height + m)
                        role="group" aria-label="Entity relationship graph">
                        {l.edges.into_iter().map(|e| view! {
                            <g class="edge-group">
                                <line x1=e.from.0 y1=e.from.1 x2=e.to.0 y2=e.to.1
                                    class="edge" data-testid="graph-edge" stroke-width=0.5 + 3.0 * e.strength stroke-opacity=0.3 + 0.6 * e.strength>
                                    <title>{e.label.clone()}</title>
                                </line>
                                <text class="edge-label" data-testid="graph-edge-label" text-anchor="middle"
                                    x=(e.from.0 + e.to.0) / 2.0 y=(e.from.1 + e.to.1) / 2.0 - 3.0>{preview_text(&e.label, 16)}</text>
                            </g>
                        }).collect_view()}
                        {l.nodes.into_iter().map(|n| {
                            let id = n.id.clone();
                            let key_id = n.id.clone();
                            view! {
                                <g class=format!("node type-{}", n.entity_type.as_str()) data-testid="graph-node"
                                    data-entity-type=n.entity_type.as_str() data-entity-id=n.id.clone()
                                    role="button" tabindex="0" aria-label=format!("Show {}", n.name)
                                    on:click=move |_| selected.set(Some(id.clone()))
                                    on:keydown=move |ev| if matches!(ev.key().as_str(), "Enter" | " ") {
                                        ev.prevent_default();
                                        selected.set(Some(key_id.clone()));
                                    }>
                                    <circle cx=n.x cy=n.y r="7"><title>{format!("{} ({})", n.name, n.entity_type.as_str())}</title></circle>
                                    <text x=n.x y=n.y + 18.0 text-anchor="middle">{preview_text(&n.name, 18)}</text>
                                </g>
                            }
                        }).collect_view()}
                    </svg>
                    <GraphLegend/>
                }.into_any()
            }}
        </details>
    }
}

/// What the node colours mean, for the types the graph shows.
#[component]
fn GraphLegend() -> impl IntoView {
    let memory = use_memory();
    let types = move || {
        memory.with_view(|m| {
            EntityType::ALL
                .iter()
                .copied()
                .filter(|t| m.entities.iter().any(|e| e.entity_type == *t))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <ul class="graph-legend" data-testid="graph-legend">
            {move || types().into_iter().map(|t| view! {
                <li class=format!("type-{}", t.as_str())><span class="dot" aria-hidden="true"></span>{type_label(t)}</li>
            }).collect_view()}
        </ul>
    }
}

fn type_label(t: EntityType) -> &'static str {
    match t {
        EntityType::Person => "People",
        EntityType::Place => "Places",
        EntityType::Concept => "Concepts",
        EntityType::Event => "Events",
        EntityType::Task => "Tasks",
        EntityType::Other => "Other",
    }
}

/// The first `max` characters, with an ellipsis when cut.
fn preview_text(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}
