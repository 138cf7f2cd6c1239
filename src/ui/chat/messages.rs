//! The message list: a window of the open conversation's messages (older and newer pages load on
//! scroll, keeping the view where it was), following the bottom while a reply streams, sanitised
//! markdown (a finished reply's code highlighted and its math made MathML when the browser is idle:
//! `ui/highlight.rs`, `ui/math.rs`; a selection copies formulas as their TeX), each
//! message's status and actions (copy, edit, regenerate, delete, the pager between alternatives),
//! a reply's thinking (`thinking`) above its text and its generation figures under it.
//! Times are local times of day under a separator per day ("Today", "Yesterday", "Mon 23 Nov":
//! `engine::format`), the full date in the `<time>`'s tooltip and `datetime`. A user message is
//! edited where it is: its text becomes an editor with Save and Cancel.
//! Must not import `crate::store` or `crate::transport`.

use super::store::messages::MessagesStore;
use super::store::window::MessageItem;
use super::thinking::ThinkingBlock;
use super::tools::tool_calls;
use crate::engine::failure::split_text;
use crate::engine::format::{
    day_separator, full_date_time, generation_stats, iso_date_time, local_day, model_label, plural,
    reply_note, shown_status, time_of_day,
};
use crate::engine::markdown;
use crate::engine::model::{MessageStatus, Role};
use crate::engine::send::{actions_offered, continue_offered, may_resend};
use crate::ui::behaviour::{use_clipboard, use_follow_bottom, use_roving, UseFollowBottomReturn};
use crate::ui::highlight::highlight_later;
use crate::ui::math::{copy_with_tex, typeset_later};
use crate::ui::stores::{
    use_chat, use_composer, use_messages, use_settings, use_shell, use_stores,
};
use crate::ui::time::{now_ms, offset_at};
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The ids of a window's first and last messages.
type Ends = (Option<String>, Option<String>);

fn ends_of(l: &[MessageItem]) -> Ends {
    (
        l.first().map(|m| m.id.clone()),
        l.last().map(|m| m.id.clone()),
    )
}

/// Where the message `id` is laid out (its offset from its offset parent; 0 when not mounted). Only
/// differences are used: how far content mounted or unmounted above it moved it.
fn offset_in(list: &web_sys::HtmlElement, id: &str) -> f64 {
    let sel = format!("[data-message-id=\"{}\"]", css_escape(id));
    list.query_selector(&sel)
        .ok()
        .flatten()
        .and_then(|m| m.dyn_into::<web_sys::HtmlElement>().ok())
        .map_or(0.0, |m| f64::from(m.offset_top()))
}

/// A message that stays mounted while a page is mounted above or below, its distance from the
/// list's top, and the window's ends then: once the window changed, the view is put back so that
/// message has not moved.
type Anchor = (String, f64, Ends);

/// The message list of the open conversation.
#[component]
pub fn MessageList() -> impl IntoView {
    let (chat, messages) = (use_chat(), use_messages());
    let list_ref = NodeRef::<html::Div>::new();
    let follow = use_follow_bottom(list_ref, move || chat.track_current());
    let anchor = StoredValue::new(None::<Anchor>);
    let on_scroll = move |_| {
        let Some(el) = list_ref.get_untracked() else {
            return;
        };
        follow.scrolled(&el);
        if untrack(|| !messages.loading()) {
            load_at_edges(messages, &el, anchor);
        }
    };
    let after_render = use_after_render(messages, list_ref, follow, anchor);
    Effect::new(move |_| after_render());
    let on_click = use_code_copy();
    view! {
        <div class="message-list" data-testid="message-list" node_ref=list_ref id="messages"
            on:scroll=on_scroll on:click=on_click on:copy=move |ev| copy_with_tex(&ev)
            role="log" aria-live="polite" aria-label="Messages" tabindex="0">
            <Show when=move || messages.has_older()>
                <button class="load-older" data-testid="load-older" on:click=move |_| messages.load_older()>
                    {move || if messages.loading() { "Loading…" } else { "Load older messages" }}
                </button>
            </Show>
            <Show when=move || messages.loading() && messages.with_messages(|l| l.is_empty())>
                <div class="empty" role="status"><span class="spinner" aria-hidden="true"></span>" Loading messages…"</div>
            </Show>
            <EmptyState/>
            <For each=move || messages.with_messages(<[MessageItem]>::to_vec) key=|m| m.id.clone() let:item>
                <MessageView item=item/>
            </For>
            <Show when=move || messages.has_newer()>
                <button class="load-older" data-testid="load-newer" on:click=move |_| messages.load_newer()>
                    {move || if messages.loading() { "Loading…" } else { "Load newer messages" }}
                </button>
            </Show>
        </div>
    }
}

