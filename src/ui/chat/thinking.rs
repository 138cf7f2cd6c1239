//! A reply's reasoning (the model's thinking) as a collapsible block above its text
//! (`message-reasoning`, with `data-open`): open while only reasoning has arrived, so it streams
//! in view, and collapsed once the answer starts or the reply is finished (a reload shows it
//! collapsed); a click opens or closes it for good. Its head says "Thinking…" until the answer
//! began, then "Thought for N s" from the times the engine recorded (`Reasoning::seconds`). The
//! text is untrusted model output, rendered through the same sanitising markdown as the reply.
//! Must not import `crate::store` or `crate::transport`.

use super::store::window::MessageItem;
use crate::engine::markdown;
use crate::engine::model::MessageStatus;
use leptos::html;
use leptos::prelude::*;

/// The block, when the message has reasoning.
#[component]
pub fn ThinkingBlock(
    /// The reply whose reasoning this is.
    item: MessageItem,
) -> impl IntoView {
    let st = item.state();
    let has = move || st.with_meta(|m| m.reasoning.as_ref().is_some_and(|r| !r.text.is_empty()));
    view! {
        <Show when=has>
            <Thinking item=item.clone()/>
        </Show>
    }
}

#[component]
fn Thinking(item: MessageItem) -> impl IntoView {
    let st = item.state();
    let streaming = move || st.status() == MessageStatus::Streaming;
    let thinking = move || {
        streaming() && st.with_meta(|m| m.reasoning.as_ref().is_some_and(|r| r.ended_at.is_none()))
    };
    // The reader's own choice, once they opened or closed the block.
    let chosen = RwSignal::new(None::<bool>);
    let open = move || chosen.get().unwrap_or_else(thinking);
    let head = move || {
        let seconds = st.with_meta(|m| m.reasoning.as_ref().and_then(|r| r.seconds()));
        match seconds {
            Some(n) if !thinking() => format!("Thought for {n} s"),
            _ if streaming() => "Thinking…".to_string(),
            _ => "Thoughts".to_string(),
        }
    };
    let html = move || {
        let live = streaming();
        st.with_meta(|m| {
            let text = m.reasoning.as_ref().map_or("", |r| r.text.as_str());
            if live {
                markdown::render_streaming(text)
            } else {
                markdown::render(text)
            }
        })
    };
    let details = NodeRef::<html::Details>::new();
    let toggled = move |_| {
        if let Some(el) = details.get_untracked() {
            if el.open() != open() {
                chosen.set(Some(el.open()));
            }
        }
    };
    view! {
        <details class="message-reasoning" data-testid="message-reasoning" node_ref=details
            data-open=move || open().to_string() prop:open=open on:toggle=toggled>
            <summary class="reasoning-head">{head}</summary>
            <div class="reasoning-content markdown" inner_html=html></div>
        </details>
    }
}
