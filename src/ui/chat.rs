//! The chat pane: header, the windowed message list (older pages load on scroll), sanitised
//! markdown, streaming status, the error banner, and the composer (Enter sends, Shift+Enter adds a
//! line, Esc stops, `/clear` asks first, stop / retry / edit-and-resend).
//! Must not import `store` or `transport`.

use crate::engine::follow::Follow;
use crate::engine::format::{continuity, date_time};
use crate::engine::markdown;
use crate::engine::model::{MessageStatus, Role};
use crate::session::{ImportStep, PreparedImport};
use crate::ui::controller::Controller;
use crate::ui::state::MessageItem;
use crate::ui::time::now_ms;
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The chat pane.
#[component]
pub fn ChatPane() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let title = move || {
        let cur = st.current.get()?;
        st.conversations
            .with(|l| l.iter().find(|c| c.id == cur).cloned())
    };
    view! {
        <main class="chat-pane" aria-label="Chat">
            <header class="chat-head">
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
                <ExportButtons/>
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
            <ErrorBanner/>
            <Notice/>
            <MessageList/>
            <Composer/>
        </main>
    }
}

#[component]
fn ErrorBanner() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    view! {
        <Show when=move || st.error.with(|e| e.is_some())>
            <div class="error-banner" role="alert" data-testid="error-banner">
                <span class="text">{move || st.error.get().unwrap_or_default()}</span>
                <Show when=move || ctl.can_retry()>
                    <button on:click=move |_| ctl.retry()>"Retry"</button>
                </Show>
                <button on:click=move |_| st.settings_open.set(true)>"Settings"</button>
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

#[component]
fn ExportButtons() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let open = RwSignal::new(false);
    let export = move |all: bool, md: bool| {
        open.set(false);
        let id = st.current.get_untracked();
        ctl.run(move |s, _| async move {
            let (name, mime, text) = match (all, md, id) {
                (false, true, Some(id)) => (
                    "memoire-conversation.md",
                    "text/markdown",
                    s.export_markdown(&id).await?,
                ),
                (false, false, Some(id)) => (
                    "memoire-conversation.json",
                    "application/json",
                    s.export_json(Some(&id)).await?,
                ),
                _ => (
                    "memoire-backup.json",
                    "application/json",
                    s.export_json(None).await?,
                ),
            };
            download(name, mime, &text);
            Ok(())
        });
    };
    // Another app's export waits here for the user to confirm; `importing` shows the progress bar.
    let pending = RwSignal::new(None::<PreparedImport>);
    let importing = RwSignal::new(false);
    let on_import = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        input.set_value("");
        open.set(false);
        pending.set(None);
        ctl.run(move |s, st| async move {
            importing.set(true);
            let step = s.open_import(file).await;
            importing.set(false);
            match step? {
                ImportStep::Written(report) => {
                    st.notice.set(Some(report));
                    st.conversations.set(s.list_conversations().await?);
                }
                ImportStep::Preview(p) => pending.set(Some(p)),
            }
            Ok(())
        });
    };
    let confirm = move |_| {
        let Some(p) = pending.get_untracked() else {
            return;
        };
        pending.set(None);
        ctl.run(move |s, st| async move {
            importing.set(true);
            let done = s.confirm_import(p).await;
            importing.set(false);
            st.notice.set(Some(done?));
            st.conversations.set(s.list_conversations().await?);
            Ok(())
        });
    };
    view! {
        <div class="export">
            <button
                data-testid="export-button"
                aria-haspopup="menu"
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                "Backup"
            </button>
            <Show when=move || open.get()>
                <div class="menu" role="menu">
                    <Show when=move || st.current.with(|c| c.is_some())>
                        <button role="menuitem" data-testid="export-conversation-json" on:click=move |_| export(false, false)>
                            "Export this conversation (JSON)"
                        </button>
                        <button role="menuitem" data-testid="export-conversation-markdown" on:click=move |_| export(false, true)>
                            "Export this conversation (Markdown)"
                        </button>
                    </Show>
                    <button role="menuitem" data-testid="export-all-json" on:click=move |_| export(true, false)>
                        "Export everything (JSON)"
                    </button>
                    <label class="import" role="menuitem">
                        "Import a backup or another app's export…"
                        <input
                            type="file"
                            accept="application/json,application/zip,.json,.jsonl,.zip"
                            data-testid="import-input"
                            on:change=on_import
                        />
                    </label>
                </div>
            </Show>
            <Show when=move || importing.get()>
                <progress class="import-progress" data-testid="import-progress" aria-label="Importing"></progress>
            </Show>
            <Show when=move || pending.with(|p| p.is_some())>
                <div class="import-preview" role="dialog" aria-label="Import preview" data-testid="import-preview">
                    <p class="file">{move || pending.with(|p| p.as_ref().map(|p| p.file_name.clone()).unwrap_or_default())}</p>
                    <p>{move || pending.with(|p| p.as_ref().map(|p| p.preview.clone()).unwrap_or_default())}</p>
                    <div class="actions">
                        <button class="primary" data-testid="import-confirm" on:click=confirm>"Import"</button>
                        <button data-testid="import-cancel" on:click=move |_| pending.set(None)>"Cancel"</button>
                    </div>
                </div>
            </Show>
        </div>
    }
}

