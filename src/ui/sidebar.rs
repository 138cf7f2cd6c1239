//! The conversation sidebar: list by last activity (title, relative time, message count, continuity
//! badge), new conversation, inline rename, delete with an in-page confirmation, and search across
//! titles and message text. Must not import `store` or `transport`.

use crate::engine::format::{continuity, relative_time};
use crate::engine::model::Conversation;
use crate::ui::controller::Controller;
use crate::ui::time::now_ms;
use leptos::prelude::*;

/// The sidebar.
#[component]
pub fn Sidebar() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let on_search = move |ev: leptos::ev::Event| ctl.search(event_target_value(&ev));
    let on_search_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" {
            ctl.search(String::new());
        }
    };
    let searching = move || !st.search_query.get().trim().is_empty();
    view! {
        <nav class="sidebar" aria-label="Conversations">
            <div class="sidebar-head">
                <span class="brand" aria-hidden="true">"Memoire"</span>
                <button
                    class="primary"
                    data-testid="new-conversation"
                    aria-label="New conversation"
                    on:click=move |_| ctl.new_conversation()
                >
                    "+ New"
                </button>
            </div>
            <input
                type="search"
                class="search"
                data-testid="conversation-search"
                aria-label="Search conversations and messages (Ctrl+K)"
                placeholder="Search (Ctrl+K)"
                prop:value=move || st.search_query.get()
                on:input=on_search
                on:keydown=on_search_key
            />
            <Show when=searching fallback=move || view! { <ConversationList/> }>
                <SearchResults/>
            </Show>
            <div class="sidebar-foot">
                <button
                    data-testid="settings-open"
                    aria-label="Open settings"
                    on:click=move |_| st.settings_open.set(true)
                >
                    "⚙ Settings"
                </button>
                <crate::ui::sync::SyncIndicator/>
                <span class="net" data-testid="network-status" class:offline=move || !st.online.get()>
                    {move || if st.online.get() { "online" } else { "offline" }}
                </span>
            </div>
        </nav>
    }
}

#[component]
fn ConversationList() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    view! {
        <ul class="conversation-list" data-testid="conversation-list" role="list">
            <Show when=move || st.ready.get() && st.conversations.with(|l| l.is_empty())>
                <li class="empty">"No conversations yet. Start one with “+ New” or just type a message."</li>
            </Show>
            <Show when=move || !st.ready.get()>
                <li class="empty"><span class="spinner" aria-hidden="true"></span>" Opening your conversations…"</li>
            </Show>
            <For
                each=move || st.conversations.get()
                key=|c| (c.id.clone(), c.updated_at, c.title.clone(), c.message_count, c.last_path, c.remote_handle.as_ref().map(|h| (h.id.clone(), h.dead)))
                let:conv
            >
                <ConversationItem conv=conv/>
            </For>
        </ul>
    }
}

