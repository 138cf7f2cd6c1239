//! The MCP servers service ([`McpServers`], `session.mcp()`), Settings → Tools' side: add a server
//! by URL (its token kept for the URL's origin only), remove it, list the servers with their state
//! (connected, or the client's failure with its "How to fix") and their tools with each one's
//! switch, turn a tool on or off, connect again. Every call goes through split point `mcp`
//! ([`run`]): the connections' driver (`conn`) and the engine's client are its chunk, fetched at
//! Settings → Tools' first opening or the first turn that offers MCP tools. Must not import `ui`.

use std::rc::Rc;

use super::conn::{self, Registry, Status};
use crate::engine::mcp::origin_of;
use crate::engine::sync::origin::plain_http_check;
use crate::engine::tools::ToolDef;
use crate::session::shared::error::{Boxed, UNAVAILABLE};
use crate::session::shared::{new_id, now, Core};
use crate::store::{McpServer, StoreError};

/// What can go wrong in Settings → Tools. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The URL or token cannot be used; the text says why.
    #[error("{0}")]
    Invalid(String),
    #[error("This MCP server is no longer in the list (it may have been removed in another tab).")]
    NoServer,
    /// The `mcp` chunk could not be fetched; the next try fetches it again.
    #[error("{}", UNAVAILABLE)]
    Unavailable,
}

impl From<wasm_split_helpers::SplitLoaderError> for McpError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        McpError::Unavailable
    }
}

/// A server as Settings → Tools shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub id: String,
    pub url: String,
    pub has_token: bool,
    pub state: ServerState,
    pub tools: Vec<ToolView>,
    /// Why tools of its listing were left out.
    pub skipped: Vec<String>,
}

/// Where a server's connection stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    Connecting,
    Connected,
    /// It cannot be used: what happened, and how to fix it.
    Error {
        message: String,
        fix: Option<String>,
    },
}

/// One tool of a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolView {
    pub name: String,
    pub description: String,
    pub enabled: bool,
}

/// The MCP servers service. One per page.
pub struct McpServers {
    core: Rc<Core>,
}

/// What one call asks of the driver.
pub(super) enum Op {
    List,
    Add {
        url: String,
        token: Option<String>,
    },
    Remove(String),
    SetTool {
        id: String,
        tool: String,
        on: bool,
    },
    Reconnect(String),
    Watch(Option<Rc<dyn Fn(Vec<ServerView>)>>),
    Defs,
    Call {
        def: ToolDef,
        call_id: String,
        args: String,
    },
    Cancel(String),
}

/// What it gives back.
pub(super) enum Out {
    Servers(Vec<ServerView>),
    Done,
    Defs(Vec<ToolDef>),
    Call(Result<String, String>),
}

impl McpServers {
    pub(crate) fn new(core: Rc<Core>) -> Self {
        McpServers { core }
    }

    async fn servers(&self, op: Op) -> Result<Vec<ServerView>, McpError> {
        match run(self.core.clone(), op).await? {
            Out::Servers(v) => Ok(v),
            _ => Ok(Vec::new()),
        }
    }

    /// Every server added, with its state and tools (connecting those not yet asked).
    pub async fn list(&self) -> Result<Vec<ServerView>, McpError> {
        self.servers(Op::List).await
    }

    /// Adds the server at `url` (with a bearer `token`, sent only to that URL's origin) and
    /// connects it; the list after.
    pub async fn add(
        &self,
        url: String,
        token: Option<String>,
    ) -> Result<Vec<ServerView>, McpError> {
        self.servers(Op::Add { url, token }).await
    }

    /// Removes server `id` (its session closed, its token forgotten); the list after.
    pub async fn remove(&self, id: String) -> Result<Vec<ServerView>, McpError> {
        self.servers(Op::Remove(id)).await
    }

    /// Turns tool `tool` of server `id` on or off; the list after.
    pub async fn set_tool(
        &self,
        id: String,
        tool: String,
        on: bool,
    ) -> Result<Vec<ServerView>, McpError> {
        self.servers(Op::SetTool { id, tool, on }).await
    }

    /// Connects server `id` again; the list after.
    pub async fn reconnect(&self, id: String) -> Result<Vec<ServerView>, McpError> {
        self.servers(Op::Reconnect(id)).await
    }

    /// Calls `f` with the list at every change of a server's state or tools (`None`: stops).
    pub async fn watch(&self, f: Option<Rc<dyn Fn(Vec<ServerView>)>>) -> Result<(), McpError> {
        run(self.core.clone(), Op::Watch(f)).await.map(|_| ())
    }
}

/// Split point `mcp`: every MCP operation, so the driver, the engine's client and its failure
/// texts are one chunk fetched on first use.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(mcp, fallible, return_wrapper(let future = _; { future.await } -> Result<Out, McpError>)))]
pub(super) fn run(core: Rc<Core>, op: Op) -> Boxed<'static, Out, McpError> {
    Box::pin(run_now(core, op))
}

