//! The conversation sidebar (a drawer on phones): list by last activity (title, relative time,
//! message count, memory status explained on a tap), new conversation, inline rename, delete with an in-page
//! confirmation, search across titles and message text (its results behind split point `search_results`, a wasm
//! chunk fetched by the first search), settings and the theme; its store (`store`)
//! owns the list's window and the search. Must not import `crate::store` or `crate::transport`.

pub mod store;

use crate::engine::format::{
    centre_snippet, continuity, highlight, plural, relative_time, snippet_words,
};
use crate::engine::model::{Conversation, Role};
use crate::session::{ErrorKind, LibraryError, SearchHit};
use crate::ui::badge::{BadgeIds, ExplainedBadge};
use crate::ui::behaviour::focus_testid;
use crate::ui::lazy::{lazy, Built};
use crate::ui::projects::{ProjectPicker, ProjectsSection};
use crate::ui::stores::{use_chat, use_library, use_projects, use_settings, use_shell, use_stores};
use crate::ui::sync::SyncIndicator;
use crate::ui::time::now_ms;
use leptos::prelude::*;

/// What closes the drawer when clicked: a conversation, a search hit, new chat,
/// temporary chat, settings.
const DRAWER_CHOICES: &str = ".conversation-item button.open, .search-hit button.open, [data-testid=new-conversation], [data-testid=temporary-chat], [data-testid=settings-open]";

/// The sidebar.
#[component]
pub fn Sidebar() -> impl IntoView {
    let library = use_library();
    let chat = use_chat();
    let stores = use_stores();
    let shell = use_shell();
    let searching = move || !library.query().trim().is_empty();
    // Opening a conversation (or a new one) closes the drawer.
    Effect::new(move |_| {
        chat.track_current();
        shell.close_drawer();
    });
    // Any choice in the drawer closes it, opening the conversation already open included (that
    // one changes nothing the effect above hears).
    let on_choice = move |ev: leptos::ev::MouseEvent| {
        use wasm_bindgen::JsCast;
        let chose = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|t| t.closest(DRAWER_CHOICES).ok().flatten())
            .is_some();
        if chose {
            shell.close_drawer();
        }
    };
    view! {
        <nav class="sidebar" data-testid="sidebar" aria-label="Conversations" on:click=on_choice>
            <div class="sidebar-head">
                <span class="brand" aria-hidden="true">"Memoire"</span>
                <button
                    class="primary"
                    data-testid="new-conversation"
                    aria-label="New conversation"
                    on:click=move |_| stores.new_chat(None)
                >
                    "+ New"
                </button>
                <button
                    data-testid="temporary-chat"
                    title="A chat that is never saved and updates no memory"
                    aria-pressed=move || chat.is_temporary().to_string()
                    on:click=move |_| stores.start_temporary()
                >
                    "Temporary"
                </button>
            </div>
            <input
                type="search"
                class="search"
                data-testid="conversation-search"
                aria-label="Search conversations and messages (Ctrl+K)"
                placeholder="Search (Ctrl+K)"
                prop:value=move || library.query()
                on:input=move |ev| library.search(event_target_value(&ev))
                on:keydown=move |ev| if ev.key() == "Escape" && searching() {
                    ev.stop_propagation();
                    library.search(String::new());
                }
            />
            <Show when=move || !searching()>
                <ProjectsSection/>
            </Show>
            <Show when=searching fallback=move || view! { <ConversationList/> }>
                <SearchResults/>
            </Show>
            <SidebarFoot/>
        </nav>
    }
}

