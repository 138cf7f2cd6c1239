//! Memory about the user, across conversations: the Memory page (every fact with where it was said,
//! searchable, with edit, forget, "add a fact", and each fact's scope (about you or a project, with "Move
//! to about you") and the button that opens it; its store (`store`) owns the facts the page lists.
//! The page's view is behind split point `about` (a wasm chunk fetched when the page is first
//! opened; ARCHITECTURE.md "The split build"). Must not import `crate::store` or `crate::transport`.

pub mod store;

use crate::engine::format::plural;
use crate::engine::memory::user::fact_days;
use crate::engine::model::UserFact;
use crate::engine::project::scope_label;
use crate::session::MemoryError;
use crate::ui::stores::{use_about, use_chat, use_projects, use_shell, use_stores};
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Opens the Memory page: in the memory pane (`memory-page-open`, reachable on every width) and
/// in the chat header (`header-memory-page-open`, hidden on phones); testids stay unique on a page.
#[component]
pub fn MemoryPageOpen(
    /// The button's `data-testid`.
    testid: &'static str,
) -> impl IntoView {
    let about = use_about();
    view! {
        <button class="memory-page-open" data-testid=testid
            title="What Memoire remembers about you, in every conversation"
            on:click=move |_| about.open_page()>"About you"</button>
    }
}

/// "Use memory about me" for the open conversation (the memory pane), as its memory config in
/// force says (its override, else the setting).
#[component]
pub fn UseUserMemory() -> impl IntoView {
    let chat = use_chat();
    let stores = use_stores();
    let on = move || stores.memory_config().user_memory;
    view! {
        <Show when=move || chat.has_current()>
            // A switch button, not a checkbox: the memory pane holds no form control (what model
            // output fills must never hold one, and the XSS check says so of the whole pane).
            <button class="switch use-user-memory" role="switch" data-testid="conversation-use-user-memory"
                aria-checked=move || on().to_string()
                on:click=move |_| stores.use_user_memory(!on())>
                {move || if on() { "Memory about me: on here" } else { "Memory about me: off here" }}
            </button>
        </Show>
    }
}

/// The Memory page: a dialog over the app (full screen on phones), shown while the about store
/// says it is open. Its view is behind split point `about`: the first opening fetches that chunk;
/// one that cannot be fetched closes the page and the banner says so (`MemoryError::Unavailable`),
/// and the next opening tries again.
#[component]
pub fn MemoryPage() -> impl IntoView {
    let (about, shell) = (use_about(), use_shell());
    // The page's view, once its chunk is here (a plain function: `Copy`, built in the chunk).
    let page = RwSignal::new(None::<fn() -> AnyView>);
    Effect::new(move |_| {
        if about.is_open() && page.with_untracked(Option::is_none) {
            spawn_local(async move {
                match page_split().await {
                    Ok(view) => page.set(Some(view)),
                    Err(e) => {
                        about.close_page();
                        shell.fail(e.to_string(), e.kind());
                    }
                }
            });
        }
    });
    move || about.is_open().then(|| page.get().map(|view| view()))
}

/// Split point `about`: the Memory page's view and what only it reaches (the list, its rows, the
/// editors, the page's search and paging).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(about, fallible, return_wrapper(let page = _; { page.await } -> Result<fn() -> AnyView, MemoryError>)))]
fn page_split() -> std::future::Ready<Result<fn() -> AnyView, MemoryError>> {
    std::future::ready(Ok(page_view))
}

fn page_view() -> AnyView {
    view! { <PageDialog/> }.into_any()
}

/// The page itself.
#[component]
fn PageDialog() -> impl IntoView {
    let about = use_about();
    view! {
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
                    prop:value=move || about.query()
                    on:input=move |ev| about.search(event_target_value(&ev))/>
                <FactList/>
            </section>
    }
}

