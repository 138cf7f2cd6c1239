//! MCP servers (Settings → Tools, issue 44): one record per server the user added, under keys
//! `mcp_server:<id>` of the `settings` object store (so no schema version is needed): its id, URL,
//! the optional bearer token with the origin it was typed for (like the sync password: the
//! session sends it only to that origin), the tools the user turned off (a tool the server adds
//! later starts on), and when it was added. Never exported in backups nor synced: the backup and
//! sync read no `settings` record but the settings' own, and no change event carries these.
//! [`McpServer`] is the store's public type; [`ServerRecord`] its stored form, converted
//! explicitly both ways. Must not import `ui`, `session`, `transport`.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js};
use super::schema::SETTINGS;
use super::Store;

/// The key prefix of the server records in `settings`.
const PREFIX: &str = "mcp_server:";
/// The first key after every `mcp_server:` key (`;` follows `:`).
const PREFIX_END: &str = "mcp_server;";

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

/// A server's stored form, in the `settings` store (key `mcp_server:<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ServerRecord {
    key: String,
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
        } = s;
        ServerRecord {
            key: format!("{PREFIX}{id}"),
            url: url.clone(),
            token: token.clone(),
            token_origin: token_origin.clone(),
            disabled_tools: disabled_tools.clone(),
            added_at: *added_at,
        }
    }

    fn into_server(self) -> McpServer {
        let ServerRecord {
            key,
            url,
            token,
            token_origin,
            disabled_tools,
            added_at,
        } = self;
        McpServer {
            id: key.strip_prefix(PREFIX).unwrap_or(&key).to_string(),
            url,
            token,
            token_origin,
            disabled_tools,
            added_at,
        }
    }
}

impl Store {
    /// Every MCP server added, oldest first.
    pub async fn mcp_servers(&self) -> Result<Vec<McpServer>, StoreError> {
        let tx = self.tx(&[SETTINGS], false)?;
        let range = web_sys::IdbKeyRange::bound_with_lower_open_and_upper_open(
            &JsValue::from_str(PREFIX),
            &JsValue::from_str(PREFIX_END),
            false,
            true,
        )
        .map_err(js_error)?;
        let all = request(
            &tx.store(SETTINGS)?
                .get_all_with_key(&range)
                .map_err(js_error)?,
        )
        .await?;
        let mut out = js_sys::Array::from(&all)
            .iter()
            .map(|v| from_js::<ServerRecord>(v, "MCP server").map(ServerRecord::into_server))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_by(|a, b| (a.added_at, &a.id).cmp(&(b.added_at, &b.id)));
        Ok(out)
    }

    /// Saves server `s` (a new one, or its tools' switches).
    pub async fn put_mcp_server(&self, s: &McpServer) -> Result<(), StoreError> {
        let tx = self.tx(&[SETTINGS], true)?;
        tx.store(SETTINGS)?
            .put(&to_js(&ServerRecord::of(s))?)
            .map_err(js_error)?;
        tx.done().await
    }

    /// Removes server `id` (its token with it).
    pub async fn delete_mcp_server(&self, id: &str) -> Result<(), StoreError> {
        let tx = self.tx(&[SETTINGS], true)?;
        tx.store(SETTINGS)?
            .delete(&JsValue::from_str(&format!("{PREFIX}{id}")))
            .map_err(js_error)?;
        tx.done().await
    }
}