/// Near the top (or bottom) of the list, the page above (or below) is mounted; the view's anchor is
/// kept first.
fn load_at_edges(
    messages: MessagesStore,
    el: &web_sys::HtmlElement,
    anchor: StoredValue<Option<Anchor>>,
) {
    let top = el.scroll_top() as i32;
    let gap = el.scroll_height() - top - el.client_height();
    let (ends, older, newer) = untrack(|| {
        let ends = messages.with_messages(ends_of);
        (ends, messages.has_older(), messages.has_newer())
    });
    let (Some(first), Some(last)) = ends.clone() else {
        return;
    };
    if top < 200 && older {
        anchor.set_value(Some((first.clone(), offset_in(el, &first), ends)));
        messages.load_older();
    } else if gap < 200 && newer {
        anchor.set_value(Some((last.clone(), offset_in(el, &last), ends)));
        messages.load_newer();
    }
}

/// What runs after the window changes (a page mounted, a message added, a reply growing): scroll
/// to a focused message, keep an older page's anchor, or follow the bottom. The returned function
/// subscribes to what changes the layout and acts on the next animation frame, once the DOM has the
/// new nodes.
fn use_after_render(
    messages: MessagesStore,
    list_ref: NodeRef<html::Div>,
    follow: UseFollowBottomReturn,
    anchor: StoredValue<Option<Anchor>>,
) -> impl Fn() + 'static {
    // The message last marked `data-focused` (from a search hit or a source link).
    let focused = StoredValue::new_local(None::<web_sys::Element>);
    let stores = use_stores();
    move || {
        let ends = messages.with_messages(|l| {
            // The last message's growth and its final render (status) can both change the height.
            let _ = l
                .last()
                .map(|m| (m.state().with_content(str::len), m.state().status()));
            ends_of(l)
        });
        let newer = messages.has_newer();
        let focus = messages.focus();
        // The end of a turn shows the actions on the last messages: the height changes again.
        let _ = stores.streaming();
        // No message, nothing to focus or anchor: nothing to scroll, so no layout to read.
        if ends == (None, None) && focus.is_none() && anchor.with_value(Option::is_none) {
            return;
        }
        request_animation_frame(move || {
            // The list (and what it owns) may be gone by the next frame: nothing to do then.
            let Some(Some(el)) = list_ref.try_get_untracked() else {
                return;
            };
            if let Some(target) = focus.and_then(|fid| {
                let sel = format!("[data-message-id=\"{}\"]", css_escape(&fid));
                el.query_selector(&sel).ok().flatten()
            }) {
                if let Some(old) = focused.get_value() {
                    let _ = old.remove_attribute("data-focused");
                }
                focused.set_value(Some(target.clone()));
                target.scroll_into_view();
                let _ = target.set_attribute("data-focused", "true");
                messages.focused();
                follow.focused(&el);
                return;
            }
            if let Some((id, was_at, was_ends)) = anchor.get_value() {
                if ends != was_ends {
                    anchor.set_value(None);
                    let moved = offset_in(&el, &id) - was_at;
                    el.set_scroll_top(el.scroll_top() + moved.round());
                    follow.moved(&el);
                    return;
                }
            }
            follow.stick(&el, !newer);
        });
    }
}

/// Copy buttons in code blocks (delegated: the markdown HTML has no handlers of its own). The
/// button says whether the copy worked.
fn use_code_copy() -> impl Fn(leptos::ev::MouseEvent) + 'static {
    let clipboard = use_clipboard();
    let button = StoredValue::new_local(None::<web_sys::Element>);
    Effect::new(move |_| {
        let label = if clipboard.copied.get() {
            "Copied"
        } else if clipboard.failed.get() {
            "Copy failed"
        } else {
            "Copy"
        };
        if let Some(b) = button.get_value() {
            b.set_text_content(Some(label));
        }
    });
    move |ev: leptos::ev::MouseEvent| {
        let Some(target) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .filter(|t| t.class_list().contains("copy-code"))
        else {
            return;
        };
        let code = target
            .closest(".code-block")
            .ok()
            .flatten()
            .and_then(|p| p.query_selector("code").ok().flatten())
            .and_then(|c| c.text_content())
            .unwrap_or_default();
        if let Some(old) = button.get_value().filter(|b| b != &target) {
            old.set_text_content(Some("Copy"));
        }
        button.set_value(Some(target));
        clipboard.copy(&code);
    }
}

