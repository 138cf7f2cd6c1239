//! The memory pane: the context inspector, the recent N messages as the engine sees them, the
//! summary (when, how much it covers, versions with restore), entities grouped by type (edit,
//! delete), and the entity graph as SVG. Shows progress while memory updates.
//! Must not import `store` or `transport`.

use crate::engine::format::date_time;
use crate::engine::graph_layout::layout;
use crate::engine::model::{EntityNode, EntityType, Role};
use crate::ui::controller::Controller;
use crate::ui::inspector::ContextInspector;
use leptos::prelude::*;

/// The memory pane.
#[component]
pub fn MemoryPane() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let updating = move || {
        let cur = st.current.get();
        st.memory_updating
            .with(|l| cur.is_some_and(|c| l.contains(&c)))
    };
    view! {
        <aside class="memory-pane" data-testid="memory-pane" aria-label="Memory">
            <div class="memory-head">
                <h2>"Memory"</h2>
                <Show when=updating>
                    <span class="progress" role="status" data-testid="memory-updating">
                        <span class="spinner small" aria-hidden="true"></span>" updating memory…"
                    </span>
                </Show>
                <button
                    data-testid="update-memory"
                    aria-label="Update memory now"
                    disabled=move || updating() || st.current.with(|c| c.is_none())
                    on:click=move |_| ctl.update_memory_now()
                >
                    "Update memory now"
                </button>
                <button class="icon memory-close" data-testid="memory-close" aria-label="Close the memory pane" on:click=move |_| st.memory_open.set(false)>"✕"</button>
            </div>
            <Show
                when=move || st.current.with(|c| c.is_some())
                fallback=|| view! { <p class="empty">"Open a conversation to see what Memoire remembers about it."</p> }
            >
                <Failure/>
                <ContextInspector/>
                <Recent/>
                <Summary/>
                <Entities/>
                <Graph/>
            </Show>
        </aside>
    }
}

/// The latest memory update failed: when, why, the raw reply, and a retry.
#[component]
fn Failure() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    move || {
        st.memory.with(|m| m.failure.clone()).map(|f| {
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
                    <button data-testid="memory-retry" on:click=move |_| ctl.update_memory_now()>
                        "Retry memory update"
                    </button>
                </section>
            }
        })
    }
}

