//! The chat pane: header (drawer button, title, memory status, model picker, backup menu, memory
//! toggle), the one status area (an error with the action that fits it, else a notice), the message
//! list (`messages`) and the composer (`composer`). Must not import `store` or `transport`.

use crate::engine::format::continuity;
use crate::session::ErrorKind;
use crate::ui::backup::BackupMenu;
use crate::ui::composer::Composer;
use crate::ui::controller::Controller;
use crate::ui::memory_build::MemoryBuildBar;
use crate::ui::messages::MessageList;
use crate::ui::model_picker::ModelPicker;
use leptos::prelude::*;

/// The chat pane.
#[component]
pub fn ChatPane() -> impl IntoView {
    view! {
        <main class="chat-pane" aria-label="Chat">
            <ChatHeader/>
            <StatusArea/>
            <MemoryBuildBar/>
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
            <ModelPicker/>
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

/// The one place an error or a notice is shown, one at a time (an error wins), so messages never
/// sit under a stack of banners. An error offers the action that fits it: Retry and Settings for a
/// request to the agent, "Retry memory update" for a memory update, nothing but Dismiss otherwise.
#[component]
fn StatusArea() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    view! {
        <Show when=move || st.error.with(|e| e.is_some()) fallback=Notice>
            <ErrorBanner/>
        </Show>
    }
}

#[component]
fn ErrorBanner() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let kind = move || st.error.with(|e| e.as_ref().map(|p| p.kind));
    let is = move |k: ErrorKind| kind() == Some(k);
    view! {
        <div class="error-banner status-area" role="alert" data-testid="error-banner"
            data-kind=move || format!("{:?}", kind().unwrap_or(ErrorKind::Other)).to_lowercase()>
            <span class="text">{move || st.error.with(|e| e.as_ref().map(|p| p.text.clone()).unwrap_or_default())}</span>
            <Show when=move || is(ErrorKind::Request) && ctl.can_retry()>
                <button on:click=move |_| ctl.retry()>"Retry"</button>
            </Show>
            <Show when=move || is(ErrorKind::Request)>
                <button on:click=move |_| st.settings_open.set(true)>"Settings"</button>
            </Show>
            <Show when=move || is(ErrorKind::Memory)>
                <button data-testid="banner-memory-retry" on:click=move |_| {
                    st.error.set(None);
                    ctl.update_memory_now();
                }>"Retry memory update"</button>
            </Show>
            <button class="icon" aria-label="Dismiss" on:click=move |_| st.error.set(None)>"✕"</button>
        </div>
    }
}

#[component]
fn Notice() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    view! {
        <Show when=move || st.notice.with(|n| n.is_some())>
            <div class="notice status-area" role="status" data-testid="notice">
                <span>{move || st.notice.get().unwrap_or_default()}</span>
                <button class="icon" aria-label="Dismiss" on:click=move |_| st.notice.set(None)>"✕"</button>
            </div>
        </Show>
    }
}