/// What an empty conversation says: how to connect an agent when none is set, else an invitation.
#[component]
fn EmptyState() -> impl IntoView {
    let messages = use_messages();
    let settings = use_settings();
    let no_endpoint = move || !settings.with_settings(|s| s.has_endpoint());
    let empty = move || messages.with_messages(|l| l.is_empty()) && !messages.loading();
    view! {
        <Show when=empty>
            <div class="empty-state" data-testid="empty-state">
                <Show
                    when=no_endpoint
                    fallback=|| view! {
                        <p>"Say something. Everything you write stays in this browser, and Memoire gives the agent back what it forgot."</p>
                    }
                >
                    <h2>"Connect a model"</h2>
                    <p>"Memoire chats with an AI model on a server you choose: one on this computer (Ollama, llama.cpp, LM Studio, vLLM) or an online service (OpenAI, Anthropic). Open Settings, pick your server from the list and press “Test connection”."</p>
                    <button class="primary" data-testid="empty-state-settings" on:click=move |_| settings.open_dialog()>"Open settings"</button>
                    <p class="hint">"You can read and search stored conversations without a server."</p>
                    <details class="help" data-testid="empty-state-help">
                        <summary>"Help: the server runs but Memoire can't reach it"</summary>
                        <p>"A server on this computer must allow this page's address (CORS). For Ollama, start it with OLLAMA_ORIGINS set to this page's origin; for llama.cpp's server, vLLM or LM Studio, enable CORS or pass --allowed-origins with this page's origin."</p>
                    </details>
                </Show>
            </div>
        </Show>
    }
}

/// One message: head, body, footnotes and actions.
#[component]
fn MessageView(
    /// The message to show.
    item: MessageItem,
) -> impl IntoView {
    let role = item.role;
    let st = item.state();
    let id = item.id.clone();
    view! {
        <DaySeparator id=item.id.clone() at=item.created_at/>
        <article
            class=format!("message role-{}", role.as_str())
            data-testid="message"
            data-role=role.as_str()
            data-status=move || { let s = st.status(); st.with_meta(|m| shown_status(s, m.capped)) }
            data-message-id=id
            aria-busy=move || (st.status() == MessageStatus::Streaming).to_string()
        >
            <MessageHead item=item.clone()/>
            <ThinkingBlock item=item.clone()/>
            <MessageBody item=item.clone()/>
            {
                let files = st.with_meta(|m| m.attachments.clone());
                (!files.is_empty()).then(|| view! {
                    <crate::ui::chat::attachments::MessageAttachments attachments=files/>
                })
            }
            <MessageFoot item=item.clone()/>
            <MessageActions item=item/>
        </article>
    }
}

/// Who wrote it (and which model), when, and its status in plain words.
#[component]
fn MessageHead(
    /// The message whose head this is.
    item: MessageItem,
) -> impl IntoView {
    let st = item.state();
    let note = move || {
        let s = st.status();
        st.with_meta(|m| reply_note(s, m.capped, m.error.as_deref()))
    };
    let who = match item.role {
        Role::User => "You",
        Role::Assistant => "Agent",
        Role::System => "System",
        Role::Tool => "Tool",
    };
    view! {
        <div class="message-head">
            <span class="who">{who}</span>
            {move || st.with_meta(|m| m.model.as_deref().map(|name| view! {
                <span class="model" data-testid="message-model" title=name.to_string()>{model_label(name)}</span>
            }))}
            {move || st.with_meta(|m| m.usage.filter(|u| u.completion_tokens > 0).map(|u| view! {
                <span class="tokens" data-testid="message-tokens" title=format!("As the endpoint reported it; the request was {} tokens", u.prompt_tokens)>
                    {plural(u.completion_tokens as usize, "token", "tokens")}
                </span>
            }))}
            <MessageTime at=item.created_at/>
            {move || st.with_meta(|m| m.hidden).then(|| view! {
                <span class="status status-hidden" data-testid="message-hidden"
                    title="The app it was imported from kept it out of the prompt: it is shown here and never sent to the model.">
                    "hidden from the model"
                </span>
            })}
            {move || note().map(|(key, label)| view! { <span class=format!("status status-{key}")>{label}</span> })}
            <Show when=move || st.status() == MessageStatus::Streaming>
                <span class="spinner small" aria-hidden="true"></span>
            </Show>
        </div>
    }
}