/// Settings, the theme and the network status.
#[component]
fn SidebarFoot() -> impl IntoView {
    let settings = use_settings();
    let shell = use_shell();
    let theme = use_theme();
    view! {
        <div class="sidebar-foot">
            <button data-testid="settings-open" aria-label="Open settings" on:click=move |_| settings.open_dialog()>
                "⚙ Settings"
            </button>
            <button
                class="theme-toggle"
                data-testid="theme-toggle"
                aria-label=move || format!("Theme: {} (click to change)", theme.get())
                title="Light, dark, or as the system is set"
                on:click=move |_| theme.update(|t| *t = next_theme(t))
            >
                {move || match theme.get().as_str() { "light" => "☀ Light", "dark" => "☾ Dark", _ => "◐ Auto" }}
            </button>
            <SyncIndicator/>
            <span class="net" data-testid="network-status" class:offline=move || !shell.online()>
                {move || if shell.online() { "online" } else { "offline" }}
            </span>
        </div>
    }
}

fn next_theme(t: &str) -> String {
    match t {
        "auto" => "light",
        "light" => "dark",
        _ => "auto",
    }
    .to_string()
}

const THEME_KEY: &str = "memoire.theme";

/// The colour theme ("auto", "light" or "dark"), kept in this browser and put on `<html
/// data-theme>` (the style sheet follows the system setting for "auto").
fn use_theme() -> RwSignal<String> {
    let storage = web_sys::window().and_then(|w| w.local_storage().ok().flatten());
    let stored = storage
        .as_ref()
        .and_then(|s| s.get_item(THEME_KEY).ok().flatten())
        .unwrap_or_else(|| "auto".into());
    let theme = RwSignal::new(stored);
    Effect::new(move |was: Option<String>| {
        let t = theme.get();
        if let Some(root) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element())
        {
            let _ = root.set_attribute("data-theme", &t);
        }
        // Written when the user picks one, not at every start (a synchronous storage write).
        if was.is_some_and(|w| w != t) {
            if let Some(s) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
                let _ = s.set_item(THEME_KEY, &t);
            }
        }
        t
    });
    theme
}

/// How close (px) to either end of the mounted rows a scroll reads the next page.
const LIST_MARGIN_PX: f64 = 400.0;

/// The list, windowed: only the conversations of `list_window` are mounted, a spacer stands for
/// those above it, and scrolling near either end reads the next page (the library store unmounts the
/// other end past its cap).
#[component]
fn ConversationList() -> impl IntoView {
    let library = use_library();
    let shell = use_shell();
    // An open project shows only its conversations (of those the list has read).
    let projects = use_projects();
    let list = NodeRef::<leptos::html::Ul>::new();
    // The height of one row (with its margin), measured from the mounted rows.
    let row_px = RwSignal::new(52.0f64);
    let spacer = move || library.list_window().above as f64 * row_px.get();
    // Also runs from an animation frame: the list may be gone by then (search results replace it),
    // and a disposed NodeRef or signal must not be read.
    let check = move || {
        let (Some(Some(el)), Some(w)) = (
            list.try_get_untracked(),
            library.try_list_window_untracked(),
        ) else {
            return;
        };
        // Nothing above the window and nothing below it: no page to read and no spacer to size, so
        // no layout is read (each read forces one; a library that fits on one page never needs it).
        if w.above == 0 && !w.more_below {
            return;
        }
        if row_px.try_get_untracked().is_none() {
            return;
        }
        if let Some(h) = row_height(&el, library.mounted_untracked()) {
            if (h - row_px.get_untracked()).abs() > 0.5 {
                row_px.set(h);
            }
        }
        let top = el.scroll_top();
        let bottom = top + el.client_height() as f64;
        if bottom > el.scroll_height() as f64 - LIST_MARGIN_PX {
            library.list_more();
        } else if top < untrack(spacer) + LIST_MARGIN_PX {
            library.list_less();
        }
    };
    // After each page is drawn, look again: the rows may still not reach past the screen (a tall
    // screen, or the view still on the spacer after a jump up).
    Effect::new(move |_| {
        library.track_list();
        request_animation_frame(check);
    });
    let on_scroll = move |_| check();
    view! {
        <ul class="conversation-list" data-testid="conversation-list" role="list" node_ref=list on:scroll=on_scroll>
            <Show when=move || shell.ready() && library.is_empty()>
                <li class="empty">"No conversations yet. Start one with “+ New” or just type a message."</li>
            </Show>
            <Show when=move || !shell.ready()>
                <li class="empty"><span class="spinner" aria-hidden="true"></span>" Opening your conversations…"</li>
            </Show>
            <li class="list-spacer" aria-hidden="true" style:height=move || format!("{}px", spacer())></li>
            <For
                each=move || {
                    let open = projects.open_id();
                    library.conversations().into_iter()
                        .filter(|c| open.is_none() || c.memory_overrides.project == open)
                        .collect::<Vec<_>>()
                }
                key=|c| (c.id.clone(), c.updated_at, c.title.clone(), c.message_count, c.last_path, c.remote_handle.as_ref().map(|h| (h.id.clone(), h.dead)), c.memory_overrides.project.clone())
                let:conv
            >
                <ConversationItem conv=conv/>
            </For>
        </ul>
    }
}

