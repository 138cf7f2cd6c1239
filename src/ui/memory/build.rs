//! Building memory from a history, on screen: after an import, the offer to build the imported
//! conversations' memory; in the memory pane, "Build memory from this conversation" when its
//! history is not covered (the engine decides: `memory::catchup::needs_catch_up`); and one progress
//! line (conversation i of n, part j of m) with Cancel, then how the build ended (with Retry of
//! only the conversations that failed, when some did). The build's state is the memory store's.
//! Must not import `crate::store` or `crate::transport`.

use crate::engine::format::{clip, plural};
use crate::engine::memory::catchup::{is_imported, needs_catch_up, Backlog};
use crate::session::BuildStatus;
use crate::ui::stores::{use_memory, use_stores};
use leptos::prelude::*;

/// The import's offer and the progress line, in the chat pane under the status area.
#[component]
pub fn MemoryBuildBar() -> impl IntoView {
    let memory = use_memory();
    let running = move || memory.building();
    let offer = move || memory.offered();
    let offered = move || offer() != 0 && !running();
    view! {
        <Show when=offered>
            <div class="notice memory-build" role="status">
                <span>{move || format!("Memory can be built from the {} just imported.", plural(offer(), "conversation", "conversations"))}</span>
                <button data-testid="memory-build-all" on:click=move |_| memory.build_memory(memory.offer_untracked())>
                    "Build memory for the imported conversations"
                </button>
                <button class="icon" aria-label="Dismiss" on:click=move |_| memory.dismiss_offer()>"✕"</button>
            </div>
        </Show>
        {move || memory.build().map(|b| view! { <BuildLine status=b/> })}
    }
}

/// Where the build stands: running (with Cancel), or how it ended (with Dismiss).
#[component]
fn BuildLine(
    /// Where the build stands.
    status: BuildStatus,
) -> impl IntoView {
    let memory = use_memory();
    let (state, text) = match &status {
        BuildStatus::Running { title, conversation, conversations, chunk, chunks, .. } => (
            "running",
            format!(
                "Building memory: conversation {conversation} of {conversations} (“{}”), part {chunk} of {chunks}…",
                clip(title, 60)
            ),
        ),
        BuildStatus::Done(t) => ("done", t.clone()),
        BuildStatus::Failed { text, .. } => ("failed", text.clone()),
        BuildStatus::Stopped(t) => ("stopped", t.clone()),
    };
    let retry = match status {
        BuildStatus::Failed { retry, .. } => Some(retry),
        _ => None,
    };
    let running = state == "running";
    view! {
        <div class="notice memory-build" role="status" data-testid="memory-build-progress" data-state=state>
            <span>{text}</span>
            {running.then(|| view! {
                <button data-testid="memory-build-cancel" on:click=move |_| memory.cancel_build()>"Cancel"</button>
            })}
            {retry.map(|ids| view! {
                <button data-testid="memory-build-retry" on:click=move |_| memory.build_memory(ids.clone())>"Retry"</button>
            })}
            {(!running).then(|| view! {
                <button class="icon" aria-label="Dismiss" on:click=move |_| memory.dismiss_build()>"✕"</button>
            })}
        </div>
    }
}

/// The memory pane's "Build memory from this conversation", while its history is not covered and
/// no build runs.
#[component]
pub fn BuildThis() -> impl IntoView {
    let memory = use_memory();
    let stores = use_stores();
    let offered = move || {
        let Some(conv) = stores.open_conversation() else {
            return false;
        };
        let running = memory.building();
        let summarised = memory.with_view(|m| m.summary.as_ref().map_or(0, |s| s.message_count));
        !running
            && needs_catch_up(Backlog {
                message_count: conv.message_count,
                summarised,
                imported: is_imported(&conv.id),
                recent_messages: stores.memory_config().recent_messages,
            })
    };
    view! {
        <Show when=offered>
            <button data-testid="memory-build" on:click=move |_| memory.build_shown()>
                "Build memory from this conversation"
            </button>
        </Show>
    }
}