/// Offers `text` as a file download.
fn download(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let doc = web_sys::window().and_then(|w| w.document());
    if let Some(a) = doc
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

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
fn offset_in(list: &web_sys::HtmlDivElement, id: &str) -> f64 {
    let sel = format!("[data-message-id=\"{}\"]", css_escape(id));
    list.query_selector(&sel)
        .ok()
        .flatten()
        .and_then(|m| m.dyn_into::<web_sys::HtmlElement>().ok())
        .map_or(0.0, |m| f64::from(m.offset_top()))
}

#[component]
fn MessageList() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let list_ref = NodeRef::<html::Div>::new();
    // Follow the stream unless the user scrolled up (the rule is `engine::follow`). A plain value,
    // not a signal: the scroll handlers and the effect below read it without subscribing.
    let follow = StoredValue::new(Follow::default());
    // Before a page is mounted above or below: a message that stays mounted, its distance from the
    // list's top, and the window's (first, last) ids then; once the window changed, the view is put
    // back so that message has not moved.
    let anchor = StoredValue::new(None::<(String, f64, Ends)>);
    // The message last marked `data-focused` (from a search hit or a source link).
    let focused = StoredValue::new_local(None::<web_sys::Element>);
    let on_scroll = move |_| {
        let Some(el) = list_ref.get_untracked() else {
            return;
        };
        let top = el.scroll_top() as i32;
        let gap = el.scroll_height() - top - el.client_height();
        follow.update_value(|f| f.handle_scroll(top, gap, now_ms()));
        if st.loading_messages.get_untracked() {
            return;
        }
        let ends = st.messages.with_untracked(|l| ends_of(l));
        let (Some(first), Some(last)) = ends.clone() else {
            return;
        };
        if top < 200 && st.has_older.get_untracked() {
            anchor.set_value(Some((first.clone(), offset_in(&el, &first), ends)));
            ctl.load_older();
        } else if gap < 200 && st.has_newer.get_untracked() {
            anchor.set_value(Some((last.clone(), offset_in(&el, &last), ends)));
            ctl.load_newer();
        }
    };
    let on_wheel = move |ev: leptos::ev::WheelEvent| {
        follow.update_value(|f| f.handle_input(now_ms(), ev.delta_y() < 0.0));
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let up = matches!(ev.key().as_str(), "ArrowUp" | "PageUp" | "Home");
        follow.update_value(|f| f.handle_input(now_ms(), up));
    };
    let on_pointer = move |_: leptos::ev::PointerEvent| {
        follow.update_value(|f| f.handle_input(now_ms(), false));
    };
    let on_touch = move |_: leptos::ev::TouchEvent| {
        follow.update_value(|f| f.handle_input(now_ms(), false));
    };
    Effect::new(move |_| {
        st.current.track();
        follow.update_value(Follow::handle_opened);
    });
    // After the window changes (a page mounted, a message added, a reply growing): keep an older
    // page's anchor, scroll to a focused message, or follow the bottom. Runs on the next animation
    // frame, once the DOM has the new nodes.
    Effect::new(move |_| {
        let ends = st.messages.with(|l| {
            // The last message's growth and its final render (status) can both change the height.
            let _ = l
                .last()
                .map(|m| (m.content.with(|c| c.len()), m.status.get()));
            ends_of(l)
        });
        let newer = st.has_newer.get();
        let focus = st.focus_message.get();
        // The end of a turn shows the Edit action on the last user message: the height changes again.
        let _ = st.current_streaming();
        request_animation_frame(move || {
            let Some(el) = list_ref.get_untracked() else {
                return;
            };
            if let Some(fid) = focus {
                let sel = format!("[data-message-id=\"{}\"]", css_escape(&fid));
                if let Ok(Some(target)) = el.query_selector(&sel) {
                    if let Some(old) = focused.get_value() {
                        let _ = old.remove_attribute("data-focused");
                    }
                    focused.set_value(Some(target.clone()));
                    target.scroll_into_view();
                    let _ = target.set_attribute("data-focused", "true");
                    st.focus_message.set(None);
                    follow.update_value(|f| f.handle_focused(el.scroll_top() as i32));
                    return;
                }
            }
            if let Some((id, was_at, was_ends)) = anchor.get_value() {
                if ends != was_ends {
                    anchor.set_value(None);
                    let moved = offset_in(&el, &id) - was_at;
                    el.set_scroll_top(el.scroll_top() + moved.round());
                    follow.update_value(|f| f.handle_moved(el.scroll_top() as i32));
                    return;
                }
            }
            if follow.with_value(|f| f.follows(!newer)) {
                el.set_scroll_top(f64::from(el.scroll_height()));
                follow.update_value(|f| f.handle_moved(el.scroll_top() as i32));
            }
        });
    });
    // Copy buttons in code blocks (delegated: the markdown HTML has no handlers of its own).
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let Some(target) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        else {
            return;
        };
        if !target.class_list().contains("copy-code") {
            return;
        }
        let code = target
            .parent_element()
            .and_then(|p| p.query_selector("code").ok().flatten())
            .and_then(|c| c.text_content())
            .unwrap_or_default();
        if let Some(w) = web_sys::window() {
            let done = w.navigator().clipboard().write_text(&code);
            wasm_bindgen_futures::spawn_local(async move {
                let label = match wasm_bindgen_futures::JsFuture::from(done).await {
                    Ok(_) => "Copied",
                    Err(_) => "Copy failed",
                };
                target.set_text_content(Some(label));
            });
        }
    };
    view! {
        <div class="message-list" data-testid="message-list" node_ref=list_ref
            on:scroll=on_scroll on:wheel=on_wheel on:keydown=on_key on:pointerdown=on_pointer
            on:touchstart=on_touch on:click=on_click
            role="log" aria-live="polite" aria-label="Messages" tabindex="0">
            <Show when=move || st.has_older.get()>
                <button class="load-older" data-testid="load-older" on:click=move |_| ctl.load_older()>
                    {move || if st.loading_messages.get() { "Loading…" } else { "Load older messages" }}
                </button>
            </Show>
            <Show when=move || st.loading_messages.get() && st.messages.with(|l| l.is_empty())>
                <div class="empty" role="status"><span class="spinner" aria-hidden="true"></span>" Loading messages…"</div>
            </Show>
            <EmptyState/>
            <For each=move || st.messages.get() key=|m| m.id.clone() let:item>
                <MessageView item=item/>
            </For>
            <Show when=move || st.has_newer.get()>
                <button class="load-older" data-testid="load-newer" on:click=move |_| ctl.load_newer()>
                    {move || if st.loading_messages.get() { "Loading…" } else { "Load newer messages" }}
                </button>
            </Show>
        </div>
    }
}