/// The distance between the first and the last of `n` mounted rows, per row (`None` below two).
fn row_height(list: &web_sys::HtmlUListElement, n: usize) -> Option<f64> {
    use wasm_bindgen::JsCast;
    let top = |e: Option<web_sys::Element>| {
        e.and_then(|r| r.dyn_into::<web_sys::HtmlElement>().ok())
            .map(|r| r.offset_top() as f64)
    };
    let first = list
        .query_selector(".list-spacer")
        .ok()
        .flatten()
        .and_then(|s| s.next_element_sibling());
    let (first, last) = (top(first)?, top(list.last_element_child())?);
    (n >= 2).then(|| (last - first) / (n - 1) as f64)
}

/// One row of the list: the conversation's button (or its rename field) and its actions.
#[component]
fn ConversationItem(
    /// The conversation to show.
    conv: Conversation,
) -> impl IntoView {
    let chat = use_chat();
    let renaming = RwSignal::new(false);
    let confirming = RwSignal::new(false);
    let is_current = {
        let id = conv.id.clone();
        move || chat.shows(&id)
    };
    let conv_open = conv.clone();
    let conv_rename = conv.clone();
    view! {
        <li
            class="conversation-item"
            class:current=is_current.clone()
            class:confirming=move || confirming.get()
            aria-current=move || is_current().then_some("page")
            data-testid="conversation-item"
            data-conversation-id=conv.id.clone()
        >
            <Show
                when=move || renaming.get()
                fallback=move || view! { <ConversationOpen conv=conv_open.clone()/> }
            >
                <RenameField conv=conv_rename.clone() renaming=renaming/>
            </Show>
            <ItemActions id=conv.id.clone() project=conv.memory_overrides.project.clone() renaming=renaming confirming=confirming/>
        </li>
    }
}

/// The row's button (the title; the whole row opens the conversation), when, how many messages,
/// and the memory status as a badge that explains itself on a tap: a button of its own beside the
/// row's, never inside it.
#[component]
fn ConversationOpen(
    /// The conversation the row opens.
    conv: Conversation,
) -> impl IntoView {
    let stores = use_stores();
    let (key, label, why) = continuity(&conv);
    let title = if conv.title.is_empty() {
        "New conversation".to_string()
    } else {
        conv.title.clone()
    };
    let when = relative_time(conv.updated_at, now_ms());
    let count = conv.message_count;
    let id = conv.id.clone();
    let ids = BadgeIds {
        info: "conversation-badge-info",
        badge: "conversation-badge",
        explained: "conversation-badge-explained",
    };
    view! {
        <div class="open-wrap">
            <button
                class="open"
                data-testid="conversation-open"
                on:click=move |_| stores.open(id.clone(), None)
            >
                <span class="title" data-testid="conversation-title">{title.clone()}</span>
            </button>
            <span class="meta">
                <span class="when" data-testid="conversation-time">{when.clone()}</span>
                " · "
                <span class="count" data-testid="conversation-count" data-count=count>{plural(count as usize, "msg", "msgs")}</span>
                <ExplainedBadge key label why ids/>
            </span>
        </div>
    }
}

