//! The chat pane: header (drawer button, title, memory status, backup menu, memory toggle), the
//! error banner and notice, the message list (`messages`) and the composer (`composer`).
//! Must not import `store` or `transport`.

use crate::engine::format::continuity;
use crate::ui::backup::BackupMenu;
use crate::ui::composer::Composer;
use crate::ui::controller::Controller;
use crate::ui::messages::MessageList;
use leptos::prelude::*;

/// The chat pane.
#[component]
pub fn ChatPane() -> impl IntoView {
    view! {
        <main class="chat-pane" aria-label="Chat">
            <ChatHeader/>
            <ErrorBanner/>
            <Notice/>
            <MessageList/>
            <Composer/>
        </main>
    }
}

#[component]
fn ChatHeader() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    let title = move || st.current_conversation();
    view! {
        <header class="chat-head">
            <button
                class="sidebar-toggle"
                data-testid="sidebar-toggle"
                aria-label="Show the conversations"
                aria-expanded=move || st.sidebar_open.get().to_string()
                on:click=move |_| st.sidebar_open.update(|o| *o = !*o)
            >
                <span aria-hidden="true">"☰"</span>
            </button>
            <h1 class="chat-title">
                {move || match title() {
                    Some(c) if !c.title.is_empty() => c.title,
                    Some(_) => "New conversation".to_string(),
                    None => "Memoire".to_string(),
                }}
            </h1>
            {move || title().map(|c| {
                let (key, label, why) = continuity(&c);
                view! {
                    <span class=format!("badge badge-{key}") data-testid="continuity-badge" data-continuity=key title=why>
                        {label}
                    </span>
                }
            })}
            <span class="spacer"></span>
            <BackupMenu/>
            <button
                class="memory-toggle"
                data-testid="memory-toggle"
                aria-label="Show or hide the memory pane"
                aria-expanded=move || st.memory_open.get().to_string()
                on:click=move |_| st.memory_open.update(|o| *o = !*o)
            >
                "Memory"
            </button>
        </header>
    }
}

/// The one place an error is shown, with the actions that fit it: Retry when the last turn can be
/// sent again, Settings when the endpoint may be the cause.
#[component]
fn ErrorBanner() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let offers_settings = move || st.error.with(|e| e.as_ref().is_some_and(|p| p.settings));
    view! {
        <Show when=move || st.error.with(|e| e.is_some())>
            <div class="error-banner" role="alert" data-testid="error-banner">
                <span class="text">{move || st.error.with(|e| e.as_ref().map(|p| p.text.clone()).unwrap_or_default())}</span>
                <Show when=move || ctl.can_retry()>
                    <button on:click=move |_| ctl.retry()>"Retry"</button>
                </Show>
                <Show when=offers_settings>
                    <button on:click=move |_| st.settings_open.set(true)>"Settings"</button>
                </Show>
                <button class="icon" aria-label="Dismiss" on:click=move |_| st.error.set(None)>"✕"</button>
            </div>
        </Show>
    }
}

#[component]
fn Notice() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    view! {
        <Show when=move || st.notice.with(|n| n.is_some())>
            <div class="notice" role="status" data-testid="notice">
                <span>{move || st.notice.get().unwrap_or_default()}</span>
                <button class="icon" aria-label="Dismiss" on:click=move |_| st.notice.set(None)>"✕"</button>
            </div>
        </Show>
    }
}
