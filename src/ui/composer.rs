//! The composer: Enter sends, Shift+Enter adds a line, Esc stops, `/clear` asks first, and an
//! edit of a user message (`state.editing`) is sent as an edit (a new branch). The draft is saved and the
//! inspector refreshed a moment after typing stops. Must not import `store` or `transport`.

use crate::ui::behaviour::use_debounce_fn;
use crate::ui::controller::Controller;
use leptos::prelude::*;

/// The composer.
#[component]
pub fn Composer() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let confirm_clear = RwSignal::new(false);
    let submit = move || {
        let text = st.draft.get_untracked();
        if text.trim().is_empty() || st.current_streaming_untracked() {
            return;
        }
        if text.trim() == "/clear" {
            confirm_clear.set(true);
        } else if let Some(message_id) = st.editing.get_untracked() {
            ctl.edit(message_id, text);
        } else {
            ctl.send(text);
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" if !ev.shift_key() && !ev.is_composing() => {
            ev.prevent_default();
            submit();
        }
        "Escape" => {
            ev.prevent_default();
            ctl.stop();
        }
        _ => {}
    };
    let settle = use_debounce_fn(
        move || {
            ctl.save_draft();
            ctl.refresh_preview();
        },
        400,
    );
    Effect::new(move |_| {
        st.draft.track();
        settle();
    });
    view! {
        <div class="composer" id="composer">
            <Show when=move || confirm_clear.get()>
                <ClearConfirm open=confirm_clear/>
            </Show>
            <Show when=move || st.editing.with(|e| e.is_some())>
                <div class="editing-bar" data-testid="editing-bar">
                    <span>"Editing your message: sending starts a new branch here; the earlier one stays, a page away (‹ ›)."</span>
                    <button class="link" data-testid="cancel-edit" on:click=move |_| {
                        st.editing.set(None);
                        st.draft.set(String::new());
                    }>"Cancel"</button>
                </div>
            </Show>
            <textarea
                data-testid="composer-input"
                aria-label="Message (Enter sends, Shift+Enter adds a line, Esc stops)"
                placeholder=move || if st.online.get() { "Message Memoire…  (/clear clears this conversation)" } else { "Offline: your draft is kept until you are back online" }
                rows="3"
                data-editing=move || st.editing.with(|e| e.is_some().then_some("true"))
                prop:value=move || st.draft.get()
                on:input=move |ev| st.draft.set(event_target_value(&ev))
                on:keydown=on_key
            ></textarea>
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
    let ctl = expect_context::<Controller>();
    view! {
        <div class="confirm-bar" role="alertdialog" aria-label="Confirm clear">
            <span>"Clear every message and all memory of this conversation? This cannot be undone."</span>
            <button class="danger" data-testid="confirm-clear" on:click=move |_| {
                open.set(false);
                ctl.state.draft.set(String::new());
                ctl.clear();
            }>"Clear"</button>
            <button data-testid="cancel-clear" on:click=move |_| open.set(false)>"Cancel"</button>
        </div>
    }
}

/// Retry (when the last turn can be sent again), and Send or Stop.
#[component]
fn ComposerActions(
    /// Sends (or edits, or asks to clear) what the composer holds.
    submit: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    view! {
        <div class="composer-actions">
            <Show when=move || ctl.can_retry()>
                <button data-testid="retry-button" aria-label="Retry the last message" on:click=move |_| ctl.retry()>"Retry"</button>
            </Show>
            <Show
                when=move || st.current_streaming()
                fallback=move || view! {
                    <button
                        class="primary"
                        data-testid="send-button"
                        aria-label="Send"
                        disabled=move || st.draft.with(|d| d.trim().is_empty())
                        on:click=move |_| submit()
                    >
                        "Send"
                    </button>
                }
            >
                <button class="danger" data-testid="stop-button" aria-label="Stop the reply" on:click=move |_| ctl.stop()>
                    "Stop"
                </button>
            </Show>
        </div>
    }
}