/// A message's local time of day; the full date in its tooltip and `datetime`.
#[component]
fn MessageTime(
    /// When the message was written.
    at: i64,
) -> impl IntoView {
    let offset = offset_at(at);
    view! {
        <time data-testid="message-time" datetime=iso_date_time(at) title=full_date_time(at, offset)>
            {time_of_day(at, offset)}
        </time>
    }
}

/// "Today", "Yesterday", "Mon 23 Nov" over the first message of each local day in the window.
#[component]
fn DaySeparator(
    /// The message it may stand over.
    id: String,
    /// When that message was written.
    at: i64,
) -> impl IntoView {
    let messages = use_messages();
    let offset = offset_at(at);
    let first_of_day = move || {
        messages
            .with_messages(|l| {
                let i = l.iter().position(|m| m.id == id)?;
                let before = i.checked_sub(1).map(|j| l[j].created_at);
                Some(before.is_none_or(|b| local_day(b, offset_at(b)) != local_day(at, offset)))
            })
            .unwrap_or(false)
    };
    view! {
        <Show when=first_of_day>
            <div class="day-separator" data-testid="day-separator" role="separator" aria-label=day_separator(at, now_ms(), offset)>
                <span>{day_separator(at, now_ms(), offset)}</span>
            </div>
        </Show>
    }
}

/// The text: plain for the user's messages (an editor in its place while edited), sanitised
/// markdown for the agent's.
#[component]
fn MessageBody(
    /// The message whose text this is.
    item: MessageItem,
) -> impl IntoView {
    let composer = use_composer();
    let st = item.state();
    if item.role == Role::User {
        let id = item.id.clone();
        let editing = move || composer.is_editing(&id);
        return view! {
            <Show
                when=editing
                fallback=move || view! { <div class="message-content plain" data-testid="message-content">{move || st.content()}</div> }
            >
                <MessageEditor item=item.clone()/>
            </Show>
        }
        .into_any();
    }
    let html = move || {
        let streaming = st.status() == MessageStatus::Streaming;
        st.with_content(|c| {
            if streaming {
                markdown::render_streaming(c)
            } else {
                markdown::render(c)
            }
        })
    };
    // A finished reply's formulas become MathML and its code blocks are highlighted once the
    // browser is idle (never while it streams): the text, formulas as TeX, is on screen first.
    let body = NodeRef::<html::Div>::new();
    Effect::new(move |_| {
        st.track_content();
        let done = st.status() != MessageStatus::Streaming;
        if let Some(el) = body.get().filter(|_| done) {
            let el: web_sys::Element = el.into();
            typeset_later(el.clone());
            highlight_later(el);
        }
    });
    view! { <div class="message-content markdown" data-testid="message-content" node_ref=body inner_html=html></div> }.into_any()
}

/// A user message's editor, where the message is: Save sends the new text as a new branch (the
/// earlier one stays a page away, ‹ ›), Cancel (or Esc) leaves it as it was.
#[component]
fn MessageEditor(
    /// The user message being edited.
    item: MessageItem,
) -> impl IntoView {
    let (stores, composer) = (use_stores(), use_composer());
    let st = item.state();
    let text = RwSignal::new(st.content_untracked());
    let input = NodeRef::<html::Textarea>::new();
    Effect::new(move |_| {
        if let Some(el) = input.get() {
            let _ = el.focus();
        }
    });
    let id = item.id.clone();
    let save = move || {
        let t = text.get_untracked();
        if may_resend(&t, untrack(|| stores.streaming())) {
            stores.edit(id.clone(), t);
        }
    };
    let save_click = save.clone();
    let on_key = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" if !ev.shift_key() && !ev.is_composing() => {
            ev.prevent_default();
            save();
        }
        "Escape" => {
            ev.prevent_default();
            ev.stop_propagation();
            composer.cancel_edit();
        }
        _ => {}
    };
    view! {
        <div class="message-editor" data-testid="message-editor">
            <textarea data-testid="edit-message-input" aria-label="Edit your message (Enter saves, Esc cancels)"
                rows="3" node_ref=input prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev)) on:keydown=on_key></textarea>
            <p class="hint">"Saving sends it again for a new reply. The earlier version stays: ‹ › switch between them."</p>
            <div class="row">
                <button data-testid="cancel-edit" on:click=move |_| composer.cancel_edit()>"Cancel"</button>
                <button class="primary" data-testid="save-edit" disabled=move || text.with(|t| t.trim().is_empty())
                    on:click=move |_| save_click()>"Save"</button>
            </div>
        </div>
    }
}

