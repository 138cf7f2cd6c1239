//! The shell: what belongs to the app as a whole (its store, `store.rs`), the one status area
//! the chat pane shows it in: an error with the action that fits it, else a notice, and the prompt
//! to reload into a new version of the app (`update.rs`). Must not import `crate::store` or
//! `crate::transport`.

pub mod store;
pub mod update;

use crate::session::ErrorKind;
use crate::ui::stores::{use_chat, use_memory, use_settings, use_shell};
use leptos::prelude::*;

/// The one place an error or a notice is shown, one at a time (an error wins), so messages never
/// sit under a stack of banners. An error offers the action that fits it: Retry and Settings for a
/// request to the agent, "Retry memory update" for a memory update, nothing but Dismiss otherwise.
#[component]
pub fn StatusArea() -> impl IntoView {
    let shell = use_shell();
    view! {
        <Show when=move || shell.with_error(|e| e.is_some()) fallback=Notice>
            <ErrorBanner/>
        </Show>
    }
}

/// The error, with the action that fits its kind, and Dismiss.
#[component]
fn ErrorBanner() -> impl IntoView {
    let shell = use_shell();
    let chat = use_chat();
    let settings = use_settings();
    let memory = use_memory();
    let kind = move || shell.with_error(|e| e.as_ref().map(|p| p.kind));
    let is = move |k: ErrorKind| kind() == Some(k);
    view! {
        <div class="error-banner status-area" role="alert" data-testid="error-banner"
            data-kind=move || format!("{:?}", kind().unwrap_or(ErrorKind::Other)).to_lowercase()>
            <span class="text">{move || shell.with_error(|e| e.as_ref().map(|p| p.text.clone()).unwrap_or_default())}</span>
            <Show when=move || is(ErrorKind::Request) && chat.can_retry()>
                <button on:click=move |_| chat.retry()>"Retry"</button>
            </Show>
            <Show when=move || is(ErrorKind::Request)>
                <button on:click=move |_| settings.open_dialog()>"Settings"</button>
            </Show>
            <Show when=move || is(ErrorKind::Memory)>
                <button data-testid="banner-memory-retry" on:click=move |_| {
                    shell.dismiss_error();
                    memory.update_now();
                }>"Retry memory update"</button>
            </Show>
            <button class="icon" aria-label="Dismiss" on:click=move |_| shell.dismiss_error()>"✕"</button>
        </div>
    }
}

/// The notice, with Dismiss.
#[component]
fn Notice() -> impl IntoView {
    let shell = use_shell();
    view! {
        <Show when=move || shell.with_notice(|n| n.is_some())>
            <div class="notice status-area" role="status" data-testid="notice">
                <span>{move || shell.with_notice(|n| n.clone().unwrap_or_default())}</span>
                <button class="icon" aria-label="Dismiss" on:click=move |_| shell.dismiss_notice()>"✕"</button>
            </div>
        </Show>
    }
}