#[component]
fn ConversationItem(
    /// The conversation to show.
    conv: Conversation,
) -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let id = conv.id.clone();
    let renaming = RwSignal::new(false);
    let confirming = RwSignal::new(false);
    let (badge_key, badge_label, badge_title) = continuity(&conv);
    let title = RwSignal::new(conv.title.clone());
    let shown_title = if conv.title.is_empty() {
        "New conversation".to_string()
    } else {
        conv.title.clone()
    };
    let when = relative_time(conv.updated_at, now_ms());
    let count = conv.message_count;
    let id_open = id.clone();
    let is_current = {
        let id = id.clone();
        move || st.current.get().as_deref() == Some(id.as_str())
    };
    // Enter (or leaving the field) commits once; Esc cancels and restores the title. The guard on
    // `renaming` keeps the blur that follows either key from committing a second time.
    let original = conv.title.clone();
    let commit_rename = {
        let id = id.clone();
        let original = original.clone();
        move || {
            if !renaming.get_untracked() {
                return;
            }
            renaming.set(false);
            let t = title.get_untracked().trim().to_string();
            if !t.is_empty() && t != original {
                ctl.rename(id.clone(), t);
            }
        }
    };
    let commit_on_key = {
        let commit = commit_rename.clone();
        let original_for_esc = original.clone();
        move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
            "Enter" => {
                ev.prevent_default();
                commit();
            }
            "Escape" => {
                ev.prevent_default();
                ev.stop_propagation();
                renaming.set(false);
                title.set(original_for_esc.clone());
            }
            _ => {}
        }
    };
    let rename_ref = NodeRef::<leptos::html::Input>::new();
    // Focus the field (and select its text) as soon as it is mounted.
    Effect::new(move |_| {
        if let Some(el) = rename_ref.get() {
            let _ = el.focus();
            el.select();
        }
    });
    let id_delete = id.clone();
    let original_for_edit = original.clone();
    view! {
        <li
            class="conversation-item"
            class:current=is_current.clone()
            aria-current=move || is_current().then_some("page")
            data-testid="conversation-item"
            data-conversation-id=id.clone()
        >
            <Show
                when=move || renaming.get()
                fallback=move || {
                    let id_open = id_open.clone();
                    let shown_title = shown_title.clone();
                    let when = when.clone();
                    view! {
                        <button
                            class="open"
                            data-testid="conversation-open"
                            aria-label=format!("Open conversation {shown_title}, {count} messages, {when}")
                            on:click=move |_| ctl.open(id_open.clone(), None)
                        >
                            <span class="title" data-testid="conversation-title">{shown_title.clone()}</span>
                            <span class="meta">
                                <span class="when" data-testid="conversation-time">{when.clone()}</span>
                                " · "
                                <span class="count" data-testid="conversation-count" data-count=count>{count} " msgs"</span>
                                <span
                                    class=format!("badge badge-{badge_key}")
                                    data-testid="conversation-badge"
                                    data-continuity=badge_key
                                    title=badge_title
                                >
                                    {badge_label}
                                </span>
                            </span>
                        </button>
                    }
                }
            >
                <input
                    class="rename-input"
                    data-testid="rename-input"
                    aria-label="New title (Enter saves, Esc cancels)"
                    node_ref=rename_ref
                    prop:value=move || title.get()
                    on:input=move |ev| title.set(event_target_value(&ev))
                    on:keydown=commit_on_key.clone()
                    on:blur={
                        let c = commit_rename.clone();
                        move |_| c()
                    }
                />
            </Show>
            <div class="item-actions">
                <Show
                    when=move || confirming.get()
                    fallback=move || {
                        let original_for_edit = original_for_edit.clone();
                        view! {
                        <button
                            class="icon"
                            data-testid="rename-conversation"
                            aria-label="Rename conversation"
                            title="Rename"
                            on:click=move |_| {
                                title.set(original_for_edit.clone());
                                renaming.set(true);
                            }
                        >
                            "✎"
                        </button>
                        <button
                            class="icon trash"
                            data-testid="delete-conversation"
                            aria-label="Delete conversation"
                            title="Delete"
                            on:click=move |_| confirming.set(true)
                        ></button>
                    }}
                >
                    <span class="confirm" role="alertdialog" aria-label="Confirm delete">
                        "Delete for good? "
                        <button
                            class="danger"
                            data-testid="confirm-delete"
                            on:click={
                                let id = id_delete.clone();
                                move |_| {
                                    confirming.set(false);
                                    ctl.delete(id.clone());
                                }
                            }
                        >
                            "Delete"
                        </button>
                        <button data-testid="cancel-delete" on:click=move |_| confirming.set(false)>
                            "Keep"
                        </button>
                    </span>
                </Show>
            </div>
        </li>
    }
}

#[component]
fn SearchResults() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let title_hits = move || {
        let q = st.search_query.get().to_lowercase();
        st.conversations.with(|l| {
            l.iter()
                .filter(|c| c.title.to_lowercase().contains(q.trim()))
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    let title_of = move |id: &str| {
        st.conversations.with_untracked(|l| {
            l.iter()
                .find(|c| c.id == id)
                .map(|c| c.title.clone())
                .unwrap_or_default()
        })
    };
    view! {
        <ul class="conversation-list search-results" data-testid="search-results" role="list" aria-label="Search results">
            <For each=title_hits key=|c| c.id.clone() let:conv>
                <ConversationItem conv=conv/>
            </For>
            <For
                each=move || st.search_hits.get()
                key=|h| h.message_id.clone()
                let:hit
            >
                {
                    let conv_id = hit.conversation_id.clone();
                    let msg_id = hit.message_id.clone();
                    view! {
                        <li class="search-hit" data-testid="search-hit" data-conversation-id=hit.conversation_id.clone() data-message-id=hit.message_id.clone()>
                            <button
                                class="open"
                                aria-label=format!("Open the message: {}", hit.snippet)
                                on:click=move |_| {
                                    ctl.search(String::new());
                                    ctl.open(conv_id.clone(), Some(msg_id.clone()));
                                }
                            >
                                <span class="title">{title_of(&hit.conversation_id)}</span>
                                <span class="snippet">{hit.snippet.clone()}</span>
                            </button>
                        </li>
                    }
                }
            </For>
            <Show when=move || title_hits().is_empty() && st.search_hits.with(|h| h.is_empty())>
                <li class="empty">"Nothing matches. Try fewer words."</li>
            </Show>
        </ul>
    }
}
