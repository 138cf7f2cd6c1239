//! The MCP servers (Settings → Tools) and the runner that executes their tools' calls: helper
//! s23-mcp's module. This file holds only the seam the tool loop (`session/tools/`) calls, with
//! bodies that know no server, so the branch builds until s23-mcp's module replaces it.
//! Must not import `ui`.

use crate::engine::tools::ToolDef;
use crate::session::shared::Core;
use std::rc::Rc;

/// The MCP servers' tools, as the tool loop sees them.
pub(crate) struct McpTools {
    _core: Rc<Core>,
}

impl McpTools {
    /// Over the shared core (`crate::session::shared::Core`).
    pub(crate) fn new(core: Rc<Core>) -> McpTools {
        McpTools { _core: core }
    }

    /// The enabled tools of every MCP server the user added and left on, as the engine's defs with
    /// `ToolSource::Mcp(server_id)`: none here.
    pub(crate) async fn defs(&self) -> Vec<ToolDef> {
        Vec::new()
    }

    /// Runs one call of `def` on its server: Ok(result text) or Err(failure text the model reads).
    /// `call_id` names the call for `cancel`.
    pub(crate) async fn call(
        &self,
        _def: &ToolDef,
        _call_id: &str,
        _arguments: &str,
    ) -> Result<String, String> {
        Err("No MCP server is connected.".into())
    }

    /// Stops a running call (Stop): the server gets `notifications/cancelled`, `call` returns Err.
    pub(crate) fn cancel(&self, _call_id: &str) {}
}
