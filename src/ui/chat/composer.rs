//! The composer: Enter sends, Shift+Enter adds a line (Esc stops: `engine::keys`), `/clear` asks
//! first (a user message is edited where it is, see `messages.rs`, never here). The draft is
//! saved and the inspector refreshed a moment after typing stops. Must not import `crate::store` or
//! `crate::transport`.

use crate::ui::behaviour::use_debounce_fn;
use crate::ui::chat::attachments::{dropped, pasted, ComposerAttachments};
use crate::ui::stores::{use_composer, use_shell, use_stores};
use leptos::prelude::*;

/// The composer.
#[component]
pub fn Composer() -> impl IntoView {
    let composer = use_composer();
    let stores = use_stores();
    let shell = use_shell();
    let confirm_clear = RwSignal::new(false);
    let submit = move || {
        if stores.submit() {
            confirm_clear.set(true);
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" if !ev.shift_key() && !ev.is_composing() => {
            ev.prevent_default();
            submit();
        }
        _ => {}
    };
    let settle = use_debounce_fn(
        move || {
            composer.save_draft();
            stores.refresh_preview();
        },
        400,
    );
    Effect::new(move |_| {
        composer.track_draft();
        settle();
    });
    view! {
        <div class="composer" id="composer"
            on:dragover=move |ev: leptos::ev::DragEvent| ev.prevent_default()
            on:drop=move |ev: leptos::ev::DragEvent| {
                let files = dropped(&ev);
                if !files.is_empty() {
                    ev.prevent_default();
                    composer.attach_files(files);
                }
            }>
            <Show when=move || confirm_clear.get()>
                <ClearConfirm open=confirm_clear/>
            </Show>
            <textarea
                data-testid="composer-input"
                aria-label="Message (Enter sends, Shift+Enter adds a line, Esc stops)"
                placeholder=move || if shell.online() { "Message Memoire…  (/clear clears this conversation)" } else { "Offline: your draft is kept until you are back online" }
                rows="3"
                prop:value=move || composer.draft()
                on:input=move |ev| composer.set_draft(event_target_value(&ev))
                on:keydown=on_key
                on:paste=move |ev: leptos::ev::ClipboardEvent| {
                    let files = pasted(&ev);
                    if !files.is_empty() {
                        ev.prevent_default();
                        composer.attach_files(files);
                    }
                }
            ></textarea>
            <ComposerAttachments/>
            <ComposerActions submit=submit/>
        </div>
    }
}

/// `/clear` asks first: every message and all memory of the conversation go.
#[component]
fn ClearConfirm(
    /// Whether the question is shown; either answer closes it.
    open: RwSignal<bool>,
) -> impl IntoView {
    let stores = use_stores();
    view! {
        <div class="confirm-bar" role="alertdialog" aria-label="Confirm clear">
            <span>"Clear every message and all memory of this conversation? This cannot be undone."</span>
            <button class="danger" data-testid="confirm-clear" on:click=move |_| {
                open.set(false);
                stores.clear();
            }>"Clear"</button>
            <button data-testid="cancel-clear" on:click=move |_| open.set(false)>"Cancel"</button>
        </div>
    }
}

/// Send or Stop (Retry is on the message that failed).
#[component]
fn ComposerActions(
    /// Sends (or edits, or asks to clear) what the composer holds.
    submit: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let (stores, composer) = (use_stores(), use_composer());
    view! {
        <div class="composer-actions">
            <Show
                when=move || stores.streaming()
                fallback=move || view! {
                    <button
                        class="primary"
                        data-testid="send-button"
                        aria-label="Send"
                        disabled=move || composer.draft_is_blank()
                        on:click=move |_| submit()
                    >
                        "Send"
                    </button>
                }
            >
                <button class="danger" data-testid="stop-button" aria-label="Stop the reply" on:click=move |_| stores.stop()>
                    "Stop"
                </button>
            </Show>
        </div>
    }
}
