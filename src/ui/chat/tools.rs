//! A reply's tool calls: each call (`tool-call`, its `data-status`) with the tool's name, its
//! server ("Memoire" for the built-in memory tools, `engine::memory_tools::BUILTIN_SERVER`) and
//! its arguments; while this tab's turn waits for the user, Allow, Deny and "Always allow this
//! tool" (`tool-approve`, `tool-deny`, `tool-always`, forwarded through `Stores::answer_tool`);
//! its result collapsed under it (`tool-result`, a `<details>`): untrusted text, capped and
//! rendered through the replies' sanitiser (`engine::markdown`). The list is behind split point
//! `tools`, fetched when the first reply with a call is shown; a placeholder stands meanwhile (and
//! stays when the chunk cannot be fetched, until the reply's calls change and it is asked again).
//! Must not import `crate::store` or `crate::transport`.

use super::store::window::MessageItem;
use crate::engine::markdown;
use crate::engine::memory_tools::{BUILTIN_SERVER, FACTS, READ, SEARCH};
use crate::engine::model::{MessageStatus, ToolCall, ToolStatus};
use crate::engine::tools::{cap_result, Approval};
use crate::session::ChatError;
use crate::ui::stores::use_stores;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Characters of a result shown under its call.
const SHOWN_RESULT_CHARS: usize = 4_000;

/// The list's view, built in its chunk.
type CallsView = fn(MessageItem) -> AnyView;

/// The tool calls of reply `item`, once it has any: a placeholder of their room until the list's
/// chunk is here (each reply asks the loader, which fetches it once; a fetch that failed is asked
/// again when the reply's calls change).
pub fn tool_calls(item: MessageItem) -> impl IntoView {
    let built = RwSignal::new(None::<CallsView>);
    move || {
        let n = item.state().with_meta(|m| m.tool_calls.len());
        (n > 0).then(|| match built.get() {
            Some(view) => view(item.clone()),
            None => {
                spawn_local(async move {
                    if let Ok(view) = calls_split().await {
                        built.set(Some(view));
                    }
                });
                view! { <div class="tool-call" aria-busy="true"></div> }.into_any()
            }
        })
    }
}

/// Split point `tools`: the list of a reply's calls, its buttons and results.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(tools, fallible, return_wrapper(let view = _; { view.await } -> Result<CallsView, ChatError>)))]
fn calls_split() -> std::future::Ready<Result<CallsView, ChatError>> {
    std::future::ready(Ok(calls_view))
}

fn calls_view(item: MessageItem) -> AnyView {
    view! { <CallList item=item/> }.into_any()
}

/// Every call of the reply, each kept while its status stays (an opened result stays open).
#[component]
fn CallList(item: MessageItem) -> impl IntoView {
    let st = item.state();
    let stores = use_stores();
    // This tab's turn is writing the reply: its waiting calls wait for this user.
    let asking = move || stores.streaming() && st.status() == MessageStatus::Streaming;
    view! {
        <div class="tool-calls">
            <For each=move || st.with_meta(|m| m.tool_calls.clone())
                key=|c| (c.id.clone(), c.status())
                children=move |c| view! { <Call call=c asking=Signal::derive(asking)/> }/>
        </div>
    }
}

/// Where a call ran: the app for a built-in memory tool, else an MCP server.
fn server_of(name: &str) -> &'static str {
    match name {
        SEARCH | READ | FACTS => BUILTIN_SERVER,
        _ => "MCP server",
    }
}

/// One call.
#[component]
fn Call(call: ToolCall, asking: Signal<bool>) -> impl IntoView {
    let stores = use_stores();
    let status = call.status();
    let waiting = status == ToolStatus::Waiting;
    let answer = move |id: &str, a: Approval| {
        let id = id.to_string();
        move |_| stores.answer_tool(id.clone(), a)
    };
    let id = call.id.clone();
    let buttons = move || {
        (waiting && asking.get()).then(|| {
            view! {
                <div class="row tool-approval">
                    <button class="primary" data-testid="tool-approve" on:click=answer(&id, Approval::Allow)>"Allow"</button>
                    <button data-testid="tool-deny" on:click=answer(&id, Approval::Deny)>"Deny"</button>
                    <button data-testid="tool-always" on:click=answer(&id, Approval::Always)>"Always allow this tool"</button>
                </div>
            }
        })
    };
    let result = call.result.as_deref().map(|r| {
        let html = markdown::render(&cap_result(r, SHOWN_RESULT_CHARS));
        view! {
            <details class="tool-result" data-testid="tool-result">
                <summary>"Result"</summary>
                <div class="markdown" inner_html=html></div>
            </details>
        }
    });
    view! {
        <div class="tool-call" data-testid="tool-call" data-status=status.as_str()>
            <div class="tool-call-head">
                <span class="tool-name">{call.name.clone()}</span>
                " · "<span class="tool-server">{server_of(&call.name)}</span>
                " · "<span class="tool-status">{status.as_str()}</span>
            </div>
            <pre class="tool-arguments">{call.arguments.clone()}</pre>
            {buttons}
            {result}
        </div>
    }
}