/// The reply's tool calls (`tools`), and why a reply failed unless the error banner says it already.
#[component]
fn MessageFoot(
    /// The message whose footnotes these are.
    item: MessageItem,
) -> impl IntoView {
    let shell = use_shell();
    let st = item.state();
    let error = move || {
        let failed = st.status() == MessageStatus::Error;
        let e = st.with_meta(|m| m.error.clone()).filter(|_| failed)?;
        let in_banner =
            shell.with_error(|b| b.as_ref().is_some_and(|p| split_text(&p.text).0 == e));
        (!in_banner).then_some(e)
    };
    let stats = move || {
        let done = st.status() != MessageStatus::Streaming;
        st.with_meta(|m| m.stats.filter(|_| done).map(|s| generation_stats(&s)))
    };
    view! {
        {move || stats().map(|line| view! { <div class="message-stats" data-testid="message-stats">{line}</div> })}
        {tool_calls(item.clone())}
        {move || error().map(|e| view! { <div class="message-error">{e}</div> })}
    }
}

/// Retry on the last message while the last turn can be sent again (a failed reply, one cut off or
/// stopped, a question without a reply); Continue on a reply the reply cap cut; Copy on every finished message that says something; the
/// pager between alternatives; once no reply is being written, Edit on every user message,
/// Regenerate on every reply that did not fail, and Delete (which asks first). None while the
/// message is edited in place.
#[component]
fn MessageActions(
    /// The message these actions act on.
    item: MessageItem,
) -> impl IntoView {
    let (stores, chat, composer) = (use_stores(), use_chat(), use_composer());
    let messages = use_messages();
    let clipboard = use_clipboard();
    let st = item.state();
    // A temporary chat's messages are not stored: no branch to edit, regenerate or delete from.
    let idle = move || actions_offered(stores.streaming(), st.status(), chat.is_temporary());
    let is_user = item.role == Role::User;
    // A reply that failed before it said anything: nothing to copy or regenerate; Retry replaces it.
    let failed =
        move || st.status() == MessageStatus::Error && st.with_content(|c| c.trim().is_empty());
    let retry_here = {
        let id = item.id.clone();
        move || messages.retry_on(&id, stores.streaming())
    };
    let edit = {
        let id = item.id.clone();
        move |_| composer.start_edit(id.clone())
    };
    let regenerate = {
        let id = item.id.clone();
        move |_| stores.regenerate(id.clone())
    };

    // While the message is edited in place its editor's Save and Cancel are the only actions.
    let editing_id = item.id.clone();
    // One tab stop per message: the arrow keys move between its actions (`use_roving`).
    let row = NodeRef::<html::Div>::new();
    let tracked_retry = retry_here.clone();
    use_roving(row, "button", move || {
        let _ = (
            idle(),
            tracked_retry(),
            failed(),
            st.with_meta(|m| m.capped),
            st.status(),
            st.alternatives(),
        );
    });
    // On a phone each action is an icon (its name for screen readers in `aria-label`, which starts
    // with the word shown on wider screens) on a 44×44 px target.
    view! {
        <div class="message-actions" role="toolbar" aria-label="Message actions" node_ref=row
            hidden=move || composer.is_editing(&editing_id)>
            <AlternativePager item=item.clone()/>
            <Show when=move || retry_here()>
                <button class="retry" data-testid="retry-button" aria-label="Retry: ask again" on:click=move |_| stores.retry()>"Retry"</button>
            </Show>
            <Show when=move || st.status() != MessageStatus::Streaming && !failed()>
                <button class="link act act-copy" data-testid="copy-message"
                    aria-label=move || if clipboard.copied.get() { "Copied" } else if clipboard.failed.get() { "Copy failed" } else { "Copy this message" }
                    on:click=move |_| clipboard.copy(&st.content_untracked())>
                    <span class="label">{move || if clipboard.copied.get() { "Copied" } else if clipboard.failed.get() { "Copy failed" } else { "Copy" }}</span>
                </button>
            </Show>
            <Show when={
                let id = item.id.clone();
                move || idle() && is_user && !composer.is_editing(&id)
            }>
                <button class="link act act-edit" data-testid="edit-message" aria-label="Edit this message" on:click=edit.clone()>
                    <span class="label">"Edit"</span>
                </button>
            </Show>
            <ContinueButton item=item.clone()/>
            <Show when=move || idle() && item.role == Role::Assistant && !failed()>
                <button class="link act act-regenerate" data-testid="regenerate-button" aria-label="Regenerate this reply (the earlier one is kept)" on:click=regenerate.clone()>
                    <span class="label">"Regenerate"</span>
                </button>
            </Show>
            <Show when=idle>
                <DeleteMessage id=item.id.clone()/>
            </Show>
        </div>
    }
}