/// "Remember that I …": a fact the user writes.
#[component]
fn AddFact() -> impl IntoView {
    let about = use_about();
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

/// Every fact shown, current first; past ones struck through with their days. Which row is being
/// edited, or asked to confirm a forget, is the list's (one signal each, not three per row: a page
/// of a thousand facts opens in one go).
#[component]
fn FactList() -> impl IntoView {
    let about = use_about();
    let editing = RwSignal::new(None::<String>);
    let confirming = RwSignal::new(None::<String>);
    let more = move || about.with_shown(|facts, all| all.saturating_sub(facts.len()));
    let has_more = move || more() > 0;
    view! {
        <p class="meta" data-testid="memory-page-count">
            {move || about.with_shown(|_, all| plural(all, "fact", "facts"))}
        </p>
        <ul class="user-facts">
            <For each=move || about.with_shown(|facts, _| facts.iter().map(|f| (*f).clone()).collect::<Vec<_>>()) key=|f| (f.id.clone(), f.updated_at) let:fact>
                <FactRow fact=fact editing=editing confirming=confirming/>
            </For>
        </ul>
        <Show when=has_more>
            <button data-testid="memory-page-more" on:click=move |_| about.show_more()>
                {move || format!("Show more ({} not shown)", more())}
            </button>
        </Show>
        <Show when=move || about.with_shown(|_, all| all == 0)>
            <p class="empty">"Nothing yet. Tell the agent about yourself, or add a fact above."</p>
        </Show>
    }
}

/// One fact: its text (or its editor), where and when it was said, Edit and Forget.
#[component]
fn FactRow(
    /// The fact shown.
    fact: UserFact,
    /// The id of the fact being edited, if any (the list's).
    editing: RwSignal<Option<String>>,
    /// The id of the fact whose forget waits for confirmation, if any (the list's).
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    let stores = use_stores();
    let about = use_about();
    let current = fact.is_current();
    let id = fact.id.clone();
    let is = move |s: RwSignal<Option<String>>, id: &str| s.with(|e| e.as_deref() == Some(id));
    let source = fact.source.clone().map(|s| {
        view! {
            <button class="link" data-testid="user-fact-source"
                on:click=move |_| stores.open(s.conversation_id.clone(), Some(s.message_id.clone()))>
                "where"</button>
        }
    });
    let text = fact.text.clone();
    let projects = use_projects();
    let scoped = fact.scope.is_some();
    let label = {
        let fact = fact.clone();
        move || projects.with_all(|ps| scope_label(&fact, ps))
    };
    let move_id = id.clone();
    let (edit_id, toggle_id, ask_id, forget_id) = (id.clone(), id.clone(), id.clone(), id);
    view! {
        <li class="user-fact" class:past=!current data-testid="user-fact"
            data-status=if current { "current" } else { "past" }>
            {move || if is(editing, &edit_id) {
                view! { <FactEditor id=edit_id.clone() text=text.clone() editing=editing/> }.into_any()
            } else {
                view! { <span class="text">{text.clone()}</span> }.into_any()
            }}
            <span class="when">{fact_days(&fact)}</span>
            <span class="scope" data-testid="user-fact-scope" data-scope=if scoped { "project" } else { "about-you" }>{label}</span>
            {source}
            <Show when=move || scoped && current>
                <button data-testid="user-fact-move-about-you"
                    title="Every conversation may use it, not only this project's"
                    on:click={
                        let id = move_id.clone();
                        move |_| about.move_to_about_you(id.clone())
                    }>"Move to about you"</button>
            </Show>
            <button data-testid="user-fact-edit" on:click=move |_| {
                let open = is(editing, &toggle_id);
                editing.set((!open).then(|| toggle_id.clone()));
            }>"Edit"</button>
            {move || if is(confirming, &ask_id) {
                view! { <ConfirmForget id=ask_id.clone() confirming=confirming/> }.into_any()
            } else {
                let forget_id = forget_id.clone();
                view! {
                    <button data-testid="user-fact-forget"
                        on:click=move |_| confirming.set(Some(forget_id.clone()))>"Forget"</button>
                }.into_any()
            }}
        </li>
    }
}

/// A fact's text in an editor; Save keeps the user's words.
#[component]
fn FactEditor(
    /// The fact edited.
    id: String,
    /// Its text when the editor opened.
    text: String,
    /// The list's "being edited" (cleared on save).
    editing: RwSignal<Option<String>>,
) -> impl IntoView {
    let about = use_about();
    let text = RwSignal::new(text);
    view! {
        <form on:submit=move |ev| {
            ev.prevent_default();
            about.edit(id.clone(), text.get_untracked());
            editing.set(None);
        }>
            <input data-testid="user-fact-edit-input" prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))/>
            <button type="submit">"Save"</button>
        </form>
    }
}

/// "Forget for good" or "Keep", once Forget was pressed.
#[component]
fn ConfirmForget(
    /// The fact to forget.
    id: String,
    /// The list's "waiting for confirmation" (cleared on Keep).
    confirming: RwSignal<Option<String>>,
) -> impl IntoView {
    let about = use_about();
    view! {
        <button data-testid="confirm-forget" class="danger" on:click=move |_| about.forget(id.clone())>
            "Forget for good"</button>
        <button on:click=move |_| confirming.set(None)>"Keep"</button>
    }
}
