//! The shell: what belongs to the app as a whole (its store, `store.rs`), the one status area
//! the chat pane shows it in: an error with the action that fits it, else a notice, and the prompt
//! to reload into a new version of the app (`update.rs`), the keyboard shortcuts sheet
//! (`shortcuts.rs`). Must not import `crate::store` or
//! `crate::transport`.

pub mod shortcuts;
pub mod store;
pub mod update;

use crate::engine::failure::split_text;
use crate::session::ErrorKind;
use crate::ui::stores::{use_memory, use_settings, use_shell};
use leptos::prelude::*;

/// The one place an error or a notice is shown, one at a time (an error wins), so messages never
/// sit under a stack of banners. An error offers the action that fits it: Settings for a request to
/// the agent, "Retry memory update" for a memory update, nothing but Dismiss otherwise.
#[component]
pub fn StatusArea() -> impl IntoView {
    let shell = use_shell();
    view! {
        <Show when=move || shell.with_error(|e| e.is_some()) fallback=Notice>
            <ErrorBanner/>
        </Show>
    }
}

/// The error: its first line, always visible, with Dismiss beside it; what fixes it behind "How to
/// fix" (`engine::failure::split_text`); Settings for a request to the agent (Retry is on the failed
/// message, one place only), "Retry memory update" for a memory update.
#[component]
fn ErrorBanner() -> impl IntoView {
    let shell = use_shell();
    let settings = use_settings();
    let memory = use_memory();
    let kind = move || shell.with_error(|e| e.as_ref().map(|p| p.kind));
    let is = move |k: ErrorKind| kind() == Some(k);
    let parts = move || {
        shell.with_error(|e| {
            let text = e.as_ref().map(|p| p.text.as_str()).unwrap_or_default();
            let (line, fix) = split_text(text);
            (line.to_string(), fix.map(str::to_string))
        })
    };
    view! {
        <div class="error-banner status-area" role="alert" data-testid="error-banner"
            data-kind=move || format!("{:?}", kind().unwrap_or(ErrorKind::Other)).to_lowercase()>
            <div class="banner-line">
                <span class="text" data-testid="error-line">{move || parts().0}</span>
                <button class="icon dismiss" aria-label="Dismiss" on:click=move |_| shell.dismiss_error()>"✕"</button>
            </div>
            {move || parts().1.map(|fix| view! {
                <details class="fix" data-testid="error-fix">
                    <summary>"How to fix"</summary>
                    <p>{fix}</p>
                </details>
            })}
            <Show when=move || is(ErrorKind::Request) || is(ErrorKind::Memory)>
                <div class="banner-actions">
                    <Show when=move || is(ErrorKind::Request)>
                        <button on:click=move |_| settings.open_dialog()>"Settings"</button>
                    </Show>
                    <Show when=move || is(ErrorKind::Memory)>
                        <button data-testid="banner-memory-retry" on:click=move |_| {
                            shell.dismiss_error();
                            memory.update_now();
                        }>"Retry memory update"</button>
                    </Show>
                </div>
            </Show>
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
