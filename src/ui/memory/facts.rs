//! The memory pane's facts about the user: once there are any, what Memoire knows of the user that
//! this conversation's prompts may carry (about you, and its project's), who they are first
//! (`engine::memory::user::facts_for_pane` decides), each with the day it was said; the rest are on
//! the Memory page ("About you"), and a line says when this conversation sends none of them. The
//! facts are the about store's. Must not import `crate::store` or `crate::transport`.

use crate::engine::format::plural;
use crate::engine::memory::user::fact_days;
use crate::engine::project::prompt_scope;
use crate::ui::stores::{use_about, use_projects, use_stores};
use leptos::prelude::*;

/// How many facts the pane lists; the Memory page has every one.
pub const PANE_FACTS: usize = 12;

/// The facts about the user, after the conversation's own memory.
#[component]
pub fn AboutYouFacts() -> impl IntoView {
    let (about, projects) = (use_about(), use_projects());
    let stores = use_stores();
    about.follow();
    let scope = move || {
        let c = stores.open_conversation()?;
        projects.with_all(|ps| prompt_scope(&c, ps).map(str::to_string))
    };
    // Read once per change of the facts, the conversation or the projects (five readers below).
    let shown = Memo::new(move |_| {
        about.with_pane_facts(scope().as_deref(), PANE_FACTS, |facts, all| {
            let rows: Vec<(String, String, String)> = facts
                .iter()
                .map(|f| (f.id.clone(), f.text.clone(), fact_days(f)))
                .collect();
            (rows, all)
        })
    });
    let all = move || shown.with(|s| s.1);
    let more = move || all().saturating_sub(PANE_FACTS);
    let off = move || !stores.memory_config().user_memory;
    let (any, has_more) = (move || all() != 0, move || more() != 0);
    view! {
        <Show when=any>
            <details class="memory-section" data-testid="memory-about-you" open>
                <summary>"About you " <span class="count">{all}</span></summary>
                <Show when=off>
                    <p class="hint" data-testid="memory-about-you-off">"Memory about me is off here: this conversation sends none of these."</p>
                </Show>
                <ul class="pane-facts">
                    <For each=move || shown.with(|s| s.0.clone()) key=|(id, text, _)| (id.clone(), text.clone()) let:row>
                        <li data-testid="memory-user-fact">
                            <span class="text">{row.1}</span>" "<span class="when">{row.2}</span>
                        </li>
                    </For>
                </ul>
                <Show when=has_more>
                    <p class="meta">{move || format!("and {} more under About you", plural(more(), "fact", "facts"))}</p>
                </Show>
            </details>
        </Show>
    }
}
