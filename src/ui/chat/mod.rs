//! The chat pane: header (drawer button, title, memory status, model picker, backup menu, memory
//! toggle), the prompt to reload into a new version of the app, the shell's status area (an error
//! with the action that fits it, else a notice), the message list (`messages`) and the composer
//! (`composer`), with each reply's thinking (`thinking`) and tool calls (`tools`); its store (`store`) owns the open
//! conversation. Must not import `crate::store` or
//! `crate::transport`.

pub mod attachments;
pub mod composer;
pub mod messages;
pub mod model_picker;
pub mod store;
pub mod thinking;
pub mod tools;

use crate::engine::format::continuity;
use crate::ui::about::MemoryPageOpen;
use crate::ui::badge::{BadgeIds, ExplainedBadge};
use crate::ui::memory::build::MemoryBuildBar;
use crate::ui::shell::update::UpdateReady;
use crate::ui::shell::StatusArea;
use crate::ui::stores::{use_chat, use_shell, use_stores};
use crate::ui::transfer::BackupMenu;
use composer::Composer;
use leptos::prelude::*;
use messages::MessageList;
use model_picker::ModelPicker;

/// The chat pane.
#[component]
pub fn ChatPane() -> impl IntoView {
    view! {
        <main class="chat-pane" aria-label="Chat">
            <ChatHeader/>
            <UpdateReady/>
            <StatusArea/>
            <TemporaryNotice/>
            <MemoryBuildBar/>
            <MessageList/>
            <Composer/>
        </main>
    }
}

/// What a temporary chat is, while one is open.
#[component]
fn TemporaryNotice() -> impl IntoView {
    let chat = use_chat();
    view! {
        <Show when=move || chat.is_temporary()>
            <p class="temporary-notice" data-testid="temporary-chat-notice" role="note">
                "Temporary chat: it is not saved, it updates no memory, and it uses no memory about \
                you unless you turn that on in the memory pane. It is gone when you leave it or \
                reload the page."
            </p>
        </Show>
    }
}

/// The continuity badge ("new", "memory sent", …), explained on a click or a tap.
#[component]
fn ContinuityBadge(
    /// The open conversation.
    conversation: crate::engine::model::Conversation,
) -> impl IntoView {
    let (key, label, why) = continuity(&conversation);
    let ids = BadgeIds {
        info: "continuity-info",
        badge: "continuity-badge",
        explained: "continuity-explained",
    };
    view! { <ExplainedBadge key label why ids/> }
}

/// Drawer button, title, continuity badge, model picker, backup menu, memory toggle.
#[component]
fn ChatHeader() -> impl IntoView {
    let shell = use_shell();
    let chat = use_chat();
    let stores = use_stores();
    let title = move || stores.open_conversation();
    view! {
        <header class="chat-head">
            <button
                class="sidebar-toggle"
                data-testid="sidebar-toggle"
                aria-label="Show the conversations"
                aria-expanded=move || shell.drawer_open().to_string()
                on:click=move |_| shell.toggle_drawer()
            >
                <span aria-hidden="true">"☰"</span>
            </button>
            <h1 class="chat-title">
                {move || match title() {
                    Some(_) if chat.is_temporary() => "Temporary chat".to_string(),
                    Some(c) if !c.title.is_empty() => c.title,
                    Some(_) => "New conversation".to_string(),
                    None => "Memoire".to_string(),
                }}
            </h1>
            {move || title().map(|c| view! { <ContinuityBadge conversation=c/> })}
            <span class="spacer"></span>
            <ModelPicker/>
            <BackupMenu/>
            <MemoryPageOpen testid="header-memory-page-open"/>
            <button
                class="memory-toggle hicon"
                data-testid="memory-toggle"
                aria-label="Show or hide the memory panel"
                aria-expanded=move || shell.memory_shown().to_string()
                on:click=move |_| shell.toggle_memory_pane()
            >
                <span class="label">"Memory"</span>
            </button>
        </header>
    }
}