#[component]
fn Recent() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    let recent = move || {
        let n = st.settings.with(|s| s.memory.recent_messages);
        st.messages.with(|l| {
            let start = l.len().saturating_sub(n);
            l[start..]
                .iter()
                .map(|m| (m.id.clone(), m.role, m.content.get()))
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

#[component]
fn Summary() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let show_versions = RwSignal::new(false);
    view! {
        <details class="memory-section" data-testid="memory-summary" open>
            <summary>"Summary"</summary>
            {move || match st.memory.with(|m| m.summary.clone()) {
                None => view! { <p class="empty">"No summary yet. It is written after every few exchanges, or now with “Update memory now”."</p> }.into_any(),
                Some(s) => view! {
                    <div class="summary">
                        <p class="summary-text" data-testid="summary-text">{s.text.clone()}</p>
                        <p class="meta" data-testid="summary-meta">
                            "Version " {s.version} " · updated " {date_time(s.updated_at)}
                            " · covers " {s.message_count} " messages (up to #" {s.covers_up_to_seq} ")"
                        </p>
                    </div>
                }.into_any(),
            }}
            <Show when=move || st.memory.with(|m| m.versions.len() > 1)>
                <button class="link" data-testid="summary-versions-toggle"
                    aria-expanded=move || show_versions.get().to_string()
                    on:click=move |_| show_versions.update(|v| *v = !*v)>
                    {move || if show_versions.get() { "Hide earlier versions" } else { "Earlier versions" }}
                </button>
                <Show when=move || show_versions.get()>
                    <ol class="versions" data-testid="summary-versions">
                        <For
                            each=move || st.memory.with(|m| m.versions.iter().rev().skip(1).cloned().collect::<Vec<_>>())
                            key=|v| v.version
                            let:v
                        >
                            <li>
                                <span class="meta">"v" {v.version} " · " {date_time(v.updated_at)}</span>
                                <p>{preview_text(&v.text, 240)}</p>
                                <button data-testid="restore-summary" on:click=move |_| ctl.restore_summary(v.version)>
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

#[component]
fn Entities() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    let groups = move || {
        st.memory.with(|m| {
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
            <summary>"Entities " <span class="count">{move || st.memory.with(|m| m.entities.len())}</span></summary>
            <Show when=move || st.memory.with(|m| m.entities.is_empty())>
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

#[component]
fn EntityCard(
    /// The entity to show and edit.
    entity: EntityNode,
) -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let editing = RwSignal::new(false);
    let name = RwSignal::new(entity.name.clone());
    let description = RwSignal::new(entity.description.clone());
    let names_by_id = move |id: &str| {
        st.memory.with_untracked(|m| {
            m.entities
                .iter()
                .find(|e| e.id == id)
                .map(|e| e.name.clone())
                .unwrap_or_else(|| id.to_string())
        })
    };
    let rels: Vec<(String, String, f32, bool)> = entity
        .relationships
        .iter()
        .map(|r| {
            (
                r.relationship.clone(),
                names_by_id(&r.target_id),
                r.strength,
                r.valid_to.is_some(),
            )
        })
        .collect();
    let props: Vec<(String, String)> = entity.properties.clone().into_iter().collect();
    let sources = entity.source_message_ids.clone();
    let original = entity.clone();
    let save = move |_| {
        let mut e = original.clone();
        e.name = name.get_untracked().trim().to_string();
        e.description = description.get_untracked().trim().to_string();
        editing.set(false);
        if !e.name.is_empty() {
            ctl.save_entity(e);
        }
    };
    let id_del = entity.id.clone();
    let cancel_name = StoredValue::new(entity.name.clone());
    let cancel_description = StoredValue::new(entity.description.clone());
    let conv = st.current.get_untracked().unwrap_or_default();
    view! {
        <div class="entity-node" data-testid="entity-node" data-entity-type=entity.entity_type.as_str() data-entity-id=entity.id.clone()>
            <Show
                when=move || editing.get()
                fallback=move || view! {
                    <div class="entity-name" data-testid="entity-name">{move || name.get()}</div>
                    <p class="entity-description" data-testid="entity-description">{move || description.get()}</p>
                }
            >
                <input data-testid="entity-name-input" aria-label="Entity name" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
                <textarea data-testid="entity-description-input" aria-label="Entity description" prop:value=move || description.get() on:input=move |ev| description.set(event_target_value(&ev))></textarea>
                <button class="primary" data-testid="entity-save" on:click=save.clone()>"Save"</button>
                <button data-testid="entity-cancel" on:click=move |_| {
                    name.set(cancel_name.get_value());
                    description.set(cancel_description.get_value());
                    editing.set(false);
                }>"Cancel"</button>
            </Show>
            {(!entity.aliases.is_empty()).then(|| view! { <p class="aliases">"also: " {entity.aliases.join(", ")}</p> })}
            {(!props.is_empty()).then(|| view! {
                <dl class="props">
                    {props.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}
                </dl>
            })}
            {(!rels.is_empty()).then(|| view! {
                <ul class="rels">
                    {rels.into_iter().map(|(rel, target, strength, closed)| view! {
                        <li class:closed=closed data-testid="entity-relationship">
                            {rel} " → " {target}
                            <span class="strength" title="strength">{format!(" {:.0}%", strength * 100.0)}</span>
                            {closed.then_some(" (no longer true)")}
                        </li>
                    }).collect_view()}
                </ul>
            })}
            {(!sources.is_empty()).then(|| {
                let conv = conv.clone();
                view! {
                    <p class="sources">"from "
                        {sources.into_iter().take(8).enumerate().map(|(i, id)| {
                            let conv = conv.clone();
                            let target = id.clone();
                            view! {
                                <button class="link" title="Show the source message" on:click=move |_| ctl.open(conv.clone(), Some(target.clone()))>
                                    {format!("#{}", i + 1)}
                                </button>
                            }
                        }).collect_view()}
                    </p>
                }
            })}
            <div class="entity-actions">
                <button class="link" data-testid="entity-edit" aria-label=format!("Edit {}", entity.name) on:click=move |_| editing.set(true)>"Edit"</button>
                <button class="link danger" data-testid="entity-delete" aria-label=format!("Delete {}", entity.name) on:click=move |_| ctl.delete_entity(id_del.clone())>"Delete"</button>
            </div>
        </div>
    }
}

#[component]
fn Graph() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    let drawing = move || st.memory.with(|m| layout(&m.entities, 320.0, 40));
    view! {
        <details class="memory-section" open>
            <summary>"Graph"</summary>
            {move || {
                let l = drawing();
                if l.nodes.is_empty() {
                    return view! { <p class="empty">"The graph appears once there are entities."</p> }.into_any();
                }
                view! {
                    <svg class="entity-graph" data-testid="entity-graph" viewBox=format!("0 0 {} {}", l.width, l.height)
                        role="img" aria-label="Entity relationship graph">
                        {l.edges.into_iter().map(|e| view! {
                            <line x1=e.from.0 y1=e.from.1 x2=e.to.0 y2=e.to.1
                                class="edge" data-testid="graph-edge" stroke-width=0.5 + 3.0 * e.strength stroke-opacity=0.3 + 0.6 * e.strength>
                                <title>{e.label}</title>
                            </line>
                        }).collect_view()}
                        {l.nodes.into_iter().map(|n| view! {
                            <g class=format!("node type-{}", n.entity_type.as_str()) data-testid="graph-node" data-entity-type=n.entity_type.as_str()>
                                <circle cx=n.x cy=n.y r="7"><title>{format!("{} ({})", n.name, n.entity_type.as_str())}</title></circle>
                                <text x=n.x y=n.y + 18.0 text-anchor="middle">{preview_text(&n.name, 18)}</text>
                            </g>
                        }).collect_view()}
                    </svg>
                }.into_any()
            }}
        </details>
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