#[component]
fn EmptyState() -> impl IntoView {
    let st = expect_context::<Controller>().state;
    let no_endpoint = move || !st.settings.with(|s| s.has_endpoint());
    let empty = move || st.messages.with(|l| l.is_empty()) && !st.loading_messages.get();
    view! {
        <Show when=empty>
            <div class="empty-state" data-testid="empty-state">
                <Show
                    when=no_endpoint
                    fallback=|| view! {
                        <p>"Say something. Everything you write stays in this browser, and Memoire gives the agent back what it forgot."</p>
                    }
                >
                    <h2>"Connect an agent"</h2>
                    <p>"Memoire talks to an agent endpoint you choose: Ollama, llama.cpp's server, LM Studio, vLLM, OpenAI or Anthropic. Open the settings, pick a preset and check the model name."</p>
                    <p>"Local servers must allow this page's origin (CORS), e.g. start Ollama with OLLAMA_ORIGINS set to this page's origin."</p>
                    <button class="primary" data-testid="empty-state-settings" on:click=move |_| st.settings_open.set(true)>"Open settings"</button>
                    <p class="hint">"You can read and search stored conversations without an endpoint."</p>
                </Show>
            </div>
        </Show>
    }
}

#[component]
fn MessageView(
    /// The message to show.
    item: MessageItem,
) -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let role = item.role;
    let content = item.content;
    let status = item.status;
    let meta = item.meta;
    let id = item.id.clone();
    let html = move || {
        let streaming = status.get() == MessageStatus::Streaming;
        content.with(|c| {
            if streaming {
                markdown::render_streaming(c)
            } else {
                markdown::render(c)
            }
        })
    };
    let is_last_user = {
        let id = id.clone();
        move || {
            role == Role::User
                && !st.current_streaming()
                && st.messages.with(|l| {
                    crate::engine::history::last_user_at(l, |m| m.role)
                        .is_some_and(|at| l[at].id == id)
                })
        }
    };
    let edit = move |_| {
        st.draft.set(content.get_untracked());
        crate::ui::focus_testid("composer-input");
        if let Some(el) = web_sys::window().and_then(|w| w.document()).and_then(|d| {
            d.query_selector("[data-testid=composer-input]")
                .ok()
                .flatten()
        }) {
            let _ = el.set_attribute("data-editing", "true");
        }
    };
    let status_label = move || match status.get() {
        MessageStatus::Streaming => Some("writing…"),
        MessageStatus::Interrupted => Some("interrupted — the partial reply is kept"),
        MessageStatus::Error => Some("failed"),
        MessageStatus::Complete => None,
    };
    view! {
        <article
            class=format!("message role-{}", role.as_str())
            data-testid="message"
            data-role=role.as_str()
            data-status=move || status.get().as_str()
            data-message-id=id.clone()
            aria-busy=move || (status.get() == MessageStatus::Streaming).to_string()
        >
            <div class="message-head">
                <span class="who">{match role { Role::User => "You", Role::Assistant => "Agent", Role::System => "System", Role::Tool => "Tool" }}</span>
                <time title=date_time(item.created_at)>{date_time(item.created_at)}</time>
                {move || meta.with(|m| m.path.map(|p| view! { <span class="path" title="How this turn reached the agent">{p.as_str()}</span> }))}
                {move || status_label().map(|s| view! { <span class=format!("status status-{}", status.get().as_str())>{s}</span> })}
                <Show when=move || status.get() == MessageStatus::Streaming>
                    <span class="spinner small" aria-hidden="true"></span>
                </Show>
            </div>
            {if role == Role::User {
                view! { <div class="message-content plain" data-testid="message-content">{move || content.get()}</div> }.into_any()
            } else {
                view! { <div class="message-content markdown" data-testid="message-content" inner_html=html></div> }.into_any()
            }}
            {move || meta.with(|m| (!m.tool_calls.is_empty()).then(|| {
                let names = m.tool_calls.iter().map(|t| t.name.clone()).collect::<Vec<_>>().join(", ");
                view! { <div class="tools">"Tools used: " {names}</div> }
            }))}
            {move || meta.with(|m| m.error.clone().map(|e| view! { <div class="message-error">{e}</div> }))}
            <Show when=is_last_user.clone()>
                <div class="message-actions">
                    <button class="link" data-testid="edit-message" aria-label="Edit and resend" on:click=edit>"Edit"</button>
                </div>
            </Show>
        </article>
    }
}

