//! MCP servers from the page (issue 44, item 2): the servers service ([`McpServers`],
//! `session.mcp()`, in `service.rs`: Settings → Tools' add, remove, list with state, tools on or
//! off, reconnect) and the runner [`McpTools`] the tool loop uses (the enabled tools as
//! `engine::tools::ToolDef`s, a call run on its server, Stop). Both drive `engine::mcp::McpClient`
//! through one driver per page (`conn.rs`, its connections kept in `Core::mcp`), over `fetch`
//! (`transport::open_any`), behind split point `mcp`. The page's origin is the browser glue's
//! (`browser.rs`). The servers' records and tokens are the store's (`store/mcp.rs`), never
//! exported nor synced. Must not import `ui`.

mod browser;
mod conn;
mod service;

pub use service::{McpError, McpServers, ServerState, ServerView, ToolView};

use crate::session::shared::error::UNAVAILABLE;
use service::{run, Op, Out};
use std::rc::Rc;

/// The MCP tools' runner, for the tool loop (`session/tools/`).
pub(crate) struct McpTools {
    core: Rc<crate::session::shared::Core>,
}

impl McpTools {
    /// Over the shared core (`crate::session::shared::Core`).
    pub(crate) fn new(core: std::rc::Rc<crate::session::shared::Core>) -> McpTools {
        McpTools { core }
    }

    /// The enabled tools of every MCP server the user added and left on (connecting those not yet connected; a server that fails is left out and shows its error in Settings), as the engine's defs with `ToolSource::Mcp(server_id)`.
    pub(crate) async fn defs(&self) -> Vec<crate::engine::tools::ToolDef> {
        match run(self.core.clone(), Op::Defs).await {
            Ok(Out::Defs(d)) => d,
            _ => Vec::new(),
        }
    }

    /// Runs one call of `def` on its server: Ok(result text) or Err(failure text the model reads). `call_id` names the call for `cancel`.
    pub(crate) async fn call(
        &self,
        def: &crate::engine::tools::ToolDef,
        call_id: &str,
        arguments: &str,
    ) -> Result<String, String> {
        let op = Op::Call {
            def: def.clone(),
            call_id: call_id.to_string(),
            args: arguments.to_string(),
        };
        match run(self.core.clone(), op).await {
            Ok(Out::Call(r)) => r,
            Ok(_) => Err("The MCP server gave no result.".into()),
            Err(_) => Err(UNAVAILABLE.into()),
        }
    }

    /// Stops a running call (Stop): the server gets `notifications/cancelled`, `call` returns Err.
    pub(crate) fn cancel(&self, call_id: &str) {
        let op = Op::Cancel(call_id.to_string());
        let fut = run(self.core.clone(), op);
        wasm_bindgen_futures::spawn_local(async move {
            let _ = fut.await;
        });
    }
}
