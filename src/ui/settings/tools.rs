//! Settings → Tools (issue 44): the MCP servers the user added, each with its state (connected,
//! or its failure's line and "How to fix" shown as the banner shows them) and its tools, each with
//! a switch; a server is added by URL with an optional bearer token. [`ToolsStore`] is the
//! section's store, made when the section mounts (inside the settings chunk): it keeps its signals
//! private, hands out readers and forwards each action to `session.mcp()` through the backend;
//! the session tells it of every change while the section is open. Tool descriptions come from
//! the server: shown as text only. Must not import `crate::store` or `crate::transport`.

use crate::session::{ServerState, ServerView};
use crate::ui::backend::Backend;
use leptos::prelude::*;
use std::rc::Rc;

/// The servers as last reported, and the add form's error. `Copy`.
#[derive(Clone, Copy)]
pub struct ToolsStore {
    backend: Backend,
    servers: RwSignal<Vec<ServerView>>,
    /// Why the last action failed (the add form shows it).
    error: RwSignal<Option<String>>,
}

impl ToolsStore {
    /// Nothing listed yet.
    pub fn new(backend: Backend) -> Self {
        ToolsStore {
            backend,
            servers: RwSignal::new(Vec::new()),
            error: RwSignal::new(None),
        }
    }

    /// Reads the servers (tracked).
    pub fn with_servers<R>(&self, f: impl FnOnce(&[ServerView]) -> R) -> R {
        self.servers.with(|v| f(v))
    }

    /// Why the last action failed (tracked).
    pub fn error(&self) -> Option<String> {
        self.error.get()
    }

    /// Lists the servers (connecting them) and hears every change until [`ToolsStore::close`].
    pub fn open(&self) {
        let (servers, error) = (self.servers, self.error);
        self.backend.run(move |s| async move {
            let tell: Rc<dyn Fn(Vec<ServerView>)> = Rc::new(move |v| {
                servers.try_set(v);
            });
            let r = match s.mcp().watch(Some(tell)).await {
                Ok(()) => s.mcp().list().await,
                Err(e) => Err(e),
            };
            apply(servers, error, r);
            Ok(())
        });
    }

    /// The section closed: no more changes are told.
    pub fn close(&self) {
        self.backend.run(move |s| async move {
            let _ = s.mcp().watch(None).await;
            Ok(())
        });
    }

    /// Adds the server at `url` (with `token`, empty for none); `on_added` runs once it is saved.
    pub fn add(&self, url: String, token: String, on_added: impl FnOnce() + 'static) {
        let (servers, error) = (self.servers, self.error);
        let token = Some(token).filter(|t| !t.trim().is_empty());
        self.backend.run(move |s| async move {
            if apply(servers, error, s.mcp().add(url, token).await) {
                on_added();
            }
            Ok(())
        });
    }

    /// Removes server `id`.
    pub fn remove(&self, id: String) {
        let (servers, error) = (self.servers, self.error);
        self.backend.run(move |s| async move {
            apply(servers, error, s.mcp().remove(id).await);
            Ok(())
        });
    }

    /// Turns tool `tool` of server `id` on or off.
    pub fn set_tool(&self, id: String, tool: String, on: bool) {
        let (servers, error) = (self.servers, self.error);
        self.backend.run(move |s| async move {
            apply(servers, error, s.mcp().set_tool(id, tool, on).await);
            Ok(())
        });
    }

    /// Connects server `id` again.
    pub fn reconnect(&self, id: String) {
        let (servers, error) = (self.servers, self.error);
        self.backend.run(move |s| async move {
            apply(servers, error, s.mcp().reconnect(id).await);
            Ok(())
        });
    }
}

/// Shows an action's outcome: the list after it, or why it failed. Whether it succeeded.
fn apply(
    servers: RwSignal<Vec<ServerView>>,
    error: RwSignal<Option<String>>,
    r: Result<Vec<ServerView>, crate::session::McpError>,
) -> bool {
    match r {
        Ok(v) => {
            servers.try_set(v);
            error.try_set(None);
            true
        }
        Err(e) => {
            error.try_set(Some(e.to_string()));
            false
        }
    }
}

/// The Tools section: the servers, their tools, and the add form.
#[component]
pub fn ToolsSection(store: ToolsStore) -> impl IntoView {
    store.open();
    on_cleanup(move || store.close());
    let url = RwSignal::new(String::new());
    let token = RwSignal::new(String::new());
    let add = move |_| {
        store.add(url.get_untracked(), token.get_untracked(), move || {
            url.set(String::new());
            token.set(String::new());
        })
    };
    view! {
        <section data-testid="settings-tools">
            <h3>"Tools"</h3>
            <p class="hint">"MCP servers whose tools the model may call, with your approval. The browser calls each server itself: it must allow this page (CORS)."</p>
            <For each=move || store.with_servers(|v| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>())
                key=|id| id.clone()
                children=move |id| view! { <ServerRow store id/> }/>
            <label>"Server URL"
                <input data-testid="settings-mcp-url" type="url" placeholder="https://example.com/mcp"
                    prop:value=move || url.get() on:input=move |ev| url.set(event_target_value(&ev))/>
            </label>
            <label>"Bearer token (optional)"
                <input data-testid="settings-mcp-token" type="password" autocomplete="off"
                    prop:value=move || token.get() on:input=move |ev| token.set(event_target_value(&ev))/>
                <span class="hint">"Stored on this device only, sent only to this server's origin; never exported or synced."</span>
            </label>
            <div class="row">
                <button data-testid="mcp-server-add" on:click=add>"Add server"</button>
            </div>
            <p class="error" role="alert">{move || store.error().unwrap_or_default()}</p>
        </section>
    }
}

/// One server: its URL, state, tools, Reconnect and Remove.
#[component]
fn ServerRow(store: ToolsStore, id: String) -> impl IntoView {
    let id = StoredValue::new(id);
    let server = move || store.with_servers(|v| v.iter().find(|s| s.id == id.get_value()).cloned());
    let state = move || match server().map(|s| s.state) {
        Some(ServerState::Connected) => "connected",
        Some(ServerState::Error { .. }) => "error",
        _ => "connecting",
    };
    let failure = move || match server().map(|s| s.state) {
        Some(ServerState::Error { message, fix }) => Some((message, fix)),
        _ => None,
    };
    let tools = move || server().map(|s| s.tools).unwrap_or_default();
    view! {
        <div class="mcp-server" data-testid="mcp-server" data-state=state>
            <div class="row">
                <code>{move || server().map(|s| s.url).unwrap_or_default()}</code>
                <span class="hint">{state}</span>
                <button on:click=move |_| store.reconnect(id.get_value())>"Reconnect"</button>
                <button on:click=move |_| store.remove(id.get_value())>"Remove"</button>
            </div>
            {move || failure().map(|(message, fix)| view! {
                <p class="error">{message}</p>
                {fix.map(|fix| view! {
                    <details class="fix" data-testid="mcp-server-fix">
                        <summary>"How to fix"</summary>
                        <p>{fix}</p>
                    </details>
                })}
            })}
            {move || tools().into_iter().map(|t| {
                let (name, on, shown) = (t.name.clone(), t.enabled, t.name.clone());
                view! {
                    <label class="inline" data-testid="mcp-tool" data-tool=shown
                        data-enabled=if on { "true" } else { "false" }>
                        <input type="checkbox" prop:checked=on
                            on:change=move |ev| store.set_tool(id.get_value(), name.clone(), event_target_checked(&ev))/>
                        " " <strong>{t.name}</strong> " " <span class="hint">{t.description}</span>
                    </label>
                }
            }).collect_view()}
        </div>
    }
}