#[component]
fn Composer() -> impl IntoView {
    let ctl = expect_context::<Controller>();
    let st = ctl.state;
    let input_ref = NodeRef::<html::Textarea>::new();
    let confirm_clear = RwSignal::new(false);
    let streaming = move || st.current_streaming();
    let submit = move || {
        let text = st.draft.get_untracked();
        if text.trim().is_empty() || streaming() {
            return;
        }
        if text.trim() == "/clear" {
            confirm_clear.set(true);
            return;
        }
        let editing = input_ref
            .get_untracked()
            .is_some_and(|el| el.get_attribute("data-editing").is_some());
        if let Some(el) = input_ref.get_untracked() {
            let _ = el.remove_attribute("data-editing");
        }
        if editing {
            st.draft.set(String::new());
            ctl.edit_last(text);
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
    let on_input = move |ev: leptos::ev::Event| {
        st.draft.set(event_target_value(&ev));
    };
    // Save the draft and refresh the inspector a moment after typing stops.
    let tick = StoredValue::new(0u32);
    Effect::new(move |_| {
        st.draft.track();
        let n = tick.get_value().wrapping_add(1);
        tick.set_value(n);
        set_timeout(
            move || {
                if tick.get_value() == n {
                    ctl.save_draft();
                    ctl.refresh_preview();
                }
            },
            std::time::Duration::from_millis(400),
        );
    });
    view! {
        <div class="composer">
            <Show when=move || confirm_clear.get()>
                <div class="confirm-bar" role="alertdialog" aria-label="Confirm clear">
                    <span>"Clear every message and all memory of this conversation? This cannot be undone."</span>
                    <button class="danger" data-testid="confirm-clear" on:click=move |_| {
                        confirm_clear.set(false);
                        st.draft.set(String::new());
                        ctl.clear();
                    }>"Clear"</button>
                    <button data-testid="cancel-clear" on:click=move |_| confirm_clear.set(false)>"Cancel"</button>
                </div>
            </Show>
            <textarea
                data-testid="composer-input"
                aria-label="Message (Enter sends, Shift+Enter adds a line, Esc stops)"
                placeholder=move || if st.online.get() { "Message Memoire…  (/clear clears this conversation)" } else { "Offline: your draft is kept until you are back online" }
                rows="3"
                node_ref=input_ref
                prop:value=move || st.draft.get()
                on:input=on_input
                on:keydown=on_key
            ></textarea>
            <div class="composer-actions">
                <Show when=move || ctl.can_retry()>
                    <button data-testid="retry-button" aria-label="Retry the last message" on:click=move |_| ctl.retry()>"Retry"</button>
                </Show>
                <Show
                    when=streaming
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
        </div>
    }
}

/// Escapes an id for use inside a CSS attribute selector in double quotes.
fn css_escape(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}
