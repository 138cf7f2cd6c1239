//! The context inspector, behind "What the model receives" (closed until opened; remembered): exactly what the next request will contain — each section with its token
//! count (the facts about the user and the passages of other conversations each with the day and
//! the conversation they were said in, a link to the message), the messages dropped and why, the history format, the budget, the reply cap, and whether the turn will
//! resume the agent's session or re-inject the context (the chat store's preview). Must not import
//! `crate::store` or `crate::transport`.

use crate::session::PreviewSource;
use crate::ui::prefs;
use crate::ui::stores::{use_chat, use_library, use_stores};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The context inspector.
#[component]
pub fn ContextInspector() -> impl IntoView {
    let chat = use_chat();
    // Closed until the user opens it (remembered in this browser): the pane leads with memory.
    let open = prefs::inspector().unwrap_or(false);
    let toggled = move |ev: leptos::ev::Event| {
        if let Some(d) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        {
            prefs::remember_inspector(d.has_attribute("open"));
        }
    };
    view! {
        <details class="memory-section" data-testid="context-inspector" open=open on:toggle=toggled>
            <summary data-testid="inspector-toggle">"What the model receives"</summary>
            {move || match chat.with_preview(Clone::clone) {
                None => view! { <p class="empty"><span class="spinner small" aria-hidden="true"></span>" Working out the next request…"</p> }.into_any(),
                Some(p) => {
                    let over = p.over_budget;
                    view! {
                        <div class="inspector">
                            <p class="plan" data-testid="inspector-plan" data-path=p.path.as_str()>
                                {p.path_explanation.clone()}
                            </p>
                            <table class="sections">
                                <thead><tr><th>"Section"</th><th class="num">"Tokens"</th></tr></thead>
                                <tbody>
                                    {p.sections.iter().map(|s| {
                                        let sources: Vec<PreviewSource> = p.sources.iter().filter(|x| x.section == s.key).cloned().collect();
                                        view! {
                                            <tr data-testid="inspector-section" data-section=s.key.clone() data-tokens=s.tokens>
                                                <td>{s.label.clone()} {(!s.detail.is_empty()).then(|| view! { <span class="detail">" · " {s.detail.clone()}</span> })}</td>
                                                <td class="num">{s.tokens}</td>
                                            </tr>
                                            {(!sources.is_empty()).then(|| view! { <SourceRows sources=sources/> })}
                                        }
                                    }).collect_view()}
                                </tbody>
                                <tfoot>
                                    <tr class:over=over>
                                        <td>"Total of " {p.budget} " budget"</td>
                                        <td class="num" data-testid="inspector-total" data-tokens=p.total_tokens>{p.total_tokens}</td>
                                    </tr>
                                </tfoot>
                            </table>
                            <p class="meta">
                                "Format: " <b data-testid="inspector-format">{p.format.clone()}</b>
                                " · protocol " {p.protocol.clone()}
                                " · " {crate::engine::format::bytes(p.request_bytes as u64)}
                                " · " <span data-testid="inspector-reply-cap" data-tokens=p.reply_cap>
                                    "reply cap " {crate::engine::format::count(u64::from(p.reply_cap))} " tokens"
                                </span>
                                {p.server_window.map(|w| view! {
                                    " · " <span data-testid="inspector-server-window" data-tokens=w>
                                        "the server holds " {crate::engine::format::count(u64::from(w))} " tokens"
                                    </span>
                                })}
                            </p>
                            {over.then(|| view! { <p class="warn">"Over budget: the oldest history was left out (see below)."</p> })}
                            {(!p.dropped.is_empty()).then(|| {
                                let n = p.dropped.len();
                                view! {
                                    <details class="dropped" data-testid="inspector-dropped">
                                        <summary>{crate::engine::format::plural(n, "message left out", "messages left out")}</summary>
                                        <ul>
                                            {p.dropped.iter().take(200).map(|d| view! {
                                                <li data-testid="inspector-dropped-item" data-seq=d.seq><span class="seq">"#" {d.seq}</span> " " {d.reason.clone()}</li>
                                            }).collect_view()}
                                        </ul>
                                    </details>
                                }
                            })}
                        </div>
                    }.into_any()
                }
            }}
        </details>
    }
}

/// Where each fact about the user and each passage of another conversation in the next request
/// came from: its text, the day, the conversation (a link that opens the message).
#[component]
fn SourceRows(
    /// The section's sources, in prompt order.
    sources: Vec<PreviewSource>,
) -> impl IntoView {
    let (stores, library) = (use_stores(), use_library());
    view! {
        <tr class="sources"><td colspan="2"><ul>
            {sources.into_iter().map(|x| {
                let title = x.title.clone().or_else(|| {
                    x.conversation_id.as_deref().and_then(|c| library.record(c)).map(|c| c.title)
                });
                let place = match (&x.conversation_id, title) {
                    (None, _) => "added by you".to_string(),
                    (Some(_), Some(t)) if !t.trim().is_empty() => format!("in “{t}”"),
                    (Some(_), _) => "in another conversation".to_string(),
                };
                let open = x.conversation_id.clone().zip(x.message_id.clone());
                view! {
                    <li data-testid="inspector-source" data-section=x.section.clone()>
                        <span class="text">{x.text.clone()}</span>
                        <span class="detail">" · " {x.said.clone()} " · "</span>
                        {match open {
                            Some((c, m)) => view! {
                                <button class="link" data-testid="inspector-source-open"
                                    title="Open the message it was said in"
                                    on:click=move |_| stores.open(c.clone(), Some(m.clone()))>{place}</button>
                            }.into_any(),
                            None => view! { <span class="detail">{place}</span> }.into_any(),
                        }}
                    </li>
                }
            }).collect_view()}
        </ul></td></tr>
    }
}