/// The inline rename field: Enter (or leaving the field) commits once; Esc cancels.
#[component]
fn RenameField(
    /// The conversation being renamed.
    conv: Conversation,
    /// True while the field is shown; committing or cancelling turns it off.
    renaming: RwSignal<bool>,
) -> impl IntoView {
    let library = use_library();
    let title = RwSignal::new(conv.title.clone());
    let original = StoredValue::new(conv.title.clone());
    let id = StoredValue::new(conv.id.clone());
    // The guard on `renaming` keeps the blur that follows either key from committing a second time.
    let commit = move || {
        if !renaming.get_untracked() {
            return;
        }
        renaming.set(false);
        let t = title.get_untracked().trim().to_string();
        if !t.is_empty() && t != original.get_value() {
            library.rename(id.get_value(), t);
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" => {
            ev.prevent_default();
            commit();
        }
        "Escape" => {
            ev.prevent_default();
            ev.stop_propagation();
            renaming.set(false);
            title.set(original.get_value());
        }
        _ => {}
    };
    let input = NodeRef::<leptos::html::Input>::new();
    // Focus the field (and select its text) as soon as it is mounted.
    Effect::new(move |_| {
        if let Some(el) = input.get() {
            let _ = el.focus();
            el.select();
        }
    });
    view! {
        <input
            class="rename-input"
            data-testid="rename-input"
            aria-label="New title (Enter saves, Esc cancels)"
            node_ref=input
            prop:value=move || title.get()
            on:input=move |ev| title.set(event_target_value(&ev))
            on:keydown=on_key
            on:blur=move |_| commit()
        />
    }
}

/// Rename and delete, or the delete confirmation (on a line of its own, so the row keeps its
/// title).
#[component]
fn ItemActions(
    /// The conversation acted on.
    id: String,
    /// Its project, if any (the picker moves it).
    project: Option<String>,
    /// Turned on by Rename.
    renaming: RwSignal<bool>,
    /// True while "Delete for good?" is asked.
    confirming: RwSignal<bool>,
) -> impl IntoView {
    let library = use_library();
    let picker_id = id.clone();
    let id = StoredValue::new(id);
    view! {
        <div class="item-actions">
            <ProjectPicker id=picker_id current=project/>
            <Show
                when=move || confirming.get()
                fallback=move || view! {
                    <button class="icon" data-testid="rename-conversation" aria-label="Rename conversation" title="Rename"
                        on:click=move |_| renaming.set(true)>"✎"</button>
                    <button class="icon trash" data-testid="delete-conversation" aria-label="Delete conversation" title="Delete"
                        on:click=move |_| confirming.set(true)></button>
                }
            >
                <span class="confirm" role="alertdialog" aria-label="Confirm delete">
                    "Delete for good? "
                    <button class="danger" data-testid="confirm-delete" on:click=move |_| {
                        confirming.set(false);
                        library.delete(id.get_value());
                    }>"Delete"</button>
                    <button data-testid="cancel-delete" on:click=move |_| confirming.set(false)>"Keep"</button>
                </span>
            </Show>
        </div>
    }
}

/// Search hits, at most one row per conversation and text (a question and a reply that both hold
/// the same words are one row).
fn distinct_hits(hits: &[SearchHit]) -> Vec<SearchHit> {
    let mut seen = std::collections::HashSet::new();
    hits.iter()
        .filter(|h| seen.insert((h.conversation_id.clone(), h.snippet.trim().to_lowercase())))
        .cloned()
        .collect()
}

