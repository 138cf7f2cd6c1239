//! Memory about the user, across conversations: the Memory page (every fact with where it was said,
//! searchable, with edit, forget and "add a fact") and the button that opens it; its store
//! (`store`) owns the facts the page lists. Must not import `crate::store` or `crate::transport`.

pub mod store;

use crate::engine::memory::user::fact_days;
use crate::engine::model::UserFact;
use crate::ui::chat::store::ChatStore;
use crate::ui::settings::store::SettingsStore;
use leptos::prelude::*;
use store::AboutStore;

/// Opens the Memory page: in the memory pane (`memory-page-open`, reachable on every width) and
/// in the chat header (`header-memory-page-open`, hidden on phones); testids stay unique on a page.
#[component]
pub fn MemoryPageOpen(
    /// The button's `data-testid`.
    testid: &'static str,
) -> impl IntoView {
    let about = expect_context::<AboutStore>();
    view! {
        <button class="memory-page-open" data-testid=testid
            title="What Memoire remembers about you, in every conversation"
            on:click=move |_| about.open_page()>"About you"</button>
    }
}

/// "Use memory about me" for the open conversation (the memory pane): its overrides, else the
/// setting in force.
#[component]
pub fn UseUserMemory() -> impl IntoView {
    let chat = expect_context::<ChatStore>();
    let settings = expect_context::<SettingsStore>().settings();
    let on = move || {
        let global = settings.with(|s| s.memory.user_memory);
        chat.conversation()
            .and_then(|c| c.memory_overrides.user_memory)
            .unwrap_or(global)
    };
    view! {
        <Show when=move || chat.current().with(Option::is_some)>
            // A switch button, not a checkbox: the memory pane holds no form control (what model
            // output fills must never hold one, and the XSS check says so of the whole pane).
            <button class="switch use-user-memory" role="switch" data-testid="conversation-use-user-memory"
                aria-checked=move || on().to_string()
                on:click=move |_| chat.use_user_memory(!on())>
                {move || if on() { "Memory about me: on here" } else { "Memory about me: off here" }}
            </button>
        </Show>
    }
}

/// The Memory page: a dialog over the app (full screen on phones).
#[component]
pub fn MemoryPage() -> impl IntoView {
    let about = expect_context::<AboutStore>();
    let open = about.is_open();
    view! {
        <Show when=move || open.get()>
            <div class="dialog-backdrop" on:click=move |_| about.close_page()></div>
            <section class="dialog memory-page" data-testid="memory-page" role="dialog"
                aria-label="Memory about you">
                <header class="dialog-head">
                    <h2>"Memory about you"</h2>
                    <button class="icon" aria-label="Close" on:click=move |_| about.close_page()>"✕"</button>
                </header>
                <p class="hint">"What you say about yourself is remembered here and carried in every \
                    conversation. Forget a fact and it leaves every prompt and every synced device."</p>
                <AddFact/>
                <input type="search" data-testid="memory-page-search" placeholder="Search facts"
                    prop:value=move || about.query().get()
                    on:input=move |ev| about.search(event_target_value(&ev))/>
                <FactList/>
            </section>
        </Show>
    }
}

/// "Remember that I …": a fact the user writes.
#[component]
fn AddFact() -> impl IntoView {
    let about = expect_context::<AboutStore>();
    let text = RwSignal::new(String::new());
    let add = move || {
        let t = text.get_untracked();
        if !t.trim().is_empty() {
            about.add(t);
            text.set(String::new());
        }
    };
    view! {
        <form class="add-fact" on:submit=move |ev| { ev.prevent_default(); add(); }>
            <input data-testid="user-fact-add-input" placeholder="Remember that I …"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))/>
            <button type="submit" data-testid="user-fact-add">"Add"</button>
        </form>
    }
}

/// Every fact shown, current first; past ones struck through with their days.
#[component]
fn FactList() -> impl IntoView {
    let about = expect_context::<AboutStore>();
    let shown = about.shown();
    view! {
        <ul class="user-facts">
            <For each=move || shown.get() key=|f| (f.id.clone(), f.updated_at) let:fact>
                <FactRow fact=fact/>
            </For>
        </ul>
        <Show when=move || shown.with(Vec::is_empty)>
            <p class="empty">"Nothing yet. Tell the agent about yourself, or add a fact above."</p>
        </Show>
    }
}

/// One fact: its text (or its editor), where and when it was said, Edit and Forget.
#[component]
fn FactRow(
    /// The fact shown.
    fact: UserFact,
) -> impl IntoView {
    let about = expect_context::<AboutStore>();
    let chat = expect_context::<ChatStore>();
    let editing = RwSignal::new(false);
    let confirming = RwSignal::new(false);
    let text = RwSignal::new(fact.text.clone());
    let current = fact.is_current();
    let id = fact.id.clone();
    let when = fact_days(&fact);
    let source = fact.source.clone().map(|s| {
        view! {
            <button class="link" data-testid="user-fact-source"
                on:click=move |_| chat.open(s.conversation_id.clone(), Some(s.message_id.clone()))>
                "where"</button>
        }
    });
    let (save_id, forget_id) = (id.clone(), id);
    view! {
        <li class="user-fact" class:past=!current data-testid="user-fact"
            data-status=if current { "current" } else { "past" }>
            <Show when=move || editing.get() fallback=move || view! {
                <span class="text">{move || text.get()}</span>
            }>
                <form on:submit={
                    let save_id = save_id.clone();
                    move |ev| {
                        ev.prevent_default();
                        about.edit(save_id.clone(), text.get_untracked());
                        editing.set(false);
                    }
                }>
                    <input data-testid="user-fact-edit-input" prop:value=move || text.get()
                        on:input=move |ev| text.set(event_target_value(&ev))/>
                    <button type="submit">"Save"</button>
                </form>
            </Show>
            <span class="when">{when}</span>
            {source}
            <button data-testid="user-fact-edit" on:click=move |_| editing.update(|e| *e = !*e)>"Edit"</button>
            <Show when=move || confirming.get() fallback=move || view! {
                <button data-testid="user-fact-forget" on:click=move |_| confirming.set(true)>"Forget"</button>
            }>
                <button data-testid="confirm-forget" class="danger" on:click={
                    let forget_id = forget_id.clone();
                    move |_| about.forget(forget_id.clone())
                }>"Forget for good"</button>
                <button on:click=move |_| confirming.set(false)>"Keep"</button>
            </Show>
        </li>
    }
}