async fn run_now(core: Rc<Core>, op: Op) -> Result<Out, McpError> {
    let reg = Registry::of(&core);
    reg.load().await?;
    match op {
        Op::List => {
            let idle = reg.read(|v| ids_where(v, |s| s == &Status::Idle));
            idle.iter().for_each(|id| conn::connect(&reg, id, false));
        }
        Op::Add { url, token } => add(&reg, url, token).await?,
        Op::Remove(id) => {
            reg.store.delete_mcp_server(&id).await?;
            conn::remove(&reg, &id);
        }
        Op::SetTool { id, tool, on } => {
            let saved = reg
                .edit(&id, |s| {
                    s.disabled_tools.retain(|t| *t != tool);
                    if !on {
                        s.disabled_tools.push(tool);
                    }
                })
                .ok_or(McpError::NoServer)?;
            reg.store.put_mcp_server(&saved).await?;
        }
        Op::Reconnect(id) => conn::connect(&reg, &id, true),
        Op::Watch(f) => {
            let weak = Rc::downgrade(&reg);
            reg.watch(f.map(|f| -> Rc<dyn Fn()> {
                Rc::new(move || {
                    if let Some(reg) = weak.upgrade() {
                        f(views(&reg))
                    }
                })
            }));
            return Ok(Out::Done);
        }
        Op::Defs => return Ok(Out::Defs(defs(&reg).await)),
        Op::Call { def, call_id, args } => {
            let crate::engine::tools::ToolSource::Mcp(server) = &def.source else {
                return Ok(Out::Call(Err("This tool is not an MCP server's.".into())));
            };
            conn::start_call(&reg, server, &call_id, &def.name, &args);
            return Ok(Out::Call(conn::call_result(&reg, &call_id).await));
        }
        Op::Cancel(call_id) => {
            conn::cancel_call(&reg, &call_id);
            return Ok(Out::Done);
        }
    }
    Ok(Out::Servers(views(&reg)))
}

/// Checks, saves and connects a new server.
async fn add(reg: &Rc<Registry>, url: String, token: Option<String>) -> Result<(), McpError> {
    let url = url.trim().to_string();
    let token = token
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let origin = origin_of(&url)
        .filter(|_| url.starts_with("http://") || url.starts_with("https://"))
        .ok_or_else(|| {
            McpError::Invalid(
                "Enter the server's full address, starting with https:// (or http:// for one on \
                 this machine), such as https://example.com/mcp."
                    .into(),
            )
        })?;
    if let Err(e) = plain_http_check(&url, token.as_deref().unwrap_or("")) {
        return Err(McpError::Invalid(format!(
            "The token would travel unencrypted to {}: use the server's https:// address (plain \
             http:// carries a token only to this machine).",
            e.host
        )));
    }
    if reg.read(|v| v.iter().any(|s| s.saved.url == url)) {
        return Err(McpError::Invalid(
            "This server is already in the list.".into(),
        ));
    }
    let saved = McpServer {
        id: new_id("mcp-"),
        token_origin: token.as_ref().map(|_| origin),
        token,
        url,
        disabled_tools: Vec::new(),
        added_at: now(),
    };
    reg.store.put_mcp_server(&saved).await?;
    let id = saved.id.clone();
    reg.insert(saved);
    conn::connect(reg, &id, false);
    Ok(())
}

/// The enabled tools of every server, connecting those not connected and waiting for them; one
/// that fails is left out (Settings shows why).
async fn defs(reg: &Rc<Registry>) -> Vec<ToolDef> {
    let retry = reg.read(|v| ids_where(v, |s| matches!(s, Status::Idle | Status::Failed(_))));
    retry.iter().for_each(|id| conn::connect(reg, id, true));
    conn::settled(reg).await;
    reg.read(|v| {
        v.iter()
            .filter(|s| s.status == Status::Connected)
            .flat_map(|s| {
                s.tools
                    .iter()
                    .filter(|t| !s.saved.disabled_tools.contains(&t.name))
                    .cloned()
            })
            .collect()
    })
}

fn ids_where(v: &[conn::Server], f: impl Fn(&Status) -> bool) -> Vec<String> {
    v.iter()
        .filter(|s| f(&s.status))
        .map(|s| s.saved.id.clone())
        .collect()
}

/// The servers as Settings → Tools shows them.
fn views(reg: &Registry) -> Vec<ServerView> {
    reg.read(|v| {
        v.iter()
            .map(|s| ServerView {
                id: s.saved.id.clone(),
                url: s.saved.url.clone(),
                has_token: s.saved.token.is_some(),
                state: match &s.status {
                    Status::Idle | Status::Connecting => ServerState::Connecting,
                    Status::Connected => ServerState::Connected,
                    Status::Failed(f) => ServerState::Error {
                        message: f.message.clone(),
                        fix: f.fix.clone(),
                    },
                },
                tools: s
                    .tools
                    .iter()
                    .map(|t| ToolView {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        enabled: !s.saved.disabled_tools.contains(&t.name),
                    })
                    .collect(),
                skipped: s.skipped.clone(),
            })
            .collect()
    })
}
