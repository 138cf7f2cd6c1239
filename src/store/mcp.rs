//! MCP servers (Settings → Tools, issue 44): the servers the user added, as one record under key
//! `mcp_servers` of the `settings` object store (so no schema version is needed), each with its
//! id, URL, the optional bearer token with the origin it was typed for (like the sync password:
//! the session sends it only to that origin), the tools the user turned off (a tool the server
//! adds later starts on), and when it was added. A change reads and writes the list in one
//! transaction, so two tabs' changes do not undo each other. Never exported in backups nor
//! synced: the backup and sync read no `settings` record but the settings' own, and no change
//! event carries these. [`McpServer`] is the store's public type; [`ServerRecord`] its stored
//! form, converted explicitly both ways. Must not import `ui`, `session`, `transport`.

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::schema::SETTINGS;
use super::settings::{put_setting_in, setting_in};
use super::Store;

/// The key of the servers' record in `settings`.
const KEY: &str = "mcp_servers";

/// An MCP server the user added.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpServer {
    pub id: String,
    pub url: String,
    /// The bearer token, when one was given.
    pub token: Option<String>,
    /// The origin the token was typed for; the token goes nowhere else.
    pub token_origin: Option<String>,
    /// The tools (MCP names) the user turned off.
    pub disabled_tools: Vec<String>,
    /// When it was added (ms), for the list's order.
    pub added_at: i64,
}

/// A server's stored form, in the list under `mcp_servers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ServerRecord {
    id: String,
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_origin: Option<String>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    #[serde(default)]
    added_at: i64,
}

impl ServerRecord {
    fn of(s: &McpServer) -> ServerRecord {
        let McpServer {
            id,
            url,
            token,
            token_origin,
            disabled_tools,
            added_at,
        } = s.clone();
        ServerRecord {
            id,
            url,
            token,
            token_origin,
            disabled_tools,
            added_at,
        }
    }

    fn into_server(self) -> McpServer {
        let ServerRecord {
            id,
            url,
            token,
            token_origin,
            disabled_tools,
            added_at,
        } = self;
        McpServer {
            id,
            url,
            token,
            token_origin,
            disabled_tools,
            added_at,
        }
    }
}

/// The stored list (none: empty; a record that does not read is an error, never an empty list
/// written over it).
fn records_of(v: Option<serde_json::Value>) -> Result<Vec<ServerRecord>, StoreError> {
    match v {
        None => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v).map_err(|e| StoreError::BadRecord {
            what: "MCP server list",
            detail: e.to_string(),
        }),
    }
}

impl Store {
    /// Every MCP server added, oldest first.
    pub async fn mcp_servers(&self) -> Result<Vec<McpServer>, StoreError> {
        let tx = self.tx(&[SETTINGS], false)?;
        let list = records_of(setting_in(&tx.store(SETTINGS)?, KEY).await?)?;
        Ok(list.into_iter().map(ServerRecord::into_server).collect())
    }

    /// Saves server `s`: a new one at the end, or its record replaced.
    pub async fn put_mcp_server(&self, s: &McpServer) -> Result<(), StoreError> {
        self.change_mcp_servers(&s.id, Some(ServerRecord::of(s)))
            .await
    }

    /// Removes server `id` (its token with it).
    pub async fn delete_mcp_server(&self, id: &str) -> Result<(), StoreError> {
        self.change_mcp_servers(id, None).await
    }

    /// Replaces (or with `None` removes) server `id` in the list, in one transaction.
    async fn change_mcp_servers(
        &self,
        id: &str,
        new: Option<ServerRecord>,
    ) -> Result<(), StoreError> {
        let tx = self.tx(&[SETTINGS], true)?;
        let settings = tx.store(SETTINGS)?;
        let mut list = records_of(setting_in(&settings, KEY).await?)?;
        match (list.iter_mut().find(|r| r.id == id), new) {
            (Some(r), Some(new)) => *r = new,
            (None, Some(new)) => list.push(new),
            (_, None) => list.retain(|r| r.id != id),
        }
        let value = serde_json::to_value(&list).map_err(|e| StoreError::Encode(e.to_string()))?;
        put_setting_in(&settings, KEY, &value)?;
        tx.done().await
    }
}