/// The search's results, behind split point `search_results`: the first search fetches that chunk
/// (the list's box shows meanwhile); one that cannot be fetched says so in the banner
/// (`LibraryError::Unavailable`), and the next search tries again.
#[component]
fn SearchResults() -> impl IntoView {
    let (library, shell) = (use_library(), use_shell());
    lazy(
        move || !library.query().trim().is_empty(),
        results_split,
        results_placeholder,
        move |e: LibraryError| shell.fail(e.to_string(), ErrorKind::Other),
    )
}

/// Split point `search_results`: the results and what only they reach (hit rows, highlighting).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(search_results, fallible, return_wrapper(let results = _; { results.await } -> Result<Built, LibraryError>)))]
fn results_split() -> std::future::Ready<Result<Built, LibraryError>> {
    std::future::ready(Ok(results_view))
}

fn results_placeholder() -> AnyView {
    view! { <ul class="conversation-list search-results" aria-busy="true" role="list" aria-label="Search results"></ul> }
        .into_any()
}

fn results_view() -> AnyView {
    view! { <ResultList/> }.into_any()
}

/// Conversations whose title matches, then messages.
#[component]
fn ResultList() -> impl IntoView {
    let library = use_library();
    let title_hits = move || library.titles();
    view! {
        <ul class="conversation-list search-results" data-testid="search-results" role="list" aria-label="Search results">
            <For each=title_hits key=|c| c.id.clone() let:conv>
                <ConversationItem conv=conv/>
            </For>
            // Keyed by the snippet too: a message that matches the next query as well gets the new
            // query's snippet; its highlight follows the query in the box (the row's own closure).
            <For each=move || library.with_hits(distinct_hits) key=|h| (h.message_id.clone(), h.snippet.clone()) let:hit>
                <SearchHitRow hit=hit/>
            </For>
            <Show when=move || title_hits().is_empty() && library.with_hits(|h| h.is_empty())>
                <li class="empty">"Nothing matches. Try fewer words."</li>
            </Show>
        </ul>
    }
}

/// Characters a snippet keeps before its first match, so the match shows in the 260 px sidebar.
const SNIPPET_LEAD_CHARS: usize = 12;

/// One message that matches: its conversation's title, who wrote it and the words around the match,
/// the term highlighted.
#[component]
fn SearchHitRow(
    /// The matching message.
    hit: SearchHit,
) -> impl IntoView {
    let library = use_library();
    let stores = use_stores();
    let title = hit.title.clone();
    // Worked out again for the query in the box as it changes (a row stays mounted while the next
    // query finds its message too): never the highlight of a query typed before.
    let raw = StoredValue::new(hit.snippet.clone());
    let shown = move || {
        let query = library.query();
        let words = raw.with_value(|r| snippet_words(r, &query));
        let snippet = centre_snippet(&words, &query, SNIPPET_LEAD_CHARS);
        let runs = highlight(&snippet, &query);
        (snippet, runs)
    };
    let (conv, msg) = (hit.conversation_id.clone(), hit.message_id.clone());
    let who = hit.role.and_then(|r| match r {
        Role::User => Some("You"),
        Role::Assistant => Some("Agent"),
        Role::System | Role::Tool => None,
    });
    view! {
        <li class="search-hit" data-testid="search-hit" data-conversation-id=hit.conversation_id.clone() data-message-id=hit.message_id.clone()>
            <button class="open" on:click=move |_| {
                library.search(String::new());
                stores.open(conv.clone(), Some(msg.clone()));
                // The row goes with the search: the focus goes to the opened conversation's composer,
                // never to the page's body.
                focus_testid("composer-input");
            }>
                <span class="title">{title}</span>
                <span class="snippet-line">
                    {who.map(|w| view! { <span class="who" data-testid="search-hit-role">{w}</span> })}
                    <span class="snippet" data-testid="search-snippet">
                        {move || shown().1.into_iter().map(|(text, hit)| if hit {
                            view! { <mark>{text}</mark> }.into_any()
                        } else {
                            view! { <span>{text}</span> }.into_any()
                        }).collect_view()}
                    </span>
                </span>
            </button>
        </li>
    }
}
