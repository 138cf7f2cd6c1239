//! The CouchDB HTTP API as the replicator uses it: request descriptions (method, path, query, body;
//! the shell adds the server URL and credentials), URL encoding, and the shapes of the responses it
//! reads (`_changes`, `_bulk_docs`, `_all_docs`, `open_revs`, `_local`). Lenient where CouchDB
//! versions differ (a `seq` may be a number or a string) and strict where a guess could lose data
//! (a `_changes` answer without `last_seq` is unreadable, not empty).
//! Must not import anything outside `crate::engine`.

use serde::Deserialize;
use serde_json::Value;

/// An HTTP method the replicator uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Put,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
        }
    }
}

/// One request to the server: `path` starts with `/` and is already encoded; `query` values are raw
/// (see [`Request::url`]); `body` is JSON when present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<String>,
}

impl Request {
    /// The full URL under `base` (the server URL, with or without a trailing `/`).
    pub fn url(&self, base: &str) -> String {
        let mut url = format!("{}{}", base.trim_end_matches('/'), self.path);
        for (i, (k, v)) in self.query.iter().enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(&encode(k));
            url.push('=');
            url.push_str(&encode(v));
        }
        url
    }
}

/// An answer's body as the shell hands it to the replicator: the text from the wire, or JSON the
/// shell already read (an answer the encryption layer opened), which is not written out and read
/// again.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Text(String),
    Json(Value),
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `seq` or `last_seq` as an opaque string (CouchDB 2+ sends strings, 1.x and PouchDB numbers).
pub fn seq_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[derive(Debug, Deserialize)]
pub struct ChangeRow {
    pub id: String,
    /// Where the feed is after this row (read when a page holds more rows than asked for).
    #[serde(default)]
    pub seq: Option<Value>,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default)]
    pub doc: Option<Value>,
}

/// A `_changes` answer. `last_seq` is required: without it the answer is cut off.
#[derive(Debug, Deserialize)]
pub struct Changes {
    pub results: Vec<ChangeRow>,
    pub last_seq: Value,
}

/// One entry of a `_bulk_docs` answer.
#[derive(Debug, Deserialize)]
pub struct BulkResult {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub rev: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct RowValue {
    pub rev: String,
    #[serde(default)]
    pub deleted: bool,
}

/// One row of an `_all_docs` answer with `keys`: a document, a deleted one, or `not_found`.
#[derive(Debug, Deserialize)]
pub struct AllDocsRow {
    pub key: String,
    #[serde(default)]
    pub value: Option<RowValue>,
    #[serde(default)]
    pub doc: Option<Value>,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct AllDocs {
    pub rows: Vec<AllDocsRow>,
}

/// One entry of an `open_revs` answer.
#[derive(Debug, Deserialize)]
pub struct OpenRev {
    #[serde(default)]
    pub ok: Option<Value>,
}

/// A `_local` checkpoint document.
#[derive(Debug, Deserialize)]
pub struct LocalCheckpoint {
    #[serde(rename = "_rev")]
    pub rev: String,
    #[serde(default)]
    pub since: Option<Value>,
}

/// The `_rev` of a `_local` write's answer (`rev` in CouchDB and PouchDB alike).
#[derive(Debug, Deserialize)]
pub struct Saved {
    pub rev: String,
}