/// Continue, on a reply the reply cap cut while no reply is being written (not in a temporary
/// chat, whose messages are not stored): asks for the rest, which grows the same reply.
#[component]
fn ContinueButton(
    /// The reply it continues.
    item: MessageItem,
) -> impl IntoView {
    let (stores, chat) = (use_stores(), use_chat());
    let st = item.state();
    let capped = move || {
        let s = st.status();
        let capped = st.with_meta(|m| shown_status(s, m.capped) == "capped");
        continue_offered(capped, stores.streaming(), chat.is_temporary())
    };
    let id = item.id.clone();
    view! {
        <Show when=capped>
            <button class="continue" data-testid="message-continue" aria-label="Continue: ask for the rest of this reply"
                on:click={
                    let id = id.clone();
                    move |_| stores.continue_reply(id.clone())
                }>"Continue"</button>
        </Show>
    }
}

/// ‹ 1/2 › between a message's alternatives (regenerated replies, edits).
#[component]
fn AlternativePager(
    /// The message whose alternatives these are.
    item: MessageItem,
) -> impl IntoView {
    let stores = use_stores();
    let st = item.state();
    let busy = move || stores.streaming();
    let go = move |next: bool| {
        let to = st.with_alternatives_untracked(|a| {
            a.as_ref()
                .and_then(|a| if next { a.next.clone() } else { a.prev.clone() })
        });
        if let Some(to) = to {
            stores.show_alternative(to);
        }
    };
    view! {
        {move || st.alternatives().map(|a| view! {
            <span class="alternatives" role="group" aria-label="Alternatives">
                <button class="link" data-testid="alternative-prev" aria-label="Previous alternative"
                    disabled=a.prev.is_none() || busy() on:click=move |_| go(false)>"‹"</button>
                <span data-testid="alternative-position">{format!("{}/{}", a.position, a.count)}</span>
                <button class="link" data-testid="alternative-next" aria-label="Next alternative"
                    disabled=a.next.is_none() || busy() on:click=move |_| go(true)>"›"</button>
            </span>
        })}
    }
}

/// Delete, asking first: only this message goes (what came after it stays).
#[component]
fn DeleteMessage(
    /// The message to delete.
    id: String,
) -> impl IntoView {
    let stores = use_stores();
    let asking = RwSignal::new(false);
    view! {
        <Show
            when=move || asking.get()
            fallback=move || view! {
                <button class="link act act-delete" data-testid="delete-message" aria-label="Delete this message"
                    on:click=move |_| asking.set(true)><span class="label">"Delete"</span></button>
            }
        >
            <span class="confirm-inline" role="alertdialog" aria-label="Confirm delete">
                "Delete this message? "
                <button class="link danger" data-testid="confirm-delete-message" on:click={
                    let id = id.clone();
                    move |_| {
                        asking.set(false);
                        stores.delete_message(id.clone());
                    }
                }>"Delete"</button>
                <button class="link" data-testid="cancel-delete-message" on:click=move |_| asking.set(false)>"Cancel"</button>
            </span>
        </Show>
    }
}

/// Escapes an id for use inside a CSS attribute selector in double quotes.
fn css_escape(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}
